"""Reference entries: the suite's own runs (the paper's method and the baselines), shipped with
the package so a fresh leaderboard is not empty.

    python -m icml26.leaderboards.reference build --results results/reference.db   # bundles from a results store
    python -m icml26.leaderboards.reference build --study tutorial                  # ... from a study's store
    python -m icml26.leaderboards.reference verify                                   # re-run them, record the outcome
    python -m icml26.leaderboards.reference check                                    # files match MANIFEST.json
    python -m icml26.leaderboards.reference upgrade                                  # older bundle schema -> current
    python -m icml26.leaderboards.reference overview                                 # docs/results/reference_leaderboard.md

``icml26/leaderboards/reference/`` holds one submission bundle per agent configuration and
``MANIFEST.json``: per bundle its content hash, and the verification record of a re-run of
every trial (same task version, agent, configuration and seeds, on a clean commit): each
task's submitted and re-run IQM of the primary metric, the task's tolerance and whether they
agree. ``icml26 leaderboard render`` / ``show`` load the bundles whose re-run agreed into the
store (once; submitter ``reference``) and mark them VERIFIED with that record as the reason.
A bundle of a task version that is no longer registered, or whose definition changed, fails
validation and is skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icml26.leaderboards.bundle import content_hash, write_bundle

__all__ = [
    "REFERENCE_DIR",
    "manifest",
    "build",
    "upgrade",
    "verify",
    "load_into",
    "overview",
    "main",
]

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
MANIFEST = "MANIFEST.json"
SUBMITTER = "reference"


def manifest(folder: Path = REFERENCE_DIR) -> dict[str, Any]:
    p = folder / MANIFEST
    if not p.exists():
        return {"bundles": []}
    return json.loads(p.read_text())


def _write_manifest(folder: Path, data: dict[str, Any]) -> None:
    (folder / MANIFEST).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def build(
    results_store: str | Path,
    folder: Path = REFERENCE_DIR,
    tasks: Sequence[str] | None = None,
    prov: dict[str, Any] | None = None,
) -> list[Path]:
    """One bundle per agent configuration from the FINISHED trials of ``results_store`` whose
    definition hash is the registered task's and whose seeds are the task's leaderboard seeds."""
    from icml26 import benchmarks
    from icml26.benchmarks.store import ResultsStore
    from icml26.leaderboards.bundle import bundles_from_results
    from icml26.protocol import config_hash

    with ResultsStore(results_store) as st:
        results = st.results(status="FINISHED")
    keep = []
    for r in results:
        if tasks and r.task_id not in tasks:
            continue
        try:
            task = benchmarks.get_task(r.task_id, r.task_version)
        except KeyError:
            continue
        if r.task_hash == task.definition_hash and r.seed in task.seeds and r.budget_scale == 1:
            keep.append(r)  # a leaderboard scores the task's own budget: no other scale
    # only (task, configuration) groups that cover every leaderboard seed
    groups: dict[tuple[str, int, str, str], list[Any]] = {}
    for r in keep:
        groups.setdefault(
            (r.task_id, r.task_version, r.agent_name, config_hash(r.agent_kwargs)), []
        ).append(r)
    complete = [
        r
        for (tid, ver, _, _), rs in groups.items()
        if {x.seed for x in rs} == set(benchmarks.get_task(tid, ver).seeds)
        for r in rs
    ]
    folder.mkdir(parents=True, exist_ok=True)
    data = manifest(folder)
    known = {b["file"]: b for b in data["bundles"]}
    paths = []
    for bundle in bundles_from_results(
        complete, description="reference run of the icml26 suite", authors="icml26-gym"
    ):
        slug = "-".join([bundle["agent"]["name"], config_hash(bundle["agent"]["kwargs"])])
        slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in slug)
        path = write_bundle(bundle, folder / f"{slug}.json")
        known[path.name] = {
            "file": path.name,
            "content_hash": bundle["content_hash"],
            "name": bundle["name"],
            "tasks": bundle["tasks"],
            "built": prov or {},
            "verification": None,
        }
        paths.append(path)
    data["bundles"] = [known[k] for k in sorted(known)]
    _write_manifest(folder, data)
    return paths


def _iqm_of(results: Sequence[Any], metric: str) -> float:
    from icml26.stats import iqm

    return iqm([r.metrics[metric] for r in results])


def verify(
    folder: Path = REFERENCE_DIR,
    files: Sequence[str] | None = None,
    prov: dict[str, Any] | None = None,
    executor: str = "local",
    workers: int = 1,
    force: bool = False,
) -> list[dict[str, Any]]:
    """Re-run every trial of the bundles (same seeds) and record per task whether the re-run's
    IQM of the primary metric agrees with the bundle's within the task's tolerance. Bundles
    already verified are skipped unless named in ``files`` or ``force``."""
    from icml26 import benchmarks
    from icml26.benchmarks.runner import TrialSpec
    from icml26.protocol import TrialResult

    data = manifest(folder)
    if files:  # bundle file names; a path to one (as a shell completes it) names its file
        files = [Path(f).name for f in files]
        unknown = sorted(set(files) - {b["file"] for b in data["bundles"]})
        if unknown:
            raise ValueError(
                f"verify: no bundle named {', '.join(unknown)} in {folder / MANIFEST} "
                "(expected the file names it lists, e.g. 'sos-md-44136fa355b3.json')"
            )
    records = []
    for b in data["bundles"]:
        if files and b["file"] not in files:
            continue
        if not files and not force and b.get("verification") is not None:
            continue
        bundle = json.loads((folder / b["file"]).read_text())
        if content_hash(bundle) != b["content_hash"]:
            raise ValueError(f"{b['file']}: content hash differs from {MANIFEST}")
        trials = [TrialResult.from_dict(t) for t in bundle["results"]]
        specs = [
            TrialSpec(t.task_id, t.task_version, t.agent_name, t.agent_kwargs, t.seed)
            for t in trials
        ]
        with tempfile.TemporaryDirectory() as d:
            rerun = benchmarks.run(
                specs, store=Path(d) / "rerun.db", executor=executor, workers=workers
            )
        per_task: dict[str, Any] = {}
        for key in sorted({f"{t.task_id}@v{t.task_version}" for t in trials}):
            tid, _, ver = key.rpartition("@v")
            task = benchmarks.get_task(tid, int(ver))
            mine = [t for t in trials if t.task_id == tid and t.task_version == int(ver)]
            again = [t for t in rerun if t.task_id == tid and t.task_version == int(ver)]
            ok = [t for t in again if t.status == "FINISHED"]
            rec: dict[str, Any] = {
                "primary_metric": task.primary_metric,
                "tolerance": task.tolerance,
                "n_seeds": len(mine),
                "rerun_finished": len(ok),
            }
            if len(ok) == len(mine):
                rec["rerun_trials"] = [
                    {"seed": t.seed, "metrics": t.metrics, "wall_time_s": t.wall_time_s}
                    for t in sorted(ok, key=lambda t: t.seed)
                ]
                sub, re_ = _iqm_of(mine, task.primary_metric), _iqm_of(ok, task.primary_metric)
                scale = max(abs(sub), 1e-12)
                rec.update(
                    submitted_iqm=sub,
                    rerun_iqm=re_,
                    relative_difference=abs(re_ - sub) / scale,
                    agree=abs(re_ - sub) <= task.tolerance * scale,
                    max_seed_difference=max(
                        abs(a.metrics[task.primary_metric] - c.metrics[task.primary_metric])
                        for a, c in zip(
                            sorted(mine, key=lambda t: t.seed), sorted(ok, key=lambda t: t.seed)
                        )
                    ),
                )
            else:
                rec["agree"] = False
            per_task[key] = rec
        b["verification"] = {
            "method": "re-run of every trial (same task version, agent, configuration, seeds)",
            "agree": all(r["agree"] for r in per_task.values()),
            "tasks": per_task,
            **(prov or {}),
        }
        records.append(b)
        _write_manifest(folder, data)
    return records


def _stale_trials(bundle: dict[str, Any]) -> list[str]:
    """Task keys whose registered definition hash differs from the bundle trials' (or is unknown)."""
    from icml26 import benchmarks

    out = set()
    for t in bundle.get("results", []):
        key = f"{t['task_id']}@v{t['task_version']}"
        try:
            current = benchmarks.get_task(t["task_id"], t["task_version"]).definition_hash
        except KeyError:
            out.add(key)
            continue
        if t.get("task_hash") != current:
            out.add(key)
    return sorted(out)


