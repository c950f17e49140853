"""Studies: a results page as a declaration run by the harness (BenchMARL's declared cross product).

A :class:`Study` names its tasks (each a :class:`Block`, optionally swept over a task parameter
with a :class:`Sweep`), its arms (:class:`Arm`: an agent and its kwargs), seeds, a budget ladder,
and the paper's claims (:class:`Compare`, :class:`Rate`, :class:`Untestable`). :meth:`Study.trials`
turns it into ordinary :class:`~icml26.benchmarks.runner.TrialSpec` s, so a study runs through
:func:`icml26.benchmarks.run` on any executor into an ordinary results store, and resumes for
free. :func:`evaluate` reads the stored results back into a :class:`StudyData` (per variant, arm,
rung and seed), tests each arm's plateau on the ladder (:func:`icml26.stats.plateau_test`) and
each claim (paired tests, fitted rates; one Holm family per study), and gives each claim its
verdict:

* ``"reproduced"`` / ``"not reproduced"`` only when every arm the claim compares is at the plateau
  of its ladder (or exact: no learning budget) with at least ``Study.min_seeds`` paired seeds;
* ``"undecided at this budget"`` otherwise, with the last step's improvement of each arm that is
  still moving;
* ``"untestable here"`` with the reason, for a claim the data cannot express.

Task variants (:func:`task_variant`): a sweep point or a block's ``overrides`` (dotted paths into
:meth:`~icml26.protocol.Task.to_dict`, e.g. ``"budget.dataset_size"``, ``"extra.beta"``,
``"env_kwargs.game_kwargs.S"``) make a new task ``<id>[<label>]`` of the same version with its
own definition hash. The study registers its variants before it runs or reads them; the
registered task itself is never changed.

The ladder: at rung ``s`` an arm runs with the task's learning budget times ``s``
(``TrialSpec.budget_scale``) or, when the arm names ``scaled_kwargs``, with those agent kwargs
times ``s`` (an iteration count such as SOS-MD's ``T``) and the task as defined. The page's
numbers are the top rung's; the plateau test compares the top rung with the one below.
"""

from __future__ import annotations

import copy
import gzip
import io
import math
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from icml26.protocol import Task, TrialResult, check_budget_scale, config_hash

__all__ = [
    "Sweep",
    "Arm",
    "Block",
    "Compare",
    "Rate",
    "Untestable",
    "Study",
    "Planned",
    "StudyData",
    "ClaimResult",
    "Evaluation",
    "task_variant",
    "evaluate",
    "write_archive",
    "read_archive",
    "compare_results",
    "VERDICTS",
]

VERDICTS = ("reproduced", "not reproduced", "undecided at this budget", "untestable here")


# ----------------------------------------------------------------------------- task variants
def _set_path(d: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    cur: Any = d
    for i, p in enumerate(parts[:-1]):
        if not isinstance(cur, dict) or p not in cur:
            raise KeyError(
                f"task override {path!r}: {'.'.join(parts[: i + 1])!r} is not in the task's "
                f"definition (Task.to_dict); top-level fields are {sorted(d)}"
            )
        cur = cur[p]
    if not isinstance(cur, dict):
        raise KeyError(f"task override {path!r}: {'.'.join(parts[:-1])!r} is not a mapping")
    if len(parts) == 1 and parts[0] not in d:
        raise KeyError(
            f"task override {path!r}: Task has no field {parts[0]!r}; it has {sorted(d)}"
        )
    if len(parts) == 2 and parts[0] == "budget" and parts[1] not in cur:
        raise KeyError(f"task override {path!r}: Budget has no field {parts[1]!r}")
    cur[parts[-1]] = copy.deepcopy(value)


def task_variant(task: Task, overrides: Mapping[str, Any], label: str) -> Task:
    """``task`` with ``overrides`` applied, under the id ``<task.id>[<label>]``, same version.

    ``overrides`` maps dotted paths into ``task.to_dict()`` to new values (``"budget.dataset_size"``,
    ``"extra.dataset_pool"``, ``"eval_episodes"``; ``"metrics"`` takes a list of metric names to
    keep). The variant records what it is in ``extra["variant_of"]``, so its definition hash
    differs from the task's and from every other variant's.
    """
    if not label or any(c in label for c in "[]|~#@"):
        raise ValueError(f"task variant label {label!r}: non-empty, without []|~#@")
    d = task.to_dict()
    for path, value in overrides.items():
        if path == "metrics":
            keep = list(value)
            unknown = sorted(set(keep) - {m["name"] for m in d["metrics"]})
            if unknown:
                raise KeyError(f"task override 'metrics': {task.id} has no metric(s) {unknown}")
            d["metrics"] = [m for m in d["metrics"] if m["name"] in keep]
        else:
            _set_path(d, path, value)
    d["id"] = f"{task.id}[{label}]"
    d["extra"] = {**d["extra"], "variant_of": {"task": task.key, "overrides": dict(overrides)}}
    return Task.from_dict(d)


def _value_text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, (list, tuple)):
        return "-".join(_value_text(x) for x in v)
    return str(v)


