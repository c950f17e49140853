"""Leaderboard figures (matplotlib, object API, no pyplot state): PNG and SVG of each.

* :func:`task_figure` -- a task's entries: IQM with 95% interval, the leader's interval shaded,
  verified entries filled, unverified ones hollow.
* :func:`profile_figure` -- a cross-task view: performance profiles (fraction of runs with a
  normalized score above tau, with 95% bands) next to the IQM of normalized scores.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from icml26.leaderboards.ranking import CrossTaskView, TaskRanking

__all__ = ["task_figure", "profile_figure", "save_figure"]

_COLORS = [
    "#0173b2",
    "#de8f05",
    "#029e73",
    "#d55e00",
    "#cc78bc",
    "#ca9161",
    "#fbafe4",
    "#949494",
    "#ece133",
    "#56b4e9",
]
_MAX_ROWS = 30


def _label(text: str, limit: int = 40) -> str:
    text = text.replace("$", r"\$")  # never mathtext from a user-chosen name
    return text if len(text) <= limit else text[: limit - 1] + "…"


def save_figure(fig: Figure, stem: str | os.PathLike[str]) -> list[Path]:
    """Write ``<stem>.png`` (150 dpi) and ``<stem>.svg`` (reproducible ids, no date)."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    out = []
    with matplotlib.rc_context({"svg.hashsalt": "icml26", "svg.fonttype": "none"}):
        for ext, kw in (
            ("png", {"dpi": 150, "metadata": {"Software": None}}),
            ("svg", {"metadata": {"Date": None}}),
        ):
            path = stem.parent / f"{stem.name}.{ext}"
            fig.savefig(path, format=ext, bbox_inches="tight", **kw)
            out.append(path)
    return out


def task_figure(ranking: TaskRanking, stem: str | os.PathLike[str]) -> list[Path]:
    """Interval plot of a task's verified and unverified entries (best at the top)."""
    rows = [(r, True) for r in ranking.verified] + [(r, False) for r in ranking.unverified]
    rows = rows[:_MAX_ROWS]
    fig = Figure(figsize=(7.5, 0.9 + 0.42 * max(len(rows), 1)))
    ax = fig.add_subplot(1, 1, 1)
    if ranking.leader is not None:
        ax.axvspan(
            ranking.leader.low,
            ranking.leader.high,
            color="#0173b2",
            alpha=0.12,
            lw=0,
            label="leader's 95% CI",
        )
    for i, (r, verified) in enumerate(rows):
        y = len(rows) - 1 - i
        color = "#0173b2" if verified else "#949494"
        ax.plot([r.low, r.high], [y, y], color=color, lw=2.5, solid_capstyle="butt")
        ax.plot([r.iqm], [y], "o", color=color, mfc=color if verified else "white", ms=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(
        [
            _label(f"#{r.entry.id} {r.entry.name}" + ("" if v else " (unverified)"))
            for r, v in reversed(rows)
        ]
    )
    arrow = "higher is better" if ranking.direction == "max" else "lower is better"
    ax.set_xlabel(f"{ranking.primary_metric}: IQM over seeds, 95% CI ({arrow})")
    ax.set_title(f"{ranking.task_key}", loc="left", fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if not rows:
        ax.text(0.5, 0.5, "no entries yet", ha="center", va="center", transform=ax.transAxes)
    elif ranking.leader is not None:
        ax.legend(loc="lower right", fontsize=8, frameon=False)
    return save_figure(fig, stem)


def profile_figure(view: CrossTaskView, stem: str | os.PathLike[str]) -> list[Path]:
    """Performance profiles with 95% bands and the IQM of normalized scores per agent."""
    fig = Figure(figsize=(11, 4.2))
    ax, bx = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for i, a in enumerate(view.agents):
        c = _COLORS[i % len(_COLORS)]
        ax.plot(view.taus, view.profiles[a.label], color=c, lw=2, label=_label(a.label))
        lo, hi = view.profile_cis[a.label]
        ax.fill_between(view.taus, lo, hi, color=c, alpha=0.15, lw=0)
    ax.set_xlabel(r"normalized score $\tau$")
    ax.set_ylabel(r"fraction of runs with score $> \tau$")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(
        f"performance profiles: {view.name} ({len(view.task_keys)} task(s))",
        loc="left",
        fontsize=11,
    )
    ax.grid(alpha=0.3)
    if view.agents:
        ax.legend(fontsize=8, frameon=False, loc="lower left")
    else:
        ax.text(
            0.5,
            0.5,
            "no agent has verified entries on every task",
            ha="center",
            transform=ax.transAxes,
        )
    n = len(view.agents)
    for i, a in enumerate(view.agents):
        y = n - 1 - i
        c = _COLORS[i % len(_COLORS)]
        bx.plot([a.low, a.high], [y, y], color=c, lw=6, alpha=0.6, solid_capstyle="butt")
        bx.plot([a.iqm], [y], "|", color="black", ms=14, mew=2)
    bx.set_yticks(range(n))
    bx.set_yticklabels([_label(a.label) for a in reversed(view.agents)])
    bx.set_xlabel("IQM of normalized scores (95% CI)")
    bx.set_title("aggregate", loc="left", fontsize=11)
    bx.grid(axis="x", alpha=0.3)
    for axis in (ax, bx):
        for side in ("top", "right"):
            axis.spines[side].set_visible(False)
    fig.tight_layout()
    return save_figure(fig, stem)
