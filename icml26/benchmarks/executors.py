"""Executors turn TrialSpecs into TrialResults, yielding each result as soon as it exists.

* ``local``: one trial at a time, each in a forked child process of the driver.
* ``process``: ``workers`` child processes at once (forked where ``local`` forks, else spawned).
* more executors (``ray``) register themselves in :data:`EXECUTORS` by entry point.

Every executor gives each trial a wall-clock limit (``trial_timeout``; default: the task's,
see :func:`icml26.benchmarks.runner.resolve_trial_timeout`) and records a trial that runs past
it as FAILED with ``TrialTimeout``; a trial whose process dies (segfault, OOM kill,
``os._exit``) is retried once in a fresh process and then FAILED with the exit status; an
exception (``SystemExit`` and ``KeyboardInterrupt`` from the agent included) is FAILED with its
traceback. Killing the driver kills the trials' processes (:mod:`icml26.benchmarks.isolation`).

The driver process alone writes the store, so every executor shares the same resume and
failure semantics.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from icml26._entry_points import load_entry_point, unknown_name_error
from icml26.benchmarks.isolation import TrialProcesses, default_start_method
from icml26.benchmarks.trial import TrialSpec, _threads, check_trial_timeout, execute_trial
from icml26.protocol import TrialResult

EXECUTORS: dict[str, str] = {
    "local": "icml26.benchmarks.executors:LocalExecutor",
    "process": "icml26.benchmarks.executors:ProcessExecutor",
    "ray": "icml26.benchmarks.ray_executor:RayExecutor",
}


class Executor(Protocol):
    def run(self, specs: Sequence[TrialSpec]) -> Iterator[TrialResult]: ...


def make_executor(executor: str | Any, workers: int = 1, **options: Any) -> Executor:
    """An executor by name (``local``, ``process``, ``ray``) or an executor object as is."""
    if not isinstance(executor, str):
        return executor
    if executor not in EXECUTORS:
        raise unknown_name_error("executor", executor, EXECUTORS)
    cls = load_entry_point(EXECUTORS[executor])
    return cls(workers=workers, **options)


class LocalExecutor:
    """Runs trials one after another, each in a child process of this one.

    ``isolation="fork"`` (the default on Linux) forks this process for each trial: the child
    knows everything registered here, costs a few milliseconds (``perf/harness.py`` measures
    it), and a trial that hangs past its wall-clock limit, segfaults, calls ``os._exit`` or
    raises ``KeyboardInterrupt``/``SystemExit`` is FAILED without touching the run.
    ``"spawn"`` starts a fresh interpreter per trial instead (the default where ``fork`` is
    unsafe: macOS, Windows). ``"none"`` runs trials in this very process, as a debugger
    wants: no time limit and no protection against a crash. With ``$ICML26_TORCH_THREADS``
    above 1 the default is ``"spawn"``: torch's OpenMP runtime (libgomp) can hang in a forked
    child that uses several threads after the driver used its thread pool.
    """

    def __init__(
        self,
        workers: int = 1,
        trial_timeout: float | None = None,
        isolation: str | None = None,
        max_retries: int = 1,
    ) -> None:
        if isolation not in (None, "fork", "spawn", "forkserver", "none"):
            raise ValueError(
                f"LocalExecutor: isolation must be 'fork', 'spawn' or 'none', got {isolation!r}"
            )
        self.workers = 1
        self.trial_timeout = check_trial_timeout(trial_timeout)
        if isolation is None:
            # libgomp (torch's OpenMP on Linux) hangs in a forked child that runs more than one
            # thread once the parent has used its pool: with $ICML26_TORCH_THREADS > 1, spawn.
            isolation = "spawn" if _threads() > 1 else default_start_method()
        self.isolation = isolation
        self.max_retries = max_retries

    def run(self, specs: Sequence[TrialSpec]) -> Iterator[TrialResult]:
        if self.isolation == "none":
            for spec in specs:
                yield execute_trial(spec)
            return
        yield from TrialProcesses(
            workers=1,
            start_method=self.isolation,
            trial_timeout=self.trial_timeout,
            max_retries=self.max_retries,
            trials_per_child=1,
        ).run(specs)


class ProcessExecutor:
    """Runs trials in ``workers`` child processes at once (results in completion order).

    ``start_method``: ``None`` (default) forks where :class:`LocalExecutor` does (Linux, one torch
    thread per trial): each trial is then a copy of the driver, exactly as in the serial run, and
    starts in milliseconds instead of the 1.5-2.5 s of a fresh interpreter (importing torch and
    the family), which dominates the many sub-second trials of the smoke suite. ``"spawn"``
    starts a fresh interpreter per trial (the driver's task and agent registrations are shipped).

    Each worker process runs one trial at a time, so when one dies (segfault, OOM kill,
    ``os._exit``) the blame is exact: that trial is run again in a fresh process
    (``max_retries`` times) and then recorded as FAILED with the exit status, while the other
    trials go on. A trial past its wall-clock limit has its process group killed and is
    FAILED with ``TrialTimeout``. ``max_tasks_per_child=1`` (the default) gives every trial a
    fresh process (no global state crosses trials); ``None`` reuses the workers.
    """

    def __init__(
        self,
        workers: int = 2,
        max_retries: int = 1,
        max_tasks_per_child: int | None = 1,
        trial_timeout: float | None = None,
        start_method: str | None = None,
    ) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"ProcessExecutor: workers must be >= 1, got {workers}")
        self.workers = workers
        self.max_retries = max_retries
        self.max_tasks_per_child = max_tasks_per_child
        self.trial_timeout = check_trial_timeout(trial_timeout)
        if start_method is None:  # as LocalExecutor: libgomp hangs in forks that use threads
            start_method = "spawn" if _threads() > 1 else default_start_method()
        self.start_method = start_method

    def run(self, specs: Sequence[TrialSpec]) -> Iterator[TrialResult]:
        yield from TrialProcesses(
            workers=self.workers,
            start_method=self.start_method,
            trial_timeout=self.trial_timeout,
            max_retries=self.max_retries,
            trials_per_child=self.max_tasks_per_child,
        ).run(specs)
