"""Agent registrations of the weather family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

_P = "icml26.agents.weather"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "emformer",
        "entry_point": f"{_P}.neural:EMFormerForecaster",
        "description": "EMFormer at CPU scale: window transformer with merged 1/3/5 multi-scale conv, "
        "sinusoidal composite loss, accumulative context fine-tuning (the paper's method).",
    },
    {
        "name": "weather-persistence",
        "entry_point": f"{_P}.baselines:PersistenceForecaster",
        "description": "Persistence: every lead repeats the initial state.",
    },
    {
        "name": "weather-climatology",
        "entry_point": f"{_P}.baselines:ClimatologyForecaster",
        "description": "WeatherBench 2 climatology (day of year x hour, 61-day window) of the training data.",
    },
    {
        "name": "weather-damped-persistence",
        "entry_point": f"{_P}.baselines:DampedPersistenceForecaster",
        "description": "Damped anomaly persistence: clim + alpha^k (x0 - clim), alpha fitted per channel.",
    },
    {
        "name": "weather-ridge",
        "entry_point": f"{_P}.ridge:RidgePatchForecaster",
        "description": "Ridge regression on 5x5 local patches of anomalies, per latitude, iterated.",
    },
    {
        "name": "weather-linear-direct",
        "entry_point": f"{_P}.linear:DirectLinearForecaster",
        "description": "Direct linear forecast: per-lead ridge of the whole state on the last two "
        "states in EOF space (EOFs and penalty chosen per lead on held-out training data).",
    },
    {
        "name": "weather-quadratic-direct",
        "entry_point": f"{_P}.linear:DirectQuadraticForecaster",
        "description": "weather-linear-direct plus the pairwise products of the leading 16 PCs: "
        "a per-lead quadratic regression (a stable nonlinear forecaster on the same footing).",
    },
    {
        "name": "weather-quadratic-iterated",
        "entry_point": f"{_P}.linear:IteratedQuadraticForecaster",
        "description": "One-step quadratic regression of the leading 48 PCs' 6-hour increment "
        "(products of the leading 32), iterated: a nonlinear emulator of the QG tendency.",
    },
    {
        "name": "weather-resnet",
        "entry_point": f"{_P}.neural:ResNetForecaster",
        "description": "Small ResNet (periodic longitude) trained on one-step weighted MSE, iterated.",
    },
]
