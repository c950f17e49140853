"""Deliberately misbehaving agents for testing harnesses (the runner's failure isolation)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np


class CrashingAgent:
    """Raises ``RuntimeError`` on its first action."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        raise RuntimeError("CrashingAgent crashed on purpose")


class ProcessKillingAgent:
    """Kills its own process (``os._exit``) on its first action, like a segfault would."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        os._exit(13)


class SlowZeroAgent:
    """Acts with zeros after sleeping ``sleep_s`` at every reset (to interrupt runs midway)."""

    version = "1"

    def __init__(self, sleep_s: float = 0.3) -> None:
        self.sleep_s = sleep_s
        self._shape: tuple[int, ...] = (2,)

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self._shape = action_space.shape

    def reset(self, seed: int | None = None) -> None:
        time.sleep(self.sleep_s)

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        return np.zeros(self._shape, dtype=np.float32)