def _rerun_trials(entry: Any, rec: dict[str, Any]) -> list[Any]:
    """The recorded re-run of a reference entry as trial results (public seeds), so that the
    ranking uses re-run values for reference entries too."""
    from icml26.protocol import TrialResult

    return [
        TrialResult(
            task_id=entry.task_id,
            task_version=entry.task_version,
            agent_name=entry.agent["name"],
            agent_version=str(entry.agent.get("version", "0")),
            seed=int(t["seed"]),
            status="FINISHED",
            metrics={k: float(v) for k, v in t["metrics"].items()},
            scores=[],
            wall_time_s=float(t.get("wall_time_s") or 0.0),
            agent_kwargs=dict(entry.agent.get("kwargs", {})),
        )
        for t in rec.get("rerun_trials", [])
    ]


def upgrade(folder: Path = REFERENCE_DIR) -> list[str]:
    """Rewrite bundles of an older schema as the current one (same trials; the agent names an
    exact requirement instead of a path); their manifest records are reset to unverified,
    since the bundle changed. Returns the files rewritten."""
    from icml26.leaderboards.bundle import SCHEMA_VERSION

    data = manifest(folder)
    done = []
    for b in data["bundles"]:
        bundle = json.loads((folder / b["file"]).read_text())
        if bundle.get("schema_version") == SCHEMA_VERSION:
            continue
        agent = {k: v for k, v in bundle["agent"].items() if k != "path"}
        agent["code"] = None
        bundle.update(schema_version=SCHEMA_VERSION, agent=agent)
        bundle["content_hash"] = content_hash(bundle)
        write_bundle(bundle, folder / b["file"])
        b.update(content_hash=bundle["content_hash"], verification=None)
        done.append(b["file"])
    _write_manifest(folder, data)
    return done


