"""The Ray executor: every trial a Ray task with its own resource request, on one machine or a cluster.

    icml26 bench --suite full --executor ray --ray-address auto --cpus-per-trial 2
    icml26 bench --suite smoke --executor ray --workers 2          # a private local Ray instance

Each (task, agent, seed) trial becomes one Ray task asking for ``cpus_per_trial`` CPUs and
``gpus_per_trial`` GPUs. Results come back to the driver as each task ends, and the driver alone
writes the results store, so resume and failure semantics are those of the local executors: an
exception inside the trial is a FAILED result with its traceback (no retry, it would fail again).
Inside its Ray task the trial runs in a child process of the Ray worker under its wall-clock
limit (``trial_timeout``, default the task's): a trial that hangs is killed at the limit and
FAILED with ``TrialTimeout``; a child that dies (segfault, ``os._exit``) is run again once and
then FAILED with its exit status. A Ray worker or node that dies (OOM kill, lost node) is
retried once on a fresh worker and then recorded as FAILED with the reason. Ray's own task
retries are switched off so that this accounting is exact.

Without an address the executor starts a private local Ray instance with
``workers * cpus_per_trial`` CPUs and shuts it down at the end; with an address (``"auto"``,
``"ray://head:10001"`` or ``"head:6379"``) it connects to that cluster and leaves it running.
If Ray is already initialized in this process (a notebook, a test fixture) it uses that session
as it is. Every node needs the same ``icml26-gym`` installed (the docker/ image does that).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from icml26._entry_points import require
from icml26.agents import AgentSpec
from icml26.benchmarks.trial import (
    TrialSpec,
    VersionSkewError,
    check_trial_timeout,
    driver_registrations,
    ensure_registered,
    failed_result,
)
from icml26.protocol import Task, TrialResult

__all__ = ["RayExecutor", "VersionSkewError", "ray_trial"]

# Ray errors that mean "the process or node running the trial went away", not "the trial raised".
_DEATH_ERRORS = (
    "WorkerCrashedError",
    "NodeDiedError",
    "OutOfMemoryError",
    "ObjectLostError",
    "LocalRayletDiedError",
)


def ray_trial(
    spec: TrialSpec,
    task: Task | None = None,
    agent: AgentSpec | None = None,
    trial_timeout: float | None = None,
    max_retries: int = 1,
) -> TrialResult:
    """The body of one Ray task: the trial in a forked child of the Ray worker, under its
    wall-clock limit (:class:`~icml26.benchmarks.isolation.TrialProcesses`).

    ``task`` and ``agent`` are the driver's registrations, registered here when this worker does
    not know them (a task or agent the user registered in the driver script at run time). A
    child that dies is run again ``max_retries`` times in this task, then FAILED; a trial past
    ``trial_timeout`` (default: the task's) has its process group killed and is FAILED.
    """
    from icml26.benchmarks.isolation import TrialProcesses, default_start_method

    try:
        ensure_registered(task, agent)
        runner = TrialProcesses(
            workers=1,
            start_method=default_start_method(),
            trial_timeout=trial_timeout,
            max_retries=max_retries,
            trials_per_child=1,
        )
        (result,) = list(runner.run([spec]))
        return result
    except BaseException:  # noqa: BLE001 - SystemExit, version skew, ...: the trial fails
        return failed_result(spec, traceback.format_exc())


_ensure_registered = ensure_registered  # the name older code imported
_driver_registrations = driver_registrations


class RayExecutor:
    """Runs trials as Ray tasks and yields each result as soon as its task ends.

    Args:
        workers: CPUs of the private local Ray instance (``workers * cpus_per_trial``) when
            neither ``address`` is given nor Ray already initialized; otherwise unused (the
            cluster's resources decide how many trials run at once).
        address: a Ray cluster address (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``).
        cpus_per_trial: CPUs each trial asks for (fractions allowed); Ray sets the trial's
            ``OMP_NUM_THREADS`` from it, and from 2 CPUs up torch gets as many threads
            (``$ICML26_TORCH_THREADS`` in the tasks' runtime env, unless you set it there).
        gpus_per_trial: GPUs each trial asks for (0 = none; fractions share a GPU).
        max_retries: times a trial whose worker died is run again before it is FAILED.
        fresh_worker_per_trial: run each trial in a new worker process (``max_calls=1``), as the
            process executor does; False reuses workers (saves the start-up, about a second).
        trials_per_worker: trials a Ray worker runs before it is replaced (``max_calls``;
            ``--trials-per-worker``); given, it overrides ``fresh_worker_per_trial``. Each trial
            still runs in a forked child of the worker.
        runtime_env: a Ray runtime environment for the tasks (env vars, pip packages, ...).
        init_kwargs: extra keyword arguments for ``ray.init`` when this executor calls it.
        trial_timeout: wall-clock limit of each trial in seconds (``None``: the task's default).
            It is enforced inside the Ray task, where the trial runs in a child process of the
            Ray worker (queued time does not count).
    """

    def __init__(
        self,
        workers: int = 1,
        address: str | None = None,
        cpus_per_trial: float = 1.0,
        gpus_per_trial: float = 0.0,
        max_retries: int = 1,
        fresh_worker_per_trial: bool = True,
        runtime_env: Mapping[str, Any] | None = None,
        init_kwargs: Mapping[str, Any] | None = None,
        trial_timeout: float | None = None,
        trials_per_worker: int | None = None,
    ) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"RayExecutor: workers must be an int >= 1, got {workers!r}")
        if not isinstance(cpus_per_trial, (int, float)) or cpus_per_trial <= 0:
            raise ValueError(
                f"RayExecutor: cpus_per_trial must be a number > 0, got {cpus_per_trial!r}"
            )
        if not isinstance(gpus_per_trial, (int, float)) or gpus_per_trial < 0:
            raise ValueError(
                f"RayExecutor: gpus_per_trial must be a number >= 0, got {gpus_per_trial!r}"
            )
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"RayExecutor: max_retries must be an int >= 0, got {max_retries!r}")
        if address is not None and (not isinstance(address, str) or not address.strip()):
            raise ValueError(
                f"RayExecutor: address must be a non-empty string like 'auto' or "
                f"'ray://head:10001', got {address!r}"
            )
        self.workers = workers
        self.address = address
        self.cpus_per_trial = float(cpus_per_trial)
        self.gpus_per_trial = float(gpus_per_trial)
        self.max_retries = max_retries
        if trials_per_worker is not None and (
            not isinstance(trials_per_worker, int) or trials_per_worker < 1
        ):
            raise ValueError(
                f"RayExecutor: trials_per_worker must be an int >= 1, got {trials_per_worker!r}"
            )
        self.fresh_worker_per_trial = bool(fresh_worker_per_trial)
        self.trials_per_worker = trials_per_worker
        self.runtime_env = dict(runtime_env) if runtime_env else None
        self.init_kwargs = dict(init_kwargs or {})
        self.trial_timeout = check_trial_timeout(trial_timeout)

    # ------------------------------------------------------------------ Ray session
    def _connect(self, ray: Any) -> bool:
        """Initialize Ray if needed; True when this executor started it (and must shut it down)."""
        if ray.is_initialized():
            return False
        kwargs: dict[str, Any] = {"include_dashboard": False, "ignore_reinit_error": True}
        if self.address is not None:
            kwargs["address"] = self.address
        else:
            kwargs["num_cpus"] = self.workers * self.cpus_per_trial
            # Ray's own logs go to its session folder; keep the driver's terminal for the progress bar.
            kwargs["logging_level"] = "WARNING"
        kwargs.update(self.init_kwargs)
        ray.init(**kwargs)
        return True

    def _check_feasible(self, ray: Any) -> None:
        """Fail fast when no node could ever run one trial (Ray would wait forever)."""
        need = {"CPU": self.cpus_per_trial, "GPU": self.gpus_per_trial}
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        for n in nodes:
            res = n.get("Resources", {})
            if all(res.get(k, 0.0) >= v for k, v in need.items() if v > 0):
                return
        have = [{k: n.get("Resources", {}).get(k, 0.0) for k in need} for n in nodes]
        raise ValueError(
            f"RayExecutor: no node of the Ray cluster can run a trial asking for "
            f"{self.cpus_per_trial:g} CPU and {self.gpus_per_trial:g} GPU; the nodes have {have}. "
            "Lower --cpus-per-trial/--gpus-per-trial or add nodes."
        )

    def _max_calls(self) -> int:
        """Ray's ``max_calls``: 1 (like the process executor, no global state such as torch
        threads or leaks crosses trials), ``trials_per_worker``, or 0 (workers reused)."""
        if self.trials_per_worker is not None:
            return self.trials_per_worker
        return 1 if self.fresh_worker_per_trial else 0

    # ------------------------------------------------------------------ run
    def run(self, specs: Sequence[TrialSpec]) -> Iterator[TrialResult]:
        if not specs:
            return
        ray = require("ray", "ray", "the Ray executor (--executor ray)")
        started = self._connect(ray)
        pending: dict[Any, TrialSpec] = {}
        try:
            self._check_feasible(ray)
            options: dict[str, Any] = {
                "num_cpus": self.cpus_per_trial,
                "num_gpus": self.gpus_per_trial,
                "max_retries": 0,  # the driver counts retries itself (see the module docstring)
                "retry_exceptions": False,
            }
            runtime_env = dict(self.runtime_env or {})
            env_vars = dict(runtime_env.get("env_vars", {}))
            if self.cpus_per_trial >= 2 and "ICML26_TORCH_THREADS" not in env_vars:
                # let torch use the CPUs the trial reserved (the runner pins it to 1 otherwise)
                env_vars["ICML26_TORCH_THREADS"] = str(int(self.cpus_per_trial))
            if env_vars:
                runtime_env["env_vars"] = env_vars
            if runtime_env:
                options["runtime_env"] = runtime_env
            remote_trial = ray.remote(max_calls=self._max_calls())(ray_trial).options(**options)
            attempts: dict[str, list[str]] = {}
            death_errors = tuple(
                getattr(ray.exceptions, n) for n in _DEATH_ERRORS if hasattr(ray.exceptions, n)
            )

            def submit(spec: TrialSpec) -> None:
                pending[
                    remote_trial.remote(
                        spec, *driver_registrations(spec), self.trial_timeout, self.max_retries
                    )
                ] = spec

            for spec in specs:
                submit(spec)
            while pending:
                (ready,), _ = ray.wait(list(pending), num_returns=1)
                spec = pending.pop(ready)
                try:
                    result: TrialResult = ray.get(ready)
                except ray.exceptions.RayError as e:
                    if not isinstance(e, death_errors):
                        # the task itself raised, or its runtime env failed: no retry
                        yield failed_result(spec, f"the Ray task failed: {e}")
                        continue
                    reason = f"{type(e).__name__}: {_first_line(e)}"
                    tries = attempts.setdefault(spec.key, [])
                    tries.append(reason)
                    if len(tries) <= self.max_retries:
                        submit(spec)
                        continue
                    yield failed_result(
                        spec,
                        f"worker process died during the trial ({len(tries)} attempts on Ray): "
                        + "; ".join(tries),
                    )
                    continue
                if spec.key in attempts:
                    result.extra = {**result.extra, "executor_retries": list(attempts[spec.key])}
                yield result
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - best effort on the way out
                    pass
            if started:
                ray.shutdown()


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else ""
