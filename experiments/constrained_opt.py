"""Hom-PGD+ against exact-map, exact-projection, penalty, ALM and SLSQP -> docs/results/constrained_opt.md.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python experiments/constrained_opt.py            # ~20 min
    .venv/bin/python experiments/constrained_opt.py --instances 2 --allow-dirty             # a draft

The unit of replication is a problem instance (``--instances`` generator seeds per problem);
every method solves the same instances from the same anchor ``x0`` with the same iteration
limit, one after another in one process (times are comparable within an instance). Per instance
and method: final relative gap to the cached best-known solution, max violation, wall time
(Hom-PGD+ with and without its per-instance INN training), time to reach fixed gaps and time to
reach each baseline's own final objective; for Hom-PGD+ the held-out eps_inn (share of infeasible
images of latent samples, their max violation) and how often the bisected projection triggers.
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

from icml26.agents.constrained_opt.solvers import FEAS_TOL, Trace, run  # noqa: E402
from icml26.envs.constrained_opt.problems import best_known, make_problem, rel_gap  # noqa: E402
from icml26.provenance import add_allow_dirty, provenance, provenance_lines  # noqa: E402
from icml26.stats import bootstrap_ci, holm, mean_ci, paired_test, wilson_ci  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results" / "constrained_opt.md"

PROBLEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "qcqp-10x10": ("qcqp", {"n": 10, "m": 10}),
    "qcqp-10x100": ("qcqp", {"n": 10, "m": 100}),
    "qcqp-30x30": ("qcqp", {"n": 30, "m": 30}),
    "star-10": ("star", {"n": 10}),
    "jcc-opf-case30": ("jcc_opf", {"case": "case30"}),
    "attack-digits-l2": ("attack", {"p": 2.0, "eps": 0.06}),
}
METHODS = ("hom_pgd_plus", "hom_pgd_gauge", "pgd_exact", "penalty", "alm", "slsqp")
LABEL = {
    "hom_pgd_plus": "Hom-PGD+ (INN + BP)",
    "hom_pgd_gauge": "Hom-PGD (exact gauge map)",
    "pgd_exact": "PGD, exact projection (SLSQP)",
    "penalty": "Penalty GD",
    "alm": "Augmented Lagrangian GD",
    "slsqp": "SLSQP",
}
BASELINES = ("pgd_exact", "slsqp", "penalty", "alm")
GAPS = (0.1, 0.01)
NOTES = [
    "",
    "Notes (reading the tables, not computed):",
    "",
    "- In ball coordinates, h = f o psi inherits every kink of the radial function: where the active "
    "constraint along the ray switches (box faces, DC-OPF line limits, several QCQP constraints meeting) "
    "h is not differentiable, although the set itself may be convex (the attack set). The paper's rate "
    "assumes an L_H-smooth h; projected gradient steps with a line search stall at such kinks, while PGD "
    "with an exact Euclidean projection in x does not. Where the best solutions sit on such corners "
    "(the attack, most QCQPs), ball-coordinate methods end at worse points.",
    "- Our INN is trained per instance for a few hundred steps (the paper trains 10,000 steps once for a "
    "parametric family); the coverage column shows how much of K the learned map reaches, and the sweep "
    "shows what longer training buys. Times 'without training' are the fully amortized limit.",
    "- All best-known solutions are verified feasible (max violation <= 1e-7) and are at least as good as "
    "200 random feasible points (tests/constrained_opt); a method's negative gap means it beat the reference.",
]


def _first_time(tr: Trace, prob: Any, thr: float, offset: float = 0.0) -> float:
    for t, x in zip(tr.times, tr.xs):
        if prob.violation(x) <= FEAS_TOL and prob.f(x) <= thr:
            return max(t - offset, 1e-9)
    return math.inf


def solve_instance(pname: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    gen, kw = PROBLEMS[pname]
    prob = make_problem(gen, **kw, seed=seed)
    xb, fb = best_known(prob)
    out: dict[str, Any] = {"problem": pname, "seed": seed, "f_best": fb, "methods": {}}
    traces: dict[str, Trace] = {}
    for m in METHODS:
        params: dict[str, Any] = {"iters": args.iters}
        if m == "hom_pgd_plus":
            params.update(train_iters=args.train_iters, seed=seed)
        tr = run(m, prob, params, max_seconds=args.max_seconds)
        traces[m] = tr
        x = tr.x
        setup = float(tr.info.get("setup_time", 0.0))
        rec = {
            "gap": rel_gap(prob.f(x), fb),
            "violation": prob.violation(x),
            "time": tr.times[-1],
            "time_online": tr.times[-1] - setup,
            "iters": len(tr.xs),
            "time_to_gap": {
                str(g): _first_time(tr, prob, fb + g * max(abs(fb), 1e-8)) for g in GAPS
            },
            "time_to_gap_online": {
                str(g): _first_time(tr, prob, fb + g * max(abs(fb), 1e-8), setup) for g in GAPS
            },
        }
        if m == "hom_pgd_plus":
            rec.update(
                train_time=float(tr.info.get("train_time", 0.0)),
                setup_time=setup,
                eps_inn=tr.info.get("eps_inn", {}),
                bp_rate=tr.info.get("bp_triggered", 0) / max(tr.info.get("bp_calls", 0), 1),
                anchor_feasible=bool(tr.info.get("anchor_feasible", False)),
            )
        out["methods"][m] = rec
    # time to each baseline's own final objective (feasible final points only)
    hp, hg = traces["hom_pgd_plus"], traces["hom_pgd_gauge"]
    setup = out["methods"]["hom_pgd_plus"]["setup_time"]
    match: dict[str, Any] = {}
    for b in BASELINES:
        tb = traces[b]
        fbase = prob.f(tb.x)
        if prob.violation(tb.x) > FEAS_TOL:
            match[b] = None
            continue
        thr = fbase + 1e-6 * max(abs(fbase), 1e-8)
        match[b] = {
            "t_base": _first_time(tb, prob, thr),
            "t_hom": _first_time(hp, prob, thr),
            "t_hom_online": _first_time(hp, prob, thr, setup),
            "t_gauge": _first_time(hg, prob, thr),
        }
    out["match"] = match
    return out


SWEEP_PROBLEMS = ("qcqp-10x10", "star-10")
SWEEP_ITERS = (100, 400, 1600)


def inn_sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    """eps_inn and the final gap of Hom-PGD+ against the INN's training length."""
    rows = []
    for pname in SWEEP_PROBLEMS:
        gen, kw = PROBLEMS[pname]
        for seed in range(args.instances):
            prob = make_problem(gen, **kw, seed=seed)
            _, fb = best_known(prob)
            for it in SWEEP_ITERS:
                tr = run(
                    "hom_pgd_plus", prob, {"iters": args.iters, "train_iters": it, "seed": seed}
                )
                rows.append(
                    {
                        "problem": pname,
                        "seed": seed,
                        "train_iters": it,
                        "gap": rel_gap(prob.f(tr.x), fb),
                        "train_time": float(tr.info.get("train_time", 0.0)),
                        **{k: float(v) for k, v in tr.info.get("eps_inn", {}).items()},
                    }
                )
    return rows


