"""The command line end to end: run --out, bundle, token, submit (local and --server),
verify, show, render; and bundles written per agent."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from leaderboard_helpers import _TMP, TEST_SECRET, real_results, running_server

from icml26.cli import main
from icml26.leaderboards.bundle import write_bundles
from icml26.leaderboards.server import create_app
from icml26.leaderboards.store import SECRET_ENV, LeaderboardStore
from icml26.leaderboards.validate import validate_bundle

RESULTS = str(Path(_TMP) / "results.db")  # where real_results() ran the tutorial trials


@pytest.fixture()
def lb(tmp_path: Path) -> str:
    return str(tmp_path / "lb.db")


def test_leaderboard_cli_run_out_submit_verify_show_render(
    tmp_path: Path, lb: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, TEST_SECRET.decode())  # deterministic held-out seeds
    real_results("point-pd")  # the trials are already FINISHED in RESULTS
    out = tmp_path / "pd.json"
    assert (
        main(
            [
                "run",
                "--task",
                "tutorial/point-reach",
                "--agent",
                "point-pd",
                "--store",
                RESULTS,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    vb = validate_bundle(out.read_bytes())
    assert vb.bundle["agent"]["entry_point"] == "icml26.agents.tutorial.pd:PDController"
    assert vb.bundle["agent"]["requirement"].startswith("icml26-gym==")
    capsys.readouterr()

    assert main(["leaderboard", "submit", str(out), "--store", lb]) == 0
    assert "status PENDING" in capsys.readouterr().out
    assert main(["leaderboard", "submit", str(out), "--store", lb]) == 2
    err = capsys.readouterr().err
    assert "duplicate" in err and "already submitted (submission #1)" in err

    assert main(["leaderboard", "verify", "1", "--store", lb]) == 0
    assert "VERIFIED" in capsys.readouterr().out
    assert main(["leaderboard", "verify", "1", "--store", lb]) == 2  # not PENDING any more
    assert "use --force" in capsys.readouterr().err

    assert main(["leaderboard", "show", "--store", lb, "--reps", "200"]) == 0
    text = capsys.readouterr().out
    assert "VERIFIED (ranked by the re-run)" in text and "leader" in text and "point-pd" in text
    assert main(["leaderboard", "show", "--store", lb, "--entry", "1"]) == 0
    text = capsys.readouterr().out
    assert "PENDING" in text and "VERIFIED" in text and vb.content_hash in text
    assert main(["leaderboard", "show", "--store", lb, "--json", "--reps", "200"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["verified"][0]["entry_id"] == 1

    site = tmp_path / "site"
    assert main(["leaderboard", "render", "--out", str(site), "--store", lb, "--reps", "200"]) == 0
    assert (site / "index.html").is_file() and (site / "entries" / "1.html").is_file()


def test_leaderboard_cli_bundle_and_bad_input(
    tmp_path: Path, lb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    real_results("point-pd")
    out = tmp_path / "b.json"
    assert (
        main(
            [
                "leaderboard",
                "bundle",
                "--results",
                RESULTS,
                "--agent",
                "point-pd",
                "--out",
                str(out),
                "--name",
                "My PD",
                "--description",
                "two\nlines",
                "--url",
                "https://example.org/pd",
            ]
        )
        == 0
    )
    b = json.loads(out.read_text())
    assert (b["name"], b["description"], b["url"]) == (
        "My PD",
        "two\nlines",
        "https://example.org/pd",
    )
    validate_bundle(out.read_bytes())
    assert (
        main(
            ["leaderboard", "bundle", "--results", RESULTS, "--agent", "nobody", "--out", str(out)]
        )
        == 2
    )
    assert "no results of agent 'nobody'" in capsys.readouterr().err
    assert main(["leaderboard", "submit", str(tmp_path / "missing.json"), "--store", lb]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**b, "name": "<b>x</b>"}))
    assert main(["leaderboard", "submit", str(bad), "--store", lb]) == 2
    err = capsys.readouterr().err
    assert "name:" in err and "content_hash:" in err
    assert LeaderboardStore(lb).counts()["icml26_lb_entries"] == 0


def test_leaderboard_cli_tokens_and_remote_submit(
    tmp_path: Path, lb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    real_results("point-pd")
    assert main(["leaderboard", "token", "create", "alice", "--store", lb]) == 0
    token = capsys.readouterr().out.strip()
    assert token.startswith("icml26_") and len(token) > 40
    assert main(["leaderboard", "token", "create", "alice", "--store", lb]) == 2  # still active
    capsys.readouterr()
    store = LeaderboardStore(lb)
    raw = b"".join(p.read_bytes() for p in Path(lb).parent.glob("lb.db*"))
    assert token.encode() not in raw  # only the hash is kept
    assert hashlib.sha256(token.encode()).hexdigest().encode() in raw
    assert store.authenticate(token) == "alice"

    out = tmp_path / "pd.json"
    assert (
        main(
            [
                "leaderboard",
                "bundle",
                "--results",
                RESULTS,
                "--agent",
                "point-pd",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with running_server(create_app(store, reps=100)) as url:
        assert main(["leaderboard", "submit", str(out), "--server", url, "--token", "wrong"]) == 2
        assert "HTTP 401" in capsys.readouterr().err
        assert main(["leaderboard", "submit", str(out), "--server", url, "--token", token]) == 0
        assert "accepted by" in capsys.readouterr().out
        assert main(["leaderboard", "submit", str(out), "--server", url, "--token", token]) == 2
        assert "HTTP 409" in capsys.readouterr().err
        assert main(["leaderboard", "token", "revoke", "alice", "--store", lb]) == 0
        assert main(["leaderboard", "submit", str(out), "--server", url, "--token", token]) == 2
        assert "HTTP 401" in capsys.readouterr().err
    assert [e.submitter for e in store.entries()] == ["alice"]
    assert main(["leaderboard", "token", "list", "--store", lb]) == 0
    assert "alice" in capsys.readouterr().out


def test_leaderboard_write_bundles_per_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results: list[Any] = list(real_results("point-pd")) + list(real_results("random"))
    paths = write_bundles(results, tmp_path / "smoke.json")
    assert sorted(p.name for p in paths) == ["smoke.point-pd.json", "smoke.random.json"]
    for p in paths:
        validate_bundle(p.read_bytes())
    # seeds other than the leaderboard's: written, with a warning that it will be rejected
    write_bundles([r for r in real_results("point-pd") if r.seed < 3], tmp_path / "three.json")
    assert "will reject this bundle" in capsys.readouterr().err