# ----------------------------------------------------------------------------- declarations
@dataclass(frozen=True)
class Sweep:
    """A task parameter swept over ``values``: ``path`` is a dotted override path
    (``"budget.dataset_size"``), ``name`` its short name in variant ids (``n`` ->
    ``markov_games/random-uniform[n=1000]``) and on the page."""

    name: str
    path: str
    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(self.values))
        if not self.values:
            raise ValueError(f"Sweep {self.name!r}: no values")


@dataclass(frozen=True)
class Arm:
    """One configuration of one agent.

    Args:
        label: the name on the page (unique in the study).
        agent: a registered agent name or ``"package.module:Class"``.
        kwargs: constructor kwargs.
        per_task: kwargs added on some base tasks (``{"markov_games/tree-game": {"beta": 0.3}}``).
        kwargs_for: kwargs computed from the (variant) task, e.g. a regularization that shrinks
            with the data set size.
        scaled_kwargs: the ladder multiplies these kwargs (an iteration count) instead of the
            task's learning budget.
        exact: the arm has no learning budget (an exact solver, a fixed rule): it runs at the top
            rung only and counts as at plateau.
        tasks: only on these base task ids (default: every block that lists no arms of its own).
    """

    label: str
    agent: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    per_task: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    kwargs_for: Callable[[Task], Mapping[str, Any]] | None = None
    scaled_kwargs: tuple[str, ...] = ()
    exact: bool = False
    tasks: tuple[str, ...] | None = None

    def config(self, task: Task, base: str, scale: float) -> tuple[dict[str, Any], float]:
        """(agent kwargs, budget scale) of this arm on ``task`` (a variant of ``base``) at rung
        ``scale``."""
        kw: dict[str, Any] = {**self.kwargs, **self.per_task.get(base, {})}
        if self.kwargs_for is not None:
            kw.update(self.kwargs_for(task))
        if not self.scaled_kwargs:
            return kw, scale
        for k in self.scaled_kwargs:
            if k not in kw:
                raise ValueError(
                    f"arm {self.label!r}: scaled kwarg {k!r} is not in its kwargs {kw}"
                )
            v = kw[k]
            kw[k] = max(1, math.floor(v * scale + 0.5)) if isinstance(v, int) else v * scale
        return kw, 1.0


@dataclass(frozen=True)
class Block:
    """One task of a study: the registered task ``task`` with ``overrides`` (a variant when not
    empty), optionally swept, with its own arms (default: the study's) and seeds. ``ladder``:
    False runs every arm at the top rung only (a diagnostic block whose numbers carry no claim,
    e.g. a sweep over an iteration count that is its own ladder)."""

    task: str
    label: str = ""
    overrides: Mapping[str, Any] = field(default_factory=dict)
    sweep: Sweep | None = None
    arms: tuple[Arm, ...] | None = None
    seeds: tuple[int, ...] | None = None
    ladder: bool = True

    @property
    def name(self) -> str:
        """The block's name on the page: its label, else its task id."""
        return self.label or self.task


@dataclass(frozen=True)
class Compare:
    """The paper's claim that arm ``a`` is ``direction`` than arm ``b`` on ``metric`` (in the
    metric's own sense of better), tested paired by seed at the top rung on ``block`` (its
    label or task id) at sweep value ``at`` (default: the sweep's last value)."""

    id: str
    text: str
    a: str
    b: str
    block: str
    metric: str
    direction: Literal["better", "worse"] = "better"
    at: Any = None


