"""ScenePilot's versions as configurations of one engine (MetaDrive-style defaults, merged strictly).

Every ScenePilot id is :class:`~icml26.envs.driving.env.ScenePilotEnv` with the keyword arguments
of its registration: :data:`DEFAULTS` updated by the version's diff (:data:`VERSIONS`). A user's
keyword arguments update the registered ones; an unknown key is an error that lists the known
ones. Adding a version is one more diff here and its registration in ``_specs.py``. Plain data:
this module imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULTS", "VERSIONS", "SIGMAS", "PHI_MODELS", "merge", "env_name"]

DEFAULTS: dict[str, Any] = dict(
    # ===== Version =====
    version="v0",  # the registered diff these values start from; names the env in errors
    role="adversary",  # the car the agent drives: "adversary" (ScenePilot) or "ego" (ScenePilotAV)
    # ===== Scenes =====
    scenario=1,  # 1..8, a list of them, or "all" (a reset draws one uniformly)
    scenes="safebench",  # scene tuning (scenarios.SCENES): "safebench" or "retuned" (v2's 1-4)
    randomize=False,  # draw spawn offsets, speeds, trigger distances per episode (realism)
    traffic_lights=False,  # lights in scenarios 5 and 7, obeyed by the planners (realism)
    ego="idm",  # role "adversary": the ego planner ("idm", "cautious", "human") or a policy
    action="speed",  # role "adversary": "speed" (1-D target speed) or "acc_steer" (2-D)
    # ===== Reward, sigma and risk =====
    reward="released",  # the adversary's reward (rewards.REWARDS): "released", "collision", ...
    collision_bonus=10.0,  # reward "collision": paid for a collision in the boundary band
    sigma="released",  # the sigma rule (SIGMAS): "released", "rss" or "rss-crossing"
    sigma_names={},  # extra names of sigma rules this version accepts (name -> rule)
    feasibility=None,  # sigma's constants: a dict of overrides or a FeasibilityParams
    feasibility_threshold=0.0,  # k: the band's gate, info["cost"] and feasible_ratio
    phi="online",  # risk predictor: "online", "ttc", "frozen:<path>" or a path, a predictor, a dict
    phi_model="td",  # "td" (the release's TD(0) av_safe) or "horizon" (collision within 2 s)
    band=False,  # v1 bookkeeping in info / episode_metrics (band, lights, drawn parameters)
    # ===== Role "ego" (the AV ids): the agent drives the ego =====
    adversary="scripted",  # "scripted", "random", "idle", a saved policy path or a policy
    adversary_action="speed",  # the adversary's action: "speed" or "acc_steer"
    base_planner=None,  # None (direct control) or a planner the agent's action is added to
    collision_penalty=1.0,  # SafeBench's ego reward: -penalty per collision
    red_light_penalty=1.0,  # minus this per red-light violation (lights on)
    # ===== Simulator =====
    backend="kinematic",  # "kinematic", "metadrive" or "carla"
    backend_kwargs=None,  # the backend's own arguments (host, port, ...)
    max_steps=300,  # steps per episode (0.1 s each)
    render_mode=None,  # None or "rgb_array"
)

_V1 = dict(version="v1", reward="collision", sigma="rss", phi_model="horizon", band=True,
           randomize=True, traffic_lights=True)  # fmt: skip
VERSIONS: dict[str, dict[str, Any]] = {
    # initial version: SafeBench's 8 scenes, the release's reward (r = risk), sigma and Phi
    "v0": dict(version="v0"),
    # v0's defects, measured: reward without a collision term, same-lane sigma <= 0, a constant
    # Phi, episodes that barely vary
    "v1": _V1,
    # v1's defects, measured: crossing collisions stayed at sigma >= 0.35, scenarios 3 and 4 saturated
    "v2": {
        **_V1,
        "version": "v2",
        "sigma": "rss-crossing",
        "scenes": "retuned",
        "ego": "human",
        "sigma_names": {"rss": "rss-crossing", "rss-v1": "rss"},
    },  # fmt: skip
}
# the ego-driving ids (ScenePilotAV-vN): the same scenes, a SafeBench ego reward, the TTC risk
ROLE_EGO = {"role": "ego", "phi": "ttc", "reward": "released"}

SIGMAS: dict[str, dict[str, Any]] = {  # sigma rule -> FeasibilityParams arguments
    "released": {},  # the release's _get_phys_safe
    "rss": {"mode": "rss", "combine": "min"},  # v1: RSS distances, unsafe only if both axes are
    "rss-crossing": {"mode": "rss", "combine": "min", "crossing": "conflict", "recover": False},
}
PHI_MODELS = ("td", "horizon")


def env_name(config: Mapping[str, Any]) -> str:
    """``ScenePilot-v1`` / ``ScenePilotAV-v1``: how the env names itself in errors."""
    return f"ScenePilot{'AV' if config.get('role') == 'ego' else ''}-{config.get('version', 'v0')}"


def merge(kwargs: Mapping[str, Any], preset: str = "v0") -> dict[str, Any]:
    """DEFAULTS, updated by the diff of ``kwargs["version"]`` (else ``preset``), then ``kwargs``;
    an unknown key raises a TypeError naming the known ones."""
    version = kwargs.get("version", preset)
    if version not in VERSIONS:
        raise ValueError(f"ScenePilot: version must be one of {sorted(VERSIONS)}, got {version!r}")
    config = {**DEFAULTS, **VERSIONS[version]}
    if kwargs.get("role") == "ego":
        config.update(ROLE_EGO)
    unknown = sorted(set(kwargs) - set(config))
    if unknown:
        who = env_name({**config, **kwargs})
        raise TypeError(f"{who}: unknown arguments {unknown}; known: {sorted(config)}")
    config.update(kwargs)
    return config
