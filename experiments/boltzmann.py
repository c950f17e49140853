"""Sample efficiency of LDR against maximum likelihood, ML + reverse KL and reweighted ML ->
docs/results/boltzmann.md.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python experiments/boltzmann.py --workers 2      # everything
    .venv/bin/python experiments/boltzmann.py --only tune                                     # tuning only
    .venv/bin/python experiments/boltzmann.py --quick       # smoke: GMM-40, tiny flows -> results/boltzmann/quick.md
    .venv/bin/python experiments/boltzmann.py --report-only                                   # tables again

Every run goes through the benchmark's own ``run_trial`` (icml26.benchmarks.tasks.boltzmann) with
the task's budget replaced by the configuration's data set size N, so numbers here are numbers the
harness would produce. One command does, in order:

1. Tuning with the same budget for every method (6 configurations x 2 seeds each) on a validation
   target: GMM-40 with other means (``means_seed=1``), N = 500, tuning seeds 100-101. LDR sweeps
   lambda x dispersion, ML and reweighted ML learning rate x weight decay, ML + reverse KL lambda x
   learning rate. The configuration with the best mean reverse ESS is used below.
2. The sample-efficiency protocol on GMM-40 (unbiased and biased data): 5 data set sizes (2x apart),
   5 seeds, every method at every N with a 10% validation split and early stopping (validation
   objective every 25 updates, patience 8, best parameters kept) under an update cap. Metric
   against the energy evaluations spent (N labels; ML + reverse KL also buys N evaluations of
   model samples); per-N paired differences LDR - baseline over seeds (same seed, same data),
   Holm-adjusted over N; the evaluations LDR needs to reach each baseline's value at its largest
   budget, read off LDR's log-linearly interpolated seed-mean curve, with a percentile bootstrap
   over seeds (both methods resampled jointly).
3. Alanine dipeptide (v1 env: decorrelated MD data, a 480-configuration training pool; 5 sizes
   60-480, 5 seeds, ML, ML + reverse KL and LDR), validation every 5 updates with patience 20,
   the learning rate of every method tuned on alanine (3 values x 2 tuning seeds at N = 240, by
   each method's own validation objective); the paired Ramachandran KL next to its noise floor,
   and the MD data's convergence diagnostics (between- against within-run spread of phi > 0).
4. Purely variational training on GMM-40 (3 seeds) and on Many-Well-32 (5 seeds): reverse KL,
   variational LDR and FAB (AIS with MALA towards p^2 / q, no replay buffer); on Many-Well-32
   also FAB with the paper's prioritized replay buffer.

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
BIAS = {"gmm40": "components at T = 2", "aldp": "600 K MD, 300 K labels"}
EARLY_STOP = {"val_fraction": 0.1, "eval_every": 25, "patience": 8}  # every data method, every N
METHODS: dict[str, dict[str, Any]] = {  # defaults; the tuned settings replace them (see TUNE_GRID)
    "ML": {"objective": "ml"},
    "ML+RKL": {"objective": "ml_rkl", "lam": 1.0, "rkl_batch": 64},  # buys N extra evaluations
    "ML-reweighted": {"objective": "ml_reweighted"},
    "LDR": {"objective": "ldr", "dispersion": "mad", "lam": 1.0},
}
BASELINES = ("ML", "ML+RKL", "ML-reweighted")
METHODS_FOR = {"unbiased": ["ML", "ML+RKL", "LDR"], "biased": ["ML", "ML-reweighted", "LDR"]}
# update caps per N (early stopping usually ends sooner; a run that stops at its cap is flagged in
# the page's cap table and keeps the verdict at "undecided"); N <= 1000 keep the earlier 1500 so
# that those runs are the earlier page's (the cosine schedule runs over the cap)
CAPS = {
    125: 1500,
    250: 1500,
    500: 1500,
    1000: 1500,
    2000: 3000,
    4000: 4000,
    8000: 6000,
    16000: 8000,
    32000: 10000,
}
TARGETS: dict[str, dict[str, Any]] = {  # "iters": the update cap per N
    "gmm40": {
        "task": "boltzmann/gmm40",
        "label": "GMM-40",
        "sizes": [125, 250, 500, 1000, 2000, 4000, 8000, 16000, 32000],
        "iters": CAPS,
        "agent": {**FLOW_2D, "batch_size": 256, **EARLY_STOP},
        "data": ("unbiased", "biased"),
        "seeds": 10,
        "methods": None,  # METHODS_FOR
    },
    # Many-Well-32 from exact samples with energies (the FAB paper's 32-D target, 2^16 modes)
    "mw32": {
        "task": "boltzmann/many-well32",
        "label": "Many-Well-32",
        "sizes": [500, 1000, 2000, 4000, 8000, 16000, 32000],
        "iters": {**CAPS, 500: 2000, 1000: 2000},
        "agent": {**FLOW_HD, "batch_size": 256, **EARLY_STOP},
        "data": ("unbiased",),
        "seeds": 10,
        "methods": ["ML", "ML+RKL", "LDR"],
    },
    "aldp": {
        "task": "boltzmann/aldp",
        # v2: the converged MD data (>= 10^4 decorrelated training configurations)
        "env_id": "icml26/BoltzmannAlanineDipeptide-v2",
        "label": "Alanine dipeptide",
        "sizes": [1250, 2500, 5000, 10000],
        "iters": {1250: 2000, 2500: 2000, 5000: 3000, 10000: 4000},
        # validation every 5 updates, patience 20 (100 updates): with few configurations in 60
        # dimensions the flow overfits within tens of updates (measured at N = 400, lr 3e-3:
        # validation NLL worst from update 25 on); the learning rate is tuned on alanine
        "agent": {**FLOW_HD, "batch_size": 128, **EARLY_STOP, "eval_every": 5, "patience": 20},
        "data": ("unbiased",),
        "seeds": 10,
        "methods": ["ML", "ML+RKL", "LDR"],
    },
}


def cap(cfg: dict[str, Any], n: int) -> int:
    """The update cap of a target at data set size ``n``."""
    it = cfg["iters"]
    return int(it[n]) if isinstance(it, dict) else int(it)


QUICK_TARGETS: dict[str, dict[str, Any]] = {
    "gmm40": {
        **TARGETS["gmm40"],
        "sizes": [100, 200, 400, 800, 1600],
        "iters": 100,
        "seeds": 2,
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


def methods_for(name: str, data: str) -> list[str]:
    return list(TARGETS[name]["methods"] or METHODS_FOR[data])


# The same tuning budget for every method (6 configurations x 2 seeds), on a validation target:
# GMM-40 with other means, N = 500, tuning seeds disjoint from the reported ones.
TUNE_TARGET, TUNE_SEEDS, TUNE_N = {"means_seed": 1}, [100, 101], 500
_LR_WD = [{"lr": lr, "weight_decay": wd} for lr in (1e-3, 3e-3) for wd in (0.0, 1e-4, 1e-3)]
TUNE_GRID: dict[str, list[dict[str, Any]]] = {
    "LDR": [{"lam": lam, "dispersion": d} for lam in (0.3, 1.0, 3.0) for d in ("variance", "mad")],
    "ML": _LR_WD,
    "ML+RKL": [{"lam": lam, "lr": lr} for lam in (0.1, 0.3, 1.0) for lr in (1e-3, 3e-3)],
    "ML-reweighted": _LR_WD,  # tuned on biased data
}
# Alanine: the learning rate of every method tuned on alanine itself (GMM-40's choice overfits at
# once), 3 values x 2 tuning seeds per method at N = 240, chosen by each method's own validation
# objective on the held-out 10% of its training data (never the test pool); the other settings
# are GMM-40's choices.
ALDP_TUNE_GRID = [{"lr": lr} for lr in (3e-4, 1e-3, 3e-3)]
ALDP_TUNE_N = 2500
ALDP_PRESET = "converged"  # the data of icml26/BoltzmannAlanineDipeptide-v2
ALDP_METHODS = ("ML", "ML+RKL", "LDR")
VAR_METHODS: dict[str, dict[str, Any]] = {
    "reverse KL": {"objective": "rkl"},
    "variational LDR": {"objective": "ldr_var", "dispersion": "mad", "lam": 1.0, "replay_steps": 3},
    "FAB (no buffer)": {"objective": "fab", "alpha": 2.0, "ais_levels": 8},
}
# Many-Well-32 adds FAB with the paper's prioritized replay buffer (same AIS; 8 replay updates per
# AIS batch, buffer of 250 batches, updates from 8 stored batches on; see FlowConfig)
MW_METHODS: dict[str, dict[str, Any]] = {
    **VAR_METHODS,
    "FAB + buffer": {"objective": "fab", "alpha": 2.0, "ais_levels": 8, "fab_buffer": True},
}
VAR_BUDGET, VAR_EVERY = 32_000, 25  # energy evaluations; checkpoint every 25 batches of 256
VAR_SEEDS = 3  # seeds of the variational section (a secondary result; CPU kept for the protocol)
MW_BUDGET, MW_EVERY, MW_SEEDS = 128_000, 50, 5  # Many-Well-32: checkpoint every 50 batches of 256
VAR_TASKS = {
    "gmm40": ("boltzmann/gmm40-variational", "GMM-40"),
    "many_well32": ("boltzmann/many-well32-variational", "Many-Well-32"),
}
COLORS = {
    "ML": "C0",
    "ML+RKL": "C2",
    "LDR": "C3",
    "ML-reweighted": "C1",
    "reverse KL": "C0",
    "variational LDR": "C3",
    "FAB (no buffer)": "C1",
    "FAB + buffer": "C4",
}


# ----------------------------------------------------------------------------- run specs
def _data_spec(
    name: str, data: str, n: int, method: str, agent: dict[str, Any], seed: int, **extra: Any
) -> dict[str, Any]:
    cfg = TARGETS[name]
    return {
        "kind": "data",
        "target": name,
        "data": data,
        "n": n,
        "method": method,
        "agent": {**cfg["agent"], **agent, "n_iters": cap(cfg, n)},
        "seed": seed,
        **({"env_id": cfg["env_id"]} if "env_id" in cfg else {}),  # v2 alanine data
        **extra,
    }


def tune_specs() -> list[dict[str, Any]]:
    specs = []
    for method, grid in TUNE_GRID.items():
        data = "biased" if method == "ML-reweighted" else "unbiased"
        for i, over in enumerate(grid):
            for s in TUNE_SEEDS:
                specs.append(
                    _data_spec(
                        "gmm40",
                        data,
                        TUNE_N,
                        f"tune:{method}:{i}",
                        {**METHODS[method], **over},
                        s,
                        tune=over,
                        target_kwargs=TUNE_TARGET,
                        **({"energy_evals": TUNE_N} if method == "ML+RKL" else {}),
                    )
                )
    return specs


def chosen_settings(done: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per method: the tuning configuration with the best mean reverse ESS (defaults if untuned)."""
    out = {m: dict(kw) for m, kw in METHODS.items()}
    for method, grid in TUNE_GRID.items():
        data = "biased" if method == "ML-reweighted" else "unbiased"
        scores = []
        for i in range(len(grid)):
            runs = collect(done, "gmm40", data, f"tune:{method}:{i}").get(TUNE_N, [])
            if len(runs) == len(TUNE_SEEDS):
                scores.append((np.mean([r["result"]["metrics"]["reverse_ess"] for r in runs]), i))
        if len(scores) == len(grid):
            out[method] = {**METHODS[method], **grid[max(scores)[1]]}
    return out