@dataclass(frozen=True)
class Rate:
    """The paper's claim that ``metric`` of ``arm`` falls at least like ``x ** slope`` over the
    block's sweep (log-log OLS of the mean over seeds; percentile bootstrap over seeds). Tested
    one-sided: H0 "the slope is above ``slope + margin``"; the arm's plateau is tested at the
    sweep's last value. ``over``: the sweep values fitted (default all)."""

    id: str
    text: str
    arm: str
    block: str
    metric: str
    slope: float
    margin: float = 0.1
    over: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class Untestable:
    """A claim this testbed cannot express, and why (shown as ``"untestable here"``)."""

    id: str
    text: str
    reason: str


Claim = Compare | Rate | Untestable


@dataclass(frozen=True)
class Study:
    """A results page as a declaration (see the module docstring).

    ``bullet`` is the README summary, a ``str.format`` template over :meth:`Evaluation.values`
    (or a function of the evaluation); every number in it must also stand on the page (the
    README generator checks). ``paper`` (its short name) and ``methods`` (the agents that are
    the paper's method) go into the summary block beside it when given. ``sections(data, evaluation) -> list[str]`` and
    ``figures(data, evaluation, folder) -> list[(title, file name)]`` add the page's own
    markdown and figures to what the shared generator writes.
    """

    name: str
    title: str
    family: str
    page: str
    blocks: tuple[Block, ...]
    arms: tuple[Arm, ...] = ()
    seeds: tuple[int, ...] = tuple(range(10))
    ladder: tuple[float, ...] = (1.0,)
    ladder_seeds: Mapping[float, tuple[int, ...]] = field(default_factory=dict)
    ladder_at: Literal["every", "last"] = "every"
    claims: tuple[Claim, ...] = ()
    intro: str = ""
    bullet: str | Callable[[Evaluation], str] = ""
    paper: str = ""
    methods: tuple[str, ...] = ()
    sections: Callable[[StudyData, Evaluation], list[str]] | None = None
    figures: Callable[[StudyData, Evaluation, Path], list[tuple[str, str]]] | None = None
    plots: tuple[str, ...] = ("ladder", "curves", "profile")
    plateau_tolerance: float = 0.05
    plateau_relative: bool = True
    min_seeds: int = 10
    alpha: float = 0.05

    def __post_init__(self) -> None:
        for name in ("blocks", "arms", "seeds", "claims", "methods"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        ladder = tuple(sorted({check_budget_scale(s) for s in self.ladder}))
        object.__setattr__(self, "ladder", ladder)
        labels = [a.label for a in self.arms] + [
            a.label for b in self.blocks for a in (b.arms or ())
        ]
        if not self.blocks:
            raise ValueError(f"study {self.name!r}: no blocks (tasks)")
        names = [b.name for b in self.blocks]
        if len(set(names)) != len(names):
            raise ValueError(f"study {self.name!r}: block names must be unique, got {names}")
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"study {self.name!r}: claim ids must be unique, got {ids}")
        known = set(labels)
        for c in self.claims:
            arms = (c.a, c.b) if isinstance(c, Compare) else (c.arm,) if isinstance(c, Rate) else ()
            for a in arms:
                if a not in known:
                    raise ValueError(f"study {self.name!r}: claim {c.id!r} names unknown arm {a!r}")
            if isinstance(c, (Compare, Rate)) and c.block not in names:
                raise ValueError(
                    f"study {self.name!r}: claim {c.id!r} names unknown block {c.block!r}; "
                    f"blocks are {names}"
                )

    @property
    def top(self) -> float:
        """The top rung of the ladder: the page's numbers and claims are at this scale."""
        return self.ladder[-1]

    @property
    def store_path(self) -> str:
        """Where ``icml26 study run`` keeps the study's results (gitignored)."""
        return f"results/studies/{self.name}.db"

    @property
    def archive_path(self) -> str:
        """The committed raw archive of the study's TrialResults (``icml26 study export``)."""
        return f"docs/results/raw/{self.name}.jsonl.gz"

    def block(self, name: str) -> Block:
        for b in self.blocks:
            if b.name == name:
                return b
        raise KeyError(f"study {self.name!r} has no block {name!r}")

    def block_arms(self, block: Block, extra: Sequence[Arm] = ()) -> list[Arm]:
        """The arms run on ``block``: its own, else the study's that apply to its task; plus
        ``extra`` (a user's agent added with ``study run --agent``)."""
        arms = (
            list(block.arms)
            if block.arms is not None
            else [a for a in self.arms if a.tasks is None or block.task in a.tasks]
        )
        return arms + list(extra)

    def plan(self, extra_arms: Sequence[Arm] = ()) -> list[Planned]:
        """Every trial of the study, each with its place (block, sweep value, arm, rung)."""
        from icml26 import benchmarks
        from icml26.benchmarks.runner import TrialSpec

        out: list[Planned] = []
        for b in self.blocks:
            base = benchmarks.get_task(b.task)
            points: list[Any] = list(b.sweep.values) if b.sweep else [None]
            seeds = tuple(b.seeds if b.seeds is not None else self.seeds)
            for i, point in enumerate(points):
                task = self.variant(b, point, base)
                last = i == len(points) - 1
                for arm in self.block_arms(b, extra_arms):
                    rungs = [self.top] if arm.exact or not b.ladder else list(self.ladder)
                    for rung in rungs:
                        if rung != self.top and self.ladder_at == "last" and not last:
                            continue
                        kw, scale = arm.config(task, b.task, rung)
                        rung_seeds = (
                            seeds if rung == self.top else self.ladder_seeds.get(rung, seeds)
                        )
                        for s in rung_seeds:
                            spec = TrialSpec(task.id, task.version, arm.agent, kw, int(s), scale)
                            out.append(Planned(spec, b.name, point, arm.label, rung))
        return out

    def variant(self, block: Block, point: Any, base: Task | None = None) -> Task:
        """The (registered) task of ``block`` at sweep value ``point``."""
        from icml26 import benchmarks

        base = base or benchmarks.get_task(block.task)
        overrides = dict(block.overrides)
        parts = [block.label] if block.label and (block.overrides or block.sweep) else []
        if block.sweep is not None:
            overrides[block.sweep.path] = point
            parts.append(f"{block.sweep.name}={_value_text(point)}")
        if not overrides:
            return base
        if not parts:
            parts = [f"overrides-{config_hash(overrides)[:8]}"]
        task = task_variant(base, overrides, ",".join(parts))
        return benchmarks.register_task(task)

    def trials(self, extra_arms: Sequence[Arm] = ()) -> list[Any]:
        """The TrialSpecs of the study (registering its task variants first)."""
        return [p.spec for p in self.plan(extra_arms)]


