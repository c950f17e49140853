"""The pulse study: PULSE and its baselines on ``pulse/ecg-ppg``, 10 seeds, on a budget ladder.

    python experiments/pulse.py plan                             # the trials and what is stored
    python experiments/pulse.py run --store results/pulse.db     # here, resumable (via /work/coord/heavy)
    python experiments/pulse.py device-run --out DIR --workers 16 --deadline 540   # GPU machine
    python experiments/pulse.py ingest DIR/pulse_trials.jsonl --store results/pulse.db
    python experiments/pulse.py export --store results/pulse.db --out DIR/pulse_trials.jsonl
    python experiments/pulse.py report --store results/pulse.db  # docs/results/pulse.md

The declaration (``ARMS``, ``SEEDS``, ``LADDER``) is plain data so that it ports to a
``icml26.benchmarks.study.Study`` unchanged: every trial is an ordinary
:class:`~icml26.benchmarks.trial.TrialSpec` (task, agent, kwargs, seed, budget scale) with the
harness's key, and a results store holds them whichever machine ran them.

``device-run`` runs the same trials on a many-core machine with a GPU and nothing but
numpy/scipy/torch and gymnasium (carried as wheels): the agents train on
``$ICML26_TORCH_DEVICE`` (cuda), every trial is ``execute_trial`` in its own spawned process,
and each finished TrialResult is appended to ``DIR/pulse_trials.jsonl`` at once (a re-run skips
the keys already there). ``ingest`` puts them into a store here.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # spawned workers import this file as __mp_main__
    sys.path.insert(0, str(ROOT))

TASK = "pulse/ecg-ppg"
VERSION = 0
SEEDS = tuple(range(10))
LADDER = (0.5, 1.0, 2.0, 4.0)  # x the task's budget.updates (500): 250 to 2000 updates; the
# plateau test compares the top two. The earlier definition of the task had 2000 updates (x4 of today's); its
# CUDA trials are kept in CUDA_ARCHIVE and reported beside the study, never mixed into it.
# label -> (agent, kwargs, learns): arms that do not learn run once, at the top rung
ARMS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "PULSE": ("pulse", {}, True),
    "PULSE-cross": ("pulse-cross", {}, True),
    # the card's condition A2: the sample-specific channel must not be read off the shared encoder
    "PULSE-cross, no tv": ("pulse-cross", {"tv_dim": 0}, True),
    "SimCLR": ("pulse-simclr", {}, True),
    "MAE": ("pulse-mae", {}, True),
    "SVAE": ("pulse-svae", {}, True),
    "supervised": ("pulse-supervised", {}, True),
    "random init": ("pulse-random", {}, False),
}
# relative cost of one update (one CPU thread, PULSE = 1, about 0.28 CPU-s; measured at 250
# updates for PULSE, SimCLR and MAE, from the exploration logs for the others); orders the work
COST = {
    "pulse": 1.0,
    "pulse-cross": 1.1,
    "pulse-simclr": 0.47,
    "pulse-mae": 0.25,
    "pulse-svae": 0.6,
    "pulse-supervised": 0.35,
    "pulse-random": 0.0,
}
CUDA_ARCHIVE = ROOT / "docs" / "results" / "raw" / "pulse_cuda_2000.jsonl.gz"
ARCHIVE = ROOT / "docs" / "results" / "raw" / "pulse.jsonl.gz"


def updates() -> int:
    """The task's budget (gradient updates at scale 1)."""
    from icml26 import benchmarks

    return int(benchmarks.get_task(TASK, VERSION).budget.updates)


def specs(
    arms: list[str] | None = None,
    seeds: tuple[int, ...] = SEEDS,
    rungs: tuple[float, ...] = tuple(reversed(LADDER)),
) -> list[Any]:
    """The study's trials on the rungs ``rungs``, rung by rung in that order (default: every
    rung, the top one first, what the verdicts need); within a rung the paper's arms before the card's extra ones,
    seed by seed, the costliest arm first."""
    from icml26.benchmarks.trial import TrialSpec

    order = {float(r): i for i, r in enumerate(rungs)}
    out = []
    for i, (label, (agent, kwargs, learns)) in enumerate(ARMS.items()):
        if arms and label not in arms and agent not in arms:
            continue
        for scale in LADDER if learns else (LADDER[-1],):
            if float(scale) not in order:
                continue
            for seed in seeds:
                spec = TrialSpec(TASK, VERSION, agent, kwargs, seed, scale)
                extra = label.startswith("PULSE-cross")
                out.append(
                    (order.get(float(scale), len(order)), extra, seed, -COST[agent], i, spec)
                )
    return [row[-1] for row in sorted(out, key=lambda r: r[:-1])]


