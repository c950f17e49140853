"""Sample efficiency of LDR vs maximum likelihood and the log-variance loss -> docs/results/boltzmann.md.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python experiments/boltzmann.py --workers 2      # everything
    .venv/bin/python experiments/boltzmann.py --only gmm40 --seeds 0                          # one target
    .venv/bin/python experiments/boltzmann.py --quick       # smoke: GMM-40, tiny flows -> results/boltzmann/quick.md
    .venv/bin/python experiments/boltzmann.py --report-only                                   # tables again

Every run goes through the benchmark's own ``run_trial`` (icml26.benchmarks.tasks.boltzmann) with
the task's budget replaced by the configuration's data set size N, so numbers here are numbers the
harness would produce. Measured:

1. Data-based training on GMM-40, Many-Well-32 and alanine dipeptide (vacuum, 300 K), unbiased and
   biased data (GMM: components at T = 2; Many-Well: exact T = 2; alanine: 600 K MD), N labelled
   configurations for N in 6 log-spaced sizes (2x apart), 5 seeds, flows trained by ML, the
   log-variance loss (R = data), LDR (NLL + 1.0 * mean absolute deviation of log p~ - log q, same
   batch) and, on biased data, importance-reweighted ML. Every method at every N holds out 10% of
   its data for validation and early-stops (validation objective every 25 updates, patience 10,
   best parameters kept) within an update cap per target. Metric against N (the energy
   evaluations that labelled the data); per-N paired differences LDR - baseline over seeds (the
   same seed gives every method the same data set), Holm-adjusted over N.
2. The evaluations LDR needs to reach each baseline's value at the largest N (log-linear
   interpolation of the seed-mean curve; percentile bootstrap over seeds, resampled jointly for
   both methods, ``icml26.stats.bootstrap_ci``).
3. Dispersion ablation for LDR on GMM-40 at N = 1000 (variance, MAD, Huber, IQR; lambda = 1).
4. Purely variational training on GMM-40 (no data): reverse KL, on-policy log-variance and
   variational LDR (reverse KL + MAD over a replay buffer, 3 replay updates per batch): reverse ESS
   against energy evaluations bought from the env; and FAB without its replay buffer (AIS with
   MALA towards p^2 / q, AIS-weighted NLL).
5. Tuning with the same budget for every method (8 configurations each: LDR lambda x dispersion,
   ML and LV learning rate x batch size) on GMM-40 at N = 1000 with tuning seeds 100-102, disjoint
   from the reported seeds.

Raw results: results/boltzmann/runs.jsonl (cache, re-runs skip finished configurations) and
docs/results/figures/boltzmann_raw.json. ``--quick`` uses its own cache and page
(results/boltzmann/quick.jsonl, quick.md) and never touches docs/.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from icml26.provenance import add_allow_dirty, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "results" / "boltzmann" / "runs.jsonl"
DOC = ROOT / "docs" / "results" / "boltzmann.md"
FIG = ROOT / "docs" / "results" / "figures"

FLOW_2D = {"n_layers": 6, "hidden": 64, "bins": 32}
FLOW_HD = {"n_layers": 6, "hidden": 64, "bins": 8}
BIAS = {
    "gmm40": "components at T = 2",
    "many_well32": "exact target at T = 2",
    "aldp": "600 K MD, 300 K labels",
}
EARLY_STOP = {
    "val_fraction": 0.1,
    "eval_every": 25,
    "patience": 10,
}  # every data-based method, every N
TARGETS: dict[
    str, dict[str, Any]
] = {  # "iters": the update cap (early stopping usually ends sooner)
    "gmm40": {
        "task": "boltzmann/gmm40",
        "label": "GMM-40",
        "sizes": [125, 250, 500, 1000, 2000, 4000],
        "iters": 2000,
        "agent": {**FLOW_2D, "batch_size": 256, **EARLY_STOP},
    },
    "many_well32": {
        "task": "boltzmann/many-well32",
        "label": "Many-Well-32",
        "sizes": [250, 500, 1000, 2000, 4000, 8000],
        "iters": 1500,
        "agent": {**FLOW_HD, "batch_size": 256, **EARLY_STOP},
    },
    "aldp": {
        "task": "boltzmann/aldp",
        "label": "Alanine dipeptide",
        "sizes": [500, 1000, 2000, 4000, 8000, 16000],
        "iters": 1500,
        "agent": {**FLOW_HD, "batch_size": 128, **EARLY_STOP},
    },
}
QUICK_TARGETS: dict[str, dict[str, Any]] = {
    "gmm40": {
        **TARGETS["gmm40"],
        "sizes": [100, 200, 400, 800, 1600],
        "iters": 100,
        "agent": {
            "n_layers": 2,
            "hidden": 16,
            "bins": 8,
            "batch_size": 128,
            **EARLY_STOP,
            "eval_every": 10,
            "patience": 3,
        },
    },
}
METHODS: dict[str, dict[str, Any]] = {
    "ML": {"objective": "ml"},
    "LV": {"objective": "lv"},
    "LDR": {"objective": "ldr", "dispersion": "mad", "lam": 1.0},
    "ML-reweighted": {"objective": "ml_reweighted"},  # biased data only (on unbiased data it is ML)
}
BASELINES = ("ML", "LV", "ML-reweighted")


def methods_for(data: str) -> list[str]:
    return [m for m in METHODS if data == "biased" or m != "ML-reweighted"]


DISPERSIONS = ["variance", "mad", "huber", "iqr"]
# The same tuning budget for every method (8 configurations each), on the validation target: GMM-40
# at N = 1000 with tuning seeds disjoint from the reported ones (other data sets and test sets).
TUNE_SEEDS, TUNE_N = [100, 101, 102], 1000
TUNE_GRID: dict[str, list[dict[str, Any]]] = {
    "LDR": [
        {"lam": lam, "dispersion": d} for lam in (0.1, 0.3, 1.0, 3.0) for d in ("variance", "mad")
    ],
    "ML": [{"lr": lr, "batch_size": b} for lr in (3e-4, 1e-3, 3e-3, 1e-2) for b in (128, 256)],
    "LV": [{"lr": lr, "batch_size": b} for lr in (3e-4, 1e-3, 3e-3, 1e-2) for b in (128, 256)],
}
VAR_METHODS: dict[str, dict[str, Any]] = {
    "reverse KL": {"objective": "rkl"},
    "on-policy LV": {"objective": "lv_onpolicy"},
    "variational LDR": {"objective": "ldr_var", "dispersion": "mad", "lam": 1.0, "replay_steps": 3},
    "FAB (no buffer)": {"objective": "fab", "alpha": 2.0, "ais_levels": 8},
}
VAR_BUDGET, VAR_EVERY = 64_000, 25  # energy evaluations; checkpoint every 25 batches of 256
COLORS = {
    "ML": "C0",
    "LV": "C2",
    "LDR": "C3",
    "ML-reweighted": "C1",
    "reverse KL": "C0",
    "on-policy LV": "C2",
    "variational LDR": "C3",
    "FAB (no buffer)": "C1",
}


# ----------------------------------------------------------------------------- run specs
def run_specs(targets: Iterable[str], seeds: list[int], parts: set[str]) -> list[dict[str, Any]]:  # noqa: C901
    specs: list[dict[str, Any]] = []
    for name in targets:
        cfg = TARGETS[name]
        for data in ("unbiased", "biased"):
            if f"{name}:{data}" in parts or name in parts:
                for n in cfg["sizes"]:
                    for method in methods_for(data):
                        kw = METHODS[method]
                        for s in seeds:
                            specs.append(
                                {
                                    "kind": "data",
                                    "target": name,
                                    "data": data,
                                    "n": n,
                                    "method": method,
                                    "agent": {**cfg["agent"], **kw, "n_iters": cfg["iters"]},
                                    "seed": s,
                                }
                            )
    if "ablation" in parts:
        cfg = TARGETS["gmm40"]
        for data in ("unbiased", "biased"):
            for disp in DISPERSIONS:
                for s in seeds:
                    specs.append(
                        {
                            "kind": "data",
                            "target": "gmm40",
                            "data": data,
                            "n": 1000,
                            "method": "LDR" if disp == "mad" else f"LDR-{disp}",
                            "agent": {
                                **cfg["agent"],
                                **METHODS["LDR"],
                                "dispersion": disp,
                                "n_iters": cfg["iters"],
                            },
                            "seed": s,
                        }
                    )
    if "tune" in parts:
        cfg = TARGETS["gmm40"]
        for method, grid in TUNE_GRID.items():
            for i, over in enumerate(grid):
                for s in TUNE_SEEDS:
                    specs.append(
                        {
                            "kind": "data",
                            "target": "gmm40",
                            "data": "unbiased",
                            "n": TUNE_N,
                            "method": f"tune:{method}:{i}",
                            "tune": over,
                            "agent": {
                                **cfg["agent"],
                                **METHODS[method],
                                **over,
                                "n_iters": cfg["iters"],
                            },
                            "seed": s,
                        }
                    )
    if "variational" in parts:
        for method, kw in VAR_METHODS.items():
            for s in seeds:
                specs.append(
                    {
                        "kind": "variational",
                        "target": "gmm40",
                        "data": "none",
                        "n": 0,
                        "method": method,
                        "agent": {**FLOW_2D, "batch_size": 256, **kw},
                        "seed": s,
                        "budget": VAR_BUDGET,
                        # checkpoints every VAR_EVERY batches of 256 evaluations (FAB: AIS updates of the same cost)
                        "every": max(1, VAR_EVERY // (kw.get("ais_levels", 0) + 1)),
                    }
                )
    return specs


def key(spec: dict[str, Any]) -> str:
    return json.dumps({k: spec[k] for k in sorted(spec) if k not in ("result",)}, sort_keys=True)


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """One trial through the task's run_trial (executed in a worker process)."""
    import torch

    torch.set_num_threads(1)
    from icml26.agents.boltzmann.flow_agent import FlowSampler
    from icml26.benchmarks import get_task
    from icml26.benchmarks.runner import seed_everything
    from icml26.benchmarks.tasks.boltzmann import run_trial
    from icml26.envs.boltzmann import make_target
    from icml26.envs.boltzmann.metrics import evaluate_sampler
    from icml26.protocol import Budget, derive_seed

    seed = int(spec["seed"])
    if spec["kind"] == "data":
        base = get_task(TARGETS[spec["target"]]["task"])
        task = dataclasses.replace(
            base,
            env_kwargs={**base.env_kwargs, "data": spec["data"]},
            budget=Budget(dataset_size=spec["n"], energy_evals=0, updates=spec["agent"]["n_iters"]),
        )
    else:
        base = get_task("boltzmann/gmm40-variational")
        task = dataclasses.replace(base, budget=Budget(dataset_size=0, energy_evals=spec["budget"]))
    seed_everything(seed)
    agent = FlowSampler(**spec["agent"])
    curve: list[dict[str, float]] = []
    if spec["kind"] == "variational":
        target = make_target(spec["target"])
        test = target.dataset(4000, "unbiased", "test", seed=derive_seed(seed, "curve-test"))

        def checkpoint(ag: Any, info: dict[str, Any]) -> None:
            m = evaluate_sampler(target, ag.sample, ag.log_prob, test, n_samples=4000)
            curve.append(
                {
                    "energy_evals": info["energy_evals"],
                    "reverse_ess": m["reverse_ess"],
                    "forward_ess": m["forward_ess"],
                    "nll": m["nll"],
                }
            )

        agent.callback, agent.callback_every = checkpoint, int(spec["every"])
    t_cpu, t_wall = time.process_time(), time.perf_counter()
    out = run_trial(task, agent, seed)
    learn = out.extra.get("learn") or {}
    res = {
        "metrics": out.metrics,
        "diagnostics": out.extra.get("diagnostics", {}),
        "learn": {
            k: learn[k]
            for k in (
                "iterations",
                "best_iteration",
                "stopped_early",
                "val_loss_best",
                "weights_ess",
            )
            if k in learn
        },
        "cpu_s": time.process_time() - t_cpu,
        "wall_s": time.perf_counter() - t_wall,
    }
    if curve:
        res["curve"] = curve
    return {**spec, "result": res}


