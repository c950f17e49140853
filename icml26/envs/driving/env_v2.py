"""ScenePilot-v2's names from before versions were configurations (:mod:`.versions`, :mod:`.env`)."""

from typing import Any

from icml26.envs.driving.env import ScenePilotV2VectorEnv, feasibility_params, world_of
from icml26.envs.driving.feasibility import FeasibilityParams
from icml26.envs.driving.scenarios import RANGES_V2, reckless_adversary_v2, scripted_adversary_v2
from icml26.envs.driving.versions import VERSIONS

__all__ = ["ScenePilotV2VectorEnv", "make_world_v2", "scripted_adversary_v2",
           "reckless_adversary_v2", "sigma_params_v2", "RANGES_V2"]  # fmt: skip


def sigma_params_v2(sigma: str, feasibility: Any = None) -> FeasibilityParams:
    """v2's sigma names: ``"rss"`` (the crossing rule), ``"rss-v1"`` (v1's), ``"released"``."""
    names = {**VERSIONS["v2"]["sigma_names"], "released": "released"}
    if sigma not in names:
        raise ValueError(f"ScenePilot-v2: sigma must be one of {sorted(names)}, got {sigma!r}")
    return feasibility_params(sigma, feasibility, "ScenePilot-v2", names)


def make_world_v2(n: int, scenarios: Any = "all", **kwargs: Any) -> Any:
    """The simulator of ScenePilot-v2 (``ego``, ``action``, ``sigma``, ``randomize``, ...)."""
    return world_of(n, scenarios, version="v2", **kwargs)
