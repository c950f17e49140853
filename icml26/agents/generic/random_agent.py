"""A seeded uniform-random policy over any Gymnasium action space."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym


class RandomAgent:
    """Samples ``action_space`` uniformly; ``reset(seed)`` makes the stream reproducible."""

    version = "1"

    def __init__(self, action_space: gym.Space[Any] | None = None) -> None:
        self.action_space = action_space
        self._seed: int | None = None

    def bind(self, observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self.action_space = action_space
        self.action_space.seed(self._seed)

    def reset(self, seed: int | None = None) -> None:
        self._seed = seed
        if self.action_space is not None and seed is not None:
            self.action_space.seed(seed)

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        if self.action_space is None:
            raise RuntimeError("RandomAgent: call bind(observation_space, action_space) first")
        return self.action_space.sample()
