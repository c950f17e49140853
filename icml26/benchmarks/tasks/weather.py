"""Tasks of the weather family: 10-day open-loop rollouts scored in WeatherBench 2 conventions.

``run_trial`` learns on the env's training period (``env.unwrapped.dataset("train")``), then
runs one episode per initialization time, evenly spread over the test period, through the env
(``act`` each 6 hours, open loop), and scores the collected forecasts with
:class:`icml26.envs.weather.metrics.ForecastScorer`: latitude-weighted RMSE and ACC per
channel and lead, and the extremes scores at the training period's 95th/99th percentiles.

``extra`` keeps what paired statistics and diagnostics need (:func:`diagnostics`): the per-
initialization weighted MSE and ACC at :data:`DIAG_DAYS` (so forecasters can be compared on the
same initializations) and the zonal energy spectra of forecast and truth per lead.

Metric names read ``<channel>_<score>[_q<quantile>]_<lead>d``: ``z500_rmse_5d`` is the Z500 RMSE
at 5 days, ``t2m_sedi_q95_3d`` the SEDI of 2 m temperature above its 95th percentile at 3 days.
The ACC of a forecast with no anomaly (climatology) is undefined: the metric is reported as 0
(metrics must be finite) and its name is listed in ``extra["undefined_reported_as_0"]``; the
per-initialization ACC in ``extra`` keeps it as ``None``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent, rollout, train_phase
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

_RUN = "icml26.benchmarks.tasks.weather:run_trial"
_ENV = "icml26/WeatherRollout-v0"
_RANGES: dict[str, tuple[Literal["max", "min"], float, float]] = {
    "rmse": ("min", 0.0, math.inf),
    "acc": ("max", -1.0, 1.0),
    "sedi": ("max", -1.0, 1.0),
    "csi": ("max", 0.0, 1.0),
    "ets": ("max", -1 / 3, 1.0),
}


def _metric(name: str) -> Metric:
    parts = name.split("_")
    score = parts[-3] if parts[-2].startswith("q") else parts[-2]
    direction, lo, hi = _RANGES[score]
    return Metric(
        name, direction, lo, hi, f"{score} of {name.split('_' + score)[0]} at {parts[-1]}"
    )


def _parse(name: str) -> tuple[str, str, float | None, int]:
    parts = name.split("_")
    days = int(parts[-1].rstrip("d"))
    if parts[-2].startswith("q"):
        return "_".join(parts[:-3]), parts[-3], int(parts[-2][1:]) / 100.0, days
    return "_".join(parts[:-2]), parts[-2], None, days


def _task(
    id: str,
    env_kwargs: dict[str, Any],
    headline: tuple[str, ...],
    eval_episodes: int,
    budget: Budget,
    description: str,
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4),
) -> Task:
    metrics = (
        Metric(
            "return",
            "max",
            -math.inf,
            0.0,
            "mean episode return: minus the sum over "
            "leads of the variance-normalized latitude-weighted MSE",
        ),
        *(_metric(h) for h in headline),
    )
    return Task(
        id=id,
        version=0,
        family="weather",
        env_id=_ENV,
        run_trial=_RUN,
        metrics=metrics,
        primary_metric="return",
        env_kwargs=env_kwargs,
        budget=budget,
        seeds=seeds,
        eval_episodes=eval_episodes,
        description=description,
        tolerance=0.1,
    )


SPHERE_HEADLINE = (
    "z500_rmse_3d",
    "z500_rmse_5d",
    "z500_acc_5d",
    "t850_rmse_5d",
    "t850_acc_5d",
    "t2m_rmse_5d",
    "u10_rmse_5d",
    "t2m_sedi_q95_3d",
    "t2m_csi_q95_3d",
)

SPHERE = _task(
    "weather/sphere-10day",
    {},
    SPHERE_HEADLINE,
    eval_episodes=60,
    budget=Budget(updates=2000),
    description="Synthetic sphere (5.625 deg; z500 t850 t2m u10 v10), train 2000-2002, test 2003: "
    "40 six-hour steps from 60 initializations; at most 2000 gradient updates.",
)
SPHERE_QUICK = _task(
    "weather/sphere-quick",
    {
        "train_period": ("2000-01-01", "2000-12-31T18"),
        "test_period": ("2001-01-01", "2001-02-28T18"),
    },
    SPHERE_HEADLINE,
    eval_episodes=6,
    budget=Budget(updates=120),
    description="Smoke version of sphere-10day: one training year, six initializations in "
    "Jan-Feb 2001, at most 120 gradient updates.",
    seeds=(0, 1),
)
LORENZ96 = _task(
    "weather/lorenz96-10day",
    {
        "source": "lorenz96",
        "train_period": ("2000-01-01", "2001-12-31T18"),
        "test_period": ("2002-01-01", "2002-12-31T18"),
    },
    ("lorenz96_x_rmse_1d", "lorenz96_x_rmse_3d", "lorenz96_x_rmse_5d", "lorenz96_x_acc_3d"),
    eval_episodes=60,
    budget=Budget(updates=2000),
    description="Lorenz-96 (K=40, F=8; 0.05 time units = 6 h): 40-step rollouts, two training years.",
)
QG = _task(
    "weather/qg-10day",
    {"source": "qg"},
    ("z250_rmse_3d", "z250_rmse_5d", "z250_acc_5d", "u250_rmse_3d", "z750_rmse_5d"),
    eval_episodes=60,
    budget=Budget(updates=2000),
    description="Two-layer QG turbulence (upper/lower layer z, u, v): 40-step rollouts, train "
    "2000-2002, test 2003.",
)

# The headline task: two-layer QG at its defaults (the same data as qg-10day), budget sized for a
# CPU run of nine arms x five seeds: 200 gradient updates, 40 initializations over the held-out
# year. Caveat (docs/results/weather.md, nonlinearity check): at this budget the direct per-lead
# linear forecaster (weather-linear-direct) beats every network at 3 and 5 days, and the z250
# variance is mostly slowly varying zonal jets, so the task does not yet show nonlinear skill.
QG_NONLINEAR_KWARGS: dict[str, Any] = {"source": "qg"}
QG_NONLINEAR = _task(
    "weather/qg-nonlinear",
    QG_NONLINEAR_KWARGS,
    (
        "z250_rmse_1d",
        "z250_rmse_3d",
        "z250_rmse_5d",
        "z250_acc_3d",
        "z250_acc_5d",
        "z250_rmse_10d",
        "u250_rmse_3d",
        "z750_rmse_5d",
    ),
    eval_episodes=40,
    budget=Budget(updates=200),
    description="Two-layer QG turbulence (z, u, v at the 250/750 hPa layers; 32 x 32 "
    "beta-plane sector), train 2000-2002, held-out test year 2003: 40 six-hour steps from 40 "
    "initializations; at most 200 gradient updates. The nonlinear headline task.",
)

# Supercritical, drag-arrested QG: beta lowered to 5e-12 /m/s (Phillips critical shear 4.9 m/s;
# 15.9 m/s at the defaults, whose 15 m/s shear is just subcritical) and bottom drag 1/(1 day), dt
# 1080 s for stability. Persistence saturates by about 5 days and the zonal mean carries about a
# third of the z250 variance (the defaults: two thirds). On the held-out year the iterated
# quadratic emulator (weather-quadratic-iterated) has 0.75 / 0.87 of the direct linear model's
# z250 RMSE at 1 / 3 days (docs/results/weather.md, paired intervals); by 5 days the best linear
# forecast is within 2% of climatology. Caveats: waves k >= 3 carry little variance (the domain is
# about two eddy wavelengths wide) and eddy winds reach ~140 m/s (time runs about three times
# faster than in the atmosphere; the slowed-down setting is nearly linear at 6-hour sampling).
QG_TURBULENT_KWARGS: dict[str, Any] = {
    "source": "qg",
    "source_kwargs": {"beta": 5e-12, "rek": 1.0 / 86400.0, "dt": 1080.0},
}
QG_TURBULENT = _task(
    "weather/qg-turbulent",
    QG_TURBULENT_KWARGS,
    tuple(m.name for m in QG_NONLINEAR.metrics[1:]),
    eval_episodes=40,
    budget=Budget(updates=200),
    description="Two-layer QG in a strongly supercritical, drag-arrested setting (beta 5e-12 "
    "/m/s, bottom drag 1/day): the qg-nonlinear protocol (train 2000-2002, test 2003, 40 "
    "six-hour steps from 40 initializations, at most 200 gradient updates) on data where a "
    "nonlinear predictor beats the best linear one at 1-3 days.",
)

# v1, the headline: the same data and protocol with 1000 gradient updates (v0's 200 left EMFormer
# worse than the direct linear model at 1 day: 0.37 epochs). An update of EMFormer or the ResNet
# costs about 0.1 s on one CPU core, so a seed trains in a few minutes.
QG_TURBULENT_V1 = dataclasses.replace(
    QG_TURBULENT,
    version=1,
    budget=Budget(updates=1000),
    description="Two-layer QG in a strongly supercritical, drag-arrested setting (beta 5e-12 "
    "/m/s, bottom drag 1/day), train 2000-2002, held-out test year 2003: 40 six-hour steps from "
    "40 initializations, at most 1000 gradient updates (v0: 200). The nonlinear headline task: "
    "an iterated quadratic emulator beats the best linear forecaster at 1-3 days.",
)

# v2: v1 plus held-out validation data for learning curves: the year 2004 of an independent run
# of the same QG model (seed 1; its own 150-day spin-up), never scored. Training, test data and
# budget are v1's; the weather page runs it on a budget ladder (Budget.scaled: 1x .. 8x).
QG_TURBULENT_V2_KWARGS: dict[str, Any] = {
    **QG_TURBULENT_KWARGS,
    "val_period": ("2004-01-01", "2004-12-31T18"),
    "val_source_kwargs": {"seed": 1},
}
QG_TURBULENT_V2 = dataclasses.replace(
    QG_TURBULENT_V1,
    version=2,
    env_kwargs=QG_TURBULENT_V2_KWARGS,
    description="Two-layer QG in a strongly supercritical, drag-arrested setting (beta 5e-12 "
    "/m/s, bottom drag 1/day), train 2000-2002, held-out test year 2003: 40 six-hour steps from "
    "40 initializations, at most 1000 gradient updates. v2 adds validation data for learning "
    "curves (2004 of an independent run, seed 1; never scored).",
)

# The nonlinear sphere: forced-dissipative barotropic vorticity turbulence (T21 spectral
# transform, an unstable mid-latitude jet, stochastic ring stirring; icml26.envs.weather.barotropic)
# under the qg-turbulent v1 protocol.
BAROTROPIC = _task(
    "weather/barotropic-sphere",
    {"source": "barotropic"},
    (
        "z500_rmse_1d",
        "z500_rmse_3d",
        "z500_rmse_5d",
        "z500_acc_3d",
        "z500_acc_5d",
        "z500_rmse_10d",
        "u500_rmse_3d",
    ),
    eval_episodes=40,
    budget=Budget(updates=1000),
    description="Barotropic vorticity turbulence on the sphere (T21, 32 x 64 Gaussian grid; z, "
    "u, v at 500 hPa), train 2000-2002, held-out test year 2003: 40 six-hour steps from 40 "
    "initializations; at most 1000 gradient updates.",
)

# The long-range task: Lorenz-96 at F = 5, where the direct linear forecaster keeps skill to 10
# days (RMSE 0.73 of climatology's at 10 days on the held-out year) and the iterated quadratic
# emulator beats it at 1 day (0.915 [0.882, 0.949]): the two conditions under which a 10-day
# accuracy claim can be tested (docs/results/weather.md, settings probed). At F = 8 and on
# every QG and barotropic setting probed, one of them fails. Validation: 2004 of an
# independent run (seed 1).
LORENZ96_SLOW = _task(
    "weather/lorenz96-slow",
    {
        "source": "lorenz96",
        "source_kwargs": {"forcing": 5.0},
        "val_period": ("2004-01-01", "2004-12-31T18"),
        "val_source_kwargs": {"seed": 1},
    },
    (
        "lorenz96_x_rmse_1d",
        "lorenz96_x_rmse_3d",
        "lorenz96_x_rmse_5d",
        "lorenz96_x_rmse_10d",
        "lorenz96_x_acc_5d",
        "lorenz96_x_acc_10d",
    ),
    eval_episodes=40,
    budget=Budget(updates=1000),
    description="Lorenz-96 at F = 5 (K=40; 0.05 time units = 6 h), train 2000-2002, held-out "
    "test year 2003, validation 2004 of an independent run: 40 six-hour steps from 40 "
    "initializations, at most 1000 gradient updates. The long-range task: linear skill "
    "reaches past 10 days and a nonlinear emulator beats the best linear model.",
)

# ERA5 / WeatherBench 2: a user's data, so the task is built, not registered (its definition
# includes the path). The channels and leads of WeatherBench 2's headline scores.
ERA5_CHANNELS = ("z500", "t850", "q700", "t2m", "u10", "v10", "msl")
ERA5_HEADLINE = (
    "z500_rmse_1d",
    "z500_rmse_3d",
    "z500_rmse_5d",
    "z500_acc_3d",
    "z500_acc_5d",
    "z500_rmse_10d",
    "t850_rmse_3d",
    "t850_rmse_5d",
    "q700_rmse_3d",
    "t2m_rmse_3d",
    "u10_rmse_3d",
    "msl_rmse_3d",
)


def era5_task(
    path: str,
    train_period: tuple[str, str] = ("1979-01-01", "2015-12-31T18"),
    test_period: tuple[str, str] = ("2018-01-01", "2018-12-31T18"),
    val_period: tuple[str, str] | None = ("2016-01-01", "2016-12-31T18"),
    channels: tuple[str, ...] = ERA5_CHANNELS,
    headline: tuple[str, ...] | None = None,
    updates: int = 1000,
    eval_episodes: int = 40,
) -> Task:
    """The headline protocol (40 six-hour steps from ``eval_episodes`` initializations of the
    test period, at most ``updates`` gradient updates) on a user's ERA5 / WeatherBench 2 zarr
    store or netCDF file at ``path``, regridded to 5.625 deg (``source="era5"``). WeatherBench
    2's default split: train 1979-2015, validation 2016, test 2018 (2017 left out)."""
    env_kwargs: dict[str, Any] = {
        "source": "era5",
        "source_kwargs": {"path": str(path)},
        "channels": list(channels),
        "train_period": tuple(train_period),
        "test_period": tuple(test_period),
    }
    if val_period is not None:
        env_kwargs["val_period"] = tuple(val_period)
    keep = headline or tuple(m for m in ERA5_HEADLINE if _parse(m)[0] in channels)
    return _task(
        "weather/era5",
        env_kwargs,
        keep,
        eval_episodes=eval_episodes,
        budget=Budget(updates=updates),
        description=f"ERA5 / WeatherBench 2 data at {path} (5.625 deg; {' '.join(channels)}), "
        f"train {train_period[0]}..{train_period[1]}, test {test_period[0]}..{test_period[1]}: "
        f"40 six-hour steps from {eval_episodes} initializations; at most {updates} gradient "
        "updates.",
    )


