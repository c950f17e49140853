"""Executors turn TrialSpecs into TrialResults, yielding each result as soon as it exists.

* ``local``: one trial at a time in this process (exceptions become FAILED trials).
* ``process``: a pool of spawned worker processes; a worker that dies (segfault, OOM kill,
  ``os._exit``) fails only its trial, which is retried once in a fresh worker.
* more executors (``ray``) register themselves in :data:`EXECUTORS` by entry point.

The driver process alone writes the store, so every executor shares the same resume and
failure semantics.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from icml26._entry_points import load_entry_point, unknown_name_error
from icml26.benchmarks.runner import TrialSpec, execute_trial, failed_result
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
    """Runs trials one after another in the calling process."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = 1

    def run(self, specs: Sequence[TrialSpec]) -> Iterator[TrialResult]:
        for spec in specs:
            yield execute_trial(spec)


class ProcessExecutor:
    """Runs trials in ``workers`` spawned processes (results in completion order).

    When a worker process dies, every trial in flight in that pool is a suspect: each is re-run
    alone in a fresh single-worker pool (``max_retries`` times), so the culprit is recorded as
    FAILED with the reason and the innocent trials finish normally.
    """

    def __init__(self, workers: int = 2, max_retries: int = 1, max_tasks_per_child: int | None = 1) -> None:
        if workers < 1:
            raise ValueError(f"ProcessExecutor: workers must be >= 1, got {workers}")
        self.workers = workers
        self.max_retries = max_retries
        # A fresh process per trial isolates global state (torch threads, RNGs, leaks).
        self.max_tasks_per_child = max_tasks_per_child

    def run(self, specs: Sequence[TrialSpec]) -> Iterator[TrialResult]:
        queue = list(specs)
        while queue:
            died: list[TrialSpec] = []
            rest: list[TrialSpec] = []
            for item in self._run_pool(queue, self.workers):
                if isinstance(item, TrialResult):
                    yield item
                else:
                    (died if item[0] == "died" else rest).append(item[1])
            for spec in died:
                yield self._run_alone(spec)
            queue = rest

    def _run_alone(self, spec: TrialSpec) -> TrialResult:
        # A death in a shared pool proves nothing about this trial (a neighbour may have killed
        # the pool before this trial even started), so only deaths while alone count: the trial
        # gets its first attempt plus max_retries, all alone.
        for _ in range(1 + self.max_retries):
            (item,) = list(self._run_pool([spec], 1))
            if isinstance(item, TrialResult):
                return item
        return failed_result(
            spec,
            f"worker process died during the trial ({1 + self.max_retries} attempts ran alone, "
            "so this trial itself kills its process: segfault, OOM kill or os._exit)",
        )

    def _run_pool(
        self, specs: Sequence[TrialSpec], workers: int
    ) -> Iterator[TrialResult | tuple[str, TrialSpec]]:
        """Yield results; if the pool breaks, yield ("died", spec) for the trials in flight and
        ("todo", spec) for those never started."""
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            max_tasks_per_child=self.max_tasks_per_child,
        )
        queue = list(specs)
        futures: dict[Future[TrialResult], TrialSpec] = {}
        try:
            while queue or futures:
                while queue and len(futures) < workers:
                    spec = queue.pop(0)
                    futures[pool.submit(execute_trial, spec)] = spec
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                broken = False
                for fut in done:
                    spec = futures.pop(fut)
                    try:
                        yield fut.result()
                    except BrokenProcessPool:
                        broken = True
                        yield ("died", spec)
                if broken:
                    wait(futures)
                    for fut, spec in futures.items():
                        if fut.exception() is None:
                            yield fut.result()
                        else:
                            yield ("died", spec)
                    for spec in queue:
                        yield ("todo", spec)
                    return
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
