"""Aggregate stored trials into per-task tables: IQM with stratified-bootstrap 95% intervals.

Each row is one agent configuration on one task version; each cell is the IQM across seeds of
that seed's metric value with rliable's stratified-bootstrap interval. Failed trials are counted,
never averaged in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from icml26.protocol import Task, TrialResult, config_hash
from icml26.stats import iqm_ci


@dataclass
class Cell:
    iqm: float
    low: float
    high: float
    n: int

    def format(self, digits: int = 3) -> str:
        if self.n == 1:
            return f"{self.iqm:.{digits}g} (n=1)"
        return f"{self.iqm:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}]"


@dataclass
class Row:
    agent: str
    agent_config: str
    n_finished: int
    n_failed: int
    seeds: list[int]
    cells: dict[str, Cell] = field(default_factory=dict)
    wall_time_s: float = 0.0


@dataclass
class TaskTable:
    task_id: str
    task_version: int
    task: Task | None
    primary_metric: str
    metric_names: list[str]
    rows: list[Row]


def aggregate(results: Iterable[TrialResult], reps: int = 2000, seed: int = 0) -> list[TaskTable]:
    """Group results by (task, version) and (agent, config); rank rows by the primary metric."""
    from icml26 import benchmarks

    groups: dict[tuple[str, int], dict[tuple[str, str], list[TrialResult]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in results:
        groups[(r.task_id, r.task_version)][(r.agent_name, config_hash(r.agent_kwargs))].append(r)
    tables = []
    for (task_id, version), by_agent in sorted(groups.items()):
        try:
            task: Task | None = benchmarks.get_task(task_id, version)
        except KeyError:
            task = None
        metric_names = [m.name for m in task.metrics] if task else sorted(
            {k for rs in by_agent.values() for r in rs for k in r.metrics}
        )
        primary = task.primary_metric if task else (metric_names[0] if metric_names else "")
        names_per_agent: dict[str, int] = defaultdict(int)
        for name, _ in by_agent:
            names_per_agent[name] += 1
        rows = []
        for (name, cfg), rs in sorted(by_agent.items()):
            ok = [r for r in rs if r.status == "FINISHED"]
            row = Row(
                agent=name if names_per_agent[name] == 1 else f"{name}#{cfg}",
                agent_config=cfg,
                n_finished=len(ok),
                n_failed=len(rs) - len(ok),
                seeds=sorted(r.seed for r in ok),
                wall_time_s=sum(r.wall_time_s for r in rs),
            )
            for m in metric_names:
                vals = [r.metrics[m] for r in ok if m in r.metrics]
                if vals:
                    row.cells[m] = Cell(*iqm_ci(vals, reps=reps, seed=seed), n=len(vals))
            rows.append(row)
        sign = -1.0 if (task is None or task.primary.direction == "max") else 1.0
        rows.sort(key=lambda r: (primary not in r.cells, sign * r.cells[primary].iqm if primary in r.cells else 0.0))
        tables.append(TaskTable(task_id, version, task, primary, metric_names, rows))
    return tables


def format_tables(tables: Iterable[TaskTable], digits: int = 3) -> str:
    """Plain-text tables, one per task, best agent first (IQM [95% CI] across seeds)."""
    out = []
    for t in tables:
        arrow = {"max": "higher is better", "min": "lower is better"}
        direction = arrow[t.task.primary.direction] if t.task else ""
        header = ["agent", "seeds", "failed"] + [
            (f"*{m}*" if m == t.primary_metric else m) for m in t.metric_names
        ]
        lines = [header]
        for r in t.rows:
            lines.append(
                [r.agent, str(r.n_finished), str(r.n_failed)]
                + [r.cells[m].format(digits) if m in r.cells else "-" for m in t.metric_names]
            )
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        title = f"{t.task_id} v{t.task_version}  (primary: {t.primary_metric}, {direction}; IQM [95% CI])"
        body = ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in lines]
        rule = "-" * len(body[0])
        out.append("\n".join([title, rule, body[0], rule, *body[1:], ""]))
    return "\n".join(out) if out else "(no results)"
