"""Stochastic VI algorithms under bounded and growing variance -> docs/results/minmax_vi.md.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python experiments/minmax_vi.py      # everything (~10 min)
    .venv/bin/python experiments/minmax_vi.py --replicates 5 --allow-dirty      # a quick draft

Parts (all residuals exact, from the true operator; only the oracle noise is random):

* ``curves``: expected residual against oracle calls for every algorithm on five problems
  (bilinear well/ill conditioned, bilinear on a box, the QP Lagrangian on an orthant, the weak
  Minty quadratic game), random-operator noise (variance growing like |z - z*|^2) and, as the
  control, bounded additive noise.
* ``exponent``: oracle calls N(eps) for the replicate-mean residual to reach eps, the fitted
  slope p of log N on log(1/eps) (the paper: O~(eps^-4), i.e. p <= ~4), with a percentile bootstrap
  over replicates.
* ``divergence``: share of diverged replicates against the noise growth sigma1 (Wilson intervals).
* ``rho``: final residual against the weak Minty parameter rho at L = 1.

The unit of replication is an independent oracle-noise stream on a fixed problem instance
(``replicates`` of them, drawn by one seeded generator; :func:`run_direct` runs them as rows of
one array).
"""

from __future__ import annotations

import argparse
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
from icml26.stats import bootstrap_ci, mean_ci, wilson_ci  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results" / "minmax_vi.md"
FIG = ROOT / "docs" / "results" / "figures" / "minmax_vi_curves.png"

PROBLEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "bilinear-well": ("bilinear", {"n": 10, "spectrum": "well", "domain": "free", "seed": 0}),
    "bilinear-ill": ("bilinear", {"n": 10, "spectrum": "ill", "domain": "free", "seed": 0}),
    "bilinear-box": ("bilinear", {"n": 10, "spectrum": "well", "domain": "box", "seed": 0}),
    "lagrangian-qp": ("lagrangian_qp", {"n": 10, "m": 6, "active": 3, "seed": 0}),
    "weak-minty": ("weak_minty_quadratic", {"copies": 5, "rho": -0.1, "lipschitz": 1.0, "seed": 0}),
}
METHODS: dict[str, tuple[str, dict[str, Any]]] = {  # label -> (algorithm, params)
    "FBF, b_k = k+1 (paper i)": ("fbf", {"eta": 0.5, "batch": "linear", "b0": 1.0}),
    "KM-FBF, b_k = k+1 (paper ii*)": ("km_fbf", {"eta": 0.5, "batch": "linear", "b0": 1.0}),
    "Halpern-FBF, b_k = (k+1)^2 (paper iii*)": (
        "halpern_fbf",
        {"eta": 0.5, "batch": "quadratic", "b0": 1.0},
    ),
    "SEG, b_k = k+1": ("seg", {"eta": 0.5, "batch": "linear", "b0": 1.0}),
    "SEG, b = 1": ("seg", {"eta": 0.5, "batch": "constant", "b0": 1.0}),
    "OGDA, b = 1": ("ogda", {"eta": 0.5, "batch": "constant", "b0": 1.0}),
    "SEG+, b = 1": ("seg_plus", {"eta": 0.5, "batch": "constant", "b0": 1.0, "alpha0": 0.5}),
    "SGDA, b = 1": ("sgda", {"eta": 0.5, "batch": "constant", "b0": 1.0}),
}
BATCHED = {k for k, (_, p) in METHODS.items() if p["batch"] != "constant"}
EPS = (0.3, 0.2, 0.1, 0.05, 0.03)
SIGMA0 = 0.1


def _checkpoints(budget: int) -> np.ndarray:
    return np.unique(np.geomspace(100, budget, 60).astype(np.int64))


