"""The spatial_causal study: the Spatial Deconfounder, spatial regressions and weighting
estimators on SpaCE-style spatial confounding with interference (docs/results/spatial_causal.md).

    icml26 study run spatial_causal --executor process --workers 2 --trials-per-worker 50
    icml26 study report spatial_causal

Every block is a variant of a registered v1 task with one evaluation data set per trial
(``eval_episodes`` = 1: seed s's data set is the first episode of the v1 trial,
``reset(seed=derive_seed(s, "eval", 0))``); the regime cells are one-factor changes of grid-r1's
env kwargs. A trial's episode (``TrialResult.extra["episodes"][0]``) carries every figure the
page reads: errors and biases over sd(Y), the null estimator's errors on the same data set,
R^2 of the hidden confounder on the proxies and on the agent's substitute confounder, the
agent's diagnostics and the CPU seconds of its fit. The hand-written reading between
``<!-- notes`` and ``<!-- /notes -->`` on the page is kept across regenerations.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from icml26.benchmarks import get_task
from icml26.benchmarks.report import fmt_iv
from icml26.benchmarks.study import (
    Arm,
    Block,
    Compare,
    Evaluation,
    Study,
    StudyData,
    Sweep,
    Untestable,
)

__all__ = ["SPATIAL_CAUSAL", "STUDIES"]

DOC = Path("docs/results/spatial_causal.md")
NULL = "sc-ols"

ALL_AGENTS = [
    "sc-ols",
    "sc-diff-means",
    "sc-ols-exposure",
    "sc-spatial",
    "sc-spatialplus",
    "sc-s2sls",
    "sc-durbin",
    "sc-gm-error",
    "sc-ipw",
    "sc-aipw",
    "sc-ht",
    "sc-gcn",
    "spatial-deconfounder",
    "spatial-deconfounder-splus",
    "spatial-deconfounder-ref",
    "sc-oracle",
]
STRESS_AGENTS = [
    "sc-ols",
    "sc-ols-exposure",
    "sc-spatialplus",
    "sc-gm-error",
    "sc-aipw",
    "spatial-deconfounder-splus",
    "sc-oracle",
]
SWEEP_AGENTS = [
    "sc-ols",
    "sc-ols-exposure",
    "sc-spatialplus",
    "sc-aipw",
    "spatial-deconfounder-splus",
    "sc-oracle",
]  # the paper's head only: the linear head was worse on SE on every main config

# one-factor changes of grid-r1 (treatment noise 0.5, scale 1, GP length-scale 8, radius 1)
SWEEP: dict[str, dict[str, Any]] = {
    "noise0": {"treatment_noise": 0.0},
    "noise1": {"treatment_noise": 1.0},
    "noise2": {"treatment_noise": 2.0},
    "scale3": {"treatment_scale": 3.0},
    "noise0-scale3": {"treatment_noise": 0.0, "treatment_scale": 3.0},
    "ls2": {"length_scale": 2.0},
    "ls4": {"length_scale": 4.0},
    "ls16": {"length_scale": 16.0},
}
MAIN = ("grid-r1", "grid-r2", "holes-r1", "rgg-r1")
# issue 40: the spillover size (the simulator's gamma in 0.5 s(e); grid-r1 has 0.5). The null's
# error is |SE| / sd(Y), which grows with gamma; the deconfounder's is a confounding bias that
# does not, so somewhere along this axis the deconfounder must start to beat the null.
SPILLOVER = Sweep("spillover", "env_kwargs.spillover_effect", (0.25, 0.5, 1.0, 2.0, 4.0))
SPILL_BLOCK = "grid-r1-spillover"
STRESS = (
    "stress-nonlocal",
    "stress-confmod",
    "stress-asym",
    "stress-sparse10",
    "stress-sparse30",
    "stress-sparse70",
    "stress-singlecause10",
    "stress-singlecause30",
    "stress-misspec_radius",
    "stress-nonlinear",
)
# the deconfounders train (CVAE epochs): on grid-r1 and rgg-r1, where the claims are tested,
# they run on a ladder over their epochs; every other estimator fits in closed form or to
# convergence (exact: no learning budget)
TRAINED = {"spatial-deconfounder", "spatial-deconfounder-splus"}
LADDER_BLOCKS = {"grid-r1", "rgg-r1", SPILL_BLOCK}


def _arm(name: str, block: str) -> Arm:
    if name in TRAINED and block in LADDER_BLOCKS:
        return Arm(name, name, {"epochs": 400}, scaled_kwargs=("epochs",))
    return Arm(name, name, exact=name not in TRAINED)


def configurations() -> dict[str, tuple[str, dict[str, Any], list[str]]]:
    """name -> (registered task, env kwargs overrides, agents), in the page's order. CPU on the
    shared 2-core machine limits this revision: sc-gcn is left out (1.9 s/data set, ranked
    7th-9th on SE before); holes and rgg run the cheap agents and the paper's head only."""
    out: dict[str, tuple[str, dict[str, Any], list[str]]] = {}
    for name in ("grid-r1", "grid-r2"):
        out[name] = (name, {}, [a for a in ALL_AGENTS if a != "sc-gcn"])
    for name, kw in SWEEP.items():
        out[f"sweep-{name}"] = ("grid-r1", kw, list(SWEEP_AGENTS))
    for name in ("holes-r1", "rgg-r1"):
        out[name] = (
            name,
            {},
            [
                a
                for a in ALL_AGENTS
                if a not in ("sc-gcn", "spatial-deconfounder-ref", "spatial-deconfounder")
            ],
        )
    for name in STRESS:
        out[name] = (name, {}, list(STRESS_AGENTS))
    return out