TASKS = [
    SPHERE,
    SPHERE_QUICK,
    LORENZ96,
    QG,
    QG_NONLINEAR,
    QG_TURBULENT,
    QG_TURBULENT_V1,
    QG_TURBULENT_V2,
    BAROTROPIC,
    LORENZ96_SLOW,
]

_BASELINES: dict[str, dict[str, Any]] = {
    "weather-persistence": {},
    "weather-climatology": {},
    "weather-damped-persistence": {},
    "weather-ridge": {},
}
SUITES = {
    "smoke": [
        SuiteEntry(
            "weather/sphere-quick",
            {**_BASELINES, "emformer": {"updates": 80, "finetune_updates": 10, "progress": False}},
            seeds=(0, 1),
        ),
    ],
    "full": [
        SuiteEntry("weather/sphere-10day", {**_BASELINES, "weather-resnet": {}, "emformer": {}}),
        SuiteEntry("weather/lorenz96-10day", {**_BASELINES, "weather-resnet": {}, "emformer": {}}),
        SuiteEntry("weather/qg-10day", {**_BASELINES, "weather-resnet": {}, "emformer": {}}),
        SuiteEntry(
            "weather/qg-nonlinear",
            {
                **_BASELINES,
                "weather-resnet": {"updates": 200},
                "emformer": {"updates": 161, "finetune_updates": 13},
            },
        ),
        SuiteEntry(
            "weather/qg-turbulent",
            {
                **_BASELINES,
                "weather-linear-direct": {},
                "weather-quadratic-iterated": {},
                "weather-resnet": {"updates": 1000},
                "emformer": {"updates": 802, "finetune_updates": 66},
            },
        ),
    ],
}


