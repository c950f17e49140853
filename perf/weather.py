"""Weather family speed, measured side by side in one run and printed as ratios.

    python perf/weather.py              # full: a year of initializations (730 x 40 steps x 5 vars)
    python perf/weather.py --quick      # 73 initializations, for a smoke check

1. Scoring a 40-step forecast of 5 variables over a year of initializations every 12 h
   (WeatherBench 2's protocol) with ``icml26.envs.weather.metrics.ForecastScorer`` against a
   plain xarray implementation of the same formulas (``xarray_reference``: ``.weighted().mean()``,
   truth aligned with ``.sel(time=valid_time)``, climatology with ``.sel(dayofyear, hour)``), on
   the same chunks of initializations; both results are checked to agree.
2. Rollout speed of the EMFormer-style model (6-hour steps per second): through the env with
   ``act`` (batch 1) and batched ``rollout``; the ResNet baseline for scale.
3. EMFormer's merged multi-scale convolution (one 5x5 depthwise conv) against the three
   separate 1x1, 3x3, 5x5 convolutions it replaces.
4. Synthetic-sphere generation: simulated years per second.
Absolute times depend on the (shared) machine; the ratios are what to compare.
"""

from __future__ import annotations

import argparse
import functools
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import xarray as xr


def _timeit(fn, repeats: int = 1) -> float:  # type: ignore[no-untyped-def]
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


class XarrayScorer:
    """Plain-xarray accumulation of the same sums the ForecastScorer keeps."""

    def __init__(
        self,
        clim_ds: xr.Dataset,
        obs: xr.Dataset,
        thresholds: dict[str, xr.DataArray],
        channels,
        tqe: bool,
    ):  # type: ignore[no-untyped-def]
        from icml26.envs.weather import xarray_reference as ref
        from icml26.envs.weather.grid import parse_channel

        self.ref, self.clim, self.obs, self.thr, self.tqe = ref, clim_ds, obs, thresholds, tqe
        self.vars = {c: parse_channel(c) for c in channels}
        self.sums: dict[str, dict[str, xr.DataArray]] = {c: {} for c in channels}
        self.n = 0
        self.q = 1.0 - np.logspace(-5, -0.1, 100)

    def _sel(self, ds: xr.Dataset, c: str) -> xr.DataArray:
        ch = self.vars[c]
        da = ds[ch.variable]
        return da.sel(level=ch.level) if ch.level is not None else da

    def update(self, forecast: xr.Dataset) -> None:
        ref = self.ref
        w = ref.cell_area_weights(forecast["latitude"])
        self.n += forecast.sizes["time"]
        for c, acc in self.sums.items():
            f = self._sel(forecast, c)
            o = ref.align_truth(f, self._sel(self.obs, c))
            parts = {}
            if self.tqe:
                qf = f.quantile(self.q, dim=ref.SPATIAL)
                qo = o.quantile(self.q, dim=ref.SPATIAL)
                parts["tqe"] = (qf - qo).mean("quantile").sum("time")
            else:
                cl = ref.climatology_at(self._sel(self.clim, c), f)
                mse = ref.mse(f, o, w)
                parts["mse"] = mse.sum("time")
                parts["rmse_init"] = np.sqrt(mse).sum("time")
                parts["bias"] = (f - o).weighted(w).mean(ref.SPATIAL).sum("time")
                fa, oa = f - cl, o - cl
                ff = (fa**2).weighted(w).mean(ref.SPATIAL)
                oo = (oa**2).weighted(w).mean(ref.SPATIAL)
                parts["acc"] = ((fa * oa).weighted(w).mean(ref.SPATIAL) / np.sqrt(ff * oo)).sum(
                    "time"
                )
                parts["act"] = ff.sum("time")
                for q, thr in self.thr.items():
                    for k, v in ref.contingency(f, o, self._sel(thr, c), w).items():
                        parts[f"{k}{q}"] = v
            for k, v in parts.items():
                acc[k] = v if k not in acc else acc[k] + v

    def result(self) -> dict[str, dict[str, np.ndarray]]:
        out = {}
        for c, s in self.sums.items():
            if self.tqe:
                out[c] = {"tqe": (s["tqe"] / self.n).values}
                continue
            r = {
                "rmse": np.sqrt(s["mse"] / self.n).values,
                "rmse_per_init": (s["rmse_init"] / self.n).values,
                "bias": (s["bias"] / self.n).values,
                "acc": (s["acc"] / self.n).values,
                "activity": np.sqrt(s["act"] / self.n).values,
            }
            for q in self.thr:
                t = {k: s[f"{k}{q}"] for k in ("tp", "fp", "fn", "tn")}
                for k, v in self.ref.scores_from_table(t).items():
                    r[f"{k}{q}"] = v.values
            out[c] = r
        return out


