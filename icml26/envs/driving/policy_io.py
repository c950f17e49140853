"""A saved ScenePilot adversary (``ScenePilotAgent.save``: two ReLU layers, a tanh mean head, the
observation scale) as a NumPy policy, for ``ScenePilotAV-vN(adversary="policy.npz")``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["NumpyTanhPolicy", "load_policy"]


class NumpyTanhPolicy:
    """Deterministic tanh-mean policy: ``a = tanh(W3 relu(W2 relu(W1 (obs / scale) + b1) + b2) + b3)``."""

    def __init__(self, params: list[np.ndarray], obs_scale: np.ndarray) -> None:
        if len(params) < 6:
            msg = f"NumpyTanhPolicy: expected at least 6 weight arrays, got {len(params)}"
            raise ValueError(msg)
        self.params, self.obs_scale = params, obs_scale

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> np.ndarray:
        w1, b1, w2, b2, w3, b3 = self.params[:6]
        x = np.asarray(observation, np.float32).reshape(-1) / self.obs_scale
        h = np.maximum(w1 @ x + b1, 0.0)
        h = np.maximum(w2 @ h + b2, 0.0)
        return np.tanh(w3 @ h + b3).astype(np.float32)


def load_policy(path: str | os.PathLike[str]) -> NumpyTanhPolicy:
    """Read a ``.npz`` written by ``ScenePilotAgent.save``; clear errors for missing or foreign files."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"adversary policy file {os.fspath(path)!r} does not exist")
    with np.load(path) as z:
        if "kind" not in z or str(z["kind"]) != "scenepilot-tanh-gaussian":
            raise ValueError(f"{os.fspath(path)!r} is not a policy saved by ScenePilotAgent.save")
        n = len([k for k in z.files if k.startswith("p")])
        params = [z[f"p{i}"] for i in range(n)]
        scale = z["obs_scale"]
    # actor parameter order: net.0 (w, b), net.2 (w, b), fc_mu (w, b), fc_std (w, b)
    return NumpyTanhPolicy(params[:6], scale)
