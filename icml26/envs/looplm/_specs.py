"""Gymnasium registration records of the looplm family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/LoopReasoning-v0",
        "entry_point": "icml26.envs.looplm.env:LoopReasoningEnv",
        "doc": "One-step verifiable reasoning problems (reversed-digit arithmetic, parity, counting, "
        "word problems) for looped LMs (RLTT).",
    },
    {
        "id": "icml26/ReasoningGym-v0",
        "entry_point": "icml26.envs.looplm.reasoning_gym_env:ReasoningGymEnv",
        "doc": "Any reasoning-gym task as a one-step text env, for a real pretrained LM (extra: looplm).",
        "test_kwargs": {"name": "basic_arithmetic", "size": 40},
    },
]
