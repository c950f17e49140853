"""The Ray executor on a local Ray instance of 2 CPUs (one ``ray.init`` for the whole module).

Same semantics as the local executors: identical results for identical seeds, a trial whose
worker dies is retried once and then FAILED while the others finish, an exception (even
SystemExit) is FAILED without retry, and a restarted run skips the finished trials.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray executor needs the 'ray' extra")

from scaleout_helpers import CRASH, DIE_ONCE, HERE, KILL, PG_ENV, SYS_EXIT, fresh_postgres_database  # noqa: E402

HANG = "icml26.testing.faulty_agents:HangingAgent"
KILL_WORKER = "icml26.testing.faulty_agents:ParentKillingAgent"

from icml26 import agents, benchmarks, cli  # noqa: E402
from icml26.benchmarks.executors import LocalExecutor, make_executor  # noqa: E402
from icml26.benchmarks.ray_executor import RayExecutor  # noqa: E402
from icml26.benchmarks.runner import TrialSpec  # noqa: E402
from icml26.benchmarks.store import ResultsStore  # noqa: E402
from icml26.testing import tiny_point_reach_task  # noqa: E402

TASK = "tutorial/point-reach"


@pytest.fixture(scope="module", autouse=True)
def ray_session() -> Iterator[None]:
    """One local Ray instance of 2 CPUs for the module; workers can import scaleout_helpers."""
    if ray.is_initialized():
        ray.shutdown()
    path = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path, "OMP_NUM_THREADS": "1"}},
    )
    yield
    ray.shutdown()


def _specs(agent: str, seeds: tuple[int, ...], **kw: object) -> list[TrialSpec]:
    return [TrialSpec(TASK, 0, agent, dict(kw), s) for s in seeds]


def test_registered_and_validated() -> None:
    ex = make_executor("ray", workers=2, cpus_per_trial=0.5)
    assert isinstance(ex, RayExecutor) and ex.cpus_per_trial == 0.5 and ex.workers == 2
    for bad, match in [
        ({"workers": 0}, "workers"),
        ({"cpus_per_trial": 0}, "cpus_per_trial"),
        ({"gpus_per_trial": -1}, "gpus_per_trial"),
        ({"max_retries": -1}, "max_retries"),
        ({"address": ""}, "address"),
    ]:
        with pytest.raises(ValueError, match=match):
            RayExecutor(**bad)  # type: ignore[arg-type]


def test_same_results_as_local(tmp_path: Path) -> None:
    """Same seeds, same numbers, whichever executor ran them (fresh or reused Ray workers)."""
    specs = _specs("point-pd", (0,)) + _specs("random", (0, 1))
    local = {r.key: r for r in LocalExecutor().run(specs)}
    results = benchmarks.run(specs, store=tmp_path / "ray.db", executor="ray", progress=False)
    reused = {r.key: r for r in RayExecutor(fresh_worker_per_trial=False).run(specs + specs[:1])}
    assert [r.key for r in results] == [s.key for s in specs] and len(reused) == 3
    for r in results:
        assert r.status == "FINISHED", r.traceback
        assert r.metrics == local[r.key].metrics == reused[r.key].metrics
        assert r.scores == local[r.key].scores == reused[r.key].scores
        assert r.packages == local[r.key].packages


def test_dying_worker_retried_once_then_failed_others_finish(tmp_path: Path) -> None:
    marker = tmp_path / "died-once"
    specs = (
        _specs(KILL, (0,)) + _specs("point-pd", (0, 1)) + _specs(DIE_ONCE, (5,), marker=str(marker))
    )
    results = benchmarks.run(specs, store=tmp_path / "r.db", executor="ray", progress=False)
    by = {(r.agent_name, r.seed): r for r in results}
    killed = by[(KILL, 0)]
    assert killed.status == "FAILED"
    # the trial runs in a child of the Ray worker: its os._exit is that child's death, run again once
    assert "worker process died during the trial (2 attempts" in (killed.traceback or "")
    assert killed.traceback.count("exited with status 13") == 2  # type: ignore[union-attr]
    assert all(by[("point-pd", s)].status == "FINISHED" for s in (0, 1))
    # the agent that died on its first attempt finished on the retry, which is recorded
    once = by[(DIE_ONCE, 5)]
    assert marker.exists() and once.status == "FINISHED", once.traceback
    assert (
        len(once.extra["executor_retries"]) == 1
        and "status 17" in once.extra["executor_retries"][0]
    )
    # an exception (here SystemExit) is FAILED at once: no retry, the traceback says why
    (exit_result,) = RayExecutor().run(_specs(SYS_EXIT, (0,)))
    assert exit_result.status == "FAILED" and "SystemExit: 3" in (exit_result.traceback or "")
    assert "attempts" not in exit_result.traceback  # type: ignore[operator]


@pytest.mark.slow
def test_hang_is_failed_at_the_timeout_and_a_dead_ray_worker_is_retried(tmp_path: Path) -> None:
    """The wall-clock limit holds on Ray too; an agent that kills the Ray worker itself (not
    just its trial's child) goes through Ray's death accounting: retried once, then FAILED."""
    specs = _specs(HANG, (0,)) + _specs(KILL_WORKER, (0,)) + _specs("random", (0,))
    results = benchmarks.run(
        specs, store=tmp_path / "h.db", executor="ray", progress=False, trial_timeout=5
    )
    by = {r.agent_name: r for r in results}
    assert by[HANG].status == "FAILED" and "TrialTimeout" in (by[HANG].traceback or "")
    assert 5 <= by[HANG].wall_time_s < 5 + 10
    assert by[KILL_WORKER].status == "FAILED"
    assert "worker process died during the trial (2 attempts on Ray)" in (
        by[KILL_WORKER].traceback or ""
    )
    assert by["random"].status == "FINISHED", by["random"].traceback


def test_restarted_run_skips_finished_and_interrupted_run_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "resume.db"
    specs = _specs("point-pd", (0, 1, 2)) + _specs(CRASH, (0,))

    class StopAfter(RayExecutor):
        """Interrupts the run (like Ctrl-C) after two results."""

        def run(self, todo):  # type: ignore[no-untyped-def]
            for i, r in enumerate(super().run(todo)):
                yield r
                if i == 1:
                    raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        benchmarks.run(
            specs, store=db, executor=StopAfter(fresh_worker_per_trial=False), progress=False
        )
    assert ResultsStore(db).count() == 2
    finished = ResultsStore(db).finished_keys()
    submitted: list[str] = []

    class Recording(RayExecutor):
        def run(self, todo):  # type: ignore[no-untyped-def]
            submitted.extend(s.key for s in todo)
            yield from super().run(todo)

    results = benchmarks.run(
        specs, store=db, executor=Recording(fresh_worker_per_trial=False), progress=False
    )
    assert set(submitted) == {s.key for s in specs} - finished  # nothing finished runs again
    assert [r.status for r in results] == ["FINISHED"] * 3 + ["FAILED"]
    submitted.clear()
    benchmarks.run(
        specs, store=db, executor=Recording(fresh_worker_per_trial=False), progress=False
    )
    assert submitted == [specs[-1].key]  # only the FAILED trial is tried again


def test_driver_registrations_reach_the_workers(tmp_path: Path) -> None:
    """A task and an agent name registered at run time in the driver work on Ray workers."""
    quick = tiny_point_reach_task("testing/scaleout-quick-reach", seeds=(0,), eval_episodes=2)
    benchmarks.register_task(quick)
    agents.register("scaleout-pd", "icml26.agents.tutorial.pd:PDController", "tutorial")
    try:
        (r,) = RayExecutor(fresh_worker_per_trial=False).run(
            [TrialSpec(quick.id, 0, "scaleout-pd", {}, 0)]
        )
    finally:  # the registry is process-wide: later tests (the README's) must not see these
        agents._registry.pop("scaleout-pd", None)
        benchmarks._tasks.pop(quick.id, None)
        benchmarks._tasks.pop(quick.key, None)
    assert r.status == "FINISHED", r.traceback
    assert len(r.scores) == 2 and r.metrics["success_rate"] == 1.0


def test_driver_and_worker_disagreeing_on_a_task_is_a_failed_trial() -> None:
    """Version skew between nodes (a task changed without a version bump) is caught, not run."""
    original = benchmarks.get_task(TASK, 0)
    benchmarks.register_task(dataclasses.replace(original, eval_episodes=3), replace=True)
    try:
        (r,) = RayExecutor(fresh_worker_per_trial=False).run(_specs("random", (0,)))
    finally:
        benchmarks.register_task(original, replace=True)
    assert benchmarks.get_task(TASK) == original
    assert r.status == "FAILED" and "VersionSkewError: task tutorial/point-reach@v0 differs" in (
        r.traceback or ""
    )


def test_infeasible_resource_request_fails_fast() -> None:
    with pytest.raises(
        ValueError, match="no node of the Ray cluster can run a trial asking for 1 CPU and 1 GPU"
    ):
        list(RayExecutor(gpus_per_trial=1).run(_specs("random", (0,))))
    with pytest.raises(ValueError, match="3 CPU"):
        list(RayExecutor(cpus_per_trial=3).run(_specs("random", (0,))))


def test_cli_ray_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "cli.db"
    rc = cli.main(
        [
            "run",
            "--task",
            TASK,
            "--agent",
            "point-pd",
            "--seeds",
            "0",
            "--executor",
            "ray",
            "--cpus-per-trial",
            "1",
            "--store",
            str(db),
        ]
    )
    assert rc == 0
    assert ResultsStore(db).count("FINISHED") == 1
    rc = cli.main(
        [
            "run",
            "--task",
            TASK,
            "--agent",
            "point-pd",
            "--seeds",
            "0",
            "--ray-address",
            "auto",
            "--store",
            str(db),
        ]
    )
    assert rc == 2
    assert "--ray-address only apply to --executor ray" in capsys.readouterr().err
    ns = cli.build_parser().parse_args(
        [
            "bench",
            "--executor",
            "ray",
            "--ray-address",
            "ray://head:10001",
            "--gpus-per-trial",
            "0.5",
        ]
    )
    assert cli._executor_options(ns) == {"address": "ray://head:10001", "gpus_per_trial": 0.5}


@pytest.mark.skipif(not os.environ.get(PG_ENV), reason=f"{PG_ENV} is not set")
def test_ray_results_into_postgresql() -> None:
    specs = _specs("random", (0, 1)) + _specs(KILL, (1,))
    with fresh_postgres_database(os.environ[PG_ENV]) as url:
        results = benchmarks.run(
            specs, store=url, executor=RayExecutor(fresh_worker_per_trial=False), progress=False
        )
        with ResultsStore(url) as st:
            assert st.count("FINISHED") == 2 and st.count("FAILED") == 1
            assert [st.get(r.key).to_dict() for r in results] == [r.to_dict() for r in results]  # type: ignore[union-attr]
