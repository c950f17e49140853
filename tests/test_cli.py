"""The icml26 command: listings, runs, clear errors with suggestions, exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
