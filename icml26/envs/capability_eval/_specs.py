"""Gymnasium registration records of the capability_eval family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/CapabilityEval-v0",
        "entry_point": "icml26.envs.capability_eval.env:CapabilityEvalEnv",
        "doc": "The agent is the evaluator: test a hidden system over a task family, then certify a claim.",
        "test_kwargs": {"test_budget": 400, "max_steps": 20},
    },
]
