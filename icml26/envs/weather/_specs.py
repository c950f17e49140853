"""Gymnasium registration records of the weather family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/WeatherRollout-v0",
        "entry_point": "icml26.envs.weather.env:WeatherRolloutEnv",
        "doc": "Open-loop 10-day weather rollout (6-h steps) on WeatherBench 2 data: synthetic "
        "sphere, Lorenz-96, QG or ERA5 (EMFormer).",
        # Cheap settings for the conformance checks: a few weeks of Lorenz-96, 8-step episodes.
        "test_kwargs": {
            "source": "lorenz96",
            "train_period": ("2000-01-01", "2000-01-31T18"),
            "test_period": ("2000-02-01", "2000-02-29T18"),
            "lead_steps": 8,
        },
    },
]
