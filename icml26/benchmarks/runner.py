"""The trial runner: (task x agent x seed) trials, each isolated, each stored when it ends.

``execute_trial`` runs one trial in the current process and never raises for an agent or env
error: the trial comes back FAILED with its traceback. ``run`` plans the trials that are not
yet FINISHED in the store, hands them to an executor (local, process pool, Ray) and commits
each result as it arrives, with a progress bar. Every executor runs each trial in a child
process under a wall-clock limit (:func:`resolve_trial_timeout`), so a hanging or crashing
agent costs its own trial only (:mod:`icml26.benchmarks.isolation`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from icml26.benchmarks.executors import make_executor
from icml26.benchmarks.store import ResultsStore, open_store
from icml26.benchmarks.trial import (  # noqa: F401  (re-exported: the names users import from here)
    DEFAULT_TRIAL_TIMEOUT_S,
    TrialSpec,
    VersionSkewError,
    _check_outcome,
    _jsonable_or_note,
    check_trial_timeout,
    execute_trial,
    failed_result,
    git_commit,
    package_versions,
    resolve_trial_timeout,
    seed_everything,
)
from icml26.protocol import TrialResult, format_scale

__all__ = [
    "TrialSpec",
    "execute_trial",
    "run",
    "package_versions",
    "git_commit",
    "seed_everything",
    "resolve_trial_timeout",
    "DEFAULT_TRIAL_TIMEOUT_S",
    "VersionSkewError",
]


def _dedupe(trials: Iterable[TrialSpec]) -> list[TrialSpec]:
    seen: dict[str, TrialSpec] = {}
    for t in trials:
        seen.setdefault(t.key, t)
    return list(seen.values())


def run(
    trials: Iterable[TrialSpec],
    store: ResultsStore | str | os.PathLike[str] | None = None,
    executor: str | Any = "local",
    workers: int = 1,
    progress: bool = True,
    rerun: bool = False,
    executor_options: Mapping[str, Any] | None = None,
    trial_timeout: float | None = None,
) -> list[TrialResult]:
    """Run every trial not already FINISHED in ``store``; return all their results.

    Args:
        trials: the TrialSpecs (duplicates are run once).
        store: a ResultsStore, a path, a database URL, or None for ``$ICML26_STORE`` /
            ``results/icml26.db``.
        executor: ``"local"`` (in this process, one at a time), ``"process"`` (a spawn process
            pool of ``workers``), ``"ray"``, or an executor object.
        rerun: run FINISHED trials again (replacing their stored results).
        trial_timeout: wall-clock limit of each trial in seconds (``math.inf``: none); ``None``
            uses each task's default (:func:`resolve_trial_timeout`). A trial past its limit is
            killed and stored FAILED with ``TrialTimeout``.
    """
    trial_timeout = check_trial_timeout(trial_timeout)
    specs = _dedupe(trials)
    _check_scales(specs)
    st = open_store(store)
    done = set() if rerun else st.finished_keys()
    todo = [s for s in specs if s.key not in done]
    options = dict(executor_options or {})
    if trial_timeout is not None:
        if isinstance(executor, str):
            options["trial_timeout"] = trial_timeout
        elif hasattr(executor, "trial_timeout"):
            executor.trial_timeout = trial_timeout
        else:
            raise ValueError(
                f"trial_timeout: the executor {executor!r} has no trial_timeout attribute"
            )
    ex = make_executor(executor, workers=workers, **options)
    if progress and specs and not todo:
        print(
            f"{len(specs)} trials already done, nothing to run (--rerun / rerun=True runs "
            "them again)",
            file=sys.stderr,
        )
    bar = _progress(len(todo), progress, desc=f"trials ({len(specs) - len(todo)} already done)")
    # Executors start trials in ``todo`` order, ``workers`` at a time: the running ones are the
    # first unfinished ones, and the bar names them (not the trial that just ended).
    pending = {s.key: s for s in todo}
    n_running = max(1, int(getattr(ex, "workers", 1) or 1))
    failed = 0
    try:
        if bar is not None:
            bar.set_postfix_str(_running_label(pending, n_running, failed))
        for result in ex.run(todo):
            st.put(result)
            pending.pop(result.key, None)
            failed += result.status == "FAILED"
            if bar is not None:
                # refresh now: with fast trials tqdm's rate limit would skip the running label
                bar.set_postfix_str(_running_label(pending, n_running, failed), refresh=False)
                bar.update(1)
                bar.refresh()
    finally:
        if bar is not None:
            bar.close()
    out = []
    for s in specs:
        r = st.get(s.key)
        if r is not None:
            out.append(r)
    return out


def _check_scales(specs: Iterable[TrialSpec]) -> None:
    """Before any trial runs: every budget scale other than 1 must change its task's budget
    (:meth:`icml26.protocol.Task.scaled` raises a ValueError naming the task otherwise)."""
    from icml26 import benchmarks

    for task_id, version, scale in {
        (s.task_id, s.task_version, s.budget_scale) for s in specs if s.budget_scale != 1.0
    }:
        try:
            task = benchmarks.get_task(task_id, version)
        except KeyError:
            continue  # the trial itself reports the unknown task (FAILED)
        task.scaled(scale)


def _running_label(pending: Mapping[str, TrialSpec], n_running: int, failed: int) -> str:
    running = list(pending.values())[:n_running]
    if not running:
        return f"{failed} failed" if failed else ""
    first = running[0]
    scale = "" if first.budget_scale == 1.0 else f" x{format_scale(first.budget_scale)}"
    label = f"running {first.task_id} {first.agent}{scale} s{first.seed}"
    if len(running) > 1:
        label += f" (+{len(running) - 1} more)"
    return label + (f"; {failed} failed" if failed else "")


def _progress(total: int, enabled: bool, desc: str) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="trial", file=sys.stderr, dynamic_ncols=True)
