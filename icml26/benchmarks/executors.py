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
    """Runs trials in ``workers`` spawned processes (one trial per task, results in any order).

    A trial whose worker process dies is retried once (``max_retries``) in a new pool and then
    recorded as FAILED with the reason, while the other trials go on.
    """

    def __init__(self, workers: int = 2, max_retries: int = 1, max_tasks_per_child: int | None = 1) -> None:
        if workers < 1:
            raise ValueError(f"ProcessExecutor: workers must be >= 1, got {workers}")
        self.workers = workers
        self.max_retries = max_retries
        # A fresh process per trial isolates global state (torch threads, RNGs, leaks).
        self.max_tasks_per_child = max_tasks_per_child

    def _pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            max_tasks_per_child=self.max_tasks_per_child,
        )

    def run(self, specs: Sequence[TrialSpec]) -> Iterator[TrialResult]:
        pending = list(specs)
        attempts: dict[str, int] = {}
        while pending:
            pool = self._pool()
            futures: dict[Future[TrialResult], TrialSpec] = {}
            queue = list(pending)
            pending = []
            broken = False
            try:
                while queue or futures:
                    while queue and len(futures) < self.workers and not broken:
                        spec = queue.pop(0)
                        futures[pool.submit(execute_trial, spec)] = spec
                    if not futures:
                        break
                    done, _ = wait(futures, return_when=FIRST_COMPLETED)
                    for fut in done:
                        spec = futures.pop(fut)
                        try:
                            yield fut.result()
                        except BrokenProcessPool as e:
                            broken = True
                            n = attempts.get(spec.key, 0) + 1
                            attempts[spec.key] = n
                            if n <= self.max_retries:
                                pending.append(spec)
                            else:
                                yield failed_result(
                                    spec, f"worker process died during the trial ({n} attempts): {e!r}"
                                )
                    if broken:
                        # the pool is unusable: in-flight trials go back to the queue
                        for fut, spec in list(futures.items()):
                            try:
                                yield fut.result(timeout=0)
                            except Exception:
                                n = attempts.get(spec.key, 0) + 1
                                attempts[spec.key] = n
                                if n <= self.max_retries:
                                    pending.append(spec)
                                else:
                                    yield failed_result(spec, f"worker process died ({n} attempts)")
                        futures.clear()
                        pending.extend(queue)
                        queue = []
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
