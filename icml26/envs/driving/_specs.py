"""Gymnasium registration records of the driving family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/ScenePilot-v0",
        "entry_point": "icml26.envs.driving.env:ScenePilotEnv",
        "vector_entry_point": "icml26.envs.driving.env:make_vector_env",
        "max_episode_steps": 300,
        "doc": "ScenePilot adversarial driving: the agent is the adversary in 8 SafeBench scenarios (risk reward, sigma in info).",
        "test_kwargs": {"scenario": 1},
    },
    {
        "id": "icml26/ScenePilotAV-v0",
        "entry_point": "icml26.envs.driving.env:ScenePilotAVEnv",
        "max_episode_steps": 300,
        "doc": "ScenePilot adversarial fine-tuning: the agent drives the ego car against an adversary policy.",
        "test_kwargs": {"scenario": 5, "base_planner": "idm"},
    },
]