@dataclass(frozen=True)
class Planned:
    """A planned trial and its place in the study."""

    spec: Any
    block: str
    point: Any
    arm: str
    rung: float


# ----------------------------------------------------------------------------- results by place
def _metric_value(r: TrialResult, metric: str) -> float | None:
    """``metric`` of a FINISHED result: a metric name, or ``extra.<path>`` into its extras
    (``"inf"``/``"nan"`` strings read as floats)."""
    if not metric.startswith("extra."):
        v = r.metrics.get(metric)
        return None if v is None else float(v)
    cur: Any = r.extra
    for p in metric.split(".")[1:]:
        if not isinstance(cur, Mapping) or p not in cur:
            return None
        cur = cur[p]
    if isinstance(cur, str) and cur in ("inf", "-inf", "nan"):
        return float(cur)
    if isinstance(cur, bool) or not isinstance(cur, (int, float)):
        return None
    return float(cur)


class StudyData:
    """The stored results of a study by place: ``(block, sweep value, arm, rung) -> {seed: r}``.

    Only results whose keys the study plans are kept (other rows of the store are ignored);
    FAILED trials are kept apart in :attr:`failed`.
    """

    def __init__(
        self, study: Study, results: Iterable[TrialResult], extra_arms: Sequence[Arm] = ()
    ):
        self.study = study
        self.plan = study.plan(extra_arms)
        self.extra_arms = list(extra_arms)
        # one trial may serve several places (two arms that coincide at one sweep value)
        where: dict[str, list[Planned]] = defaultdict(list)
        for p in self.plan:
            where[p.spec.key].append(p)
        self.cells: dict[tuple[str, Any, str, float], dict[int, TrialResult]] = defaultdict(dict)
        self.failed: list[tuple[Planned, TrialResult]] = []
        self.results: list[TrialResult] = []
        for r in results:
            places = where.get(r.key)
            if not places:
                continue
            self.results.append(r)
            for p in places:
                if r.status == "FINISHED":
                    self.cells[(p.block, _freeze(p.point), p.arm, p.rung)][r.seed] = r
                else:
                    self.failed.append((p, r))
        self.missing = len(where) - len(self.results)

    def arms(self, block: str) -> list[str]:
        """Arm labels of ``block`` in declaration order."""
        b = self.study.block(block)
        return [a.label for a in self.study.block_arms(b, self.extra_arms)]

    def arm(self, label: str, block: str | None = None) -> Arm:
        """The arm ``label`` (of ``block`` when given: blocks may declare their own arms)."""
        blocks = [self.study.block(block)] if block is not None else self.study.blocks
        for b in blocks:
            for a in self.study.block_arms(b, self.extra_arms):
                if a.label == label:
                    return a
        raise KeyError(f"study {self.study.name!r} has no arm {label!r}")

    def points(self, block: str) -> list[Any]:
        b = self.study.block(block)
        return list(b.sweep.values) if b.sweep else [None]

    def trials(
        self, block: str, arm: str, point: Any = None, rung: float | None = None
    ) -> dict[int, TrialResult]:
        """The FINISHED trials of ``arm`` on ``block`` at sweep value ``point`` (default: the
        last) and ``rung`` (default: the top), by seed."""
        if point is None:
            point = self.points(block)[-1]
        return dict(self.cells.get((block, _freeze(point), arm, rung or self.study.top), {}))

    def values(
        self, block: str, arm: str, metric: str, point: Any = None, rung: float | None = None
    ) -> dict[int, float]:
        """``{seed: value}`` of ``metric`` (a metric name or ``"extra.<path>"``)."""
        out = {}
        for s, r in self.trials(block, arm, point, rung).items():
            v = _metric_value(r, metric)
            if v is not None:
                out[s] = v
        return out

    def matrix(
        self, block: str, arm: str, metric: str, points: Sequence[Any] | None = None
    ) -> tuple[list[int], np.ndarray]:
        """(seeds, array (seeds, points)) of ``metric`` over the sweep at the top rung, on the
        seeds present at every point (NaN-free unless the values themselves are)."""
        pts = list(points) if points is not None else self.points(block)
        per = [self.values(block, arm, metric, p) for p in pts]
        seeds = sorted(set.intersection(*(set(v) for v in per))) if per else []
        return seeds, np.array([[v[s] for v in per] for s in seeds], dtype=float).reshape(
            len(seeds), len(pts)
        )

    def ladder(
        self, block: str, arm: str, metric: str, point: Any = None
    ) -> dict[float, dict[int, float]]:
        """``{rung: {seed: value}}`` of ``arm`` on ``block`` at ``point`` (default: the last)."""
        out = {}
        for rung in self.study.ladder:
            v = self.values(block, arm, metric, point, rung)
            if v:
                out[rung] = v
        return out


