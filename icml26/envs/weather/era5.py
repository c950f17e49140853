"""Open ERA5 / WeatherBench 2 data a user already has (zarr or netCDF) on the task grid.

Nothing is downloaded. :func:`open_era5` accepts a WeatherBench 2 zarr store (for example a
copy of ``gs://weatherbench2/datasets/era5/...``), a netCDF file as the Copernicus Climate Data
Store delivers it, or a list of such files, and returns a Dataset in WeatherBench 2 layout:

* names: CDS short names (``z``, ``t``, ``u``, ``v``, ``q``, ``t2m``/``2t``, ``u10``/``10u``,
  ``v10``/``10v``, ``msl``, ``sp``, ``lsm``) become WeatherBench 2 names; dims ``valid_time``,
  ``lat``, ``lon``, ``pressure_level``/``isobaricInhPa``/``plev`` become ``time``, ``latitude``,
  ``longitude``, ``level`` (Pa converted to hPa);
* latitude increasing, longitude in [0, 360), every variable ``(..., latitude, longitude)``
  (WeatherBench 2's stores hold ``(time, level, longitude, latitude)``), times at the 6-hourly
  steps only;
* regridded first-order conservatively (area-weighted overlaps of cells, the method WeatherBench
  used to coarsen ERA5) to the task grid, by default the 5.625 deg grid (32 x 64).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from icml26.envs.weather.grid import (
    DEFAULT_CHANNELS,
    STEP_HOURS,
    latitude_bounds,
    longitude_bounds,
    parse_channel,
    regular_latitudes,
    regular_longitudes,
)

# CDS / GRIB short names -> WeatherBench 2 names.
ERA5_NAMES = {
    "z": "geopotential",
    "t": "temperature",
    "u": "u_component_of_wind",
    "v": "v_component_of_wind",
    "q": "specific_humidity",
    "w": "vertical_velocity",
    "t2m": "2m_temperature",
    "2t": "2m_temperature",
    "u10": "10m_u_component_of_wind",
    "10u": "10m_u_component_of_wind",
    "v10": "10m_v_component_of_wind",
    "10v": "10m_v_component_of_wind",
    "msl": "mean_sea_level_pressure",
    "sp": "surface_pressure",
    "lsm": "land_sea_mask",
}
_DIM_NAMES = {
    "valid_time": "time",
    "lat": "latitude",
    "lon": "longitude",
    "pressure_level": "level",
    "isobaricInhPa": "level",
    "plev": "level",
}


def _open_one(path: str | os.PathLike[str]) -> xr.Dataset:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"ERA5 source: {str(p)!r} does not exist")
    is_zarr = p.is_dir() and (
        p.suffix == ".zarr" or any((p / n).exists() for n in (".zgroup", "zarr.json", ".zmetadata"))
    )
    if is_zarr:
        return xr.open_dataset(p, engine="zarr", chunks=None)
    if p.is_dir():
        raise ValueError(f"ERA5 source: {str(p)!r} is a directory but not a zarr store")
    try:
        return xr.open_dataset(p, engine="netcdf4", chunks=None)
    except (OSError, ValueError):
        return xr.open_dataset(p, engine="h5netcdf", chunks=None)


def standardize(ds: xr.Dataset) -> xr.Dataset:
    """Rename CDS names and dims to WeatherBench 2's, sort latitude, wrap longitude to [0, 360)."""
    ds = ds.rename({k: v for k, v in _DIM_NAMES.items() if k in ds.dims or k in ds.coords})
    ds = ds.rename({k: v for k, v in ERA5_NAMES.items() if k in ds.data_vars})
    for d in ("time", "latitude", "longitude"):
        if d not in ds.dims:
            raise ValueError(f"ERA5 source: no {d!r} dimension (dims are {dict(ds.sizes)})")
    drop = [
        c
        for c in ("number", "expver", "step", "surface", "heightAboveGround")
        if c in ds.coords and c not in ds.dims
    ]
    ds = ds.drop_vars(drop)
    if "level" in ds.dims and float(ds["level"].max()) > 2000:  # Pa -> hPa
        ds = ds.assign_coords(level=(ds["level"] / 100.0))
    if "level" in ds.dims:
        ds = ds.assign_coords(level=np.round(ds["level"].values).astype(int))
    lon = (ds["longitude"].values % 360.0 + 360.0) % 360.0
    ds = ds.assign_coords(longitude=lon).sortby("longitude").sortby("latitude")
    # WeatherBench 2's stores hold (..., longitude, latitude); the family's arrays are (lat, lon)
    return ds.transpose(..., "latitude", "longitude")


def conservative_weights(
    src_bounds: np.ndarray,
    dst_bounds: np.ndarray,
    periodic: float | None = None,
    transform: Any = None,
) -> np.ndarray:
    """Overlap matrix (n_dst, n_src) of 1-D cells given by their edges, rows normalized to 1.

    ``transform`` maps edges before measuring overlap (``sin`` of latitude gives cell area);
    ``periodic`` is the period of a wrapping axis (360 for longitude).
    """
    f = (lambda x: x) if transform is None else transform
    s_lo, s_hi = src_bounds[:-1], src_bounds[1:]
    d_lo, d_hi = dst_bounds[:-1], dst_bounds[1:]
    w = np.zeros((d_lo.size, s_lo.size))
    shifts = (0.0,) if periodic is None else (-periodic, 0.0, periodic)
    for sh in shifts:
        lo = np.maximum(d_lo[:, None], s_lo[None, :] + sh)
        hi = np.minimum(d_hi[:, None], s_hi[None, :] + sh)
        w += np.where(hi > lo, f(hi) - f(lo), 0.0)
    total = w.sum(axis=1, keepdims=True)
    if np.any(total <= 0):
        bad = np.flatnonzero(total[:, 0] <= 0)
        raise ValueError(
            f"conservative regridding: target cells {bad.tolist()} are not covered by the source grid"
        )
    return w / total


