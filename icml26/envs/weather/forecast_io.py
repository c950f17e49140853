"""Forecasts as WeatherBench 2 datasets: build them from arrays, check the layout, write them.

A WeatherBench 2 forecast has dims ``time`` (initialization), ``prediction_timedelta`` (lead,
timedelta64), optional ``level`` (hPa), ``latitude`` (increasing) and ``longitude``, and
variables named as in ERA5 on WeatherBench 2 (``geopotential``, ``2m_temperature``...).
:func:`write_forecast` writes zarr (format 2, consolidated metadata, what WeatherBench 2's
tools read) or netCDF-4, atomically, so external tools open the files directly.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from icml26.envs.weather.grid import STEP_HOURS, array_to_dataset


def forecast_dataset(
    forecast: np.ndarray,
    init_times: Any,
    channels: Sequence[str],
    latitude: Any,
    longitude: Any,
    lead_steps: Sequence[int] | None = None,
    attrs: dict[str, Any] | None = None,
) -> xr.Dataset:
    """Array ``(init, lead, channel, lat, lon)`` -> WeatherBench 2 forecast Dataset."""
    arr = np.asarray(forecast)
    if arr.ndim != 5:
        raise ValueError(f"forecast must be (init, lead, channel, lat, lon), got shape {arr.shape}")
    leads = np.arange(1, arr.shape[1] + 1) if lead_steps is None else np.asarray(lead_steps)
    if leads.size != arr.shape[1]:
        raise ValueError(f"{arr.shape[1]} lead steps in the array but {leads.size} lead_steps")
    coords = {
        "time": np.asarray(init_times, dtype="datetime64[ns]"),
        "prediction_timedelta": pd.to_timedelta(leads * STEP_HOURS, unit="h").values,
        "latitude": np.asarray(latitude, dtype=np.float64),
        "longitude": np.asarray(longitude, dtype=np.float64),
    }
    return array_to_dataset(arr, channels, coords, ("time", "prediction_timedelta"), attrs)


def check_forecast_layout(ds: xr.Dataset) -> None:
    """Raise ``ValueError`` listing every way ``ds`` departs from the WeatherBench 2 layout."""
    problems = []
    for d in ("time", "prediction_timedelta", "latitude", "longitude"):
        if d not in ds.dims:
            problems.append(f"missing dimension {d!r}")
    extra = set(ds.dims) - {"time", "prediction_timedelta", "level", "latitude", "longitude", "realization"}
    if extra:
        problems.append(f"unexpected dimensions {sorted(extra)}")
    if "prediction_timedelta" in ds.coords and not np.issubdtype(ds["prediction_timedelta"].dtype, np.timedelta64):
        problems.append("prediction_timedelta must be timedelta64")
    if "time" in ds.coords and not np.issubdtype(ds["time"].dtype, np.datetime64):
        problems.append("time must be datetime64")
    if "latitude" in ds.coords and not np.all(np.diff(ds["latitude"].values) > 0):
        problems.append("latitude must be increasing")
    if "longitude" in ds.coords:
        lon = ds["longitude"].values
        if np.any(lon < 0) or np.any(lon >= 360) or not np.all(np.diff(lon) > 0):
            problems.append("longitude must be increasing within [0, 360)")
    if not ds.data_vars:
        problems.append("no variables")
    if problems:
        raise ValueError("not a WeatherBench 2 forecast: " + "; ".join(problems))


def write_forecast(ds: xr.Dataset, path: str | os.PathLike[str], format: str | None = None) -> Path:
    """Write a forecast as zarr (``.zarr``) or netCDF-4 (``.nc``), replacing ``path`` atomically."""
    check_forecast_layout(ds)
    p = Path(path)
    fmt = format or ("zarr" if p.suffix == ".zarr" else "netcdf" if p.suffix in (".nc", ".nc4") else None)
    if fmt not in ("zarr", "netcdf"):
        raise ValueError(f"write_forecast: format must be 'zarr' or 'netcdf' (or a .zarr/.nc path), got {format!r} for {str(p)!r}")
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
    if fmt == "zarr":
        ds.to_zarr(tmp, mode="w", zarr_format=2, consolidated=True)
    else:
        ds.to_netcdf(tmp, engine="netcdf4")
    if p.exists():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    os.replace(tmp, p)
    return p


def open_forecast(path: str | os.PathLike[str]) -> xr.Dataset:
    """Open a forecast written by :func:`write_forecast` (or by WeatherBench 2 tools), loaded."""
    p = Path(path)
    if p.is_dir():
        return xr.open_dataset(p, engine="zarr", chunks=None).load()
    return xr.load_dataset(p, engine="netcdf4")
