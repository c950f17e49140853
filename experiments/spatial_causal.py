"""Produce docs/results/spatial_causal.md: every agent on every configuration, 10 seeds.

For each configuration (the family's tasks: base grid radius 1 and 2, random geometric graph,
lattice with holes, the stress variants; plus a difficulty sweep over the confounder's
length-scale and strength) and each seed, one data set is drawn exactly as ``run_trial`` draws
its first episode (``reset(seed=derive_seed(seed, "eval", 0))``) and every agent estimates the
direct and spillover effects on it. Reported per agent: error, signed bias and RMSE of DE and SE
divided by sd(Y), with 95% intervals (Student t for means, percentile bootstrap for RMSE), by
configuration and by difficulty bucket (median splits of Moran's I of U and of the confounding
score over the sweep's data sets).

Results are cached line by line in ``results/spatial_causal_experiments.jsonl`` (a rerun only
computes what is missing). Run: ``python experiments/spatial_causal.py [--seeds 10] [--only grid-r1]``.
Budget on this 2-core machine: about 13 s of CPU per data set for all 11 agents.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import icml26  # noqa: E402,F401
import icml26.agents as agents  # noqa: E402
from icml26.benchmarks import list_tasks  # noqa: E402
from icml26.protocol import derive_seed  # noqa: E402
from icml26.stats import bootstrap_ci, mean_ci  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "results" / "spatial_causal_experiments.jsonl"
DOC = ROOT / "docs" / "results" / "spatial_causal.md"
FIG = ROOT / "docs" / "results" / "figures"
ENV_ID = "icml26/SpaCEInterference-v0"

AGENTS = ["spatial-deconfounder", "spatial-deconfounder-splus", "sc-diff-means", "sc-ols",
          "sc-ols-exposure", "sc-spatial", "sc-spatialplus", "sc-s2sls", "sc-durbin", "sc-gcn",
          "sc-oracle"]


# Ablations of the Spatial Deconfounder (label -> registered agent, kwargs), on ABLATION_CONFIGS.
ABLATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "deconf: own treatment in encoder": ("spatial-deconfounder", {"include_own_treatment": True}),
    "deconf: encoder rings 1..5": ("spatial-deconfounder", {"encoder_hops": 5}),
    "deconf: beta_max 1": ("spatial-deconfounder", {"beta_max": 1.0}),
    "deconf: latent_dim 1": ("spatial-deconfounder", {"latent_dim": 1}),
    "deconf: no KL (beta_max 0)": ("spatial-deconfounder", {"beta_max": 0.0}),
    "deconf: mlp head": ("spatial-deconfounder", {"head": "mlp"}),
}
ABLATION_CONFIGS = ("grid-r1", "grid-r2")


def configurations() -> dict[str, dict[str, Any]]:
    out = {t.id.split("/", 1)[1]: dict(t.env_kwargs) for t in list_tasks("spatial_causal")}
    for ls in (2.0, 8.0):
        for strength in (0.5, 1.5):
            out[f"sweep-ls{ls:g}-c{strength:g}"] = {"length_scale": ls, "conf_a": strength, "conf_y": strength}
    return out


def load_cache() -> dict[tuple[str, int, str], dict[str, Any]]:
    out = {}
    if CACHE.exists():
        for line in CACHE.read_text().splitlines():
            r = json.loads(line)
            out[(r["config"], r["seed"], r["agent"])] = r
    return out


def run(configs: dict[str, dict[str, Any]], seeds: int) -> list[dict[str, Any]]:
    import torch

    torch.set_num_threads(1)
    cache = load_cache()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    def jobs(cname: str) -> list[tuple[str, str, dict[str, Any]]]:
        out = [(a, a, {}) for a in AGENTS]
        if cname in ABLATION_CONFIGS:
            out += [(label, name, kw) for label, (name, kw) in ABLATIONS.items()]
        return out

    todo = [(c, s) for c in configs for s in range(seeds)
            if any((c, s, label) not in cache for label, _, _ in jobs(c))]
    with CACHE.open("a") as f:
        for cname, seed in tqdm(todo, desc="data sets"):
            env = gym.make(ENV_ID, reveal_confounder=True, **configs[cname])
            ds_seed = derive_seed(seed, "eval", 0)
            obs, info = env.reset(seed=ds_seed)
            public = {k: v for k, v in info.items() if k != "confounder"}
            for label, name, kwargs in jobs(cname):
                if (cname, seed, label) in cache:
                    continue
                agent = agents.make(name, **kwargs)
                agent.reset(ds_seed)
                t0 = time.process_time()
                action = agent.act(obs, info if getattr(agent, "uses_hidden_confounder", False) else public)
                cpu = time.process_time() - t0
                env.reset(seed=ds_seed)
                _, _, _, _, res = env.step(action)
                rec = {"config": cname, "seed": seed, "agent": label, "cpu_s": cpu,
                       **{k: float(res[k]) for k in ("direct_bias", "spillover_bias", "direct_error",
                                                     "spillover_error", "error", "sd_y")},
                       "erf_error": float(res["erf_error"]) if "erf_error" in res else None,
                       "truth_direct": float(res["truth"]["direct"]),
                       "truth_spillover": float(res["truth"]["spillover"]),
                       "diagnostics": dict(getattr(agent, "diagnostics", {}) or {}),
                       **{k: float(v) for k, v in public.items() if isinstance(v, float)}}
                cache[(cname, seed, label)] = rec
                f.write(json.dumps(rec) + "\n")
                f.flush()
            env.close()
    return [r for (c, s, _), r in cache.items() if c in configs and s < seeds]


# ----------------------------------------------------------------------------- report


def fmt(est: float, lo: float, hi: float) -> str:
    return f"{est:.3f} [{lo:.3f}, {hi:.3f}]"


def rmse_ci(x: np.ndarray) -> tuple[float, float, float]:
    return bootstrap_ci(x, lambda v: float(np.sqrt(np.mean(v**2))), seed=0)


def agent_table(rows: list[dict[str, Any]], title: str) -> list[str]:
    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_agent[r["agent"]].append(r)
    n = {len(v) for v in by_agent.values()}
    lines = [f"**{title}** (n = {'/'.join(map(str, sorted(n)))} data sets per agent; mean [95% t-interval], "
             "RMSE [95% bootstrap])", "",
             "| agent | DE error | SE error | DE bias | SE bias | DE RMSE | SE RMSE |",
             "|---|---|---|---|---|---|---|"]
    order = sorted(by_agent, key=lambda a: (a == "sc-oracle", np.mean([r["error"] for r in by_agent[a]])))
    for a in order:
        rs = by_agent[a]
        db = np.array([r["direct_bias"] for r in rs])
        sb = np.array([r["spillover_bias"] for r in rs])
        name = f"{a} (reference, not ranked)" if a == "sc-oracle" else a
        lines.append(f"| {name} | {fmt(*mean_ci(np.abs(db)))} | {fmt(*mean_ci(np.abs(sb)))} | "
                     f"{fmt(*mean_ci(db))} | {fmt(*mean_ci(sb))} | {fmt(*rmse_ci(db))} | {fmt(*rmse_ci(sb))} |")
    return lines + [""]


def summary_table(rows: list[dict[str, Any]], configs: list[str], key: str) -> list[str]:
    agents_ = [a for a in AGENTS]
    lines = ["| config | " + " | ".join(agents_) + " |", "|---|" + "---|" * len(agents_)]
    for c in configs:
        cells = []
        for a in agents_:
            v = np.array([r[key] for r in rows if r["config"] == c and r["agent"] == a])
            cells.append(f"{v.mean():.2f}" if v.size else "-")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return lines + [""]


def figures(rows: list[dict[str, Any]]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    FIG.mkdir(parents=True, exist_ok=True)
    base = [r for r in rows if r["config"] == "grid-r1"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, key, label in ((axes[0], "direct_bias", "DE bias / sd(Y)"), (axes[1], "spillover_bias", "SE bias / sd(Y)")):
        for i, a in enumerate(AGENTS):
            v = [r[key] for r in base if r["agent"] == a]
            ax.scatter(v, [i] * len(v), s=12, alpha=0.6)
            if v:
                ax.plot([np.mean(v)] * 2, [i - 0.3, i + 0.3], color="k")
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_xlabel(label)
    axes[0].set_yticks(range(len(AGENTS)), AGENTS)
    fig.suptitle("grid-r1 (40 x 40, radius 1): per-seed bias, black = mean")
    fig.tight_layout()
    p1 = FIG / "spatial_causal_bias_grid_r1.png"
    fig.savefig(p1, dpi=120)
    plt.close(fig)

    sweep = [r for r in rows if r["config"].startswith("sweep")]
    fig, ax = plt.subplots(figsize=(6, 4))
    for a in ("spatial-deconfounder", "sc-ols-exposure", "sc-spatialplus", "sc-oracle"):
        rs = [r for r in sweep if r["agent"] == a]
        ax.scatter([r["confounding_score"] for r in rs], [r["spillover_error"] for r in rs], s=14, label=a)
    ax.set_xlabel("confounding score (SpaCE-style, / sd(Y))")
    ax.set_ylabel("SE error / sd(Y)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p2 = FIG / "spatial_causal_se_error_vs_confounding.png"
    fig.savefig(p2, dpi=120)
    plt.close(fig)
    return [f"![bias per seed](figures/{p1.name})", "", f"![SE error vs confounding](figures/{p2.name})", ""]


NOTES_START, NOTES_END = "<!-- notes: kept across regenerations -->", "<!-- /notes -->"


def _kept_notes() -> str:
    """The hand-written findings between the notes markers of the current page (kept verbatim)."""
    if DOC.exists():
        text = DOC.read_text()
        if NOTES_START in text and NOTES_END in text:
            return text[text.index(NOTES_START):text.index(NOTES_END) + len(NOTES_END)]
    return f"{NOTES_START}\n{NOTES_END}"


def report(all_rows: list[dict[str, Any]], configs: dict[str, dict[str, Any]], seeds: int) -> str:
    rows = [r for r in all_rows if r["agent"] in AGENTS]
    ablation_rows = [r for r in all_rows if r["agent"] in ABLATIONS or r["agent"] == "spatial-deconfounder"]
    main = [c for c in configs if not c.startswith(("sweep", "stress"))]
    stress = [c for c in configs if c.startswith("stress")]
    sweep = [c for c in configs if c.startswith("sweep")]
    out = ["# spatial_causal: results", "",
           f"Generated by `python experiments/spatial_causal.py` (seeds 0..{seeds - 1}, one data set per seed "
           "drawn as `reset(seed=derive_seed(seed, \"eval\", 0))`, the first episode of the task trial with "
           "that seed). Every error and bias is divided by sd(Y) over the scored units (SpaCE). "
           "Bias = estimate - truth; error = |bias|. `sc-oracle` sees the hidden confounder and is a "
           "reference, never ranked. Measured on a shared 2-core machine (CPU times below are process "
           "times).", ""]
    out += [_kept_notes(), ""]
    out += ["## Summary: mean of (DE error + SE error) / 2", ""]
    out += summary_table(rows, main + stress + sweep, "error")
    out += ["## Main configurations", ""]
    for c in main:
        out += agent_table([r for r in rows if r["config"] == c], f"{c}: {configs[c] or 'method card default'}")
    # card comparison in raw units
    base = [r for r in rows if r["config"] == "grid-r1"]
    if base:
        out += ["### Against the method card (grid-r1, raw outcome units = bias x sd(Y))", "",
                "| agent | DE bias (raw) | SE bias (raw) | card |", "|---|---|---|---|"]
        card = {"sc-ols": "DE 0.88", "sc-ols-exposure": "DE 0.48, SE 2.48", "sc-oracle": "~0"}
        for a, note in card.items():
            rs = [r for r in base if r["agent"] == a]
            if rs:
                de = np.array([r["direct_bias"] * r["sd_y"] for r in rs])
                se = np.array([r["spillover_bias"] * r["sd_y"] for r in rs])
                out.append(f"| {a} | {fmt(*mean_ci(de))} | {fmt(*mean_ci(se))} | {note} |")
        out.append("")
    out += ["## Stress variants", ""]
    for c in stress:
        out += agent_table([r for r in rows if r["config"] == c], f"{c}: {configs[c]}")
    out += ["## Difficulty buckets", "",
            "Data sets of the sweep (length-scale 2 or 8, confounder strength 0.5 or 1.5 in both "
            f"treatment and outcome, {seeds} seeds each) split at the medians of their measured Moran's I "
            "of U (smoothness) and confounding score.", ""]
    sw = [r for r in rows if r["config"] in sweep]
    if sw:
        per_ds = {(r["config"], r["seed"]): r for r in sw}
        sm_med = float(np.median([r["smoothness"] for r in per_ds.values()]))
        cs_med = float(np.median([r["confounding_score"] for r in per_ds.values()]))
        out.append(f"Medians: Moran's I {sm_med:.3f}, confounding score {cs_med:.3f}.")
        out.append("")
        for sm_lab, sm_hi in (("low", False), ("high", True)):
            for cs_lab, cs_hi in (("low", False), ("high", True)):
                rs = [r for r in sw if (r["smoothness"] > sm_med) == sm_hi and (r["confounding_score"] > cs_med) == cs_hi]
                if rs:
                    out += agent_table(rs, f"smoothness {sm_lab}, confounding {cs_lab}")
    out += ["## Ablations of the Spatial Deconfounder", "",
            "Same data sets; one change to the default configuration each (see `DeconfounderConfig`).", ""]
    for c in ABLATION_CONFIGS:
        rs = [r for r in ablation_rows if r["config"] == c]
        if rs:
            out += agent_table(rs, c)
    out += ["## Spatial lag models: estimated rho", "",
            "2SLS leaves rho unconstrained; the smooth unmeasured confounder shows up as spatial "
            "autocorrelation of Y, so rho^ is large. Effects use rho clipped to +-0.99 when rho^ is "
            "outside; the count of such data sets is given.", "",
            "| config | s2sls mean rho^ | s2sls clipped | durbin mean rho^ | durbin clipped |",
            "|---|---|---|---|---|"]
    for c in configs:
        cells = []
        for a in ("sc-s2sls", "sc-durbin"):
            ds = [r.get("diagnostics") or {} for r in rows if r["config"] == c and r["agent"] == a]
            rhos = [d["rho"] for d in ds if "rho" in d]
            cells += [f"{np.mean(rhos):.3f} (n={len(rhos)})" if rhos else "-",
                      str(int(sum(d.get("rho_clipped", 0.0) for d in ds)))]
        out.append(f"| {c} | " + " | ".join(cells) + " |")
    out.append("")
    out += ["## Cost", "", "| agent | mean CPU s per data set (grid-r1) |", "|---|---|"]
    for a in AGENTS:
        v = [r["cpu_s"] for r in base if r["agent"] == a]
        if v:
            out.append(f"| {a} | {np.mean(v):.2f} |")
    out += ["", "## Figures", ""] + figures(rows)
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--only", nargs="*", help="configuration names to run (default: all)")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    configs = configurations()
    chosen = {k: v for k, v in configs.items() if not args.only or k in args.only}
    rows = run(chosen, args.seeds)
    if not args.no_report:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(report(rows, chosen, args.seeds))
        print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
