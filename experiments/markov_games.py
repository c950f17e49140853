"""Rates of SOS-MD, ROSE and baselines on offline zero-sum Markov games -> docs/results/markov_games.md.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python experiments/markov_games.py            # full
    .venv/bin/python experiments/markov_games.py --seeds 3 --out /tmp/mg-quick           # quick look

Measured (all gaps exact, by backward induction):

1. gap and regularized gap against n in {1e2, ..., 1e5} (7 log-spaced points), 20 seeds, for
   SOS-MD, ROSE, plug-in Nash-VI, pessimistic Nash-VI, behavior cloning and unregularized
   self-play MD (last and average iterate), under the regimes uniform, eps_nash (eps = 0.2),
   unilateral and nash-only on the random game S = 10, A = B = 3, H = 5 (seed 0; the tasks'
   game), beta = 0.1, plus the 3-stage tree game with its card behavior (beta = 0.3). Datasets
   are nested: seed k draws 1e5 trajectories and every n uses the first n.
2. log-log slopes (OLS of log10 mean gap on log10 n, over all n and over n >= 1e3) with
   percentile-bootstrap 95% intervals over seeds (icml26.stats.bootstrap_ci, 2000 resamples).
3. SOS-MD's regularized gap against the number of self-play steps T at n = 1e4 (eta = 0.5 and
   eta = "auto"), with ROSE (T = infinity) as the reference.
4. The unregularized gap floor of ROSE for beta in {0.03, 0.1, 0.3} (uniform regime).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from icml26.agents.markov_games import (  # noqa: E402
    ROSE,
    SOSMD,
    BehaviorCloning,
    NashVI,
    PessimisticNashVI,
    SelfPlayMD,
)
from icml26.envs.markov_games import (  # noqa: E402
    collect_dataset,
    duality_gap,
    make_game,
    regularized_equilibrium,
    regularized_gap,
    unilateral_concentrability,
)
from icml26.protocol import derive_seed  # noqa: E402
from icml26.stats import bootstrap_ci  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NS = [100, 300, 1000, 3000, 10_000, 30_000, 100_000]
GAME = {"name": "random", "kwargs": {"S": 10, "A": 3, "B": 3, "H": 5, "seed": 0}}
PANELS = [  # (label, game spec, regime, beta)
    ("uniform", GAME, "uniform", 0.1),
    ("eps_nash", GAME, "eps_nash", 0.1),
    ("unilateral", GAME, "unilateral", 0.1),
    ("nash", GAME, "nash", 0.1),
    ("tree", {"name": "tree", "kwargs": {}}, "tree", 0.3),
]
AGENTS = {
    "SOS-MD": lambda beta: SOSMD(beta=beta),
    "ROSE": lambda beta: ROSE(beta=beta),
    "Nash-VI": lambda beta: NashVI(),
    "Pessimistic-VI": lambda beta: PessimisticNashVI(),
    "BC": lambda beta: BehaviorCloning(),
    "SP-MD last": lambda beta: SelfPlayMD(iterate="last"),
    "SP-MD avg": lambda beta: SelfPlayMD(iterate="average"),
}
COLORS = {
    "SOS-MD": "C3",
    "ROSE": "C1",
    "Nash-VI": "C0",
    "Pessimistic-VI": "C9",
    "BC": "C7",
    "SP-MD last": "C2",
    "SP-MD avg": "C4",
}


def slope(curves: np.ndarray, ns: np.ndarray) -> float:
    """OLS slope of log10(mean over seeds) on log10(n); ``curves`` is (seeds, len(ns))."""
    m = np.mean(curves, axis=0)
    if np.any(~np.isfinite(m)) or np.any(m <= 0):
        return float("nan")
    return float(np.polyfit(np.log10(ns), np.log10(m), 1)[0])


def slope_ci(curves: np.ndarray, ns: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    if not np.all(np.isfinite(curves)):
        return (float("nan"),) * 3
    return bootstrap_ci(curves, lambda c: slope(c, ns), reps=2000, seed=seed)


def run_rates(seeds: int, bar: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, spec, regime, beta in PANELS:
        game = make_game(spec)
        gap = np.full((len(AGENTS), seeds, len(NS)), np.nan)
        reg = np.full_like(gap, np.nan)
        secs = np.zeros(len(AGENTS))
        conc = []
        for k in range(seeds):
            full = collect_dataset(game, NS[-1], regime, seed=derive_seed(k, "markov_games", label))
            if k == 0:
                occ = full.data_occupancy()
                req = regularized_equilibrium(game, beta, full.reference_mu, full.reference_nu)
                conc = [full.concentrability(), float(unilateral_concentrability(game, occ, req))]
            for j, n in enumerate(NS):
                ds = full.head(n)
                for i, make in enumerate(AGENTS.values()):
                    agent = make(beta)
                    t0 = time.process_time()
                    agent.learn(ds)
                    secs[i] += time.process_time() - t0
                    mu, nu = agent.policy()
                    gap[i, k, j] = duality_gap(game, mu, nu)
                    reg[i, k, j] = regularized_gap(
                        game, mu, nu, beta, ds.reference_mu, ds.reference_nu
                    )
                bar.update(1)
        out[label] = {
            "gap": gap,
            "reg": reg,
            "beta": beta,
            "regime": regime,
            "game": game.describe(),
            "concentrability": conc[0],
            "concentrability_reg": conc[1],
            "cpu_s_per_fit": (secs / (seeds * len(NS))).tolist(),
        }
    return out


def run_T(seeds: int, bar: Any, n: int = 10_000) -> dict[str, Any]:
    Ts = [1, 3, 10, 30, 100, 300, 1000, 3000]
    game = make_game(GAME)
    res = {
        "Ts": Ts,
        "n": n,
        "eta=0.5": np.zeros((seeds, len(Ts))),
        "eta=auto": np.zeros((seeds, len(Ts))),
        "rose": np.zeros(seeds),
        "dist eta=0.5": np.zeros((seeds, len(Ts))),
        "dist eta=auto": np.zeros((seeds, len(Ts))),
    }
    for k in range(seeds):
        ds = collect_dataset(game, n, "uniform", seed=derive_seed(k, "markov_games", "T"))
        ref = (ds.reference_mu, ds.reference_nu)
        r = ROSE(beta=0.1)
        r.learn(ds)
        res["rose"][k] = regularized_gap(game, *r.policy(), 0.1, *ref)
        for key, eta in (("eta=0.5", 0.5), ("eta=auto", "auto")):
            for j, T in enumerate(Ts):
                a = SOSMD(beta=0.1, eta=eta, T=T)
                a.learn(ds)
                res[key][k, j] = regularized_gap(game, *a.policy(), 0.1, *ref)
                # optimization error alone: distance to the exact solve on the same data
                res["dist " + key][k, j] = max(
                    np.abs(a.policy()[0] - r.policy()[0]).max(),
                    np.abs(a.policy()[1] - r.policy()[1]).max(),
                )
        bar.update(1)
    return res


def run_beta(seeds: int, bar: Any) -> dict[str, Any]:
    game = make_game(GAME)
    betas = [0.03, 0.1, 0.3]
    res = {"betas": betas, "gap": np.zeros((len(betas), seeds, len(NS)))}
    for k in range(seeds):
        full = collect_dataset(
            game, NS[-1], "uniform", seed=derive_seed(k, "markov_games", "uniform")
        )
        for j, n in enumerate(NS):
            for i, beta in enumerate(betas):
                a = ROSE(beta=beta)
                a.learn(full.head(n))
                res["gap"][i, k, j] = duality_gap(game, *a.policy())
        bar.update(1)
    return res


# ------------------------------------------------------------------ report
def fmt_ci(est: float, lo: float, hi: float) -> str:
    if not np.isfinite(est):
        return "n/a"
    return f"{est:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def plots(
    rates: dict[str, Any], tres: dict[str, Any], bres: dict[str, Any], figdir: Path
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = np.array(NS)
    names = list(AGENTS)
    files = []
    fig, axes = plt.subplots(2, len(PANELS), figsize=(4 * len(PANELS), 7.5), sharex=True)
    for c, (label, *_rest) in enumerate(PANELS):
        r = rates[label]
        for row, key, title in (
            (0, "gap", "gap (NashConv)"),
            (1, "reg", f"regularized gap (beta={r['beta']})"),
        ):
            ax = axes[row, c]
            for i, name in enumerate(names):
                cur = r[key][i]
                if not np.all(np.isfinite(cur)):
                    continue
                floor = 1e-6  # exact zeros (Nash-VI on the deterministic tree game) drawn at 1e-6
                m = np.maximum(cur.mean(0), floor)
                lo, hi = (
                    np.maximum(np.quantile(cur, 0.1, 0), floor),
                    np.maximum(np.quantile(cur, 0.9, 0), floor),
                )
                style = (
                    dict(marker="x", ms=7, ls="--", lw=1.2)
                    if name == "SOS-MD"
                    else dict(marker="o", ms=3)
                )
                ax.loglog(ns, m, color=COLORS[name], label=name, **style)
                ax.fill_between(ns, lo, hi, color=COLORS[name], alpha=0.12)
            ref = r[key][1].mean(0)[2] if np.all(np.isfinite(r[key][1])) else None
            if ref is not None and row == 1:
                ax.loglog(ns, ref * (ns / ns[2]) ** -1.0, "k:", lw=1, label="slope -1")
            ax.set_title(f"{label}: {title}", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            if row == 1:
                ax.set_xlabel("n (trajectories)")
    axes[0, 0].legend(fontsize=7)
    axes[1, 0].legend(fontsize=7)
    fig.tight_layout()
    path = figdir / "markov_games_gap_vs_n.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(path.name)

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    Ts = np.array(tres["Ts"])
    for key, col in (("eta=0.5", "C3"), ("eta=auto", "C1")):
        cur = tres[key]
        ax.loglog(Ts, cur.mean(0), "o-", color=col, label=f"SOS-MD {key}")
        ax.fill_between(
            Ts, np.quantile(cur, 0.1, 0), np.quantile(cur, 0.9, 0), color=col, alpha=0.15
        )
        ax2.semilogy(
            Ts,
            np.maximum(tres["dist " + key].mean(0), 1e-16),
            "o-",
            color=col,
            label=f"SOS-MD {key}",
        )
    ax.axhline(tres["rose"].mean(), color="k", ls="--", lw=1, label="ROSE (exact stage solve)")
    ax.set_xlabel("self-play steps per stage T")
    ax.set_ylabel("regularized gap (beta = 0.1)")
    ax.set_title(f"regularized gap vs T, n = {tres['n']}, uniform data", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax2.set_xscale("log")
    ax2.set_xlabel("self-play steps per stage T")
    ax2.set_ylabel("max |policy - ROSE policy| (same data)")
    ax2.set_title("optimization error alone", fontsize=9)
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    path = figdir / "markov_games_gap_vs_T.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(path.name)

    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, beta in enumerate(bres["betas"]):
        cur = bres["gap"][i]
        ax.loglog(ns, cur.mean(0), "o-", label=f"ROSE beta={beta}")
    nvi = rates["uniform"]["gap"][2]
    ax.loglog(ns, nvi.mean(0), "s--", color="C0", label="Nash-VI (unregularized)")
    ax.set_xlabel("n (trajectories)")
    ax.set_ylabel("gap (NashConv)")
    ax.set_title("unregularized gap: beta-dependent floor (uniform data)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = figdir / "markov_games_beta_floor.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(path.name)
    return files


def findings(rates: dict[str, Any], tres: dict[str, Any], bres: dict[str, Any]) -> list[str]:
    """The reading of the numbers above (figures interpolated from the data)."""
    ns = np.array(NS)
    tail = ns >= 1000

    def tail_slope(label: str, i: int, key: str = "reg") -> str:
        return fmt_ci(*slope_ci(rates[label][key][i][:, tail], ns[tail]))

    def at(label: str, i: int, key: str, j: int = -1) -> float:
        return float(rates[label][key][i][:, j].mean())

    sos, nvi = 0, 2  # indices in AGENTS (ROSE, index 1, matches SOS-MD to 1e-6 here)
    L = ["### Reading", ""]
    L.append(
        "- **Full coverage (uniform, eps_nash): the fast rate holds.** The regularized gap of SOS-MD "
        f"and ROSE falls with tail slope {tail_slope('uniform', sos)} (uniform) and "
        f"{tail_slope('eps_nash', sos)} (eps_nash), i.e. at least as fast as 1/n over 1e3-1e5 "
        f"(to {at('uniform', sos, 'reg'):.1e} and {at('eps_nash', sos, 'reg'):.1e} at n = 1e5). "
        "The unregularized baselines' regularized gaps flatten, as they should: they target a "
        "different point. The slopes steeper than -1 at moderate n are pre-asymptotic: cells the "
        "behavior rarely visits (eps/3 per player under eps_nash) are still being filled in; the "
        "local slope approaches -1 over the last decade."
    )
    L.append(
        "- **Unilateral data: the fast rate does not hold here, and the reason is coverage of the "
        "regularized equilibrium.** The regularized gap flattens at "
        f"{at('unilateral', sos, 'reg'):.1e} (tail slope {tail_slope('unilateral', sos)}). The "
        "regime mixes (mu*, uniform) and (uniform, nu*) built from the *unregularized* Nash "
        "equilibrium, which is not fully mixed in this game; action pairs outside both supports "
        "are never observed (Q^ stays at its ridge prior there), while the regularized "
        "equilibrium plays every action. C* around the Nash equilibrium is "
        f"{rates['unilateral']['concentrability']:.3g}, around the regularized equilibrium it is "
        f"{rates['unilateral']['concentrability_reg']:.3g}: the paper's O(1/n) needs the latter."
    )
    L.append(
        "- **Nash-only data is not a negative control for SOS-MD with the behavior reference.** With "
        "reference = behavior = (mu*, nu*), the Nash pair is itself the regularized equilibrium "
        "(both KL terms vanish there and are non-negative), so SOS-MD/ROSE converge to the Nash "
        f"equilibrium (gap {at('nash', sos, 'gap'):.2g} at n = 1e5, tail slope "
        f"{tail_slope('nash', sos, 'gap')}), while plug-in and pessimistic Nash-VI stay at gap "
        f"{at('nash', nvi, 'gap'):.2g}: they leave the data's support, where Q^ is unidentified. "
        "Coverage fails for them as intended."
    )
    L.append(
        "- **The unregularized gap of SOS-MD/ROSE has a beta-dependent floor** (uniform data: "
        f"{at('uniform', sos, 'gap'):.2g} at beta = 0.1; ROSE at n = 1e5: "
        + ", ".join(
            f"{bres['gap'][i][:, -1].mean():.2g} at beta = {b}" for i, b in enumerate(bres["betas"])
        )
        + f"), while plug-in Nash-VI keeps improving (tail slope {tail_slope('uniform', nvi, 'gap')}, "
        f"gap {at('uniform', nvi, 'gap'):.2g} at n = 1e5). KL regularization buys the fast rate of "
        "the regularized objective at the price of a bias in the unregularized one."
    )
    L.append(
        "- **Tree game** (beta = 0.3, card behavior): regularized-gap tail slope "
        f"{tail_slope('tree', sos)}; plug-in Nash-VI solves the deterministic game exactly once "
        "every reachable cell is seen (gap 0 to rounding), while the regularized methods keep the "
        f"beta = 0.3 bias ({at('tree', sos, 'gap'):.2g}). The tree game is deterministic, so Q^ "
        "carries no sampling noise, only the ridge bias lambda / (N + lambda) = O(1/n); the "
        "regularized gap, quadratic in the policy error, then falls like 1/n^2, which is the "
        "slope near -2 measured here."
    )
    d = tres["dist eta=auto"].mean(0)
    floor = tres["rose"].mean()

    def reached(key: str) -> str:
        ok = [T for T, v in zip(tres["Ts"], tres[key].mean(0)) if v <= 1.1 * floor]
        return f"T = {ok[0]}" if ok else f"no T <= {tres['Ts'][-1]}"

    L.append(
        "- **T:** the regularized gap of SOS-MD decays geometrically in T down to the statistical "
        f"floor of ROSE ({floor:.2g} at n = {tres['n']}), within 10% of it by {reached('eta=0.5')} "
        f"(eta = 0.5) and {reached('eta=auto')} (eta = 'auto'); the optimization error alone "
        f"(distance to ROSE's policy on the same data) falls to {d[-1]:.0e} at T = {tres['Ts'][-1]}."
    )
    L.append(
        "- **Baselines:** unregularized self-play MD's last iterate does not converge (it cycles); "
        "its average iterate does, slowly; behavior cloning converges to the behavior policy's "
        "gap; pessimistic VI (c = 0.1) tracks plug-in Nash-VI at large n (with full coverage "
        "pessimism has nothing to fix; with the theory constant c = 1 it stays at the pessimistic "
        "corner until n ~ 1e5)."
    )
    L.append("")
    return L


def report(
    rates: dict[str, Any],
    tres: dict[str, Any],
    bres: dict[str, Any],
    seeds: int,
    wall: float,
    cpu: float,
) -> str:
    ns = np.array(NS)
    tail = ns >= 1000
    names = list(AGENTS)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    L = ["# Offline zero-sum Markov games: rates of SOS-MD, ROSE and baselines", ""]
    L += [
        f"Generated by `experiments/markov_games.py` on {dt.date.today().isoformat()} (commit {commit}, "
        f"{seeds} seeds, {wall / 60:.1f} min wall / {cpu / 60:.1f} CPU-min on a 2-core machine shared "
        "with other jobs). Every gap is exact (backward induction on the true game); only the data are "
        "random. Gap = NashConv = (max player's best-response gain) + (min player's); OpenSpiel's "
        "exploitability is half of it.",
        "",
    ]
    L += [
        "Setup: random game S=10, A=B=3, H=5 (`make_game('random', S=10, A=3, B=3, H=5, seed=0)`, "
        "the tasks' game), rewards U[0,1], Dirichlet(1) transitions; beta = 0.1 for SOS-MD/ROSE and for "
        "the regularized gap, whose reference is the data's exact per-state marginal behavior policy "
        "(the agents regularize toward the same reference). Tree game: the 3-stage game "
        "(2x2, 2x2, RPS-fire-water) with the card's behavior, beta = 0.3. Agents at their defaults: "
        "SOS-MD T=1000, eta='auto', lambda=1; ROSE lambda=1; Nash-VI plug-in (unvisited Q = 0); "
        "pessimistic VI c=0.1; self-play MD eta=0.5, T=1000. n = "
        + ", ".join(f"{n:g}" for n in NS)
        + " trajectories; seed k draws 1e5 trajectories and every n uses the first n (nested data).",
        "",
    ]
    L += [
        "Slopes: OLS of log10(mean gap over seeds) on log10(n), over all n (1e2-1e5) and over the tail "
        "n >= 1e3; 95% percentile-bootstrap intervals over seeds (2000 resamples). A rate O(1/n) is "
        "slope -1, O(1/sqrt(n)) is -0.5, a floor is 0.",
        "",
    ]
    L += [
        "![gap vs n](figures/markov_games_gap_vs_n.png)",
        "",
        "Lines: mean over seeds; bands: 10-90% quantiles across seeds; dotted: slope -1 through "
        "ROSE's value at n = 1e3.",
        "",
    ]
    for label, *_rest in PANELS:
        r = rates[label]
        L += [
            f"## {label} data (C* = {r['concentrability']:.3g} around the Nash equilibrium, "
            f"{r['concentrability_reg']:.3g} around the regularized one)",
            "",
        ]
        L += [
            "| agent | gap @1e2 | gap @1e5 | gap slope (all n) | gap slope (n>=1e3) | reg. gap @1e5 "
            "| reg. gap slope (all n) | reg. gap slope (n>=1e3) | CPU s / fit |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for i, name in enumerate(names):
            g, rg = r["gap"][i], r["reg"][i]
            cells = [
                name,
                f"{g[:, 0].mean():.3g}",
                f"{g[:, -1].mean():.3g}",
                fmt_ci(*slope_ci(g, ns)),
                fmt_ci(*slope_ci(g[:, tail], ns[tail])),
            ]
            if np.all(np.isfinite(rg)):
                cells += [
                    f"{rg[:, -1].mean():.3g}",
                    fmt_ci(*slope_ci(rg, ns)),
                    fmt_ci(*slope_ci(rg[:, tail], ns[tail])),
                ]
            else:
                cells += ["inf", "n/a", "n/a"]
            cells.append(f"{r['cpu_s_per_fit'][i]:.3f}")
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
    # verdict on the fast rate
    L += ["## Does the fast rate hold?", ""]
    for label, *_rest in PANELS:
        r = rates[label]
        for i, name in enumerate(names[:2]):
            rg = r["reg"][i]
            if not np.all(np.isfinite(rg)):
                continue
            est, lo, hi = slope_ci(rg[:, tail], ns[tail])
            last = ns >= 10_000
            e2, lo2, hi2 = slope_ci(rg[:, last], ns[last])
            verdict = (
                "consistent with -1"
                if lo2 <= -1.0 <= hi2
                else ("steeper than -1" if hi2 < -1.0 else "shallower than -1")
            )
            L.append(
                f"- {label}, {name}: regularized-gap slope {fmt_ci(est, lo, hi)} over n >= 1e3, "
                f"{fmt_ci(e2, lo2, hi2)} over the last decade (n >= 1e4): {verdict}."
            )
    L.append("")
    L += findings(rates, tres, bres)
    Ts = tres["Ts"]
    L += [
        "## Gap against the number of self-play steps T",
        "",
        "![gap vs T](figures/markov_games_gap_vs_T.png)",
        "",
        f"Uniform data, n = {tres['n']}, beta = 0.1, {seeds} seeds; mean regularized gap in the true game:",
        "",
        "| T | " + " | ".join(str(t) for t in Ts) + " | ROSE |",
        "|---" * (len(Ts) + 2) + "|",
    ]
    for key in ("eta=0.5", "eta=auto"):
        L.append(
            f"| SOS-MD {key} | "
            + " | ".join(f"{v:.2g}" for v in tres[key].mean(0))
            + f" | {tres['rose'].mean():.2g} |"
        )
    for key in ("eta=0.5", "eta=auto"):
        L.append(
            f"| max abs policy difference to ROSE, {key} | "
            + " | ".join(f"{v:.1g}" for v in tres["dist " + key].mean(0))
            + " | 0 |"
        )
    L.append("")
    L += [
        "## The unregularized gap floor",
        "",
        "![beta floor](figures/markov_games_beta_floor.png)",
        "",
        "| ROSE beta | gap @1e2 | gap @1e3 | gap @1e4 | gap @1e5 |",
        "|---|---|---|---|---|",
    ]
    for i, beta in enumerate(bres["betas"]):
        m = bres["gap"][i].mean(0)
        L.append(f"| {beta} | {m[0]:.3g} | {m[2]:.3g} | {m[4]:.3g} | {m[6]:.3g} |")
    L.append("")
    return "\n".join(L)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    ap.add_argument(
        "--from-raw",
        action="store_true",
        help="re-render the page and figures from figures/markov_games_raw.json",
    )
    args = ap.parse_args(argv)
    figdir = args.out / "figures"
    if args.from_raw:
        raw = json.loads((figdir / "markov_games_raw.json").read_text())

        def arr(d: dict[str, Any]) -> dict[str, Any]:
            return {
                k: np.array(v, dtype=float)
                if isinstance(v, list) and k not in ("Ts", "betas")
                else v
                for k, v in d.items()
            }

        rates = {k: arr(v) for k, v in raw["rates"].items()}
        tres, bres = arr(raw["T"]), arr(raw["beta"])
        plots(rates, tres, bres, figdir)
        (args.out / "markov_games.md").write_text(
            report(rates, tres, bres, raw["seeds"], raw["wall_s"], raw["cpu_s"])
        )
        return 0
    from tqdm.auto import tqdm

    figdir.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.time(), time.process_time()
    total = len(PANELS) * args.seeds * len(NS) + 2 * args.seeds
    with tqdm(total=total, desc="markov_games experiments", file=sys.stderr) as bar:
        rates = run_rates(args.seeds, bar)
        tres = run_T(args.seeds, bar)
        bres = run_beta(args.seeds, bar)
    wall, cpu = time.time() - t0, time.process_time() - c0
    plots(rates, tres, bres, figdir)
    raw = {
        "ns": NS,
        "agents": list(AGENTS),
        "seeds": args.seeds,
        "wall_s": wall,
        "cpu_s": cpu,
        "rates": {
            k: {kk: (vv.tolist() if isinstance(vv, np.ndarray) else vv) for kk, vv in v.items()}
            for k, v in rates.items()
        },
        "T": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in tres.items()},
        "beta": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in bres.items()},
    }
    (figdir / "markov_games_raw.json").write_text(json.dumps(raw, allow_nan=True))
    (args.out / "markov_games.md").write_text(report(rates, tres, bres, args.seeds, wall, cpu))
    print(f"wrote {args.out / 'markov_games.md'} ({wall / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
