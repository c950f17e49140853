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
    {
        "id": "icml26/ScenePilot-v1",
        "entry_point": "icml26.envs.driving.env_v1:ScenePilotV1Env",
        "vector_entry_point": "icml26.envs.driving.env_v1:make_vector_env_v1",
        "max_episode_steps": 300,
        "doc": "ScenePilot-v1: adversary rewarded for avoidable (boundary-band) collisions, RSS sigma, 2 s collision-horizon Phi, randomized scenes, traffic lights.",
        "test_kwargs": {"scenario": 5},
    },
    {
        "id": "icml26/ScenePilotAV-v1",
        "entry_point": "icml26.envs.driving.env_v1:ScenePilotAVV1Env",
        "max_episode_steps": 300,
        "doc": "ScenePilotAV-v1: the agent drives the ego in the v1 scenes (randomized, traffic lights) against an adversary policy.",
        "test_kwargs": {"scenario": 7, "base_planner": "idm"},
    },
    {
        "id": "icml26/ScenePilot-v2",
        "entry_point": "icml26.envs.driving.env_v2:ScenePilotV2Env",
        "vector_entry_point": "icml26.envs.driving.env_v2:make_vector_env_v2",
        "max_episode_steps": 300,
        "doc": "ScenePilot-v2: v1 with a sigma that flags crossing conflicts (RSS routes of different geometry), scenarios 1-4 re-tuned, human-like ego.",
        "test_kwargs": {"scenario": 5},
    },
    {
        "id": "icml26/ScenePilotAV-v2",
        "entry_point": "icml26.envs.driving.env_v2:ScenePilotAVV2Env",
        "max_episode_steps": 300,
        "doc": "ScenePilotAV-v2: the agent drives the ego in the v2 scenes against an adversary policy.",
        "test_kwargs": {"scenario": 7, "base_planner": "human"},
    },
]
