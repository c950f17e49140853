"""Ranking with honest statistics (:mod:`icml26.stats`, rliable's IQM and profiles).

Per task version: each VERIFIED entry's primary metric is summarized by the IQM of its
verifier's re-run (the values measured on the held-out seeds, never the submitted ones) with a
stratified-bootstrap 95% interval; the claimed IQM is kept beside it. Entries are ordered by
that IQM (best first; ``min`` metrics ascending; on equal IQM the earlier submission first),
entries whose interval overlaps the leader's are marked *tied* with it, and each row carries the
probability of improvement P(this entry > the next one) with its interval. PENDING entries
(nothing measured yet) are ranked the same way by their claims but shown apart; REJECTED and
FAILED ones are listed with their reasons. An entry whose stored rows do not match their
signatures (:meth:`LeaderboardStore.integrity`) is never ranked: it is listed as *flagged*.

Across tasks: scores are normalized per task to [0, 1] (0 = worst, 1 = best), using, in order,
``Task.extra["score_range"] = (worst, best)`` when the family gives one, else the primary
metric's documented range when finite, else the range spanned by the verified entries on that
task. A view (one per family, plus one over all tasks when there are several families) profiles
every agent configuration with a VERIFIED entry on each of the view's tasks (its latest verified
entry per task), on re-run values: performance profiles (fraction of runs above tau) and IQM of
normalized scores, both with stratified-bootstrap 95% intervals.
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.leaderboards.store import Entry, LeaderboardStore
from icml26.protocol import Task
from icml26.stats import interval_estimates, iqm, iqm_ci, probability_of_improvement

__all__ = [
    "FLAG_REASON",
    "RankedEntry",
    "TaskRanking",
    "AgentScores",
    "CrossTaskView",
    "rank_task",
    "rank_all",
    "normalization",
    "cross_task",
    "intervals_overlap",
]


@dataclass
class RankedEntry:
    """One row of a task's ranking."""

    entry: Entry
    rank: int
    iqm: float
    low: float
    high: float
    n: int
    tied: bool = False  # interval overlaps the leader's (the leader too)
    p_better_next: tuple[float, float, float] | None = None  # P(this > next row) [95% CI]
    metrics: dict[str, float] = field(default_factory=dict)  # IQM of every task metric
    claimed: float = math.nan  # IQM of the submitted values (the claim), shown beside
    measured: bool = False  # ranked by the verifier's re-run (else by the claim)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "entry_id": self.entry.id,
            "name": self.entry.name,
            "agent": self.entry.agent.get("name"),
            "status": self.entry.status,
            "iqm": self.iqm,
            "ci_low": self.low,
            "ci_high": self.high,
            "n_seeds": self.n,
            "tied_with_leader": self.tied,
            "p_better_than_next": None
            if self.p_better_next is None
            else dict(zip(("estimate", "low", "high"), self.p_better_next)),
            "metrics_iqm": self.metrics,
            "claimed_iqm": self.claimed,
            "ranked_by": "re-run" if self.measured else "claim",
            "isolation": self.entry.isolation,
            "submitted_at": self.entry.submitted_at,
        }


@dataclass
class TaskRanking:
    """The ranking of one task version."""

    task_key: str
    task_id: str
    task_version: int
    task: Task | None
    primary_metric: str
    direction: str
    verified: list[RankedEntry] = field(default_factory=list)
    unverified: list[RankedEntry] = field(default_factory=list)
    closed: list[Entry] = field(default_factory=list)  # REJECTED and FAILED
    flagged: list[Entry] = field(default_factory=list)  # rows that do not match their signature

    @property
    def leader(self) -> RankedEntry | None:
        return self.verified[0] if self.verified else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_key": self.task_key,
            "task_id": self.task_id,
            "task_version": self.task_version,
            "primary_metric": self.primary_metric,
            "direction": self.direction,
            "verified": [r.to_dict() for r in self.verified],
            "unverified": [r.to_dict() for r in self.unverified],
            "rejected_or_failed": [
                {"entry_id": e.id, "name": e.name, "status": e.status, "reason": e.reason}
                for e in self.closed
            ],
            "flagged": [
                {"entry_id": e.id, "name": e.name, "status": e.status, "integrity": e.integrity}
                for e in self.flagged
            ],
        }