def sweep_table(data: dict[str, Any]) -> list[str]:
    rows = data.get("sweep", [])
    if not rows:
        return []
    lines = [
        "| problem | INN training steps | training s, median | infeasible share, mean | coverage of K, mean [95% CI] | final gap, mean [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    for p in SWEEP_PROBLEMS:
        for it in SWEEP_ITERS:
            rs = [r for r in rows if r["problem"] == p and r["train_iters"] == it]
            if not rs:
                continue
            cov = np.array([r["coverage"] for r in rs])
            gap = np.array([r["gap"] for r in rs])
            cov_txt = _iv(mean_ci(cov, seed=data["seed"])) if np.ptp(cov) > 0 else f"{cov[0]:.3g}"
            gap_txt = _iv(mean_ci(gap, seed=data["seed"])) if np.ptp(gap) > 0 else f"{gap[0]:.3g}"
            lines.append(
                f"| {p} | {it} | {np.median([r['train_time'] for r in rs]):.3g} | "
                f"{np.mean([r['infeasible_share'] for r in rs]):.3f} | {cov_txt} | {gap_txt} |"
            )
    return lines


# =================================================================================== summary
def _iv(x: Any, digits: int = 3) -> str:
    return f"{x.estimate:.{digits}g} [{x.low:.{digits}g}, {x.high:.{digits}g}]"


def _cells(data: dict[str, Any], pname: str) -> list[dict[str, Any]]:
    return [r for r in data["runs"] if r["problem"] == pname]


def quality_table(data: dict[str, Any]) -> list[str]:
    seed = data["seed"]
    lines = [
        "| problem | method | final gap, mean [95% CI] | median gap | feasible (<= 1e-5) [Wilson] | wall s, median | iterations, median | ms per iteration, median |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in PROBLEMS:
        runs = _cells(data, p)
        if not runs:
            continue
        for m in METHODS:
            recs = [r["methods"][m] for r in runs]
            gaps = np.array([r["gap"] for r in recs])
            feas = sum(r["violation"] <= FEAS_TOL for r in recs)
            w = wilson_ci(feas, len(recs))
            gap_txt = _iv(mean_ci(gaps, seed=seed)) if np.ptp(gaps) > 0 else f"{gaps[0]:.3g}"
            t = np.median([r["time"] for r in recs])
            if m == "hom_pgd_plus":
                t_on = np.median([r["time_online"] for r in recs])
                t_txt = f"{t:.3g} ({t_on:.3g} without training)"
            else:
                t_txt = f"{t:.3g}"
            lines.append(
                f"| {p} | {LABEL[m]} | {gap_txt} | {np.median(gaps):.3g} | {feas}/{len(recs)} "
                f"[{w.low:.2f}, {w.high:.2f}] | {t_txt} | {np.median([r['iters'] for r in recs]):.0f} | "
                f"{1e3 * np.median([r['time_online'] / r['iters'] for r in recs]):.3g} |"
            )
    return lines


def quality_tests(data: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """Paired tests of the final gap, Hom-PGD+ minus each other method, Holm over all cells."""
    rows = []
    for p in PROBLEMS:
        runs = _cells(data, p)
        if len(runs) < 2:
            continue
        a = np.array([r["methods"]["hom_pgd_plus"]["gap"] for r in runs])
        for m in METHODS[1:]:
            b = np.array([r["methods"][m]["gap"] for r in runs])
            res = paired_test(a, b, seed=data["seed"])
            rows.append(
                {
                    "problem": p,
                    "vs": m,
                    "diff": res.diff,
                    "low": res.low,
                    "high": res.high,
                    "p": res.p_value,
                    "n": res.n,
                }
            )
    if rows:
        adj = holm([r["p"] for r in rows])
        for r, q in zip(rows, adj):
            r["p_holm"] = float(q)
    lines = [
        "| problem | Hom-PGD+ minus | mean gap difference [95% CI] | p (sign-flip) | p (Holm) | n |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['problem']} | {LABEL[r['vs']]} | {r['diff']:.3g} [{r['low']:.3g}, {r['high']:.3g}] | "
            f"{r['p']:.3g} | {r['p_holm']:.3g} | {r['n']} |"
        )
    return lines, rows


def _speedups(pairs: list[tuple[float, float]]) -> np.ndarray:
    """T_base / T_hom per instance; 0 when Hom-PGD+ never reaches the baseline's value."""
    return np.array(
        [(tb / th if math.isfinite(th) else 0.0) for tb, th in pairs if math.isfinite(tb)]
    )


def speedup_table(data: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    seed = data["seed"]
    lines = [
        "| problem | baseline | instances | Hom-PGD+ reaches its value [Wilson] | speedup incl. training, median [95% CI] | speedup without training, median [95% CI] | exact gauge map: reaches / speedup, median [95% CI] |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = []
    for p in PROBLEMS:
        runs = _cells(data, p)
        if not runs:
            continue
        for b in BASELINES:
            ms = [r["match"][b] for r in runs if r["match"].get(b)]
            if not ms:
                lines.append(f"| {p} | {LABEL[b]} | 0 (no feasible final point) | | | | |")
                continue
            reach = sum(math.isfinite(m["t_hom"]) for m in ms)
            w = wilson_ci(reach, len(ms))
            s_all = _speedups([(m["t_base"], m["t_hom"]) for m in ms])
            s_on = _speedups([(m["t_base"], m["t_hom_online"]) for m in ms])
            s_g = _speedups([(m["t_base"], m["t_gauge"]) for m in ms])
            reach_g = sum(math.isfinite(m["t_gauge"]) for m in ms)
            cells = []
            for s in (s_all, s_on, s_g):
                if len(s) >= 2 and np.ptp(s) > 0:
                    iv = bootstrap_ci(s, np.median, seed=seed, n_resamples=2000)
                    cells.append(f"{float(np.median(s)):.3g} [{iv.low:.3g}, {iv.high:.3g}]")
                else:
                    cells.append(f"{float(np.median(s)) if len(s) else math.nan:.3g}")
            rows.append(
                {
                    "problem": p,
                    "baseline": b,
                    "median_all": float(np.median(s_all)),
                    "median_online": float(np.median(s_on)),
                    "median_gauge": float(np.median(s_g)),
                    "reach": reach,
                    "reach_gauge": reach_g,
                    "n": len(ms),
                }
            )
            lines.append(
                f"| {p} | {LABEL[b]} | {len(ms)} | {reach}/{len(ms)} [{w.low:.2f}, {w.high:.2f}] | {cells[0]} | "
                f"{cells[1]} | {reach_g}/{len(ms)}; {cells[2]} |"
            )
    return lines, rows


def gap_time_table(data: dict[str, Any]) -> list[str]:
    lines = [
        "| problem | method | "
        + " | ".join(f"reached gap {g} [Wilson] | median s to gap {g}" for g in GAPS)
        + " |",
        "|---|---|" + "---|---|" * len(GAPS),
    ]
    for p in PROBLEMS:
        runs = _cells(data, p)
        if not runs:
            continue
        for m in ("hom_pgd_plus", "hom_pgd_gauge", "pgd_exact", "slsqp"):
            cells = []
            for g in GAPS:
                key = "time_to_gap_online" if m == "hom_pgd_plus" else "time_to_gap"
                ts = np.array([r["methods"][m][key][str(g)] for r in runs])
                k = int(np.isfinite(ts).sum())
                w = wilson_ci(k, len(ts))
                med = float(np.median(ts[np.isfinite(ts)])) if k else math.nan
                cells.append(f"{k}/{len(ts)} [{w.low:.2f}, {w.high:.2f}] | {med:.3g}")
            lines.append(f"| {p} | {LABEL[m]} | " + " | ".join(cells) + " |")
    return lines


def inn_table(data: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    from scipy.stats import spearmanr

    lines = [
        "| problem | INN training s, median | held-out infeasible share (eps_inn), mean | max violation, median | coverage of K, mean | BP triggered, mean share of steps | gap Hom-PGD+ minus gauge, mean [95% CI] |",
        "|---|---|---|---|---|---|---|",
    ]
    xs, ys = [], []
    for p in PROBLEMS:
        runs = _cells(data, p)
        if not runs:
            continue
        h = [r["methods"]["hom_pgd_plus"] for r in runs]
        gdiff = np.array(
            [
                r["methods"]["hom_pgd_plus"]["gap"] - r["methods"]["hom_pgd_gauge"]["gap"]
                for r in runs
            ]
        )
        share = np.array([x["eps_inn"].get("infeasible_share", math.nan) for x in h])
        xs += list(share)
        ys += list(gdiff)
        iv = _iv(mean_ci(gdiff, seed=data["seed"])) if np.ptp(gdiff) > 0 else f"{gdiff[0]:.3g}"
        lines.append(
            f"| {p} | {np.median([x['train_time'] for x in h]):.3g} | {np.mean(share):.3f} | "
            f"{np.median([x['eps_inn'].get('max_violation', math.nan) for x in h]):.3g} | "
            f"{np.mean([x['eps_inn'].get('coverage', math.nan) for x in h]):.3f} | "
            f"{np.mean([x['bp_rate'] for x in h]):.2f} | {iv} |"
        )
    rho = spearmanr(xs, ys) if len(xs) > 3 else None
    stat = (
        {"spearman": float(rho.statistic), "p": float(rho.pvalue), "n": len(xs)}
        if rho is not None
        else {}
    )
    return lines, stat


def verdict(
    data: dict[str, Any],
    qrows: list[dict[str, Any]],
    srows: list[dict[str, Any]],
    corr: dict[str, Any],
) -> list[str]:
    out = []
    best = [r for r in srows if r["baseline"] in ("pgd_exact", "slsqp")]
    if best:
        top = max(best, key=lambda r: r["median_online"])
        n10 = sum(r["median_online"] >= 10 for r in best)
        n1 = sum(r["median_online"] > 1 for r in best)
        out.append(
            f"- Speed: against the exact-projection PGD and SLSQP rows, Hom-PGD+ (time to the baseline's own "
            f"final objective, INN training excluded, i.e. fully amortized) has median speedup > 1 in {n1} of "
            f"{len(best)} problem-baseline cells and >= 10x in {n10}; the largest median is {top['median_online']:.3g}x "
            f"({top['problem']}, vs {LABEL[top['baseline']]}). With the per-instance training counted, the "
            f"largest median is {max(r['median_all'] for r in best):.3g}x. A speedup of 0 means Hom-PGD+ never "
            "reached the baseline's objective."
        )
    if best:
        g1 = sum(r["median_gauge"] > 1 for r in best)
        topg = max(best, key=lambda r: r["median_gauge"])
        out.append(
            f"- The exact gauge map (no learning; the ceiling INN training aims for) has median speedup > 1 "
            f"in {g1} of {len(best)} of the same cells (largest {topg['median_gauge']:.3g}x: {topg['problem']}, "
            f"vs {LABEL[topg['baseline']]}); it reached the baseline's objective in "
            f"{sum(r['reach_gauge'] for r in best)} of {sum(r['n'] for r in best)} instance-baseline pairs "
            f"(Hom-PGD+: {sum(r['reach'] for r in best)})."
        )
    per_it = {}
    for p in ("qcqp-10x10", "qcqp-10x100"):
        runs = _cells(data, p)
        if runs:
            per_it[p] = {
                m: float(
                    np.median(
                        [r["methods"][m]["time_online"] / r["methods"][m]["iters"] for r in runs]
                    )
                )
                for m in ("pgd_exact", "hom_pgd_gauge", "hom_pgd_plus")
            }
    if len(per_it) == 2:
        a, b = per_it["qcqp-10x10"], per_it["qcqp-10x100"]
        out.append(
            "- Per-iteration cost against m (QCQP n = 10, m = 10 -> 100, medians): exact-projection PGD "
            f"{1e3 * a['pgd_exact']:.3g} -> {1e3 * b['pgd_exact']:.3g} ms ({b['pgd_exact'] / a['pgd_exact']:.2g}x), "
            f"exact gauge map {1e3 * a['hom_pgd_gauge']:.3g} -> {1e3 * b['hom_pgd_gauge']:.3g} ms "
            f"({b['hom_pgd_gauge'] / a['hom_pgd_gauge']:.2g}x), Hom-PGD+ (INN forward/VJP + bisection) "
            f"{1e3 * a['hom_pgd_plus']:.3g} -> {1e3 * b['hom_pgd_plus']:.3g} ms "
            f"({b['hom_pgd_plus'] / a['hom_pgd_plus']:.2g}x). This is the mechanism behind the paper's speed claim "
            "(cheap ball projections); whether it pays off in time to solution is the table above."
        )
    worse = [r for r in qrows if r["p_holm"] < 0.05 and r["diff"] > 0]
    better = [r for r in qrows if r["p_holm"] < 0.05 and r["diff"] < 0]
    sweep_cells = []
    for p in PROBLEMS:
        runs = _cells(data, p)
        for m in METHODS[1:]:
            if len(runs) < 2:
                continue
            d = [r["methods"]["hom_pgd_plus"]["gap"] - r["methods"][m]["gap"] for r in runs]
            sweep_cells.append((p, m, sum(x > 0 for x in d), len(d)))
    all_worse = [c for c in sweep_cells if c[2] == c[3]]
    if sweep_cells:
        out.append(
            f"- Sign counts (descriptive): Hom-PGD+ ended with the larger gap on every instance in "
            f"{len(all_worse)} of {len(sweep_cells)} problem-method cells ("
            + ", ".join(sorted({c[0] for c in all_worse}))
            + "). With n = 10 pairs the smallest two-sided sign-flip p is 2/2^10 = 0.002, so Holm over "
            f"{len(sweep_cells)} tests cannot go below {len(sweep_cells) * 2 / 2**10:.3g}: the corrected "
            "test below is underpowered by design (a design flaw of this page, not evidence of parity)."
        )
    out.append(
        f"- Solution quality (final gap, paired over instances, Holm over {len(qrows)} tests): Hom-PGD+ is "
        f"significantly worse in {len(worse)} cells"
        + (
            " (" + ", ".join(f"{r['problem']} vs {LABEL[r['vs']]}" for r in worse) + ")"
            if worse
            else ""
        )
        + f" and significantly better in {len(better)}"
        + (
            " (" + ", ".join(f"{r['problem']} vs {LABEL[r['vs']]}" for r in better) + ")"
            if better
            else ""
        )
        + "; the rest are not detectable at this n."
    )
    if corr:
        out.append(
            f"- eps_inn and the gap: Spearman correlation between the held-out infeasible share of the INN "
            f"and the gap excess over the exact gauge map is {corr['spearman']:.2f} (p = {corr['p']:.2g}, "
            f"n = {corr['n']} instances)."
        )
    return out


def render(data: dict[str, Any], prov: dict[str, Any]) -> str:
    qlines, qrows = quality_tests(data)
    slines, srows = speedup_table(data)
    ilines, corr = inn_table(data)
    v = verdict(data, qrows, srows, corr)
    return "\n".join(
        [
            "# Hom-PGD+ (Liu, Liang and Chen, ICML 2026): results",
            "",
            provenance_lines(prov),
            f"Command: `{data['command']}`. Wall time of the run: {data['elapsed']:.0f} s (2 shared CPU cores, "
            "OMP_NUM_THREADS=1, other jobs running: absolute times are noisy, ratios within an instance less so).",
            "",
            f"Unit of replication: a problem instance (generator seeds 0..{data['instances'] - 1}, "
            f"{data['instances']} per problem). Every method starts at the instance's anchor x0 with the "
            f"same iteration limit ({data['iters']}) and a {data['max_seconds']:.0f} s cap; Hom-PGD+ trains its "
            f"INN on each instance ({data['train_iters']} Adam steps, 4 coupling layers, hidden 64), which the "
            "paper amortizes over a parametric family by conditioning: we report times with and without that "
            "training. Gap = (f - f_best) / |f_best| against the cached best-known solution (multi-start SLSQP, "
            "20 starts; exact enumeration of scenario subsets for the DC-OPF); a negative gap means the method "
            "beat it. Intervals: BCa bootstrap of the mean (gaps), percentile bootstrap of the median "
            "(speedups), Wilson (rates); paired tests are sign-flip permutation tests with Holm's correction.",
            "",
            "Deviations from the paper: per-instance INN (no conditioning), small CPU instances, IEEE case30 "
            "(pypower) instead of PGLib, digits MLP instead of CIFAR-10, SLSQP as the solver row (no IPOPT/Gurobi "
            "here), one monotone accept/reject step rule shared by all gradient methods.",
            "",
            "## Solution quality",
            "",
            *quality_table(data),
            "",
            "Paired final-gap differences (negative: Hom-PGD+ better):",
            "",
            *qlines,
            "",
            "## Speed",
            "",
            "Time for Hom-PGD+ to reach each baseline's own final objective (the baseline's time to its final "
            "value over Hom-PGD+'s time to reach it; 0 when it never does), per instance; baselines with an "
            "infeasible final point are skipped.",
            "",
            *slines,
            "",
            "Time to fixed gaps (Hom-PGD+: without training):",
            "",
            *gap_time_table(data),
            "",
            "## INN approximation error (eps_inn) and its cost",
            "",
            "Held-out: 2,000 latent points uniform in the ball; infeasible share = fraction whose image violates a "
            "constraint by more than 1e-5; coverage = share of 2,000 points of K (x0 + r^(1/n) rho(u) u) whose INN "
            "preimage lies in the ball. Gap excess = Hom-PGD+ final gap minus the exact gauge map's.",
            "",
            *ilines,
            "",
            *(
                [
                    "Training length against map quality and the final gap (same instances; the rest of "
                    "the table above uses the default length):",
                    "",
                    *sweep_table(data),
                    "",
                ]
                if data.get("sweep")
                else []
            ),
            "## Verdict",
            "",
            *v,
            *NOTES,
            "",
        ]
    )


def compose(earlier: str, prov: dict[str, Any], args: argparse.Namespace) -> str:
    """The page: the amortized family study (when its store or archive is given) above the
    earlier small-instance study, with the README summary block."""
    if not (args.family_store or args.family_archive):
        return earlier
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import constrained_opt_family as fam

    results = fam.load(args.family_store)
    lines, summ = fam.render(results)
    bullet = (
        f"**constrained_opt**: Hom-PGD+ with one conditional INN per family (amortized, the release's step "
        f"rule) on a parametric QCQP where one exact projection costs {summ['proj_ms']:.0f} ms CPU (median) "
        f"against {summ['hom_it_ms']:.1f} ms per Hom-PGD+ iteration: 'up to 10x' {summ['word']}; Hom-PGD+ "
        f"reached a 10% gap on {summ['reach01']} paired instances, median speed ratio vs the best "
        f"baseline {summ['median01']}x at that target (training {summ['train_cpu']:.0f} CPU s per map). "
        "[results](docs/results/constrained_opt.md)"
    )
    old = earlier.split("\n")
    body = [ln.replace("## ", "### ", 1) if ln.startswith("## ") else ln for ln in old[3:]]
    return "\n".join(
        [
            "<!-- icml26-summary",
            json.dumps({"family": "constrained_opt", "bullet": bullet}),
            "-->",
            "# Hom-PGD+ (Liu, Liang and Chen, ICML 2026): results",
            "",
            provenance_lines(prov),
            *lines,
            "## Earlier study: small instances, one INN trained per instance (2026-12-03)",
            "",
            "Kept as measured; its verdicts concern per-instance training on small instances and are "
            "superseded for the speed claim by the amortized study above.",
            "",
            *body,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=int, default=10)
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--train-iters", type=int, default=400)
    ap.add_argument("--max-seconds", type=float, default=30.0)
    ap.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-sweep", action="store_true", help="skip the INN training-length sweep")
    ap.add_argument("--json", default=str(ROOT / "results" / "constrained_opt.json"))
    ap.add_argument(
        "--from-json",
        default=None,
        help="re-render the page from a saved run's JSON (no solving); the page names both commits",
    )
    ap.add_argument(
        "--family-store",
        default=None,
        help="results store of the amortized family study (experiments/constrained_opt_family.py); "
        "its trials are archived to docs/results/raw/constrained_opt_family.jsonl.gz",
    )
    ap.add_argument(
        "--family-archive",
        action="store_true",
        help="render the family study from the committed archive instead of a store",
    )
    add_allow_dirty(ap)
    args = ap.parse_args(argv)
    prov = provenance(allow_dirty=args.allow_dirty)
    if args.from_json:
        data = json.loads(Path(args.from_json).read_text())
        data["command"] += (
            f" (measured; this page re-rendered from its JSON with `--from-json {args.from_json}`)"
        )
        PAGE.write_text(compose(render(data, prov), prov, args))
        print(f"re-rendered {PAGE}")
        return 0
    t0 = time.perf_counter()
    data: dict[str, Any] = {
        "instances": args.instances,
        "iters": args.iters,
        "train_iters": args.train_iters,
        "max_seconds": args.max_seconds,
        "seed": args.seed,
        "command": "OMP_NUM_THREADS=1 nice -n 10 python experiments/constrained_opt.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "runs": [],
    }
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        tqdm = None
    jobs = [(p, s) for p in args.problems for s in range(args.instances)]
    it = tqdm(jobs, desc="instances") if tqdm else jobs
    for p, s in it:
        data["runs"].append(solve_instance(p, s, args))
    if not args.no_sweep:
        print("INN training-length sweep", flush=True)
        data["sweep"] = inn_sweep(args)
    data["elapsed"] = time.perf_counter() - t0
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(data, default=float))
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(render(data, prov))
    print(f"wrote {PAGE} in {data['elapsed']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
