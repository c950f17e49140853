"""The runner: isolation of failures, transactional store, resume after a kill, aggregation."""

from __future__ import annotations

import dataclasses
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
from icml26.protocol import Budget
from icml26.testing import tiny_point_reach_task

# A one-episode variant of the tutorial task keeps these tests quick.
QUICK = tiny_point_reach_task("testing/quick-reach", seeds=(0, 1, 2))
benchmarks.register_task(QUICK)

CRASH = "icml26.testing.faulty_agents:CrashingAgent"
KILL = "icml26.testing.faulty_agents:ProcessKillingAgent"
SLOW = "icml26.testing.faulty_agents:SlowZeroAgent"
HANG = "icml26.testing.faulty_agents:HangingAgent"
SEGV = "icml26.testing.faulty_agents:SegfaultingAgent"
INTERRUPT = "icml26.testing.faulty_agents:InterruptingAgent"
FORK_HANG = "icml26.testing.faulty_agents:ForkingHangingAgent"


def test_execute_trial_records_provenance() -> None:
    r = execute_trial(TrialSpec(QUICK.id, 0, "point-pd", {}, 1))
    assert r.status == "FINISHED", r.traceback
    assert r.agent_version == "1" and r.seed == 1 and r.wall_time_s > 0
    assert set(r.metrics) == {"return", "success_rate", "episode_length"}
    assert r.metrics["success_rate"] == 1.0 and len(r.scores) == 1
    assert r.packages["gymnasium"] and r.packages["python"]
    # same seed, same result
    assert execute_trial(TrialSpec(QUICK.id, 0, "point-pd", {}, 1)).metrics == r.metrics


def test_a_task_pinned_to_an_older_env_version_runs_without_the_upgrade_warning() -> None:
    """Gymnasium warns that ScenePilot-v0 is out of date; a task names that version on purpose,
    so its trials do not repeat the warning (make bench printed it once per trial)."""
    import dataclasses
    import warnings

    import gymnasium as gym

    pinned = dataclasses.replace(
        benchmarks.get_task("driving/attack-idm"),
        id="testing/attack-v0-pinned",
        budget=Budget(env_steps=0),
        eval_episodes=1,
    )
    benchmarks.register_task(pinned)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        gym.make("icml26/ScenePilot-v0").close()
        assert any("is out of date" in str(w.message) for w in seen)  # the control
        seen.clear()
        r = execute_trial(TrialSpec(pinned.id, 0, "random", {}, 0))
    assert r.status == "FINISHED", r.traceback
    assert not [str(w.message) for w in seen if "out of date" in str(w.message)]


def test_crashing_agent_fails_alone(tmp_path: Path) -> None:
    specs = [
        TrialSpec(QUICK.id, 0, a, {}, s) for a in ("point-pd", CRASH, "random") for s in (0, 1)
    ]
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


@pytest.mark.slow
def test_process_executor_survives_a_dying_worker(tmp_path: Path) -> None:
    # spawned workers only know registered tasks, so use the tutorial task itself
    specs = [
        TrialSpec("tutorial/point-reach", 0, "point-pd", {}, 0),
        TrialSpec("tutorial/point-reach", 0, KILL, {}, 0),
        TrialSpec("tutorial/point-reach", 0, "point-pd", {}, 1),
    ]
    results = benchmarks.run(
        specs, store=tmp_path / "p.db", executor="process", workers=2, progress=False
    )
    status = {(r.agent_name, r.seed): r.status for r in results}
    assert status == {("point-pd", 0): "FINISHED", (KILL, 0): "FAILED", ("point-pd", 1): "FINISHED"}
    killed = next(r for r in results if r.agent_name == KILL)
    assert "worker process died" in (killed.traceback or "") and "2 attempts" in killed.traceback
    assert (
        "alone in a fresh process" in killed.traceback
        and "exited with status 13" in killed.traceback
    )
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
    script.write_text(
        textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_runner import QUICK, SLOW
        from icml26 import benchmarks
        specs = [benchmarks.runner.TrialSpec(QUICK.id, 0, SLOW, {{"sleep_s": 0.4}}, s) for s in range(8)]
        benchmarks.run(specs, store={str(db)!r}, progress=False)
    """)
    )
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


# ----------------------------------------------------------------------------- isolation
def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for(path: Path, timeout: float = 120) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


def test_cold_registries_are_never_seen_half_filled() -> None:
    """16 threads of a fresh interpreter ask the cold task and agent registries at once: every
    one sees all of them (the registry is marked loaded only once filled, under a lock)."""
    code = textwrap.dedent("""
        import threading
        from icml26 import agents, benchmarks
        barrier = threading.Barrier(16)
        seen = []
        def ask(i):
            barrier.wait()
            seen.append((len(benchmarks.task_ids()), len(agents.names())) if i % 2 else
                        (len(agents.names()), len(benchmarks.task_ids()))[::-1])
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(16)]
        [t.start() for t in threads]; [t.join() for t in threads]
        print(sorted(set(seen)), (len(benchmarks.task_ids()), len(agents.names())))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seen, full = out.stdout.strip().rsplit(" (", 1)
    assert seen == f"[({full}]", out.stdout  # one distinct view, the full one


