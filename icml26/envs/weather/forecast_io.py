"""Forecasts as WeatherBench 2 datasets: build them from arrays, check the layout, write them.

A WeatherBench 2 forecast has dims ``time`` (initialization), ``prediction_timedelta`` (lead,
timedelta64), optional ``level`` (hPa), ``latitude`` (increasing) and ``longitude``, and
variables named as in ERA5 on WeatherBench 2 (``geopotential``, ``2m_temperature``...), each
with a ``units`` attribute. Only the channels forecast are stored: when the variables' level
sets differ (``z500`` and ``t850``), a variable of a single level is stored as a 2-D field with
a ``level`` attribute (hPa) instead of padding a shared ``level`` dim with all-NaN slabs.

:func:`write_forecast` writes zarr (format 2, consolidated metadata, what WeatherBench 2's
tools read) or netCDF-4, atomically, so external tools open the files directly. It takes a
forecast Dataset, or in one call an episode's final ``info`` (or a list of them), or an agent
to roll out, with the env they belong to::

    write_forecast(info, "fc.zarr", env=env)                     # the episode that just ended
    write_forecast(agent, "fc.zarr", env=env, n_inits=8)         # 8 rollouts of the agent
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from icml26.envs.weather.grid import STEP_HOURS, array_to_dataset, parse_channel

# Units of the WeatherBench 2 / ERA5 variables (ECMWF parameter database); sources' own
# ``units`` attributes take precedence.
UNITS: dict[str, str] = {
    "geopotential": "m**2 s**-2",
    "temperature": "K",
    "u_component_of_wind": "m s**-1",
    "v_component_of_wind": "m s**-1",
    "specific_humidity": "kg kg**-1",
    "2m_temperature": "K",
    "10m_u_component_of_wind": "m s**-1",
    "10m_v_component_of_wind": "m s**-1",
    "mean_sea_level_pressure": "Pa",
    "surface_pressure": "Pa",
    "total_precipitation_6hr": "m",
    "lorenz96_x": "1",
}


def forecast_dataset(
    forecast: np.ndarray,
    init_times: Any,
    channels: Sequence[str],
    latitude: Any,
    longitude: Any,
    lead_steps: Sequence[int] | None = None,
    attrs: dict[str, Any] | None = None,
    units: dict[str, str] | None = None,
    layout: str = "compact",
) -> xr.Dataset:
    """Array ``(init, lead, channel, lat, lon)`` -> WeatherBench 2 forecast Dataset.

    Variables get a ``units`` attribute (``units`` by variable name, else :data:`UNITS`).
    ``layout="compact"`` stores only the forecast channels (see the module docstring for mixed
    level sets); ``"shared_level"`` puts every leveled variable on one ``level`` dim, the union
    of the levels, padded with NaN where a variable was not forecast (for tools that insist).
    """
    if layout not in ("compact", "shared_level"):
        raise ValueError(
            f"forecast_dataset: layout must be 'compact' or 'shared_level', got {layout!r}"
        )
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
    lead = ("time", "prediction_timedelta")
    parsed = [parse_channel(c) for c in channels]
    levels: dict[str, set[int]] = {}
    for ch in parsed:
        if ch.level is not None:
            levels.setdefault(ch.variable, set()).add(int(ch.level))
    if layout == "shared_level" or len({frozenset(v) for v in levels.values()}) <= 1:
        ds = array_to_dataset(arr, channels, coords, lead, attrs)
    else:
        single = {v for v, lv in levels.items() if len(lv) == 1}
        rest = [i for i, ch in enumerate(parsed) if ch.variable not in single]
        pieces = []
        if rest:
            pieces.append(
                array_to_dataset(arr[:, :, rest], [channels[i] for i in rest], coords, lead)
            )
        for i, ch in enumerate(parsed):
            if ch.variable in single:
                da = xr.DataArray(
                    arr[:, :, i],
                    dims=(*lead, "latitude", "longitude"),
                    coords=coords,
                    attrs={"level": int(ch.level)},
                )  # type: ignore[arg-type]
                pieces.append(xr.Dataset({ch.variable: da}))
        ds = xr.merge(pieces, join="exact", compat="no_conflicts", combine_attrs="drop_conflicts")
        ds.attrs.update(dict(attrs or {}))
    for var in ds.data_vars:
        unit = (units or {}).get(str(var), UNITS.get(str(var)))
        if unit is not None:
            ds[var].attrs["units"] = unit
    if "level" in ds.coords:
        ds["level"].attrs["units"] = "hPa"
    ds["prediction_timedelta"].attrs["long_name"] = "lead time"
    return ds


def episode_forecast(info: Any, env: Any) -> xr.Dataset:
    """The forecast of finished episode(s) as a WeatherBench 2 Dataset.

    ``info`` is the ``info`` of an episode's last step (it holds ``forecast`` and
    ``init_time``) or a list of them; ``env`` the ``WeatherRollout-v0`` env (wrapped or not)
    they came from (channels, grid, units).
    """
    u = getattr(env, "unwrapped", env)
    infos = [info] if isinstance(info, dict) else list(info)
    if not infos:
        raise ValueError("episode_forecast: no episode infos given")
    for k, i in enumerate(infos):
        if not isinstance(i, dict) or "forecast" not in i or "init_time" not in i:
            raise ValueError(
                f"episode_forecast: info {k} is not the info of an episode's last step "
                "(it needs 'forecast' and 'init_time')"
            )
    fc = np.stack([np.asarray(i["forecast"], dtype=np.float32) for i in infos])
    units = {}
    src = getattr(u, "_ds", None)
    if src is not None:
        units = {
            str(v): str(src[v].attrs["units"]) for v in src.data_vars if "units" in src[v].attrs
        }
    attrs = {
        "source": str(u.source),
        "channels": ",".join(u.channels),
        "produced_by": "icml26 WeatherRollout-v0",
    }
    return forecast_dataset(
        fc,
        [i["init_time"] for i in infos],
        u.channels,
        u.latitude,
        u.longitude,
        attrs=attrs,
        units=units,
    )


def rollout_forecast(
    agent: Any, env: Any, init_times: Any = None, n_inits: int = 1, seed: int = 0
) -> xr.Dataset:
    """Roll ``agent`` (``reset(seed)``, ``act(obs, info)``; ``bind`` if it has one) out from each
    initialization time (default: ``n_inits`` spread over the split) and return the forecasts."""
    u = getattr(env, "unwrapped", env)
    times = (
        u.evaluation_init_times(int(n_inits)) if init_times is None else np.atleast_1d(init_times)
    )
    bind = getattr(agent, "bind", None)
    if callable(bind):
        bind(env.observation_space, env.action_space)
    infos = []
    for k, t in enumerate(times):
        if callable(getattr(agent, "reset", None)):
            agent.reset(seed + k)
        obs, info = env.reset(seed=seed + k, options={"init_time": t})
        done = False
        while not done:
            obs, _, term, trunc, info = env.step(agent.act(obs, info))
            done = term or trunc
        infos.append(info)
    return episode_forecast(infos, env)


def check_forecast_layout(ds: xr.Dataset) -> None:
    """Raise ``ValueError`` listing every way ``ds`` departs from the WeatherBench 2 layout."""
    problems = []
    for d in ("time", "prediction_timedelta", "latitude", "longitude"):
        if d not in ds.dims:
            problems.append(f"missing dimension {d!r}")
    extra = set(ds.dims) - {
        "time",
        "prediction_timedelta",
        "level",
        "latitude",
        "longitude",
        "realization",
    }
    if extra:
        problems.append(f"unexpected dimensions {sorted(extra)}")
    if "prediction_timedelta" in ds.coords and not np.issubdtype(
        ds["prediction_timedelta"].dtype, np.timedelta64
    ):
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


def write_forecast(
    ds: Any,
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    env: Any = None,
    init_times: Any = None,
    n_inits: int = 1,
    seed: int = 0,
) -> Path:
    """Write a forecast as zarr (``.zarr``) or netCDF-4 (``.nc``), replacing ``path`` atomically.

    ``ds`` is a forecast ``xr.Dataset``, an episode's final ``info`` (or a list of them), or an
    agent to roll out (:func:`rollout_forecast`: ``init_times`` or ``n_inits``, ``seed``); the
    last two need the ``env``.
    """
    if not isinstance(ds, xr.Dataset):
        if env is None:
            raise TypeError(
                f"write_forecast: a forecast from {type(ds).__name__} needs env= (the "
                "WeatherRollout-v0 env it belongs to)"
            )
        if callable(getattr(ds, "act", None)):
            ds = rollout_forecast(ds, env, init_times, n_inits, seed)
        elif isinstance(ds, (dict, list, tuple)):
            ds = episode_forecast(ds, env)
        else:
            raise TypeError(
                f"write_forecast: expected an xr.Dataset, an episode info (or list) or an agent "
                f"with act(), got {type(ds).__name__}"
            )
    check_forecast_layout(ds)
    p = Path(path)
    fmt = format or (
        "zarr" if p.suffix == ".zarr" else "netcdf" if p.suffix in (".nc", ".nc4") else None
    )
    if fmt not in ("zarr", "netcdf"):
        raise ValueError(
            f"write_forecast: format must be 'zarr' or 'netcdf' (or a .zarr/.nc path), got {format!r} for {str(p)!r}"
        )
    from icml26._paths import atomic_write

    if fmt == "zarr":
        return atomic_write(
            p, lambda tmp: ds.to_zarr(tmp, mode="w", zarr_format=2, consolidated=True)
        )
    return atomic_write(p, lambda tmp: ds.to_netcdf(tmp, engine="netcdf4"))


def open_forecast(path: str | os.PathLike[str]) -> xr.Dataset:
    """Open a forecast written by :func:`write_forecast` (or by WeatherBench 2 tools), loaded."""
    p = Path(path)
    if p.is_dir():
        return xr.open_dataset(p, engine="zarr", chunks=None).load()
    return xr.load_dataset(p, engine="netcdf4")
