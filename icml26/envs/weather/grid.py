"""Grids, channels and array <-> xarray conversion in WeatherBench 2 conventions.

A *channel* is one 2-D field: a WeatherBench 2 variable, at a pressure level when it has one.
Channels are named by short aliases where one exists (``z500`` = geopotential at 500 hPa,
``t850``, ``t2m``, ``u10``, ``v10``, ``msl``, ``q700``), otherwise ``"variable/level"`` or the
bare variable name. Datasets keep WeatherBench 2 layout: dims ``time`` (or ``time`` and
``prediction_timedelta`` for forecasts), optional ``level`` (hPa), ``latitude`` (increasing,
degrees north) and ``longitude`` (degrees east in [0, 360)).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

STEP_HOURS = 6  # WeatherBench / EMFormer time step
STEP = np.timedelta64(STEP_HOURS, "h")
DEFAULT_CHANNELS: tuple[str, ...] = ("z500", "t850", "t2m", "u10", "v10")
HEADLINE_CHANNELS: tuple[str, ...] = ("z500", "t850", "t2m", "u10")
HEADLINE_DAYS: tuple[int, ...] = (1, 3, 5, 7, 10)

# WeatherBench 2 variable names (weatherbench2/docs "Data guide").
LEVEL_PREFIXES: dict[str, str] = {
    "z": "geopotential",
    "t": "temperature",
    "u": "u_component_of_wind",
    "v": "v_component_of_wind",
    "q": "specific_humidity",
}
SURFACE_ALIASES: dict[str, str] = {
    "t2m": "2m_temperature",
    "u10": "10m_u_component_of_wind",
    "v10": "10m_v_component_of_wind",
    "msl": "mean_sea_level_pressure",
    "sp": "surface_pressure",
}
_PREFIX_OF = {v: k for k, v in LEVEL_PREFIXES.items()}
_ALIAS_OF = {v: k for k, v in SURFACE_ALIASES.items()}


class Channel(NamedTuple):
    """One 2-D field: a WeatherBench 2 variable and its pressure level (hPa) or None."""

    variable: str
    level: int | None = None

    @property
    def name(self) -> str:
        return channel_name(self.variable, self.level)


def channel_name(variable: str, level: int | None = None) -> str:
    """The short name of (variable, level): ``("geopotential", 500) -> "z500"``."""
    if level is None:
        return _ALIAS_OF.get(variable, variable)
    if variable in _PREFIX_OF:
        return f"{_PREFIX_OF[variable]}{int(level)}"
    return f"{variable}/{int(level)}"


def parse_channel(name: str | Channel | tuple[str, int | None]) -> Channel:
    """``"z500"``, ``"geopotential/500"``, ``"2m_temperature"`` or a tuple -> :class:`Channel`."""
    if isinstance(name, Channel):
        return name
    if isinstance(name, tuple):
        return Channel(str(name[0]), None if name[1] is None else int(name[1]))
    if not isinstance(name, str) or not name:
        raise TypeError(f"a channel is a name like 'z500' or 'geopotential/500', got {name!r}")
    if name in SURFACE_ALIASES:
        return Channel(SURFACE_ALIASES[name])
    m = re.fullmatch(r"([ztuvq])(\d+)", name)
    if m:
        return Channel(LEVEL_PREFIXES[m.group(1)], int(m.group(2)))
    if "/" in name:
        var, _, lev = name.partition("/")
        try:
            return Channel(var, int(lev))
        except ValueError:
            raise ValueError(
                f"channel {name!r}: the part after '/' must be a level in hPa"
            ) from None
    return Channel(name)


def normalize_channels(channels: Iterable[str | Channel]) -> tuple[str, ...]:
    """Canonical short names for ``channels`` (duplicates rejected)."""
    names = tuple(parse_channel(c).name for c in channels)
    if not names:
        raise ValueError("at least one channel is needed")
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate channels in {names}")
    return names


def channels_of(ds: xr.Dataset) -> tuple[str, ...]:
    """Every channel a dataset holds: each time-dependent variable, once per level."""
    out = []
    for var, da in ds.data_vars.items():
        if "latitude" not in da.dims or "longitude" not in da.dims:
            continue
        if "time" not in da.dims and "prediction_timedelta" not in da.dims:
            continue
        if "level" in da.dims:
            out.extend(channel_name(str(var), int(lev)) for lev in da["level"].values)
        elif "level" in da.attrs:  # one pressure level stored as a 2-D field (forecast_io)
            out.append(channel_name(str(var), int(da.attrs["level"])))
        else:
            out.append(channel_name(str(var)))
    return tuple(out)


# ----------------------------------------------------------------------------- grids
def regular_latitudes(n_lat: int) -> np.ndarray:
    """Equiangular cell-centre latitudes without poles (the WeatherBench 1 5.625 deg grid for 32)."""
    return -90.0 + (np.arange(n_lat) + 0.5) * 180.0 / n_lat


def regular_longitudes(n_lon: int) -> np.ndarray:
    return np.arange(n_lon) * 360.0 / n_lon


def latitude_bounds(latitude: np.ndarray) -> np.ndarray:
    """Cell edges at midpoints between latitudes, the outer ones clamped to +-90 (WeatherBench 2)."""
    lat = np.asarray(latitude, dtype=np.float64)
    if lat.ndim != 1 or lat.size == 0:
        raise ValueError(f"latitude must be a non-empty 1-D array, got shape {lat.shape}")
    if lat.size == 1:
        return np.array([-90.0, 90.0])
    if not np.all(np.diff(lat) > 0):
        raise ValueError("latitude must be strictly increasing (WeatherBench 2 order)")
    mid = (lat[1:] + lat[:-1]) / 2
    return np.concatenate([[-90.0], mid, [90.0]])


def longitude_bounds(longitude: np.ndarray) -> np.ndarray:
    """Cell edges (n + 1) of an increasing, evenly or unevenly spaced periodic longitude grid."""
    lon = np.asarray(longitude, dtype=np.float64)
    if lon.size == 1:
        return np.array([lon[0] - 180.0, lon[0] + 180.0])
    ext = np.concatenate([[lon[-1] - 360.0], lon, [lon[0] + 360.0]])
    return (ext[1:] + ext[:-1]) / 2


def grid_coords(n_lat: int = 32, n_lon: int = 64) -> dict[str, np.ndarray]:
    return {"latitude": regular_latitudes(n_lat), "longitude": regular_longitudes(n_lon)}


# ----------------------------------------------------------------------------- conversion
def dataset_to_array(
    ds: xr.Dataset,
    channels: Sequence[str],
    lead_dims: Sequence[str] = ("time",),
    dtype: Any = np.float32,
) -> np.ndarray:
    """Stack channels into ``(*lead_dims, channel, latitude, longitude)``."""
    out = []
    for name in channels:
        ch = parse_channel(name)
        if ch.variable not in ds.data_vars:
            raise KeyError(
                f"channel {name!r} needs variable {ch.variable!r}; the dataset has "
                f"{sorted(map(str, ds.data_vars))}"
            )
        da = ds[ch.variable]
        if ch.level is not None and "level" not in da.dims and "level" in da.attrs:
            if (
                int(da.attrs["level"]) != ch.level
            ):  # a 2-D field of one pressure level (forecast_io)
                raise KeyError(
                    f"channel {name!r}: variable {ch.variable!r} holds level {da.attrs['level']} only"
                )
        elif ch.level is not None:
            if "level" not in da.dims:
                raise KeyError(f"channel {name!r}: variable {ch.variable!r} has no level dimension")
            if ch.level not in da["level"].values:
                raise KeyError(
                    f"channel {name!r}: level {ch.level} not in {da['level'].values.tolist()}"
                )
            da = da.sel(level=ch.level)
        elif "level" in da.dims:
            raise KeyError(f"channel {name!r}: variable {ch.variable!r} has levels; name one")
        da = da.transpose(*lead_dims, "latitude", "longitude")
        out.append(np.asarray(da.values, dtype=dtype))
    return np.stack(out, axis=len(lead_dims))


def array_to_dataset(
    array: np.ndarray,
    channels: Sequence[str],
    coords: Mapping[str, Any],
    lead_dims: Sequence[str] = ("time",),
    attrs: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Inverse of :func:`dataset_to_array`: channels of one variable share a ``level`` dim."""
    arr = np.asarray(array)
    nl = len(lead_dims)
    if arr.ndim != nl + 3 or arr.shape[nl] != len(channels):
        raise ValueError(
            f"expected an array of shape (*{tuple(lead_dims)}, {len(channels)}, lat, lon), "
            f"got {arr.shape}"
        )
    groups: dict[str, list[tuple[int | None, int]]] = {}
    for i, name in enumerate(channels):
        ch = parse_channel(name)
        groups.setdefault(ch.variable, []).append((ch.level, i))
    pieces = []
    for var, items in groups.items():
        if items[0][0] is None:
            if len(items) > 1:
                raise ValueError(f"variable {var!r} appears twice without a level")
            data = arr[(slice(None),) * nl + (items[0][1],)]
            pieces.append(xr.Dataset({var: ((*lead_dims, "latitude", "longitude"), data)}))
        else:
            if any(lv is None for lv, _ in items):
                raise ValueError(f"variable {var!r} appears both with and without a level")
            items = sorted(items, key=lambda t: int(t[0]))  # type: ignore[arg-type]
            data = np.stack([arr[(slice(None),) * nl + (i,)] for _, i in items], axis=nl)
            lev = np.array([int(lv) for lv, _ in items])  # type: ignore[arg-type]
            pieces.append(
                xr.Dataset(
                    {var: ((*lead_dims, "level", "latitude", "longitude"), data)},
                    coords={"level": lev},
                )
            )
    # Variables on different levels share the level dim; xarray pads the union with NaN, as a
    # WeatherBench 2 file with mixed level sets would.
    ds = xr.merge(pieces, join="outer", compat="no_conflicts") if len(pieces) > 1 else pieces[0]
    ds = ds.assign_coords({k: v for k, v in coords.items()})
    ds.attrs.update(dict(attrs or {}))
    return ds