def run_curves(reps: int, budget: int, budget_unbatched: int, seed: int) -> list[dict[str, Any]]:
    out = []
    for noise, sigma1 in (("operator", 1.0), ("additive", 0.0)):
        for pname, (gen, kw) in PROBLEMS.items():
            if noise == "additive" and pname not in ("bilinear-well", "weak-minty"):
                continue
            prob = make_problem(gen, **kw)
            for label, (alg, params) in METHODS.items():
                b = budget if label in BATCHED else budget_unbatched
                t = time.perf_counter()
                run = run_direct(
                    prob,
                    alg,
                    params,
                    noise=noise,
                    sigma0=SIGMA0,
                    sigma1=sigma1,
                    oracle_budget=b,
                    seed=seed,
                    checkpoints=_checkpoints(b),
                    replicates=reps,
                )
                out.append(
                    {
                        "problem": pname,
                        "noise": noise,
                        "sigma1": sigma1,
                        "method": label,
                        "budget": b,
                        "checkpoints": run.checkpoints.tolist(),
                        "residual": np.where(np.isnan(run.residual), -1.0, run.residual).tolist(),
                        "diverged": run.diverged.tolist(),
                        "start_residual": prob.residual(prob.project(prob.z0)),
                        "seconds": time.perf_counter() - t,
                    }
                )
                print(
                    f"  curves {noise:8s} {pname:14s} {label:40s} diverged {run.diverged.mean():.2f} "
                    f"final {np.nanmean(run.final_residual) if not run.diverged.all() else float('nan'):.3g} "
                    f"({time.perf_counter() - t:.1f}s)",
                    flush=True,
                )
    return out


def run_divergence(reps: int, budget: int, seed: int) -> list[dict[str, Any]]:
    gen, kw = PROBLEMS["bilinear-well"]
    prob = make_problem(gen, **kw)
    out = []
    for sigma1 in (0.0, 0.1, 0.25, 0.5, 1.0, 2.0):
        for label in ("SEG, b = 1", "OGDA, b = 1", "SGDA, b = 1", "FBF, b_k = k+1 (paper i)"):
            alg, params = METHODS[label]
            run = run_direct(
                prob,
                alg,
                params,
                noise="operator",
                sigma0=SIGMA0,
                sigma1=sigma1,
                oracle_budget=budget,
                seed=seed,
                replicates=reps,
            )
            out.append(
                {"sigma1": sigma1, "method": label, "diverged": int(run.diverged.sum()), "n": reps}
            )
            print(
                f"  divergence sigma1={sigma1:<4} {label:28s} {int(run.diverged.sum())}/{reps}",
                flush=True,
            )
    return out


def run_rho(reps: int, budget: int, seed: int) -> list[dict[str, Any]]:
    out = []
    for rho in (-0.05, -0.1, -0.2, -0.3, -0.4, -0.45):
        prob = make_problem("weak_minty_quadratic", copies=5, rho=rho, lipschitz=1.0, seed=0)
        for label in (
            "FBF, b_k = k+1 (paper i)",
            "KM-FBF, b_k = k+1 (paper ii*)",
            "Halpern-FBF, b_k = (k+1)^2 (paper iii*)",
            "SEG, b_k = k+1",
        ):
            alg, params = METHODS[label]
            run = run_direct(
                prob,
                alg,
                params,
                noise="operator",
                sigma0=SIGMA0,
                sigma1=1.0,
                oracle_budget=budget,
                seed=seed,
                replicates=reps,
            )
            out.append(
                {
                    "rho": rho,
                    "method": label,
                    "final": np.where(run.diverged, -1.0, run.final_residual).tolist(),
                    "diverged": int(run.diverged.sum()),
                    "start": prob.residual(prob.z0),
                }
            )
            print(
                f"  rho={rho:<5} {label:40s} diverged {int(run.diverged.sum())} "
                f"median final {np.median(run.final_residual):.3g}",
                flush=True,
            )
    return out


# ----------------------------------------------------------------------------- analysis
def calls_to_eps(checkpoints: np.ndarray, curves: np.ndarray, eps: float) -> float:
    """First checkpoint where the replicate-mean residual is <= eps (inf if never)."""
    mean = curves.mean(axis=0)
    hit = np.nonzero(mean <= eps)[0]
    return float(checkpoints[hit[0]]) if hit.size else math.inf


