"""Provenance of a results page: the exact command and the clean commit it came from.

    from icml26.provenance import provenance, provenance_lines
    prov = provenance(allow_dirty=args.allow_dirty)   # refuses a modified tree unless allowed
    page = "# Results\\n\\n" + provenance_lines(prov) + "\\n" + body

A page from a modified tree is a draft: :func:`provenance_lines` says so on its first line
("draft: generated from uncommitted tree"), and the page is regenerated from a clean commit
before it is cited. Output folders (``docs/results/``, ``results/``) do not make the tree dirty,
so regenerating a page over its previous version is allowed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "DirtyTreeError",
    "provenance",
    "provenance_lines",
    "add_allow_dirty",
    "git_state",
    "dirty_paths",
    "REPO_ROOT",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
#: paths whose changes do not make a tree dirty (what the scripts write)
OUTPUT_PATHS = ("docs/results/", "results/")


class DirtyTreeError(RuntimeError):
    """The working tree has uncommitted changes (or is not a git checkout)."""


def _git(*args: str, root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _command(argv: Sequence[str], root: Path) -> str:
    argv = list(argv)
    if argv and argv[0].endswith(".py"):
        p = Path(argv[0]).resolve()
        try:
            rel = p.relative_to(root)
        except ValueError:
            rel = None
        if rel is not None and rel.parts[0] == "icml26":  # run as `python -m icml26....`
            mod = ".".join(rel.with_suffix("").parts)
            return "python -m " + shlex.join([mod.removesuffix(".__main__"), *argv[1:]])
        if rel is not None:
            argv[0] = str(rel)
    return "python " + shlex.join(argv)


def dirty_paths(root: Path = REPO_ROOT, ignore: Sequence[str] = OUTPUT_PATHS) -> list[str]:
    """Modified, staged, deleted or untracked (not ignored) paths, minus ``ignore`` prefixes."""
    status = _git("status", "--porcelain", "--untracked-files=all", root=root)
    if status is None:
        raise DirtyTreeError(f"{root} is not a git checkout: no commit to name")
    paths = [line[3:].split(" -> ")[-1].strip('"') for line in status.splitlines() if line.strip()]
    return [p for p in paths if not any(p.startswith(i) for i in ignore)]


def git_state(root: Path = REPO_ROOT, paths: Sequence[str] | None = None) -> tuple[str, bool]:
    """``(HEAD commit, dirty)`` of the checkout at ``root``: dirty when a modified, staged,
    deleted or untracked path lies under one of ``paths`` (default: anywhere outside the output
    folders, :func:`dirty_paths`); ``("", True)`` outside a git checkout."""
    head = _git("rev-parse", "HEAD", root=root)
    if head is None:
        return "", True
    changed = dirty_paths(root)
    if paths is not None:
        prefixes = [q.rstrip("/") for q in paths]
        changed = [p for p in changed if any(p == q or p.startswith(q + "/") for q in prefixes)]
    return head.strip(), bool(changed)


def provenance(
    allow_dirty: bool = False, *, argv: Sequence[str] | None = None, root: str | Path = REPO_ROOT
) -> dict[str, Any]:
    """``{"commit", "dirty", "command", "date", "dirty_paths"}`` for the running script.

    Raises :class:`DirtyTreeError` when the tree has uncommitted changes (outside
    ``docs/results/`` and ``results/``) unless ``allow_dirty``; then ``dirty`` is True and the
    page is a draft. ``command`` is ``python <script relative to the repo> <args>``.
    """
    root = Path(root)
    head = _git("rev-parse", "HEAD", root=root)
    if head is None:
        if not allow_dirty:
            raise DirtyTreeError(
                f"{root} is not a git checkout: no commit to name (pass --allow-dirty for a draft)"
            )
        changed: list[str] = []
        commit, dirty = None, True
    else:
        commit = head.strip()
        changed = dirty_paths(root)
        dirty = bool(changed)
        if dirty and not allow_dirty:
            shown = ", ".join(changed[:8]) + (
                f" and {len(changed) - 8} more" if len(changed) > 8 else ""
            )
            raise DirtyTreeError(
                f"refusing to write a results page from a modified tree ({shown}); commit first, "
                "or pass --allow-dirty to write a draft"
            )
    return {
        "commit": commit,
        "dirty": dirty,
        "command": _command(sys.argv if argv is None else argv, root),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "dirty_paths": changed,
    }


def provenance_lines(prov: Mapping[str, Any]) -> str:
    """Markdown lines naming the command and commit; a draft says so on its first line."""
    lines = []
    if prov.get("dirty"):
        lines.append(
            "> **draft: generated from uncommitted tree** "
            f"(commit `{prov.get('commit') or 'none'}` plus local changes); regenerate from a "
            "clean commit before citing these numbers."
        )
        lines.append("")
    commit = prov.get("commit") or "none"
    state = "with uncommitted changes" if prov.get("dirty") else "clean tree"
    lines.append(
        f"Generated by `{prov['command']}` at commit `{commit}` ({state}), {prov.get('date', '')}."
    )
    return "\n".join(lines) + "\n"


def add_allow_dirty(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``--allow-dirty`` flag (write a draft page from a modified tree)."""
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="write the page from a modified tree; it is marked as a draft",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m icml26.provenance``: print the provenance of this checkout (exit 1 if dirty)."""
    try:
        prov = provenance(allow_dirty=False, argv=["(check)"])
    except DirtyTreeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(provenance_lines(prov), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
