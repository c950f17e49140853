"""The trial runner: (task x agent x seed) trials, each isolated, each stored when it ends.

``execute_trial`` runs one trial in the current process and never raises for an agent or env
error: the trial comes back FAILED with its traceback. ``run`` plans the trials that are not
yet FINISHED in the store, hands them to an executor (local, process pool, Ray) and commits
each result as it arrives, with a progress bar.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import math
import os
import platform
import random
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml26._entry_points import load_entry_point
from icml26.benchmarks.store import ResultsStore, open_store
from icml26.protocol import TrialOutcome, TrialResult, trial_key

__all__ = ["TrialSpec", "execute_trial", "run", "package_versions", "git_commit", "seed_everything"]

_TRACKED_PACKAGES = (
    "icml26-gym", "numpy", "scipy", "torch", "gymnasium", "pettingzoo", "stable-baselines3",
    "xarray", "openmm", "zuko", "ray",
)


@dataclass(frozen=True)
class TrialSpec:
    """What to run: a task (id and version), an agent (name or entry point, kwargs), a seed."""

    task_id: str
    task_version: int
    agent: str
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0

    @property
    def key(self) -> str:
        return trial_key(self.task_id, self.task_version, self.agent, self.agent_kwargs, self.seed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "task_version": self.task_version,
            "agent": self.agent,
            "agent_kwargs": dict(self.agent_kwargs),
            "seed": self.seed,
        }


@functools.cache
def package_versions() -> dict[str, str]:
    """Versions of Python, the platform and the packages that shape results."""
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in _TRACKED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


@functools.cache
def git_commit() -> str | None:
    """The commit of the icml26 checkout (``+dirty`` if modified), or None outside git."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=10,
        )
        return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's legacy and torch's global generators (for agents that use them),
    and pin torch and the BLAS pools to ``$ICML26_TORCH_THREADS`` threads (default 1): results
    then do not depend on the executor or the core count, and parallel trials do not
    oversubscribe the CPU."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch

        torch.manual_seed(seed)
        torch.set_num_threads(_threads())
    except ImportError:  # pragma: no cover - torch is a core dependency
        pass
    try:  # BLAS pools too: multi-threaded BLAS spin-waits badly on a loaded machine
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=_threads())
    except ImportError:  # pragma: no cover - threadpoolctl is a core dependency
        pass


def _threads() -> int:
    return max(1, int(os.environ.get("ICML26_TORCH_THREADS", "1")))


def _check_outcome(task: Any, outcome: Any) -> TrialOutcome:
    if not isinstance(outcome, TrialOutcome):
        raise TypeError(f"{task.run_trial} must return a TrialOutcome, got {type(outcome).__name__}")
    missing = [m.name for m in task.metrics if m.name not in outcome.metrics]
    if missing:
        raise ValueError(f"task {task.id!r}: run_trial returned no value for metric(s) {missing}")
    for name, value in outcome.metrics.items():
        if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise ValueError(f"task {task.id!r}: metric {name!r} is not a finite number: {value!r}")
    return outcome


def execute_trial(spec: TrialSpec) -> TrialResult:
    """Run one trial here and now; any exception becomes a FAILED result with its traceback."""
    from icml26 import agents, benchmarks

    started = _dt.datetime.now(_dt.UTC).isoformat()
    t0 = time.perf_counter()
    agent_version = "?"
    try:
        task = benchmarks.get_task(spec.task_id, spec.task_version)
        seed_everything(spec.seed)
        agent = agents.make(spec.agent, **spec.agent_kwargs)
        agent_version = agents.agent_version(agent)
        fn: Callable[..., Any] = load_entry_point(task.run_trial)
        outcome = _check_outcome(task, fn(task, agent, spec.seed))
        return TrialResult(
            task_id=spec.task_id, task_version=spec.task_version, agent_name=spec.agent,
            agent_version=agent_version, seed=spec.seed, status="FINISHED",
            metrics={k: float(v) for k, v in outcome.metrics.items()},
            scores=[float(s) for s in outcome.scores], wall_time_s=time.perf_counter() - t0,
            packages=package_versions(), git_commit=git_commit(),
            agent_kwargs=dict(spec.agent_kwargs), started_at=started,
            extra=_jsonable_or_note(outcome.extra),
        )
    except (Exception, SystemExit):  # an agent calling sys.exit() fails its trial, not the run
        return failed_result(spec, traceback.format_exc(), time.perf_counter() - t0, started, agent_version)


def failed_result(
    spec: TrialSpec, tb: str, wall_time_s: float = 0.0, started: str = "", agent_version: str = "?"
) -> TrialResult:
    """A FAILED TrialResult for ``spec`` (used by executors when a worker dies too)."""
    return TrialResult(
        task_id=spec.task_id, task_version=spec.task_version, agent_name=spec.agent,
        agent_version=agent_version, seed=spec.seed, status="FAILED", wall_time_s=wall_time_s,
        packages=package_versions(), git_commit=git_commit(), traceback=tb,
        agent_kwargs=dict(spec.agent_kwargs),
        started_at=started or _dt.datetime.now(_dt.UTC).isoformat(),
    )


def _jsonable_or_note(extra: Mapping[str, Any]) -> dict[str, Any]:
    from icml26.protocol import jsonable

    try:
        return jsonable(dict(extra))
    except TypeError as e:
        return {"note": f"extra dropped: {e}"}


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
) -> list[TrialResult]:
    """Run every trial not already FINISHED in ``store``; return all their results.

    Args:
        trials: the TrialSpecs (duplicates are run once).
        store: a ResultsStore, a path, a database URL, or None for ``$ICML26_STORE`` /
            ``results/icml26.db``.
        executor: ``"local"`` (in this process, one at a time), ``"process"`` (a spawn process
            pool of ``workers``), ``"ray"``, or an executor object.
        rerun: run FINISHED trials again (replacing their stored results).
    """
    from icml26.benchmarks.executors import make_executor

    specs = _dedupe(trials)
    st = open_store(store)
    done = set() if rerun else st.finished_keys()
    todo = [s for s in specs if s.key not in done]
    ex = make_executor(executor, workers=workers, **dict(executor_options or {}))
    bar = _progress(len(todo), progress, desc=f"trials ({len(specs) - len(todo)} already done)")
    try:
        for result in ex.run(todo):
            st.put(result)
            if bar is not None:
                bar.set_postfix_str(f"{result.task_id} {result.agent_name} s{result.seed} {result.status}")
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    out = []
    for s in specs:
        r = st.get(s.key)
        if r is not None:
            out.append(r)
    return out


def _progress(total: int, enabled: bool, desc: str) -> Any:
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="trial", file=sys.stderr, dynamic_ncols=True)