def slope(checkpoints: np.ndarray, curves: np.ndarray) -> float:
    """Least-squares slope of log N(eps) on log(1/eps) over the eps grid points that are reached
    (nan with fewer than 3)."""
    pts = [
        (math.log(1 / e), math.log(n))
        for e in EPS
        if math.isfinite(n := calls_to_eps(checkpoints, curves, e))
    ]
    if len(pts) < 3:
        return math.nan
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def exponents(curves: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    rows = []
    for c in curves:
        if c["method"] not in BATCHED or c["noise"] != "operator":
            continue
        res = np.asarray(c["residual"])
        if np.any(res < 0):
            rows.append({**_key(c), "p": None, "note": "diverged replicates"})
            continue
        cps = np.asarray(c["checkpoints"])
        n_eps = {e: calls_to_eps(cps, res, e) for e in EPS}
        p = slope(cps, res)
        iv = None
        if math.isfinite(p):
            boot = bootstrap_ci(
                res, lambda r, cps=cps: _finite(slope(cps, r)), seed=seed, n_resamples=1000
            )
            iv = (boot.low, boot.high)
        rows.append({**_key(c), "p": p, "interval": iv, "n_eps": n_eps, "reps": res.shape[0]})
    return rows


def _finite(x: float) -> float:
    return (
        x if math.isfinite(x) else 50.0
    )  # a bootstrap sample that misses the grid: a very steep slope


def _key(c: dict[str, Any]) -> dict[str, Any]:
    return {"problem": c["problem"], "method": c["method"]}


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def render(data: dict[str, Any], prov: dict[str, Any]) -> str:
    reps, seed = data["replicates"], data["seed"]
    lines = [
        "# Stochastic min-max / VI (Alacaoglu and Kim, ICML 2026): results",
        "",
        provenance_lines(prov),
        f"Replicates: {reps} independent oracle-noise streams per cell (one seeded generator, seed {seed}), "
        "on fixed problem instances (instance seed 0). Residuals are exact (`dist(0, F(z) + N_C(z))` with the "
        f"true operator) at the algorithm's current iterate. Noise: random coupling matrix `A + sigma1 G / sqrt(n)` "
        f"with sigma1 = 1 plus additive sigma0 = {SIGMA0} (variance grows like |z - z*|^2); the control is "
        "bounded additive noise (sigma1 = 0). Budgets: "
        f"{data['budget']:,} oracle calls for batched methods, {data['budget_unbatched']:,} for b = 1 methods. "
        "Step sizes eta = 1/(2L) with L computed exactly. `paper ii*` and `paper iii*` use growing batches in "
        "place of the paper's MLMC estimator and variance reduction (their details were not available to us).",
        "",
        "## Final residual and divergence",
        "",
        "Mean final residual over the replicates that did not diverge, with a BCa interval, and the share "
        "of diverged replicates (iterate left |z| < 1e6) with a Wilson interval.",
        "",
    ]
    for noise in ("operator", "additive"):
        cells = [c for c in data["curves"] if c["noise"] == noise]
        probs = list(dict.fromkeys(c["problem"] for c in cells))
        lines += [
            f"### {'growing variance (random operator)' if noise == 'operator' else 'bounded variance (control)'}",
            "",
            "| method | " + " | ".join(probs) + " |",
            "|---|" + "---|" * len(probs),
        ]
        for m in METHODS:
            row = [m]
            for p in probs:
                c = next((c for c in cells if c["problem"] == p and c["method"] == m), None)
                if c is None:
                    row.append("")
                    continue
                res = np.asarray(c["residual"])[:, -1]
                div = int(np.sum(np.asarray(c["diverged"])))
                ok = res[res >= 0]
                txt = "diverged" if ok.size == 0 else _interval_text(mean_ci(ok, seed=seed))
                if div:
                    w = wilson_ci(div, len(res))
                    txt += f"; div {div}/{len(res)} [{w.low:.2f}, {w.high:.2f}]"
                row.append(txt)
            lines.append("| " + " | ".join(row) + " |")
        start = {c["problem"]: c["start_residual"] for c in cells}
        lines += [
            "",
            "Residual at the start: " + ", ".join(f"{k} {v:.3g}" for k, v in start.items()) + ".",
            "",
        ]
    lines += [
        "## Complexity exponent",
        "",
        "N(eps): oracle calls until the replicate-mean residual first drops below eps (60 log-spaced "
        f"checkpoints), eps in {list(EPS)}; p: least-squares slope of log N on log(1/eps) with a percentile "
        "bootstrap over replicates (1000 resamples). The paper's bound is O~(eps^-4): p <= ~4 (worst case).",
        "",
        "| problem | method | p [95% CI] | " + " | ".join(f"N({e})" for e in EPS) + " |",
        "|---|---|---|" + "---|" * len(EPS),
    ]
    for r in data["exponents"]:
        if r["p"] is None:
            lines.append(f"| {r['problem']} | {r['method']} | {r['note']} |" + " |" * len(EPS))
            continue
        ci = f" [{r['interval'][0]:.2f}, {r['interval'][1]:.2f}]" if r.get("interval") else ""
        lines.append(
            f"| {r['problem']} | {r['method']} | {_fmt(r['p'])}{ci} | "
            + " | ".join(
                _fmt(r["n_eps"][e]) if math.isfinite(r["n_eps"][e]) else "not reached" for e in EPS
            )
            + " |"
        )
    lines += [
        "",
        "## Divergence against the variance growth sigma1 (bilinear, well conditioned)",
        "",
        f"{data['budget_unbatched']:,} oracle calls; diverged replicates out of {reps} (Wilson 95% interval).",
        "",
        "| method | "
        + " | ".join(f"sigma1 = {s}" for s in sorted({d["sigma1"] for d in data["divergence"]}))
        + " |",
        "|---|" + "---|" * len({d["sigma1"] for d in data["divergence"]}),
    ]
    for m in dict.fromkeys(d["method"] for d in data["divergence"]):
        cells = [d for d in data["divergence"] if d["method"] == m]
        lines.append(
            f"| {m} | "
            + " | ".join(
                f"{d['diverged']}/{d['n']} [{wilson_ci(d['diverged'], d['n']).low:.2f}, {wilson_ci(d['diverged'], d['n']).high:.2f}]"
                for d in cells
            )
            + " |"
        )
    lines += [
        "",
        "## Nonmonotonicity: the weak Minty parameter rho (L = 1)",
        "",
        f"Median final residual after {data['budget']:,} calls (diverged replicates counted separately); the "
        "literature's tolerated bounds: EG+ rho < 1/(8L) (Diakonikolas convention), CurvatureEG+ 1/(2L), "
        "inexact KM/Halpern 1/L (Alacaoglu-Kim-Wright).",
        "",
        "| method | "
        + " | ".join(f"rho = {r}" for r in sorted({d["rho"] for d in data["rho"]}, reverse=True))
        + " |",
        "|---|" + "---|" * len({d["rho"] for d in data["rho"]}),
    ]
    for m in dict.fromkeys(d["method"] for d in data["rho"]):
        cells = sorted([d for d in data["rho"] if d["method"] == m], key=lambda d: -d["rho"])
        row = []
        for d in cells:
            f = np.asarray(d["final"])
            ok = f[f >= 0]
            txt = _fmt(float(np.median(ok))) if ok.size else "diverged"
            if d["diverged"]:
                txt += f" (div {d['diverged']}/{len(f)})"
            row.append(txt + f" / start {d['start']:.2g}")
        lines.append(f"| {m} | " + " | ".join(row) + " |")
    lines += [
        "",
        "## Verdict",
        "",
        *data.get("verdict", []),
        "",
        f"![residual curves]({FIG.relative_to(PAGE.parent).as_posix()})",
        "",
    ]
    return "\n".join(lines)


def _interval_text(iv: Any) -> str:
    return f"{_fmt(iv.estimate)} [{_fmt(iv.low)}, {_fmt(iv.high)}]"


def verdict(data: dict[str, Any]) -> list[str]:
    """Plain statements computed from the numbers (no hand-written figures)."""
    out = []
    cur = [c for c in data["curves"] if c["noise"] == "operator"]
    div_unb = [c for c in cur if c["method"] in ("SEG, b = 1", "OGDA, b = 1", "SGDA, b = 1")]
    n_div = sum(int(np.sum(c["diverged"])) for c in div_unb)
    n_all = sum(len(c["diverged"]) for c in div_unb)
    fbf = [c for c in cur if c["method"].startswith("FBF")]
    fbf_div = sum(int(np.sum(c["diverged"])) for c in fbf)
    out.append(
        f"- Growing variance breaks the unbatched methods: SEG, OGDA and SGDA with b = 1 diverged in "
        f"{n_div} of {n_all} problem-replicate runs; the paper's minibatch FBF diverged in {fbf_div} of "
        f"{sum(len(c['diverged']) for c in fbf)}."
    )
    ps = [r for r in data["exponents"] if r.get("p") is not None and math.isfinite(r["p"])]
    if ps:
        lo, hi = min(r["p"] for r in ps), max(r["p"] for r in ps)
        worst = max(ps, key=lambda r: r["p"])
        above = [r for r in ps if r["interval"] and r["interval"][0] > 4.5]
        out.append(
            f"- Fitted local exponents p over eps in [{EPS[-1]}, {EPS[0]}] range from {lo:.2f} to {hi:.2f} "
            f"(largest: {worst['method']} on {worst['problem']}). "
            + (
                "None is above the paper's worst case 4 (+0.5 for log factors) with its interval: "
                "consistent with O~(eps^-4); easier instances converge faster, as the bound allows."
                if not above
                else "Above 4.5 with the whole interval: "
                + ", ".join(f"{r['method']} on {r['problem']}" for r in above)
                + ". These are local slopes over one decade of eps with the constants included, so they "
                "are not a contradiction of an asymptotic O~(eps^-4) bound by themselves, but the "
                "worst-case rate is not visible at this budget on those instances."
            )
        )
    tol = {}
    for d in data["rho"]:
        f = np.asarray(d["final"])
        ok = d["diverged"] == 0 and float(np.median(f)) < 0.1 * d["start"]
        if ok:
            tol[d["method"]] = max(tol.get(d["method"], 0.0), -d["rho"])
        else:
            tol.setdefault(d["method"], 0.0)
    if tol:
        out.append(
            "- Largest |rho| (L = 1) at which a method converged (no divergence, median final residual "
            "below 10% of the start): " + ", ".join(f"{m}: {v:g}" for m, v in tol.items()) + "."
        )
    no_reach = [
        r for r in data["exponents"] if r.get("p") is not None and not math.isfinite(r["p"])
    ]
    if no_reach:
        out.append(
            "- Not enough eps levels reached for a slope (budget too small): "
            + ", ".join(f"{r['method']} on {r['problem']}" for r in no_reach)
            + "."
        )
    return out


def figure(data: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    probs = list(PROBLEMS)
    fig, axes = plt.subplots(1, len(probs), figsize=(4 * len(probs), 3.6), sharey=True)
    for ax, p in zip(axes, probs):
        for c in data["curves"]:
            if c["problem"] != p or c["noise"] != "operator":
                continue
            res = np.asarray(c["residual"], dtype=float)
            res[res < 0] = np.nan
            if np.isnan(res).any():  # a method with diverged replicates has no mean curve
                continue
            ax.loglog(c["checkpoints"], res.mean(axis=0), label=c["method"])
        ax.set_title(p)
        ax.set_xlabel("oracle calls")
    axes[0].set_ylabel("mean residual")
    axes[-1].legend(fontsize=6)
    fig.tight_layout()
    FIG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replicates", type=int, default=20)
    ap.add_argument(
        "--budget", type=int, default=1_000_000, help="oracle calls for batched methods"
    )
    ap.add_argument(
        "--budget-unbatched", type=int, default=100_000, help="oracle calls for b = 1 methods"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=str(ROOT / "results" / "minmax_vi.json"))
    add_allow_dirty(ap)
    args = ap.parse_args(argv)
    prov = provenance(allow_dirty=args.allow_dirty)
    t0 = time.perf_counter()
    data: dict[str, Any] = {
        "replicates": args.replicates,
        "seed": args.seed,
        "budget": args.budget,
        "budget_unbatched": args.budget_unbatched,
    }
    print("curves", flush=True)
    data["curves"] = run_curves(args.replicates, args.budget, args.budget_unbatched, args.seed)
    data["exponents"] = exponents(data["curves"], args.seed)
    print("divergence", flush=True)
    data["divergence"] = run_divergence(args.replicates, args.budget_unbatched, args.seed)
    print("rho", flush=True)
    data["rho"] = run_rho(args.replicates, args.budget, args.seed)
    data["verdict"] = verdict(data)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(data))
    figure(data)
    PAGE.write_text(render(data, prov))
    print(f"wrote {PAGE} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