def _done_keys(path: Path) -> set[str]:
    from icml26.protocol import TrialResult

    if not path.exists():
        return set()
    keys = set()
    for line in path.read_text().splitlines():
        if line.strip():
            r = TrialResult.from_dict(json.loads(line))
            if r.status == "FINISHED":
                keys.add(r.key)
    return keys


def _device_worker(spec_dict: dict[str, Any]) -> dict[str, Any]:
    from icml26.benchmarks.trial import TrialSpec, execute_trial

    spec = TrialSpec(**spec_dict)
    result = execute_trial(spec)
    d = result.to_dict()
    if os.environ.get("ICML26_COMMIT"):
        d["git_commit"] = os.environ["ICML26_COMMIT"]
    d.setdefault("extra", {})["executed_on"] = os.environ.get("ICML26_EXECUTED_ON", "device")
    return d


def cmd_device_run(args: argparse.Namespace) -> None:
    os.environ.setdefault("ICML26_TORCH_DEVICE", args.device)
    os.environ.setdefault("ICML26_EXECUTED_ON", f"{args.device}, {args.workers} worker processes")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "pulse_trials.jsonl"
    done = _done_keys(path)
    todo = [s for s in specs(args.arms, tuple(args.seeds), tuple(args.rungs)) if s.key not in done]
    print(f"[pulse] {len(done)} trials done, {len(todo)} to run on {args.device}", flush=True)
    t0 = time.monotonic()
    pool = mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1)
    pending = [pool.apply_async(_device_worker, (s.to_dict(),)) for s in todo]
    finished = 0
    try:
        with open(path, "a") as fh:
            while pending:
                if args.deadline and time.monotonic() - t0 > args.deadline:
                    print(f"[pulse] deadline: {len(pending)} trials unfinished", flush=True)
                    break
                ready = [p for p in pending if p.ready()]
                for p in ready:
                    pending.remove(p)
                    d = p.get()
                    fh.write(json.dumps(d) + "\n")
                    fh.flush()
                    finished += 1
                    print(
                        f"[pulse] {finished}/{len(todo)} {d['agent_name']} x{d.get('budget_scale', 1.0)} "
                        f"seed {d['seed']} {d['status']} acc {d['metrics'].get('accuracy', float('nan')):.3f} "
                        f"({d['wall_time_s']:.0f} s) t={time.monotonic() - t0:.0f}",
                        flush=True,
                    )
                if not ready:
                    time.sleep(1.0)
    finally:
        pool.terminate()
    print(
        f"[pulse] wrote {path} ({finished} new trials in {time.monotonic() - t0:.0f} s)", flush=True
    )


def cmd_ingest(args: argparse.Namespace) -> None:
    from icml26.benchmarks.store import ResultsStore
    from icml26.benchmarks.study import read_archive
    from icml26.protocol import TrialResult

    n = 0
    with ResultsStore(args.store) as st:
        have = {r.key for r in st.results()}
        for f in args.files:  # JSON lines, plain or gzipped (the page's own archive)
            if f.endswith(".gz"):
                rows = read_archive(f)
            else:
                lines = Path(f).read_text().splitlines()
                rows = [TrialResult.from_dict(json.loads(x)) for x in lines if x.strip()]
            for r in rows:
                if r.key not in have and r.status == "FINISHED":
                    st.put(r)
                    have.add(r.key)
                    n += 1
    print(f"ingested {n} trials into {args.store}")


