"""Aggregation speed: `icml26 results` on a smoke-shaped store and on a 10x larger one.

    python perf/aggregation.py                      # synthetic smoke-shaped store, and 10x
    python perf/aggregation.py --store results/smoke.db   # also a real store
    python perf/harness.py --part aggregation       # the same, from the harness

The synthetic store has exactly the trials of the smoke suite (every task, agent and seed of
``get_suite("smoke")``, 104 trials) with seeded random metric values inside each metric's
range; the 10x store repeats every (task, agent) with 10x the seeds, so each cell's interval
is a BCa bootstrap over 10x more values. Timed: reading the store and aggregating it into
tables (``aggregate`` + ``format_tables``), median of ``--repeats`` in wall and CPU seconds
(on a busy machine the CPU time is the figure to compare), and a fresh
``icml26 results --store`` process end to end (interpreter start and imports included).
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from icml26 import benchmarks
from icml26.benchmarks.store import ResultsStore
from icml26.protocol import TrialResult


def synthetic_smoke_store(path: Path, seed_factor: int = 1, seed: int = 0) -> int:
    """Fill a store at ``path`` with the smoke suite's trials (seeds x ``seed_factor``)."""
    rng = np.random.default_rng(seed)
    n = 0
    with ResultsStore(path) as store:
        for entry in benchmarks.get_suite("smoke"):
            task = benchmarks.get_task(entry.task)
            seeds = list(entry.seeds if entry.seeds is not None else task.seeds)
            seeds = seeds + [1000 + i for i in range(len(seeds) * (seed_factor - 1))]
            for agent, kwargs in entry.agents.items():
                loc = rng.normal()
                for s in seeds:
                    metrics = {}
                    for m in task.metrics:
                        lo = m.lower if math.isfinite(m.lower) else -10.0
                        hi = m.upper if math.isfinite(m.upper) else lo + 20.0
                        metrics[m.name] = float(
                            np.clip(lo + (hi - lo) * (0.5 + 0.15 * (loc + rng.normal())), lo, hi)
                        )
                    store.put(
                        TrialResult(
                            task.id,
                            task.version,
                            agent,
                            "0",
                            int(s),
                            "FINISHED",
                            metrics=metrics,
                            scores=[metrics[task.primary_metric]],
                            wall_time_s=1.0,
                            agent_kwargs=dict(kwargs),
                            task_hash=task.definition_hash,
                        )
                    )
                    n += 1
    return n


def time_aggregation(path: Path, repeats: int = 3) -> dict[str, Any]:
    """Median seconds to read ``path`` and print its tables (what `icml26 results` does)."""
    times, read_times, cpu_times = [], [], []
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        with ResultsStore(path) as store:
            results = store.results()
        t1 = time.perf_counter()
        text = benchmarks.format_tables(benchmarks.aggregate(results, progress=False))
        t2 = time.perf_counter()
        cpu_times.append(time.process_time() - c0)
        read_times.append(t1 - t0)
        times.append(t2 - t0)
    cells = text.count("[")
    # end to end, as a user sees it: a fresh `icml26 results --store` process (imports included)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "icml26.cli", "results", "--store", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    cli = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cli_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {
        "trials": len(results),
        "seconds": statistics.median(times),
        "cpu_seconds": statistics.median(cpu_times),
        "read_seconds": statistics.median(read_times),
        "interval_cells": cells,
        "cli_seconds": cli,
        "cli_cpu_seconds": cli_cpu,
    }


def peer_ratio(path: Path, cells: int = 24) -> dict[str, Any] | None:
    """Per-cell cost of our interval (``iqm_ci``) vs rliable's stratified bootstrap (the code this
    replaced; rliable is no longer a dependency, so this runs only where it is installed), on the
    first ``cells`` cells with n >= 2 of the store, in CPU seconds."""
    try:
        from rliable import library as rly
        from rliable import metrics as rmetrics
    except ImportError:
        return None
    import warnings

    from icml26.stats import iqm_ci

    with ResultsStore(path) as store:
        results = store.results(status="FINISHED")
    groups: dict[tuple[str, str, str], list[float]] = {}
    for r in results:
        for m, v in r.metrics.items():
            groups.setdefault((r.task_id, r.agent_name, m), []).append(v)
    vals = [np.asarray(v) for v in groups.values() if len(v) >= 2 and np.ptp(v) > 0][:cells]
    c0 = time.process_time()
    for v in vals:
        iqm_ci(v, seed=0)
    ours = time.process_time() - c0
    c0 = time.process_time()
    state = np.random.get_state()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in vals:
            np.random.seed(0)
            rly.get_interval_estimates(
                {"x": v[:, None]}, lambda s: np.array([rmetrics.aggregate_iqm(s)]), reps=2000
            )
    np.random.set_state(state)
    peer = time.process_time() - c0
    return {
        "cells": len(vals),
        "ours_cpu_s": ours,
        "rliable_cpu_s": peer,
        "ratio": peer / max(ours, 1e-9),
    }


def measure_aggregation(
    tmp: Path, store: Path | None = None, repeats: int = 3
) -> list[dict[str, Any]]:
    """Time aggregation of the smoke-shaped store, the 10x store and optionally a real one."""
    print("\n== aggregation (read the store, IQM + 95% interval per cell, format the tables) ==")
    rows = []
    cases: list[tuple[str, Path]] = []
    for factor in (1, 10):
        p = tmp / f"synthetic_smoke_x{factor}.db"
        n = synthetic_smoke_store(p, seed_factor=factor)
        cases.append((f"synthetic smoke x{factor} ({n} trials)", p))
    if store is not None:
        cases.append((f"{store}", store))
    peer = peer_ratio(cases[1][1])  # the 10x store: n = 20 per cell, so both sides bootstrap
    if peer is not None:
        print(
            f"  per cell, {peer['cells']} cells of the 10x store (n=20, BCa): iqm_ci {peer['ours_cpu_s'] / peer['cells'] * 1e3:.1f} ms"
            f" vs rliable stratified bootstrap {peer['rliable_cpu_s'] / peer['cells'] * 1e3:.0f} ms CPU "
            f"({peer['ratio']:.0f}x)"
        )
        rows.append({"peer": peer})
    for name, p in cases:
        r = time_aggregation(p, repeats)
        r["store"] = name
        rows.append(r)
        print(
            f"  {name}: aggregation {r['seconds']:.3f} s wall, {r['cpu_seconds']:.3f} s CPU (store read {r['read_seconds']:.3f} s; "
            f"{r['interval_cells']} cells with an interval); `icml26 results` end to end "
            f"{r['cli_seconds']:.2f} s wall, {r['cli_cpu_seconds']:.2f} s CPU"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", type=Path, default=None, help="a real results store to time as well")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        measure_aggregation(Path(d), args.store, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