def aldp_tune_specs(chosen: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        _data_spec(
            "aldp",
            "unbiased",
            ALDP_TUNE_N,
            f"tune:{method}:{i}",
            {**chosen[method], **over},
            s,
            tune=over,
            **({"energy_evals": ALDP_TUNE_N} if method == "ML+RKL" else {}),
        )
        for method in ALDP_METHODS
        for i, over in enumerate(ALDP_TUNE_GRID)
        for s in TUNE_SEEDS
    ]


def aldp_settings(
    done: dict[str, dict[str, Any]], chosen: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """GMM-40's settings with the learning rate of the alanine tuning (lowest mean validation
    objective over the tuning seeds; GMM-40's learning rate if the tuning is incomplete)."""
    out = {m: dict(kw) for m, kw in chosen.items()}
    for method in ALDP_METHODS:
        scores = []
        for i in range(len(ALDP_TUNE_GRID)):
            runs = collect(done, "aldp", "unbiased", f"tune:{method}:{i}").get(ALDP_TUNE_N, [])
            if len(runs) == len(TUNE_SEEDS):
                scores.append((np.mean([r["result"]["learn"]["val_loss_best"] for r in runs]), i))
        if len(scores) == len(ALDP_TUNE_GRID):
            out[method] = {**chosen[method], **ALDP_TUNE_GRID[min(scores)[1]]}
    return out


def _var_specs(seeds: list[int]) -> list[dict[str, Any]]:
    return [
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
        for method, kw in VAR_METHODS.items()
        for s in seeds[:VAR_SEEDS]
    ]


def _mw_specs(seeds: list[int]) -> list[dict[str, Any]]:
    """Many-Well-32, purely variational (the FAB paper's target): the same methods + FAB's buffer."""
    return [
        {
            "kind": "variational",
            "target": "many_well32",
            "data": "none",
            "n": 0,
            "method": method,
            "agent": {**FLOW_HD, "batch_size": 256, **kw},
            "seed": s,
            "budget": MW_BUDGET,
            "every": max(1, MW_EVERY // (kw.get("ais_levels", 0) + 1)),
        }
        for method, kw in MW_METHODS.items()
        for s in seeds[:MW_SEEDS]
    ]


def run_specs(
    targets: Iterable[str],
    seeds: list[int],
    parts: set[str],
    chosen: dict[str, dict[str, Any]],
    chosen_aldp: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Run order: GMM-40 unbiased, variational, alanine, GMM-40 biased (the order of priority on a
    shared machine); within a block seed-major, so a block stopped early has complete seeds."""
    blocks: dict[str, list[dict[str, Any]]] = {}
    for name in targets:
        cfg = TARGETS[name]
        for data in cfg["data"]:
            if f"{name}:{data}" not in parts and name not in parts:
                continue
            blocks[f"{name}:{data}"] = [
                _data_spec(
                    name,
                    data,
                    n,
                    method,
                    (chosen_aldp or chosen)[method] if name == "aldp" else chosen[method],
                    s,
                    **({"energy_evals": n} if method == "ML+RKL" else {}),
                )
                for s in seeds[: cfg["seeds"]]
                for n in cfg["sizes"]
                for method in methods_for(name, data)
            ]
    if "variational" in parts:
        blocks["variational"] = _var_specs(seeds)
    if "variational" in parts or "many_well32" in parts:
        blocks["many_well32"] = _mw_specs(seeds)
    order = [
        "gmm40:unbiased",
        "variational",
        "gmm40:biased",
        "mw32:unbiased",
        "aldp:unbiased",
        "many_well32",
    ]
    return [
        sp
        for k in sorted(blocks, key=lambda k: order.index(k) if k in order else 9)
        for sp in blocks[k]
    ]


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
        cfg = TARGETS[spec["target"]]
        base = get_task(cfg["task"])
        env_kwargs = {**base.env_kwargs, "data": spec["data"]}
        if "target_kwargs" in spec:  # the validation target of the tuning runs
            env_kwargs["target_kwargs"] = spec["target_kwargs"]
        task = dataclasses.replace(
            base,
            env_id=cfg.get("env_id", base.env_id),
            env_kwargs=env_kwargs,
            budget=Budget(
                dataset_size=spec["n"],
                energy_evals=int(spec.get("energy_evals", 0)),
                updates=spec["agent"]["n_iters"],
            ),
        )
    else:
        base = get_task(VAR_TASKS[spec["target"]][0])
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


def import_runs(path: Path) -> int:
    """Runs of a raw archive that the cache lacks, appended to it; returns how many."""
    done = load_cache()
    new = [r for r in json.loads(path.read_text()) if key(r) not in done]
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with CACHE.open("a") as f:
        for r in new:
            f.write(json.dumps(r) + "\n")
    return len(new)


def make_md(workers: int) -> None:
    """The alanine MD runs of the v2 data (each cached on its own; a re-run resumes)."""
    from icml26.envs.boltzmann import make_target
    from icml26.envs.boltzmann.md import alanine_runs

    target = make_target("aldp", backend="openmm", data_preset=ALDP_PRESET)
    for split in ("train", "test"):
        alanine_runs(target, "unbiased", split, workers=workers)
        target.pool("unbiased", split)  # assembled and cached


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
    return {int(r["seed"]): _metric(r, metric) for r in runs}


def _level(metric: str) -> tuple[float, str]:
    """(sign that makes larger better, label) of a metric."""
    if metric.startswith("ramachandran_kl"):
        return -1.0, "Ramachandran KL (36 x 36)"
    return (-1.0, "NLL") if metric == "nll" else (1.0, "reverse ESS")


def _evals(runs: list[dict[str, Any]]) -> float:
    return float(np.mean([r["result"]["metrics"]["energy_evals"] for r in runs]))


def ratio_rows(
    done: dict[str, dict[str, Any]],
    metric: str = "reverse_ess",
    reps: int = 2000,
    skip: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """E_base(N) / E_LDR for reaching each baseline's value at each of its budgets N.

    E_LDR is read off LDR's seed-mean curve (metric against N) by log-linear interpolation
    between sizes; the interval is a percentile bootstrap over seeds
    (``icml26.stats.bootstrap_ci``), each resample drawing seeds jointly for LDR's curve and the
    baseline's value (the same seed, the same data sets). One row per (target, data, baseline,
    baseline size): the ratio against N is the sample-efficiency curve; its largest-N row is the
    earlier page's single operating point.
    """
    from icml26.stats import bootstrap_ci

    sign, _ = _level(metric)
    out = []
    for name, cfg in TARGETS.items():
        if name in skip or (metric.startswith("ramachandran") and name != "aldp"):
            continue
        for data in cfg["data"]:
            ldr = collect(done, name, data, "LDR")
            if len(ldr) < 2:
                continue
            sizes = np.array(sorted(ldr), dtype=float)
            for base in BASELINES:
                b = collect(done, name, data, base)
                for n_base in sorted(b):
                    if n_base not in ldr:
                        continue
                    e_base = _evals(b[n_base])
                    per_n = [_by_seed(ldr[int(n)], metric) for n in sizes]
                    fin = _by_seed(b[n_base], metric)
                    seeds = sorted(set(fin).intersection(*per_n))
                    if len(seeds) < 2:
                        continue
                    # rows = seeds: LDR's value at every size, then the baseline's value at n_base
                    table = sign * np.array([[p[s] for p in per_n] + [fin[s]] for s in seeds])

                    def ratio(
                        rows: np.ndarray, sizes: np.ndarray = sizes, e: float = e_base
                    ) -> float:
                        m = rows.mean(0)
                        return float(e / evals_to_reach(sizes, m[:-1], m[-1]))  # 0: never reached

                    iv = bootstrap_ci(table, ratio, n_resamples=reps, seed=0)
                    final = float(table[:, -1].mean())
                    n_need = evals_to_reach(sizes, table[:, :-1].mean(0), final)
                    out.append(
                        {
                            "target": cfg["label"],
                            "name": name,
                            "data": data,
                            "baseline": base,
                            "metric": metric,
                            "n_base": int(n_base),
                            "largest": int(n_base) == int(max(b)),
                            "value": sign * final,
                            "e_base": e_base,
                            "n_need": n_need,
                            "lower_bound": bool(n_need == sizes[0]),
                            "ratio": iv.estimate,
                            "low": iv.low,
                            "high": iv.high,
                            "seeds": len(seeds),
                        }
                    )
    return out


def ratio_table(rows: list[dict[str, Any]], metric: str, largest_only: bool = False) -> list[str]:
    _, label = _level(metric)
    lines = [
        f"| target | data | baseline | baseline N | baseline {label} (evaluations) | "
        "evaluations LDR needs | ratio [95% bootstrap] | seeds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["metric"] != metric or (largest_only and not r["largest"]):
            continue
        if not np.isfinite(r["n_need"]):
            need = "not reached"
        else:
            need = f"{r['n_need']:,.0f}" + (
                " (reached at the smallest N: the ratio is a lower bound)"
                if r["lower_bound"]
                else ""
            )
        lines.append(
            f"| {r['target']} | {r['data']} | {r['baseline']} | {r['n_base']:,} | {r['value']:.3f} ({r['e_base']:,.0f}) | "
            f"{need} | {r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}] | {r['seeds']} |"
        )
    return lines


def at_cap(done: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Data runs that stopped at their update cap (within one validation interval of it)."""
    out = []
    for r in done.values():
        if r["kind"] != "data" or r["method"].startswith("tune:") or r["target"] not in TARGETS:
            continue
        le = r["result"].get("learn", {})
        n_cap = int(r["agent"]["n_iters"])
        if le.get("iterations", 0) >= n_cap - int(r["agent"].get("eval_every", 25)):
            out.append(r)
    return out


def cap_table(done: dict[str, dict[str, Any]]) -> list[str]:
    capped = at_cap(done)
    if not capped:
        return [
            "No data run stopped at its update cap: every arm ended by early stopping (its "
            "validation objective stopped improving)."
        ]
    groups: dict[tuple[str, str, str, int], int] = {}
    for r in capped:
        k = (TARGETS[r["target"]]["label"], r["data"], r["method"], int(r["n"]))
        groups[k] = groups.get(k, 0) + 1
    lines = ["| target | data | method | N | runs at the cap | cap |", "|---|---|---|---|---|---|"]
    for (t, d, m, n), k in sorted(groups.items()):
        name = next(nm for nm, c in TARGETS.items() if c["label"] == t)
        lines.append(f"| {t} | {d} | {m} | {n:,} | {k} | {cap(TARGETS[name], n):,} |")
    return lines


def plateau(done: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether the verdict may use words: every ratio on 10 paired seeds and no run at its cap."""
    short = sorted({(r["target"], r["data"]) for r in rows if r["seeds"] < 10})
    capped = at_cap(done)
    reasons = []
    if short:
        reasons.append("fewer than 10 paired seeds on " + ", ".join(f"{t} {d}" for t, d in short))
    if capped:
        reasons.append(f"{len(capped)} run(s) stopped at their update cap (table below)")
    return not reasons, "; ".join(reasons)


def verdict(rows: list[dict[str, Any]], done: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """The paper's "up to one order of magnitude" against the measured ratio curves."""
    if not rows:
        return ["No ratio could be computed."]
    best = max(rows, key=lambda r: r["ratio"])
    tenfold = [r for r in rows if r["high"] >= 10]
    above_ten = [r for r in rows if r["low"] >= 10]
    above_one = [r for r in rows if r["low"] > 1]
    below_one = [r for r in rows if r["high"] < 1]
    ok, why = plateau(done or {}, rows)
    lines = [
        f"Largest measured ratio: {best['ratio']:.2f} [{best['low']:.2f}, {best['high']:.2f}] "
        f"({best['target']}, {best['data']} data, vs {best['baseline']} at N = {best['n_base']:,}, "
        f"{_level(best['metric'])[1]}). {len(above_one)} of {len(rows)} ratios (every target, baseline "
        f"and baseline budget) have a 95% interval above 1 (LDR needs fewer evaluations), "
        f"{len(below_one)} an interval below 1 (LDR needs more); {len(above_ten)} an interval at or "
        f"above 10, and {len(tenfold)} an interval that contains or exceeds 10.",
    ]
    if not ok:
        lines.append(
            'Verdict on "up to 10x": **undecided at this budget** (' + why + "). The ratios above "
            "are measurements, not yet a verdict."
        )
    elif above_ten:
        lines.append(
            'Verdict on "up to 10x": **reproduced** -- a ratio of at least 10 with its whole interval: '
            + "; ".join(
                f"{r['target']} {r['data']} vs {r['baseline']} at N = {r['n_base']:,}"
                for r in above_ten
            )
            + "."
        )
    elif tenfold:
        lines.append(
            'Verdict on "up to 10x": **not reproduced** -- 10 lies inside the interval of '
            + "; ".join(
                f"{r['target']} {r['data']} vs {r['baseline']} at N = {r['n_base']:,}"
                for r in tenfold
            )
            + ", but no interval lies at or above 10."
        )
    else:
        lines.append(
            'Verdict on "up to 10x": **not reproduced** -- no interval reaches 10 on any target, '
            "baseline or budget."
        )
    return lines


def ratio_figure(rows: list[dict[str, Any]]) -> str | None:
    """The ratio against the baseline's data set size, with its interval, per target and baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["target"], r["data"], r["baseline"], r["metric"]), []).append(r)
    if not groups:
        return None
    panels = sorted({(t, d) for t, d, _, _ in groups})
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (t, d) in zip(axes[0], panels):
        for (tt, dd, base, metric), rs in sorted(groups.items()):
            if (tt, dd) != (t, d):
                continue
            # a ratio of 0 (LDR's curve never reaches the value) has no place on a log axis
            rs = sorted((r for r in rs if r["ratio"] > 0), key=lambda r: r["n_base"])
            if not rs:
                continue
            x = [r["n_base"] for r in rs]
            y = [r["ratio"] for r in rs]
            lo = [max(r["ratio"] - r["low"], 0) for r in rs]
            hi = [max(r["high"] - r["ratio"], 0) for r in rs]
            ax.errorbar(
                x,
                y,
                yerr=[lo, hi],
                marker="o",
                ms=3,
                capsize=2,
                label=f"vs {base} ({_level(metric)[1]})",
                color=COLORS.get(base),
            )
        ax.axhline(10, color="k", ls=":", lw=0.8)
        ax.axhline(1, color="k", lw=0.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{t}, {d} data", fontsize=9)
        ax.set_xlabel("baseline's labelled configurations N")
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("evaluations ratio baseline / LDR (> 0 only)")
    fig.tight_layout()
    path = FIG / "boltzmann_ratio_vs_n.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def paired_table(
    done: dict[str, dict[str, Any]], metric: str = "reverse_ess", only: tuple[str, ...] = ()
) -> list[str]:
    """Per-N paired differences LDR - baseline over seeds (``icml26.stats.paired_test``), Holm over N."""
    from icml26.stats import holm, paired_test

    rows = [
        f"| target | data | baseline | N | mean {metric} difference LDR - baseline [95% paired bootstrap] | p | Holm p | pairs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, cfg in TARGETS.items():
        if only and name not in only:
            continue
        for data in cfg["data"]:
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
        for data in cfg["data"]:
            for m in methods_for(name, data):
                per = collect(done, name, data, m)
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


TABLE_COLS = {
    "mw32": [
        ("reverse_ess", "reverse ESS"),
        ("forward_ess", "forward ESS"),
        ("nll", "NLL"),
        ("log_z_error", "abs. log Z error"),
        ("energy_w2", "energy W2"),
    ],
    "gmm40": [
        ("reverse_ess", "reverse ESS"),
        ("forward_ess", "forward ESS"),
        ("nll", "NLL"),
        ("log_z_error", "abs. log Z error"),
        ("modes_covered", "modes"),
        ("energy_w2", "energy W2"),
    ],
    "aldp": [
        ("reverse_ess", "reverse ESS"),
        ("nll", "NLL"),
        ("ramachandran_kl_36_paired", "Rama. KL 36x36"),
        ("ramachandran_kl_36_paired_floor", "its floor"),
        ("ramachandran_kl_100_paired", "Rama. KL 100x100"),
        ("ramachandran_kl_100_paired_floor", "its floor"),
        ("phi_positive", "phi > 0 share"),
        ("energy_w2", "energy W2"),
    ],
}


def _metric(r: dict[str, Any], c: str) -> float:
    res = r["result"]
    return float(res["metrics"].get(c, res.get("diagnostics", {}).get(c, float("nan"))))


def data_tables(done: dict[str, dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for name, cfg in TARGETS.items():
        cols = TABLE_COLS[name]
        for data in cfg["data"]:
            ms = methods_for(name, data)
            per = {m: collect(done, name, data, m) for m in ms}
            if not any(per.values()):
                continue
            lines += [
                f"### {cfg['label']}, {data} data",
                "",
                "| N | method | evaluations | " + " | ".join(c[1] for c in cols) + " | CPU s/run |",
                "|---|---|---|" + "---|" * (len(cols) + 1),
            ]
            for n in cfg["sizes"]:
                for m in ms:
                    runs = per[m].get(n, [])
                    if not runs:
                        continue
                    cells = [_fmt(_ci([_metric(r, c) for r in runs])) for c, _ in cols]
                    cpu = np.mean([r["result"]["cpu_s"] for r in runs])
                    lines.append(
                        f"| {n} | {m} (n={len(runs)}) | {_evals(runs):,.0f} | "
                        + " | ".join(cells)
                        + f" | {cpu:.0f} |"
                    )
            lines.append("")
    return lines


def tune_table(done: dict[str, dict[str, Any]]) -> list[str]:
    """Mean reverse ESS over the tuning seeds for every configuration of every method; best in bold."""
    lines = [
        "| method | data | configuration | reverse ESS (tuning seeds) | NLL (tuning seeds) | seeds |",
        "|---|---|---|---|---|---|",
    ]
    for method, grid in TUNE_GRID.items():
        data = "biased" if method == "ML-reweighted" else "unbiased"
        rows = []
        for i, over in enumerate(grid):
            runs = collect(done, "gmm40", data, f"tune:{method}:{i}").get(TUNE_N, [])
            if runs:
                ess = float(np.mean([r["result"]["metrics"]["reverse_ess"] for r in runs]))
                nll = float(np.mean([r["result"]["metrics"]["nll"] for r in runs]))
                rows.append((ess, nll, over, len(runs)))
        best = max((r[0] for r in rows), default=None)
        for ess, nll, over, k in rows:
            mark = "**" if ess == best else ""
            conf = ", ".join(f"{a}={b}" for a, b in over.items())
            lines.append(
                f"| {method} | {data} | {mark}{conf}{mark} | {mark}{ess:.3f}{mark} | {nll:.3f} | {k} |"
            )
    return lines


def aldp_tune_table(done: dict[str, dict[str, Any]]) -> list[str]:
    """Mean validation objective (and test metrics, for reading only) of the alanine tuning."""
    lines = [
        "| method | learning rate | validation objective (mean over tuning seeds) | chosen update | "
        "NLL | Rama. KL 36x36 | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in ALDP_METHODS:
        rows = []
        for i, over in enumerate(ALDP_TUNE_GRID):
            runs = collect(done, "aldp", "unbiased", f"tune:{method}:{i}").get(ALDP_TUNE_N, [])
            if runs:
                le = [r["result"]["learn"] for r in runs]
                rows.append(
                    (
                        float(np.mean([x["val_loss_best"] for x in le])),
                        float(np.mean([x["best_iteration"] for x in le])),
                        float(np.mean([_metric(r, "nll") for r in runs])),
                        float(np.mean([_metric(r, "ramachandran_kl_36_paired") for r in runs])),
                        over,
                        len(runs),
                    )
                )
        best = min((r[0] for r in rows), default=None)
        for val, it, nll, kl, over, k in rows:
            mark = "**" if val == best else ""
            lines.append(
                f"| {method} | {mark}{over['lr']:g}{mark} | {mark}{val:.2f}{mark} | {it:.0f} | "
                f"{nll:.2f} | {kl:.3f} | {k} |"
            )
    return lines


def _phi_spread(label: str, d: dict[str, Any]) -> str:
    """A table row: between-run SD of the phi > 0 share against each run's own (IAT-based) SE."""
    from icml26.envs.boltzmann.md import phi_share_agreement

    a = phi_share_agreement(d)
    ratio = (
        f"{a['ratio']:.1f}"
        if np.isfinite(a["ratio"])
        else "inf (no run's own estimate has any spread)"
    )
    per = ", ".join(f"{100 * v:.2f}%" for v in a["within_se"])
    return f"| {label} | {100 * a['between_sd']:.2f}% | {per} | {ratio} |"


def md_diagnostics() -> list[str]:
    """Convergence diagnostics of the alanine v1 data (read from the cache; generated if absent)."""
    if "aldp" not in TARGETS:
        return []
    from icml26.envs.boltzmann import make_target
    from icml26.envs.boltzmann.md import pool_cached, pool_diagnostics

    target = make_target("aldp", backend="openmm", data_preset=ALDP_PRESET)
    if not all(pool_cached(target, "unbiased", sp) for sp in ("train", "test")):
        return [f"The `{ALDP_PRESET}` MD pools are not generated yet (`--only md`)."]
    lines = [
        "| pool | runs x ns | thinning stride (frames of 0.1 ps) | configurations kept | "
        "largest IAT per observable (frames) | phi > 0 share per run | mean [between-run SE] |",
        "|---|---|---|---|---|---|---|",
    ]
    curves, spread = [], []
    for kind, split in (("unbiased", "train"), ("unbiased", "test")):
        d = pool_diagnostics(target.pool(kind, split))
        spread.append(_phi_spread(f"{kind} {split}", d))
        iat = ", ".join(f"{k} {v:.0f}" for k, v in d["iat_frames"].items())
        per_run = ", ".join(f"{100 * p:.2f}%" for p in d["phi_positive_per_run"])
        se = d["phi_positive_se"]
        lines.append(
            f"| {kind} {split} | {d['runs']} x {d['ns_per_run']:.2f} | {d['thinning_stride']} | "
            f"{d['frames_kept']:,} | {iat} | {per_run} | {100 * d['phi_positive_mean']:.2f}% "
            f"[{100 * se:.2f}%] |"
        )
        curves += [(f"{split} run {k}", c) for k, c in enumerate(d["phi_positive_curve"])]
    lines += [
        "",
        "Between-run against within-run spread of the phi > 0 share: the within-run standard error of each",
        "run is sqrt(p (1 - p) tau / n) with tau the run's integrated autocorrelation time of the indicator",
        "phi > 0 and n its frames (what the run's own statistics claim); if the runs sampled one converged",
        "distribution, their standard deviation would be about that size (ratio near 1).",
        "",
        "| pool | between-run SD of the share | within-run SE per run (from its IAT) | ratio SD / RMS within-run SE |",
        "|---|---|---|---|",
        *spread,
        "",
        "Running phi > 0 share of each run at 10%, 20%, ..., 100% of its length (a converged "
        "estimate would flatten and agree across runs):",
        "",
        "| run | " + " | ".join(f"{10 * (k + 1)}%" for k in range(10)) + " |",
        "|---|" + "---|" * 10,
        *[f"| {n} | " + " | ".join(f"{100 * v:.2f}" for v in c) + " |" for n, c in curves],
    ]
    return lines


def variational_rows(
    done: dict[str, dict[str, Any]], target: str = "gmm40"
) -> tuple[list[str], dict[str, Any]]:
    """Final metrics of the purely variational runs on ``target`` and the checkpoint curves."""
    budget = MW_BUDGET if target == "many_well32" else VAR_BUDGET
    curves: dict[str, list[list[dict[str, float]]]] = {}
    finals: dict[str, list[dict[str, float]]] = {}
    cpus: dict[str, list[float]] = {}
    for r in done.values():
        if r["kind"] == "variational" and r["target"] == target:
            curves.setdefault(r["method"], []).append(r["result"].get("curve", []))
            finals.setdefault(r["method"], []).append(r["result"]["metrics"])
            cpus.setdefault(r["method"], []).append(r["result"]["cpu_s"])
    cols = [("reverse_ess", "reverse ESS"), ("forward_ess", "forward ESS"), ("nll", "NLL")]
    cols += [("log_z_error", "abs. log Z error")]
    if target == "gmm40":
        cols += [("modes_covered", "modes")]
    lines = [
        "| method | " + " | ".join(c[1] for c in cols) + " | CPU s/run |",
        "|---|" + "---|" * (len(cols) + 1),
    ]
    for m in MW_METHODS if target == "many_well32" else VAR_METHODS:
        if m in finals:
            f = finals[m]
            cells = [_fmt(_ci([x[c] for x in f])) for c, _ in cols]
            lines.append(
                f"| {m} (n={len(f)}) | " + " | ".join(cells) + f" | {np.mean(cpus[m]):.0f} |"
            )
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
                f"already at the first checkpoint ({ev[0]:,.0f} evaluations; ratio >= {budget / n_need:.1f}x, "
                "a lower bound, and both ESS values are at the noise level of a 4,000-sample estimate)"
            )
        else:
            when = f"after {n_need:,.0f} evaluations (ratio {budget / n_need:.1f}x)"
        lines += [
            "",
            f"Reverse KL's final reverse ESS ({rkl_final:.3f} after {budget:,} evaluations) is reached by "
            f"variational LDR's seed-mean checkpoint curve {when}.",
        ]
    return lines, curves


def _var_figure(curves: dict[str, Any], target: str) -> str | None:
    import matplotlib.pyplot as plt

    if not curves:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for m, cur in curves.items():
        k = min(len(c) for c in cur)
        ev = np.array([c["energy_evals"] for c in cur[0][:k]])
        for ax, metric in zip(axes, ("reverse_ess", "nll")):
            vals = np.array([[c[metric] for c in c_[:k]] for c_ in cur])
            stats = np.array([_ci(vals[:, j]) for j in range(k)])
            ax.plot(ev, stats[:, 0], "o-", color=COLORS[m], label=m)
            ax.fill_between(ev, stats[:, 1], stats[:, 2], color=COLORS[m], alpha=0.2)
            ax.set_xlabel("energy evaluations")
            ax.set_ylabel(metric.replace("_", " "))
    axes[0].set_title(f"{VAR_TASKS[target][1]}, purely variational", fontsize=9)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    name = (
        "boltzmann_variational.png" if target == "gmm40" else f"boltzmann_variational_{target}.png"
    )
    fig.savefig(FIG / name, dpi=110)
    plt.close(fig)
    return name


def _curve_panel(
    ax: Any, done: dict[str, dict[str, Any]], name: str, data: str, metric: str
) -> bool:
    drew = False
    floor = []
    for m in methods_for(name, data):
        per = collect(done, name, data, m)
        if not per:
            continue
        drew = True
        ns = sorted(per)
        ev = np.array([_evals(per[n]) for n in ns])
        stats = np.array([_ci([_metric(r, metric) for r in per[n]]) for n in ns])
        ax.plot(ev, stats[:, 0], "o-", color=COLORS[m], label=m)
        ax.fill_between(ev, stats[:, 1], stats[:, 2], color=COLORS[m], alpha=0.2)
        if metric.endswith("_paired"):
            floor += [_metric(r, metric + "_floor") for n in ns for r in per[n]]
    if floor:
        ax.axhline(float(np.mean(floor)), color="k", ls="--", lw=1, label="noise floor")
    ax.set_xscale("log")
    ax.set_title(f"{TARGETS[name]['label']}, {data} data", fontsize=9)
    ax.set_ylabel(metric.replace("_", " "))
    return drew


def figures(done: dict[str, dict[str, Any]], var_curves: dict[str, Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for name, cfg in TARGETS.items():
        metric2 = "ramachandran_kl_36_paired" if name == "aldp" else "nll"
        rows = len(cfg["data"])
        fig, axes = plt.subplots(rows, 2, figsize=(9, 3.3 * rows), squeeze=False)
        any_data = False
        for i, data in enumerate(cfg["data"]):
            for j, metric in enumerate(("reverse_ess", metric2)):
                any_data |= _curve_panel(axes[i, j], done, name, data, metric)
                if i == rows - 1:
                    axes[i, j].set_xlabel("energy evaluations (labelled data + bought)")
        if any_data:
            axes[0, 0].legend(fontsize=8)
            if name == "aldp":
                axes[0, 1].legend(fontsize=8)
            fig.tight_layout()
            path = FIG / f"boltzmann_{name}.png"
            fig.savefig(path, dpi=110)
            made.append(path.name)
        plt.close(fig)
    for target, cur in var_curves.items():
        name = _var_figure(cur, target)
        if name:
            made.append(name)
    return made


def _setup_lines(chosen: dict[str, dict[str, Any]]) -> list[str]:
    def show(m: str) -> str:
        kw = {k: v for k, v in chosen[m].items() if k not in ("objective",)}
        return ", ".join(f"{k}={v}" for k, v in kw.items()) or "defaults"

    return [
        "Every run is one trial of the benchmark's `run_trial` (`icml26/benchmarks/tasks/boltzmann.py`) with the",
        "task's budget set to N labelled configurations: the env hands the agent N configurations with their",
        "reduced target energies (exact samples for GMM-40; decorrelated replica-exchange MD frames for alanine",
        "dipeptide, env `icml26/BoltzmannAlanineDipeptide-v2`), every method holds out 10% of its data for",
        f"validation and early-stops (validation objective every {EARLY_STOP['eval_every']} updates, patience "
        f"{EARLY_STOP['patience']} evaluations, best parameters kept; alanine: every "
        f"{TARGETS.get('aldp', {}).get('agent', {}).get('eval_every', '-')} updates, patience "
        f"{TARGETS.get('aldp', {}).get('agent', {}).get('patience', '-')}) under an update cap, and its sampler is scored",
        "on 10,000 samples against held-out target samples (GMM-40 and Many-Well-32: 10,000 exact samples;",
        "alanine: the test pool of four independent MD runs).",
        "",
        "| target | flow (coupling RQS) | update cap x batch | N | seeds | biased data |",
        "|---|---|---|---|---|---|",
        *[
            f"| {cfg['label']} | {cfg['agent']['n_layers']} layers, 2 x {cfg['agent']['hidden']} hidden, "
            f"{cfg['agent']['bins']} bins | "
            + ", ".join(f"{cap(cfg, n):,}" for n in cfg["sizes"])
            + f" x {cfg['agent']['batch_size']} | {cfg['sizes']} | "
            f"{cfg['seeds']} | {BIAS[name] if 'biased' in cfg['data'] else 'not run'} |"
            for name, cfg in TARGETS.items()
        ],
        "",
        "Methods (settings chosen by the tuning below, the same 6-configuration budget for each; on alanine",
        "the learning rate of every method is re-tuned on alanine, see the tuning section):",
        f"**ML** (NLL; {show('ML')}); **ML+RKL** (NLL on the data + lambda x reverse KL on reparametrized",
        "model samples whose energies and forces are bought from the env, Noé et al. 2019; the energy budget",
        f"equals N, so it spends 2N evaluations in all, and the curves place it at 2N; {show('ML+RKL')});",
        f"**ML-reweighted** (biased data only: NLL with self-normalized weights p / p_bias; {show('ML-reweighted')});",
        f"**LDR** (NLL + lambda x dispersion of log p~ - log q over the same batch; {show('LDR')}). Adam,",
        "cosine decay over the cap, gradient clipping at 10. Entries: mean [95% BCa bootstrap interval] over",
        "seeds (`icml26.stats.mean_ci`).",
    ]


def report(done: dict[str, dict[str, Any]], total_cpu: float, prov: dict[str, Any] | None) -> None:
    from icml26.benchmarks.runner import package_versions
    from icml26.provenance import provenance_lines

    FIG.mkdir(parents=True, exist_ok=True)
    chosen = chosen_settings(done)
    var_lines, gmm_curves = variational_rows(done, "gmm40")
    mw_lines, mw_curves = variational_rows(done, "many_well32")
    made = figures(done, {"gmm40": gmm_curves, "many_well32": mw_curves})
    raw = sorted(done.values(), key=key)
    (FIG / "boltzmann_raw.json").write_text(json.dumps(raw, indent=0, sort_keys=True))
    pk = package_versions()
    rows = (
        ratio_rows(done, "reverse_ess", skip=("aldp",))
        + ratio_rows(done, "nll")
        + ratio_rows(done, "ramachandran_kl_36_paired")
    )
    ratio_fig = ratio_figure([r for r in rows if r["metric"] != "nll" or r["name"] == "aldp"])
    lines = [
        "# Boltzmann generators: LDR vs maximum likelihood, ML + reverse KL and reweighted ML",
        "",
        *([provenance_lines(prov)] if prov is not None else []),
        f"Generated by `experiments/boltzmann.py` on {dt.date.today().isoformat()} (torch {pk.get('torch')}, "
        f"openmm {pk.get('openmm')}, {platform.machine()}); {len(done)} runs, {total_cpu / 60:.0f} CPU-minutes "
        "in all, on a 2-core machine shared with other jobs (CPU seconds are per run, one thread). Raw results: "
        "`docs/results/figures/boltzmann_raw.json`.",
        "",
        "## Setup",
        "",
        *_setup_lines(chosen),
        "",
        '## Verdict on "up to one order of magnitude"',
        "",
        *verdict(rows, done),
        "",
        *([f"![ratio against N](figures/{ratio_fig})", ""] if ratio_fig else []),
        "## Arms at their update cap",
        "",
        *cap_table(done),
        "",
        "## Sample efficiency: evaluations LDR needs to reach each baseline's value",
        "",
        "For each baseline and each of its data set sizes N, its mean value there; the evaluations at which",
        "LDR's seed-mean curve reaches it (log-linear interpolation between sizes); ratio = baseline's",
        "evaluations / LDR's (> 1: LDR needs fewer). Intervals: percentile bootstrap over seeds (2000",
        "resamples, both methods resampled jointly); a ratio of 0 means LDR's curve never reaches the value",
        "within its sizes. The ratio against N is the sample-efficiency curve (figure above).",
        "",
        *ratio_table(rows, "reverse_ess"),
        "",
        "The same for the held-out NLL (lower is better):",
        "",
        *ratio_table(rows, "nll"),
        "",
        "Alanine only: the same for the paired Ramachandran KL at 36 x 36 bins (lower is better; its floor is in",
        "the tables below). Alanine's reverse ESS (0.001-0.003 for every flow, below the ~0.01 resolution of a",
        "10,000-sample estimate) is left out of the ratios and the verdict.",
        "",
        *ratio_table(rows, "ramachandran_kl_36_paired"),
        "",
        "## Per-N paired differences (reverse ESS)",
        "",
        "Each seed gives every method the same data set, so differences are paired by seed; Holm over N",
        "within each comparison. With 10 seeds the smallest two-sided sign-flip p is 0.002 (5 seeds: 0.0625).",
        "",
        *paired_table(done),
        "",
        "Alanine: the same for the held-out NLL and the paired Ramachandran KL (36 x 36), the metrics that",
        "resolve differences there (lower is better: a negative difference favours LDR).",
        "",
        *paired_table(done, "nll", only=("aldp",)),
        "",
        *paired_table(done, "ramachandran_kl_36_paired", only=("aldp",)),
        "",
        "## Updates chosen by early stopping",
        "",
        *updates_table(done),
        "",
        "## Curves",
        "",
        *[f"![{m}](figures/{m})" for m in made if not m.startswith("boltzmann_variational")],
        "",
        "## Tables",
        "",
        "Alanine: the paired Ramachandran KL splits the reference into its two independent MD runs A and B;",
        "the sampler scores KL(A || 6,000 of its samples), the floor is KL(A || B) (same reference part, same",
        "size), so an exact sampler scores about the floor or below (B is correlated MD, the sampler's samples",
        "are independent). Forward ESS is left out of the alanine headline (0 for every flow).",
        "",
        *data_tables(done),
        "## Alanine reference data: convergence",
        "",
        '`data_preset="converged"` (v2 env): independent replica-exchange runs (300, 400, 533, 710, 947 K;',
        "the 300 K replica kept), integrated autocorrelation times (Sokal window, c = 5) of cos/sin phi,",
        "cos/sin psi and the energy per run; training frames thinned by the largest.",
        "",
        *md_diagnostics(),
        "",
        "## Tuning on the validation target (same budget for every method)",
        "",
        f"GMM-40 with means drawn after `torch.manual_seed(1)` (`GMM40(means_seed=1)`), N = {TUNE_N}, tuning seeds",
        f"{TUNE_SEEDS} (so other data and test sets than the reported runs); {len(TUNE_GRID['LDR'])} configurations",
        "per method, chosen by mean reverse ESS; the chosen ones (bold) are used for every reported run.",
        "",
        *tune_table(done),
        "",
        "Alanine: the learning rate of every method tuned on alanine (GMM-40's choice overfits at once),",
        f"{len(ALDP_TUNE_GRID)} values x {len(TUNE_SEEDS)} tuning seeds {TUNE_SEEDS} at N = {ALDP_TUNE_N}, chosen by each",
        "method's own validation objective on the held-out 10% of its training data (the test pool is never",
        "used); the other settings are GMM-40's.",
        "",
        *aldp_tune_table(done),
        "",
        "## Purely variational training (GMM-40, no data)",
        "",
        f"Energy budget {VAR_BUDGET:,} evaluations in batches of 256; reverse KL uses the env's forces;",
        "variational LDR adds the MAD of log p~ - log q over a replay buffer (10,000 past samples with their",
        "energies) to the reverse-KL loss and makes 3 extra buffer-only updates per evaluated batch. FAB (no",
        "replay buffer; Midgley et al. 2023 use HMC and a prioritized buffer): AIS with 8 MALA levels from q",
        "towards p^2 / q, AIS-weighted NLL (each update costs 9 x 256 evaluations). Reverse ESS on 4,000",
        f"samples every {VAR_EVERY} batches of 256 evaluations (FAB: every {max(1, VAR_EVERY // 9)} updates).",
        "",
        *var_lines,
        "",
        *(
            ["![variational](figures/boltzmann_variational.png)", ""]
            if "boltzmann_variational.png" in made
            else []
        ),
        "## Purely variational training (Many-Well-32, no data)",
        "",
        f"The FAB paper's 32-D target (2^16 modes, log Z known). Energy budget {MW_BUDGET:,} evaluations, batches of",
        "256, the same three methods and settings as on GMM-40, flows of 6 layers x 64 hidden x 8 bins; FAB as",
        "above (8 MALA levels, alpha = 2), without and with the paper's prioritized replay buffer",
        "(**FAB + buffer**: every AIS batch with its log weights is stored; from 8 stored batches on, each AIS",
        "batch is followed by 8 gradient steps on buffer batches drawn with probability proportional to the AIS",
        "weight, loss -mean(w_adjust log q), w_adjust = q_old / q_new clipped at 10 and folded back into the",
        "stored weight; buffer of 250 batches. The paper's Many-Well-32 runs use the same 8 replay batches per",
        "AIS batch, but batches of 2048, a buffer of 250 batches with a minimum of 32, HMC transitions and",
        "millions of evaluations). Reverse ESS, forward ESS (10,000 exact samples) and NLL every",
        f"{MW_EVERY} batches (4,000 samples; FAB: every {max(1, MW_EVERY // 9)} AIS batches).",
        "",
        *mw_lines,
        "",
        *(
            ["![many-well](figures/boltzmann_variational_many_well32.png)", ""]
            if "boltzmann_variational_many_well32.png" in made
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
        if (
            "## Reading" in old and "ML+RKL" in old
        ):  # keep the hand-written reading of this protocol
            reading = old.split("## Reading", 1)[1].strip()
            if reading and not reading.startswith("READING_PLACEHOLDER"):
                text = text.replace("READING_PLACEHOLDER", reading)
    DOC.write_text(text)
    print(f"wrote {DOC}")


def main(argv: list[str] | None = None) -> None:
    global TARGETS, CACHE, DOC, FIG, VAR_BUDGET, VAR_EVERY, TUNE_GRID, MW_BUDGET, MW_EVERY, MW_SEEDS
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--only",
        default="",
        help="comma list of parts: gmm40, gmm40:biased, mw32, aldp, md (the alanine MD data only), "
        "variational (GMM-40 and Many-Well-32), many_well32, tune (default: all but md, which aldp "
        "makes first)",
    )
    ap.add_argument("--seeds", default="0,1,2,3,4,5,6,7,8,9")
    ap.add_argument(
        "--seed-cache-from",
        default="",
        help="a raw archive (docs/results/figures/boltzmann_raw.json of an earlier page): its runs "
        "enter the cache where the cache lacks them (same specification = same run)",
    )
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: GMM-40 only, tiny flows, 5 sizes, 2 seeds, 2 tuning configurations, "
        "a 4,608-evaluation variational budget (GMM-40 and Many-Well-32); writes "
        "results/boltzmann/quick.{jsonl,md}, not docs/",
    )
    add_allow_dirty(ap)
    args = ap.parse_args(argv)
    # new numbers and pages come from a committed tree only (--allow-dirty: a draft)
    prov = None if args.quick else provenance(allow_dirty=args.allow_dirty)
    if args.quick:
        out = ROOT / "results" / "boltzmann"
        TARGETS, CACHE, DOC, FIG = (
            QUICK_TARGETS,
            out / "quick.jsonl",
            out / "quick.md",
            out / "quick_figures",
        )
        VAR_BUDGET, VAR_EVERY = 4608, 4
        MW_BUDGET, MW_EVERY, MW_SEEDS = 4608, 4, 2
        TUNE_GRID = {m: g[:2] for m, g in TUNE_GRID.items()}
    seeds = [int(s) for s in args.seeds.split(",")]
    parts = set(args.only.split(",")) if args.only else {*TARGETS, "variational", "tune"}
    if args.seed_cache_from:
        print(f"imported {import_runs(Path(args.seed_cache_from))} runs into {CACHE}")
    if not args.report_only and ("md" in parts or "aldp" in parts) and "aldp" in TARGETS:
        make_md(args.workers)  # before any worker needs the pools
    if parts == {"md"}:
        return
    if args.report_only:
        done = load_cache()
    else:
        done = execute(tune_specs(), args.workers) if "tune" in parts else load_cache()
        chosen = chosen_settings(done)
        if "aldp" in TARGETS and ("tune" in parts or "aldp" in parts):
            done = execute(aldp_tune_specs(chosen), args.workers)
        specs = run_specs(TARGETS, seeds, parts, chosen, aldp_settings(done, chosen))
        if args.quick:  # tiny flows for the variational part too
            for sp in specs:
                if sp["kind"] == "variational":
                    small = {
                        k: QUICK_TARGETS["gmm40"]["agent"][k]
                        for k in ("n_layers", "hidden", "bins")
                    }
                    sp["agent"] = {**sp["agent"], **small}
        done = execute(specs, args.workers)
    report(done, sum(r["result"]["cpu_s"] for r in done.values()), prov)


if __name__ == "__main__":
    main()
