"""Generic agent registrations (usable on any Gymnasium task)."""

from __future__ import annotations

from typing import Any

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "random",
        "entry_point": "icml26.agents.generic.random_agent:RandomAgent",
        "family": "any",
        "description": "Uniform random actions from the env's action space (seeded).",
    },
    {
        "name": "sb3-ppo",
        "entry_point": "icml26.agents.generic.sb3:SB3Agent",
        "family": "any",
        "kwargs": {"algo": "PPO"},
        "description": "Stable-Baselines3 PPO (MlpPolicy) trained for the task's env-step budget.",
    },
    {
        "name": "sb3-sac",
        "entry_point": "icml26.agents.generic.sb3:SB3Agent",
        "family": "any",
        "kwargs": {"algo": "SAC"},
        "description": "Stable-Baselines3 SAC (continuous actions) trained for the env-step budget.",
    },
]
