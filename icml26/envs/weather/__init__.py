"""The weather family: open-loop weather rollouts on WeatherBench 2 data (EMFormer).

* :mod:`~icml26.envs.weather.env` -- ``icml26/WeatherRollout-v0`` and :class:`WeatherDataset`;
* :mod:`~icml26.envs.weather.sources` -- ``open_source`` for the ``synthetic`` sphere
  (:mod:`~icml26.envs.weather.synthetic`), ``lorenz96``, ``qg`` (two-layer quasi-geostrophic)
  and a user's ``era5`` zarr/netCDF (:mod:`~icml26.envs.weather.era5`);
* :mod:`~icml26.envs.weather.metrics` -- latitude-weighted RMSE, ACC, bias, activity,
  top-quantile error, CSI/ETS/HSS/frequency bias/SEDI, the headline table;
* :mod:`~icml26.envs.weather.climatology` -- the WeatherBench 2 climatology;
* :mod:`~icml26.envs.weather.forecast_io` -- forecasts as WeatherBench 2 zarr/netCDF;
* :mod:`~icml26.envs.weather.grid` -- channels (``z500``...), grids, array <-> xarray.

Importing this package is cheap; the modules load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "WeatherRolloutEnv": "env", "WeatherDataset": "env", "as_weather_dataset": "env",
    "open_source": "sources", "generate_sphere": "synthetic", "event_table": "synthetic",
    "event_footprint": "synthetic", "generate_lorenz96": "lorenz96", "generate_qg": "qg",
    "TwoLayerQG": "qg", "open_era5": "era5", "Climatology": "climatology",
    "compute_climatology": "climatology", "ForecastScorer": "metrics", "EventThresholds": "metrics",
    "score": "metrics", "headline_table": "metrics", "latitude_weights": "metrics",
    "forecast_dataset": "forecast_io", "write_forecast": "forecast_io", "open_forecast": "forecast_io",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"icml26.envs.weather.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'icml26.envs.weather' has no attribute {name!r}")
