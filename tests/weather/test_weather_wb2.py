"""The ERA5 / WeatherBench 2 path end to end: a small zarr store in WeatherBench 2's published
layout (dims ``time``, ``level``, ``longitude``, ``latitude`` in that order, 5.625 deg
equiangular grid without poles, pressure levels as integer hPa, WeatherBench 2 variable names)
that this test writes, opened by the env's ``era5`` source, run through ``era5_task``'s
``run_trial`` and scored with the family's WeatherBench 2 metrics, checked against the plain
xarray formulas (``icml26.envs.weather.xarray_reference``) on the raw store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from icml26 import agents
from icml26.benchmarks.tasks import weather as wt
from icml26.envs.weather import xarray_reference as ref
from icml26.envs.weather.climatology import compute_climatology

ROOT = Path(__file__).resolve().parents[2]
LEVELS = [500, 700, 850]
TRAIN = ("2001-01-01", "2001-01-31T18")
VAL = ("2001-02-01", "2001-02-11T18")
TEST = ("2001-02-12", "2001-02-28T18")


def _wb2_store(path: Path) -> xr.Dataset:
    """ERA5-like fields on WeatherBench 2's 64 x 32 equiangular grid: a wave travelling east at
    10 deg/day on a zonal climate with a diurnal cycle, plus seeded red noise."""
    time = pd.date_range("2001-01-01", "2001-02-28T18", freq="6h")
    lat = np.linspace(-87.1875, 87.1875, 32)
    lon = np.arange(64) * 5.625
    rng = np.random.default_rng(0)
    days = ((time - time[0]) / pd.Timedelta("1D")).to_numpy()
    lo, la = np.meshgrid(np.deg2rad(lon), np.deg2rad(lat), indexing="ij")  # (lon, lat)
    wave = np.cos(4 * (lo[None] - np.deg2rad(10.0) * days[:, None, None])) * np.cos(la)[None] ** 2
    diurnal = np.cos(2 * np.pi * (days[:, None, None] % 1) + lo[None])
    noise = np.cumsum(rng.normal(size=(time.size, 64, 32)), axis=0) * 0.05

    def field(mean: float, amp: float, k: int) -> np.ndarray:
        base = mean + amp * np.cos(la)[None] + amp * 0.3 * (wave + 0.2 * diurnal + noise) * (k + 1)
        return base.astype(np.float32)

    def levels(mean: float, amp: float) -> np.ndarray:
        return np.stack([field(mean * (1 + 0.1 * i), amp, i) for i in range(len(LEVELS))], axis=1)

    d3, d2 = ("time", "level", "longitude", "latitude"), ("time", "longitude", "latitude")
    ds = xr.Dataset(
        {
            "geopotential": (d3, levels(5.0e4, 2.0e3)),
            "temperature": (d3, levels(250.0, 15.0)),
            "u_component_of_wind": (d3, levels(5.0, 10.0)),
            "v_component_of_wind": (d3, levels(0.0, 5.0)),
            "specific_humidity": (d3, np.abs(levels(2e-3, 2e-3))),
            "2m_temperature": (d2, field(280.0, 20.0, 0)),
            "10m_u_component_of_wind": (d2, field(2.0, 5.0, 1)),
            "10m_v_component_of_wind": (d2, field(0.0, 4.0, 1)),
            "mean_sea_level_pressure": (d2, field(1.013e5, 1.0e3, 0)),
            "land_sea_mask": (("longitude", "latitude"), (np.cos(3 * lo) > 0.3).astype(np.float32)),
        },
        coords={
            "time": time,
            "level": np.array(LEVELS, dtype=np.int64),
            "latitude": lat,
            "longitude": lon,
        },
    )
    ds.to_zarr(path, zarr_format=2, consolidated=True)
    return ds


def test_a_wb2_zarr_loads_into_the_env_and_scores_with_the_wb2_metrics(tmp_path: Path) -> None:
    store = tmp_path / "era5_64x32.zarr"
    raw = _wb2_store(store)
    task = wt.era5_task(str(store), TRAIN, TEST, VAL, eval_episodes=8)
    env = gym.make(task.env_id, **task.env_kwargs)
    u = env.unwrapped
    assert u.channels == ("z500", "t850", "q700", "t2m", "u10", "v10", "msl")
    np.testing.assert_allclose(u.latitude, raw["latitude"].values)  # on grid: no regridding
    # the env's arrays are the store's values, transposed from (longitude, latitude)
    t0 = np.datetime64("2001-02-15T12")
    obs, _ = env.reset(options={"init_time": str(t0)})
    np.testing.assert_array_equal(
        obs["state"][-1, 0], raw["geopotential"].sel(time=t0, level=500).values.T
    )
    assert u.dataset("val").array.shape == (44, 7, 32, 64)
    out = wt.run_trial(task, agents.make("weather-persistence"), 0)
    # the same scores from the plain xarray formulas on the raw store: persistence repeats the
    # initial state at every lead
    inits = pd.DatetimeIndex(out.extra["init_times"])
    w = ref.cell_area_weights(raw["latitude"])
    for name, var, level in (
        ("z500_rmse_3d", "geopotential", 500),
        ("t850_rmse_5d", "temperature", 850),
        ("q700_rmse_3d", "specific_humidity", 700),
        ("msl_rmse_3d", "mean_sea_level_pressure", None),
        ("z500_rmse_10d", "geopotential", 500),
    ):
        da = raw[var] if level is None else raw[var].sel(level=level)
        da = da.transpose("time", "latitude", "longitude")
        days = int(name.split("_")[-1].rstrip("d"))
        lead = pd.to_timedelta([days], unit="D")
        fc = da.sel(time=inits).expand_dims(prediction_timedelta=lead, axis=1)
        truth = ref.align_truth(fc, da)
        expected = float(ref.rmse(fc, truth, w).squeeze())
        assert out.metrics[name] == pytest.approx(expected, rel=1e-5), name
    assert out.extra["divergence"]["count"] == 0
    # ACC against the WeatherBench 2 climatology of the store's training period, by the plain
    # formula
    train = raw.sel(time=slice(*TRAIN)).transpose("time", "level", "latitude", "longitude")
    clim = compute_climatology(train, channels=("z500",))["geopotential"].sel(level=500)
    da = raw["geopotential"].sel(level=500).transpose("time", "latitude", "longitude")
    fc = da.sel(time=inits).expand_dims(prediction_timedelta=pd.to_timedelta([5], unit="D"), axis=1)
    c = ref.climatology_at(clim, fc)
    expected = float(ref.acc(fc, ref.align_truth(fc, da), c, w).squeeze())
    assert out.metrics["z500_acc_5d"] == pytest.approx(expected, abs=1e-5)


def test_the_ladder_runs_on_a_wb2_zarr_with_one_command(tmp_path: Path) -> None:
    """``weather_ladder.py run --era5 STORE`` (shrunk: 4 updates, 3 initializations, one seed of
    the ResNet and of persistence) writes FINISHED trials of task weather/era5 with validation
    curves from the store's validation period."""
    store = tmp_path / "wb2.zarr"
    _wb2_store(store)
    out = tmp_path / "ladder.jsonl"
    env = {
        **os.environ,
        "WEATHER_LADDER_SMOKE": "4,3",
        "ICML26_CACHE": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    cmd = [
        sys.executable,
        str(ROOT / "experiments" / "weather_ladder.py"),
        "run",
        "--era5",
        str(store),
        "--train",
        ",".join(TRAIN),
        "--val",
        ",".join(VAL),
        "--test",
        ",".join(TEST),
        "--arms",
        "resnet,persistence",
        "--scales",
        "1",
        "--seeds",
        "0",
        "--store",
        str(out),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {x["result"]["agent_name"] for x in lines} == {"weather-resnet", "weather-persistence"}
    for x in lines:
        r = x["result"]
        assert r["status"] == "FINISHED" and r["task_id"] == "weather/era5"
        assert np.isfinite(r["metrics"]["z500_rmse_3d"])
    resnet = next(x["result"] for x in lines if x["result"]["agent_name"] == "weather-resnet")
    assert [p["update"] for p in resnet["extra"]["validation_curve"]["points"]][-1] == 4