def _freeze(v: Any) -> Any:
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


# ----------------------------------------------------------------------------- evaluation
@dataclass
class ArmPlateau:
    """An arm's plateau on one block (at one sweep value) and one metric."""

    block: str
    arm: str
    point: Any
    metric: str
    at_plateau: bool
    reading: str
    plateau: Any = None


@dataclass
class ClaimResult:
    """A claim's estimate, interval, p-values, the compared arms' plateaus and its verdict."""

    claim: Any
    verdict: str
    estimate: float = math.nan
    low: float = math.nan
    high: float = math.nan
    p_value: float = math.nan
    p_holm: float = math.nan
    n: int = 0
    plateaus: list[ArmPlateau] = field(default_factory=list)
    why: str = ""

    @property
    def testable(self) -> bool:
        return not isinstance(self.claim, Untestable)


@dataclass
class Evaluation:
    """Claims with verdicts, plateaus of every arm on every block, and summary counts."""

    study: Study
    claims: list[ClaimResult]
    plateaus: list[ArmPlateau]

    def values(self) -> dict[str, Any]:
        """Fields for the summary template: ``n_claims``, ``n_reproduced``, ``n_not_reproduced``,
        ``n_undecided``, ``n_untestable``, ``page``, ``family``, ``seeds``, and per claim
        ``verdict_<id>``, ``estimate_<id>``, ``low_<id>``, ``high_<id>`` (ids with ``-`` -> ``_``)."""
        count: dict[str, int] = defaultdict(int)
        for c in self.claims:
            count[c.verdict] += 1
        v: dict[str, Any] = {
            "n_claims": len(self.claims),
            "n_reproduced": count["reproduced"],
            "n_not_reproduced": count["not reproduced"],
            "n_undecided": count["undecided at this budget"],
            "n_untestable": count["untestable here"],
            "page": self.study.page,
            "family": self.study.family,
            "seeds": len(self.study.seeds),
        }
        for c in self.claims:
            k = c.claim.id.replace("-", "_")
            v[f"verdict_{k}"] = c.verdict
            for name in ("estimate", "low", "high", "p_holm"):
                v[f"{name}_{k}"] = getattr(c, name)
        return v


