"""One trial: ``TrialSpec`` and ``execute_trial``, with the provenance they record.

``execute_trial`` runs one (task, agent, seed) trial in the current process and never raises
for an agent or env error: the trial comes back FAILED with its traceback. The run loop that
plans trials and stores them is :mod:`icml26.benchmarks.runner`; the executors
(:mod:`~icml26.benchmarks.executors`, :mod:`~icml26.benchmarks.isolation`,
:mod:`~icml26.benchmarks.ray_executor`) use this module and never the run loop.
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
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml26._entry_points import load_entry_point
from icml26.protocol import TrialOutcome, TrialResult, check_budget_scale, trial_key

__all__ = [
    "TrialSpec",
    "execute_trial",
    "package_versions",
    "git_commit",
    "seed_everything",
    "resolve_trial_timeout",
    "DEFAULT_TRIAL_TIMEOUT_S",
    "VersionSkewError",
]

# The wall-clock limit of a trial whose task sets none (see resolve_trial_timeout).
DEFAULT_TRIAL_TIMEOUT_S = 4 * 3600.0
# True inside a trial's child process: a KeyboardInterrupt there comes from the agent (the
# driver's Ctrl-C does not reach the child), so it fails the trial instead of the run.
_IN_CHILD = False

_TRACKED_PACKAGES = (
    "icml26-gym",
    "numpy",
    "scipy",
    "torch",
    "gymnasium",
    "pettingzoo",
    "stable-baselines3",
    "xarray",
    "openmm",
    "zuko",
    "ray",
)


@dataclass(frozen=True)
class TrialSpec:
    """What to run: a task (id and version), an agent (name or entry point, kwargs), a seed,
    and the budget scale (the task's learning budget times ``budget_scale``, see
    :meth:`icml26.protocol.Budget.scaled`; part of the key unless it is 1)."""

    task_id: str
    task_version: int
    agent: str
    agent_kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    budget_scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "budget_scale", check_budget_scale(self.budget_scale))

    @property
    def key(self) -> str:
        return trial_key(
            self.task_id,
            self.task_version,
            self.agent,
            self.agent_kwargs,
            self.seed,
            task_definition_hash(self.task_id, self.task_version),
            self.budget_scale,
        )

    def to_dict(self) -> dict[str, Any]:
        d = {
            "task_id": self.task_id,
            "task_version": self.task_version,
            "agent": self.agent,
            "agent_kwargs": dict(self.agent_kwargs),
            "seed": self.seed,
        }
        if self.budget_scale != 1.0:
            d["budget_scale"] = self.budget_scale
        return d


@functools.cache
def task_definition_hash(task_id: str, task_version: int) -> str:
    """The registered task's :attr:`~icml26.protocol.Task.definition_hash` ("" if unknown)."""
    from icml26 import benchmarks

    try:
        return benchmarks.get_task(task_id, task_version).definition_hash
    except KeyError:
        return ""


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
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
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
        raise TypeError(
            f"{task.run_trial} must return a TrialOutcome, got {type(outcome).__name__}"
        )
    missing = [m.name for m in task.metrics if m.name not in outcome.metrics]
    if missing:
        raise ValueError(f"task {task.id!r}: run_trial returned no value for metric(s) {missing}")
    for name, value in outcome.metrics.items():
        if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise ValueError(f"task {task.id!r}: metric {name!r} is not a finite number: {value!r}")
    return outcome


_OUT_OF_DATE = r".*The environment \S+ is out of date\. You should consider upgrading"


def execute_trial(spec: TrialSpec) -> TrialResult:
    """Run one trial here and now; any exception becomes a FAILED result with its traceback."""
    from icml26 import agents, benchmarks

    started = _dt.datetime.now(_dt.UTC).isoformat()
    t0 = time.perf_counter()
    agent_version = "?"
    try:
        task = benchmarks.get_task(spec.task_id, spec.task_version)
        run_task = task.scaled(spec.budget_scale)  # the same task at scale 1
        seed_everything(spec.seed)
        agent = agents.make(spec.agent, **spec.agent_kwargs)
        agent_version = agents.agent_version(agent)
        fn: Callable[..., Any] = load_entry_point(task.run_trial)
        with warnings.catch_warnings():
            # Gymnasium tells whoever makes an id that is not its env's newest version to upgrade;
            # a task names its env version on purpose (a newer version is another task)
            warnings.filterwarnings("ignore", _OUT_OF_DATE, DeprecationWarning)
            outcome = _check_outcome(task, fn(run_task, agent, spec.seed))
        extra = _jsonable_or_note(outcome.extra)
        if spec.budget_scale != 1.0:  # the budget the learner had, for the record
            extra.setdefault("budget", run_task.budget.to_dict())
        return TrialResult(
            task_id=spec.task_id,
            task_version=spec.task_version,
            agent_name=spec.agent,
            agent_version=agent_version,
            seed=spec.seed,
            status="FINISHED",
            metrics={k: float(v) for k, v in outcome.metrics.items()},
            scores=[float(s) for s in outcome.scores],
            wall_time_s=time.perf_counter() - t0,
            packages=package_versions(),
            git_commit=git_commit(),
            task_hash=task.definition_hash,
            agent_kwargs=dict(spec.agent_kwargs),
            started_at=started,
            extra=extra,
            budget_scale=spec.budget_scale,
        )
    except (Exception, SystemExit):  # an agent calling sys.exit() fails its trial, not the run
        return failed_result(
            spec, traceback.format_exc(), time.perf_counter() - t0, started, agent_version
        )
    except KeyboardInterrupt:
        if not _IN_CHILD:
            raise  # in the driver's own process a Ctrl-C stops the run
        return failed_result(
            spec, traceback.format_exc(), time.perf_counter() - t0, started, agent_version
        )


