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

from icml26._lazy import lazy_exports

_EXPORTS = {
    "WeatherRolloutEnv": "env", "WeatherDataset": "env", "as_weather_dataset": "env",
    "open_source": "sources", "generate_sphere": "synthetic", "event_table": "synthetic",
    "event_footprint": "synthetic", "generate_lorenz96": "lorenz96", "generate_qg": "qg",
    "TwoLayerQG": "qg", "open_era5": "era5", "Climatology": "climatology",
    "compute_climatology": "climatology", "ForecastScorer": "metrics", "EventThresholds": "metrics",
    "score": "metrics", "headline_table": "metrics", "latitude_weights": "metrics",
    "forecast_dataset": "forecast_io", "write_forecast": "forecast_io", "open_forecast": "forecast_io",
}

__getattr__, __all__ = lazy_exports(__name__, _EXPORTS)