DIAG_DAYS = (1, 2, 3, 5, 7, 10)


def _r(x: np.ndarray) -> Any:
    """Nested lists rounded to 6 significant digits, NaN as None (JSON)."""
    flat = [None if not math.isfinite(v) else float(f"{v:.6g}") for v in x.reshape(-1).tolist()]
    return np.array(flat, dtype=object).reshape(x.shape).tolist()


def diagnostics(
    forecasts: np.ndarray,
    truths: np.ndarray,
    valid: np.ndarray,
    climatology: Any,
    latitude: np.ndarray,
    channels: Any,
    days: tuple[int, ...] = DIAG_DAYS,
) -> dict[str, Any]:
    """Per-initialization scores and zonal spectra at whole-day leads ``days`` (those reached).

    ``per_init`` maps ``mse`` and ``acc`` to lists indexed ``[init][day][channel]`` (the
    WeatherBench 2 latitude-weighted spatial MSE and uncentred ACC of one initialization; an
    undefined ACC, as for climatology, is ``None``): the time-mean of ``mse`` is the squared RMSE
    and the mean of ``acc`` the ACC. ``spectra`` maps ``forecast`` and ``truth`` to
    ``[day][channel][k]``: the zonal energy spectrum (:func:`zonal_energy_spectrum`) averaged
    over initializations with latitude weights."""
    from icml26.envs.weather.metrics import latitude_weights_array
    from icml26.envs.weather.probabilistic import zonal_energy_spectrum

    lead = forecasts.shape[1]
    days = tuple(d for d in days if 4 * d <= lead)
    li = np.array([4 * d - 1 for d in days], dtype=int)
    f = forecasts[:, li].astype(np.float64)
    o = truths[:, li].astype(np.float64)
    c = np.asarray(climatology.at(valid[:, li]), dtype=np.float64)
    w = latitude_weights_array(latitude)[:, None]

    def wmean(x: np.ndarray) -> np.ndarray:
        return (x * w).mean(axis=(-2, -1))

    mse = wmean((f - o) ** 2)
    fa, oa = f - c, o - c
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = wmean(fa * oa) / np.sqrt(wmean(fa * fa) * wmean(oa * oa))
    wl = latitude_weights_array(latitude)
    wl = wl / wl.sum()

    def spec(x: np.ndarray) -> np.ndarray:  # (B, D, C, lat, lon) -> (D, C, K)
        return np.einsum("bdcjk,j->dck", zonal_energy_spectrum(x), wl) / x.shape[0]

    return {
        "diag_days": list(days),
        "channels": list(channels),
        "per_init": {"mse": _r(mse), "acc": _r(acc)},
        "spectra": {"forecast": _r(spec(f)), "truth": _r(spec(o))},
    }


