"""Aggregate stored trials into per-task tables: IQM with BCa bootstrap 95% intervals.

Each row is one agent configuration on one task version at one budget scale (a "scale"
column appears when some trial ran at a scale other than 1); each cell is the IQM across seeds of
that seed's metric value with :func:`icml26.stats.iqm_ci` (BCa bootstrap; Student-t for n < 4;
no interval for n = 1 or identical values). Failed trials are counted, never averaged in.
An interval from fewer than :data:`MIN_SEEDS_FOR_CI` seeds is flagged ``(n=2)`` in the text
tables, with a note under the table. Tables fit ``width`` columns (default 120) by wrapping the
metric columns into several blocks; ``width=None`` prints each table on one block, however wide.
A progress bar appears when aggregation takes longer than a second.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from icml26.protocol import Task, TrialResult, config_hash, format_scale
from icml26.stats import iqm_ci

#: intervals from fewer seeds than this are flagged in the text tables (too few for a 95% CI)
MIN_SEEDS_FOR_CI = 3
#: the default width of the text tables (``icml26 results --wide`` lifts it)
TABLE_WIDTH = 120


@dataclass
class Cell:
    iqm: float
    low: float
    high: float
    n: int
    note: str = ""

    def format(self, digits: int = 3) -> str:
        if self.n == 1:
            return f"{self.iqm:.{digits}g} (n=1)"
        if self.low == self.high == self.iqm:
            return f"{self.iqm:.{digits}g} (n={self.n}, all equal)"
        text = f"{self.iqm:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}]"
        return text + (f" (n={self.n})" if self.few_seeds else "")

    @property
    def few_seeds(self) -> bool:
        """An interval from fewer than :data:`MIN_SEEDS_FOR_CI` seeds (flagged when printed)."""
        return 1 < self.n < MIN_SEEDS_FOR_CI and not self.low == self.high == self.iqm


@dataclass
class Row:
    agent: str
    agent_config: str
    n_finished: int
    n_failed: int
    seeds: list[int]
    cells: dict[str, Cell] = field(default_factory=dict)
    wall_time_s: float = 0.0
    budget_scale: float = 1.0


@dataclass
class TaskTable:
    task_id: str
    task_version: int
    task: Task | None
    primary_metric: str
    metric_names: list[str]
    rows: list[Row]
    # trials of this task version run under another definition (Task.definition_hash differs,
    # or results stored before hashes existed): left out, never mixed in
    stale: int = 0


def aggregate(
    results: Iterable[TrialResult], reps: int = 2000, seed: int = 0, progress: bool = True
) -> list[TaskTable]:
    """Group results by (task, version) and (agent, config); rank rows by the primary metric.

    ``progress`` shows a bar on stderr once aggregation has taken more than a second."""
    from icml26 import benchmarks

    groups: dict[tuple[str, int], dict[tuple[str, str, float], list[TrialResult]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in results:
        cfg = config_hash(r.agent_kwargs)
        groups[(r.task_id, r.task_version)][(r.agent_name, cfg, r.budget_scale)].append(r)
    tables = []
    bar = tqdm(
        total=sum(len(g) for g in groups.values()),
        desc="aggregating",
        unit="row",
        delay=1.0,
        disable=not progress,
        file=sys.stderr,
        leave=False,
    )
    for (task_id, version), by_agent in sorted(groups.items()):
        try:
            task: Task | None = benchmarks.get_task(task_id, version)
        except KeyError:
            task = None
        stale = 0
        if task is not None:
            current = {
                k: [r for r in rs if r.task_hash == task.definition_hash]
                for k, rs in by_agent.items()
            }
            stale = sum(len(rs) for rs in by_agent.values()) - sum(
                len(rs) for rs in current.values()
            )
            by_agent = {k: rs for k, rs in current.items() if rs}
        metric_names = (
            [m.name for m in task.metrics]
            if task
            else sorted({k for rs in by_agent.values() for r in rs for k in r.metrics})
        )
        primary = task.primary_metric if task else (metric_names[0] if metric_names else "")
        configs: dict[str, set[str]] = defaultdict(set)
        for name, cfg, _scale in by_agent:
            configs[name].add(cfg)
        rows = []
        for (name, cfg, scale), rs in sorted(by_agent.items()):
            ok = [r for r in rs if r.status == "FINISHED"]
            row = Row(
                agent=name if len(configs[name]) == 1 else f"{name}#{cfg}",
                agent_config=cfg,
                n_finished=len(ok),
                n_failed=len(rs) - len(ok),
                seeds=sorted(r.seed for r in ok),
                wall_time_s=sum(r.wall_time_s for r in rs),
                budget_scale=scale,
            )
            for m in metric_names:
                vals = [r.metrics[m] for r in ok if m in r.metrics]
                if vals:
                    # a bounded metric (a rate, an ESS) never gets an interval outside its range
                    rng = (task.metric(m).lower, task.metric(m).upper) if task else None
                    iv = iqm_ci(vals, n_resamples=reps, seed=seed, bounds=rng)
                    row.cells[m] = Cell(iv.estimate, iv.low, iv.high, n=len(vals), note=iv.note)
            rows.append(row)
            bar.update(1)
        sign = -1.0 if (task is None or task.primary.direction == "max") else 1.0
        rows.sort(
            key=lambda r: (
                primary not in r.cells,
                sign * r.cells[primary].iqm if primary in r.cells else 0.0,
            )
        )
        tables.append(TaskTable(task_id, version, task, primary, metric_names, rows, stale))
    bar.close()
    return tables


def format_tables(
    tables: Iterable[TaskTable], digits: int = 3, width: int | None = TABLE_WIDTH
) -> str:
    """Plain-text tables, one per task, best agent first (IQM [95% CI] across seeds).

    A table wider than ``width`` characters is wrapped: the agent, seeds and failed columns
    repeat in each block, the primary metric comes first, the other metrics follow in as many
    blocks as it takes. ``width=None``: every table in one block, as wide as it is."""
    out = []
    for t in tables:
        arrow = {"max": "higher is better", "min": "lower is better"}
        direction = arrow[t.task.primary.direction] if t.task else ""
        scaled = any(r.budget_scale != 1.0 for r in t.rows)
        title = f"{t.task_id} v{t.task_version}  (primary: {t.primary_metric}, {direction}; IQM [95% CI])"
        fixed = [["agent", *(["scale"] if scaled else []), "seeds", "failed"]] + [
            [r.agent]
            + ([f"x{format_scale(r.budget_scale)}"] if scaled else [])
            + [str(r.n_finished), str(r.n_failed)]
            for r in t.rows
        ]
        columns = {
            m: [f"*{m}*" if m == t.primary_metric else m]
            + [r.cells[m].format(digits) if m in r.cells else "-" for r in t.rows]
            for m in t.metric_names
        }
        blocks = _blocks(fixed, columns, t.primary_metric, width)
        notes = []
        if any(c.few_seeds for r in t.rows for c in r.cells.values()):
            notes.append(
                f"(n=2) after an interval: from fewer than {MIN_SEEDS_FOR_CI} seeds, too few for "
                "a reliable 95% interval; run more seeds (--seeds)"
            )
        if t.stale:
            notes.append(
                f"({t.stale} trial(s) of another definition of this task version left out: "
                "stored before the definition hash or by other code; re-run them)"
            )
        out.append("\n".join([title, *blocks, *notes, ""]))
    return "\n".join(out) if out else "(no results)"


def _blocks(
    fixed: list[list[str]], columns: dict[str, list[str]], primary: str, width: int | None
) -> list[str]:
    """The table's lines: ``fixed`` columns then the metric ``columns``, in one block or, past
    ``width``, in several (the primary metric in the first), each ruled above and below its header."""

    def render(names: list[str]) -> list[str]:
        cols = [[row[i] for row in fixed] for i in range(len(fixed[0]))] + [
            columns[m] for m in names
        ]
        widths = [max(len(c) for c in col) for col in cols]
        lines = [
            "  ".join(col[i].ljust(w) for col, w in zip(cols, widths)).rstrip()
            for i in range(len(fixed))
        ]
        rule = "-" * max(len(x) for x in lines)
        return [rule, lines[0], rule, *lines[1:]]

    names = list(columns)
    if width is None or max(len(x) for x in render(names)) <= width:
        return render(names)
    names = sorted(names, key=lambda m: m != primary)  # the primary metric first
    groups: list[list[str]] = []
    for m in names:
        if groups and max(len(x) for x in render([*groups[-1], m])) <= width:
            groups[-1].append(m)
        else:
            groups.append([m])
    out: list[str] = []
    for i, g in enumerate(groups):
        if i:
            out.append(f"  (continued, {i + 1}/{len(groups)})")
        out.extend(render(g))
    return out


# ----------------------------------------------------------------------------- budget ladders
@dataclass
class Curve:
    """One (task, agent configuration) over the budget scales it ran at: the primary metric's
    IQM [95% CI] per scale and the plateau test of the last step (:func:`icml26.stats.plateau_test`)."""

    task_id: str
    task_version: int
    agent: str
    agent_config: str
    metric: str
    direction: str
    points: dict[float, Cell]
    plateau: Any


def curves(
    results: Iterable[TrialResult],
    metric: str | None = None,
    tolerance: float = 0.05,
    relative: bool = True,
    reps: int = 2000,
    seed: int = 0,
) -> list[Curve]:
    """Score against budget scale for every (task, agent configuration), from FINISHED trials
    of the task's current definition; ``metric`` defaults to the task's primary metric."""
    from icml26 import benchmarks
    from icml26.stats import plateau_test

    by: dict[tuple[str, int, str, str], dict[float, dict[int, float]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    tasks: dict[tuple[str, int], Task | None] = {}
    for r in results:
        if r.status != "FINISHED":
            continue
        tk = (r.task_id, r.task_version)
        if tk not in tasks:
            try:
                tasks[tk] = benchmarks.get_task(*tk)
            except KeyError:
                tasks[tk] = None
        task = tasks[tk]
        if task is not None and r.task_hash != task.definition_hash:
            continue
        name = metric or (task.primary_metric if task else next(iter(r.metrics), ""))
        if name not in r.metrics:
            continue
        key = (r.task_id, r.task_version, r.agent_name, config_hash(r.agent_kwargs))
        by[key][r.budget_scale][r.seed] = r.metrics[name]
    out = []
    for (task_id, version, agent, cfg), ladder in sorted(by.items()):
        task = tasks[(task_id, version)]
        name = metric or (task.primary_metric if task else "")
        direction = task.metric(name).direction if task and name else "max"
        points = {}
        for scale in sorted(ladder):
            vals = list(ladder[scale].values())
            iv = iqm_ci(vals, n_resamples=reps, seed=seed)
            points[scale] = Cell(iv.estimate, iv.low, iv.high, n=len(vals), note=iv.note)
        pl = plateau_test(
            {s: dict(v) for s, v in ladder.items()},
            direction=direction,
            tolerance=tolerance,
            relative=relative,
            seed=seed,
        )
        out.append(Curve(task_id, version, agent, cfg, name, direction, points, pl))
    return out


def format_curves(cs: Iterable[Curve], digits: int = 3) -> str:
    """Plain text: per task, one line per agent with its score at each scale and the plateau."""
    out: list[str] = []
    by_task: dict[tuple[str, int], list[Curve]] = defaultdict(list)
    for c in cs:
        by_task[(c.task_id, c.task_version)].append(c)
    for (task_id, version), group in by_task.items():
        scales = sorted({s for c in group for s in c.points})
        header = ["agent"] + [f"x{format_scale(s)}" for s in scales] + ["last step"]
        lines = [header]
        names = defaultdict(set)
        for c in group:
            names[c.agent].add(c.agent_config)
        for c in group:
            label = c.agent if len(names[c.agent]) == 1 else f"{c.agent}#{c.agent_config}"
            lines.append(
                [label]
                + [c.points[s].format(digits) if s in c.points else "-" for s in scales]
                + [c.plateau.reading]
            )
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        body = ["  ".join(x.ljust(w) for x, w in zip(line, widths)) for line in lines]
        better = {"max": "higher is better", "min": "lower is better"}[group[0].direction]
        title = (
            f"{task_id} v{version}  ({group[0].metric} vs budget scale, {better}; "
            "IQM [95% CI] over seeds; last step: paired test of the two largest scales)"
        )
        rule = "-" * len(body[0])
        out.append("\n".join([title, rule, body[0], rule, *body[1:], ""]))
    return "\n".join(out) if out else "(no results)"