def cmd_export(args: argparse.Namespace) -> None:
    """The store's FINISHED trials of the study as JSONL (seeds a device run, which skips them)."""
    from icml26.benchmarks.store import ResultsStore

    keys = {s.key for s in specs()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with ResultsStore(args.store) as st, open(args.out, "w") as fh:
        rows = [r for r in st.results(status="FINISHED") if r.key in keys]
        for r in rows:
            fh.write(json.dumps(r.to_dict()) + "\n")
    print(f"exported {len(rows)} trials to {args.out}")


def cmd_run(args: argparse.Namespace) -> None:
    from icml26 import benchmarks

    benchmarks.run(
        specs(args.arms, tuple(args.seeds), tuple(args.rungs)),
        store=args.store,
        executor=args.executor,
        workers=args.workers,
    )


def cmd_plan(args: argparse.Namespace) -> None:
    todo = specs(args.arms, tuple(args.seeds), tuple(args.rungs))
    have: set[str] = set()
    if args.store and Path(args.store).exists():
        from icml26.benchmarks.store import ResultsStore

        with ResultsStore(args.store) as st:
            have = {r.key for r in st.results(status="FINISHED")}
    cost = sum(COST[s.agent] * s.budget_scale for s in todo if s.key not in have)
    print(
        f"{len(todo)} trials, {sum(s.key in have for s in todo)} stored; "
        f"remaining cost {cost:.1f} PULSE-trial units"
    )


# ---------------------------------------------------------------------------- the page
PAGE = ROOT / "docs" / "results" / "pulse.md"
FIGURE = ROOT / "docs" / "results" / "figures" / "pulse_ladder.png"
PROTOCOLS = {
    "accuracy": "linear probe, 100% labels",
    "accuracy_10pct": "linear probe, 10% labels",
    "accuracy_1pct": "linear probe, 1% labels",
    "transfer_accuracy": "transfer to the target domain",
    "r2_transferable": "R^2, transferable factors",
    "r2_sample": "R^2, sample-specific factors (lower = filtered)",
    "selectivity": "R^2 transferable - sample-specific",
}
DIRECTION = {"r2_sample": "min"}
# the paper's claims as paired comparisons: (claim id, text, arm a, arm b, metric); a is claimed better
CLAIMS: list[tuple[str, str, str, str, str]] = [
    *[
        (f"{m}-vs-{b}", f"PULSE beats {b} ({PROTOCOLS[m]})", "PULSE", b, m)
        for m in ("accuracy", "accuracy_10pct", "accuracy_1pct", "transfer_accuracy")
        for b in ("SimCLR", "MAE", "SVAE")
    ],
    (
        "factors-vs-SVAE",
        "PULSE keeps less sample-specific information than the SVAE",
        "PULSE",
        "SVAE",
        "r2_sample",
    ),
    *[
        (
            f"dyn-vs-{b}",
            f"PULSE keeps more transferable (system) information than {b}",
            "PULSE",
            b,
            "r2_transferable",
        )
        for b in ("SimCLR", "MAE")
    ],
]
# controls and the card's derived predictions, reported beside the claims (not in the Holm family)
CHECKS: list[tuple[str, str, str, str, str]] = [
    (
        "control",
        "supervised beats the random-init encoder (positive control)",
        "supervised",
        "random init",
        "accuracy",
    ),
    *[
        (f"null-{a}", f"{a} beats the random-init encoder", a, "random init", "accuracy")
        for a in ("PULSE", "PULSE-cross", "SimCLR", "MAE", "SVAE")
    ],
    (
        "cross-filters",
        "PULSE-cross keeps less sample-specific information than PULSE (card 4c)",
        "PULSE-cross",
        "PULSE",
        "r2_sample",
    ),
    (
        "cross-accuracy",
        "PULSE-cross beats PULSE (linear probe)",
        "PULSE-cross",
        "PULSE",
        "accuracy",
    ),
    (
        "notv-filters",
        "PULSE-cross without the tv channel keeps less sample-specific information than with it (card 5)",
        "PULSE-cross, no tv",
        "PULSE-cross",
        "r2_sample",
    ),
    (
        "notv-accuracy",
        "PULSE-cross without the tv channel beats PULSE-cross (linear probe)",
        "PULSE-cross, no tv",
        "PULSE-cross",
        "accuracy",
    ),
]


def _load(store: str) -> dict[str, dict[float, dict[int, Any]]]:
    """label -> scale -> seed -> TrialResult (FINISHED trials of the study)."""
    from icml26.benchmarks.store import ResultsStore

    want = {s.key: s for s in specs()}
    label_of = {(a, json.dumps(kw, sort_keys=True)): lbl for lbl, (a, kw, _) in ARMS.items()}
    out: dict[str, dict[float, dict[int, Any]]] = {lbl: {} for lbl in ARMS}
    with ResultsStore(store) as st:
        for r in st.results(status="FINISHED"):
            if r.key in want:
                lbl = label_of[(r.agent_name, json.dumps(dict(r.agent_kwargs), sort_keys=True))]
                out[lbl].setdefault(float(r.budget_scale), {})[r.seed] = r
    return out


def _plateau(runs: dict[float, dict[int, Any]], metric: str, learns: bool) -> Any:
    from icml26.stats import Plateau, plateau_test

    if not learns:
        return Plateau(True, "exact (does not learn)")
    ladder = {s: {seed: r.metrics[metric] for seed, r in v.items()} for s, v in runs.items() if v}
    return plateau_test(
        ladder, direction=DIRECTION.get(metric, "max"), tolerance=0.05, relative=True
    )


def _fmt_ci(vals: list[float], digits: int = 3) -> str:
    from icml26.stats import mean_ci

    if len(vals) < 2:
        return f"{vals[0]:.{digits}f} (n=1)" if vals else "--"
    iv = mean_ci(vals, seed=0)
    return f"{iv.estimate:.{digits}f} [{iv.low:.{digits}f}, {iv.high:.{digits}f}]"


def _compare(
    data: Any, claims: list[tuple[str, str, str, str, str]], top: float
) -> list[dict[str, Any]]:
    from icml26.stats import paired_test

    rows = []
    for cid, text, a, b, m in claims:
        ra, rb = data[a].get(top, {}), data[b].get(top, {})
        seeds = sorted(set(ra) & set(rb))
        row: dict[str, Any] = {
            "id": cid,
            "text": text,
            "a": a,
            "b": b,
            "metric": m,
            "n": len(seeds),
        }
        if len(seeds) >= 2:
            sign = -1.0 if DIRECTION.get(m) == "min" else 1.0
            res = paired_test(
                [sign * ra[s].metrics[m] for s in seeds], [sign * rb[s].metrics[m] for s in seeds]
            )
            row.update(
                diff=sign * res.diff,
                low=min(sign * res.low, sign * res.high),
                high=max(sign * res.low, sign * res.high),
                p=res.p_value,
                better=res.diff > 0,
            )
            pa, pb = (_plateau(data[x], m, ARMS[x][2]) for x in (a, b))
            row.update(plateau_a=pa, plateau_b=pb, at_plateau=pa.at_plateau and pb.at_plateau)
        rows.append(row)
    return rows


def _verdicts(rows: list[dict[str, Any]], holm_family: bool) -> None:
    from icml26.stats import holm

    tested = [r for r in rows if "p" in r]
    adj = holm([r["p"] for r in tested]) if holm_family else [r["p"] for r in tested]
    for r, q in zip(tested, adj):
        r["p_adj"] = float(q)
        supported = r["better"] and q < 0.05
        if r["n"] < 10 or not r["at_plateau"]:
            r["verdict"] = "undecided at this budget"
        else:
            r["verdict"] = "reproduced" if supported else "not reproduced"
    for r in rows:
        r.setdefault("verdict", "no data")


def _claim_table(rows: list[dict[str, Any]], adjusted: bool) -> list[str]:
    head = (
        "| claim | a - b [95% CI] | n | p"
        + (" (Holm)" if adjusted else "")
        + " | plateau a / b | verdict |"
    )
    out = [head, "|---|---|---|---|---|---|"]
    for r in rows:
        if "p" not in r:
            out.append(f"| {r['text']} | -- | {r['n']} | -- | -- | {r['verdict']} |")
            continue
        pl = f"{r['plateau_a'].status} / {r['plateau_b'].status}"
        out.append(
            f"| {r['text']} (`{r['metric']}`) | {r['diff']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}] | {r['n']} "
            f"| {r['p_adj']:.3g} | {pl} | **{r['verdict']}** |"
        )
    return out


def _figure(data: Any) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, m in zip(axes, ("accuracy", "transfer_accuracy", "r2_sample")):
        for lbl, (_agent, _, learns) in ARMS.items():
            runs = data[lbl]
            scales = sorted(s for s in runs if runs[s])
            if not scales:
                continue
            ys = [np.mean([r.metrics[m] for r in runs[s].values()]) for s in scales]
            xs = [s * updates() for s in scales]
            ax.plot(xs, ys, "o-" if learns else "s", label=lbl)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("pretraining updates")
        ax.set_title(PROTOCOLS[m], fontsize=9)
    axes[0].legend(fontsize=7)
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=110)
    plt.close(fig)
    return True