# ----------------------------------------------------------------------------- execution
def load_cache() -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    if CACHE.exists():
        for line in CACHE.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[key(r)] = r
    return done


def execute(specs: list[dict[str, Any]], workers: int) -> dict[str, dict[str, Any]]:
    from tqdm.auto import tqdm

    done = load_cache()
    todo = [s for s in specs if key(s) not in done]
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    if not todo:
        return done
    bar = tqdm(
        total=len(todo), desc=f"boltzmann runs ({len(specs) - len(todo)} cached)", file=sys.stderr
    )
    import multiprocessing as mp

    with (
        ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as ex,
        CACHE.open("a") as f,
    ):
        futures = {ex.submit(run_one, s): s for s in todo}
        for fut in as_completed(futures):
            r = fut.result()
            done[key(r)] = r
            f.write(json.dumps(r) + "\n")
            f.flush()
            bar.set_postfix_str(f"{r['target']} {r['data']} N={r['n']} {r['method']} s{r['seed']}")
            bar.update(1)
    bar.close()
    return done


# ----------------------------------------------------------------------------- analysis
def _ci(values: list[float]) -> tuple[float, float, float]:
    from icml26.stats import mean_ci

    return mean_ci(np.asarray(values, dtype=float))


def _fmt(v: tuple[float, float, float], digits: int = 3) -> str:
    m, lo, hi = v
    if max(abs(m), abs(lo), abs(hi)) >= 100:
        return f"{m:.1f} [{lo:.1f}, {hi:.1f}]"
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def collect(
    done: dict[str, dict[str, Any]], target: str, data: str, method: str
) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for r in done.values():
        if (
            r["kind"] == "data"
            and r["target"] == target
            and r["data"] == data
            and r["method"] == method
        ):
            out.setdefault(r["n"], []).append(r)
    return dict(sorted(out.items()))


