"""Submission bundles: one agent's trial results on one or more tasks, as schema-versioned JSON.

A bundle is what ``icml26 run/bench --out FILE`` writes and ``icml26 leaderboard submit FILE``
sends::

    {
      "schema": "icml26.submission", "schema_version": 2,
      "name": "PD controller", "description": "...", "authors": "...", "url": "",
      "agent": {"name": "point-pd", "entry_point": "icml26.agents.tutorial.pd:PDController",
                "kwargs": {}, "version": "1", "requirement": "icml26-gym==0.1.0", "code": null},
      "tasks": {"tutorial/point-reach": 0},
      "results": [<TrialResult.to_dict()>, ...],   # one FINISHED trial per leaderboard seed
      "packages": {...}, "git_commit": "...", "created_at": "2026-...",
      "content_hash": "sha256:<hex>"
    }

The agent's code is pinned: either ``requirement``, an exact ``name==version`` of a
distribution (no URL), or ``code``, the code itself (a zip of the entry point's top-level
package, or a wheel, base64, with its hash: :mod:`icml26.leaderboards.artefacts`). A bundle
never names a directory: version 1 did (``agent.path``), and is refused with that reason.

``content_hash`` is the SHA-256 of the bundle's canonical JSON without the ``content_hash``
field (:func:`canonical_json`: sorted keys, no whitespace, UTF-8, no NaN). It proves the file
was not altered after it was written; that the numbers are genuine is what verification by
re-run on held-out seeds checks (:mod:`icml26.leaderboards.verify`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from icml26._paths import atomic_write
from icml26.protocol import TrialResult, config_hash, jsonable

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "canonical_json",
    "content_hash",
    "agent_source",
    "make_bundle",
    "bundles_from_results",
    "write_bundle",
    "write_bundles",
    "load_bundle_bytes",
]

SCHEMA = "icml26.submission"
SCHEMA_VERSION = 2
HASH_PREFIX = "sha256:"


def canonical_json(obj: Any) -> bytes:
    """The canonical form hashed by :func:`content_hash`: sorted keys, ``,``/``:`` separators,
    UTF-8 (no ASCII escaping), shortest round-trip floats, NaN and infinities refused."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def content_hash(bundle: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``bundle`` without its ``content_hash`` field."""
    body = {k: v for k, v in bundle.items() if k != "content_hash"}
    return HASH_PREFIX + hashlib.sha256(canonical_json(body)).hexdigest()