BLOCKS = tuple(
    Block(
        f"spatial_causal/{task}",
        label=name,
        overrides={"eval_episodes": 1, **{f"env_kwargs.{k}": v for k, v in kw.items()}},
        arms=tuple(_arm(a, name) for a in agents),
        ladder=name in LADDER_BLOCKS,
    )
    for name, (task, kw, agents) in configurations().items()
) + (
    Block(
        "spatial_causal/grid-r1",
        label=SPILL_BLOCK,
        overrides={"eval_episodes": 1},
        sweep=SPILLOVER,
        arms=tuple(_arm(a, SPILL_BLOCK) for a in SWEEP_AGENTS),
        ladder=True,
    ),
)
DECONF = "spatial-deconfounder-splus"
CLAIMS: tuple[Compare | Untestable, ...] = (
    Compare(
        "beats-spatialplus-grid",
        "The substitute confounder improves on Spatial+ alone (grid-r1): the paper's relative claim",
        a=DECONF,
        b="sc-spatialplus",
        block="grid-r1",
        metric="spillover_error",
    ),
    Compare(
        "beats-exposure-grid",
        "The Spatial Deconfounder beats exposure-mapping OLS, the estimator that ignores the "
        "confounder (grid-r1)",
        a=DECONF,
        b="sc-ols-exposure",
        block="grid-r1",
        metric="spillover_error",
    ),
    Compare(
        "beats-null-grid",
        "The Spatial Deconfounder (Spatial+ head) estimates the spillover effect better than "
        "answering SE = 0 (grid, local smooth confounding)",
        a=DECONF,
        b=NULL,
        block="grid-r1",
        metric="spillover_error",
    ),
    Compare(
        "beats-null-rgg",
        "... and on a random geometric graph",
        a=DECONF,
        b=NULL,
        block="rgg-r1",
        metric="spillover_error",
    ),
    *(
        Compare(
            f"beats-null-spillover-{g:g}",
            f"... against the null at spillover size {g:g} (grid-r1 otherwise; the simulator's is 0.5)",
            a=DECONF,
            b=NULL,
            block=SPILL_BLOCK,
            metric="spillover_error",
            at=g,
        )
        for g in SPILLOVER.values
        if g != 0.5
    ),
    Untestable(
        "se-0.10",
        "Spillover error ~0.10 on the PM2.5-mortality semi-synthetic benchmark",
        "that benchmark's data (Harvard Dataverse) cannot be downloaded here; our data are "
        "synthetic (the grid-r1 error is in the tables below)",
    ),
)


# ----------------------------------------------------------------------------- the store, as records
def records(data: StudyData) -> list[dict[str, Any]]:
    """One record per (configuration, seed, agent) as the page's tables read them, plus one
    ``_data`` record per (configuration, seed) with the proxies' R^2 (from the null's trial)."""
    rows: list[dict[str, Any]] = []
    places = [(blk, pt) for blk in data.study.blocks for pt in data.points(blk.name)]
    for b, point in places:
        config = b.name if point is None else spill_config(point)
        for arm in data.arms(b.name):
            for seed, r in sorted(data.trials(b.name, arm, point).items()):
                ep = r.extra["episodes"][0]
                rec = {
                    "config": config,
                    "seed": seed,
                    "agent": arm,
                    "cpu_s": ep["act_cpu_s"],
                    **{
                        k: ep[k]
                        for k in (
                            "direct_bias",
                            "spillover_bias",
                            "direct_error",
                            "spillover_error",
                            "error",
                            "sd_y",
                            "erf_error",
                            "truth_direct",
                            "truth_spillover",
                            "diagnostics",
                        )
                    },
                }
                if "r2_u_latent" in ep["r2"]:
                    rec["r2_u_latent"] = ep["r2"]["r2_u_latent"]
                rows.append(rec)
                if arm == NULL:
                    proxies = {k: v for k, v in ep["r2"].items() if k != "r2_u_latent"}
                    smooth = {
                        k: v for k, v in ep.items() if k.startswith(("smoothness", "confounding"))
                    }
                    rows.append(
                        {"config": config, "seed": seed, "agent": "_data", **proxies, **smooth}
                    )
    for p, r in data.failed:
        last = (r.traceback or "").strip().splitlines()[-1:] or [""]
        name, _, msg = last[0].partition(": ")
        rows.append(
            {"config": p.block, "seed": r.seed, "agent": p.arm, "failed": f"{name}({msg!r})"}
        )
    return rows


