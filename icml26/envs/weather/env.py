"""``icml26/WeatherRollout-v0``: open-loop autoregressive weather forecasting, 6 h per step."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import xarray as xr
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from icml26.envs._checks import check_int_at_least, check_render_mode
from icml26.envs.weather.climatology import Climatology
from icml26.envs.weather.grid import (
    STEP_HOURS,
    dataset_to_array,
    hours_since_epoch,
    normalize_channels,
    parse_channel,
)
from icml26.envs.weather.metrics import EventThresholds, latitude_weights_array
from icml26.envs.weather.sources import DEFAULT_CHANNELS_BY_SOURCE, SOURCES, cache_key, open_source

ENV_NAME = "WeatherRollout-v0"
DEFAULT_TRAIN = ("2000-01-01", "2002-12-31T18")
DEFAULT_TEST = ("2003-01-01", "2003-12-31T18")
_HOUR_LIMIT = 2**40  # bounds of the int64 "time" observation (hours since 1970)


@dataclass
class WeatherDataset:
    """Training data handed to learners: a WeatherBench 2 ``xr.Dataset`` plus the env's channel
    order, history length and horizon. ``array`` is ``(time, channel, lat, lon)`` float32."""

    data: xr.Dataset
    channels: tuple[str, ...]
    history: int = 2
    lead_steps: int = 40
    _array: np.ndarray | None = field(default=None, repr=False)

    @property
    def array(self) -> np.ndarray:
        if self._array is None:
            self._array = dataset_to_array(self.data, self.channels)
        return self._array

    @property
    def times(self) -> np.ndarray:
        return np.asarray(self.data["time"].values, dtype="datetime64[ns]")

    @property
    def latitude(self) -> np.ndarray:
        return np.asarray(self.data["latitude"].values)

    @property
    def longitude(self) -> np.ndarray:
        return np.asarray(self.data["longitude"].values)

    def climatology(self) -> Climatology:
        """The WeatherBench 2 climatology of this data (day of year x hour, 61-day window)."""
        return Climatology.from_array(self.array, self.times, self.channels)


def as_weather_dataset(data: Any, channels: Sequence[str] | None = None) -> WeatherDataset:
    """Accept a :class:`WeatherDataset`, an env (its training split) or a plain ``xr.Dataset``."""
    if isinstance(data, WeatherDataset):
        return data
    unwrapped = getattr(data, "unwrapped", None)
    if isinstance(unwrapped, WeatherRolloutEnv):
        return unwrapped.dataset("train")
    if isinstance(data, xr.Dataset):
        from icml26.envs.weather.grid import channels_of

        return WeatherDataset(data, normalize_channels(channels) if channels else channels_of(data))
    raise TypeError(
        f"expected a WeatherDataset, a WeatherRollout env or an xr.Dataset, got {type(data).__name__}"
    )


# Per-process memo of training-period statistics: envs over the same data share them.
_memo: dict[tuple[Any, ...], Any] = {}


def _memoized(key: tuple[Any, ...], make: Any) -> Any:
    if key not in _memo:
        if len(_memo) >= 6:
            _memo.pop(next(iter(_memo)))
        _memo[key] = make()
    return _memo[key]


def _train_stats(
    key: str, ds: xr.Dataset, channels: tuple[str, ...], start: str, end: str
) -> tuple[np.ndarray, np.ndarray]:
    def make() -> tuple[np.ndarray, np.ndarray]:
        arr = dataset_to_array(ds.sel(time=slice(start, end)), channels)
        mean = arr.mean(axis=(0, 2, 3), dtype=np.float64)
        std = arr.std(axis=(0, 2, 3), dtype=np.float64)
        return mean, np.where(std > 0, std, 1.0)

    return _memoized(("stats", key, channels, start, end), make)


class WeatherRolloutEnv(gym.Env):
    """
    ## Description
    Medium-range weather forecasting as an open-loop rollout (EMFormer, ICML 2026; WeatherBench
    2 conventions). ``reset`` picks an initialization time in the evaluation period and shows
    the agent the atmospheric state at that time and the ``history - 1`` states before it. Each
    ``step`` takes the agent's forecast of the state 6 hours later; after ``lead_steps`` steps
    (40 = 10 days) the episode ends. The loop is open: the observation after a step contains the
    agent's own forecasts (the accumulating context of an autoregressive model), never the
    truth. The truth of the whole episode is revealed in ``info`` only at the last step.

    Data come from a named source (``synthetic`` sphere by default, ``lorenz96``, ``qg``, or a
    user's ``era5`` zarr/netCDF), all as WeatherBench 2 ``xr.Dataset``. Learners get the
    training period as a :class:`WeatherDataset` from ``env.unwrapped.dataset("train")``.

    ## Action Space
    ``Box(-inf, inf, (C, lat, lon), float32)``: the forecast of every channel in physical units
    (``env.unwrapped.channels`` gives the order). An ``xr.Dataset`` or a mapping
    ``{channel: (lat, lon) array}`` is accepted too; its variables must be exactly the channels.
    NaN/inf, a wrong shape or wrong variables raise ``ValueError`` before anything changes.

    ## Observation Space
    ``Dict``: ``state`` ``Box(-inf, inf, (history, C, lat, lon), float32)`` (oldest first; the
    newest is the initial truth at reset, then the agent's latest forecast); ``lead_step``
    ``Discrete(lead_steps + 1)``; ``time`` ``Box((1,), int64)``: hours since 1970-01-01 of the
    newest state's valid time.

    ## Rewards
    ``-mean_c MSE_c / var_c``: the latitude-weighted (cell-area) mean squared error of each
    channel at this lead, divided by the channel's variance over the training period (the
    z-score normalization), averaged over channels. A perfect forecast earns 0.

    ## Starting State
    An initialization time drawn uniformly (``self.np_random``) among the period's times at
    ``init_hours`` (00 and 12 UTC) that leave room for the history and the 40 leads, or the one
    given by ``reset(options={"init_time": ...})`` / ``{"init_index": i}``.

    ## Episode End
    Terminated after ``lead_steps`` steps; the final ``info`` holds ``truth`` and ``forecast``
    ``(lead_steps, C, lat, lon)``, ``init_time``, and per-lead, per-channel ``rmse``.

    ## Arguments
    ``gym.make("icml26/WeatherRollout-v0", source="synthetic", source_kwargs=None,
    channels=None, train_period=("2000-01-01", "2002-12-31T18"),
    test_period=("2003-01-01", "2003-12-31T18"), split="test", history=2, lead_steps=40,
    init_hours=(0, 12), val_period=None, val_source_kwargs=None)``. ``val_period`` adds held-out
    validation data for learners (``dataset("val")``; never scored): a period of the same data
    disjoint from both others, or, with ``val_source_kwargs`` (e.g. ``{"seed": 1}``), a period
    of an independent run of a generated source.

    ## Ecosystem
    ``icml26.integrations.sb3.wrap(env)`` applies ``NormalizedAction``: ``Box(-1, 1)`` forecasts
    mapped affinely onto ``env.unwrapped.action_bounds``, each channel's training-period mean
    +- 10 standard deviations. ``icml26.envs.weather.write_forecast(episode_info, path, env=env)``
    (or ``write_forecast(agent, path, env=env)``) writes a WeatherBench 2 zarr with units.

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, icml26
    >>> env = gym.make("icml26/WeatherRollout-v0", source="lorenz96", lead_steps=2,
    ...                train_period=("2000-01-01", "2000-01-31T18"),
    ...                test_period=("2000-02-01", "2000-02-29T18"))
    >>> obs, info = env.reset(seed=0)
    >>> obs["state"].shape, env.unwrapped.channels
    ((2, 1, 1, 40), ('lorenz96_x',))
    >>> obs, reward, terminated, truncated, info = env.step(obs["state"][-1])  # persistence
    >>> print(round(float(reward), 4), terminated, obs["lead_step"])
    -0.0333 False 1
    """

    metadata = {
        "render_modes": ["rgb_array"],
        "render_fps": 4,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        source: str = "synthetic",
        source_kwargs: Mapping[str, Any] | None = None,
        channels: Sequence[str] | None = None,
        train_period: Sequence[str] = DEFAULT_TRAIN,
        test_period: Sequence[str] = DEFAULT_TEST,
        split: str = "test",
        history: int = 2,
        lead_steps: int = 40,
        init_hours: Sequence[int] = (0, 12),
        render_mode: str | None = None,
        val_period: Sequence[str] | None = None,
        val_source_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if source not in SOURCES:
            raise ValueError(f"{ENV_NAME}: source must be one of {SOURCES}, got {source!r}")
        if split not in ("train", "test"):
            raise ValueError(f"{ENV_NAME}: split must be 'train' or 'test', got {split!r}")
        check_int_at_least(ENV_NAME, "history", history)
        check_int_at_least(ENV_NAME, "lead_steps", lead_steps)
        check_render_mode(ENV_NAME, render_mode, self.metadata["render_modes"])
        bad_hours = [h for h in init_hours if h % STEP_HOURS or not 0 <= h < 24]
        if not init_hours or bad_hours:
            raise ValueError(
                f"{ENV_NAME}: init_hours must be multiples of {STEP_HOURS} in [0, 24), got {list(init_hours)}"
            )
        self.source = source
        self.source_kwargs = dict(source_kwargs or {})
        self.channels = normalize_channels(channels or DEFAULT_CHANNELS_BY_SOURCE[source])
        self.train_period = (str(train_period[0]), str(train_period[1]))
        self.test_period = (str(test_period[0]), str(test_period[1]))
        if pd.Timestamp(self.train_period[1]) >= pd.Timestamp(self.test_period[0]):
            raise ValueError(
                f"{ENV_NAME}: the training period {self.train_period} must end before "
                f"the test period {self.test_period} starts"
            )
        self.val_period = None if val_period is None else (str(val_period[0]), str(val_period[1]))
        self.val_source_kwargs = dict(val_source_kwargs or {})
        if self.val_source_kwargs and self.val_period is None:
            raise ValueError(f"{ENV_NAME}: val_source_kwargs needs a val_period")
        if self.val_period is not None and not self.val_source_kwargs:
            vs, ve = (pd.Timestamp(t) for t in self.val_period)
            for name, (a, b) in (("training", self.train_period), ("test", self.test_period)):
                if vs <= pd.Timestamp(b) and pd.Timestamp(a) <= ve:
                    raise ValueError(
                        f"{ENV_NAME}: the validation period {self.val_period} overlaps the "
                        f"{name} period {(a, b)}"
                    )
        self.split = split
        self.history = int(history)
        self.lead_steps = int(lead_steps)
        self.init_hours = tuple(int(h) for h in init_hours)
        self.render_mode = render_mode
        self._load()
        c, h, w = len(self.channels), self.latitude.size, self.longitude.size
        self.observation_space = spaces.Dict(
            {
                "state": spaces.Box(
                    -np.inf, np.inf, shape=(self.history, c, h, w), dtype=np.float32
                ),
                "lead_step": spaces.Discrete(self.lead_steps + 1),
                "time": spaces.Box(-_HOUR_LIMIT, _HOUR_LIMIT, shape=(1,), dtype=np.int64),
            }
        )
        self.action_space = spaces.Box(-np.inf, np.inf, shape=(c, h, w), dtype=np.float32)
        self._t0: int | None = None
        self._k = 0
        self._context = np.zeros((self.history, c, h, w), dtype=np.float32)
        self._forecasts = np.zeros((self.lead_steps, c, h, w), dtype=np.float32)

    # --------------------------------------------------------------------- data
    def _load(self) -> None:
        start, end = self.train_period[0], self.test_period[1]
        if self.val_period is not None and not self.val_source_kwargs:
            start = min(start, self.val_period[0], key=pd.Timestamp)
            end = max(end, self.val_period[1], key=pd.Timestamp)
        self._key = cache_key(self.source, start, end, self.source_kwargs)
        ds = open_source(self.source, start, end, **self._open_kwargs(self.source_kwargs))
        for name in self.channels:
            ch = parse_channel(name)
            if ch.variable not in ds.data_vars:
                raise ValueError(
                    f"{ENV_NAME}: channel {name!r} needs variable {ch.variable!r}, which the "
                    f"{self.source} source lacks (it has {sorted(map(str, ds.data_vars))})"
                )
        self._ds = ds
        period = self.test_period if self.split == "test" else self.train_period
        part = ds.sel(time=slice(*period))
        if part.sizes["time"] < self.history + self.lead_steps:
            have = (
                f"{ds['time'].values[0]} .. {ds['time'].values[-1]}"
                if ds.sizes["time"]
                else "nothing"
            )
            raise ValueError(
                f"{ENV_NAME}: the {self.split} period {period} holds {part.sizes['time']} "
                f"states, fewer than history + lead_steps = {self.history + self.lead_steps} "
                f"(the {self.source} data cover {have})"
            )
        self._times = np.asarray(part["time"].values, dtype="datetime64[ns]")
        if np.any(np.diff(self._times) != np.timedelta64(STEP_HOURS, "h")):
            raise ValueError(
                f"{ENV_NAME}: the {self.split} period must be evenly {STEP_HOURS}-hourly"
            )
        self._data = dataset_to_array(part, self.channels)
        self.latitude = np.asarray(ds["latitude"].values, dtype=np.float64)
        self.longitude = np.asarray(ds["longitude"].values, dtype=np.float64)
        self._weights = latitude_weights_array(self.latitude) / (
            self.latitude.size * self.longitude.size
        )
        self.channel_mean, self.channel_std = _train_stats(
            self._key, ds, self.channels, *self.train_period
        )
        hours = pd.DatetimeIndex(self._times).hour.to_numpy()
        idx = np.arange(self.history - 1, self._times.size - self.lead_steps)
        self._init_index = idx[np.isin(hours[idx], self.init_hours)]
        if self._init_index.size == 0:
            raise ValueError(
                f"{ENV_NAME}: no initialization time at hours {self.init_hours} in {period}"
            )

    def _open_kwargs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Source options; a user's ERA5 data are read for the env's channels."""
        kw = dict(kwargs)
        if self.source == "era5":
            kw.setdefault("channels", tuple(self.channels))
        return kw

    @property
    def action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Finite ``(low, high)`` of the action shape: per-channel training mean +- 10 std."""
        shape = self.action_space.shape
        mean = np.asarray(self.channel_mean, dtype=np.float64)[:, None, None]
        std = np.asarray(self.channel_std, dtype=np.float64)[:, None, None]
        low = np.broadcast_to(mean - 10.0 * std, shape).astype(np.float32)
        high = np.broadcast_to(mean + 10.0 * std, shape).astype(np.float32)
        return low, high

    @property
    def init_times(self) -> np.ndarray:
        """Every allowed initialization time of the split (datetime64[ns])."""
        return self._times[self._init_index]

    def evaluation_init_times(self, n: int) -> np.ndarray:
        """``n`` initialization times spread evenly over the split (all of them if n >= count)."""
        if n >= self._init_index.size:
            return self.init_times
        pos = np.round(np.linspace(0, self._init_index.size - 1, n)).astype(int)
        return self.init_times[pos]

    def dataset(self, split: str = "train") -> WeatherDataset:
        """The training, test or validation period as a :class:`WeatherDataset` for learners.

        ``"val"`` needs the env's ``val_period``: held-out data for validation curves, from the
        same source (with ``val_source_kwargs`` applied: e.g. ``{"seed": 1}``, an independent
        run of a generated source). It is never scored and never shown in an episode."""
        if split not in ("train", "test", "val"):
            raise ValueError(f"{ENV_NAME}: split must be 'train', 'test' or 'val', got {split!r}")
        if split == "val":
            if self.val_period is None:
                raise ValueError(f"{ENV_NAME}: no validation data (the env has no val_period)")
            ds = self._ds
            if self.val_source_kwargs:
                kw = {**self.source_kwargs, **self.val_source_kwargs}
                ds = open_source(self.source, *self.val_period, **self._open_kwargs(kw))
            sel = ds.sel(time=slice(*self.val_period))
            if sel.sizes["time"] < self.history + self.lead_steps:
                raise ValueError(
                    f"{ENV_NAME}: the validation period {self.val_period} holds "
                    f"{sel.sizes['time']} states, fewer than history + lead_steps"
                )
        else:
            period = self.train_period if split == "train" else self.test_period
            sel = self._ds.sel(time=slice(*period))
        keep = [
            v
            for v in sel.data_vars
            if v in {parse_channel(c).variable for c in self.channels} or v == "land_sea_mask"
        ]
        return WeatherDataset(sel[keep], self.channels, self.history, self.lead_steps)

    def climatology(self) -> Climatology:
        """WeatherBench 2 climatology of the training period (for ACC and activity)."""
        return _climatology(self._key, self._ds, self.channels, *self.train_period)

    def event_thresholds(self, quantiles: Sequence[float] = (0.95, 0.99)) -> EventThresholds:
        """Per-grid-point climatological quantiles of the training period (extreme events)."""
        return _thresholds(self._key, self._ds, self.channels, *self.train_period, tuple(quantiles))

    # --------------------------------------------------------------------- gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"init_time", "init_index"}
        if unknown:
            raise ValueError(
                f"{ENV_NAME}: unknown reset options {sorted(unknown)}; use 'init_time' or 'init_index'"
            )
        if "init_time" in options:
            t = np.datetime64(pd.Timestamp(options["init_time"]).to_datetime64(), "ns")
            pos = np.flatnonzero(self.init_times == t)
            if pos.size == 0:
                raise ValueError(
                    f"{ENV_NAME}: init_time {options['init_time']!r} is not an allowed initialization "
                    f"({self.init_times[0]} .. {self.init_times[-1]} at hours {self.init_hours})"
                )
            j = int(pos[0])
        elif "init_index" in options:
            j = int(options["init_index"])
            if not 0 <= j < self._init_index.size:
                raise ValueError(
                    f"{ENV_NAME}: init_index must be in [0, {self._init_index.size}), got {j}"
                )
        else:
            j = int(self.np_random.integers(self._init_index.size))
        self._t0 = int(self._init_index[j])
        self._k = 0
        self._context = self._data[self._t0 - self.history + 1 : self._t0 + 1].copy()
        self._forecasts = np.zeros_like(self._forecasts)
        return self._obs(), {"init_time": str(self._times[self._t0]), "lead_hours": 0}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._t0 is None or self._k >= self.lead_steps:
            raise RuntimeError(
                f"{ENV_NAME}: call reset() before step() (the episode has ended or not begun)"
            )
        forecast = self._check_action(action)
        truth = self._data[self._t0 + self._k + 1]
        err = (forecast - truth).astype(np.float64)
        mse = np.einsum("chw,h->c", err * err, self._weights)
        reward = -float(np.mean(mse / self.channel_std**2))
        self._forecasts[self._k] = forecast
        self._context[:-1] = self._context[1:]
        self._context[-1] = forecast
        self._k += 1
        terminated = self._k == self.lead_steps
        info: dict[str, Any] = {
            "lead_hours": STEP_HOURS * self._k,
            "valid_time": str(self._times[self._t0 + self._k]),
        }
        if terminated:
            truth_all = self._data[self._t0 + 1 : self._t0 + 1 + self.lead_steps].copy()
            e = (self._forecasts - truth_all).astype(np.float64)
            info.update(
                {
                    "init_time": str(self._times[self._t0]),
                    "truth": truth_all,
                    "forecast": self._forecasts.copy(),
                    "rmse": np.sqrt(np.einsum("lchw,h->lc", e * e, self._weights)),
                }
            )
        return self._obs(), reward, terminated, False, info

    def render(self) -> np.ndarray | None:
        """The newest state of the first channel as a blue-white-red image (north up)."""
        if self.render_mode != "rgb_array":
            return None
        x = self._context[-1, 0][::-1]
        z = np.clip((x - self.channel_mean[0]) / (3 * self.channel_std[0]), -1, 1)
        img = np.empty((*z.shape, 3), dtype=np.uint8)
        img[..., 0] = (255 * np.clip(1 + z, 0, 1)).astype(np.uint8)
        img[..., 2] = (255 * np.clip(1 - z, 0, 1)).astype(np.uint8)
        img[..., 1] = (255 * (1 - np.abs(z))).astype(np.uint8)
        return np.repeat(np.repeat(img, 4, 0), 4, 1)

    # --------------------------------------------------------------------- helpers
    def _obs(self) -> dict[str, Any]:
        assert self._t0 is not None
        return {
            "state": self._context.copy(),
            "lead_step": int(self._k),
            "time": hours_since_epoch(self._times[self._t0 + self._k]),
        }

    def _check_action(self, action: Any) -> np.ndarray:
        shape = self.action_space.shape
        if isinstance(action, (xr.Dataset, Mapping)):
            action = self._from_named(action)
        try:
            a = np.asarray(action, dtype=np.float32)
        except (TypeError, ValueError):
            raise TypeError(
                f"{ENV_NAME}: expected a forecast array of shape {shape} (channels "
                f"{self.channels}), got {type(action).__name__}"
            ) from None
        if a.shape != shape:
            raise ValueError(
                f"{ENV_NAME}: expected a forecast of shape {shape} = (channels {self.channels}, "
                f"lat, lon), got shape {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            bad = [c for c, ok in zip(self.channels, np.isfinite(a).all(axis=(1, 2))) if not ok]
            raise ValueError(f"{ENV_NAME}: the forecast has NaN or inf values in channel(s) {bad}")
        return a

    def _from_named(self, action: Any) -> np.ndarray:
        if isinstance(action, xr.Dataset):
            from icml26.envs.weather.grid import channels_of

            names = set(
                channels_of(action.expand_dims("time") if "time" not in action.dims else action)
            )
            if names != set(self.channels):
                raise ValueError(
                    f"{ENV_NAME}: forecast variables {sorted(names)} do not match the channels "
                    f"{list(self.channels)} (missing {sorted(set(self.channels) - names)}, "
                    f"unexpected {sorted(names - set(self.channels))})"
                )
            ds = action.expand_dims("time") if "time" not in action.dims else action
            return dataset_to_array(ds, self.channels)[0]
        keys = {parse_channel(k).name for k in action}
        if keys != set(self.channels):
            raise ValueError(
                f"{ENV_NAME}: forecast variables {sorted(keys)} do not match the channels "
                f"{list(self.channels)} (missing {sorted(set(self.channels) - keys)}, "
                f"unexpected {sorted(keys - set(self.channels))})"
            )
        by_name = {parse_channel(k).name: v for k, v in action.items()}
        return np.stack([np.asarray(by_name[c], dtype=np.float32) for c in self.channels])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for k in ("_ds", "_data", "_times", "_init_index"):
            state.pop(k, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._load()


def _climatology(
    key: str, ds: xr.Dataset, channels: tuple[str, ...], start: str, end: str
) -> Climatology:
    return _memoized(
        ("clim", key, channels, start, end),
        lambda: Climatology.from_dataset(ds.sel(time=slice(start, end)), channels),
    )


def _thresholds(
    key: str,
    ds: xr.Dataset,
    channels: tuple[str, ...],
    start: str,
    end: str,
    quantiles: tuple[float, ...],
) -> EventThresholds:
    def make() -> EventThresholds:
        arr = dataset_to_array(ds.sel(time=slice(start, end)), channels)
        return EventThresholds.from_array(arr, channels, quantiles)

    return _memoized(("thr", key, channels, start, end, quantiles), make)
