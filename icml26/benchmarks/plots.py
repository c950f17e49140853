"""Figures from stored trials: learning curves, budget ladders, per-task performance profiles.

    icml26 plot --store results/icml26.db --out figs/          # every task in the store
    icml26 plot --study tutorial --kind ladder,profile           # a study's store

Headless (matplotlib's Agg backend); every figure is written as PNG and SVG with no timestamp
in either, so regenerating a figure from the same results gives the same files.

* **learning curves** read the curve a learner's ``learn()`` returned, stored by the runner in
  ``TrialResult.extra["learn"]``: ``{"curve": {"<x>": [...], "<y>": [...], ...}}`` (columns)
  or ``{"curve": [{"<x>": ..., "<y>": ...}, ...]}`` (records; ``"curves"`` is read too). The x
  axis is the first of ``env_steps``, ``update``, ``updates``, ``step``, ``iteration``,
  ``epoch`` present; each other numeric column is one panel, mean over seeds with the min-max band.
* **ladders**: the primary metric's IQM and 95% interval per budget scale, per agent.
* **performance profiles** (Agarwal et al. 2021, per task): for each agent the fraction of its
  seeds whose score is above tau, over tau (for a "min" metric, below).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from icml26.protocol import TrialResult, config_hash, format_scale

__all__ = [
    "KINDS",
    "stored_curve",
    "learning_curves",
    "ladder_plot",
    "profile_plot",
    "plot_results",
    "study_figures",
    "save",
]

KINDS = ("curves", "ladder", "profile")
_X_NAMES = ("env_steps", "update", "updates", "step", "iteration", "epoch")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "icml26"  # stable SVG ids
    return plt


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("_")


def save(fig: Any, folder: Path, stem: str) -> str:
    """Write ``<stem>.png`` and ``<stem>.svg`` into ``folder`` (no timestamps); return the PNG
    file name."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    stem = _safe(stem)
    fig.savefig(folder / f"{stem}.png", dpi=100, metadata={"Software": None})
    fig.savefig(folder / f"{stem}.svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return f"{stem}.png"


# ----------------------------------------------------------------------------- stored curves
def stored_curve(result: TrialResult) -> tuple[str, np.ndarray, dict[str, np.ndarray]] | None:
    """(x name, x, {y name: y}) of the learning curve stored in ``result`` (None if none)."""
    learn = result.extra.get("learn") if isinstance(result.extra, Mapping) else None
    if not isinstance(learn, Mapping):
        return None
    curve = learn.get("curve", learn.get("curves"))
    cols: dict[str, list[float]] = {}
    if isinstance(curve, Mapping):
        cols = {k: v for k, v in curve.items() if isinstance(v, list)}
    elif isinstance(curve, list) and curve and all(isinstance(r, Mapping) for r in curve):
        keys = [k for k in curve[0] if all(k in r for r in curve)]
        cols = {k: [r[k] for r in curve] for k in keys}
    numeric = {}
    for k, v in cols.items():
        try:
            arr = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            continue
        if arr.ndim == 1 and arr.size:
            numeric[k] = arr
    if not numeric:
        return None
    xname = next((x for x in _X_NAMES if x in numeric), "")
    x = numeric.pop(xname) if xname else np.arange(len(next(iter(numeric.values()))), dtype=float)
    ys = {k: v for k, v in numeric.items() if v.size == x.size}
    return (xname or "index", x, ys) if ys else None


def learning_curves(
    by_agent: Mapping[str, Sequence[TrialResult]], title: str, folder: Path, stem: str
) -> str | None:
    """One panel per curve column, one line per agent (mean over seeds, min-max band)."""
    curves = {
        a: [c for c in (stored_curve(r) for r in rs) if c is not None] for a, rs in by_agent.items()
    }
    curves = {a: cs for a, cs in curves.items() if cs}
    if not curves:
        return None
    names = sorted({y for cs in curves.values() for c in cs for y in c[2]})[:6]
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    for ax, y in zip(axes[0], names):
        for i, (agent, cs) in enumerate(curves.items()):
            rows = [c for c in cs if y in c[2]]
            if not rows:
                continue
            n = min(len(c[1]) for c in rows)
            x = rows[0][1][:n]
            ys = np.stack([c[2][y][:n] for c in rows])
            ax.plot(x, ys.mean(0), color=f"C{i}", label=f"{agent} ({len(rows)} seeds)", lw=1.2)
            if len(rows) > 1:
                ax.fill_between(x, ys.min(0), ys.max(0), color=f"C{i}", alpha=0.15, lw=0)
        ax.set_xlabel(rows[0][0] if rows else "")
        ax.set_title(y, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return save(fig, folder, stem)


# ----------------------------------------------------------------------------- ladders and profiles
def ladder_plot(
    ladders: Mapping[str, Mapping[float, Sequence[float]]],
    metric: str,
    direction: str,
    title: str,
    folder: Path,
    stem: str,
    references: Mapping[str, float] | None = None,
) -> str | None:
    """Score against budget scale per agent: IQM with its 95% interval (log x axis);
    ``references`` (agents without a ladder, e.g. exact ones) are dashed horizontal lines."""
    from icml26.stats import iqm_ci

    lad = {a: rungs for a, rungs in ladders.items() if len(rungs) > 1}
    if not lad:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for j, (agent, y) in enumerate((references or {}).items()):
        if math.isfinite(y):
            ax.axhline(y, color=f"C{len(lad) + j}", ls="--", lw=1, label=f"{agent} (no ladder)")
    for i, (agent, rungs) in enumerate(lad.items()):
        xs = sorted(rungs)
        ivs = [iqm_ci(list(rungs[s]), seed=0) for s in xs]
        est = np.array([v.estimate for v in ivs])
        err = np.array([[v.estimate - v.low for v in ivs], [v.high - v.estimate for v in ivs]])
        ax.errorbar(
            xs, est, yerr=err, color=f"C{i}", marker="o", ms=4, capsize=3, lw=1.2, label=agent
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({s for r in lad.values() for s in r}))
    ax.set_xticklabels([f"x{format_scale(s)}" for s in ax.get_xticks()])
    ax.set_xlabel("budget scale")
    ax.set_ylabel(f"{metric} ({'higher' if direction == 'max' else 'lower'} is better)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, folder, stem)


def profile_plot(
    scores: Mapping[str, Sequence[float]],
    metric: str,
    direction: str,
    title: str,
    folder: Path,
    stem: str,
) -> str | None:
    """Per-task performance profile: fraction of each agent's seeds scoring better than tau."""
    from icml26.stats import performance_profile

    scores = {a: [v for v in s if math.isfinite(v)] for a, s in scores.items()}
    scores = {a: s for a, s in scores.items() if s}
    if not scores:
        return None
    allv = np.concatenate([np.asarray(v, float) for v in scores.values()])
    lo, hi = float(allv.min()), float(allv.max())
    pad = 0.05 * (hi - lo or 1.0)
    taus = np.linspace(lo - pad, hi + pad, 200)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    sign = 1.0 if direction == "max" else -1.0
    for i, (agent, s) in enumerate(scores.items()):
        frac = performance_profile(sign * np.asarray(s, float), sign * taus)
        ax.step(taus, frac, where="post", color=f"C{i}", label=f"{agent} ({len(s)} seeds)", lw=1.2)
    ax.set_xlabel(f"{metric} threshold tau")
    ax.set_ylabel(f"fraction of seeds {'above' if direction == 'max' else 'below'} tau")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, folder, stem)


# ----------------------------------------------------------------------------- from a store
def plot_results(
    results: Iterable[TrialResult],
    out: str | Path,
    kinds: Sequence[str] = KINDS,
    task: str | None = None,
) -> list[Path]:
    """Every kind of figure for every task (version) in ``results``; returns the PNG paths."""
    from icml26 import benchmarks

    bad = sorted(set(kinds) - set(KINDS))
    if bad:
        raise ValueError(f"plot kinds {bad}: expected some of {list(KINDS)}")
    folder = Path(out)
    groups: dict[tuple[str, int], list[TrialResult]] = defaultdict(list)
    for r in results:
        if r.status == "FINISHED" and (task is None or r.task_id == task):
            groups[(r.task_id, r.task_version)].append(r)
    written = []
    for (tid, ver), rs in sorted(groups.items()):
        try:
            t = benchmarks.get_task(tid, ver)
            metric, direction = t.primary_metric, t.primary.direction
            rs = [r for r in rs if r.task_hash == t.definition_hash]
        except KeyError:
            metric, direction = next(iter(rs[0].metrics), ""), "max"
        labels = _labels(rs)
        stem = f"{tid.replace('/', '_')}_v{ver}"
        top = max(r.budget_scale for r in rs)
        if "curves" in kinds:
            by: dict[str, list[TrialResult]] = defaultdict(list)
            for r in rs:
                if r.budget_scale == top:
                    by[labels[r.key]].append(r)
            name = learning_curves(
                by,
                f"{tid} v{ver}: learning curves (x{format_scale(top)})",
                folder,
                f"{stem}_curves",
            )
            written += [folder / name] if name else []
        if "ladder" in kinds:
            lad: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
            for r in rs:
                if metric in r.metrics:
                    lad[labels[r.key]][r.budget_scale].append(r.metrics[metric])
            name = ladder_plot(
                lad, metric, direction, f"{tid} v{ver}: budget ladder", folder, f"{stem}_ladder"
            )
            written += [folder / name] if name else []
        if "profile" in kinds:
            sc: dict[str, list[float]] = defaultdict(list)
            for r in rs:
                if r.budget_scale == top and metric in r.metrics:
                    sc[labels[r.key]].append(r.metrics[metric])
            name = profile_plot(
                sc,
                metric,
                direction,
                f"{tid} v{ver}: performance profile (x{format_scale(top)})",
                folder,
                f"{stem}_profile",
            )
            written += [folder / name] if name else []
    return written


def _labels(rs: Sequence[TrialResult]) -> dict[str, str]:
    """Agent name per result key, with ``#config`` where one name ran several configurations."""
    configs: dict[str, set[str]] = defaultdict(set)
    for r in rs:
        configs[r.agent_name].add(config_hash(r.agent_kwargs))
    return {
        r.key: r.agent_name
        if len(configs[r.agent_name]) == 1
        else f"{r.agent_name}#{config_hash(r.agent_kwargs)[:6]}"
        for r in rs
    }


def study_figures(data: Any, ev: Any, figdir: Path) -> list[tuple[str, str]]:
    """The generic figures of a study page (``Study.plots`` picks the kinds): per block, the
    budget ladder of its primary metric, learning curves at the top rung, and the performance
    profile at the top rung (last sweep value)."""
    from icml26 import benchmarks
    from icml26.stats import iqm

    study = data.study
    out: list[tuple[str, str]] = []
    for b in study.blocks:
        task = benchmarks.get_task(b.task)
        metric, direction = task.primary_metric, task.primary.direction
        stem = f"{study.name}_{b.name.replace('/', '_')}"
        arms = data.arms(b.name)
        if "ladder" in study.plots:
            lad = {
                a: {s: list(v.values()) for s, v in data.ladder(b.name, a, metric).items()}
                for a in arms
            }
            refs = {a: iqm(v[study.top]) for a, v in lad.items() if len(v) == 1 and study.top in v}
            name = ladder_plot(
                lad, metric, direction, f"{b.name}: budget ladder", figdir, f"{stem}_ladder", refs
            )
            if name:
                out.append((f"{b.name}: {metric} against the budget scale", name))
        if "curves" in study.plots:
            by = {a: list(data.trials(b.name, a).values()) for a in arms}
            name = learning_curves(by, f"{b.name}: learning curves", figdir, f"{stem}_curves")
            if name:
                out.append((f"{b.name}: learning curves", name))
        if "profile" in study.plots:
            sc = {a: list(data.values(b.name, a, metric).values()) for a in arms}
            name = profile_plot(
                sc, metric, direction, f"{b.name}: performance profile", figdir, f"{stem}_profile"
            )
            if name:
                out.append((f"{b.name}: performance profile of {metric}", name))
    return out