def spill_config(g: float) -> str:
    """The page's name of the spillover sweep's cell at spillover size ``g``."""
    return f"{SPILL_BLOCK}@{g:g}"


def sections(data: StudyData, ev: Evaluation) -> list[str]:
    """The page's tables, from the stored trials; the notes block of the page is kept."""
    configs = {name: (kw, agents) for name, (_t, kw, agents) in configurations().items()}
    configs.update(
        {spill_config(g): ({"spillover_effect": g}, SWEEP_AGENTS) for g in SPILLOVER.values}
    )
    return report(records(data), configs, len(data.study.seeds), stress=True).splitlines()


# ----------------------------------------------------------------------------- report


def fmt(iv: Any, digits: int = 3) -> str:
    """An interval (``Interval``, ``PairedResult``) with ``digits`` decimals."""
    return fmt_iv(iv[0], iv[1], iv[2], spec=f".{digits}f")


def by_cell(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[int, dict[str, Any]]]]:
    """config -> agent -> seed -> record (failed records dropped)."""
    out: dict[str, dict[str, dict[int, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if "failed" not in r:
            out[r["config"]][r["agent"]][r["seed"]] = r
    return out


def label(agent: str) -> str:
    if agent == NULL:
        return f"**{NULL} = null** (SE = 0, DE from OLS)"
    if agent == "sc-oracle":
        return "sc-oracle (sees U; reference, not ranked)"
    return agent


EXPOSURE = "sc-ols-exposure"


def bias_share(
    cell: dict[str, dict[int, dict[str, Any]]], agent: str
) -> tuple[float, float, float] | None:
    """The agent's mean SE bias as a share of exposure-mapping OLS's mean SE bias on the same
    data sets (exposure OLS ignores the confounder: its bias is the confounding bias a method
    has to remove), with a percentile bootstrap interval over data sets; None without pairs."""
    from icml26.stats import bootstrap_ci

    if agent not in cell or EXPOSURE not in cell:
        return None
    seeds = sorted(set(cell[agent]) & set(cell[EXPOSURE]))
    if len(seeds) < 2:
        return None
    m = np.array(
        [[cell[agent][s]["spillover_bias"], cell[EXPOSURE][s]["spillover_bias"]] for s in seeds]
    )
    if abs(m[:, 1].mean()) == 0:
        return None
    iv = bootstrap_ci(m, lambda x: float(x[:, 0].mean() / x[:, 1].mean()), seed=0)
    return iv.estimate, iv.low, iv.high


def _share(v: tuple[float, float, float] | None) -> str:
    return "-" if v is None else f"{100 * v[0]:.0f}% [{100 * v[1]:.0f}, {100 * v[2]:.0f}]"


def agent_table(cell: dict[str, dict[int, dict[str, Any]]], title: str) -> list[str]:
    """DE and SE separately, the null row, paired differences against the null (Holm over agents)."""
    from icml26.stats import holm, mean_ci, paired_test

    null = cell.get(NULL, {})
    agents_ = sorted(
        (a for a in cell if not a.startswith("_")),
        key=lambda a: (a == "sc-oracle", np.mean([r["spillover_error"] for r in cell[a].values()])),
    )
    tests: dict[str, Any] = {}
    for a in agents_:
        if a in (NULL, "sc-oracle"):
            continue
        seeds = sorted(set(cell[a]) & set(null))
        if len(seeds) >= 2:
            tests[a] = (
                seeds,
                paired_test(
                    [cell[a][s]["spillover_error"] for s in seeds],
                    [null[s]["spillover_error"] for s in seeds],
                    seed=0,
                ),
                paired_test(
                    [cell[a][s]["direct_error"] for s in seeds],
                    [null[s]["direct_error"] for s in seeds],
                    seed=0,
                ),
            )
    names = list(tests)
    adj_se = dict(zip(names, holm([tests[a][1].p_value for a in names]))) if names else {}
    adj_de = dict(zip(names, holm([tests[a][2].p_value for a in names]))) if names else {}
    ns = sorted({len(v) for v in cell.values()})
    lines = [
        f"**{title}** (n = {'/'.join(map(str, ns))} data sets; mean [95% BCa interval]; paired "
        "differences agent - null over the same data sets with a paired BCa interval and the exact "
        "sign-flip p, Holm-adjusted over the agents of this table)",
        "",
        "| agent | SE error | SE - null [CI] (Holm p) | SE bias | SE bias / exposure-OLS SE bias | "
        "DE error | DE - null [CI] (Holm p) | ERF error (5 pts) | R^2(U given Z) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for a in agents_:
        rs = [cell[a][s] for s in sorted(cell[a])]
        se = np.array([r["spillover_error"] for r in rs])
        de = np.array([r["direct_error"] for r in rs])
        sb = np.array([r["spillover_bias"] for r in rs])
        erf = [r["erf_error"] for r in rs if r.get("erf_error") is not None]
        r2 = [r["r2_u_latent"] for r in rs if "r2_u_latent" in r]
        if a in tests:
            _, tse, tde = tests[a]
            se_d = f"{fmt(tse)} ({adj_se[a]:.3g})"
            de_d = f"{fmt(tde)} ({adj_de[a]:.3g})"
        else:
            se_d = de_d = "-"
        share = "-" if a in (EXPOSURE, "sc-oracle") else _share(bias_share(cell, a))
        erf_txt = fmt(mean_ci(erf, seed=0)) if len(erf) > 1 else "-"
        lines.append(
            f"| {label(a)} | {fmt(mean_ci(se, seed=0))} | {se_d} | {fmt(mean_ci(sb, seed=0))} | "
            f"{share} | {fmt(mean_ci(de, seed=0))} | {de_d} | {erf_txt} | "
            f"{f'{np.mean(r2):.2f}' if r2 else '-'} |"
        )
    return lines + [""]


R2_KEYS = (
    ("r2_u_ring_means", "ring-mean treatments"),
    ("r2_u_spline_of_a", "spline of A on coordinates"),
    ("r2_u_tps_basis", "TPS basis of coordinates"),
)
LATENTS = ("spatial-deconfounder", "spatial-deconfounder-splus", "spatial-deconfounder-ref")


def r2_table(cells: dict[str, Any], configs: list[str]) -> list[str]:
    from icml26.stats import mean_ci

    head = ["config"] + [d for _, d in R2_KEYS] + [f"Z of {a}" for a in LATENTS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in configs:
        cell = cells.get(c)
        if not cell or "_data" not in cell:
            continue
        d = [cell["_data"][s] for s in sorted(cell["_data"])]
        row = [f"{c} (n={len(d)})"] + [
            fmt(mean_ci([r[k] for r in d], seed=0), 2) for k, _ in R2_KEYS
        ]
        for a in LATENTS:
            v = [r["r2_u_latent"] for r in cell.get(a, {}).values() if "r2_u_latent" in r]
            row.append(fmt(mean_ci(v, seed=0), 2) if len(v) > 1 else "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines + [""]


def regime_table(cells: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """One row per regime cell: SE errors of the null, the paper's deconfounder and the smooth
    proxies, paired differences (Holm over the cells), R^2 diagnostics and a verdict."""
    from icml26.stats import holm, mean_ci, paired_test

    order = [
        ("grid-r1", "base: noise 0.5, scale 1, length-scale 8, radius 1"),
        *[
            (f"sweep-{k}", ", ".join(f"{kk} {vv:g}" for kk, vv in v.items()))
            for k, v in SWEEP.items()
        ],
        ("grid-r2", "radius 2"),
    ]
    rows: list[dict[str, Any]] = []
    for c, desc in order:
        cell = cells.get(c)
        if not cell or DECONF not in cell or NULL not in cell:
            continue
        seeds = sorted(set(cell[DECONF]) & set(cell[NULL]) & set(cell.get("sc-spatialplus", {})))
        if len(seeds) < 2:
            continue
        se = {
            a: np.array([cell[a][s]["spillover_error"] for s in seeds])
            for a in (NULL, DECONF, "sc-spatialplus", "sc-ols-exposure", "sc-aipw", "sc-oracle")
            if a in cell and all(s in cell[a] for s in seeds)
        }
        rows.append(
            {
                "config": c,
                "desc": desc,
                "n": len(seeds),
                "se": se,
                "vs_null": paired_test(se[DECONF], se[NULL], seed=0),
                "vs_splus": paired_test(se[DECONF], se["sc-spatialplus"], seed=0),
                "r2_z": [cell[DECONF][s].get("r2_u_latent", np.nan) for s in seeds],
                "r2_tps": [
                    cell["_data"][s]["r2_u_tps_basis"] for s in seeds if s in cell.get("_data", {})
                ],
                "r2_ring": [
                    cell["_data"][s]["r2_u_ring_means"] for s in seeds if s in cell.get("_data", {})
                ],
                "moran": [
                    cell["_data"][s].get("smoothness", np.nan)
                    for s in seeds
                    if s in cell.get("_data", {})
                ],
            }
        )
    if not rows:
        return ["(no regime cells computed yet)", ""], rows
    p_null = holm([r["vs_null"].p_value for r in rows])
    p_spl = holm([r["vs_splus"].p_value for r in rows])
    lines = [
        "| cell | change from grid-r1 | n | Moran's I of U | null SE err | deconfounder (Spatial+ head) SE err | "
        "deconf - null [CI] (Holm p) | deconf - Spatial+ [CI] (Holm p) | Spatial+ SE err | oracle SE err | "
        "R^2(U given Z) | R^2(U given ring means) | R^2(U given TPS basis) | verdict |",
        "|" + "---|" * 14,
    ]
    for r, pn, ps in zip(rows, p_null, p_spl):
        r["p_null"], r["p_splus"] = float(pn), float(ps)
        d = r["vs_null"]
        if pn < 0.05:
            verdict = "deconfounder beats the null" if d.diff < 0 else "null beats the deconfounder"
        else:
            verdict = f"no detectable difference from the null at n = {r['n']}"
        if ps < 0.05:
            verdict += "; " + (
                "beats Spatial+" if r["vs_splus"].diff < 0 else "worse than Spatial+"
            )
        r["verdict"] = verdict
        se = r["se"]
        lines.append(
            f"| {r['config']} | {r['desc']} | {r['n']} | {np.nanmean(r['moran']):.2f} | "
            f"{fmt(mean_ci(se[NULL], seed=0))} | {fmt(mean_ci(se[DECONF], seed=0))} | {fmt(d)} ({pn:.3g}) | "
            f"{fmt(r['vs_splus'])} ({ps:.3g}) | {fmt(mean_ci(se['sc-spatialplus'], seed=0))} | "
            f"{np.mean(se['sc-oracle']) if 'sc-oracle' in se else float('nan'):.3f} | {np.nanmean(r['r2_z']):.2f} | {np.mean(r['r2_ring']):.2f} | "
            f"{np.mean(r['r2_tps']):.2f} | {verdict} |"
        )
    return lines + [""], rows


def spillover_table(cells: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The spillover axis: per spillover size, the null's and the deconfounder's SE errors, their
    paired difference (Holm over the sizes), the deconfounder's bias in units of Y and as a share
    of exposure OLS's, and the crossover where the deconfounder starts to beat the null."""
    from icml26.stats import holm, mean_ci, paired_test

    rows = []
    for g in SPILLOVER.values:
        cell = cells.get(spill_config(g))
        if not cell or DECONF not in cell or NULL not in cell:
            continue
        seeds = sorted(set(cell[DECONF]) & set(cell[NULL]))
        if len(seeds) < 2:
            continue
        se = {
            a: np.array([cell[a][s]["spillover_error"] for s in seeds])
            for a in (NULL, DECONF, "sc-spatialplus", EXPOSURE, "sc-oracle")
            if a in cell and all(s in cell[a] for s in seeds)
        }
        bias_y = np.array(
            [cell[DECONF][s]["spillover_bias"] * cell[DECONF][s]["sd_y"] for s in seeds]
        )
        rows.append(
            {
                "g": g,
                "n": len(seeds),
                "se": se,
                "truth_y": float(np.mean([cell[NULL][s]["truth_spillover"] for s in seeds])),
                "bias_y": mean_ci(bias_y, seed=0),
                "share": bias_share(cell, DECONF),
                "vs_null": paired_test(se[DECONF], se[NULL], seed=0),
                "vs_splus": paired_test(se[DECONF], se["sc-spatialplus"], seed=0)
                if "sc-spatialplus" in se
                else None,
            }
        )
    if not rows:
        return ["(the spillover sweep has not run yet)", ""], {}
    for r, p in zip(rows, holm([r["vs_null"].p_value for r in rows])):
        r["p_null"] = float(p)
    lines = [
        "| spillover size (grid-r1: 0.5) | n | true SE (units of Y) | null SE err (= \\|SE\\| / sd(Y)) | "
        "deconfounder SE err | deconf - null [CI] (Holm p) | deconf SE bias, units of Y | "
        "deconf bias / exposure-OLS bias | deconf - Spatial+ [CI] | oracle SE err | verdict |",
        "|" + "---|" * 11,
    ]
    for r in rows:
        d = r["vs_null"]
        if r["p_null"] <= 0.05:
            verdict = "deconfounder beats the null" if d.diff < 0 else "null beats the deconfounder"
        else:
            verdict = f"no detectable difference at n = {r['n']}"
        r["verdict"] = verdict
        sp = r["vs_splus"]
        lines.append(
            f"| {r['g']:g} | {r['n']} | {r['truth_y']:.3f} | {fmt(mean_ci(r['se'][NULL], seed=0))} | "
            f"{fmt(mean_ci(r['se'][DECONF], seed=0))} | {fmt(d)} ({r['p_null']:.3g}) | "
            f"{fmt(r['bias_y'])} | {_share(r['share'])} | {fmt(sp) if sp is not None else '-'} | "
            f"{np.mean(r['se']['sc-oracle']) if 'sc-oracle' in r['se'] else float('nan'):.3f} | "
            f"{verdict} |"
        )
    cross = crossover(rows)
    lines += ["", cross["text"], ""]
    return lines, {"rows": rows, **cross}


def crossover(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the deconfounder starts to beat the null along the spillover axis: the smallest size
    with a significant paired difference in its favour (Holm over the sizes), and the size where
    the mean difference crosses zero (linear in log size between the two sizes around it)."""
    sig = [r["g"] for r in rows if r["p_null"] <= 0.05 and r["vs_null"].diff < 0]
    zero = None
    for a, b in zip(rows, rows[1:]):
        da, db = a["vs_null"].diff, b["vs_null"].diff
        if da > 0 >= db:
            t = da / (da - db)
            zero = float(np.exp(np.log(a["g"]) + t * (np.log(b["g"]) - np.log(a["g"]))))
            break
    if rows and rows[0]["vs_null"].diff <= 0:
        zero = rows[0]["g"]  # already below at the smallest size
    text = (
        f"**Crossover:** the mean paired difference deconfounder - null changes sign at spillover "
        f"size {zero:.2g} (log-linear between the swept sizes)"
        if zero is not None
        else "**Crossover:** the mean paired difference deconfounder - null does not change sign "
        "over the swept sizes " + ", ".join(f"{r['g']:g}" for r in rows)
    )
    text += (
        f"; the deconfounder is significantly better than the null (Holm p <= 0.05) from spillover "
        f"size {min(sig):g} on ({', '.join(f'{g:g}' for g in sig)})."
        if sig
        else "; at no swept size is it significantly better than the null."
    )
    return {"zero": zero, "significant": sig, "text": text}


def claim_section(cells: dict[str, Any], regime_rows: list[dict[str, Any]]) -> list[str]:
    """The paper's ~0.10 spillover error for CVAE + Spatial+ head (local confounding, radius 1)."""
    from icml26.stats import mean_ci

    out = ["## The ~0.10 spillover-error claim", ""]
    for a in (DECONF, "spatial-deconfounder-ref"):
        v = [r["spillover_error"] for r in cells.get("grid-r1", {}).get(a, {}).values()]
        if len(v) > 1:
            iv = mean_ci(v, seed=0)
            where = (
                "inside" if iv.low <= 0.10 <= iv.high else ("below" if iv.low > 0.10 else "above")
            )
            out.append(
                f"* {a} on grid-r1 (radius 1, local smooth confounding): SE error {fmt(iv)}; "
                f"the paper's 0.10 lies {where} this interval (n = {len(v)})."
            )
    if regime_rows:
        best = min(regime_rows, key=lambda r: float(np.mean(r["se"][DECONF])))
        out.append(
            f"* Lowest mean SE error of {DECONF} over the regime cells: {best['config']} "
            f"({best['desc']}), {fmt(mean_ci(best['se'][DECONF], seed=0))}; null there "
            f"{np.mean(best['se'][NULL]):.3f}."
        )
    return out + [""]


def selection_table(cells: dict[str, Any]) -> list[str]:
    out = [
        "| config | data sets | chosen beta (count) | mean held-out p-value (observed / model-simulated) |",
        "|---|---|---|---|",
    ]
    for c, cell in cells.items():
        rs = list(cell.get("spatial-deconfounder-ref", {}).values())
        if not rs:
            continue
        betas: dict[float, int] = defaultdict(int)
        for r in rs:
            betas[r["diagnostics"].get("beta", np.nan)] += 1
        p_obs = np.mean([r["diagnostics"].get("p_value", np.nan) for r in rs])
        p_cal = np.mean([r["diagnostics"].get("p_value_calibrated", np.nan) for r in rs])
        chosen = ", ".join(f"{b:g} ({k})" for b, k in sorted(betas.items()))
        out.append(f"| {c} | {len(rs)} | {chosen} | {p_obs:.4f} / {p_cal:.4f} |")
    return out + [""]


def describe(name: str, kwargs: dict[str, Any]) -> str:
    if name.startswith("sweep-"):
        return "grid-r1 with " + ", ".join(f"{k} = {v:g}" for k, v in SWEEP[name[6:]].items())
    return get_task(f"spatial_causal/{name}").description


def report(
    rows: list[dict[str, Any]], configs: dict[str, Any], seeds: int, stress: bool = False
) -> str:
    # only the agents this revision runs on each configuration (older cache lines are ignored)
    rows = [
        r
        for r in rows
        if r["config"] in configs and r["agent"] in ("_data", *configs[r["config"]][1])
    ]
    cells = by_cell(rows)
    notes = ""
    if DOC.exists():
        old = DOC.read_text()
        if "<!-- notes" in old and "<!-- /notes -->" in old:
            notes = old[
                old.index("<!-- notes") : old.index("<!-- /notes -->") + len("<!-- /notes -->")
            ]
    out: list[str] = []
    failed = [r for r in rows if "failed" in r]
    if failed:
        out += [
            f"Failed fits (recorded, left out of the tables): {len(failed)} -- "
            + "; ".join(
                sorted({f"{r['agent']} on {r['config']}: {r['failed'][:80]}" for r in failed})
            ),
            "",
        ]
    if notes:
        out += [notes, ""]
    main_cfgs = [c for c in ("grid-r1", "grid-r2", "holes-r1", "rgg-r1") if c in cells]
    out += ["## Spillover and direct errors, with the null row", ""]
    for c in main_cfgs:
        out += agent_table(cells[c], f"{c}: {describe(c, configs[c][0])}")
    out += [
        "## How much of U the proxies carry: R^2(U given .)",
        "",
        "In-sample R^2 of the hidden confounder regressed (with intercept) on each proxy, over all units "
        "(`icml26.agents.spatial_causal.diagnostics`); the TPS basis is ridge-penalized with GCV. Z of an "
        "agent = its substitute confounder (linear in Z; for the reference model the patch latents).",
        "",
    ]
    out += r2_table(cells, [c for c in cells])
    reg_lines, reg_rows = regime_table(cells)
    out += [
        "## Regime map: where the identification argument bites",
        "",
        f"One-factor changes of grid-r1 (10 data sets each, same seeds in every cell). Treatment noise is the "
        "sd of the logit noise (0 = treatment a deterministic function of U and X up to the Bernoulli draw), "
        "scale multiplies the logit (sharper propensities), length-scale sets the GP confounder's smoothness; "
        f"radius 2 is grid-r2. The deconfounder is {DECONF} (the paper's best head). Holm over the cells.",
        "",
    ]
    out += reg_lines
    spill_lines, _ = spillover_table(cells)
    out += [
        "## The spillover axis: where the deconfounder starts to beat the null",
        "",
        "grid-r1 with the spillover coefficient gamma of `mu = ... + gamma s(e)` set to each size (the "
        "simulator's is 0.5), 10 data sets per size, same seeds. The null answers SE = 0, so its error "
        "is the true SE over sd(Y) and grows with gamma; the deconfounder's error is the confounding "
        "bias it leaves, which does not. Its bias is shown in units of Y and as a share of the bias of "
        "exposure-mapping OLS (the estimator that ignores the confounder) on the same data sets "
        "(percentile bootstrap over data sets). The deconfounder runs on its epoch ladder (200, 400) at "
        "every size. Holm over the sizes.",
        "",
    ]
    out += spill_lines
    out += claim_section(cells, reg_rows)
    out += [
        "## Reference deconfounder: beta chosen by the predictive check",
        "",
        "beta_max candidates 1e-5, 3e-5, 1e-4 (the reference's range); the reference's held-out predictive "
        "p-value for the observed treatments next to the same statistic for treatments simulated from the model. "
        "The model with the smaller gap wins (ties: held-out loss).",
        "",
    ]
    out += selection_table(cells)
    stressed = [c for c in cells if c.startswith("stress")]
    if stressed:
        out += ["## Stress variants", ""]
        for cs in stressed:
            out += agent_table(cells[cs], f"{cs}: {describe(cs, configs[cs][0])}")
    out += ["## Cost", "", "| agent | mean CPU s per data set (grid-r1) |", "|---|---|"]
    for a, recs in sorted(cells.get("grid-r1", {}).items()):
        v = [r["cpu_s"] for r in recs.values() if "cpu_s" in r]
        if v:
            out.append(f"| {a} | {np.mean(v):.2f} |")
    return "\n".join(out) + "\n"


INTRO = (
    "Seeds 0..9; each seed's data set is drawn as the first episode of the v1 task trial "
    '(`reset(seed=derive_seed(seed, "eval", 0))`, `erf_points=5`). Every error and bias is divided '
    "by sd(Y) over the scored units (SpaCE). Intervals: 95% BCa bootstrap of the mean "
    "(`icml26.stats.mean_ci`); paired differences: `icml26.stats.paired_test` (paired BCa "
    "interval, exact sign-flip p for n <= 16), Holm-adjusted (`icml26.stats.holm`) within each "
    "table. With 10 pairs the smallest attainable two-sided p is 0.002. The null estimator is "
    "`sc-ols` (SE = 0; DE from OLS of Y on A, X, AX); `sc-oracle` sees U and is a reference only. "
    "The deconfounders train a CVAE (400 epochs); on grid-r1 and rgg-r1 they also ran at 200 "
    "epochs, the ladder their verdicts wait on. CPU seconds are measured per fit on a shared "
    "machine and differ from run to run."
)


def _bullet(ev: Evaluation) -> str:
    """The README line: the paper's relative claim with its test first, the null next to it."""
    by = {c.claim.id: c for c in ev.claims}

    def iv(cid: str) -> str:
        c = by[cid]
        return f"{fmt_iv(c.estimate, c.low, c.high, 3, signed=True)}, {c.verdict}"

    parts = [
        "**spatial_causal** (Spatial Deconfounder, SpaCE-style confounding with interference):"
    ]
    if "beats-spatialplus-grid" in by:
        parts.append(
            "on the grid its spillover error is lower than Spatial+'s (the paper's relative claim; "
            f"paired difference, positive = better: {iv('beats-spatialplus-grid')})"
        )
    if "beats-exposure-grid" in by:
        parts.append(f"and than exposure-mapping OLS's ({iv('beats-exposure-grid')});")
    null = (
        [
            f"against the null answer SE = 0 at the simulator's spillover 0.5: {iv('beats-null-grid')}"
        ]
        if "beats-null-grid" in by
        else []
    )
    spill = sorted(
        (float(c.claim.at), c) for c in ev.claims if c.claim.id.startswith("beats-null-spillover-")
    )
    if spill:
        # the smallest size from which every interval lies on the deconfounder's side
        above = [g for i, (g, _) in enumerate(spill) if all(c.low > 0 for _, c in spill[i:])]
        verdicts = sorted({c.verdict for _, c in spill})
        null.append(
            "along the spillover axis "
            + ", ".join(
                f"{g:g}: {fmt_iv(c.estimate, c.low, c.high, 3, signed=True)}" for g, c in spill
            )
            + (f" (interval above zero from spillover {above[0]:g} on" if above else " (")
            + ("; " if above else "")
            + ("all " if len(verdicts) == 1 else "")
            + ", ".join(verdicts)
            + ")"
        )
    if "beats-null-rgg" in by:
        null.append(f"on a random geometric graph {iv('beats-null-rgg')}")
    if null:
        parts.append("; ".join(null) + ";")
    parts.append("10 data sets per cell. [results](docs/results/spatial_causal.md)")
    return " ".join(parts)


def figures(data: StudyData, ev: Evaluation, folder: Path) -> list[tuple[str, str]]:
    """The deconfounders' epochs ladders on grid-r1 and rgg-r1, the null and Spatial+ as
    dashed references (the other exact arms would swamp the scale: Horvitz-Thompson's is ~20)."""
    from icml26.benchmarks import plots
    from icml26.stats import iqm

    out = []
    for block in ("grid-r1", "rgg-r1"):
        lad = {
            a: {s: list(v.values()) for s, v in data.ladder(block, a, "spillover_error").items()}
            for a in data.arms(block)
            if a.startswith("spatial-deconfounder")
        }
        refs = {
            a: iqm(list(data.values(block, a, "spillover_error").values()))
            for a in (NULL, "sc-spatialplus")
        }
        name = plots.ladder_plot(
            lad,
            "spillover_error",
            "min",
            f"{block}: spillover error against CVAE epochs (x1 = 400)",
            folder,
            f"spatial_causal_{block}_ladder",
            refs,
        )
        if name:
            out.append(
                (f"{block}: the deconfounders' spillover error against the epochs ladder", name)
            )
    return out


SPATIAL_CAUSAL = Study(
    name="spatial_causal",
    title="spatial_causal: results",
    family="spatial_causal",
    page="docs/results/spatial_causal.md",
    blocks=BLOCKS,
    seeds=tuple(range(10)),
    ladder=(0.5, 1.0),
    claims=CLAIMS,
    intro=INTRO,
    bullet=_bullet,
    paper="Spatial Deconfounder",
    methods=("spatial-deconfounder", "spatial-deconfounder-splus", "spatial-deconfounder-ref"),
    sections=sections,
    figures=figures,
    plots=(),
)

STUDIES = [SPATIAL_CAUSAL]
