"""Weather results: every agent on the synthetic sphere, extremes, EMFormer ablations.

    python experiments/weather.py run        # trains and scores (resumable; ~20 CPU-minutes)
    python experiments/weather.py report     # writes docs/results/weather.md and the figures

Setup: the default ``icml26/WeatherRollout-v0`` (synthetic sphere, world seed 0, train
2000-2002, test 2003, z500 t850 t2m u10 v10, history 2). Each learned agent is trained with
seeds 0, 1, 2 (the deterministic baselines once) and rolled out 40 six-hour steps from 80
initializations spread evenly over 2003 with the batched ``rollout`` (the same forecast as the
env loop; tested in tests/weather/test_weather_env.py). Scores: ForecastScorer (latitude-weighted
RMSE, ACC, activity, top-quantile error, CSI/ETS/frequency bias/SEDI at the training period's
95th and 99th percentiles) and hit rates inside the injected heatwaves and cyclones.
Every (agent, seed) result is saved under results/weather/ and reused on the next run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from icml26.provenance import add_allow_dirty, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "weather"
DOC = ROOT / "docs" / "results" / "weather.md"
FIG = ROOT / "docs" / "results" / "figures"
N_INITS = 80
SEEDS = (0, 1, 2)
EMF = {"updates": 600, "finetune_lengths": (2, 4, 8), "finetune_updates": 25}
N_APPLICATIONS = EMF["updates"] + EMF["finetune_updates"] * sum(EMF["finetune_lengths"])  # 950
# name -> (registered agent, kwargs, seeded?)
AGENTS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "persistence": ("weather-persistence", {}, False),
    "climatology": ("weather-climatology", {}, False),
    "damped-persistence": ("weather-damped-persistence", {}, False),
    "ridge": ("weather-ridge", {}, False),
    "resnet": ("weather-resnet", {"updates": 1000}, True),
    "emformer": ("emformer", EMF, True),
    # Ablations (compute-matched): plain latitude-weighted MSE instead of the composite loss;
    # no accumulative context fine-tuning, the same number of model applications spent on
    # one-step updates instead (600 + 25 * (2 + 4 + 8) = 950).
    "emformer-mse": ("emformer", {**EMF, "loss": "mse"}, True),
    "emformer-no-finetune": (
        "emformer",
        {**EMF, "updates": N_APPLICATIONS, "finetune_updates": 0},
        True,
    ),
    # Fine-tuning at one fixed rollout length (5 steps, the released training script's setting)
    # instead of accumulating 2 -> 4 -> 8, with the same 350 fine-tuning model applications.
    "emformer-fixed5": (
        "emformer",
        {**EMF, "finetune_lengths": (5,), "finetune_updates": 70},
        True,
    ),
}
DAYS = (1, 3, 5, 7, 10)


def _setup() -> dict[str, Any]:
    import gymnasium as gym

    import icml26  # noqa: F401

    env = gym.make("icml26/WeatherRollout-v0")
    u = env.unwrapped
    test = u.dataset("test")
    inits = u.evaluation_init_times(N_INITS)
    idx = np.searchsorted(test.times, inits)
    return {"env": u, "train": u.dataset("train"), "test": test, "inits": inits, "idx": idx}


def _event_masks(s: dict[str, Any]) -> dict[str, np.ndarray]:
    from icml26.envs.weather.synthetic import event_footprint

    ds = s["test"].data
    ds = ds.assign_attrs(s["env"]._ds.attrs)
    return {k: event_footprint(ds, k, level=0.5).values for k in ("heatwave", "cyclone")}


def run_one(name: str, seed: int, s: dict[str, Any]) -> dict[str, Any]:
    import torch

    from icml26 import agents
    from icml26.envs.weather.metrics import ForecastScorer, latitude_weights_array
    from icml26.protocol import Budget

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    np.random.seed(seed)
    reg, kwargs, _ = AGENTS[name]
    agent = agents.make(
        reg, **{**kwargs, **({"progress": False} if reg in ("emformer", "weather-resnet") else {})}
    )
    agent.reset(seed)
    t0 = time.process_time()
    stats = agent.learn(s["train"], Budget()) or {}
    learn_cpu = time.process_time() - t0
    u, test, inits, idx = s["env"], s["test"], s["inits"], s["idx"]
    arr = test.array
    lead = 40
    clim, thr = u.climatology(), u.event_thresholds((0.95, 0.99))
    scorer = ForecastScorer(u.channels, u.latitude, lead, clim, thr, tqe=True)
    masks = _event_masks(s)
    w = latitude_weights_array(u.latitude)[:, None]
    c_t2m, c_z = u.channels.index("t2m"), u.channels.index("z500")
    q05_z = np.quantile(s["train"].array[:, c_z], 0.05, axis=0)
    ev = {
        k: {"hit": np.zeros(lead), "truth_hit": np.zeros(lead), "area": np.zeros(lead)}
        for k in masks
    }
    t0 = time.process_time()
    for b in range(0, inits.size, 30):
        sl = slice(b, b + 30)
        ctx = np.stack([arr[i - 1 : i + 1] for i in idx[sl]])
        fc = agent.rollout(ctx, inits[sl], lead)
        truth = np.stack([arr[i + 1 : i + 1 + lead] for i in idx[sl]])
        valid = inits[sl][:, None] + np.timedelta64(6, "h") * np.arange(1, lead + 1)[None]
        scorer.update(fc, truth, valid)
        # Known extremes: area-weighted share of each injected event's footprint where the
        # forecast (and the truth) crosses the event threshold: t2m above its 95th percentile
        # for heatwaves, z500 below its 5th percentile for cyclones.
        vi = idx[sl][:, None] + np.arange(1, lead + 1)[None]
        for kind, m in masks.items():
            mk = m[vi] * w  # (B, L, lat, lon)
            if kind == "heatwave":
                f_ev, o_ev = (
                    fc[:, :, c_t2m] > thr.values[0, c_t2m],
                    truth[:, :, c_t2m] > thr.values[0, c_t2m],
                )
            else:
                f_ev, o_ev = fc[:, :, c_z] < q05_z, truth[:, :, c_z] < q05_z
            ev[kind]["hit"] += (mk * f_ev).sum(axis=(0, 2, 3))
            ev[kind]["truth_hit"] += (mk * o_ev).sum(axis=(0, 2, 3))
            ev[kind]["area"] += mk.sum(axis=(0, 2, 3))
    roll_cpu = time.process_time() - t0
    res = scorer.result()
    out = {
        "agent": name,
        "registered": reg,
        "kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()},
        "seed": seed,
        "learn_cpu_s": learn_cpu,
        "rollout_cpu_s": roll_cpu,
        "n_inits": int(inits.size),
        "scores": {
            v: {c: res[v].sel(channel=c).values.tolist() for c in u.channels}
            for v in ("rmse", "rmse_per_init", "acc", "bias", "activity", "truth_activity", "tqe")
        },
        "extremes": {
            v: {c: res[v].sel(channel=c).values.tolist() for c in u.channels}
            for v in ("csi", "ets", "frequency_bias", "sedi")
        },
        "events": {
            k: {
                "forecast_hit_rate": (e["hit"] / np.maximum(e["area"], 1e-12)).tolist(),
                "truth_hit_rate": (e["truth_hit"] / np.maximum(e["area"], 1e-12)).tolist(),
                "area": e["area"].tolist(),
            }
            for k, e in ev.items()
        },
        "learn": {
            k: v
            for k, v in stats.items()
            if k
            in (
                "updates",
                "parameters",
                "composite_balance_w",
                "log_variance",
                "alpha",
                "train_mse_normalized",
            )
        },
    }
    return out


def cmd_run(names: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    s = _setup()
    for name in names:
        seeds = SEEDS if AGENTS[name][2] else (0,)
        for seed in seeds:
            path = OUT / f"{name}_s{seed}.json"
            if path.exists():
                continue
            t = time.time()
            r = run_one(name, seed, s)
            path.write_text(json.dumps(r))
            z = r["scores"]["rmse"]["z500"]
            print(
                f"{name} s{seed}: learn {r['learn_cpu_s']:.0f} CPU-s, rollout {r['rollout_cpu_s']:.0f} CPU-s, "
                f"wall {time.time() - t:.0f} s; z500 RMSE 3d {z[11]:.0f} 5d {z[19]:.0f}",
                flush=True,
            )


# ----------------------------------------------------------------------------- report
def _load() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in sorted(OUT.glob("*_s*.json")):
        r = json.loads(p.read_text())
        out.setdefault(r["agent"], []).append(r)
    return out


def _stat(vals: list[float]) -> str:
    from icml26.stats import mean_ci

    v = np.asarray(vals, dtype=float)
    if v.size == 1:
        return f"{v[0]:.3g}"
    m, lo, hi = mean_ci(v)
    return f"{m:.3g} [{lo:.3g}, {hi:.3g}]"


def _fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}g}" if np.isfinite(x) else "n/a"


def cmd_report() -> None:  # noqa: C901
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml26.stats import paired_comparison

    res = _load()
    order = [a for a in AGENTS if a in res]
    main = [
        a
        for a in order
        if a in ("persistence", "climatology", "damped-persistence", "ridge", "resnet", "emformer")
    ]
    leads = np.arange(1, 41) * 6 / 24
    lines: list[str] = []
    w = lines.append
    w("# Weather rollouts (EMFormer): results\n")
    w(
        "Produced by `python experiments/weather.py run && python experiments/weather.py report` "
        "on the synthetic sphere (default `icml26/WeatherRollout-v0`: world seed 0, 5.625 deg grid, "
        "train 2000-2002, test 2003, z500 t850 t2m u10 v10). Each forecast is 40 six-hour steps (10 "
        f"days), open loop, from {N_INITS} initializations spread evenly over 2003. Learned agents: "
        f"training seeds {', '.join(map(str, SEEDS))}, shown as mean [95% t-interval over seeds]; "
        "persistence, climatology, damped persistence and ridge are deterministic given the data "
        "(one run). Metrics follow WeatherBench 2 (cell-area latitude weights, RMSE = sqrt of the "
        "time-mean MSE, uncentred ACC against the training period's day-of-year x hour climatology). "
        "Compute was bounded for a shared 2-core machine: EMFormer has "
        f"{res['emformer'][0]['learn'].get('parameters', 0) / 1e3:.0f} k parameters (dim 32, 4 heads, "
        "1 + 3 + 1 hourglass blocks) and sees "
        f"{EMF['updates']} one-step updates of batch 8 plus accumulative fine-tuning of "
        f"{EMF['finetune_updates']} updates at each rollout length 2, 4 and 8 "
        f"({N_APPLICATIONS} model applications in all).\n"
    )

    for metric, title in (("rmse", "RMSE"), ("acc", "ACC")):
        w(f"## {title} against lead time\n")
        w(
            "| agent | "
            + " | ".join(
                f"{c.upper()} {d}d" for c in ("z500", "t850", "t2m", "u10") for d in (1, 3, 5, 10)
            )
            + " |"
        )
        w("|---|" + "---|" * 16)
        for a in main:
            cells = []
            for c in ("z500", "t850", "t2m", "u10"):
                for d in (1, 3, 5, 10):
                    vals = [r["scores"][metric][c][4 * d - 1] for r in res[a]]
                    cells.append(_stat(vals) if np.all(np.isfinite(vals)) else "n/a")
            w(f"| {a} | " + " | ".join(cells) + " |")
        w("")
    w(
        "Units: Z500 m2/s2, T850 and T2M K, U10 m/s. Climatology's ACC is undefined (its anomaly is "
        "zero). Reference, ERA5 at 5.625 deg (WeatherBench 1, test 2017-18), Z500 RMSE at 3 / 5 days: "
        "persistence 936 / 1033, weekly climatology 816, iterative linear regression 718 / 810, "
        "operational IFS 154 / 334; Z500 ACC persistence 0.62 / 0.53.\n"
    )

    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for j, c in enumerate(("z500", "t850", "t2m", "u10")):
        for a in main:
            for i, metric in enumerate(("rmse", "acc")):
                vals = np.array([r["scores"][metric][c] for r in res[a]])
                (line,) = axes[i, j].plot(leads, vals.mean(0), label=a)
                if vals.shape[0] > 1:  # band: min to max over training seeds
                    axes[i, j].fill_between(
                        leads, vals.min(0), vals.max(0), alpha=0.2, color=line.get_color()
                    )
        axes[0, j].set_title(c.upper())
        axes[1, j].set_xlabel("lead (days)")
    axes[0, 0].set_ylabel("RMSE")
    axes[1, 0].set_ylabel("ACC")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    FIG.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG / "weather_rmse_acc.png", dpi=90)
    plt.close(fig)
    w("![RMSE and ACC against lead](figures/weather_rmse_acc.png)\n")

    w("## Extremes\n")
    w(
        "Events above each grid point's 95th / 99th percentile of the training period (2 m "
        "temperature), area-weighted contingency tables over all initializations; top-quantile "
        "error (FourCastNet, 100 quantiles 1 - logspace(-5, -0.1)) of T2M and U10; activity = RMS "
        "forecast anomaly relative to the truth's (1 = no blurring).\n"
    )
    w(
        "| agent | T2M SEDI q95 1d | 3d | 5d | T2M CSI q95 3d | T2M freq. bias q95 3d | T2M SEDI q99 3d | T2M TQE 3d | U10 TQE 3d | Z500 activity ratio 5d |"
    )
    w("|---|---|---|---|---|---|---|---|---|---|")

    def g(rs: list[dict[str, Any]], key: str, c: str, q: int, d: int) -> list[float]:
        return [r["extremes"][key][c][4 * d - 1][q] for r in rs]  # (lead, quantile)

    def tq(rs: list[dict[str, Any]], c: str, d: int) -> list[float]:
        return [r["scores"]["tqe"][c][4 * d - 1] for r in rs]

    for a in main:
        rs = res[a]
        act = [
            r["scores"]["activity"]["z500"][19] / r["scores"]["truth_activity"]["z500"][19]
            for r in rs
        ]
        w(
            f"| {a} | {_stat(g(rs, 'sedi', 't2m', 0, 1))} | {_stat(g(rs, 'sedi', 't2m', 0, 3))} | "
            f"{_stat(g(rs, 'sedi', 't2m', 0, 5))} | {_stat(g(rs, 'csi', 't2m', 0, 3))} | "
            f"{_stat(g(rs, 'frequency_bias', 't2m', 0, 3))} | {_stat(g(rs, 'sedi', 't2m', 1, 3))} | "
            f"{_stat(tq(rs, 't2m', 3))} | {_stat(tq(rs, 'u10', 3))} | {_stat(act)} |"
        )
    w("")
    w(
        "**Injected extremes (known ground truth).** Share of the injected events' footprints "
        "(cells where the injected anomaly is at least half its peak) in which the forecast crosses "
        "the event threshold: heatwaves, T2M above its 95th percentile; cyclones, Z500 below its 5th "
        "percentile. The truth row shows how often the truth itself crosses it there.\n"
    )
    w("| agent | heatwave 1d | 3d | 5d | cyclone 1d | 3d | 5d |")
    w("|---|---|---|---|---|---|---|")
    first = res[main[0]][0]
    w(
        "| footprint sample (area-weighted cells) | "
        + " | ".join(
            f"{first['events'][k]['area'][4 * d - 1]:.0f}"
            for k in ("heatwave", "cyclone")
            for d in (1, 3, 5)
        )
        + " |"
    )
    w(
        "| truth | "
        + " | ".join(
            _fmt(first["events"][k]["truth_hit_rate"][4 * d - 1])
            for k in ("heatwave", "cyclone")
            for d in (1, 3, 5)
        )
        + " |"
    )
    for a in main:
        w(
            f"| {a} | "
            + " | ".join(
                _stat([r["events"][k]["forecast_hit_rate"][4 * d - 1] for r in res[a]])
                for k in ("heatwave", "cyclone")
                for d in (1, 3, 5)
            )
            + " |"
        )
    w("")

    abl = [
        a
        for a in ("emformer", "emformer-mse", "emformer-no-finetune", "emformer-fixed5")
        if a in res
    ]
    if len(abl) > 1:
        w("## EMFormer ablations\n")
        w(
            "Same architecture and the same number of model applications; `emformer-mse` replaces the "
            "composite loss by the latitude-weighted MSE; `emformer-no-finetune` spends the fine-tuning "
            f"compute on {N_APPLICATIONS - EMF['updates']} more one-step updates; `emformer-fixed5` fine-tunes "
            "at a fixed rollout length of 5 (the released training script's setting) for the same 350 "
            "fine-tuning model applications instead of accumulating 2, 4, 8. Paired differences (variant - full) over the same "
            "training seeds, with a bootstrap 95% interval; negative RMSE differences favour the variant.\n"
        )
        w(
            "| variant | Z500 RMSE 3d | 5d | 10d | T850 RMSE 5d | Z500 ACC 5d | 10d | mean normalized MSE over 40 leads |"
        )
        w("|---|---|---|---|---|---|---|---|")

        def z(rs: list[dict[str, Any]], m: str, c: str, d: int) -> list[float]:
            return [r["scores"][m][c][4 * d - 1] for r in rs]

        for a in abl:
            rs = sorted(res[a], key=lambda r: r["seed"])
            nm = [_norm_mse(r, res) for r in rs]
            w(
                f"| {a} | {_stat(z(rs, 'rmse', 'z500', 3))} | {_stat(z(rs, 'rmse', 'z500', 5))} | "
                f"{_stat(z(rs, 'rmse', 'z500', 10))} | {_stat(z(rs, 'rmse', 't850', 5))} | "
                f"{_stat(z(rs, 'acc', 'z500', 5))} | {_stat(z(rs, 'acc', 'z500', 10))} | {_stat(nm)} |"
            )
        w("")
        full = sorted(res["emformer"], key=lambda r: r["seed"])
        for a in abl[1:]:
            var = sorted(res[a], key=lambda r: r["seed"])
            if [r["seed"] for r in var] != [r["seed"] for r in full]:
                continue
            for label, fn in (
                ("Z500 RMSE 5d", lambda r: r["scores"]["rmse"]["z500"][19]),
                ("Z500 RMSE 10d", lambda r: r["scores"]["rmse"]["z500"][39]),
                ("mean normalized MSE", lambda r: _norm_mse(r, res)),
            ):
                pc = paired_comparison([fn(r) for r in var], [fn(r) for r in full], seed=0)
                w(
                    f"- {a} - emformer, {label}: {pc['mean_diff']:+.4g} [{pc['ci_low']:+.4g}, {pc['ci_high']:+.4g}] "
                    f"(n = {pc['n']}, paired t p = {_fmt(pc['t_pvalue'], 2)})"
                )
        bal = [
            r["learn"].get("composite_balance_w")
            for r in full
            if r["learn"].get("composite_balance_w") is not None
        ]
        if bal:
            w(
                f"\nLearned composite-loss balance w = (sin(theta) + 1) / 2 after training: "
                f"{', '.join(f'{b:.2g}' for b in bal)} (theta starts at -pi/2, where the gradient of w vanishes)."
            )
        w("")

    if all(
        k in res
        for k in ("persistence", "ridge", "emformer", "resnet", "climatology", "damped-persistence")
    ):
        _findings(w, res)
    w("## Cost\n")
    w(f"| agent | learn CPU-s | rollout CPU-s ({N_INITS} x 40 steps) | parameters |")
    w("|---|---|---|---|")
    for a in order:
        rs = res[a]
        w(
            f"| {a} | {_stat([r['learn_cpu_s'] for r in rs])} | {_stat([r['rollout_cpu_s'] for r in rs])} | "
            f"{rs[0]['learn'].get('parameters', '-')} |"
        )
    w(
        "\nCPU seconds on a shared 2-core machine (one thread each); absolute numbers vary with load.\n"
    )
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text("\n".join(lines))
    print(f"wrote {DOC}")


def _mean(
    res: dict[str, list[dict[str, Any]]], agent: str, metric: str, channel: str, day: int
) -> float:
    return float(np.mean([r["scores"][metric][channel][4 * day - 1] for r in res[agent]]))


def _findings(w: Any, res: dict[str, list[dict[str, Any]]]) -> None:
    """What the tables say, with the numbers pulled from the results."""
    from icml26.stats import paired_comparison

    m = lambda a, k, c, d: _mean(res, a, k, c, d)  # noqa: E731
    w("## What we measured\n")
    w(
        f"- **The synthetic sphere behaves like ERA5 where it matters for this benchmark.** Persistence "
        f"has Z500 ACC {m('persistence', 'acc', 'z500', 3):.2f} / {m('persistence', 'acc', 'z500', 5):.2f} "
        "at 3 / 5 days (ERA5, WeatherBench 1: 0.62 / 0.53) and climatology's Z500 RMSE is "
        f"{m('climatology', 'rmse', 'z500', 5):.0f} m2/s2 (ERA5 weekly climatology: 816). Its persistence "
        f"RMSE ({m('persistence', 'rmse', 'z500', 3):.0f} / {m('persistence', 'rmse', 'z500', 5):.0f}) is lower "
        "than ERA5's 936 / 1033 because persistent large-scale anomalies carry more of the variance. "
        "Persistence of 2 m temperature oscillates with a one-day period (the diurnal cycle), as it does "
        "on real data."
    )
    best = min(("ridge", "resnet", "emformer"), key=lambda a: m(a, "rmse", "z500", 5))
    w(
        f"- **At CPU scale, EMFormer does not beat the local linear model on this data.** Z500 RMSE at "
        f"5 days: ridge {m('ridge', 'rmse', 'z500', 5):.0f}, EMFormer {m('emformer', 'rmse', 'z500', 5):.0f}, "
        f"ResNet {m('resnet', 'rmse', 'z500', 5):.0f}, damped persistence {m('damped-persistence', 'rmse', 'z500', 5):.0f}, "
        f"persistence {m('persistence', 'rmse', 'z500', 5):.0f} (best learned: {best}). The sphere's waves "
        "evolve linearly apart from the jet-speed interaction, so a per-latitude ridge regression on 5x5 "
        "patches, fitted exactly in a second, is a strong baseline; the 83 k-parameter transformer, "
        f"trained for {N_APPLICATIONS} batch-8 model applications (under two epochs), reaches it within "
        "the seed spread for T850/T2M/U10 up to 5 days but not for Z500. The paper's claim is about "
        "a 70-channel 1.4 deg model trained for days on GPUs; nothing here tests that regime."
    )
    w(
        f"- **Free-running learned models overshoot climatology at 10 days** (Z500 RMSE EMFormer "
        f"{m('emformer', 'rmse', 'z500', 10):.0f}, ResNet {m('resnet', 'rmse', 'z500', 10):.0f} vs climatology "
        f"{m('climatology', 'rmse', 'z500', 10):.0f}): their anomalies keep full amplitude once they "
        "decorrelate, while damped persistence and ridge relax toward climatology. EMFormer stays bounded "
        f"(U10 RMSE at 10 days {m('emformer', 'rmse', 'u10', 10):.2f} vs ResNet {m('resnet', 'rmse', 'u10', 10):.2f} m/s, "
        "which drifts)."
    )
    full = sorted(res["emformer"], key=lambda r: r["seed"])
    if "emformer-no-finetune" in res:
        nf = sorted(res["emformer-no-finetune"], key=lambda r: r["seed"])
        pc = paired_comparison(
            [_norm_mse(r, res) for r in nf], [_norm_mse(r, res) for r in full], seed=0
        )
        pz = paired_comparison(
            [r["scores"]["rmse"]["z500"][39] for r in nf],
            [r["scores"]["rmse"]["z500"][39] for r in full],
            seed=0,
        )
        w(
            f"- **Accumulative context fine-tuning helps long rollouts.** At equal compute, training on "
            "one-step targets only raises the mean normalized MSE over the 40 leads by "
            f"{pc['mean_diff']:+.3f} [{pc['ci_low']:+.3f}, {pc['ci_high']:+.3f}] and the 10-day Z500 RMSE by "
            f"{pz['mean_diff']:+.0f} [{pz['ci_low']:+.0f}, {pz['ci_high']:+.0f}] (3 paired seeds; early leads "
            "are unchanged). This agrees with the paper."
        )
    if "emformer-fixed5" in res:
        fx = sorted(res["emformer-fixed5"], key=lambda r: r["seed"])
        pc = paired_comparison(
            [_norm_mse(r, res) for r in fx], [_norm_mse(r, res) for r in full], seed=0
        )
        w(
            f"- **Accumulating (2, 4, 8 steps) is not distinguishable from fine-tuning at a fixed 5 steps** "
            f"with the same compute: {pc['mean_diff']:+.3f} [{pc['ci_low']:+.3f}, {pc['ci_high']:+.3f}] in mean "
            "normalized MSE (3 seeds). What matters here is training on the model's own rollouts at all."
        )
    if "emformer-mse" in res:
        ms = sorted(res["emformer-mse"], key=lambda r: r["seed"])
        pc = paired_comparison(
            [_norm_mse(r, res) for r in ms], [_norm_mse(r, res) for r in full], seed=0
        )
        w(
            f"- **The composite loss makes no measurable difference** ({pc['mean_diff']:+.3f} "
            f"[{pc['ci_low']:+.3f}, {pc['ci_high']:+.3f}] in mean normalized MSE for plain weighted MSE). "
            "As released, its balance parameter starts at theta = -pi/2, where d w / d theta = cos(theta) / 2 = 0; "
            "Adam's sign-like steps keep it oscillating around -pi/2, so w stays ~0 and the loss is the "
            "per-channel log-variance-weighted MSE L_gen throughout (w after training: "
            f"{', '.join(_balance(r) for r in full)})."
        )
    w(
        "- **Extremes.** Learned models and ridge have the best SEDI/CSI for 2 m temperature above its "
        "95th percentile at 1-5 days, but all of them under-forecast event frequency (frequency bias < 1) "
        "and have negative top-quantile errors: iterated mean-square forecasts blur the tails, as the "
        "activity ratios < 1 show; persistence keeps full activity and the highest hit rate inside the "
        "injected heatwaves at 3-5 days. The injected-event sample in 80 initializations is small "
        "(the footprint row gives its size), so those hit rates are indicative only.\n"
    )


def _balance(r: dict[str, Any]) -> str:
    return f"{r['learn'].get('composite_balance_w', float('nan')):.1g}"


def _norm_mse(r: dict[str, Any], res: dict[str, list[dict[str, Any]]]) -> float:
    """Mean over leads and channels of MSE / climatology's MSE (a scale-free summary)."""
    clim = res["climatology"][0]["scores"]["rmse"]
    vals = [(np.asarray(r["scores"]["rmse"][c]) / np.asarray(clim[c])) ** 2 for c in clim]
    return float(np.mean(vals))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("command", choices=("run", "report"))
    p.add_argument(
        "--agents", default=",".join(AGENTS), help="comma-separated subset of " + ", ".join(AGENTS)
    )
    add_allow_dirty(p)

    a = p.parse_args(argv)

    provenance(allow_dirty=a.allow_dirty)  # committed tree only (--allow-dirty: a draft)
    if a.command == "run":
        cmd_run([n for n in a.agents.split(",") if n])
    else:
        cmd_report()


if __name__ == "__main__":
    main(sys.argv[1:])