def hours_since_epoch(times: Any) -> np.ndarray:
    """Datetimes -> int64 hours since 1970-01-01T00 (the env's ``time`` observation)."""
    t = np.asarray(
        pd.DatetimeIndex(np.atleast_1d(np.asarray(times, dtype="datetime64[ns]"))).values
    )
    return ((t - np.datetime64("1970-01-01T00", "ns")) // np.timedelta64(1, "h")).astype(np.int64)


def datetime_from_hours(hours: Any) -> np.ndarray:
    """Inverse of :func:`hours_since_epoch`: datetime64[ns] array."""
    h = np.asarray(hours, dtype=np.int64)
    return (np.datetime64("1970-01-01T00", "ns") + h.astype("timedelta64[h]")).astype(
        "datetime64[ns]"
    )


def time_features(times: Any, longitude: np.ndarray) -> np.ndarray:
    """Forcing features for learned models: ``(T, 4, n_lon)`` = sin/cos of the local solar hour
    (hour + longitude / 15) and sin/cos of the fraction of the year."""
    t = pd.DatetimeIndex(np.atleast_1d(np.asarray(times, dtype="datetime64[ns]")))
    hour = (t.hour + t.minute / 60.0).to_numpy(dtype=np.float64)
    year_frac = ((t.day_of_year - 1) + hour / 24.0).to_numpy(dtype=np.float64) / 365.25
    local = (hour[:, None] + np.asarray(longitude)[None, :] / 15.0) * (2 * np.pi / 24.0)
    doy = np.broadcast_to((2 * np.pi * year_frac)[:, None], local.shape)
    return np.stack([np.sin(local), np.cos(local), np.sin(doy), np.cos(doy)], axis=1).astype(
        np.float32
    )
