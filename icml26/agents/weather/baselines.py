"""Reference forecasts: persistence, climatology and damped anomaly persistence."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.agents.weather.base import WeatherForecaster
from icml26.envs.weather.env import WeatherDataset
from icml26.envs.weather.grid import STEP
from icml26.envs.weather.metrics import latitude_weights_array
from icml26.protocol import Budget


class PersistenceForecaster(WeatherForecaster):
    """Every lead repeats the initial state (WeatherBench's persistence baseline)."""

    needs_training = False

    def predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        return np.asarray(context[:, -1], dtype=np.float32).copy()


class ClimatologyForecaster(WeatherForecaster):
    """The WeatherBench 2 climatology (day of year x hour, 61-day window) of the training data
    at each valid time."""

    def fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:
        self.clim = data.climatology()
        return {"train_states": int(data.array.shape[0])}

    def predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        return self.clim.at(np.asarray(times, dtype="datetime64[ns]") + STEP)


class DampedPersistenceForecaster(WeatherForecaster):
    """``clim(t_k) + alpha^k (x_0 - clim(t_0))``: the initial anomaly decays by the lag-1
    (6-hour) regression coefficient ``alpha`` of each channel's anomalies, fitted on the
    training data with latitude weights. Applied step by step as
    ``x_{k+1} = clim(t_{k+1}) + alpha (x_k - clim(t_k))``, which is the same forecast."""

    def fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:
        self.clim = data.climatology()
        arr, times = data.array, data.times
        w = latitude_weights_array(data.latitude)[None, None, :, None]
        num = np.zeros(arr.shape[1])
        den = np.zeros(arr.shape[1])
        idx = np.arange(arr.shape[0] - 1)
        for s in range(0, idx.size, 256):
            i = idx[s : s + 256]
            a0 = arr[i] - self.clim.at(times[i])
            a1 = arr[i + 1] - self.clim.at(times[i + 1])
            num += (w * a0 * a1).sum(axis=(0, 2, 3))
            den += (w * a0 * a0).sum(axis=(0, 2, 3))
        self.alpha = np.clip(num / np.maximum(den, 1e-12), 0.0, 1.0).astype(np.float32)
        return {"alpha": {c: float(a) for c, a in zip(data.channels, self.alpha)}}

    def predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        t = np.asarray(times, dtype="datetime64[ns]")
        anomaly = context[:, -1] - self.clim.at(t)
        return self.clim.at(t + STEP) + self.alpha[None, :, None, None] * anomaly