def _direction(data: StudyData, block: str, metric: str) -> str:
    if metric.startswith("extra."):
        return "min"
    from icml26 import benchmarks

    base = benchmarks.get_task(data.study.block(block).task)
    return base.metric(metric).direction if any(m.name == metric for m in base.metrics) else "max"


def arm_plateau(
    data: StudyData, block: str, arm: str, metric: str, point: Any = None
) -> ArmPlateau:
    """Whether ``arm`` is at the plateau of its ladder on ``block`` (at ``point``)."""
    from icml26.stats import plateau_test

    study = data.study
    a = data.arm(arm, block)
    if a.exact:
        return ArmPlateau(block, arm, point, metric, True, "exact (no learning budget)")
    if not study.block(block).ladder:
        return ArmPlateau(block, arm, point, metric, False, "no ladder (a diagnostic block)")
    ladder = data.ladder(block, arm, metric, point)
    pl = plateau_test(
        ladder,
        direction=_direction(data, block, metric),
        tolerance=study.plateau_tolerance,
        relative=study.plateau_relative,
    )
    return ArmPlateau(block, arm, point, metric, pl.at_plateau, pl.reading, pl)


def evaluate(data: StudyData, seed: int = 0) -> Evaluation:
    """Plateaus of every arm on every block (primary metric, last sweep value) and every
    claim's test and verdict, with Holm over the study's testable claims."""
    from icml26 import benchmarks
    from icml26.stats import holm, paired_test, slope_test

    study = data.study
    plateaus = []
    for b in study.blocks:
        metric = benchmarks.get_task(b.task).primary_metric
        for arm in data.arms(b.name):
            plateaus.append(arm_plateau(data, b.name, arm, metric))
    results: list[ClaimResult] = []
    for c in study.claims:
        if isinstance(c, Untestable):
            results.append(ClaimResult(c, "untestable here", why=c.reason))
            continue
        if isinstance(c, Compare):
            point = c.at if c.at is not None else data.points(c.block)[-1]
            va = data.values(c.block, c.a, c.metric, point)
            vb = data.values(c.block, c.b, c.metric, point)
            common = sorted(set(va) & set(vb))
            res = ClaimResult(c, "", n=len(common))
            if len(common) >= 2:
                sign = 1.0 if _direction(data, c.block, c.metric) == "max" else -1.0
                if c.direction == "worse":
                    sign = -sign
                pt = paired_test(
                    [sign * va[s] for s in common], [sign * vb[s] for s in common], seed=seed
                )
                res.estimate, res.low, res.high = pt.diff, pt.low, pt.high
                res.p_value = pt.p_value if pt.diff > 0 else 1.0
            res.plateaus = [arm_plateau(data, c.block, a, c.metric, point) for a in (c.a, c.b)]
            results.append(res)
        else:
            b = study.block(c.block)
            if b.sweep is None:
                raise ValueError(
                    f"claim {c.id!r}: a Rate needs a swept block, {c.block!r} has none"
                )
            pts = list(c.over) if c.over is not None else list(b.sweep.values)
            seeds, mat = data.matrix(c.block, c.arm, c.metric, pts)
            res = ClaimResult(c, "", n=len(seeds))
            if len(seeds) >= 2:
                iv, p = slope_test(mat, [float(x) for x in pts], c.slope + c.margin, seed=seed)
                res.estimate, res.low, res.high, res.p_value = iv.estimate, iv.low, iv.high, p
            res.plateaus = [arm_plateau(data, c.block, c.arm, c.metric, pts[-1])]
            results.append(res)
    tested = [r for r in results if r.testable and math.isfinite(r.p_value)]
    for r, p in zip(tested, holm([r.p_value for r in tested])):
        r.p_holm = float(p)
    for r in results:
        if r.testable:
            r.verdict, r.why = _verdict(study, r)
    return Evaluation(study, results, plateaus)


