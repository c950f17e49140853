"""The leaderboard as static pages: an overview, one page per task, one per entry.

:func:`render_site` writes a directory that opens from disk (every link relative, no server,
no network)::

    index.html                  tasks, cross-task views, all submissions
    tasks/<task>.v<N>.html      verified ranking, unverified entries, rejected/failed, figure
    entries/<id>.html           an entry's agent, per-seed results, verification, provenance
    figures/*.png, *.svg        task interval plots and performance profiles
    assets/style.css, sort.js   styling and plain-JavaScript sortable tables
    data/leaderboard.json       the rankings as JSON

Pages are Jinja2 templates with autoescaping on, so every user-supplied string is HTML-escaped.
The server (:mod:`icml26.leaderboards.server`) serves exactly these files.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from icml26.leaderboards.ranking import TaskRanking, cross_task, rank_all
from icml26.leaderboards.store import Entry, LeaderboardStore

__all__ = ["render_site", "task_slug", "SITE_MARKER"]

SITE_MARKER = ".icml26-leaderboard-site"
_GENERATED_DIRS = ("tasks", "entries", "figures", "assets", "data")


def task_slug(task_key: str) -> str:
    """``tutorial/point-reach@v0`` -> ``tutorial.point-reach.v0`` (a safe file name)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", task_key.replace("@v", ".v").replace("/", "."))


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("icml26.leaderboards", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["slug"] = task_slug
    env.globals["metric_names"] = _metric_names
    return env


def _metric_names(ranking: TaskRanking) -> list[str]:
    if ranking.task is not None:
        return [m.name for m in ranking.task.metrics]
    rows = ranking.verified + ranking.unverified
    return sorted(rows[0].metrics) if rows else [ranking.primary_metric]


def _prepare(out: Path) -> None:
    """Create ``out`` or clear a previous render in it; refuse to clobber anything else."""
    if out.exists() and any(out.iterdir()) and not (out / SITE_MARKER).exists():
        raise ValueError(
            f"{out} is not empty and was not written by `icml26 leaderboard render`; "
            "choose an empty or new directory"
        )
    out.mkdir(parents=True, exist_ok=True)
    for d in _GENERATED_DIRS:
        shutil.rmtree(out / d, ignore_errors=True)
    (out / "index.html").unlink(missing_ok=True)
    (out / SITE_MARKER).write_text("written by icml26 leaderboard render\n")


def _json_default(x: Any) -> Any:
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(type(x).__name__)


def _task_figure_inputs(r: TaskRanking) -> Any:
    rows = [
        [x.entry.id, x.entry.name, x.iqm, x.low, x.high, v]
        for rows, v in ((r.verified, True), (r.unverified, False))
        for x in rows
    ]
    return [r.task_key, r.primary_metric, r.direction, rows]


def _cached_figure(
    cache: str | os.PathLike[str] | None, stem: Path, inputs: Any, draw: Callable[[Path], Any]
) -> None:
    """Draw ``<stem>.png/.svg``, or copy them from ``cache`` when drawn before from ``inputs``."""
    if cache is None:
        draw(stem)
        return
    key = hashlib.sha256(
        json.dumps([stem.name, inputs], sort_keys=True, default=_json_default).encode()
    ).hexdigest()[:24]
    cached = Path(cache) / key
    if not (cached / f"{stem.name}.svg").is_file():
        # not _paths.atomic_write: that replaces an existing folder, which a concurrent renderer
        # may be copying from; here the first complete drawing wins and later ones are dropped
        tmp = Path(cache) / f"{key}.tmp{os.getpid()}-{threading.get_ident()}"
        draw(tmp / stem.name)
        try:
            os.replace(tmp, cached)
        except OSError:  # drawn concurrently by another renderer
            shutil.rmtree(tmp, ignore_errors=True)
    for ext in ("png", "svg"):
        shutil.copyfile(cached / f"{stem.name}.{ext}", stem.parent / f"{stem.name}.{ext}")


def render_site(
    source: LeaderboardStore | Iterable[Entry],
    out: str | os.PathLike[str],
    *,
    reps: int = 2000,
    seed: int = 0,
    title: str = "icml26-gym leaderboard",
    include_registered: bool = True,
    figure_cache: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> Path:
    """Write the static site for ``source`` (a store or its entries) into ``out``.

    ``include_registered`` adds a page for every registered task without entries yet;
    ``figure_cache`` is a directory where figures are kept by a hash of what they show, so a
    re-render redraws only the figures whose data changed (the server uses one). ``progress``
    shows a bar on stderr naming the step (ranking, cross-task statistics, figures, pages).
    """
    import icml26
    from icml26 import benchmarks
    from icml26.certify.harness import certified_claims
    from icml26.leaderboards.figures import profile_figure, task_figure

    bar = tqdm(
        total=3, desc="rendering: ranking", unit="step", disable=not progress, file=sys.stderr
    )
    out = Path(out)
    revision = source.revision() if isinstance(source, LeaderboardStore) else 0
    entries = (
        source.entries(with_events=True) if isinstance(source, LeaderboardStore) else list(source)
    )
    memo = source.memo if isinstance(source, LeaderboardStore) else None
    rankings = {r.task_key: r for r in rank_all(entries, reps=reps, seed=seed, memo=memo)}
    bar.set_description("rendering: cross-task statistics")
    bar.update(1)
    if include_registered:
        for t in benchmarks.list_tasks():
            if t.key not in rankings:
                rankings[t.key] = TaskRanking(
                    t.key, t.id, t.version, t, t.primary_metric, t.primary.direction
                )
    views = cross_task([rankings[k] for k in sorted(rankings)], reps=reps, seed=seed, memo=memo)
    bar.total += sum(1 for r in rankings.values() if r.verified or r.unverified) + len(views)
    bar.set_description("rendering: figures")
    bar.update(1)

    _prepare(out)
    for sub in _GENERATED_DIRS:
        (out / sub).mkdir(parents=True, exist_ok=True)
    static = resources.files("icml26.leaderboards") / "static"
    for name in ("style.css", "sort.js"):
        (out / "assets" / name).write_bytes((static / name).read_bytes())

    env = _environment()
    common = {
        "title": title,
        "generated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "version": icml26.__version__,
        "revision": revision,
        "reps": reps,
        "seed": seed,
    }
    # figures (reused from figure_cache when their inputs did not change)
    figure_of: dict[str, str | None] = {}
    for key, r in sorted(rankings.items()):
        if r.verified or r.unverified:
            stem = f"task-{task_slug(key)}"
            _cached_figure(
                figure_cache,
                out / "figures" / stem,
                _task_figure_inputs(r),
                functools.partial(task_figure, r),
            )
            figure_of[key] = stem
            bar.update(1)
        else:
            figure_of[key] = None
    for v in views:
        _cached_figure(
            figure_cache,
            out / "figures" / f"profile-{v.slug}",
            v.to_dict(),
            functools.partial(profile_figure, v),
        )
        bar.update(1)
    bar.set_description("rendering: pages")

    # overview
    task_rows = []
    for key, r in sorted(rankings.items()):
        task_rows.append(
            {
                "key": key,
                "slug": task_slug(key),
                "family": r.task.family if r.task is not None else key.split("/")[0],
                "primary": r.primary_metric,
                "direction": r.direction,
                "leader": r.leader,
                "n_verified": len(r.verified),
                "n_pending": len(r.unverified),
                "n_closed": len(r.closed),
                "n_total": len(r.verified) + len(r.unverified) + len(r.closed),
            }
        )
    page = env.get_template("index.html").render(
        root="", task_rows=task_rows, views=views, entries=entries, **common
    )
    (out / "index.html").write_text(page, encoding="utf-8")

    # task pages
    tpl = env.get_template("task.html")
    for key, r in rankings.items():
        html = tpl.render(root="../", ranking=r, task=r.task, figure=figure_of[key], **common)
        (out / "tasks" / f"{task_slug(key)}.html").write_text(html, encoding="utf-8")

    # entry pages
    tpl = env.get_template("entry.html")
    for e in entries:
        r = rankings[e.task_key]
        ranked, of = None, 0
        for rows in (r.verified, r.unverified):
            for row in rows:
                if row.entry.id == e.id:
                    ranked, of = row, len(rows)
        metrics = (
            [m.name for m in r.task.metrics] if r.task is not None else sorted(e.trials[0].metrics)
        )
        html = tpl.render(
            root="../",
            e=e,
            ranking=r,
            ranked=ranked,
            ranked_of=of,
            metrics=metrics,
            trials=sorted(e.trials, key=lambda t: t.seed),
            certified=certified_claims(
                r.task,
                e.trials,
                entry_point=e.agent.get("entry_point"),
                rerun=e.rerun if e.measured else None,
            ),
            **common,
        )
        (out / "entries" / f"{e.id}.html").write_text(html, encoding="utf-8")

    data = {
        "generated_at": common["generated_at"],
        "revision": revision,
        "rankings": [rankings[k].to_dict() for k in sorted(rankings)],
        "cross_task": [v.to_dict() for v in views],
    }
    (out / "data" / "leaderboard.json").write_text(
        json.dumps(data, indent=1, default=_json_default, allow_nan=False), encoding="utf-8"
    )
    bar.update(1)
    bar.close()
    return out
