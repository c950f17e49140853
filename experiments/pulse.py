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

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # spawned workers import this file as __mp_main__
    sys.path.insert(0, str(ROOT))

TASK = "pulse/ecg-ppg"
VERSION = 0
SEEDS = tuple(range(10))
LADDER = (0.25, 0.5, 1.0)  # x the task's budget.updates; the plateau test compares the top two
# label -> (agent, kwargs, learns): arms that do not learn run once, at the top rung
ARMS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "PULSE": ("pulse", {}, True),
    "PULSE-cross": ("pulse-cross", {}, True),
    "SimCLR": ("pulse-simclr", {}, True),
    "MAE": ("pulse-mae", {}, True),
    "SVAE": ("pulse-svae", {}, True),
    "supervised": ("pulse-supervised", {}, True),
    "random init": ("pulse-random", {}, False),
}
# relative cost of one update (measured on one CPU thread, PULSE = 1); orders the work
COST = {
    "pulse": 1.0,
    "pulse-cross": 1.4,
    "pulse-simclr": 1.2,
    "pulse-mae": 0.4,
    "pulse-svae": 0.6,
    "pulse-supervised": 0.35,
    "pulse-random": 0.0,
}


def specs(arms: list[str] | None = None, seeds: tuple[int, ...] = SEEDS) -> list[Any]:
    """Every trial of the study: the top rung first (what the verdicts need), then the lower
    rungs; within a rung seed by seed, the costliest arm first."""
    from icml26.benchmarks.trial import TrialSpec

    out = []
    for label, (agent, kwargs, learns) in ARMS.items():
        if arms and label not in arms and agent not in arms:
            continue
        for scale in LADDER if learns else (LADDER[-1],):
            for seed in seeds:
                out.append(TrialSpec(TASK, VERSION, agent, kwargs, seed, scale))
    return sorted(out, key=lambda s: (-s.budget_scale, s.seed, -COST[s.agent]))


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
    todo = [s for s in specs(args.arms, tuple(args.seeds)) if s.key not in done]
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
    from icml26.protocol import TrialResult

    n = 0
    with ResultsStore(args.store) as st:
        have = {r.key for r in st.results()}
        for f in args.files:
            for line in Path(f).read_text().splitlines():
                if not line.strip():
                    continue
                r = TrialResult.from_dict(json.loads(line))
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
        specs(args.arms, tuple(args.seeds)),
        store=args.store,
        executor=args.executor,
        workers=args.workers,
    )


def cmd_plan(args: argparse.Namespace) -> None:
    todo = specs(args.arms, tuple(args.seeds))
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("plan", "run", "device-run"):
        q = sub.add_parser(name)
        q.add_argument(
            "--arms", nargs="*", default=None, help="labels or agent names (default: all)"
        )
        q.add_argument("--seeds", type=int, nargs="*", default=list(SEEDS))
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
    }[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