def test_trial_timeout_defaults_and_validation() -> None:
    from icml26.benchmarks.runner import (
        DEFAULT_TRIAL_TIMEOUT_S,
        check_trial_timeout,
        resolve_trial_timeout,
    )

    assert resolve_trial_timeout(QUICK) == DEFAULT_TRIAL_TIMEOUT_S == 4 * 3600
    timed = dataclasses.replace(QUICK, budget=Budget(wall_clock_s=300))
    assert resolve_trial_timeout(timed) == 2 * 300 + 600  # twice the budget plus 10 min
    own = dataclasses.replace(QUICK, extra={"trial_timeout_s": 42})
    assert resolve_trial_timeout(own) == 42
    assert resolve_trial_timeout(timed, 5.0) == 5.0  # --trial-timeout wins
    assert resolve_trial_timeout(QUICK, float("inf")) is None  # no limit
    for bad in (0, -1, float("nan"), True, "10"):
        with pytest.raises(ValueError, match="trial_timeout must be a number of seconds > 0"):
            check_trial_timeout(bad)
    assert LocalExecutor(trial_timeout=7).trial_timeout == 7.0


def test_isolated_trials_match_in_process_ones(tmp_path: Path) -> None:
    """A forked child computes exactly what this process computes, and its failures are trials'."""
    specs = [TrialSpec(QUICK.id, 0, a, {}, s) for a in ("point-pd", "random") for s in (0, 1)]
    here = {r.key: r for r in LocalExecutor(isolation="none").run(specs)}
    forked = list(LocalExecutor().run(specs))
    assert LocalExecutor().isolation == "fork"
    assert [r.key for r in forked] == [s.key for s in specs]
    for r in forked:
        assert r.status == "FINISHED", r.traceback
        assert r.metrics == here[r.key].metrics and r.scores == here[r.key].scores


def test_hang_segfault_exit_and_interrupt_each_cost_their_trial_only(tmp_path: Path) -> None:
    specs = [
        TrialSpec(QUICK.id, 0, HANG, {}, 0),
        TrialSpec(QUICK.id, 0, SEGV, {}, 0),
        TrialSpec(QUICK.id, 0, KILL, {}, 0),
        TrialSpec(QUICK.id, 0, INTERRUPT, {}, 0),
        TrialSpec(QUICK.id, 0, "point-pd", {}, 0),
    ]
    t0 = time.monotonic()
    results = benchmarks.run(specs, store=tmp_path / "iso.db", progress=False, trial_timeout=3)
    took = time.monotonic() - t0
    by = {r.agent_name: r for r in results}
    assert [r.status for r in results] == ["FAILED"] * 4 + ["FINISHED"]
    hang = by[HANG].traceback or ""
    assert "TrialTimeout" in hang and "limit of 3 s (set by --trial-timeout" in hang
    assert 3.0 <= by[HANG].wall_time_s < 3.0 + 5.0
    assert "killed by SIGSEGV (segmentation fault)" in (by[SEGV].traceback or "")
    assert "2 attempts" in by[SEGV].traceback  # type: ignore[operator]
    assert "exited with status 13" in (by[KILL].traceback or "")
    assert "KeyboardInterrupt: InterruptingAgent" in (by[INTERRUPT].traceback or "")
    assert "attempts" not in by[INTERRUPT].traceback  # type: ignore[operator]  # an exception: no retry
    assert by["point-pd"].metrics["success_rate"] == 1.0
    assert took < 60, took  # the hang cost its 3 s, not forever


def test_timed_out_trial_leaves_no_grandchild(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    (r,) = LocalExecutor(trial_timeout=3).run(
        [TrialSpec(QUICK.id, 0, FORK_HANG, {"pid_file": str(pid_file)}, 0)]
    )
    assert r.status == "FAILED" and "TrialTimeout" in (r.traceback or "")
    grandchild = int(_wait_for(pid_file))
    deadline = time.time() + 10
    while _alive(grandchild) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild), "the agent's own subprocess outlived its timed-out trial"


