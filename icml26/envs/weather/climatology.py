"""WeatherBench 2 climatology (day of year x hour, 61-day window) and climatological quantiles.

WeatherBench 2 (Rasp et al. 2024, section 4.3) defines the climatology for each day of year and
hour of day as the mean over all years of the samples within a window of 61 days centred on that
day. :class:`Climatology` holds it as an array ``(366, n_hours, channel, lat, lon)`` and looks it
up for any valid time; :func:`compute_climatology` returns it as an ``xr.Dataset`` with dims
``dayofyear`` (1..366), ``hour``, [``level``], ``latitude``, ``longitude`` as WeatherBench 2
stores it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from icml26.envs.weather.grid import array_to_dataset, channels_of, dataset_to_array

WINDOW_DAYS = 61  # WeatherBench 2 climatology window


def _doy_hour(times: Any, hours: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = pd.DatetimeIndex(np.atleast_1d(np.asarray(times, dtype="datetime64[ns]")))
    h = t.hour.to_numpy()
    pos = np.searchsorted(hours, h)
    pos = np.clip(pos, 0, hours.size - 1)
    if np.any(hours[pos] != h) or np.any(t.minute != 0):
        raise ValueError(
            f"times at hours {sorted(set(h.tolist()))} are not all in the climatology's hours {hours.tolist()}"
        )
    return t.day_of_year.to_numpy() - 1, pos


def _circular_window_sum(x: np.ndarray, window: int) -> np.ndarray:
    """Sum over ``window`` consecutive day-of-year bins centred on each bin, wrapping around."""
    half = window // 2
    ext = np.concatenate([x[-half:], x, x[:half]]) if half else x
    c = np.cumsum(np.concatenate([np.zeros_like(ext[:1]), ext]), axis=0)
    return c[window:] - c[:-window]


def _window_mean(sums: np.ndarray, counts: np.ndarray, window: int) -> np.ndarray:
    """Mean of all samples in the window: windowed sums over windowed counts (one channel at a
    time to bound memory). Days whose window holds no sample (training data shorter than a
    year) take the value of the nearest day of year that has one."""
    wcnt = _circular_window_sum(counts, window)
    out = np.empty(sums.shape, dtype=np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        for c in range(sums.shape[2]):
            out[:, :, c] = _circular_window_sum(sums[:, :, c], window) / wcnt[:, :, None, None]
    for h in range(counts.shape[1]):
        have = np.flatnonzero(wcnt[:, h] > 0)
        if have.size == 0:
            raise ValueError(f"no sample at hour index {h}: cannot form a climatology")
        if have.size < 366:
            missing = np.flatnonzero(wcnt[:, h] == 0)
            dist = np.abs(missing[:, None] - have[None, :])
            nearest = have[np.argmin(np.minimum(dist, 366 - dist), axis=1)]
            out[missing, h] = out[nearest, h]
    return out


@dataclass
class Climatology:
    """Mean per (day of year, hour): ``values`` (366, n_hours, C, lat, lon), float32."""

    values: np.ndarray
    hours: np.ndarray
    channels: tuple[str, ...]

    @classmethod
    def from_array(
        cls, array: np.ndarray, times: Any, channels: Sequence[str], window: int = WINDOW_DAYS
    ) -> Climatology:
        """Climatology of ``array`` (T, C, lat, lon) sampled at ``times``."""
        arr = np.asarray(array)
        t = pd.DatetimeIndex(np.asarray(times, dtype="datetime64[ns]"))
        if arr.shape[0] != t.size:
            raise ValueError(f"{arr.shape[0]} states but {t.size} times")
        if window < 1 or window % 2 == 0:
            raise ValueError(f"window must be a positive odd number of days, got {window}")
        hours = np.unique(t.hour.to_numpy())
        doy, hidx = _doy_hour(t, hours)
        sums = np.zeros((366, hours.size, *arr.shape[1:]), dtype=np.float64)
        counts = np.zeros((366, hours.size), dtype=np.float64)
        for i in range(arr.shape[0]):
            sums[doy[i], hidx[i]] += arr[i]
            counts[doy[i], hidx[i]] += 1
        return cls(_window_mean(sums, counts, window), hours, tuple(channels))

    @classmethod
    def from_dataset(
        cls, ds: xr.Dataset, channels: Sequence[str] | None = None, window: int = WINDOW_DAYS
    ) -> Climatology:
        chans = tuple(channels) if channels is not None else channels_of(ds)
        return cls.from_array(dataset_to_array(ds, chans), ds["time"].values, chans, window)

    def at(self, times: Any) -> np.ndarray:
        """Climatology at ``times`` (any shape S of datetimes) -> (*S, C, lat, lon)."""
        t = np.asarray(times, dtype="datetime64[ns]")
        doy, hidx = _doy_hour(t.ravel(), self.hours)
        return self.values[doy, hidx].reshape(*t.shape, *self.values.shape[2:])

    def to_dataset(self, latitude: np.ndarray, longitude: np.ndarray) -> xr.Dataset:
        """WeatherBench 2 layout: dims (dayofyear, hour, [level], latitude, longitude)."""
        coords = {
            "dayofyear": np.arange(1, 367),
            "hour": self.hours,
            "latitude": latitude,
            "longitude": longitude,
        }
        return array_to_dataset(self.values, self.channels, coords, lead_dims=("dayofyear", "hour"))


def compute_climatology(
    ds: xr.Dataset, channels: Sequence[str] | None = None, window: int = WINDOW_DAYS
) -> xr.Dataset:
    """The WeatherBench 2 climatology of ``ds`` as an ``xr.Dataset``."""
    clim = Climatology.from_dataset(ds, channels, window)
    return clim.to_dataset(ds["latitude"].values, ds["longitude"].values)


def climatological_quantiles(
    array: np.ndarray, quantiles: Sequence[float] = (0.95, 0.99)
) -> np.ndarray:
    """Per-grid-point quantiles over time of ``array`` (T, C, lat, lon) -> (nq, C, lat, lon):
    the event thresholds of the extremes scores (WeatherBench-X style)."""
    q = np.asarray(quantiles, dtype=np.float64)
    if np.any((q <= 0) | (q >= 1)):
        raise ValueError(f"quantiles must lie in (0, 1), got {q.tolist()}")
    return np.quantile(np.asarray(array), q, axis=0).astype(np.float32)
