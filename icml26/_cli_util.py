"""Helpers shared by the ``icml26`` command and its sub-command modules (``icml26 leaderboard``,
``icml26 study``): the usage-error type, aligned table printing, ``--agent-kwargs`` parsing,
checks of family / task / agent / suite names with suggestions, opening a results store for
reading or writing, and the version line."""

from __future__ import annotations

import difflib
import json
import os
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "UsageError",
    "parse_kwargs",
    "TABLE_WIDTH",
    "print_rows",
    "seeds_text",
    "unknown_name",
    "check_name",
    "check_family",
    "check_task",
    "check_agent",
    "open_results_store",
    "version_line",
]


class UsageError(Exception):
    """A user mistake: printed without a traceback, exit code 2."""


TABLE_WIDTH = 120  # what tables fit unless --wide


def print_rows(rows: list[list[str]], width: int | None = TABLE_WIDTH) -> None:
    """Print ``rows`` (the first is the header) as left-aligned columns two spaces apart.

    Wider than ``width`` columns (None: never), the widest columns give way, one at a time until
    the table fits: a column of words with at least 24 columns left for it is wrapped onto
    continuation lines (the other cells blank there); any other column but the first leaves the
    table and follows each row on an indented line (``    header: text; header: text``)."""
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    wrap: dict[int, int] = {}  # column -> the width it is wrapped to
    below: list[int] = []  # columns printed under their row
    while width is not None:
        kept = [i for i in range(len(widths)) if i not in below]
        total = sum(wrap.get(i, widths[i]) for i in kept) + 2 * (len(kept) - 1)
        movable = [i for i in kept[1:] if i not in wrap]
        if total <= width or not movable:
            break
        col = max(movable, key=lambda i: widths[i])
        room = width - (total - widths[col])
        if room >= 24 and any(" " in r[col] for r in rows[1:]):
            wrap[col] = room
        else:
            below.append(col)
    kept = [i for i in range(len(widths)) if i not in below]
    for n, row in enumerate(rows):
        cells = [
            textwrap.wrap(row[i], wrap[i], break_on_hyphens=False) or [""]
            if i in wrap and n > 0
            else [row[i]]
            for i in kept
        ]
        cols = [wrap.get(i, widths[i]) for i in kept]
        for k in range(max(len(c) for c in cells)):
            line = [c[k] if k < len(c) else "" for c in cells]
            print("  ".join(c.ljust(w) for c, w in zip(line, cols)).rstrip())
        # "\0" keeps a header on the line of its value's first word
        extra = "; ".join(f"{rows[0][i]}:\0{row[i]}" for i in sorted(below) if row[i])
        if n > 0 and extra:
            print(
                textwrap.fill(
                    extra,
                    width or len(extra) + 4,
                    initial_indent="    ",
                    subsequent_indent="      ",
                    break_long_words=False,  # ids stay whole
                    break_on_hyphens=False,
                ).replace("\0", " ")
            )


def seeds_text(seeds: Iterable[int]) -> str:
    """Seeds as ``--seeds`` takes them, runs shortened: ``0-9``, ``0,2,5-7``."""
    out: list[str] = []
    run: list[int] = []
    for s in [*seeds, None]:
        if s is not None and run and s == run[-1] + 1:
            run.append(s)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ",".join(map(str, run)))
        run = [s] if s is not None else []
    return ",".join(out)


def parse_kwargs(text: str | None, option: str = "--agent-kwargs") -> dict[str, Any]:
    """The JSON object given to ``option`` (``{}`` when absent); anything else is a UsageError."""
    if not text:
        return {}
    try:
        kw = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{option} must be a JSON object, e.g. '{{\"lr\": 0.001}}': {e}") from None
    if not isinstance(kw, dict):
        raise UsageError(f"{option} must be a JSON object, got {type(kw).__name__}")
    return kw


def unknown_name(kind: str, name: str, known: Iterable[str], listing: str = "") -> UsageError:
    """A UsageError for an unknown ``kind`` name: the closest known names, then where to see
    them all (``listing``, e.g. ``icml26 tasks``) or, without one, the known names."""
    known = sorted(set(known))
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    close += [k for k in known if name and name.lower() in k.lower() and k not in close]
    hint = f" Did you mean {', '.join(repr(c) for c in close[:3])}?" if close else ""
    tail = (
        f" `{listing}` lists them all." if listing else f" Known: {', '.join(known) or '(none)'}."
    )
    return UsageError(f"unknown {kind} {name!r}.{hint}{tail}")


def check_name(kind: str, name: str | None, known: Iterable[str], listing: str = "") -> None:
    """Raise :func:`unknown_name` unless ``name`` is None or one of ``known``."""
    known = list(known)
    if name is not None and name not in known:
        raise unknown_name(kind, name, known, listing)


def check_family(name: str | None, *, generic: bool = False) -> None:
    """``--family``: one of ``icml26.FAMILIES`` (and ``generic`` where agents are listed)."""
    from icml26 import FAMILIES

    check_name("family", name, [*FAMILIES, *(["generic"] if generic else [])])


def check_task(name: str | None) -> None:
    """``--task``: a registered task id (``id@vN`` for an older version)."""
    if name is None:
        return
    from icml26 import benchmarks

    try:
        benchmarks.get_task(name)
    except KeyError:
        raise unknown_name("task", name, benchmarks.task_ids(), "icml26 tasks") from None


def check_agent(name: str | None) -> None:
    """``--agent``: a registered agent name, or a ``package.module:Class`` entry point."""
    if name is None or ":" in name:
        return
    from icml26 import agents

    check_name("agent", name, agents.names(), "icml26 agents")


def open_results_store(location: str | os.PathLike[str] | None, *, create: bool) -> Any:
    """The results store at ``location`` (``--store``; None: ``$ICML26_STORE`` or the default).

    Readers pass ``create=False``: nothing is created, and a missing, foreign or damaged store is
    a one-line error naming the path and what was expected (exit status 2)."""
    from icml26.benchmarks.store import ResultsStore, StoreError

    try:
        return ResultsStore(location, create=create)
    except StoreError as e:
        raise UsageError(str(e)) from None


def version_line() -> str:
    """``icml26-gym VERSION (commit SHA[+dirty])``: the package version and, for a git
    checkout, the commit the code is at."""
    import icml26

    root = Path(icml26.__file__).resolve().parents[1]
    commit = None
    if (root / ".git").exists():
        from icml26.benchmarks.trial import git_commit

        commit = git_commit()
    where = (
        f"commit {commit[:12]}{'+dirty' if commit.endswith('+dirty') else ''}"
        if commit
        else ("not a git checkout")
    )
    return f"icml26-gym {icml26.__version__} ({where}; {root})"