def load_into(store: Any, folder: Path = REFERENCE_DIR, quiet: bool = False) -> list[int]:
    """Submit the verified reference bundles not yet in ``store`` and mark them VERIFIED.
    Returns the new entry ids."""
    from icml26.leaderboards.validate import SubmissionInvalid

    data = manifest(folder)
    have = {e.content_hash for e in store.entries()}
    new_ids: list[int] = []
    for b in data["bundles"]:
        ver = b.get("verification") or {}
        if not ver.get("agree") or b["content_hash"] in have:
            continue
        raw = (folder / b["file"]).read_bytes()
        stale = _stale_trials(json.loads(raw))
        if stale:
            if not quiet:
                print(
                    f"reference bundle {b['file']} skipped: the definition of {stale} changed since it was run",
                    file=sys.stderr,
                )
            continue
        try:
            receipt = store.submit(raw, submitter=SUBMITTER)
        except SubmissionInvalid as exc:
            if not quiet:
                print(f"reference bundle {b['file']} skipped: {exc}", file=sys.stderr)
            continue
        commit = ver.get("commit") or "unknown commit"
        for eid in receipt.entry_ids:
            e = store.entry(eid)
            rec = ver["tasks"].get(f"{e.task_id}@v{e.task_version}", {})
            reason = (
                f"reference run shipped with icml26-gym; re-run of its {rec.get('n_seeds', '?')} seeds at "
                f"commit {str(commit)[:12]} gave IQM {rec.get('rerun_iqm', float('nan')):.4g} vs "
                f"{rec.get('submitted_iqm', float('nan')):.4g} submitted (tolerance {rec.get('tolerance')})"
                + ("; draft: verified from an uncommitted tree" if ver.get("dirty") else "")
            )
            store.set_status(
                eid,
                "VERIFIED",
                reason,
                actor=SUBMITTER,
                verification={
                    "reference": True,
                    **{k: v for k, v in rec.items() if k != "rerun_trials"},
                    "commit": commit,
                    "command": ver.get("command"),
                    "isolation": {"level": "reference", "sandbox": "none (the suite's own code)"},
                },
                verification_trials=_rerun_trials(e, rec),
            )
            new_ids.append(eid)
    return new_ids


