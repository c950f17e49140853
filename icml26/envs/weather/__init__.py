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

```python
import gymnasium as gym, icml26
env = gym.make("icml26/WeatherRollout-v0")              # synthetic sphere, 10-day rollouts
env = gym.make("icml26/WeatherRollout-v0", source="era5",
               source_kwargs={"path": "/data/era5_5.625deg.zarr"},
               train_period=("1979-01-01", "2015-12-31T18"), test_period=("2018-01-01", "2018-12-31T18"))
```

## Data sources

All return `xr.Dataset` with WeatherBench 2 dims (`time`, [`level`], `latitude` increasing,
`longitude` in [0, 360)) and names. Generated ones are cached under `$ICML26_CACHE/weather/`.

| `source` | what | default channels |
|---|---|---|
| `synthetic` (default) | the WeatherBench 5.625 deg grid (32 x 64). Analytic climatology with seasons (opposite in the hemispheres, stronger over idealized continents), a diurnal cycle in local solar time, stationary waves, trades, westerlies and a migrating ITCZ; anomalies from a T21 spherical-harmonic streamfunction whose modes are red (Ornstein-Uhlenbeck) and drift at the Rossby-Haurwitz phase speed on a superrotation modulated by a slow zonal-jet index (a state-dependent, nonlinear speed); geostrophic z500, rotational winds turned toward low pressure at 10 m, temperature in quadrature plus an independent slower field, land-enhanced red noise in t2m; rare heatwaves and cyclones injected with known parameters (`ds.attrs["events"]`, `event_table`, `event_footprint`). About 2 CPU-seconds per simulated year. | z500 t850 t2m u10 v10 (also z850, t500) |
| `lorenz96` | Lorenz-96, K = 40, F = 8, 0.05 time units = 6 h, on a latitude circle; variable `lorenz96_x` | lorenz96_x |
| `qg` | two-layer quasi-geostrophic turbulence (Phillips model, pyqg's formulation, numpy FFTs, RK4), a square 9430 km beta-plane sector at 45 N; geopotential and winds on levels 250 (upper layer) and 750 hPa | z250 z750 u250 v250 |
| `barotropic` | nonlinear barotropic vorticity dynamics on the whole sphere: spectral transform model (T21, 32 x 64 Gaussian grid, RK4) forced by relaxation to an unstable 40 m/s jet at 45 N and ring stirring at total wavenumbers 8-12; conserves energy and enstrophy without forcing (tested), Rossby-Haurwitz waves drift at the analytic speed | z500 u500 v500 |
| `era5` | a user's ERA5 / WeatherBench 2 zarr store or netCDF file(s) (`source_kwargs={"path": ...}`): CDS short names and dims renamed, hourly data thinned to 6-hourly, latitude sorted, longitude wrapped, regridded first-order conservatively to the task grid | z500 t850 t2m u10 v10 |

## Metrics (`icml26.envs.weather.metrics`)

Latitude weights (cell area, WeatherBench 2); RMSE as sqrt of the time-mean MSE and the
per-initialization variant; uncentred ACC against the day-of-year x hour climatology with a
61-day window; bias; activity; FourCastNet's top-quantile error; CSI, ETS, HSS, frequency bias
and SEDI for events above per-grid-point climatological quantiles; the headline table (Z500,
T850, T2M, U10 at 1, 3, 5, 7, 10 days). `ForecastScorer` accumulates all of them over chunks of
initializations; `score(forecast_ds, truth_ds, climatology, thresholds)` scores WeatherBench 2
datasets. `forecast_io.write_forecast` writes forecasts as WeatherBench 2 zarr (format 2,
consolidated) or netCDF that external tools open directly.

## Task notes

`weather/sphere-10day` (60 initializations over 2003, at most 2000 gradient updates),
`weather/sphere-quick` (smoke), `weather/lorenz96-10day`, `weather/qg-10day`. Metrics:
`return` (primary) and `<channel>_<score>[_q<quantile>]_<lead>d`, e.g. `z500_rmse_5d`,
`t2m_sedi_q95_3d`.

The headline `weather/qg-turbulent` v2 adds validation data: `val_period` 2004 of an
independent run of the same QG model (`val_source_kwargs={"seed": 1}`), which learners get
from `env.unwrapped.dataset("val")` for learning curves (never scored, never shown in an
episode). `icml26.benchmarks.tasks.weather.era5_task(path, ...)` builds the same protocol on a
user's ERA5 / WeatherBench 2 zarr store (WeatherBench 2's headline channels z500, t850, q700,
t2m, u10, v10, msl; train 1979-2015, validation 2016, test 2018 by default), and
`python experiments/weather_ladder.py run --era5 PATH` runs the weather page's budget ladder
on it. Divergent rollouts (RMSE above 5x climatology's) are counted in each trial's
`extra["divergence"]`.
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_EXPORTS = {
    "WeatherRolloutEnv": "env",
    "WeatherDataset": "env",
    "as_weather_dataset": "env",
    "open_source": "sources",
    "generate_sphere": "synthetic",
    "event_table": "synthetic",
    "event_footprint": "synthetic",
    "generate_lorenz96": "lorenz96",
    "generate_qg": "qg",
    "TwoLayerQG": "qg",
    "open_era5": "era5",
    "Climatology": "climatology",
    "compute_climatology": "climatology",
    "ForecastScorer": "metrics",
    "EventThresholds": "metrics",
    "score": "metrics",
    "headline_table": "metrics",
    "latitude_weights": "metrics",
    "forecast_dataset": "forecast_io",
    "write_forecast": "forecast_io",
    "open_forecast": "forecast_io",
}

__getattr__, __all__ = lazy_exports(__name__, _EXPORTS)
