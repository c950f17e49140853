"""The forecaster protocol shared by the weather agents.

A weather agent is an autoregressive 6-hour forecaster. Besides the common ``reset`` / ``act`` /
``learn`` it has (the family's addition to the protocol):

* ``predict(context, times) -> next``: ``context`` (B, h, C, lat, lon) holds the last ``h``
  states (oldest first; ``h = context_length``), ``times`` (B,) the valid time of the newest;
  returns the states 6 hours later, (B, C, lat, lon), in physical units;
* ``rollout(context, init_times, steps) -> (B, steps, C, lat, lon)``: ``predict`` fed back on
  itself, the same forecast the env loop produces with ``act``, batched over initializations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from icml26.envs.weather.env import WeatherDataset, as_weather_dataset
from icml26.envs.weather.grid import STEP, datetime_from_hours
from icml26.protocol import Budget


class WeatherForecaster:
    """Base class: ``act`` and ``rollout`` from ``predict``; ``learn`` calls ``fit``."""

    version = "1"
    context_length = 1
    needs_training = True

    def __init__(self) -> None:
        self.channels: tuple[str, ...] | None = None
        self._fitted = False
        self._seed: int | None = None

    def bind(self, observation_space: Any, action_space: Any) -> None:
        state = observation_space["state"]
        if state.shape[0] < self.context_length:
            raise ValueError(
                f"{type(self).__name__} reads {self.context_length} past states but the env "
                f"shows {state.shape[0]} (raise the env's history)"
            )
        self._state_shape = state.shape[1:]

    def reset(self, seed: int | None = None) -> None:
        self._seed = seed

    def learn(self, env_or_dataset: Any, budget: Budget | None = None) -> Mapping[str, Any] | None:
        data = as_weather_dataset(env_or_dataset)
        self.channels = data.channels
        stats = self.fit(data, budget or Budget())
        self._fitted = True
        return stats

    def fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:
        return {}

    def predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _require_fit(self) -> None:
        if self.needs_training and not self._fitted:
            raise RuntimeError(
                f"{type(self).__name__}: call learn(dataset_or_env, budget) before forecasting"
            )

    def _observed(self, observation: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """The env observation's state (history, C, lat, lon), checked, and its time (1,)."""
        self._require_fit()
        state = np.asarray(observation["state"], dtype=np.float32)
        if state.ndim != 4 or state.shape[0] < self.context_length:
            raise ValueError(
                f"{type(self).__name__}: observation['state'] must be (history >= "
                f"{self.context_length}, C, lat, lon), got {state.shape}"
            )
        return state, datetime_from_hours(np.asarray(observation["time"]).reshape(1))

    def act(
        self, observation: Mapping[str, Any], info: Mapping[str, Any] | None = None
    ) -> np.ndarray:
        state, times = self._observed(observation)
        return self.predict(state[None, -self.context_length :], times)[0].astype(np.float32)

    def rollout(self, context: np.ndarray, init_times: Any, steps: int) -> np.ndarray:
        """Forecast ``steps`` 6-hour steps from ``context`` (B, h >= context_length, C, lat, lon)."""
        self._require_fit()
        ctx = np.asarray(context, dtype=np.float32)[:, -self.context_length :].copy()
        t = np.asarray(init_times, dtype="datetime64[ns]").reshape(-1)
        out = np.empty((ctx.shape[0], steps, *ctx.shape[2:]), dtype=np.float32)
        for k in range(steps):
            nxt = self.predict(ctx, t)
            out[:, k] = nxt
            ctx = np.concatenate([ctx[:, 1:], nxt[:, None]], axis=1)
            t = t + STEP
        return out
