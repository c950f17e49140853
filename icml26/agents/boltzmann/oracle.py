"""The exact sampler of a target with known log Z: the upper bound every metric is scored against."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from icml26.protocol import Budget, derive_seed

__all__ = ["ExactSampler"]


class ExactSampler:
    """``sample(n)`` draws exact target samples, ``log_prob(x) = -u(x) - log Z`` (so ESS = 1).

    Learns nothing and spends no energy evaluations; only for targets with ``sample`` and a
    known ``log_z`` (GMM-40, Many-Well-32, Funnel-10).
    """

    version = "1"

    def __init__(self) -> None:
        self.target: Any = None
        self.seed = 0
        self._draws = 0

    def reset(self, seed: int | None = None) -> None:
        self.seed, self._draws = int(seed or 0), 0

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> np.ndarray:
        n = int(np.asarray(observation["energies"]).shape[0])
        return self.sample(n)[0].astype(np.float32)

    def learn(self, env: Any, budget: Budget | None = None) -> dict[str, Any]:
        target = env.unwrapped.target
        if not getattr(target, "exact", False) or target.log_z is None:
            raise ValueError(
                f"boltzmann-oracle needs an exact target with known log Z; {target.name!r} is not"
            )
        self.target = target
        return {"energy_evals": 0}

    def sample(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if self.target is None:
            raise RuntimeError("ExactSampler: call learn(env) first")
        self._draws += 1
        x = self.target.sample(n, derive_seed(self.seed, "oracle", self._draws))
        return x.numpy(), self.log_prob(x.numpy())

    def log_prob(self, x: Any) -> np.ndarray:
        with torch.no_grad():
            u = self.target.energy(torch.as_tensor(np.asarray(x), dtype=torch.float64))
        return (-u - self.target.log_z).numpy()
