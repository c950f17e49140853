"""Data sources by name, with a disk cache for generated data.

``open_source(name, start, end, **kwargs)`` returns an ``xr.Dataset`` in WeatherBench 2 layout:

=============  =====================================================  ==========================
name           what                                                   default channels
=============  =====================================================  ==========================
``synthetic``  the synthetic sphere (5.625 deg, seasons, waves,       z500 t850 t2m u10 v10
               extremes); :mod:`~icml26.envs.weather.synthetic`
``lorenz96``   Lorenz-96, K = 40, F = 8 (fast tests)                  lorenz96_x
``qg``         two-layer quasi-geostrophic model in numpy             z250 z750 u250 v250
``barotropic`` spectral barotropic vorticity model on the sphere      z500 u500 v500
               (T21, forced jet + stirring);
               :mod:`~icml26.envs.weather.barotropic`
``era5``       a user's ERA5 / WeatherBench 2 zarr or netCDF          z500 t850 t2m u10 v10
               (``path=...``), conservatively regridded
=============  =====================================================  ==========================

Generated sources are cached under ``icml26._paths.cache_dir("weather", name)`` as netCDF,
keyed by every argument that shapes them, written atomically; the last opened dataset is also
kept in memory so several envs in one process share it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import xarray as xr

from icml26.envs.weather.grid import DEFAULT_CHANNELS

CACHE_VERSION = 1  # bump when a generator changes its output
DEFAULT_CHANNELS_BY_SOURCE: dict[str, tuple[str, ...]] = {
    "synthetic": DEFAULT_CHANNELS,
    "lorenz96": ("lorenz96_x",),
    "qg": ("z250", "z750", "u250", "v250"),
    "barotropic": ("z500", "u500", "v500"),
    "era5": DEFAULT_CHANNELS,
}
SOURCES = tuple(DEFAULT_CHANNELS_BY_SOURCE)
_memo: dict[str, xr.Dataset] = {}


def _generator(name: str) -> Callable[..., xr.Dataset]:
    if name == "synthetic":
        from icml26.envs.weather.synthetic import generate_sphere

        return generate_sphere
    if name == "lorenz96":
        from icml26.envs.weather.lorenz96 import generate_lorenz96

        return generate_lorenz96
    if name == "qg":
        from icml26.envs.weather.qg import generate_qg

        return generate_qg
    if name == "barotropic":
        from icml26.envs.weather.barotropic import generate_barotropic

        return generate_barotropic
    raise KeyError(f"unknown weather source {name!r}; known: {', '.join(SOURCES)}")


def cache_key(name: str, start: str, end: str, kwargs: dict[str, Any]) -> str:
    from icml26._paths import params_digest

    return params_digest(
        {
            "v": CACHE_VERSION,
            "name": name,
            "start": str(start),
            "end": str(end),
            "kwargs": {k: kwargs[k] for k in sorted(kwargs)},
        },
        length=20,
    )


def open_source(name: str, start: str, end: str, cache: bool = True, **kwargs: Any) -> xr.Dataset:
    """The dataset of source ``name`` from ``start`` to ``end`` (inclusive, 6-hourly)."""
    if name == "era5":
        from icml26.envs.weather.era5 import open_era5

        if "path" not in kwargs:
            raise ValueError(
                "the era5 source needs source_kwargs={'path': <zarr store or netCDF file>}"
            )
        key = "era5:" + cache_key(name, start, end, kwargs)
        if key not in _memo:
            _memo.clear()
            _memo[key] = open_era5(start=start, end=end, **kwargs)
        return _memo[key]
    gen = _generator(name)
    # Key on every parameter, defaults included, so a changed default never reuses stale data.
    params = {
        k: p.default
        for k, p in inspect.signature(gen).parameters.items()
        if p.default is not inspect.Parameter.empty and k not in ("start", "end", "progress")
    }
    unknown = set(kwargs) - set(params) - {"progress"}
    if unknown and not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(gen).parameters.values()
    ):
        raise TypeError(
            f"weather source {name!r}: unknown options {sorted(unknown)}; known: {sorted(params)}"
        )
    params.update({k: v for k, v in kwargs.items() if k != "progress"})
    key = cache_key(name, start, end, params)
    if key in _memo:
        return _memo[key]
    from icml26._paths import cache_dir, cached

    takes = inspect.signature(gen).parameters
    call = {k: v for k, v in kwargs.items() if k != "progress" or "progress" in takes}

    def make() -> xr.Dataset:
        return gen(start=start, end=end, **call)

    if cache:
        ds = cached(
            cache_dir("weather", name) / f"{key}.nc",
            make,
            lambda p: xr.load_dataset(p, engine=_engine(p)),
            lambda d, tmp: d.to_netcdf(tmp, engine=_engine()),
        )
    else:
        ds = make()
    _memo.clear()
    _memo[key] = ds
    return ds


def _engine(path: Any = None) -> str:
    """The netCDF engine for the cache: netCDF4 where installed, else scipy (netCDF3; a machine
    with only numpy/scipy/xarray, such as a GPU image, can still write and read the cache). An
    existing file is read with the engine its format needs (HDF5-based or classic)."""
    import importlib

    if path is not None:
        with open(path, "rb") as f:
            if f.read(3) == b"CDF":
                return "scipy"
    for name, engine in (("netCDF4", "netcdf4"), ("h5netcdf", "h5netcdf")):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        return engine
    return "scipy"


def clear_memory_cache() -> None:
    """Forget the dataset kept in memory (the disk cache stays)."""
    _memo.clear()
