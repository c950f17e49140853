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
        (["run", "--task", "tutorial/point-rech", "--agent", "point-pd"], "Did you mean 'tutorial/point-reach'"),
        (["run", "--task", "tutorial/point-reach", "--agent", "pointpd"], "Did you mean 'point-pd'"),
        (["bench", "--suite", "smok"], "Did you mean 'smoke'"),
        (["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--seeds", "x"], "bad seed"),
        (["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--agent-kwargs", "{"], "JSON object"),
        (["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--executor", "gpu"], "unknown executor"),
    ],
)
def test_bad_names_exit_2_with_suggestions(argv, message, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main([*argv, "--store", str(tmp_path / "x.db")]) == 2
    assert message in capsys.readouterr().err


def test_run_prints_table_and_fails_on_failed_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    assert main(["run", "--task", "tutorial/point-reach", "--agent", "point-pd", "--seeds", "0,1", "--store", db]) == 0
    out = capsys.readouterr().out
    assert "tutorial/point-reach v0" in out and "2 finished, 0 failed" in out
    code = main(["run", "--task", "tutorial/point-reach", "--agent",
                 "icml26.testing.faulty_agents:CrashingAgent", "--seeds", "0", "--store", db])
    captured = capsys.readouterr()
    assert code == 1 and "CrashingAgent crashed on purpose" in captured.err
    assert main(["results", "--store", db]) == 0
    assert "point-pd" in capsys.readouterr().out


def test_help_for_every_command() -> None:
    for cmd in ([], ["run"], ["bench"], ["envs"], ["agents"], ["tasks"], ["results"]):
        out = subprocess.run([sys.executable, "-m", "icml26.cli", *cmd, "--help"], capture_output=True, text=True)
        assert out.returncode == 0 and "usage: icml26" in out.stdout