def _flagged(e: Entry) -> bool:
    """Rows changed outside the store; or unsigned although a verifier decided on them (a
    PENDING entry stored by a process without the secret is signed when it is verified)."""
    return e.integrity == "mismatch" or (e.integrity == "unsigned" and e.status != "PENDING")


FLAG_REASON = {
    "mismatch": "its stored rows do not match their signatures (changed outside the "
    "leaderboard): not ranked",
    "unsigned": "its stored rows carry no signature (stored before signatures, or stripped): "
    "not ranked until the organizer signs them (icml26 leaderboard sign)",
}


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


Memo = Callable[[str, Any, Callable[[], Any]], Any]
_process_memo: dict[str, Any] = {}


def local_memo(kind: str, args: Any, compute: Callable[[], Any]) -> Any:
    """In-process memo with the interface of :meth:`LeaderboardStore.memo`."""
    key = json.dumps([kind, args], sort_keys=True)
    if key not in _process_memo:
        _process_memo[key] = compute()
    return _process_memo[key]


def _iqm_ci(
    values: Sequence[float], reps: int, seed: int, memo: Memo
) -> tuple[float, float, float]:
    vals = [float(v) for v in values]
    return tuple(
        memo("iqm_ci.v2", [vals, reps, seed], lambda: list(iqm_ci(vals, reps=reps, seed=seed)))
    )


def _poi(
    x: Sequence[float], y: Sequence[float], reps: int, seed: int, memo: Memo
) -> tuple[float, float, float]:
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    return tuple(
        memo(
            "poi.v2",
            [xs, ys, reps, seed],
            lambda: list(probability_of_improvement(xs, ys, reps=reps, seed=seed)),
        )
    )


def _rank(
    entries: Sequence[Entry],
    primary: str,
    direction: str,
    metric_names: Sequence[str],
    reps: int,
    seed: int,
    memo: Memo,
) -> list[RankedEntry]:
    rows = []
    for e in entries:
        vals = tuple(e.ranked_values(primary))
        est, lo, hi = _iqm_ci(vals, reps, seed, memo)
        rows.append(
            RankedEntry(
                e,
                0,
                est,
                lo,
                hi,
                len(vals),
                metrics={m: iqm(e.ranked_values(m)) for m in metric_names if e.ranked_values(m)},
                claimed=iqm(e.values(primary)),
                measured=e.measured,
            )
        )
    sign = -1.0 if direction == "max" else 1.0
    rows.sort(key=lambda r: (sign * r.iqm, r.entry.submitted_at, r.entry.id))
    for i, r in enumerate(rows):
        r.rank = i + 1
    if rows:
        lead = (rows[0].low, rows[0].high)
        for r in rows:
            r.tied = intervals_overlap((r.low, r.high), lead)
        flip = 1.0 if direction == "max" else -1.0  # P(improvement) assumes higher is better
        for a, b in zip(rows, rows[1:]):
            x = tuple(flip * v for v in a.entry.ranked_values(primary))
            y = tuple(flip * v for v in b.entry.ranked_values(primary))
            a.p_better_next = _poi(x, y, reps, seed, memo)
    return rows


