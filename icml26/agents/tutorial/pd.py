"""A proportional-derivative controller for ``icml26/PointReach-v0``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


class PDController:
    """``a = clip(kp (g - p) - kd v, -1, 1)`` from the observation ``[p, v, g - p]``."""

    version = "1"

    def __init__(self, kp: float = 2.0, kd: float = 1.5) -> None:
        self.kp, self.kd = kp, kd

    def reset(self, seed: int | None = None) -> None:
        pass  # deterministic and stateless

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> np.ndarray:
        obs = np.asarray(observation, dtype=np.float64)
        return np.clip(self.kp * obs[4:6] - self.kd * obs[2:4], -1.0, 1.0).astype(np.float32)
