"""Gymnasium registration records of the minmax_vi family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/StochasticVI-v0",
        "entry_point": "icml26.envs.minmax_vi.env:StochasticVIEnv",
        "doc": "Stochastic VI / min-max oracle: query points, receive noisy operator samples (growing variance).",
        "test_kwargs": {"problem_kwargs": {"n": 3}, "oracle_budget": 200},
    },
    {
        "id": "icml26/StochasticVI-v1",
        "entry_point": "icml26.envs.minmax_vi.env:StochasticVIEnv",
        "kwargs": {"paired": True},
        "doc": "The StochasticVI oracle with same-sample pairs at two points (for variance-reduced methods).",
        "test_kwargs": {"problem_kwargs": {"n": 3}, "oracle_budget": 200},
    },
]