def agent_source(
    entry_point: str,
    requirement: str | None = None,
    path: str | os.PathLike[str] | None = None,
    wheel: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """How a verifier gets the agent's code: ``{"requirement": "dist==version", "code": None}``
    when its module belongs to an installed distribution (or ``requirement`` is given),
    otherwise ``{"requirement": None, "code": {...}}`` with the entry point's top-level package
    packed from the directory holding it (``path``, default: where it is imported from) or
    the ``wheel`` given."""
    from icml26._entry_points import code_location
    from icml26.leaderboards.artefacts import pack_code, pack_wheel

    if sum(x is not None for x in (requirement, path, wheel)) > 1:
        raise ValueError("make_bundle: give at most one of requirement, path and wheel")
    if wheel is not None:
        return {"requirement": None, "code": pack_wheel(wheel)}
    if requirement is None and path is None:
        found = code_location(entry_point)
        requirement, path = found["requirement"], found["path"]
    if requirement is not None:
        return {"requirement": requirement, "code": None}
    assert path is not None
    return {"requirement": None, "code": pack_code(path, entry_point)}


def _agent_entry_point(agent_name: str) -> str:
    from icml26 import agents

    return agents.spec(agent_name).entry_point


def make_bundle(
    results: Iterable[TrialResult],
    name: str | None = None,
    description: str = "",
    authors: str = "",
    url: str = "",
    requirement: str | None = None,
    path: str | os.PathLike[str] | None = None,
    wheel: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """A submission bundle for the FINISHED ``results`` of one agent configuration.

    ``requirement`` / ``path`` (a directory whose top-level package is packed into the
    bundle) / ``wheel`` override :func:`agent_source` (give one of them). Raises
    ``ValueError`` for an empty list, several agents or configurations, FAILED trials, or a
    task run at two versions.
    """
    results = list(results)
    if not results:
        raise ValueError("make_bundle: no trial results")
    agents_seen = {(r.agent_name, config_hash(r.agent_kwargs)) for r in results}
    if len(agents_seen) != 1:
        raise ValueError(
            f"make_bundle: a bundle holds one agent configuration, got {sorted(agents_seen)}"
        )
    failed = [f"{r.task_id} seed {r.seed}" for r in results if r.status != "FINISHED"]
    if failed:
        raise ValueError(f"make_bundle: FAILED trials cannot be submitted: {', '.join(failed)}")
    tasks: dict[str, int] = {}
    for r in results:
        if tasks.setdefault(r.task_id, r.task_version) != r.task_version:
            raise ValueError(
                f"make_bundle: task {r.task_id!r} appears at versions "
                f"{tasks[r.task_id]} and {r.task_version}"
            )
    first = results[0]
    entry_point = _agent_entry_point(first.agent_name)
    source = agent_source(entry_point, requirement, path, wheel)
    results = sorted(results, key=lambda r: (r.task_id, r.seed))
    bundle: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "name": name if name is not None else first.agent_name,
        "description": description,
        "authors": authors,
        "url": url,
        "agent": {
            "name": first.agent_name,
            "entry_point": entry_point,
            "kwargs": jsonable(first.agent_kwargs),
            "version": first.agent_version,
            **source,
        },
        "tasks": dict(sorted(tasks.items())),
        "results": [r.to_dict() for r in results],
        "packages": dict(first.packages),
        "git_commit": first.git_commit,
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    bundle["content_hash"] = content_hash(bundle)
    return bundle


def bundles_from_results(results: Iterable[TrialResult], **meta: Any) -> list[dict[str, Any]]:
    """One bundle per agent configuration in ``results`` (FAILED configurations raise)."""
    groups: dict[tuple[str, str], list[TrialResult]] = defaultdict(list)
    for r in results:
        groups[(r.agent_name, config_hash(r.agent_kwargs))].append(r)
    return [make_bundle(rs, **meta) for _, rs in sorted(groups.items())]


def write_bundle(bundle: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``bundle`` as indented JSON, atomically (temp file + rename)."""
    text = json.dumps(bundle, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "agent"


def write_bundles(
    results: Iterable[TrialResult], out: str | os.PathLike[str], **meta: Any
) -> list[Path]:
    """Write one bundle per agent configuration: to ``out`` when there is one, otherwise to
    ``<stem>.<agent>[-<config hash>]<suffix>`` next to it. Configurations with FAILED trials are
    skipped with a message. Prints each path and warns when a task's seeds are not its
    leaderboard seeds (such a bundle would be rejected). ``meta`` goes to :func:`make_bundle`
    (``requirement=``, ``path=``, ``name=``...)."""
    from icml26 import benchmarks

    groups: dict[tuple[str, str], list[TrialResult]] = defaultdict(list)
    for r in results:
        groups[(r.agent_name, config_hash(r.agent_kwargs))].append(r)
    out = Path(out)
    names: dict[str, int] = defaultdict(int)
    for name, _ in groups:
        names[name] += 1
    written = []
    for (name, cfg), rs in sorted(groups.items()):
        if len(groups) == 1:
            path = out
        else:
            tag = _slug(name) + (f"-{cfg}" if names[name] > 1 else "")
            path = out.with_name(f"{out.stem}.{tag}{out.suffix or '.json'}")
        failed = [r for r in rs if r.status != "FINISHED"]
        if failed:
            print(
                f"not writing a bundle for {name}: {len(failed)} trial(s) FAILED", file=sys.stderr
            )
            continue
        by_task: dict[tuple[str, int], list[int]] = defaultdict(list)
        for r in rs:
            by_task[(r.task_id, r.task_version)].append(r.seed)
        for (tid, ver), seeds in by_task.items():
            task = benchmarks.get_task(tid, ver)
            if sorted(seeds) != sorted(task.seeds):
                print(
                    f"warning: {tid} was run on seeds {sorted(seeds)}, not its leaderboard seeds "
                    f"{list(task.seeds)}; the leaderboard will reject this bundle "
                    f"(run with --seeds {','.join(map(str, task.seeds))})",
                    file=sys.stderr,
                )
        written.append(write_bundle(make_bundle(rs, **meta), path))
        print(f"submission bundle: {path}", file=sys.stderr)
    return written


def load_bundle_bytes(path: str | os.PathLike[str], limit: int) -> bytes:
    """Read a bundle file, refusing (``ValueError``) one larger than ``limit`` bytes."""
    p = Path(path)
    size = p.stat().st_size
    if size > limit:
        raise ValueError(
            f"{p}: {size} bytes, more than the {limit}-byte limit for a submission bundle"
        )
    return p.read_bytes()
