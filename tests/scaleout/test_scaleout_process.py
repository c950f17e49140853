"""The process-pool executor: spawned workers, exact failure accounting, same numbers as local."""

from __future__ import annotations

from pathlib import Path

import pytest
from scaleout_helpers import DIE_ONCE, KILL, SYS_EXIT

from icml26 import benchmarks
from icml26.benchmarks.executors import LocalExecutor, ProcessExecutor
from icml26.benchmarks.runner import TrialSpec

TASK = "tutorial/point-reach"


@pytest.mark.slow
def test_killers_next_to_innocents(tmp_path: Path) -> None:
    """A trial that kills its worker runs beside a normal one and one that dies only on its
    first attempt, on 2 workers: the killer ends FAILED after one retry, the others FINISH,
    with the same numbers as in this process."""
    marker = tmp_path / "died-once"
    specs = [
        TrialSpec(TASK, 0, KILL, {}, 0),
        TrialSpec(TASK, 0, "point-pd", {}, 0),
        TrialSpec(TASK, 0, DIE_ONCE, {"marker": str(marker)}, 2),
    ]
    results = benchmarks.run(
        specs, store=tmp_path / "p.db", executor=ProcessExecutor(workers=2), progress=False
    )
    assert [r.key for r in results] == [s.key for s in specs]
    status = [r.status for r in results]
    assert status == ["FAILED", "FINISHED", "FINISHED"], [
        (r.agent_name, r.traceback) for r in results if r.status == "FAILED"
    ]
    assert (
        "worker process died" in (results[0].traceback or "")
        and "2 attempts" in results[0].traceback
    )  # type: ignore[operator]
    assert marker.exists()  # the die-once agent did die once, and was retried
    (local,) = LocalExecutor().run([specs[1]])
    assert results[1].metrics == local.metrics and results[1].scores == local.scores


def test_sys_exit_in_an_agent_is_a_failed_trial(tmp_path: Path) -> None:
    results = benchmarks.run(
        [TrialSpec(TASK, 0, SYS_EXIT, {}, 0)],
        store=tmp_path / "x.db",
        executor=ProcessExecutor(workers=1),
        progress=False,
    )
    assert [r.status for r in results] == ["FAILED"]
    assert "SystemExit: 3" in (results[0].traceback or "")