def _write_archive(trials: list[Any]) -> None:
    """The study's trials as gzipped JSONL (sorted by key; the page's figures come from these)."""
    import gzip

    ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted(trials, key=lambda r: r.key)
    with gzip.GzipFile(ARCHIVE, "wb", mtime=0) as fh:
        for r in rows:
            fh.write((json.dumps(r.to_dict(), sort_keys=True) + "\n").encode())


def _load_cuda() -> dict[str, dict[int, Any]]:
    """label -> seed -> TrialResult of the CUDA archive (the task's earlier 2000-update
    definition, run on a GPU at commit bdddcee); empty when the archive is absent."""
    import gzip

    from icml26.protocol import TrialResult

    out: dict[str, dict[int, Any]] = {}
    if not CUDA_ARCHIVE.exists():
        return out
    label_of = {(a, json.dumps(kw, sort_keys=True)): lbl for lbl, (a, kw, _) in ARMS.items()}
    with gzip.open(CUDA_ARCHIVE, "rt") as fh:
        for line in fh:
            if line.strip():
                r = TrialResult.from_dict(json.loads(line))
                lbl = label_of.get((r.agent_name, json.dumps(dict(r.agent_kwargs), sort_keys=True)))
                if lbl and r.status == "FINISHED":
                    out.setdefault(lbl, {})[r.seed] = r
    return out


