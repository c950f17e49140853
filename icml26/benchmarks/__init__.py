"""Tasks, suites, the trial runner, executors and the results store.

    import icml26.benchmarks as bm
    task = bm.get_task("tutorial/point-reach")
    results = bm.run(bm.trials_for(task, "point-pd", seeds=[0, 1, 2]), store="results.db")
    print(bm.format_tables(bm.aggregate(results)))

Each family lists its tasks and suite entries in ``icml26/benchmarks/tasks/<family>.py``
(``TASKS`` and ``SUITES``) and supplies ``run_trial(task, agent, seed) -> TrialOutcome``.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icml26 import FAMILIES
from icml26._entry_points import unknown_name_error
from icml26.protocol import Task

__all__ = [
    "SuiteEntry",
    "get_task",
    "register_task",
    "list_tasks",
    "task_ids",
    "get_suite",
    "suite_names",
    "trials_for",
    "run",
    "aggregate",
    "format_tables",
]


@dataclass(frozen=True)
class SuiteEntry:
    """One line of a suite: a task, the agents to run on it (name -> kwargs), and the seeds
    (``None`` = the task's public seeds)."""

    task: str
    agents: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    seeds: Sequence[int] | None = None


_tasks: dict[str, Task] = {}
_suites: dict[str, list[SuiteEntry]] = {}
_loaded = False
_loading = False
_load_lock = threading.RLock()


def register_task(task: Task, *, replace: bool = False) -> Task:
    """Register a task under its id (the latest version wins ``get_task(id)``)."""
    old = _tasks.get(task.id)
    if old is not None and old != task and not replace and old.version == task.version:
        raise ValueError(f"task {task.id!r} v{task.version} is already registered differently")
    if old is None or task.version >= old.version or replace:
        _tasks[task.id] = task
    _tasks[task.key] = task
    return task


def _load() -> None:
    """Fill the registry from every family's task module, once, under a lock: concurrent first
    callers (a cold server's request threads) wait for the whole registry, never see half of
    it; ``_loaded`` is set only after it is filled (a failed import leaves it unset)."""
    global _loaded, _loading
    if _loaded:
        return
    with _load_lock:
        if _loaded or _loading:  # _loading: a family module calling back while we import it
            return
        _loading = True
        try:
            tasks: list[Task] = []
            suites: dict[str, list[SuiteEntry]] = {}
            for fam in FAMILIES:
                mod = importlib.import_module(f"icml26.benchmarks.tasks.{fam}")
                tasks.extend(getattr(mod, "TASKS", ()))
                for suite, entries in getattr(mod, "SUITES", {}).items():
                    suites.setdefault(suite, []).extend(entries)
            for t in tasks:
                register_task(t)
            for suite, entries in suites.items():
                _suites.setdefault(suite, []).extend(entries)
            _loaded = True
        finally:
            _loading = False


def get_task(task_id: str, version: int | None = None) -> Task:
    """The task ``task_id`` (latest version, or ``version``; ``"id@vN"`` also works)."""
    _load()
    key = task_id if version is None else f"{task_id}@v{version}"
    if key in _tasks:
        return _tasks[key]
    raise unknown_name_error("task", key, task_ids())


def list_tasks(family: str | None = None) -> list[Task]:
    """The latest version of every registered task, optionally of one family."""
    _load()
    order = {f: i for i, f in enumerate(FAMILIES)}
    found = [
        t for k, t in _tasks.items() if "@v" not in k and (family is None or t.family == family)
    ]
    return sorted(found, key=lambda t: (order.get(t.family, len(order)), t.id))


def task_ids(family: str | None = None) -> list[str]:
    return [t.id for t in list_tasks(family)]


def get_suite(name: str) -> list[SuiteEntry]:
    _load()
    if name not in _suites:
        raise unknown_name_error("suite", name, _suites)
    return list(_suites[name])


def suite_names() -> list[str]:
    _load()
    return sorted(_suites)


def trials_for(
    task: Task | str,
    agent: str,
    seeds: Sequence[int] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
    budget_scale: float | Sequence[float] = 1.0,
) -> list[Any]:
    """The TrialSpecs for one agent on one task over ``seeds`` (default: the task's seeds), at
    one budget scale or each of a ladder of them (``budget_scale=(0.25, 1, 4)``)."""
    from icml26.benchmarks.runner import TrialSpec

    t = get_task(task) if isinstance(task, str) else task
    scales = [budget_scale] if isinstance(budget_scale, (int, float)) else list(budget_scale)
    return [
        TrialSpec(t.id, t.version, agent, dict(agent_kwargs or {}), int(s), float(scale))
        for scale in scales
        for s in (t.seeds if seeds is None else seeds)
    ]


def run(*args: Any, **kwargs: Any) -> Any:
    """See :func:`icml26.benchmarks.runner.run`."""
    from icml26.benchmarks.runner import run as _run

    return _run(*args, **kwargs)


def aggregate(*args: Any, **kwargs: Any) -> Any:
    """See :func:`icml26.benchmarks.tables.aggregate`."""
    from icml26.benchmarks.tables import aggregate as _agg

    return _agg(*args, **kwargs)


def format_tables(*args: Any, **kwargs: Any) -> Any:
    """See :func:`icml26.benchmarks.tables.format_tables`."""
    from icml26.benchmarks.tables import format_tables as _fmt

    return _fmt(*args, **kwargs)