def resolve_trial_timeout(
    task: Any, override: float | None = None, budget_scale: float = 1.0
) -> float | None:
    """The wall-clock limit in seconds of one trial of ``task`` (``None``: no limit).

    ``override`` (``--trial-timeout``) wins; ``math.inf`` or a value <= 0 means no limit. Else
    the task's ``extra["trial_timeout_s"]``; else, when its budget has a ``wall_clock_s``,
    twice that plus 10 minutes (the budget covers learning; evaluation and start-up come on
    top); else ``$ICML26_TRIAL_TIMEOUT`` or :data:`DEFAULT_TRIAL_TIMEOUT_S` (4 hours). A
    default limit (not an override) grows with a ``budget_scale`` above 1.
    """
    grow = max(1.0, check_budget_scale(budget_scale))
    if override is None and task is not None:
        extra = getattr(task, "extra", None) or {}
        if extra.get("trial_timeout_s") is not None:
            override = float(extra["trial_timeout_s"]) * grow
        else:
            wall = getattr(getattr(task, "budget", None), "wall_clock_s", None)
            if wall is not None:
                override = 2.0 * float(wall) * grow + 600.0
    if override is None:
        env = os.environ.get("ICML26_TRIAL_TIMEOUT")
        try:
            override = (float(env) if env else DEFAULT_TRIAL_TIMEOUT_S) * grow
        except ValueError:
            raise ValueError(
                f"$ICML26_TRIAL_TIMEOUT must be a number of seconds, got {env!r}"
            ) from None
    if isinstance(override, bool) or not isinstance(override, (int, float)) or math.isnan(override):
        raise TypeError(f"trial timeout must be a number of seconds, got {override!r}")
    return None if override <= 0 or math.isinf(override) else float(override)


def check_trial_timeout(value: Any) -> float | None:
    """Validate a user-given trial timeout (``None`` = the tasks' defaults)."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or math.isnan(value)
        or value <= 0
    ):
        raise ValueError(
            f"trial_timeout must be a number of seconds > 0 (math.inf for no limit) "
            f"or None for the task's default, got {value!r}"
        )
    return float(value)


class VersionSkewError(RuntimeError):
    """The driver and a worker define the same task or agent name differently."""


def driver_registrations(spec: TrialSpec) -> tuple[Any, Any]:
    """The task and named agent of ``spec`` as registered in this (driver) process, if any:
    sent along with the trial so that a worker that does not know them (a spawned process, a
    Ray node) registers them, and one that knows them differently refuses to run."""
    from icml26 import agents, benchmarks

    try:
        task: Any = benchmarks.get_task(spec.task_id, spec.task_version)
    except KeyError:
        task = None  # the worker reports the unknown task as a FAILED trial
    return task, agents.all_specs().get(spec.agent)


def ensure_registered(task: Any, agent: Any) -> None:
    """Register the driver's ``task`` and ``agent`` here if unknown; raise
    :class:`VersionSkewError` if this process defines them differently."""
    import socket

    from icml26 import __version__, agents, benchmarks

    where = f"the driver and this worker ({socket.gethostname()}, icml26 {__version__})"
    advice = "install the same icml26-gym (and plugins) on every node, e.g. the docker/ suite image"
    if task is not None:
        try:
            mine = benchmarks.get_task(task.id, task.version)
        except KeyError:
            benchmarks.register_task(task)
        else:
            if mine != task:
                raise VersionSkewError(f"task {task.key} differs between {where}: {advice}")
    if agent is not None:
        known = agents.all_specs().get(agent.name)
        if known is None:
            agents.register(
                agent.name, agent.entry_point, agent.family, agent.description, agent.kwargs
            )
        elif (known.entry_point, dict(known.kwargs)) != (agent.entry_point, dict(agent.kwargs)):
            raise VersionSkewError(f"agent {agent.name!r} differs between {where}: {advice}")


def failed_result(
    spec: TrialSpec, tb: str, wall_time_s: float = 0.0, started: str = "", agent_version: str = "?"
) -> TrialResult:
    """A FAILED TrialResult for ``spec`` (used by executors when a worker dies too)."""
    return TrialResult(
        task_id=spec.task_id,
        task_version=spec.task_version,
        agent_name=spec.agent,
        agent_version=agent_version,
        seed=spec.seed,
        status="FAILED",
        wall_time_s=wall_time_s,
        packages=package_versions(),
        git_commit=git_commit(),
        traceback=tb,
        task_hash=task_definition_hash(spec.task_id, spec.task_version),
        agent_kwargs=dict(spec.agent_kwargs),
        started_at=started or _dt.datetime.now(_dt.UTC).isoformat(),
        budget_scale=spec.budget_scale,
    )


def _jsonable_or_note(extra: Mapping[str, Any]) -> dict[str, Any]:
    from icml26.protocol import jsonable

    try:
        return jsonable(dict(extra))
    except TypeError as e:
        return {"note": f"extra dropped: {e}"}