def _cuda_section(data: Any, cuda: dict[str, dict[int, Any]], top: float) -> list[str]:
    """The earlier 2000-update trials (CUDA): per-arm means, PULSE's paired differences and each
    arm's step from this study's top rung (CPU) to 2000 updates (CUDA), paired by seed."""
    from icml26.stats import paired_test

    if not cuda:
        return []
    commits = sorted({str(r.git_commit)[:12] for v in cuda.values() for r in v.values()})
    n_trials = sum(len(v) for v in cuda.values())
    mets = (
        "accuracy",
        "accuracy_10pct",
        "accuracy_1pct",
        "transfer_accuracy",
        "r2_transferable",
        "r2_sample",
    )
    L = [
        "## A longer budget on a GPU: 2000 updates (x4), CUDA, seeds 0-4 (SVAE also 5)",
        "",
        f"Before this study the task was defined with 2000 updates; a shared GPU call ran that "
        f"definition (commit(s) {', '.join(f'`{c}`' for c in commits)}; {n_trials} trials, training on "
        f"`cuda`, simulation and probes on CPU) for seeds 0-4 of the six paper arms before its time ran "
        f"out (the PULSE-cross arms were not reached). Everything else on this page is CPU. These trials "
        f"differ from this study's only in the number of updates (and the device); they are kept apart "
        f"(archive `docs/results/raw/{CUDA_ARCHIVE.name}`) and read here without verdicts: 5 seeds "
        f"cannot reach p < 0.05 with a sign-flip test (smallest attainable p 0.0625), and the step from "
        f"500 to 2000 updates mixes devices.",
        "",
        "| arm | n | " + " | ".join(f"`{m}`" for m in mets) + " |",
        "|---|---|" + "---|" * len(mets),
    ]
    for lbl in ARMS:
        runs = cuda.get(lbl, {})
        if not runs:
            continue
        L.append(
            f"| {lbl} | {len(runs)} | "
            + " | ".join(_fmt_ci([r.metrics[m] for r in runs.values()]) for m in mets)
            + " |"
        )
    L += [
        "",
        "PULSE minus each baseline at 2000 updates (CUDA; paired over the shared seeds; mean [95% CI], p):",
        "",
    ]
    L += [
        "| baseline | n | " + " | ".join(f"`{m}`" for m in mets[:4]) + " |",
        "|---|---|" + "---|" * 4,
    ]
    for b in ("SimCLR", "MAE", "SVAE", "random init"):
        pa, pb = cuda.get("PULSE", {}), cuda.get(b, {})
        seeds = sorted(set(pa) & set(pb))
        if len(seeds) < 2:
            continue
        cells = []
        for m in mets[:4]:
            res = paired_test([pa[s].metrics[m] for s in seeds], [pb[s].metrics[m] for s in seeds])
            cells.append(f"{res.diff:+.3f} [{res.low:+.3f}, {res.high:+.3f}], p {res.p_value:.3g}")
        L.append(f"| {b} | {len(seeds)} | " + " | ".join(cells) + " |")
    L += [
        "",
        f"Each arm's change from {int(top * updates())} updates (this study, CPU) to 2000 updates (CUDA), "
        "paired by seed (mean [95% CI]; cross-device, descriptive):",
        "",
        "| arm | n | `accuracy` | `transfer_accuracy` | `r2_sample` |",
        "|---|---|---|---|---|",
    ]
    for lbl in ARMS:
        lo, hi = data[lbl].get(top, {}), cuda.get(lbl, {})
        seeds = sorted(set(lo) & set(hi))
        if len(seeds) < 2 or not ARMS[lbl][2]:
            continue
        cells = []
        for m in ("accuracy", "transfer_accuracy", "r2_sample"):
            res = paired_test([hi[s].metrics[m] for s in seeds], [lo[s].metrics[m] for s in seeds])
            cells.append(f"{res.diff:+.3f} [{res.low:+.3f}, {res.high:+.3f}]")
        L.append(f"| {lbl} | {len(seeds)} | " + " | ".join(cells) + " |")
    return L + [""]


