"""The same verification formulas written plainly with xarray, the way WeatherBench 2 code reads.

An independent reference for :mod:`icml26.envs.weather.metrics`: tests check that both give the
same numbers, and ``perf/weather.py`` times the two side by side. Every function takes
DataArrays of one channel with dims (``time``, ``prediction_timedelta``, ``latitude``,
``longitude``); the truth is aligned to the forecast by valid time with xarray indexing and
climatologies are looked up with ``.sel(dayofyear=..., hour=...)``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

SPATIAL = ("latitude", "longitude")


def cell_area_weights(latitude: xr.DataArray) -> xr.DataArray:
    """sin(upper edge) - sin(lower edge), edges at midpoints clamped to +-90, mean 1."""
    lat = latitude.values
    edges = np.concatenate([[-90.0], (lat[1:] + lat[:-1]) / 2, [90.0]])
    area = np.diff(np.sin(np.deg2rad(edges)))
    w = xr.DataArray(area, dims=("latitude",), coords={"latitude": lat})
    return w / w.mean()


def valid_time(forecast: xr.DataArray) -> xr.DataArray:
    return forecast["time"] + forecast["prediction_timedelta"]


def align_truth(forecast: xr.DataArray, observations: xr.DataArray) -> xr.DataArray:
    """``observations`` (time, lat, lon) at each forecast valid time."""
    out = observations.sel(time=valid_time(forecast))
    return out.drop_vars("time").assign_coords(time=forecast["time"])


def climatology_at(clim: xr.DataArray, forecast: xr.DataArray) -> xr.DataArray:
    """``clim`` (dayofyear, hour, lat, lon) at each valid time of ``forecast``."""
    vt = valid_time(forecast)
    return clim.sel(dayofyear=vt.dt.dayofyear, hour=vt.dt.hour)


def mse(forecast: xr.DataArray, truth: xr.DataArray, weights: xr.DataArray) -> xr.DataArray:
    return ((forecast - truth) ** 2).weighted(weights).mean(SPATIAL)


def rmse(forecast: xr.DataArray, truth: xr.DataArray, weights: xr.DataArray) -> xr.DataArray:
    return np.sqrt(mse(forecast, truth, weights).mean("time"))


def rmse_per_init(
    forecast: xr.DataArray, truth: xr.DataArray, weights: xr.DataArray
) -> xr.DataArray:
    return np.sqrt(mse(forecast, truth, weights)).mean("time")


def bias(forecast: xr.DataArray, truth: xr.DataArray, weights: xr.DataArray) -> xr.DataArray:
    return (forecast - truth).weighted(weights).mean(SPATIAL).mean("time")


def acc(
    forecast: xr.DataArray, truth: xr.DataArray, clim: xr.DataArray, weights: xr.DataArray
) -> xr.DataArray:
    fa, ta = forecast - clim, truth - clim
    num = (fa * ta).weighted(weights).mean(SPATIAL)
    den = np.sqrt((fa**2).weighted(weights).mean(SPATIAL) * (ta**2).weighted(weights).mean(SPATIAL))
    return (num / den).mean("time")


def activity(forecast: xr.DataArray, clim: xr.DataArray, weights: xr.DataArray) -> xr.DataArray:
    return np.sqrt(((forecast - clim) ** 2).weighted(weights).mean(SPATIAL).mean("time"))


def contingency(
    forecast: xr.DataArray, truth: xr.DataArray, threshold: xr.DataArray, weights: xr.DataArray
) -> dict[str, xr.DataArray]:
    """Area-weighted event counts (fractions of the grid, summed over initializations)."""
    fe, oe = forecast > threshold, truth > threshold
    count = lambda m: m.astype(float).weighted(weights).mean(SPATIAL).sum("time")  # noqa: E731
    return {
        "tp": count(fe & oe),
        "fp": count(fe & ~oe),
        "fn": count(~fe & oe),
        "tn": count(~fe & ~oe),
    }


def scores_from_table(t: dict[str, xr.DataArray]) -> dict[str, xr.DataArray]:
    tp, fp, fn, tn = t["tp"], t["fp"], t["fn"], t["tn"]
    n = tp + fp + fn + tn
    r = (tp + fp) * (tp + fn) / n
    h = (tp / (tp + fn)).clip(1e-6, 1 - 1e-6)
    f = (fp / (fp + tn)).clip(1e-6, 1 - 1e-6)
    return {
        "csi": tp / (tp + fp + fn),
        "ets": (tp - r) / (tp + fp + fn - r),
        "frequency_bias": (tp + fp) / (tp + fn),
        "sedi": (np.log(f) - np.log(h) + np.log(1 - h) - np.log(1 - f))
        / (np.log(f) + np.log(h) + np.log(1 - h) + np.log(1 - f)),
    }
