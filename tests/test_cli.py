"""The icml26 command: listings, runs, clear errors with suggestions, exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from icml26.cli import main


def test_listings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["envs"]) == 0
    assert "icml26/PointReach-v0" in capsys.readouterr().out
    assert main(["agents", "--family", "tutorial"]) == 0
    out = capsys.readouterr().out
    assert "point-pd" in out and "random" in out
    assert main(["tasks"]) == 0
    assert "tutorial/point-reach" in capsys.readouterr().out
    assert main(["tasks", "--suite", "smoke", "--family", "tutorial"]) == 0
    assert "point-pd" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [["envs"], ["agents"], ["tasks"], ["tasks", "--suite", "smoke"], ["tasks", "--suite", "full"]],
)
def test_listings_fit_120_columns_unless_wide(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Listings wrap or move their long columns to fit 120 columns; --wide prints one row a line
    (the words of each are the same either way)."""
    assert main(argv) == 0
    narrow = capsys.readouterr().out
    assert main([*argv, "--wide"]) == 0
    wide = capsys.readouterr().out
    assert max(map(len, narrow.splitlines())) <= 120 < max(map(len, wide.splitlines()))
    words = lambda text: sorted(text.replace(";", " ").replace(":", " ").split())  # noqa: E731
    headers = set(wide.splitlines()[0].split())
    assert [w for w in words(narrow) if w not in headers] == [
        w for w in words(wide) if w not in headers
    ]


