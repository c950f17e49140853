"""Helpers shared by the ``icml26`` command and its sub-command modules (``icml26 leaderboard``):
the usage-error type, aligned table printing and ``--agent-kwargs`` parsing."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["UsageError", "parse_kwargs", "print_rows"]


class UsageError(Exception):
    """A user mistake: printed without a traceback, exit code 2."""


def print_rows(rows: list[list[str]]) -> None:
    """Print ``rows`` (the first is the header) as left-aligned columns two spaces apart."""
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


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