def _scope(data: Any, n_top: dict[str, int]) -> list[str]:
    """What of the declared design was run (per arm: seeds per rung) and what that allows."""
    full = all(
        len(data[lbl].get(s, {})) == len(SEEDS)
        for lbl, (_, _, learns) in ARMS.items()
        for s in (LADDER if learns else LADDER[-1:])
    )
    L = [
        "## Scope: what was run of the declared design",
        "",
        f"Declared: {len(ARMS)} arms x seeds 0-{len(SEEDS) - 1} x ladder "
        + ", ".join(f"x{s} ({int(s * updates())} updates)" for s in LADDER)
        + " (arms that do not learn: the top rung only).",
        "",
        "| arm | " + " | ".join(f"x{s}: seeds" for s in LADDER) + " |",
        "|---|" + "---|" * len(LADDER),
    ]
    for lbl in ARMS:
        cells = []
        for s in LADDER:
            seeds = sorted(data[lbl].get(s, {}))
            cells.append(
                "--" if not seeds else f"{len(seeds)} ({', '.join(str(x) for x in seeds)})"
            )
        L.append(f"| {lbl} | " + " | ".join(cells) + " |")
    L.append("")
    if not full:
        L += [
            "The design is not complete: the cells marked -- were not run (CPU on a two-core "
            "machine, one thread per trial; measured cost per update PULSE 0.28 CPU-s, SimCLR 0.13, "
            "MAE 0.07). Where an arm has fewer than 10 seeds at the top rung or lacks the rung below "
            "it (no plateau test), its comparisons read **undecided at this budget**: the measured "
            "paired differences and their intervals are reported, but no verdict is drawn. The rest "
            "of the design is declared in `experiments/pulse.py` and resumes from the same store "
            f"(`run --rungs {' '.join(f'{s:g}' for s in reversed(LADDER))}`).",
            "",
        ]
    return L


