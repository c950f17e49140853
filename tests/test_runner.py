"""The runner: isolation of failures, transactional store, resume after a kill, aggregation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import sqlalchemy

from icml26 import benchmarks
from icml26.benchmarks.executors import LocalExecutor, ProcessExecutor
from icml26.benchmarks.runner import TrialSpec, execute_trial
from icml26.benchmarks.store import ResultsStore
from icml26.protocol import Budget, Metric, Task

# A one-episode variant of the tutorial task keeps these tests quick.
QUICK = Task(
    id="testing/quick-reach", version=0, family="tutorial", env_id="icml26/PointReach-v0",
    run_trial="icml26.benchmarks.generic:run_trial",
    metrics=(Metric("return", "max"), Metric("success_rate", "max", 0, 1), Metric("episode_length", "min")),
    primary_metric="return", budget=Budget(), seeds=(0, 1, 2), eval_episodes=1,
)
benchmarks.register_task(QUICK)

CRASH = "icml26.testing.faulty_agents:CrashingAgent"
KILL = "icml26.testing.faulty_agents:ProcessKillingAgent"
SLOW = "icml26.testing.faulty_agents:SlowZeroAgent"


def test_execute_trial_records_provenance() -> None:
    r = execute_trial(TrialSpec(QUICK.id, 0, "point-pd", {}, 1))
    assert r.status == "FINISHED", r.traceback
    assert r.agent_version == "1" and r.seed == 1 and r.wall_time_s > 0
    assert set(r.metrics) == {"return", "success_rate", "episode_length"}
    assert r.metrics["success_rate"] == 1.0 and len(r.scores) == 1
    assert r.packages["gymnasium"] and r.packages["python"]
    # same seed, same result
    assert execute_trial(TrialSpec(QUICK.id, 0, "point-pd", {}, 1)).metrics == r.metrics


def test_crashing_agent_fails_alone(tmp_path: Path) -> None:
    specs = [TrialSpec(QUICK.id, 0, a, {}, s) for a in ("point-pd", CRASH, "random") for s in (0, 1)]
    results = benchmarks.run(specs, store=tmp_path / "r.db", progress=False)
    by_agent = {a: [r for r in results if r.agent_name == a] for a in ("point-pd", CRASH, "random")}
    assert [r.status for r in by_agent[CRASH]] == ["FAILED", "FAILED"]
    assert all("CrashingAgent crashed on purpose" in (r.traceback or "") for r in by_agent[CRASH])
    assert all(r.status == "FINISHED" for a in ("point-pd", "random") for r in by_agent[a])
    # failed trials are retried on the next run, finished ones are not
    calls: list[str] = []

    class Counting(LocalExecutor):
        def run(self, todo):  # type: ignore[no-untyped-def]
            calls.extend(s.agent for s in todo)
            yield from super().run(todo)

    benchmarks.run(specs, store=tmp_path / "r.db", executor=Counting(), progress=False)
    assert calls == [CRASH, CRASH]


def test_process_executor_survives_a_dying_worker(tmp_path: Path) -> None:
    # spawned workers only know registered tasks, so use the tutorial task itself
    specs = [TrialSpec("tutorial/point-reach", 0, "point-pd", {}, 0),
             TrialSpec("tutorial/point-reach", 0, KILL, {}, 0),
             TrialSpec("tutorial/point-reach", 0, "point-pd", {}, 1)]
    results = benchmarks.run(specs, store=tmp_path / "p.db", executor="process", workers=2, progress=False)
    status = {(r.agent_name, r.seed): r.status for r in results}
    assert status == {("point-pd", 0): "FINISHED", (KILL, 0): "FAILED", ("point-pd", 1): "FINISHED"}
    killed = next(r for r in results if r.agent_name == KILL)
    assert "worker process died" in (killed.traceback or "") and "2 attempts" in killed.traceback and "ran alone" in killed.traceback
    assert ProcessExecutor(workers=1).workers == 1
    with pytest.raises(ValueError, match="workers"):
        ProcessExecutor(workers=0)


def test_store_round_trip_and_replacement(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "s.db")
    r = execute_trial(TrialSpec(QUICK.id, 0, "random", {}, 2))
    store.put(r)
    store.put(r)  # replacing is idempotent
    assert store.count() == 1 and store.finished_keys() == {r.key}
    back = store.get(r.key)
    assert back is not None and back.to_dict() == r.to_dict()
    assert store.results(agent_name="random")[0].key == r.key
    assert store.results(agent_name="nobody") == []
    assert store.delete([r.key]) == 1 and store.count() == 0


def test_killed_run_resumes_only_missing_trials(tmp_path: Path) -> None:
    """Kill a run midway (SIGKILL), re-run: only the trials that never finished run again."""
    db = tmp_path / "kill.db"
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_runner import QUICK, SLOW
        from icml26 import benchmarks
        specs = [benchmarks.runner.TrialSpec(QUICK.id, 0, SLOW, {{"sleep_s": 0.4}}, s) for s in range(8)]
        benchmarks.run(specs, store={str(db)!r}, progress=False)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
    deadline = time.time() + 120
    store = None
    try:
        while time.time() < deadline:
            time.sleep(0.2)
            if db.exists():
                try:  # the child may still be creating the schema
                    store = store or ResultsStore(db)
                    if store.count("FINISHED") >= 3:
                        break
                except sqlalchemy.exc.OperationalError:
                    continue
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert store is not None
    finished_before = store.finished_keys()
    assert 3 <= len(finished_before) < 8, "the run should have been interrupted midway"
    ran: list[str] = []

    class Counting(LocalExecutor):
        def run(self, todo):  # type: ignore[no-untyped-def]
            ran.extend(s.key for s in todo)
            yield from super().run(todo)

    specs = [TrialSpec(QUICK.id, 0, SLOW, {"sleep_s": 0.4}, s) for s in range(8)]
    results = benchmarks.run(specs, store=db, executor=Counting(), progress=False)
    assert set(ran) == {s.key for s in specs} - finished_before
    assert len(results) == 8 and all(r.status == "FINISHED" for r in results)


def test_aggregate_ranks_by_primary_metric(tmp_path: Path) -> None:
    specs = [TrialSpec(QUICK.id, 0, a, {}, s) for a in ("random", "point-pd") for s in (0, 1, 2)]
    results = benchmarks.run(specs, store=tmp_path / "a.db", progress=False)
    (table,) = benchmarks.aggregate(results)
    assert [r.agent for r in table.rows] == ["point-pd", "random"]
    pd_cell = table.rows[0].cells["return"]
    assert pd_cell.n == 3 and pd_cell.low <= pd_cell.iqm <= pd_cell.high
    text = benchmarks.format_tables([table])
    assert "testing/quick-reach v0" in text and text.splitlines()[4].startswith("point-pd")