@pytest.mark.slow
def test_process_executor_enforces_the_timeout(tmp_path: Path) -> None:
    specs = [
        TrialSpec("tutorial/point-reach", 0, HANG, {}, 0),
        TrialSpec("tutorial/point-reach", 0, "random", {}, 0),
    ]
    results = benchmarks.run(
        specs,
        store=tmp_path / "pt.db",
        executor="process",
        workers=2,
        progress=False,
        trial_timeout=20,
    )
    assert [r.status for r in results] == ["FAILED", "FINISHED"], [r.traceback for r in results]
    assert "TrialTimeout" in (results[0].traceback or "") and 20 <= results[0].wall_time_s < 40


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "icml26.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


@pytest.mark.slow
def test_icml26_run_hang_and_exit_are_failed_trials_and_exit_status_1(tmp_path: Path) -> None:
    """`icml26 run` as a user types it: a hanging agent is FAILED at --trial-timeout, an agent
    calling os._exit or segfaulting is FAILED, and the command's exit status is 1."""
    db = str(tmp_path / "cli.db")
    t0 = time.monotonic()
    hang = _cli(
        "run",
        "--task",
        "tutorial/point-reach",
        "--agent",
        HANG,
        "--seeds",
        "0",
        "--trial-timeout",
        "2",
        "--store",
        db,
        cwd=tmp_path,
    )
    assert hang.returncode == 1, hang.stderr[-2000:]
    assert "TrialTimeout" in hang.stderr and "1 failed" in hang.stdout
    assert time.monotonic() - t0 < 120
    died = _cli(
        "run",
        "--task",
        "tutorial/point-reach",
        "--agent",
        KILL,
        "--seeds",
        "0,1",
        "--store",
        db,
        cwd=tmp_path,
    )
    assert died.returncode == 1, died.stderr[-2000:]
    assert "0 finished, 2 failed" in died.stdout and "exited with status 13" in died.stderr
    segv = _cli(
        "run",
        "--task",
        "tutorial/point-reach",
        "--agent",
        SEGV,
        "--seeds",
        "0",
        "--store",
        db,
        cwd=tmp_path,
    )
    assert segv.returncode == 1 and "killed by SIGSEGV (segmentation fault)" in segv.stderr, (
        segv.stderr[-2000:]
    )
    store = ResultsStore(db)
    assert store.count("FAILED") == 4 and store.count("FINISHED") == 0


@pytest.mark.slow
def test_killing_the_driver_kills_its_trials(tmp_path: Path) -> None:
    """SIGTERM: the driver kills its trial's whole process group on the way out. SIGKILL: the
    trial's process dies with the driver (PR_SET_PDEATHSIG)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pid_file = tmp_path / f"gc-{sig.name}.pid"
        script = tmp_path / f"drive-{sig.name}.py"
        script.write_text(
            textwrap.dedent(f"""
            from icml26 import benchmarks
            from icml26.benchmarks.runner import TrialSpec
            benchmarks.run([TrialSpec("tutorial/point-reach", 0, {FORK_HANG!r}, {{"pid_file": {str(pid_file)!r}}}, 0)],
                           store={str(tmp_path / (sig.name + ".db"))!r}, progress=False, trial_timeout=600)
        """)
        )
        driver = subprocess.Popen([sys.executable, str(script)], start_new_session=True)
        try:
            grandchild = int(_wait_for(pid_file))
            with open(f"/proc/{grandchild}/stat") as f:
                child = int(f.read().rsplit(")", 1)[1].split()[1])  # the trial's process
            assert child != driver.pid and _alive(child)
            os.kill(driver.pid, sig)
            driver.wait(timeout=60)
            deadline = time.time() + 15
            while _alive(child) and time.time() < deadline:
                time.sleep(0.1)
            assert not _alive(child), f"the trial's process outlived the driver ({sig.name})"
            if sig == signal.SIGTERM:
                assert driver.returncode == 143
                while _alive(grandchild) and time.time() < deadline:
                    time.sleep(0.1)
                assert not _alive(grandchild)
            else:
                os.kill(
                    grandchild, signal.SIGKILL
                )  # documented limit: PDEATHSIG covers the child only
        finally:
            if driver.poll() is None:
                driver.kill()
