"""Gymnasium registration records of the tutorial family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/PointReach-v0",
        "entry_point": "icml26.envs.tutorial.point_reach:PointReachEnv",
        "max_episode_steps": 200,
        "doc": "Tutorial: drive a 2-D point mass to a goal (continuous force control).",
    },
]