def _give_validation(agent: Any, u: Any) -> None:
    """Hand the env's held-out validation data to an agent that draws validation curves."""
    give = getattr(agent, "set_validation", None)
    if callable(give) and getattr(u, "val_period", None) is not None:
        give(u.dataset("val"))


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Learn on the training period, forecast open-loop from ``task.eval_episodes`` evenly spaced
    initializations of the test period (through the env), and score every forecast."""
    env = gym.make(task.env_id, **task.env_kwargs)
    u: Any = env.unwrapped  # WeatherRolloutEnv: dataset, lead_steps, channels, climatology, ...
    bind_agent(agent, env)
    _give_validation(agent, u)
    learn_stats = train_phase(task, agent, seed, env_or_dataset=u.dataset("train"))
    try:
        return evaluate(task, agent, seed, env, learn_stats)
    finally:
        env.close()


def run_trials_jointly(task: Task, agents: list[Any], seeds: list[int]) -> list[TrialOutcome]:
    """``run_trial`` for several seeds of one learned-forecaster configuration at once: the
    networks train side by side (:func:`icml26.agents.weather.neural.fit_jointly`, equal to
    training them one at a time up to float rounding), then each is scored as ``run_trial``
    scores it. Returns one outcome per seed, in order."""
    from icml26.agents.weather.neural import fit_jointly

    if len(agents) != len(seeds):
        raise ValueError(f"run_trials_jointly: {len(agents)} agents for {len(seeds)} seeds")
    env = gym.make(task.env_id, **task.env_kwargs)
    u: Any = env.unwrapped
    val = u.dataset("val") if getattr(u, "val_period", None) is not None else None
    for agent, seed in zip(agents, seeds, strict=True):
        bind_agent(agent, env)
        agent.reset(seed)
        agent.set_validation(val)
    stats = fit_jointly(agents, u.dataset("train"), task.budget)
    try:
        return [
            evaluate(task, a, s, env, st) for a, s, st in zip(agents, seeds, stats, strict=True)
        ]
    finally:
        env.close()


def _episodes(agent: Any, env: Any, seed: int, inits: np.ndarray) -> Iterator[Any]:
    """One open-loop episode per initialization through the env. A weather forecaster's
    ``rollout`` (which equals its act loop) forecasts every initialization in one batch from
    the contexts the env shows at reset; the env then receives those forecasts step by step
    and checks, at each step, that the context it shows is the one the batch was fed."""
    plan = getattr(agent, "rollout", None)
    if not callable(plan):
        for i, t0 in enumerate(inits):
            yield rollout(agent, env, derive_seed(seed, "eval", i), {"init_time": str(t0)})
        return
    starts = [env.reset(options={"init_time": str(t0)})[0] for t0 in inits]
    ctx = np.stack([np.asarray(o["state"], dtype=np.float32) for o in starts])
    forecasts = np.asarray(plan(ctx, inits, env.unwrapped.lead_steps), dtype=np.float32)
    for i, t0 in enumerate(inits):
        replay = _Replay(forecasts[i], ctx[i])
        yield rollout(replay, env, derive_seed(seed, "eval", i), {"init_time": str(t0)})


class _Replay:
    """Acts the forecasts of one batched rollout, checking each observation against them."""

    def __init__(self, forecast: np.ndarray, context: np.ndarray) -> None:
        self.forecast, self.context = forecast, context

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Any = None) -> np.ndarray:
        k = int(np.asarray(observation["lead_step"]))
        seen = np.asarray(observation["state"])
        h = self.context.shape[0]
        want = np.concatenate([self.context, self.forecast[:k]])[-h:]
        if not np.array_equal(seen, want):
            raise RuntimeError(
                f"weather run_trial: the env's context at lead step {k} is not the one the "
                "batched rollout was fed"
            )
        return self.forecast[k]


def evaluate(
    task: Task, agent: Any, seed: int, env: Any, learn_stats: dict[str, Any] | None = None
) -> TrialOutcome:
    """Forecast and score a trained agent (the second half of :func:`run_trial`)."""
    from icml26.envs.weather.metrics import ForecastScorer

    u: Any = env.unwrapped
    inits = u.evaluation_init_times(task.eval_episodes)
    n, lead = inits.size, u.lead_steps
    shape = (n, lead, len(u.channels), u.latitude.size, u.longitude.size)
    forecasts = np.empty(shape, dtype=np.float32)
    truths = np.empty(shape, dtype=np.float32)
    returns = []
    for i, ep in enumerate(_episodes(agent, env, seed, inits)):
        forecasts[i], truths[i] = ep.info["forecast"], ep.info["truth"]
        returns.append(ep.total_reward)

    quantiles = sorted(
        {q for m in task.metrics if m.name != "return" and (q := _parse(m.name)[2]) is not None}
    ) or [0.95]
    scorer = ForecastScorer(
        u.channels, u.latitude, lead, u.climatology(), u.event_thresholds(quantiles)
    )
    valid = inits[:, None] + np.timedelta64(6, "h") * np.arange(1, lead + 1)[None, :]
    scorer.update(forecasts, truths, valid)
    res = scorer.result()

    metrics: dict[str, float] = {"return": float(np.mean(returns))}
    undefined = []
    for m in task.metrics:
        if m.name == "return":
            continue
        channel, score, q, days = _parse(m.name)
        sel: dict[str, Any] = {
            "channel": channel,
            "prediction_timedelta": np.timedelta64(days * 24, "h"),
        }
        if q is not None:
            sel["quantile"] = q
        value = float(res[score].sel(sel))
        if not math.isfinite(value):
            undefined.append(m.name)
            value = 0.0
        metrics[m.name] = value
    curves = {
        s: {c: [round(float(v), 6) for v in res[s].sel(channel=c).values] for c in u.channels}
        for s in ("rmse", "acc")
        if s in res
    }
    extra: dict[str, Any] = {
        "curves": curves,
        "init_times": [str(t) for t in inits],
        **diagnostics(forecasts, truths, valid, u.climatology(), u.latitude, u.channels),
    }
    extra["divergence"] = divergence(extra["per_init"]["mse"], forecasts, truths, valid, u)
    if undefined:
        extra["undefined_reported_as_0"] = undefined
    if learn_stats:
        extra["learn"] = {k: v for k, v in learn_stats.items() if k != "validation"}
        if "validation" in learn_stats:
            extra["validation_curve"] = learn_stats["validation"]
    return TrialOutcome(metrics=metrics, scores=returns, extra=extra)


DIVERGENCE_FACTOR = 5.0  # a forecast whose RMSE exceeds 5x climatology's has left the attractor


def divergence(
    per_init_mse: Any, forecasts: np.ndarray, truths: np.ndarray, valid: np.ndarray, u: Any
) -> dict[str, Any]:
    """Which forecasts diverged, and when: per initialization, the first of the diagnostic days
    at which some channel's latitude-weighted RMSE exceeds :data:`DIVERGENCE_FACTOR` times
    climatology's RMSE at that lead (the mean over the initializations), else ``None``. Such
    rollouts are counted, not averaged into an RMSE (an unstable network's 10-day RMSE is
    dominated by them)."""
    from icml26.envs.weather.metrics import latitude_weights_array

    days = [d for d in DIAG_DAYS if 4 * d <= forecasts.shape[1]]
    li = np.array([4 * d - 1 for d in days], dtype=int)
    o = truths[:, li].astype(np.float64)
    c = np.asarray(u.climatology().at(valid[:, li]), dtype=np.float64)
    w = latitude_weights_array(u.latitude)[:, None]
    clim_mse = (((o - c) ** 2) * w).mean(axis=(-2, -1)).mean(axis=0)  # (day, channel)
    mse = np.array([[[np.inf if v is None else v for v in ch] for ch in d] for d in per_init_mse])
    over = mse > DIVERGENCE_FACTOR**2 * clim_mse[None]  # (init, day, channel)
    first = [
        next((days[j] for j in range(len(days)) if over[i, j].any()), None) for i in range(len(mse))
    ]
    return {
        "factor": DIVERGENCE_FACTOR,
        "days": days,
        "first_day": first,
        "count": int(sum(f is not None for f in first)),
    }