def regrid_conservative(
    ds: xr.Dataset, latitude: np.ndarray, longitude: np.ndarray, progress: bool = True
) -> xr.Dataset:
    """First-order conservative regridding of every (.., latitude, longitude) variable."""
    src_lat, src_lon = ds["latitude"].values, ds["longitude"].values
    if (
        src_lat.size == latitude.size
        and np.allclose(src_lat, latitude)
        and src_lon.size == longitude.size
        and np.allclose(src_lon, longitude)
    ):
        return ds
    sin = lambda x: np.sin(np.deg2rad(x))  # noqa: E731  (cell area ~ d sin(lat))
    wlat = conservative_weights(latitude_bounds(src_lat), latitude_bounds(latitude), transform=sin)
    wlon = conservative_weights(
        longitude_bounds(src_lon), longitude_bounds(longitude), periodic=360.0
    )
    out = {}
    names = [v for v in ds.data_vars if {"latitude", "longitude"} <= set(ds[v].dims)]
    it: Any = names
    if progress and "time" in ds.dims and ds.sizes["time"] * src_lat.size * src_lon.size > 5e7:
        from tqdm.auto import tqdm

        it = tqdm(names, desc="regridding ERA5", unit="var", leave=False)
    for v in it:
        da = ds[v]
        other = [d for d in da.dims if d not in ("latitude", "longitude")]
        da = da.transpose(*other, "latitude", "longitude")
        arr = np.asarray(da.values, dtype=np.float64)
        res = np.einsum("ij,...jk,lk->...il", wlat, arr, wlon, optimize=True)
        out[v] = xr.DataArray(
            res.astype(np.float32),
            dims=(*other, "latitude", "longitude"),
            coords={d: da[d] for d in other if d in da.coords},
            attrs=da.attrs,
        )
    res_ds = xr.Dataset(out, attrs=ds.attrs)
    return res_ds.assign_coords(latitude=latitude, longitude=longitude)


def open_era5(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    channels: Sequence[str] = DEFAULT_CHANNELS,
    start: str | None = None,
    end: str | None = None,
    n_lat: int = 32,
    n_lon: int = 64,
    progress: bool = True,
) -> xr.Dataset:
    """ERA5 / WeatherBench 2 data at ``path`` on the (n_lat x n_lon) equiangular task grid.

    Args:
        path: a zarr store, a netCDF file, or a list of netCDF files (concatenated in time).
        channels: what to keep (``"z500"``, ``"t850"``, ``"t2m"``...); a missing one is an error
            that lists what the data has.
        start, end: optional time bounds (inclusive).
    """
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise ValueError("open_era5: no path given")
    parts = [standardize(_open_one(p)) for p in paths]
    ds = (
        parts[0]
        if len(parts) == 1
        else xr.concat(parts, dim="time", data_vars="all").sortby("time")
    )
    if start is not None or end is not None:
        ds = ds.sel(time=slice(start, end))
    times = pd.DatetimeIndex(ds["time"].values)
    keep = (times.hour % STEP_HOURS == 0) & (times.minute == 0)
    ds = ds.isel(time=np.flatnonzero(keep))
    if ds.sizes["time"] == 0:
        raise ValueError(
            f"open_era5: no {STEP_HOURS}-hourly times in {paths} between {start} and {end}"
        )
    selected: dict[str, xr.DataArray] = {}
    levels: dict[str, list[int]] = {}  # variables on pressure levels share the union of levels
    for name in channels:
        ch = parse_channel(name)
        if ch.variable not in ds.data_vars:
            raise KeyError(
                f"open_era5: channel {name!r} needs {ch.variable!r}; the data has "
                f"{sorted(map(str, ds.data_vars))}"
            )
        if ch.level is not None:
            if "level" not in ds[ch.variable].dims or ch.level not in ds["level"].values:
                have = ds["level"].values.tolist() if "level" in ds[ch.variable].dims else []
                raise KeyError(f"open_era5: channel {name!r}: level {ch.level} not in {have}")
            levels.setdefault(ch.variable, []).append(ch.level)
        else:
            selected[ch.variable] = ds[ch.variable]
    union = sorted({lv for levs in levels.values() for lv in levs})
    for var in levels:
        selected[var] = ds[var].sel(level=union)
    if "land_sea_mask" in ds.data_vars:
        lsm = ds["land_sea_mask"]
        selected["land_sea_mask"] = lsm.isel(time=0, drop=True) if "time" in lsm.dims else lsm
    sub = xr.Dataset(selected)
    sub = sub.drop_vars(
        [c for c in sub.coords if c not in sub.dims and c not in ("time",)], errors="ignore"
    )
    sub = sub.load()
    out = regrid_conservative(sub, regular_latitudes(n_lat), regular_longitudes(n_lon), progress)
    out.attrs = {"source": "era5", "path": ";".join(str(p) for p in paths)}
    return out