def cmd_report(args: argparse.Namespace) -> None:  # noqa: C901
    from icml26.envs.pulse.simulator import SAMPLE_FACTORS, TRANSFERABLE_FACTORS
    from icml26.provenance import provenance, provenance_lines

    prov = provenance(allow_dirty=args.allow_dirty)
    data = _load(args.store)
    top = LADDER[-1]
    claims = _compare(data, CLAIMS, top)
    _verdicts(claims, holm_family=True)
    checks = _compare(data, CHECKS, top)
    _verdicts(checks, holm_family=False)
    trials = [r for runs in data.values() for v in runs.values() for r in v.values()]
    commits: dict[str, int] = {}
    where: dict[str, int] = {}
    for r in trials:
        commits[str(r.git_commit)] = commits.get(str(r.git_commit), 0) + 1
        dev = str(r.extra.get("learn", {}).get("device", "cpu"))
        where[dev] = where.get(dev, 0) + 1
    acc = {lbl: [r.metrics["accuracy"] for r in data[lbl].get(top, {}).values()] for lbl in ARMS}
    mean = {k: f"{np.mean(v):.2f}" if v else "not run at this budget" for k, v in acc.items()}
    n_top = {lbl: len(data[lbl].get(top, {})) for lbl in ARMS}
    ns = sorted({n for n in n_top.values() if n})
    seeds_txt = (
        f"{ns[0]} seeds" if len(ns) == 1 else f"{ns[0]}-{ns[-1]} seeds" if ns else "no seeds"
    ) + ("" if ns and ns[0] >= len(SEEDS) else f" (of {len(SEEDS)} planned)")
    n_rep = sum(r["verdict"] == "reproduced" for r in claims)
    n_not = sum(r["verdict"] == "not reproduced" for r in claims)
    bullet = (
        f"**pulse**: PULSE (ICML 2026) on simulated ECG+PPG recordings (McSharry / Windkessel dynamics, "
        f"4 rhythm/conduction classes, known factors), {seeds_txt}, {int(top * updates())} pretraining updates "
        f"on CPU: linear-probe accuracy PULSE {mean['PULSE']}, PULSE-cross {mean['PULSE-cross']}, SimCLR "
        f"{mean['SimCLR']}, MAE {mean['MAE']}, SVAE {mean['SVAE']}, random-init encoder "
        f"{mean['random init']}, supervised upper bound {mean['supervised']}; "
        + (
            "no paired claim decided: every one undecided at this budget or not run. "
            if n_rep == n_not == 0
            else f"paired claims (Holm): {n_rep} reproduced, {n_not} not reproduced"
            + (
                " ("
                + "; ".join(r["text"] for r in claims if r["verdict"] == "not reproduced")
                + ")"
                if n_not
                else ""
            )
            + "; the rest undecided at this budget (an arm not at the plateau of its ladder). "
        )
        + "[results](docs/results/pulse.md)"
    )
    L: list[str] = [
        "<!-- icml26-summary",
        json.dumps(
            {
                "family": "pulse",
                "paper": "PULSE",
                "methods": ["pulse", "pulse-cross"],
                "bullet": bullet,
            }
        ),
        "-->",
        "",
        "# PULSE: self-supervised representations of physiological time series",
        "",
        provenance_lines(prov),
        "",
        f"Trials: {len(trials)} FINISHED from the store `{args.store}`, run at commit(s) "
        + ", ".join(f"`{c[:12]}` ({n})" for c, n in sorted(commits.items()))
        + "; training device: "
        + ", ".join(f"{d} ({n})" for d, n in sorted(where.items()))
        + " (CUDA-trained trials are not bit-identical to CPU ones). Method card: "
        "[docs/methods/pulse.md](../methods/pulse.md); family docs: [docs/envs/pulse.md](../envs/pulse.md).",
        "",
        "## Setup",
        "",
        "Task `pulse/ecg-ppg` v0: each trial simulates 512 unlabelled recordings (128 per class) x 8 "
        "independent 4-s windows of ECG + PPG at 64 Hz, pretrains the agent's objective on the shared "
        "small encoder (dilated convs, hidden 32, depth 6, 64-d max-pooled output; ~40k parameters) for "
        "`budget.updates` AdamW updates with a one-cycle schedule (batch 32), and then scores the frozen "
        "encoder with the evaluator's probes on fresh recordings (64 probe-training + 32 held-out recordings "
        "per class x 4 windows, split by recording): logistic-regression probe with 100%, 10% and 1% of the "
        "labels (5 label draws, >= 1 label per class), the same probe on the shifted target domain, and "
        "ridge R^2 of 9 transferable (recording-level) and 5 sample-specific (window-level) factors. "
        f"Budget ladder x{', x'.join(str(s) for s in LADDER)} of {updates()} updates; seeds 0-9 paired across arms. "
        "`supervised` sees the pretraining labels (upper bound, reference only); `random init` never trains "
        "(the null). A verdict counts only when both compared arms are at the plateau of their ladder "
        "(paired test of the last doubling: the 95% interval of the change within +-5% of the lower rung).",
        "",
    ]
    L += _scope(data, n_top)
    if _figure(data):
        L += [f"![ladder](figures/{FIGURE.name})", ""]
    L += ["## Budget ladder (mean [95% CI] over seeds; plateau test on the last doubling)", ""]
    for m in ("accuracy", "transfer_accuracy", "r2_sample"):
        L += [
            f"**{PROTOCOLS[m]}** (`{m}`)",
            "",
            "| arm | "
            + " | ".join(f"x{s} ({int(s * updates())})" for s in LADDER)
            + " | plateau |",
            "|---|" + "---|" * (len(LADDER) + 1),
        ]
        for lbl, (_, _, learns) in ARMS.items():
            cells = [_fmt_ci([r.metrics[m] for r in data[lbl].get(s, {}).values()]) for s in LADDER]
            pl = _plateau(data[lbl], m, learns)
            extra = (
                ""
                if pl.status.startswith("exact") or pl.n == 0
                else f" ({pl.improvement:+.3f} [{pl.low:+.3f}, {pl.high:+.3f}], tol {pl.tolerance:.3f})"
            )
            L.append(f"| {lbl} | " + " | ".join(cells) + f" | {pl.status}{extra} |")
        L.append("")
    L += [
        f"## Results at the top rung ({int(top * updates())} updates; mean [95% CI]; {seeds_txt})",
        "",
        "| arm | " + " | ".join(f"`{m}`" for m in PROTOCOLS) + " |",
        "|---|" + "---|" * len(PROTOCOLS),
    ]
    for lbl in ARMS:
        runs = data[lbl].get(top, {})
        L.append(
            f"| {lbl} | "
            + " | ".join(_fmt_ci([r.metrics[m] for r in runs.values()]) for m in PROTOCOLS)
            + " |"
        )
    L += ["", "## The paper's claims (paired over seeds at the top rung; Holm over the family)", ""]
    L += _claim_table(claims, adjusted=True)
    L += ["", "## Controls and the method card's derived predictions (unadjusted)", ""]
    L += _claim_table(checks, adjusted=False)
    L += [
        "",
        "## Factor recovery at the top rung (held-out R^2, mean over seeds)",
        "",
        "| factor | level | " + " | ".join(ARMS) + " |",
        "|---|---|" + "---|" * len(ARMS),
    ]
    for f in (*TRANSFERABLE_FACTORS, *SAMPLE_FACTORS):
        lvl = "recording" if f in TRANSFERABLE_FACTORS else "window"
        vals = [data[lbl].get(top, {}) for lbl in ARMS]
        L.append(
            f"| `{f}` | {lvl} | "
            + " | ".join(
                f"{np.mean([r.metrics['r2_' + f] for r in v.values()]):.2f}" if v else "--"
                for v in vals
            )
            + " |"
        )
    L += [""] + _cuda_section(data, _load_cuda(), top)
    if args.notes and Path(args.notes).exists():
        L += [Path(args.notes).read_text().rstrip()]
    PAGE.write_text("\n".join(L).rstrip() + "\n")
    _write_archive(trials)
    print(f"wrote {ARCHIVE} ({len(trials)} trials)")
    print(f"wrote {PAGE}")


