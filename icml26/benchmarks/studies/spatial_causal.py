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
from icml26.benchmarks.study import Arm, Block, Compare, Evaluation, Study, StudyData, Untestable

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
LADDER_BLOCKS = {"grid-r1", "rgg-r1"}


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
)
DECONF = "spatial-deconfounder-splus"
CLAIMS = (
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
    Compare(
        "beats-spatialplus-grid",
        "The substitute confounder improves on Spatial+ alone (grid-r1)",
        a=DECONF,
        b="sc-spatialplus",
        block="grid-r1",
        metric="spillover_error",
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
    for b in data.study.blocks:
        for arm in data.arms(b.name):
            for seed, r in sorted(data.trials(b.name, arm).items()):
                ep = r.extra["episodes"][0]
                rec = {
                    "config": b.name,
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
                        {"config": b.name, "seed": seed, "agent": "_data", **proxies, **smooth}
                    )
    for p, r in data.failed:
        last = (r.traceback or "").strip().splitlines()[-1:] or [""]
        name, _, msg = last[0].partition(": ")
        rows.append(
            {"config": p.block, "seed": r.seed, "agent": p.arm, "failed": f"{name}({msg!r})"}
        )
    return rows


def sections(data: StudyData, ev: Evaluation) -> list[str]:
    """The page's tables, from the stored trials; the notes block of the page is kept."""
    configs = {name: (kw, agents) for name, (_t, kw, agents) in configurations().items()}
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
        "| agent | SE error | SE - null [CI] (Holm p) | SE bias | DE error | DE - null [CI] (Holm p) | ERF error (5 pts) | R^2(U given Z) |",
        "|---|---|---|---|---|---|---|---|",
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
        lines.append(
            f"| {label(a)} | {fmt(mean_ci(se, seed=0))} | {se_d} | {fmt(mean_ci(sb, seed=0))} | "
            f"{fmt(mean_ci(de, seed=0))} | {de_d} | {fmt(mean_ci(erf, seed=0)) if len(erf) > 1 else '-'} | "
            f"{np.mean(r2):.2f} |"
            if r2
            else f"| {label(a)} | {fmt(mean_ci(se, seed=0))} | {se_d} | {fmt(mean_ci(sb, seed=0))} | "
            f"{fmt(mean_ci(de, seed=0))} | {de_d} | {fmt(mean_ci(erf, seed=0)) if len(erf) > 1 else '-'} | - |"
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


DECONF = "spatial-deconfounder-splus"


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
    by = {c.claim.id: c for c in ev.claims}
    g, r = by["beats-null-grid"], by["beats-null-rgg"]
    return (
        "**spatial_causal** (Spatial Deconfounder, SpaCE-style confounding with interference): "
        f"against the null answer SE = 0 its spillover error differs by {g.estimate:+.3f} "
        f"[{g.low:+.3f}, {g.high:+.3f}] on the grid ({g.verdict}: the claim is that it is "
        f"better) and by {r.estimate:+.3f} [{r.low:+.3f}, {r.high:+.3f}] on a random geometric "
        f"graph ({r.verdict}); 10 data sets each, positive = better than the null. "
        "[results](docs/results/spatial_causal.md)"
    )


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
    sections=sections,
    plots=(),
)

STUDIES = [SPATIAL_CAUSAL]