def _verdict(study: Study, r: ClaimResult) -> tuple[str, str]:
    """The verdict rule: a verdict only at the plateau, with enough paired seeds."""
    moving = [p for p in r.plateaus if not p.at_plateau]
    if moving:
        return "undecided at this budget", "; ".join(f"{p.arm}: {p.reading}" for p in moving)
    if r.n < study.min_seeds:
        return (
            "undecided at this budget",
            f"{r.n} paired seed(s), fewer than the {study.min_seeds} a verdict needs",
        )
    if not math.isfinite(r.p_holm):
        return "undecided at this budget", "no test (degenerate or missing data)"
    if r.p_holm <= study.alpha:
        return "reproduced", f"Holm p = {r.p_holm:.2g} <= {study.alpha}"
    return "not reproduced", f"Holm p = {r.p_holm:.2g} > {study.alpha}"


# ----------------------------------------------------------------------------- raw archives
def write_archive(results: Iterable[TrialResult], path: str | os.PathLike[str]) -> int:
    """Write TrialResults as gzip'd JSON lines sorted by key, byte-reproducible (no mtime);
    returns the number written."""
    rows = sorted(results, key=lambda r: r.key)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz:
        for r in rows:
            gz.write((r.to_json() + "\n").encode())
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(buf.getvalue())
    return len(rows)


def read_archive(path: str | os.PathLike[str]) -> list[TrialResult]:
    """The TrialResults of an archive written by :func:`write_archive`."""
    with gzip.open(path, "rt") as f:
        return [TrialResult.from_json(line) for line in f if line.strip()]


# ----------------------------------------------------------------------------- comparing runs
# what differs between two faithful runs of the same trial: when and where it ran, and timings
_RUN_FIELDS = ("wall_time_s", "started_at", "git_commit", "packages")
_TIMING_SUFFIXES = ("_cpu_s", "_wall_s", "_time_s")


def _outcome(value: Any) -> Any:
    """``value`` without timing entries (dict keys ending in one of _TIMING_SUFFIXES), nested."""
    if isinstance(value, Mapping):
        return {
            k: _outcome(v)
            for k, v in value.items()
            if not (isinstance(k, str) and k.endswith(_TIMING_SUFFIXES))
        }
    if isinstance(value, (list, tuple)):
        return [_outcome(v) for v in value]
    return value


def compare_results(
    a: Iterable[TrialResult], b: Iterable[TrialResult]
) -> tuple[int, list[str], list[str], list[tuple[str, list[str]]]]:
    """Trial-by-trial comparison of two runs (say, one per executor): (trials in both, keys only
    in ``a``, keys only in ``b``, [(key, differing fields)]). Everything a trial stores counts
    except where and when it ran (wall time, start time, git commit, package versions) and
    timing entries of ``metrics``/``extra`` (keys ending in ``_cpu_s``, ``_wall_s``, ``_time_s``);
    numbers must be equal exactly (NaN equals NaN)."""
    da, db = {r.key: r for r in a}, {r.key: r for r in b}
    both = sorted(da.keys() & db.keys())
    differ = []
    for key in both:
        ra, rb = da[key].to_dict(), db[key].to_dict()
        fields = sorted(
            f
            for f in ra.keys() | rb.keys()
            if f not in _RUN_FIELDS and not _same(_outcome(ra.get(f)), _outcome(rb.get(f)))
        )
        if fields:
            differ.append((key, fields))
    return len(both), sorted(da.keys() - db.keys()), sorted(db.keys() - da.keys()), differ


def _same(x: Any, y: Any) -> bool:
    """Exact equality with NaN == NaN, through dicts and lists."""
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_same(u, v) for u, v in zip(x, y))
    return bool(x == y)