def cmd_bundles(args: argparse.Namespace) -> None:
    """Reference bundles of the ranked arms (the family's full suite: every arm but the
    label-using supervised one and the card's ablation) from the store's top-rung trials, with
    main's reference tool; verify them with ``python -m icml26.leaderboards.reference verify``."""
    import tempfile

    from icml26.benchmarks.store import ResultsStore
    from icml26.benchmarks.tasks.pulse import SUITES
    from icml26.leaderboards import reference
    from icml26.provenance import provenance

    ranked = {
        (a, json.dumps(dict(kw), sort_keys=True))
        for e in SUITES["full"]
        for a, kw in e.agents.items()
    }
    prov = provenance(allow_dirty=args.allow_dirty)
    prov = {k: prov[k] for k in ("commit", "dirty", "command", "date")}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d) / "ranked.db"
        with ResultsStore(args.store) as st, ResultsStore(tmp) as out:
            for r in st.results(status="FINISHED"):
                kw = json.dumps(dict(r.agent_kwargs), sort_keys=True)
                if r.task_id == TASK and r.budget_scale == 1.0 and (r.agent_name, kw) in ranked:
                    out.put(r)
        for path in reference.build(tmp, tasks=[TASK], prov=prov):
            print(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("plan", "run", "device-run"):
        q = sub.add_parser(name)
        q.add_argument(
            "--arms", nargs="*", default=None, help="labels or agent names (default: all)"
        )
        q.add_argument("--seeds", type=int, nargs="*", default=list(SEEDS))
        q.add_argument(
            "--rungs",
            type=float,
            nargs="*",
            default=list(reversed(LADDER)),
            help="the rungs to run, in this order (default: all, top first)",
        )
        if name in ("plan", "run"):
            q.add_argument("--store", default="results/pulse.db")
        if name == "run":
            q.add_argument("--executor", default="process")
            q.add_argument("--workers", type=int, default=1)
        if name == "device-run":
            q.add_argument("--out", required=True)
            q.add_argument("--workers", type=int, default=16)
            q.add_argument("--device", default="cuda")
            q.add_argument("--deadline", type=float, default=None, help="seconds from start")
    q = sub.add_parser("report")
    q.add_argument("--store", default="results/pulse.db")
    q.add_argument(
        "--notes", default="experiments/pulse_notes.md", help="markdown appended to the page"
    )
    q.add_argument("--allow-dirty", action="store_true")
    q = sub.add_parser("bundles")
    q.add_argument("--store", default="results/pulse.db")
    q.add_argument("--allow-dirty", action="store_true")
    q = sub.add_parser("export")
    q.add_argument("--store", default="results/pulse.db")
    q.add_argument("--out", default="results/pulse_device/pulse_trials.jsonl")
    q = sub.add_parser("ingest")
    q.add_argument("files", nargs="+")
    q.add_argument("--store", default="results/pulse.db")
    args = p.parse_args(argv)
    {
        "plan": cmd_plan,
        "run": cmd_run,
        "device-run": cmd_device_run,
        "ingest": cmd_ingest,
        "export": cmd_export,
        "report": cmd_report,
        "bundles": cmd_bundles,
    }[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
