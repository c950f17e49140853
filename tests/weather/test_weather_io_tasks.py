"""Forecast files in WeatherBench 2 layout, and the weather tasks end to end."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from icml26 import agents, benchmarks
from icml26.envs.weather.forecast_io import (
    check_forecast_layout,
    forecast_dataset,
    open_forecast,
    write_forecast,
)


def _forecast(layout: str = "compact") -> xr.Dataset:
    rng = np.random.default_rng(0)
    arr = rng.normal(size=(3, 4, 5, 32, 64)).astype(np.float32)
    lat = -90 + (np.arange(32) + 0.5) * 5.625
    return forecast_dataset(
        arr,
        pd.date_range("2003-01-01", periods=3, freq="12h"),
        ["z500", "t850", "t2m", "u10", "v10"],
        lat,
        np.arange(64) * 5.625,
        layout=layout,
    )


@pytest.mark.parametrize("suffix", [".zarr", ".nc"])
def test_forecast_round_trip_in_weatherbench2_layout(tmp_path, suffix: str) -> None:
    ds = _forecast()
    path = write_forecast(ds, tmp_path / f"fc{suffix}")
    # Plain xarray (what WeatherBench 2's tools use) reads it back.
    back = xr.open_zarr(path) if suffix == ".zarr" else xr.open_dataset(path)
    # z500 and t850 have different level sets: each is stored as a 2-D field of its one level
    # (no all-NaN slabs); layout="shared_level" keeps WeatherBench 2's shared level dim
    assert back["geopotential"].dims == ("time", "prediction_timedelta", "latitude", "longitude")
    assert back["geopotential"].attrs["level"] == 500 and back["temperature"].attrs["level"] == 850
    assert back["2m_temperature"].dims == ("time", "prediction_timedelta", "latitude", "longitude")
    assert np.issubdtype(back["prediction_timedelta"].dtype, np.timedelta64)
    assert back["prediction_timedelta"].values[0] == np.timedelta64(6, "h")
    np.testing.assert_array_equal(back["geopotential"].values, ds["geopotential"].values)
    shared = write_forecast(_forecast(layout="shared_level"), tmp_path / f"shared{suffix}")
    back = xr.open_zarr(shared) if suffix == ".zarr" else xr.open_dataset(shared)
    assert back["geopotential"].dims == (
        "time",
        "prediction_timedelta",
        "level",
        "latitude",
        "longitude",
    )
    np.testing.assert_array_equal(
        back["geopotential"].sel(level=500).values, ds["geopotential"].values
    )
    np.testing.assert_array_equal(
        open_forecast(path)["2m_temperature"].values, ds["2m_temperature"].values
    )
    if suffix == ".zarr":
        assert (path / ".zmetadata").exists()  # zarr v2 with consolidated metadata


def test_layout_errors_are_listed(tmp_path) -> None:
    ds = _forecast().isel(latitude=slice(None, None, -1))
    with pytest.raises(ValueError, match="latitude must be increasing"):
        write_forecast(ds, tmp_path / "bad.zarr")
    with pytest.raises(ValueError, match="missing dimension 'prediction_timedelta'"):
        check_forecast_layout(_forecast().isel(prediction_timedelta=0))
    with pytest.raises(ValueError, match="format"):
        write_forecast(_forecast(), tmp_path / "fc.txt")


def test_tasks_and_suites_are_registered() -> None:
    ids = benchmarks.task_ids("weather")
    assert {
        "weather/sphere-10day",
        "weather/sphere-quick",
        "weather/lorenz96-10day",
        "weather/qg-10day",
        "weather/qg-nonlinear",
    } <= set(ids)
    smoke = [e for e in benchmarks.get_suite("smoke") if e.task.startswith("weather/")]
    assert smoke and "emformer" in smoke[0].agents
    for name in (
        "emformer",
        "weather-persistence",
        "weather-climatology",
        "weather-damped-persistence",
        "weather-ridge",
        "weather-resnet",
    ):
        assert name in agents.names("weather")


def test_run_trial_on_lorenz96_scores_every_metric() -> None:
    from icml26.benchmarks.runner import _check_outcome
    from icml26.benchmarks.tasks.weather import run_trial

    task = benchmarks.get_task("weather/lorenz96-10day")
    small = dataclasses.replace(
        task,
        env_kwargs={
            **task.env_kwargs,
            "train_period": ("2000-01-01", "2000-06-30T18"),
            "test_period": ("2000-07-01", "2000-08-31T18"),
        },
        eval_episodes=4,
    )
    results = {
        name: run_trial(small, agents.make(name), 0)
        for name in ("weather-persistence", "weather-damped-persistence", "weather-climatology")
    }
    for r in results.values():
        _check_outcome(small, r)  # every metric present and finite
        assert set(r.metrics) == {m.name for m in small.metrics}
        assert len(r.scores) == 4 and all(s <= 0 for s in r.scores)
        assert len(r.extra["curves"]["rmse"]["lorenz96_x"]) == 40
    # Climatology has no anomaly: its ACC is undefined and reported as 0.
    assert results["weather-climatology"].metrics["lorenz96_x_acc_3d"] == 0.0
    assert "lorenz96_x_acc_3d" in results["weather-climatology"].extra["undefined_reported_as_0"]
    # At one day, persistence beats climatology on a chaotic but smooth system.
    assert (
        results["weather-persistence"].metrics["lorenz96_x_rmse_1d"]
        < results["weather-climatology"].metrics["lorenz96_x_rmse_1d"]
    )