def test_print_rows_wraps_a_column_of_words_and_moves_others_below(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from icml26._cli_util import print_rows, seeds_text

    rows = [["name", "id", "about"], ["a", "x" * 30, "one two three four five six seven eight"]]
    print_rows(rows, width=64)  # 'about' (words, 26 columns left for it) wraps
    assert capsys.readouterr().out.splitlines() == [
        "name  id                              about",
        "a     xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx  one two three four five",
        "                                      six seven eight",
    ]
    print_rows(rows, width=40)  # 22 columns left: 'about' goes below its row
    assert capsys.readouterr().out.splitlines() == [
        "name  id",
        "a     xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "    about: one two three four five six",
        "      seven eight",
    ]
    print_rows(rows, width=30)  # then 'id' (no words to wrap) too, in column order
    assert capsys.readouterr().out.splitlines() == [
        "name",
        "a",
        "    id: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx;",  # an id is never cut
        "      about: one two three",
        "      four five six seven",
        "      eight",
    ]
    print_rows(rows, width=None)
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert [seeds_text(s) for s in ([0, 1, 2, 3, 4], [0, 1], [0, 2, 5, 6, 7], [3])] == [
        "0-4",
        "0,1",
        "0,2,5-7",
        "3",
    ]


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["run", "--task", "tutorial/point-rech", "--agent", "point-pd"],
            "Did you mean 'tutorial/point-reach'",
        ),
        (
            ["run", "--task", "tutorial/point-reach", "--agent", "pointpd"],
            "Did you mean 'point-pd'",
        ),
        (["bench", "--suite", "smok"], "Did you mean 'smoke'"),
        (
            ["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--seeds", "x"],
            "bad seed",
        ),
        (
            ["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--agent-kwargs", "{"],
            "JSON object",
        ),
        (
            ["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--executor", "gpu"],
            "unknown executor",
        ),
    ],
)
def test_bad_names_exit_2_with_suggestions(
    argv, message, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main([*argv, "--store", str(tmp_path / "x.db")]) == 2
    assert message in capsys.readouterr().err


def test_run_prints_table_and_fails_on_failed_trials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "r.db")
    assert (
        main(
            [
                "run",
                "--task",
                "tutorial/point-reach",
                "--agent",
                "point-pd",
                "--seeds",
                "0,1",
                "--store",
                db,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "tutorial/point-reach v0" in out and "2 finished, 0 failed" in out
    code = main(
        [
            "run",
            "--task",
            "tutorial/point-reach",
            "--agent",
            "icml26.testing.faulty_agents:CrashingAgent",
            "--seeds",
            "0",
            "--store",
            db,
        ]
    )
    captured = capsys.readouterr()
    assert code == 1 and "CrashingAgent crashed on purpose" in captured.err
    assert main(["results", "--store", db]) == 0
    assert "point-pd" in capsys.readouterr().out


def test_help_for_every_command() -> None:
    for cmd in ([], ["run"], ["bench"], ["envs"], ["agents"], ["tasks"], ["results"]):
        out = subprocess.run(
            [sys.executable, "-m", "icml26.cli", *cmd, "--help"], capture_output=True, text=True
        )
        assert out.returncode == 0 and "usage: icml26" in out.stdout


# ----------------------------------------------------------------- plug-in agents (--agent pkg.mod:Class)
AGENT_SRC = """
import numpy as np


class Controller:
    version = "3"

    def __init__(self, gain: float = 1.0, *, clip: bool = True):
        if gain <= 0:
            raise ValueError("gain must be positive")
        self.gain, self.clip = gain, clip

    def bind(self, observation_space, action_space):
        self.low, self.high = action_space.low, action_space.high

    def reset(self, seed=None):
        pass

    def act(self, observation, info=None):
        return np.clip(self.gain * observation[4:6], self.low, self.high)
"""


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A namespace package ``h15plug`` (no __init__.py) in a fresh working directory; sys.path
    and PYTHONPATH restored afterwards (``icml26 run`` adds the working directory to both)."""
    (tmp_path / "h15plug").mkdir()
    (tmp_path / "h15plug" / "ctl.py").write_text(AGENT_SRC)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "")
    for name in [m for m in sys.modules if m.split(".")[0] == "h15plug"]:
        monkeypatch.delitem(sys.modules, name)
    return tmp_path


@pytest.mark.parametrize(
    "agent, kwargs, message",
    [
        (
            "h15plugx.ctl:Controller",
            "{}",
            "no module 'h15plugx' on sys.path; run from the directory",
        ),
        ("h15plug.ctl:Controler", "{}", "Did you mean 'Controller'"),
        (
            "h15plug.ctl:Controller",
            '{"gian": 2}',
            "unknown kwarg(s) gian; h15plug.ctl:Controller accepts: gain, clip",
        ),
        ("h15plug.ctl:Controller", '{"gain": -1}', "raised ValueError: gain must be positive"),
    ],
)
def test_plugin_mistakes_fail_fast_with_a_hint(
    plugin_dir: Path, agent: str, kwargs: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from icml26.benchmarks.store import ResultsStore

    db = plugin_dir / "r.db"
    code = main(
        [
            "run",
            "--task",
            "tutorial/point-reach",
            "--agent",
            agent,
            "--agent-kwargs",
            kwargs,
            "--seeds",
            "0",
            "--store",
            str(db),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert ResultsStore(str(db)).results() == []  # nothing ran


def test_plugin_from_the_working_directory_with_out(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The console script sees ./h15plug (a namespace package) and the bundle locates its code."""
    import json

    icml26_script = Path(sys.executable).parent / "icml26"
    out = subprocess.run(
        [
            str(icml26_script),
            "run",
            "--task",
            "tutorial/point-reach",
            "--agent",
            "h15plug.ctl:Controller",
            "--agent-kwargs",
            '{"gain": 2}',
            "--out",
            "mine.json",
            "--seeds",
            "0",
            "--store",
            "r.db",
        ],
        cwd=plugin_dir,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    bundle = json.loads((plugin_dir / "mine.json").read_text())
    assert bundle["agent"]["entry_point"] == "h15plug.ctl:Controller"
    assert bundle["agent"]["kwargs"] == {"gain": 2} and bundle["agent"]["version"] == "3"
    # the bundle carries the plug-in's code (found from the entry point), not its directory
    assert bundle["agent"]["code"]["format"] == "zip" and bundle["agent"]["requirement"] is None
    assert [r["seed"] for r in bundle["results"]] == [0]
    assert "not its leaderboard seeds" in out.stderr  # such a bundle would be rejected: say so


def test_out_with_explicit_requirement_or_path(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    base = [
        "run",
        "--task",
        "tutorial/point-reach",
        "--agent",
        "h15plug.ctl:Controller",
        "--store",
        "r.db",
    ]
    assert main([*base, "--out", "a.json", "--agent-requirement", "h15plug==1.0"]) == 0
    agent = json.loads(Path("a.json").read_text())["agent"]
    assert agent["requirement"] == "h15plug==1.0" and agent["code"] is None
    (plugin_dir / "elsewhere").mkdir()
    for extra, message in [
        (
            ["--out", "b.json", "--agent-path", "elsewhere"],
            "does not hold the module of entry point",
        ),
        (["--out", "b.json", "--agent-path", ".", "--agent-requirement", "x==1"], "not both"),
        (["--agent-path", "."], "only apply with --out"),
    ]:
        capsys.readouterr()
        assert main([*base, *extra]) == 2
        assert message in capsys.readouterr().err
    assert not Path("b.json").exists()
    assert main([*base, "--out", "c.json", "--agent-path", str(plugin_dir)]) == 0
    import base64
    import io
    import zipfile

    code = json.loads(Path("c.json").read_text())["agent"]["code"]
    names = zipfile.ZipFile(io.BytesIO(base64.b64decode(code["data"]))).namelist()
    assert "h15plug/ctl.py" in names and all(n.startswith("h15plug/") for n in names)


def test_code_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from icml26._entry_points import code_location

    assert code_location("icml26.agents.tutorial.pd:PDController") == {
        "requirement": f"icml26-gym=={importlib.metadata.version('icml26-gym')}",
        "path": None,
    }
    # a regular package two levels deep, a namespace package, a top-level module
    (tmp_path / "h15reg" / "sub").mkdir(parents=True)
    (tmp_path / "h15reg" / "__init__.py").write_text("")
    (tmp_path / "h15reg" / "sub" / "__init__.py").write_text("class A: pass\n")
    (tmp_path / "h15ns" / "deep").mkdir(parents=True)
    (tmp_path / "h15ns" / "deep" / "m.py").write_text("class A: pass\n")
    (tmp_path / "h15top.py").write_text("class A: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for ep in ("h15reg.sub:A", "h15ns.deep.m:A", "h15top:A"):
        assert code_location(ep) == {"requirement": None, "path": str(tmp_path.resolve())}, ep
    with pytest.raises(ValueError, match="namespace package itself"):
        code_location("h15ns:A")


def test_progress_bar_names_the_running_trial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from icml26 import benchmarks

    task = benchmarks.get_task("tutorial/point-reach")
    specs = benchmarks.trials_for(task, "point-pd", [0, 1], {})
    benchmarks.run(specs, store=str(tmp_path / "p.db"), progress=True)
    err = capsys.readouterr().err
    first, second = (
        "running tutorial/point-reach point-pd s0",
        "running tutorial/point-reach point-pd s1",
    )
    assert first in err and second in err
    # s0 is named before any trial has finished, s1 after the first one has
    assert err.index(first) < err.index("1/2") < err.index(second)
    assert "s1 FINISHED" not in err


# ----------------------------------------------------------------- stores: clear errors, nothing created
def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _sqlite_store(path: Path) -> bytes:
    """A real results store with three trials, as bytes (closed, WAL checkpointed)."""
    from icml26 import benchmarks
    from icml26.benchmarks.store import ResultsStore

    with ResultsStore(path) as st:
        benchmarks.run(
            benchmarks.trials_for("tutorial/point-reach", "point-pd", [0, 1, 2]),
            store=st,
            progress=False,
        )
    return path.read_bytes()


def _store_case(kind: str, tmp_path: Path) -> tuple[str, str]:
    """(the --store argument, what the one-line error must say) for each broken store."""
    if kind == "missing":
        return str(tmp_path / "nothere.db"), "no results store at"
    if kind == "missing-dirs":
        return str(tmp_path / "no" / "such" / "dir" / "x.db"), "no results store at"
    if kind == "text":
        (tmp_path / "notes.txt").write_text("a results store? no, notes\n")
        return str(tmp_path / "notes.txt"), "is a text file"
    if kind == "random-bytes":
        (tmp_path / "r.bin").write_bytes(np.random.default_rng(0).bytes(5000))
        return str(tmp_path / "r.bin"), "is not an SQLite database"
    if kind == "truncated":
        good = _sqlite_store(tmp_path / "good.db")
        (tmp_path / "good.db").unlink()
        (tmp_path / "cut.db").write_bytes(good[: len(good) // 2])
        return str(tmp_path / "cut.db"), "is a truncated SQLite database"
    if kind == "damaged":
        good = bytearray(_sqlite_store(tmp_path / "good.db"))
        (tmp_path / "good.db").unlink()
        good[3 * 4096 + 100 : 5 * 4096] = np.random.default_rng(1).bytes(2 * 4096 - 100)
        (tmp_path / "bad.db").write_bytes(bytes(good))
        return str(tmp_path / "bad.db"), "is a damaged SQLite database"
    if kind == "foreign":
        import sqlite3

        con = sqlite3.connect(tmp_path / "other.db")
        con.execute("CREATE TABLE notes (x)")
        con.commit()
        con.close()
        return str(tmp_path / "other.db"), "is not an icml26 results store (no icml26_trials table"
    if kind == "directory":
        (tmp_path / "adir").mkdir()
        return str(tmp_path / "adir"), "is a directory"
    if kind == "unknown-driver":
        return "foo://host/db", "no database driver for 'foo'"
    raise AssertionError(kind)


STORE_CASES = [
    "missing",
    "missing-dirs",
    "text",
    "random-bytes",
    "truncated",
    "damaged",
    "foreign",
    "directory",
    "unknown-driver",
]


@pytest.mark.parametrize("kind", STORE_CASES)
def test_a_broken_store_is_one_line_exit_2_and_creates_nothing(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, says = _store_case(kind, tmp_path)
    before = _tree(tmp_path)
    capsys.readouterr()
    assert main(["results", "--store", store]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err  # one line, no traceback
    assert err.startswith("icml26 results: error: ") and says in err, err
    assert (store in err) or kind == "unknown-driver" and "foo://host/db" in err
    assert "expected" in err  # what was expected
    assert _tree(tmp_path) == before  # nothing created: no file, no directory, no -wal/-shm
    # the other reader, icml26 certify, says the same
    claim = [
        "--task",
        "capability_eval/bumps",
        "--agent",
        "certify-chi2",
        "--claim",
        ">= 0.9 on average",
    ]
    assert main(["certify", *claim, "--store", store]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and says in err, err
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(
    "kind", ["text", "random-bytes", "truncated", "directory", "unknown-driver"]
)
def test_a_broken_store_stops_a_run_before_any_trial(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, says = _store_case(kind, tmp_path)
    argv = ["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--seeds", "0"]
    assert main([*argv, "--store", store]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err


def test_postgres_url_without_its_driver_names_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the postgres extra were missing
    assert main(["results", "--store", "postgresql+psycopg://me:secret@db.example/icml26"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'icml26-gym[postgres]'" in err, err
    assert "secret" not in err  # the password is never printed


def test_an_unreachable_database_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://me:secret@127.0.0.1:1/icml26"  # nothing listens on port 1
    for argv in (["results"], ["run", "--task", "tutorial/point-reach", "--agent", "point-pd"]):
        assert main([*argv, "--store", url]) == 2
        err = capsys.readouterr().err
        assert (
            err.count("\n") == 1 and "cannot open results store postgresql+psycopg://me:***@" in err
        )
        assert "secret" not in err


def test_a_reader_leaves_a_good_store_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _sqlite_store(tmp_path / "r.db")
    before = _tree(tmp_path)
    assert main(["results", "--store", str(tmp_path / "r.db")]) == 0
    out = capsys.readouterr().out
    assert "point-pd" in out and f"3 trials (0 failed); store: {tmp_path / 'r.db'}" in out
    assert _tree(tmp_path) == before and (tmp_path / "r.db").read_bytes() == data


def test_the_default_store_is_not_created_by_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ICML26_STORE", raising=False)
    assert main(["results"]) == 2
    assert f"no results store at {tmp_path / 'results' / 'icml26.db'}" in capsys.readouterr().err
    assert _tree(tmp_path) == set()


# ----------------------------------------------------------------- --version, names, footers
def test_version_names_the_package_version_and_commit() -> None:
    import icml26

    out = subprocess.run(
        [sys.executable, "-m", "icml26.cli", "--version"],
        capture_output=True,
        text=True,
        cwd=Path(icml26.__file__).parents[1],
    )
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(icml26.__file__).parent,
    ).stdout.strip()
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"icml26-gym {icml26.__version__} (commit {head[:12]}"), out.stdout


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["envs", "--family", "drivng"], "Did you mean 'driving'"),
        (["agents", "--family", "markov"], "Did you mean 'markov_games'"),
        (["tasks", "--family", "weathr"], "Did you mean 'weather'"),
        (["tasks", "--suite", "smoke", "--family", "tutorail"], "Did you mean 'tutorial'"),
        (["results", "--family", "boltzman"], "Did you mean 'boltzmann'"),
        (["bench", "--family", "minmax"], "Did you mean 'minmax_vi'"),
        (
            ["run", "--task", "point-reach", "--agent", "point-pd"],
            "Did you mean 'tutorial/point-reach'",
        ),
        (["run", "--task", "tutorial/point-reach", "--agent", "pd"], "'point-pd'"),
        (["leaderboard", "show", "--task", "tutorial/point-rech"], "'tutorial/point-reach'"),
        (["leaderboard", "bundle", "--agent", "point_pd", "--out", "b.json"], "'point-pd'"),
        (
            ["certify", "--task", "capability_eval/bumpz", "--agent", "certify-chi2"],
            "Did you mean 'capability_eval/bumps'",
        ),
        (
            ["certify", "--task", "capability_eval/bumps", "--agent", "certify-chi3"],
            "Did you mean 'certify-chi2'",
        ),
    ],
)
def test_unknown_names_exit_2_with_a_suggestion_in_every_subcommand(
    argv: list[str], suggestion: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "x.db"
    reads = argv[0] == "certify" or argv[:2] == ["leaderboard", "bundle"]
    if reads:  # readers of a results store: an agent is known if registered or stored
        data = _sqlite_store(store)
    if argv[0] == "certify":
        argv = [*argv, "--claim", ">= 0.9 on every scenario", "--store", str(store)]
    elif argv[:2] == ["leaderboard", "bundle"]:
        argv = [*argv, "--results", str(store)]
    elif argv[0] in ("run", "bench", "leaderboard"):
        argv = [*argv, "--store", str(store)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and suggestion in err, err
    if reads:
        assert store.read_bytes() == data and _tree(tmp_path) == {"x.db"}
    else:
        assert not store.exists()


def test_results_names_a_task_or_agent_neither_registered_nor_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _sqlite_store(tmp_path / "r.db")
    db = str(tmp_path / "r.db")
    for argv, suggestion in [
        (["--task", "tutorial/point-rech"], "Did you mean 'tutorial/point-reach'"),
        (["--agent", "point_pd"], "Did you mean 'point-pd'"),
    ]:
        assert main(["results", "--store", db, *argv]) == 2
        assert suggestion in capsys.readouterr().err
    # a registered task without results in this store is not an error
    assert main(["results", "--store", db, "--task", "markov_games/soccer"]) == 0
    assert "(no results)" in capsys.readouterr().out


def test_run_footer_names_the_store_and_a_rerun_says_nothing_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ICML26_STORE", raising=False)
    argv = ["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--seeds", "0,1"]
    assert main(argv) == 0
    default = tmp_path / "results" / "icml26.db"
    assert f"2 finished, 0 failed; store: {default}" in capsys.readouterr().out
    assert main(argv) == 0
    assert "2 trials already done, nothing to run" in capsys.readouterr().err


# ----------------------------------------------------------------- tables
def test_tables_fit_120_columns_unless_wide_and_flag_two_seed_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from icml26 import benchmarks
    from icml26.benchmarks.store import ResultsStore

    db = tmp_path / "r.db"
    with ResultsStore(db) as st:
        for agent, seeds in (("point-pd", [0, 1, 2]), ("random", [0, 1])):
            benchmarks.run(
                benchmarks.trials_for("tutorial/point-reach", agent, seeds),
                store=st,
                progress=False,
            )
        results = st.results()
    tables = benchmarks.aggregate(results, progress=False)
    narrow = benchmarks.format_tables(tables, width=60)
    body = [x for x in narrow.splitlines() if x.startswith(("agent", "point-pd", "random", "---"))]
    assert max(map(len, body)) <= 60  # the table itself (not its title or footnote)
    assert narrow.count("(continued") == 2 and narrow.count("point-pd") == 3  # 3 blocks
    assert "*return*" in narrow.split("(continued")[0]  # the primary metric in the first block
    wide = benchmarks.format_tables(tables, width=None)
    assert "(continued" not in wide
    random_row = next(x for x in wide.splitlines() if x.startswith("random"))
    assert "] (n=2)" in random_row  # an interval from 2 seeds is flagged ...
    pd_row = next(x for x in wide.splitlines() if x.startswith("point-pd"))
    assert "(n=" not in pd_row.split("]")[0]  # ... one from 3 seeds is not
    assert "from fewer than 3 seeds" in wide
    assert main(["results", "--store", str(db)]) == 0
    assert max(map(len, capsys.readouterr().out.splitlines())) <= 120
    assert main(["results", "--store", str(db), "--wide"]) == 0
    assert "(continued" not in capsys.readouterr().out


# ----------------------------------------------------------------- bench: every core, same numbers
def _tiny_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reduced smoke suite: the smoke entries of four families, cheap agents, seeds 0-1."""
    from icml26 import benchmarks

    smoke = {e.task: e for e in benchmarks.get_suite("smoke")}
    picks = {
        "tutorial/point-reach": ["point-pd", "random"],
        "markov_games/random-uniform": ["mg-nash-vi", "mg-bc"],
        "minmax_vi/bilinear-growing": ["vi-fbf", "vi-seg"],
        "constrained_opt/qcqp-10x10": ["co-slsqp"],
    }
    entries = [
        benchmarks.SuiteEntry(t, {a: smoke[t].agents[a] for a in agents}, seeds=(0, 1))
        for t, agents in picks.items()
    ]
    monkeypatch.setitem(benchmarks._suites, "tiny", entries)


# metrics that time a trial (they differ between any two runs, serial or not)
TIMING_METRICS = {"wall_time_s", "infer_ms", "step_ms"}


def _untimed(metrics: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if k not in TIMING_METRICS}


def _untimed_tables(results: list) -> str:  # type: ignore[type-arg]
    from icml26 import benchmarks

    tables = benchmarks.aggregate(results, progress=False)
    for t in tables:
        t.metric_names = [m for m in t.metric_names if m not in TIMING_METRICS]
    return benchmarks.format_tables(tables)


def test_bench_in_parallel_gives_the_serial_results_and_a_summary_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from icml26.benchmarks.store import ResultsStore

    _tiny_suite(monkeypatch)
    serial, parallel = tmp_path / "serial.db", tmp_path / "parallel.db"
    assert main(["bench", "--suite", "tiny", "--executor", "local", "--store", str(serial)]) == 0
    serial_out = capsys.readouterr().out
    # the default: the process executor on every core (2 workers at least, to test concurrency)
    assert main(["bench", "--suite", "tiny", "--workers", "2", "--store", str(parallel)]) == 0
    parallel_out = capsys.readouterr().out
    a, b = ResultsStore(serial).results(), ResultsStore(parallel).results()
    assert len(a) == len(b) == 14 and all(r.status == "FINISHED" for r in a + b)
    assert [r.key for r in a] == [r.key for r in b]
    for x, y in zip(a, b):  # every number but the ones that time the trial
        assert _untimed(x.metrics) == _untimed(y.metrics) and x.scores == y.scores, x.key
    assert "wall_time_s" in a[0].metrics  # (co-slsqp times itself: the exclusion is needed)
    assert _untimed_tables(a) == _untimed_tables(b)  # the same tables, character for character
    summary = parallel_out.strip().splitlines()[-1]
    assert summary.startswith("bench tiny: 14 trials (0 already done, 14 run now), 0 failed; ")
    assert " on 2 workers; store " + str(parallel) in summary
    assert f"tables above and in {tmp_path / 'parallel-tables.txt'}" in summary
    printed = parallel_out.rsplit("\nbench tiny:", 1)[0]
    assert (tmp_path / "parallel-tables.txt").read_text().strip() == printed.strip()
    assert serial_out.count("\n") == parallel_out.count("\n")
    assert main(["bench", "--suite", "tiny", "--store", str(parallel)]) == 0  # resumed
    assert "bench tiny: 14 trials (14 already done, 0 run now), 0 failed" in capsys.readouterr().out


def test_bench_defaults_to_the_process_executor_on_every_core() -> None:
    from icml26.cli import available_cores, build_parser

    args = build_parser().parse_args(["bench"])
    assert args.executor == "process" and args.workers is None  # main() resolves None to:
    assert available_cores() >= 1
    assert build_parser().parse_args(["run", "--task", "t", "--agent", "a"]).executor == "local"


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_trials_own_progress_bars_stay_out_of_the_runners_output(
    start_method: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The runner's bar names the running trials; the bars a trial draws itself (training loops)
    would interleave with it, so the trial's child process turns them off."""
    from icml26 import benchmarks
    from icml26.benchmarks.executors import ProcessExecutor
    from icml26.benchmarks.runner import execute_trial

    agent = "icml26.testing.faulty_agents:ProgressBarAgent"
    (spec,) = benchmarks.trials_for("tutorial/point-reach", agent, [0])
    assert execute_trial(spec).status == "FINISHED"
    assert "agent-own-bar" in capfd.readouterr().err  # in-process: the agent's bar shows
    ex = ProcessExecutor(workers=1, start_method=start_method)
    (r,) = benchmarks.run([spec], store=tmp_path / "q.db", executor=ex, progress=True)
    err = capfd.readouterr().err
    assert r.status == "FINISHED" and "trials (0 already done)" in err
    assert "agent-own-bar" not in err