def overview(folder: Path = REFERENCE_DIR, prov: dict[str, Any] | None = None) -> str:
    """Markdown: per task, every reference entry's IQM [95% BCa interval] of the primary metric
    over the leaderboard seeds, best first, with its verification."""
    from icml26 import benchmarks
    from icml26.protocol import TrialResult
    from icml26.provenance import provenance_lines
    from icml26.stats import iqm_ci

    rows: dict[str, list[tuple[float, str]]] = {}
    for b in manifest(folder)["bundles"]:
        bundle = json.loads((folder / b["file"]).read_text())
        ver = b.get("verification") or {}
        trials = [TrialResult.from_dict(t) for t in bundle["results"]]
        for key in sorted({f"{t.task_id}@v{t.task_version}" for t in trials}):
            tid, _, v = key.rpartition("@v")
            task = benchmarks.get_task(tid, int(v))
            vals = [
                t.metrics[task.primary_metric]
                for t in trials
                if t.task_id == tid and t.task_version == int(v)
            ]
            iv = iqm_ci(vals, seed=0)
            rec = ver.get("tasks", {}).get(key, {})
            status = (
                ("re-run agrees" if rec.get("agree") else "re-run DISAGREES")
                if rec
                else "not verified"
            )
            kwargs = json.dumps(bundle["agent"].get("kwargs", {}), sort_keys=True)
            sign = -1.0 if task.primary.direction == "max" else 1.0
            rows.setdefault(key, []).append(
                (
                    sign * iv.estimate,
                    f"| {bundle['agent']['name']} | `{kwargs}` | "
                    f"{iv.format(4)} | {len(vals)} | {status} |",
                )
            )
    out = [
        "# Reference leaderboard",
        "",
        "The suite's own runs of each family's method and baselines, shipped in "
        "`icml26/leaderboards/reference/` and loaded (VERIFIED) by `icml26 leaderboard render` / `show` "
        "on the default store. Each entry is re-run trial by trial "
        "(`python -m icml26.leaderboards.reference verify`). IQM of the task's primary metric over its "
        "leaderboard seeds with a 95% interval (docs/evaluation_protocol.md); best first.",
        "",
    ]
    if prov:
        out += [provenance_lines(prov)]
    for key in sorted(rows):
        tid, _, v = key.rpartition("@v")
        task = benchmarks.get_task(tid, int(v))
        arrow = "higher is better" if task.primary.direction == "max" else "lower is better"
        out += [
            f"## {key}",
            "",
            f"Primary metric `{task.primary_metric}` ({arrow}).",
            "",
            "| agent | configuration | IQM [95% CI] | seeds | verification |",
            "|---|---|---|---|---|",
        ]
        out += [line for _, line in sorted(rows[key])] + [""]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    from icml26.provenance import DirtyTreeError, add_allow_dirty, provenance

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write bundles from a results store")
    src = b.add_mutually_exclusive_group(required=True)
    src.add_argument("--results", help="a results store")
    src.add_argument(
        "--study", help="a study's store (results/studies/<name>.db): its registered tasks' trials"
    )
    b.add_argument("--task", action="append")
    add_allow_dirty(b)
    v = sub.add_parser("verify", help="re-run the bundles' trials and record the outcome")
    v.add_argument("files", nargs="*")
    v.add_argument("--executor", default="local")
    v.add_argument("--workers", type=int, default=1)
    v.add_argument("--force", action="store_true", help="re-run bundles already verified too")
    add_allow_dirty(v)
    sub.add_parser("check", help="every bundle matches its content hash in MANIFEST.json")
    sub.add_parser("upgrade", help="rewrite bundles of an older schema (then verify them again)")
    o = sub.add_parser("overview", help="write the markdown overview of the reference entries")
    o.add_argument("--out", type=Path, default=Path("docs/results/reference_leaderboard.md"))
    add_allow_dirty(o)
    args = p.parse_args(argv)
    if args.cmd == "upgrade":
        for f in upgrade():
            print(f"rewrote {f} (verify it again)")
        return 0
    if args.cmd == "check":
        bad = [
            b["file"]
            for b in manifest()["bundles"]
            if content_hash(json.loads((REFERENCE_DIR / b["file"]).read_text()))
            != b["content_hash"]
        ]
        print("OK" if not bad else f"content hash differs: {bad}")
        return 1 if bad else 0
    try:
        prov = provenance(allow_dirty=args.allow_dirty)
    except DirtyTreeError as exc:
        print(exc, file=sys.stderr)
        return 1
    prov = {k: prov[k] for k in ("commit", "dirty", "command", "date")}
    if args.cmd == "overview":
        args.out.write_text(overview(prov=prov))
        print(f"wrote {args.out}")
        return 0
    if args.cmd == "build":
        results = args.results
        if args.study:
            from icml26.benchmarks.studies import get_study

            results = get_study(args.study).store_path
            if not Path(results).exists():
                print(
                    f"no store at {results}: run `icml26 study run {args.study}`", file=sys.stderr
                )
                return 1
        for path in build(results, tasks=args.task, prov=prov):
            print(path)
        return 0
    try:
        records = verify(
            files=args.files or None,
            prov=prov,
            executor=args.executor,
            workers=args.workers,
            force=args.force,
        )
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    for rec in records:
        print(f"{rec['file']}: {'agrees' if rec['verification']['agree'] else 'DISAGREES'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
