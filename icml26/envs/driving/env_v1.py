"""ScenePilot-v1's names from before versions were configurations (:mod:`.versions`, :mod:`.env`)."""

from typing import Any

from icml26.envs.driving.env import ScenePilotV1VectorEnv, feasibility_params, world_of
from icml26.envs.driving.feasibility import FeasibilityParams
from icml26.envs.driving.rewards import RESPONSE_STEPS
from icml26.envs.driving.scenarios import scripted_adversary_v1

__all__ = ["ScenePilotV1VectorEnv", "make_world_v1", "scripted_adversary_v1", "sigma_params",
           "RESPONSE_STEPS"]  # fmt: skip


def sigma_params(sigma: str, feasibility: Any = None) -> FeasibilityParams:
    """v1's sigma rules: ``"rss"`` (RSS distances, unsafe only when both axes are), ``"released"``."""
    if sigma not in ("rss", "released"):
        raise ValueError(f"ScenePilot-v1: sigma must be one of ('rss', 'released'), got {sigma!r}")
    return feasibility_params(sigma, feasibility, "ScenePilot-v1")


def make_world_v1(n: int, scenarios: Any = "all", **kwargs: Any) -> Any:
    """The simulator of ScenePilot-v1 (``ego``, ``action``, ``sigma``, ``randomize``, ...)."""
    return world_of(n, scenarios, version="v1", **kwargs)