def evals_to_reach(sizes: np.ndarray, curve: np.ndarray, level: float) -> float:
    """Smallest N (log-linear interpolation) at which ``curve`` reaches ``level``; inf if never."""
    if curve[0] >= level:
        return float(sizes[0])  # reached at the smallest size already (a lower bound on the ratio)
    for i in range(1, len(sizes)):
        if curve[i] >= level:
            a, b = curve[i - 1], curve[i]
            frac = (level - a) / (b - a)
            return float(
                np.exp(np.log(sizes[i - 1]) + frac * (np.log(sizes[i]) - np.log(sizes[i - 1])))
            )
    return float("inf")


def _by_seed(runs: list[dict[str, Any]], metric: str) -> dict[int, float]:
    return {int(r["seed"]): float(r["result"]["metrics"][metric]) for r in runs}


def ratio_table(
    done: dict[str, dict[str, Any]], metric: str = "reverse_ess", reps: int = 2000
) -> list[str]:
    """N_max / N_LDR for reaching each baseline's value at N_max (``nll``: lower is better).

    N_LDR is read off LDR's seed-mean curve by log-linear interpolation between sizes; the interval
    is a percentile bootstrap over seeds (``icml26.stats.bootstrap_ci``), each resample drawing
    seeds jointly for LDR's curve and the baseline's value (the same seed, the same data sets).
    """
    from icml26.stats import bootstrap_ci

    sign = -1.0 if metric == "nll" else 1.0
    label = "NLL" if metric == "nll" else "ESS"
    rows = [
        f"| target | data | baseline | baseline {label} at N_max | N LDR needs | ratio N_max / N_LDR [95% bootstrap] | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, cfg in TARGETS.items():
        for data in ("unbiased", "biased"):
            ldr = collect(done, name, data, "LDR")
            if len(ldr) < 2:
                continue
            sizes = np.array(sorted(ldr), dtype=float)
            for base in BASELINES:
                b = collect(done, name, data, base)
                if int(sizes[-1]) not in b:
                    continue
                per_n = [_by_seed(ldr[int(n)], metric) for n in sizes]
                fin = _by_seed(b[int(sizes[-1])], metric)
                seeds = sorted(set(fin).intersection(*per_n))
                if len(seeds) < 2:
                    continue
                # rows = seeds: LDR's value at every size, then the baseline's value at N_max
                table = sign * np.array([[p[s] for p in per_n] + [fin[s]] for s in seeds])

                def ratio(rows: np.ndarray, sizes: np.ndarray = sizes) -> float:
                    m = rows.mean(0)
                    need = evals_to_reach(sizes, m[:-1], m[-1])
                    return float(sizes[-1] / need)  # 0 when LDR never reaches it

                iv = bootstrap_ci(table, ratio, n_resamples=reps, seed=0)
                final = float(table[:, -1].mean())
                n_need = evals_to_reach(sizes, table[:, :-1].mean(0), final)
                bound = " (reached at the smallest N: a lower bound)" if n_need == sizes[0] else ""
                shown = "not reached" if not np.isfinite(n_need) else f"{n_need:,.0f}{bound}"
                floor = (
                    " (baseline ESS below 0.01, the noise floor of a 10,000-sample estimate: not interpretable)"
                    if metric == "reverse_ess" and final < 0.01
                    else ""
                )
                rows.append(
                    f"| {cfg['label']} | {data} | {base} | {sign * final:.3f} | {shown} | "
                    f"{iv.estimate:.2f} [{iv.low:.2f}, {iv.high:.2f}]{floor} | {len(seeds)} |"
                )
    return rows


def paired_table(done: dict[str, dict[str, Any]], metric: str = "reverse_ess") -> list[str]:
    """Per-N paired differences LDR - baseline over seeds (``icml26.stats.paired_test``), Holm over N."""
    from icml26.stats import holm, paired_test

    rows = [
        f"| target | data | baseline | N | mean {metric} difference LDR - baseline [95% paired bootstrap] | p | Holm p | pairs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, cfg in TARGETS.items():
        for data in ("unbiased", "biased"):
            ldr = collect(done, name, data, "LDR")
            for base in BASELINES:
                b = collect(done, name, data, base)
                found = []
                for n in sorted(set(ldr) & set(b)):
                    la, lb = _by_seed(ldr[n], metric), _by_seed(b[n], metric)
                    seeds = sorted(set(la) & set(lb))
                    if len(seeds) >= 2:
                        found.append(
                            (n, paired_test([la[s] for s in seeds], [lb[s] for s in seeds], seed=0))
                        )
                if not found:
                    continue
                adj = holm([r.p_value for _, r in found])
                for (n, r), p_adj in zip(found, adj):
                    rows.append(
                        f"| {cfg['label']} | {data} | {base} | {n} | {r.diff:+.3f} [{r.low:+.3f}, {r.high:+.3f}] | "
                        f"{r.p_value:.3f} | {p_adj:.3f} | {r.n} |"
                    )
    return rows


def updates_table(done: dict[str, dict[str, Any]]) -> list[str]:
    """The update early stopping chose (mean over seeds) per target, data, method and N."""
    rows = [
        "| target | data | method | chosen update / updates run (mean over seeds), per N |",
        "|---|---|---|---|",
    ]
    for name, cfg in TARGETS.items():
        for data in ("unbiased", "biased"):
            for m in methods_for(data):
                per = collect(done, name, data, m)
                if not per:
                    continue
                cells = []
                for n, runs in per.items():
                    le = [r["result"].get("learn", {}) for r in runs]
                    if all("best_iteration" in x for x in le):
                        cells.append(
                            f"N={n}: {np.mean([x['best_iteration'] for x in le]):.0f} / "
                            f"{np.mean([x['iterations'] for x in le]):.0f}"
                        )
                if cells:
                    rows.append(f"| {cfg['label']} | {data} | {m} | " + "; ".join(cells) + " |")
    return rows


def data_tables(done: dict[str, dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for name, cfg in TARGETS.items():
        extra_cols = {
            "gmm40": [("log_z_error", "abs. log Z error"), ("modes_covered", "modes")],
            "many_well32": [("log_z_error", "abs. log Z error")],
            "aldp": [("ramachandran_kl", "Ramachandran KL")],
        }[name]
        cols = [
            ("reverse_ess", "reverse ESS"),
            ("forward_ess", "forward ESS"),
            ("nll", "NLL"),
            *extra_cols,
            ("energy_w2", "energy W2"),
        ]
        for data in ("unbiased", "biased"):
            per = {m: collect(done, name, data, m) for m in methods_for(data)}
            if not any(per.values()):
                continue
            lines += [
                f"### {cfg['label']}, {data} data",
                "",
                "| N | method | " + " | ".join(c[1] for c in cols) + " | CPU s/run |",
                "|---|---|" + "---|" * (len(cols) + 1),
            ]
            for n in cfg["sizes"]:
                for m in methods_for(data):
                    runs = per[m].get(n, [])
                    if not runs:
                        continue
                    cells = [_fmt(_ci([r["result"]["metrics"][c] for r in runs])) for c, _ in cols]
                    cpu = np.mean([r["result"]["cpu_s"] for r in runs])
                    lines.append(
                        f"| {n} | {m} (n={len(runs)}) | " + " | ".join(cells) + f" | {cpu:.0f} |"
                    )
            lines.append("")
    return lines


def tune_table(done: dict[str, dict[str, Any]]) -> list[str]:
    """Mean reverse ESS over the tuning seeds for every configuration of every method; best in bold."""
    lines = [
        "| method | configuration | reverse ESS (tuning seeds) | NLL (tuning seeds) | seeds |",
        "|---|---|---|---|---|",
    ]
    for method, grid in TUNE_GRID.items():
        rows = []
        for i, over in enumerate(grid):
            runs = collect(done, "gmm40", "unbiased", f"tune:{method}:{i}").get(TUNE_N, [])
            if runs:
                ess = float(np.mean([r["result"]["metrics"]["reverse_ess"] for r in runs]))
                nll = float(np.mean([r["result"]["metrics"]["nll"] for r in runs]))
                rows.append((ess, nll, over, len(runs)))
        best = max((r[0] for r in rows), default=None)
        for ess, nll, over, k in rows:
            mark = "**" if ess == best else ""
            conf = ", ".join(f"{a}={b}" for a, b in over.items())
            lines.append(
                f"| {method} | {mark}{conf}{mark} | {mark}{ess:.3f}{mark} | {nll:.3f} | {k} |"
            )
    return lines


def ablation_table(done: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| data | dispersion | reverse ESS | forward ESS | NLL | abs. log Z error |",
        "|---|---|---|---|---|---|",
    ]
    for data in ("unbiased", "biased"):
        for disp in DISPERSIONS:
            method = "LDR" if disp == "mad" else f"LDR-{disp}"
            runs = collect(done, "gmm40", data, method).get(1000, [])
            if runs:
                cells = [
                    _fmt(_ci([r["result"]["metrics"][c] for r in runs]))
                    for c in ("reverse_ess", "forward_ess", "nll", "log_z_error")
                ]
                lines.append(f"| {data} | {disp} (n={len(runs)}) | " + " | ".join(cells) + " |")
    for data in ("unbiased", "biased"):
        runs = collect(done, "gmm40", data, "ML").get(1000, [])
        if runs:
            cells = [
                _fmt(_ci([r["result"]["metrics"][c] for r in runs]))
                for c in ("reverse_ess", "forward_ess", "nll", "log_z_error")
            ]
            lines.append(
                f"| {data} | (ML, no dispersion) (n={len(runs)}) | " + " | ".join(cells) + " |"
            )
    return lines


def variational_rows(done: dict[str, dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    curves: dict[str, list[list[dict[str, float]]]] = {}
    finals: dict[str, list[dict[str, float]]] = {}
    for r in done.values():
        if r["kind"] == "variational":
            curves.setdefault(r["method"], []).append(r["result"].get("curve", []))
            finals.setdefault(r["method"], []).append(r["result"]["metrics"])
    lines = [
        "| method | reverse ESS | forward ESS | NLL | abs. log Z error | modes | CPU s/run |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in VAR_METHODS:
        if m in finals:
            f = finals[m]
            cells = [
                _fmt(_ci([x[c] for x in f]))
                for c in ("reverse_ess", "forward_ess", "nll", "log_z_error", "modes_covered")
            ]
            cpu = np.mean(
                [
                    r["result"]["cpu_s"]
                    for r in done.values()
                    if r["kind"] == "variational" and r["method"] == m
                ]
            )
            lines.append(f"| {m} (n={len(f)}) | " + " | ".join(cells) + f" | {cpu:.0f} |")
    # evaluations variational LDR needs to reach reverse KL's final ESS (seed-mean checkpoint curves)
    curves = {m: c for m, c in curves.items() if all(c)}  # methods with checkpoints in every seed
    if "variational LDR" in curves and "reverse KL" in curves:
        ev = np.array([c["energy_evals"] for c in curves["variational LDR"][0]], dtype=float)
        ldr = np.mean(
            [[c["reverse_ess"] for c in cur] for cur in curves["variational LDR"]], axis=0
        )
        rkl_final = float(np.mean([f["reverse_ess"] for f in finals["reverse KL"]]))
        n_need = evals_to_reach(ev, ldr, rkl_final)
        if not np.isfinite(n_need):
            when = "never within the budget"
        elif n_need == ev[0]:
            when = (
                f"already at the first checkpoint ({ev[0]:,.0f} evaluations; ratio >= {VAR_BUDGET / n_need:.1f}x, "
                "a lower bound, and both ESS values are at the noise level of a 4,000-sample estimate)"
            )
        else:
            when = f"after {n_need:,.0f} evaluations (ratio {VAR_BUDGET / n_need:.1f}x)"
        lines += [
            "",
            f"Reverse KL's final reverse ESS ({rkl_final:.3f} after {VAR_BUDGET:,} evaluations) is reached by "
            f"variational LDR's seed-mean checkpoint curve {when}.",
        ]
    return lines, curves


def figures(done: dict[str, dict[str, Any]], var_curves: dict[str, Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for name, cfg in TARGETS.items():
        metric2 = "ramachandran_kl" if name == "aldp" else "nll"
        fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), sharex=True)
        any_data = False
        for i, data in enumerate(("unbiased", "biased")):
            for j, metric in enumerate(("reverse_ess", metric2)):
                ax = axes[i, j]
                for m in methods_for(data):
                    per = collect(done, name, data, m)
                    if not per:
                        continue
                    any_data = True
                    ns = np.array(sorted(per))
                    stats = np.array(
                        [_ci([r["result"]["metrics"][metric] for r in per[n]]) for n in ns]
                    )
                    ax.plot(ns, stats[:, 0], "o-", color=COLORS[m], label=m)
                    ax.fill_between(ns, stats[:, 1], stats[:, 2], color=COLORS[m], alpha=0.2)
                ax.set_xscale("log")
                ax.minorticks_off()
                ax.set_xticks(cfg["sizes"], [f"{n:,}" for n in cfg["sizes"]])
                ax.set_title(f"{cfg['label']}, {data} data", fontsize=9)
                ax.set_ylabel(metric.replace("_", " "))
                if i == 1:
                    ax.set_xlabel("N = labelled configurations (energy evaluations)")
        if any_data:
            axes[0, 0].legend(fontsize=8)
            fig.tight_layout()
            path = FIG / f"boltzmann_{name}.png"
            fig.savefig(path, dpi=110)
            made.append(path.name)
        plt.close(fig)
    if var_curves:
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for m, curves in var_curves.items():
            ev = np.array([c["energy_evals"] for c in curves[0]])
            vals = np.array([[c["reverse_ess"] for c in cur] for cur in curves])
            stats = np.array([_ci(vals[:, k]) for k in range(vals.shape[1])])
            ax.plot(ev, stats[:, 0], "o-", color=COLORS[m], label=m)
            ax.fill_between(ev, stats[:, 1], stats[:, 2], color=COLORS[m], alpha=0.2)
        ax.set_xlabel("energy evaluations")
        ax.set_ylabel("reverse ESS")
        ax.set_title("GMM-40, purely variational", fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = FIG / "boltzmann_variational.png"
        fig.savefig(path, dpi=110)
        made.append(path.name)
        plt.close(fig)
    return made


def report(done: dict[str, dict[str, Any]], total_cpu: float) -> None:
    from icml26.benchmarks.runner import git_commit, package_versions

    FIG.mkdir(parents=True, exist_ok=True)
    var_lines, var_curves = variational_rows(done)
    made = figures(done, var_curves)
    raw = sorted(done.values(), key=key)
    (FIG / "boltzmann_raw.json").write_text(json.dumps(raw, indent=0, sort_keys=True))
    pk = package_versions()
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "# Boltzmann generators: LDR vs maximum likelihood and the log-variance loss",
        "",
        f"Generated by `experiments/boltzmann.py` on {dt.date.today().isoformat()} (commit {git_commit()}, "
        f"torch {pk.get('torch')}, openmm {pk.get('openmm')}, {platform.machine()}); "
        f"{len(done)} runs, {total_cpu / 60:.0f} CPU-minutes in all, on a 2-core machine shared with other jobs "
        "(CPU seconds are per run, one thread). Raw results: `docs/results/figures/boltzmann_raw.json`.",
        "",
        *(["draft: generated from uncommitted tree", ""] if dirty else []),
        "## Setup",
        "",
        "Every run is one trial of the benchmark's `run_trial` (`icml26/benchmarks/tasks/boltzmann.py`) with the",
        "task's budget set to N labelled configurations: the env hands the agent N configurations with their",
        "reduced target energies (exact samples for GMM-40 and Many-Well-32, 300 K replica-exchange MD for",
        "alanine dipeptide), the flow trains with a 10% validation split and early stopping (validation objective",
        f"every {EARLY_STOP['eval_every']} updates, patience {EARLY_STOP['patience']} evaluations, best parameters kept) "
        "up to an update cap, and its sampler is scored on 10,000",
        "samples against 10,000 held-out target samples (alanine: an independent replica-exchange run).",
        "",
        "| target | flow (coupling RQS) | update cap x batch | N | biased data |",
        "|---|---|---|---|---|",
        *[
            f"| {cfg['label']} | {cfg['agent']['n_layers']} layers, 2 x {cfg['agent']['hidden']} hidden, "
            f"{cfg['agent']['bins']} bins | {cfg['iters']} x {cfg['agent']['batch_size']} | {cfg['sizes']} | {BIAS[name]} |"
            for name, cfg in TARGETS.items()
        ],
        "",
        "Methods: **ML** (NLL), **LV** (log-variance of log p~ - log q over the data batch, R = data),",
        "**LDR** (NLL + 1.0 x mean absolute deviation around the median of log p~ - log q, same batch; the",
        "MAD was chosen over the variance because its gradient does not scale with the spread of the log-ratio,",
        "which reaches tens of kT on biased alanine data; a pilot with the variance at lambda = 1 put 97% of",
        "alanine samples above the reference energy range, see the ablation below for GMM-40). Adam, lr 1e-3,",
        "cosine decay over the cap, gradient clipping at 10. **ML-reweighted** (biased data only): NLL with",
        "self-normalized importance weights p / p_bias (the biased distributions are known: tempered targets,",
        "widened GMM components). Seeds as listed per entry (n = ...); the pilot runs used seed 100.",
        "Entries: mean [95% BCa bootstrap interval] over seeds (`icml26.stats.mean_ci`).",
        "",
        "## Sample efficiency: evaluations LDR needs to reach the baseline's final ESS",
        "",
        "For each baseline, its mean reverse ESS at the largest N; the N at which LDR's seed-mean curve reaches",
        "it (log-linear interpolation between sizes); ratio = N_max / N_LDR (> 1: LDR needs fewer evaluations).",
        "Intervals: percentile bootstrap over seeds (2000 resamples).",
        "",
        *ratio_table(done),
        "",
        "The same for the held-out NLL (lower is better; N at which LDR's NLL falls to the baseline's NLL at N_max):",
        "",
        *ratio_table(done, "nll"),
        "",
        "## Per-N paired differences (reverse ESS)",
        "",
        "Each seed gives every method the same data set, so differences are paired by seed. With 5 seeds the",
        'smallest attainable two-sided sign-flip p is 0.0625: "not detectable at this n" is a possible verdict.',
        "",
        *paired_table(done),
        "",
        "## Updates chosen by early stopping",
        "",
        *updates_table(done),
        "",
        "## Curves",
        "",
        *[f"![{m}](figures/{m})" for m in made if m != "boltzmann_variational.png"],
        "",
        "## Tables",
        "",
        *data_tables(done),
        "## Tuning on the validation target (same budget for every method)",
        "",
        f"GMM-40, unbiased, N = {TUNE_N}, tuning seeds {TUNE_SEEDS} (disjoint from the reported seeds, so other data and",
        "test sets); 8 configurations per method: LDR sweeps lambda x dispersion, ML and LV sweep learning rate x",
        "batch size. The reported runs above use the fixed configuration of the Setup; a configuration that wins",
        "here by more than the seed spread should replace it.",
        "",
        *tune_table(done),
        "",
        "## Dispersion measures (GMM-40, N = 1000, lambda = 1)",
        "",
        *ablation_table(done),
        "",
        "## Purely variational training (GMM-40, no data)",
        "",
        f"Energy budget {VAR_BUDGET:,} evaluations in batches of 256; reverse KL uses the env's forces; on-policy",
        "LV and variational LDR use energies only; variational LDR adds the MAD of log p~ - log q over a replay",
        "buffer (10,000 past samples with their energies) to the reverse-KL loss and makes 3 extra buffer-only",
        "updates per evaluated batch. FAB (no replay buffer): AIS with 8 MALA levels from q towards p^2 / q, AIS-weighted",
        "NLL (each update costs 9 x 256 evaluations). Reverse ESS on 4,000 samples every "
        f"{VAR_EVERY} batches of 256 evaluations (FAB: every {max(1, VAR_EVERY // 9)} updates).",
        "",
        *var_lines,
        "",
        *(
            ["![variational](figures/boltzmann_variational.png)", ""]
            if "boltzmann_variational.png" in made
            else []
        ),
        "## Reading",
        "",
        "READING_PLACEHOLDER",
        "",
    ]
    text = "\n".join(lines)
    if DOC.exists():
        old = DOC.read_text()
        if "## Reading" in old:  # keep the hand-written reading of the results
            reading = old.split("## Reading", 1)[1].strip()
            if reading and not reading.startswith("READING_PLACEHOLDER"):
                text = text.replace("READING_PLACEHOLDER", reading)
    DOC.write_text(text)
    print(f"wrote {DOC}")


def main(argv: list[str] | None = None) -> None:
    global TARGETS, CACHE, DOC, FIG, VAR_BUDGET, VAR_EVERY
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--only",
        default="",
        help="comma list of parts: gmm40, many_well32, aldp, aldp:biased, "
        "ablation, variational, tune (default: all)",
    )
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: GMM-40 only, tiny flows, 5 sizes, 2 seeds, "
        "a 4,608-evaluation variational budget; writes results/boltzmann/quick.{jsonl,md}, not docs/",
    )
    add_allow_dirty(ap)

    args = ap.parse_args(argv)

    # new numbers and pages come from a committed tree only (--allow-dirty: a draft)

    if not getattr(args, "quick", False):
        provenance(allow_dirty=args.allow_dirty)
    if args.quick:
        out = ROOT / "results" / "boltzmann"
        TARGETS, CACHE, DOC, FIG = (
            QUICK_TARGETS,
            out / "quick.jsonl",
            out / "quick.md",
            out / "quick_figures",
        )
        VAR_BUDGET, VAR_EVERY = 4608, 4
        if args.seeds == ap.get_default("seeds"):
            args.seeds = "0,1"
    seeds = [int(s) for s in args.seeds.split(",")]
    parts = (
        set(args.only.split(","))
        if args.only
        else {*TARGETS, "variational", "tune", *(() if args.quick else ("ablation",))}
    )
    if not args.report_only:
        specs = run_specs(TARGETS, seeds, parts)
        if args.quick:  # tiny flows for the variational part too
            for sp in specs:
                if sp["kind"] == "variational":
                    sp["agent"] = {
                        **sp["agent"],
                        **{
                            k: QUICK_TARGETS["gmm40"]["agent"][k]
                            for k in ("n_layers", "hidden", "bins")
                        },
                    }
        done = execute(specs, args.workers)
    else:
        done = load_cache()
    report(done, sum(r["result"]["cpu_s"] for r in done.values()))


if __name__ == "__main__":
    main()