def rank_task(
    entries: Iterable[Entry],
    task: Task | None = None,
    reps: int = 2000,
    seed: int = 0,
    memo: Memo | None = None,
) -> TaskRanking:
    """Rank the entries of ONE task version (``task`` defaults to the registered one).

    ``memo`` caches the bootstrap computations (a store's :meth:`LeaderboardStore.memo`, or
    an in-process cache by default)."""
    memo = memo or local_memo
    from icml26 import benchmarks

    entries = list(entries)
    if not entries:
        raise ValueError("rank_task: no entries")
    keys = {e.task_key for e in entries}
    if len(keys) != 1:
        raise ValueError(f"rank_task: entries of several task versions {sorted(keys)}")
    first = entries[0]
    if task is None:
        try:
            task = benchmarks.get_task(first.task_id, first.task_version)
        except KeyError:
            task = None
    if task is not None:
        primary, direction, names = (
            task.primary_metric,
            task.primary.direction,
            [m.name for m in task.metrics],
        )
    else:  # a task no longer registered here: rank by the first metric, higher is better
        names = sorted(first.trials[0].metrics)
        primary, direction = names[0], "max"
    out = TaskRanking(first.task_key, first.task_id, first.task_version, task, primary, direction)
    out.flagged = [e for e in entries if _flagged(e)]
    entries = [e for e in entries if not _flagged(e)]
    out.verified = _rank(
        [e for e in entries if e.status == "VERIFIED"], primary, direction, names, reps, seed, memo
    )
    out.unverified = _rank(
        [e for e in entries if e.status in ("PENDING", "RUNNING")],
        primary,
        direction,
        names,
        reps,
        seed,
        memo,
    )
    out.closed = [e for e in entries if e.status in ("REJECTED", "FAILED")]
    return out


def rank_all(
    source: LeaderboardStore | Iterable[Entry],
    reps: int = 2000,
    seed: int = 0,
    memo: Memo | None = None,
) -> list[TaskRanking]:
    """Rankings of every task version with entries, in task-key order."""
    if isinstance(source, LeaderboardStore):
        memo = memo or source.memo
        entries = source.entries(with_events=False)
    else:
        entries = list(source)
    by_task: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        by_task[e.task_key].append(e)
    return [rank_task(es, reps=reps, seed=seed, memo=memo) for _, es in sorted(by_task.items())]


# ----------------------------------------------------------------------------- cross-task
def normalization(
    task: Task | None, observed: Sequence[float], direction: str = "max"
) -> tuple[float, float, str]:
    """``(worst, best, source)`` used to map a task's primary metric onto [0, 1]."""
    if task is not None:
        direction = task.primary.direction
        rng = task.extra.get("score_range")
        if rng is not None:
            worst, best = float(rng[0]), float(rng[1])
            return worst, best, "task score_range"
        m = task.primary
        if math.isfinite(m.lower) and math.isfinite(m.upper) and m.upper > m.lower:
            return (
                (m.lower, m.upper, "metric range")
                if direction == "max"
                else (m.upper, m.lower, "metric range")
            )
    lo, hi = (min(observed), max(observed)) if observed else (0.0, 1.0)
    if hi == lo:
        hi = lo + 1.0
    return (
        (lo, hi, "range of verified entries")
        if direction == "max"
        else (hi, lo, "range of verified entries")
    )


def normalize(values: Sequence[float] | np.ndarray, worst: float, best: float) -> np.ndarray:
    return (np.asarray(values, dtype=float) - worst) / (best - worst)


@dataclass
class AgentScores:
    """One agent configuration in a cross-task view."""

    label: str
    agent_key: str
    entries: dict[str, Entry]  # task key -> latest VERIFIED entry
    normalized: np.ndarray  # (runs, tasks)
    iqm: float = math.nan
    low: float = math.nan
    high: float = math.nan


@dataclass
class CrossTaskView:
    """Normalized scores and performance profiles over a set of tasks."""

    name: str
    task_keys: list[str]
    normalization: dict[str, tuple[float, float, str]]
    agents: list[AgentScores]
    incomplete: list[tuple[str, int]]  # (label, tasks covered) of agents left out
    taus: np.ndarray
    profiles: dict[str, np.ndarray]
    profile_cis: dict[str, np.ndarray]  # (2, len(taus))

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() or c in "-_" else "-" for c in self.name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tasks": self.task_keys,
            "normalization": {
                k: {"worst": w, "best": b, "source": s}
                for k, (w, b, s) in self.normalization.items()
            },
            "agents": [
                {
                    "label": a.label,
                    "agent": a.agent_key,
                    "iqm": a.iqm,
                    "ci_low": a.low,
                    "ci_high": a.high,
                    "entries": {k: e.id for k, e in a.entries.items()},
                }
                for a in self.agents
            ],
            "incomplete": [{"label": lab, "tasks_covered": n} for lab, n in self.incomplete],
        }