def _score_chunk(scorer, fc, arr, rows, valid) -> None:  # type: ignore[no-untyped-def]
    truth = arr[rows[:, None] + np.arange(1, 41)[None]]
    scorer.update(fc, truth, valid)


def bench_scoring(n_inits: int, chunk: int) -> dict[str, float]:
    import gymnasium as gym

    import icml26  # noqa: F401
    from icml26 import agents
    from icml26.envs.weather.forecast_io import forecast_dataset
    from icml26.envs.weather.metrics import ForecastScorer

    env = gym.make("icml26/WeatherRollout-v0")
    u = env.unwrapped
    test = u.dataset("test")
    inits = u.init_times[:: max(1, u.init_times.size // n_inits)][:n_inits]
    idx = np.searchsorted(test.times, inits)
    arr = test.array
    clim = u.climatology()
    thr = u.event_thresholds((0.95, 0.99))
    agent = agents.make("weather-damped-persistence")
    agent.learn(u.dataset("train"))
    channels = u.channels
    lat, lon = u.latitude, u.longitude
    clim_ds = clim.to_dataset(lat, lon)
    thr_ds = {
        q: forecast_dataset(thr.values[k][None, None], [inits[0]], channels, lat, lon).isel(
            time=0, prediction_timedelta=0, drop=True
        )
        for k, q in enumerate(thr.quantiles)
    }
    obs = test.data
    t_ours = {"core": 0.0, "tqe": 0.0}
    t_xr = {"core": 0.0, "tqe": 0.0}
    ours_core = ForecastScorer(channels, lat, 40, clim, thr, tqe=False)
    ours_tqe = ForecastScorer(channels, lat, 40, None, None, tqe=True)
    xr_core = XarrayScorer(clim_ds, obs, thr_ds, channels, tqe=False)
    xr_tqe = XarrayScorer(clim_ds, obs, thr_ds, channels, tqe=True)
    from tqdm.auto import tqdm

    for s in tqdm(range(0, inits.size, chunk), desc="scoring chunks", unit="chunk"):
        sl = slice(s, s + chunk)
        ctx = np.stack([arr[i - 1 : i + 1] for i in idx[sl]])
        fc = agent.rollout(ctx, inits[sl], 40)
        valid = inits[sl][:, None] + np.timedelta64(6, "h") * np.arange(1, 41)[None]
        fds = forecast_dataset(fc, inits[sl], channels, lat, lon)
        # Our path includes looking the truth up by valid time, as the xarray one does.
        ours = functools.partial(_score_chunk, fc=fc, arr=arr, rows=idx[sl], valid=valid)
        t_ours["core"] += _timeit(functools.partial(ours, ours_core))
        t_xr["core"] += _timeit(functools.partial(xr_core.update, fds))
        t_ours["tqe"] += _timeit(functools.partial(ours, ours_tqe))
        t_xr["tqe"] += _timeit(functools.partial(xr_tqe.update, fds))
    a, b = ours_core.result(), xr_core.result()
    worst = 0.0
    for c in channels:
        for k in ("rmse", "rmse_per_init", "bias", "acc", "activity"):
            worst = max(
                worst,
                float(
                    np.max(np.abs(a[k].sel(channel=c).values - b[c][k]) / (np.abs(b[c][k]) + 1e-9))
                ),
            )
        for q in thr.quantiles:
            for k in ("csi", "sedi"):
                x, y = a[k].sel(channel=c, quantile=q).values, b[c][f"{k}{q}"]
                worst = max(worst, float(np.nanmax(np.abs(x - y) / (np.abs(y) + 1e-9))))
    at, bt = ours_tqe.result(), xr_tqe.result()
    worst_tqe = max(
        float(
            np.max(
                np.abs(at["tqe"].sel(channel=c).values - bt[c]["tqe"])
                / (np.abs(bt[c]["tqe"]) + 1e-6)
            )
        )
        for c in channels
    )
    n_values = inits.size * 40 * len(channels) * lat.size * lon.size
    print(
        f"\n1. Scoring {inits.size} initializations x 40 leads x {len(channels)} variables "
        f"({n_values / 1e6:.0f} M forecast values), chunks of {chunk}"
    )
    print("   RMSE + per-init RMSE + ACC + bias + activity + CSI/ETS/FB/SEDI at q95, q99:")
    print(
        f"     ForecastScorer {t_ours['core']:7.2f} s | plain xarray {t_xr['core']:7.2f} s | "
        f"xarray / ours = {t_xr['core'] / t_ours['core']:.2f}x   (max relative difference {worst:.1e})"
    )
    print(
        "   top-quantile error (100 quantiles per field; ours sorts each field once and reuses the"
    )
    print("   truth's quantiles across initializations sharing a valid time):")
    print(
        f"     ForecastScorer {t_ours['tqe']:7.2f} s | plain xarray {t_xr['tqe']:7.2f} s | "
        f"xarray / ours = {t_xr['tqe'] / t_ours['tqe']:.2f}x   (max relative difference {worst_tqe:.1e})"
    )
    return {"ratio_core": t_xr["core"] / t_ours["core"], "ratio_tqe": t_xr["tqe"] / t_ours["tqe"]}


def _env_loop(env, agent, steps: int) -> None:  # type: ignore[no-untyped-def]
    obs, info = env.reset(seed=0)
    for _ in range(steps):
        obs, _r, _t, _tr, info = env.step(agent.act(obs, info))


def bench_rollout(quick: bool) -> None:
    import gymnasium as gym
    import torch

    import icml26  # noqa: F401
    from icml26 import agents

    torch.set_num_threads(1)
    env = gym.make("icml26/WeatherRollout-v0")
    u = env.unwrapped
    train = u.dataset("train")
    test = u.dataset("test")
    print("\n2. Rollout speed (6-hour steps per second, one thread)")
    rows = []
    for name in ("emformer", "weather-resnet", "weather-persistence"):
        a = agents.make(
            name,
            **(
                {"updates": 0, "finetune_updates": 0, "progress": False}
                if name != "weather-persistence"
                else {}
            ),
        )
        torch.manual_seed(0)
        a.reset(0)
        a.learn(train)
        steps = 8 if quick else 40
        t_env = _timeit(functools.partial(_env_loop, env, a, steps), 2) / steps
        inits = u.init_times[:32]
        idx = np.searchsorted(test.times, inits)
        ctx = np.stack([test.array[i - 1 : i + 1] for i in idx])
        t_b1 = _timeit(functools.partial(a.rollout, ctx[:1], inits[:1], steps), 2) / steps
        t_b32 = _timeit(functools.partial(a.rollout, ctx, inits, steps), 1) / (steps * 32)
        rows.append((name, 1 / t_env, 1 / t_b1, 1 / t_b32))
    for name, e, b1, b32 in rows:
        print(
            f"   {name:20s} env loop (act) {e:8.1f} steps/s | rollout batch 1 {b1:8.1f} | batch 32 {b32:8.1f} sample-steps/s"
        )
    emf, res = rows[0], rows[1]
    print(
        f"   EMFormer / ResNet throughput at batch 32: {emf[3] / res[3]:.2f}x; "
        f"a 40-step 10-day forecast takes {40 / emf[1] * 1e3:.0f} ms through the env"
    )


def bench_conv() -> None:
    import torch

    from icml26.agents.weather.nets import EMFormerNet, MultiScaleDepthwiseConv

    torch.set_num_threads(1)
    torch.manual_seed(0)
    conv = MultiScaleDepthwiseConv(96)
    x = torch.randn(8, 96, 16, 32)
    with torch.no_grad():
        t_merged = _timeit(lambda: [conv(x) for _ in range(20)], 3) / 20
        t_sep = _timeit(lambda: [conv.forward_separate(x) for _ in range(20)], 3) / 20
    net = EMFormerNet(17, 5, (32, 64))
    xin = torch.randn(8, 17, 32, 64)
    with torch.no_grad():
        t_net = _timeit(lambda: net(xin), 3)
        for m in net.modules():
            if isinstance(m, MultiScaleDepthwiseConv):
                m.forward = m.forward_separate  # type: ignore[method-assign]
        t_net_sep = _timeit(lambda: net(xin), 3)
    print("\n3. Multi-scale depthwise convolution (96 channels, 16 x 32 tokens, batch 8)")
    print(
        f"   merged 5x5 {t_merged * 1e3:.2f} ms | three separate {t_sep * 1e3:.2f} ms | separate / merged = {t_sep / t_merged:.2f}x"
    )
    print(
        f"   whole EMFormer forward: merged {t_net * 1e3:.1f} ms | separate {t_net_sep * 1e3:.1f} ms | ratio {t_net_sep / t_net:.2f}x"
    )


def bench_generation() -> None:
    from icml26.envs.weather.lorenz96 import generate_lorenz96
    from icml26.envs.weather.synthetic import generate_sphere

    c0 = time.process_time()
    t_sphere = _timeit(lambda: generate_sphere("2010-01-01", "2010-12-31T18", progress=False))
    c_sphere = time.process_time() - c0
    c0 = time.process_time()
    t_l96 = _timeit(lambda: generate_lorenz96("2010-01-01", "2010-12-31T18"))
    c_l96 = time.process_time() - c0
    print("\n4. Data generation (uncached, one year of 6-hourly states)")
    print(
        f"   synthetic sphere (7 fields, 32 x 64): {t_sphere:.1f} s wall, {c_sphere:.1f} CPU-s per year | "
        f"Lorenz-96: {t_l96:.2f} s wall, {c_l96:.2f} CPU-s per year"
    )


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="73 initializations instead of 730")
    a = p.parse_args()
    bench_scoring(73 if a.quick else 730, 73)
    bench_rollout(a.quick)
    bench_conv()
    bench_generation()


if __name__ == "__main__":
    main()