def _views(rankings: Sequence[TaskRanking]) -> list[tuple[str, list[TaskRanking]]]:
    fams: dict[str, list[TaskRanking]] = defaultdict(list)
    for r in rankings:
        if r.verified:
            fams[r.task.family if r.task is not None else r.task_id.split("/")[0]].append(r)
    views = [(f, rs) for f, rs in sorted(fams.items())]
    if len(views) > 1:
        views.append(("all tasks", [r for _, rs in views for r in rs]))
    return views


def _profile(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """Score distribution: fraction of all (run, task) scores above each tau (rliable's
    ``score_distributions``, vectorized over tau)."""
    return (scores.reshape(-1)[None, :] > taus[:, None]).mean(axis=1)


def _cross_stats(
    scores: dict[str, np.ndarray], taus: np.ndarray, reps: int, seed: int
) -> dict[str, Any]:
    point, ci = interval_estimates(
        scores, lambda s: np.array([iqm(s.ravel())]), reps=reps, seed=seed
    )
    profiles, pcis = interval_estimates(scores, lambda s: _profile(s, taus), reps=reps, seed=seed)
    return {
        k: {
            "iqm": float(point[k][0]),
            "low": float(ci[k][0, 0]),
            "high": float(ci[k][1, 0]),
            "profile": profiles[k].tolist(),
            "profile_ci": pcis[k].tolist(),
        }
        for k in scores
    }


def cross_task(
    rankings: Sequence[TaskRanking],
    reps: int = 2000,
    seed: int = 0,
    n_taus: int = 101,
    memo: Memo | None = None,
) -> list[CrossTaskView]:
    """Cross-task views (per family, and all tasks) of the VERIFIED entries."""
    memo = memo or local_memo

    out = []
    for name, rs in _views(rankings):
        keys = [r.task_key for r in rs]
        norm = {
            r.task_key: normalization(
                r.task,
                [v for row in r.verified for v in row.entry.ranked_values(r.primary_metric)],
                r.direction,
            )
            for r in rs
        }
        latest: dict[str, dict[str, Entry]] = defaultdict(dict)
        for r in rs:
            for row in sorted(r.verified, key=lambda x: x.entry.id):
                latest[row.entry.agent_key][r.task_key] = row.entry  # later ids overwrite
        agents, incomplete = [], []
        for akey, by_task in sorted(latest.items()):
            newest = max(by_task.values(), key=lambda e: e.id)
            label = newest.name
            if len(by_task) < len(keys):
                incomplete.append((label, len(by_task)))
                continue
            runs = min(
                len(by_task[k].ranked_values(rs[i].primary_metric)) for i, k in enumerate(keys)
            )
            cols = [
                normalize(by_task[k].ranked_values(rs[i].primary_metric)[:runs], *norm[k][:2])
                for i, k in enumerate(keys)
            ]
            agents.append(AgentScores(label, akey, dict(by_task), np.stack(cols, axis=1)))
        # unique labels for the legend
        seen: dict[str, int] = defaultdict(int)
        for a in agents:
            seen[a.label] += 1
        for a in agents:
            if seen[a.label] > 1:
                a.label = f"{a.label} ({a.agent_key.split('#')[-1]})"
        if agents:
            allv = np.concatenate([a.normalized.ravel() for a in agents])
            taus = np.linspace(min(0.0, float(allv.min())), max(1.0, float(allv.max())), n_taus)
            scores = {a.label: a.normalized for a in agents}
            st = memo(
                "cross_task.v2",
                [{k: v.tolist() for k, v in scores.items()}, taus.tolist(), reps, seed],
                functools.partial(_cross_stats, scores, taus, reps, seed),
            )
            profiles, pcis = {}, {}
            for a in agents:
                s_ = st[a.label]
                a.iqm, a.low, a.high = s_["iqm"], s_["low"], s_["high"]
                profiles[a.label] = np.asarray(s_["profile"])
                pcis[a.label] = np.asarray(s_["profile_ci"])
            agents.sort(key=lambda a: -a.iqm)
        else:
            taus, profiles, pcis = np.linspace(0, 1, n_taus), {}, {}
        out.append(CrossTaskView(name, keys, norm, agents, incomplete, taus, profiles, pcis))
    return out
