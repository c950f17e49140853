"""``icml26/ScenePilot-v2`` and ``icml26/ScenePilotAV-v2``: ScenePilot-v1 with a sigma that flags
crossing conflicts, scenarios 1-4 re-tuned so that they discriminate, and the ``human``
planner as the default ego. v0 and v1 are unchanged; v2 is v1's code with these settings.

Why (measured on v1, ``docs/results/driving.md``): v1's RSS sigma kept every collision of every
adversary in scenarios 5-7 at a pre-collision minimum sigma >= 0.35 (even 0.1 s before contact),
so the boundary-band share was 1.000 for every arm and the shield's gate never closed. Two causes:
the two-axes rule is evaluated in the ego's frame, where a crossing car keeps one axis "clear"
until contact, and the release's "recoverable gap" credit (``l = a t^2 / 2``) wiped out the
remaining gap of a car closing slowly on the other axis (an overlapping head-on car kept sigma
~0.6 at contact). v2's ``sigma="rss"`` scores crossing routes by RSS's rule for routes of
different geometry (:func:`~icml26.envs.driving.feasibility.conflict_slack`: the latest time the
ego can still start a brake or throttle escape from the conflict region, in seconds, clipped to
[-1, 1]) and drops the credit elsewhere. Scenario 3 (a lead car that braked while 35 m ahead)
never collided and scenario 4 (an oncoming car while passing) collided in ~0.95 of episodes for
every actor; v2 gives the lead car the 0-10 m/s speed range of the other scenarios and spawns it
closer, and spreads the oncoming car's spawn distance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from icml26.envs.driving.constants import TABLES
from icml26.envs.driving.env_v1 import (
    ScenePilotAVV1Env,
    ScenePilotV1Env,
    ScenePilotV1VectorEnv,
    make_world_v1,
    scripted_adversary_v1,
    sigma_params,
    with_overrides,
)
from icml26.envs.driving.feasibility import FeasibilityParams
from icml26.envs.driving.realism import RANGES
from icml26.envs.driving.sim import KinematicWorld

__all__ = [
    "ScenePilotV2Env",
    "ScenePilotAVV2Env",
    "ScenePilotV2VectorEnv",
    "make_vector_env_v2",
    "make_world_v2",
    "sigma_params_v2",
    "scripted_adversary_v2",
    "reckless_adversary_v2",
    "SIGMAS_V2",
    "RANGES_V2",
    "ADV_TABLES_V2",
    "DEFAULT_EGO",
]

SIGMAS_V2 = ("rss", "rss-v1", "released")
DEFAULT_EGO = "human"
# v2's randomized ranges: v1's, except scenario 1 (the walker starts 0-12 m further from the road:
# a random walker crossed long before the ego came, 0 collisions in v1), scenario 3 (the lead car 8-20 m ahead, v1: 27-43 m, at
# 0-2 m/s, the ego arriving at 7-10 m/s: SafeBench's ego catching up with a slow leader) and
# scenario 4 (the oncoming car's spawn spread +- 20 m around 12 m further away, v1: +- 8 m)
RANGES_V2: dict[int, dict[str, Any]] = {
    **RANGES,
    1: {**RANGES[1], "adv": 6.0, "adv_bias": -6.0},
    3: {
        "shift": 6.0,
        "shift_bias": -21.0,
        "adv": 0.0,
        "other": 1.5,
        "other_speed": 0.15,
        "ego_speed": (7.0, 10.0),
        "adv_speed": (0.0, 2.0),
    },
    4: {"shift": 0.0, "adv": 20.0, "adv_bias": -12.0, "other": 4.0, "other_speed": 0.0},
}


def _adv_tables_v2() -> dict[str, np.ndarray]:
    base, scale, after = (TABLES[k].copy() for k in ("adv_base", "adv_scale", "lead_after"))
    base[3], scale[3], after[3] = 5.0, 5.0, 0.0  # v1: 0-4 m/s after a 12 m/s first 5 m
    return {"adv_base": base, "adv_scale": scale, "lead_after": after}


ADV_TABLES_V2 = _adv_tables_v2()
# scripted actors that v2 triggers by distance (m, x the drawn trigger scale) where v1 started them
# at once: scenario 2's cyclist (it crossed long before the ego arrived: 0 collisions in v1)
TRIGGER_V2 = {2: 35.0}
RECKLESS_AIM = 2.0  # m: the 1-D reckless actor aims at the point this far behind the ego's centre
_S3_CRUISE, _S3_TRIGGER = (
    0.6,
    18.0,
)  # scripted lead of scenario 3: 8 m/s, brake check at 18 m (x drawn scale)


def sigma_params_v2(sigma: str, feasibility: Any = None) -> FeasibilityParams:
    """``"rss"``: RSS distances, the two-axes rule without the recoverable-gap credit, and RSS's
    crossing-route rule; ``"rss-v1"``: v1's ``"rss"``; ``"released"``: the release's."""
    if sigma not in SIGMAS_V2:
        raise ValueError(f"ScenePilot-v2: sigma must be one of {SIGMAS_V2}, got {sigma!r}")
    if sigma == "rss":
        base = FeasibilityParams(mode="rss", combine="min", crossing="conflict", recover=False)
        return with_overrides(base, feasibility)
    return sigma_params("rss" if sigma == "rss-v1" else "released", feasibility)


def _tune_world_v2(world: KinematicWorld) -> None:
    world.ranges = RANGES_V2
    world.adv_tables = ADV_TABLES_V2


def make_world_v2(
    n: int,
    scenarios: Any = "all",
    ego: str = DEFAULT_EGO,
    sigma: str = "rss",
    feasibility: Any = None,
    **kwargs: Any,
) -> KinematicWorld:
    """The simulator of ScenePilot-v2: :func:`make_world_v1` (its other keyword arguments: ``action``,
    ``max_steps``, ``randomize``, ``traffic_lights``, ``backend``, ``backend_kwargs``) with v2's
    sigma, scenarios and default ego."""
    w = make_world_v1(
        n, scenarios, ego=ego, feasibility=sigma_params_v2(sigma, feasibility), **kwargs
    )
    _tune_world_v2(w)
    return w


def scripted_adversary_v2(
    obs: np.ndarray,
    scenario: int,
    triggered: bool,
    params: Mapping[str, float],
    action_dim: int = 1,
) -> tuple[np.ndarray, bool]:
    """SafeBench's scripted behaviour in v2: as :func:`scripted_adversary_v1`, except scenario 3,
    where the lead car cruises at 8 m/s (x the drawn speed scale) and brakes to a stop once the
    ego is within 18 m (x the drawn trigger scale): SafeBench's sudden deceleration of the leader."""
    if int(scenario) in TRIGGER_V2 and not triggered:
        o = np.asarray(obs, dtype=np.float64).reshape(-1)
        d = float(np.hypot(o[9] - o[0], o[10] - o[1]))
        if d >= TRIGGER_V2[int(scenario)] * float(params.get("trigger_scale", 1.0)):
            return _speed_action(0.0, float(np.hypot(o[14], o[15])), 5.0, 5.0, action_dim), False
        triggered = True
    if int(scenario) != 3:
        return scripted_adversary_v1(obs, scenario, triggered, params, action_dim)
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    d = float(np.hypot(o[9] - o[0], o[10] - o[1]))
    triggered = triggered or d < _S3_TRIGGER * float(params.get("trigger_scale", 1.0))
    base, scale = ADV_TABLES_V2["adv_base"][3], ADV_TABLES_V2["adv_scale"][3]
    target = (
        0.0
        if triggered
        else (base + scale * _S3_CRUISE) * float(params.get("adv_speed_scale", 1.0))
    )
    if action_dim == 1:
        return np.array([np.clip((target - base) / scale, -1.0, 1.0)], np.float32), triggered
    speed = float(np.hypot(o[14], o[15]))
    return np.array([np.clip((target - speed) / 0.3, -1.0, 1.0), 0.0], np.float32), triggered


class _V2:
    """What v2 changes in a v1 class: the sigma names, the world's scenarios, the labels."""

    _sigma_params = staticmethod(sigma_params_v2)
    _tune_world = staticmethod(_tune_world_v2)


class ScenePilotV2Env(_V2, ScenePilotV1Env):
    """
    ## Description
    ScenePilot-v2: ScenePilot-v1 (the agent is the adversary of one of the 8 SafeBench pre-crash
    scenarios; reward for avoidable collisions; collision-horizon Phi; randomized scenes; traffic
    lights) with three changes, each for a measured reason (module docstring): sigma flags
    crossing conflicts (RSS's rule for routes of different geometry), scenarios 1-4
    discriminate, and the default ego is ``"human"``.

    ## Action Space
    As v1: ``Box(-1, 1, (1,))`` target speed (or ``action="acc_steer"``: ``Box(-1, 1, (2,))``).

    ## Observation Space
    As v1: ``Box((27,))``, 9 numbers per actor (ego, adversary, other).

    ## Rewards
    As v1 (``reward="collision"``: telescoping risk shaping plus ``collision_bonus`` for a
    collision whose minimum sigma up to 1 s before it was >= k; ``"released"``: ``r_t = risk_t``),
    with v2's sigma. ``sigma="rss"`` (default): for cars on crossing routes (heading difference
    between 30 and 150 degrees) ``sigma = clip(T / 1 s, -1, 1)``, T the latest time at which the
    ego can still start an escape (full brake to stop short of the conflict region or to enter it
    after the other car has left; full throttle to leave it before the other car arrives; the
    other car's arrival from its current speed and acceleration); otherwise v1's RSS two-axes rule
    without the release's recoverable-gap credit. ``"rss-v1"``: v1's sigma; ``"released"``: v0's.

    ## Starting State
    As v1, except: scenario 1's walker starts 0-12 m further from the road; scenario 2's scripted
    cyclist starts at 35 m (x the drawn trigger scale) instead of at once; scenario 3's lead car
    starts 10-26 m ahead and drives at 0-10 m/s (1-D action); scenario 4's oncoming car 50 +- 20 m
    (after a 0-20 m shift back) from its v1 spawn.

    ## Episode End
    As v1 (``episode_metrics`` with ``min_sigma_pre_collision`` and ``avoidable_collision``).

    ## Arguments
    v1's, with ``ego="human"`` and ``sigma="rss"`` (v2's) as defaults.

    ## Version History
    * v2: crossing-route sigma, no recoverable-gap credit, scenarios 1-4 re-tuned, ego "human".
    * v1: collision reward, RSS sigma, collision-horizon Phi, randomized scenarios, traffic lights.
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/ScenePilot-v2", scenario=5)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
    >>> print(obs.shape, info["risk_source"], info["red_light"], terminated)
    (27,) ttc 2 False
    """

    _name = "ScenePilot-v2"

    def __init__(self, scenario: Any = 1, ego: Any = DEFAULT_EGO, **kwargs: Any) -> None:
        super().__init__(scenario=scenario, ego=ego, **kwargs)


class ScenePilotAVV2Env(_V2, ScenePilotAVV1Env):
    """
    ## Description
    ScenePilotAV-v2: the agent drives the ego car (as ``ScenePilotAV-v1``) in the v2 scenes, with
    v2's sigma in ``info``; the scripted adversary is :func:`scripted_adversary_v2`.

    ## Action Space / Observation Space / Rewards
    As ``ScenePilotAV-v1``: ``Box(-1, 1, (2,))`` [acc, steer] (a residual over ``base_planner``),
    the 12-number ego observation, SafeBench's ego reward minus the red-light penalty.

    ## Starting State / Episode End
    As ``ScenePilot-v2``.

    ## Arguments
    ``ScenePilotAV-v1``'s (``sigma`` takes v2's names).

    ## Version History
    * v2: v2 scenes and sigma.
    * v1: v1 scenes, red-light penalty.
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/ScenePilotAV-v2", scenario=5, base_planner="human")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros(2, dtype=np.float32))
    >>> print(obs.shape, terminated)
    (12,) False
    """

    _name = "ScenePilotAV-v2"

    def _adversary_action(self) -> np.ndarray:
        if isinstance(self._adversary, str) and self._adversary == "scripted":
            a, self._triggered = scripted_adversary_v2(
                self.world.observation()[0],
                int(self.world.scn[0]),
                self._triggered,
                self.scenario_params(),
                self._adv_dim,
            )
            return np.clip(np.asarray(a, dtype=np.float64), -1.0, 1.0)
        return super()._adversary_action()


class ScenePilotV2VectorEnv(_V2, ScenePilotV1VectorEnv):
    """N ``ScenePilot-v2`` scenes in one batched NumPy call (``gym.make_vec("icml26/ScenePilot-v2", num_envs=N)``);
    as :class:`~icml26.envs.driving.env_v1.ScenePilotV1VectorEnv` with v2's sigma, scenes and default ego."""

    _label = "ScenePilot-v2 vector env"

    def __init__(
        self, num_envs: int = 1, scenario: Any = "all", ego: str = DEFAULT_EGO, **kwargs: Any
    ) -> None:
        super().__init__(num_envs=num_envs, scenario=scenario, ego=ego, **kwargs)


def make_vector_env_v2(
    num_envs: int = 1, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, **kwargs: Any
) -> ScenePilotV2VectorEnv:
    """``gym.make_vec("icml26/ScenePilot-v2", num_envs=N)``: the native v2 vector env (NEXT_STEP autoreset)."""
    return ScenePilotV2VectorEnv(num_envs=num_envs, autoreset_mode=autoreset_mode, **kwargs)


def _speed_action(
    target: float, speed: float, base: float, scale: float, action_dim: int
) -> np.ndarray:
    if action_dim == 1:
        return np.array([np.clip((target - base) / scale, -1.0, 1.0)], np.float32)
    return np.array([np.clip((target - speed) / 0.3, -1.0, 1.0), 0.0], np.float32)


def reckless_adversary_v2(
    obs: np.ndarray,
    scenario: int,
    triggered: bool,
    params: Mapping[str, float] | None = None,
    action_dim: int = 1,
) -> tuple[np.ndarray, bool]:
    """A deliberately reckless adversary (the contrast arm of the boundary-band metric): it makes
    collisions the ego cannot avoid instead of ones it fails to avoid.

    Scenario 3: the lead car cruises at 7 m/s and brakes fully once the ego is within 11 m
    (centre to centre: a late brake check). Otherwise, with the 2-D action: it stands until the
    ego is within 40 m, then drives at full throttle, steering at where the ego will be in 0.5 s
    (ramming, head-on into the ego's lane in scenarios 4 and 6). With the 1-D action: it times its
    speed to reach the crossing of the two headings when the ego's centre is ``RECKLESS_AIM`` (2) m
    past it, i.e. to hit the ego's rear half (full speed when the headings do not cross ahead of
    both). On v2 its collisions are out of the boundary band where the ego is slow in the
    conflict region (scenario 7), not where the ego crosses at speed (5, 8): see the family notes. ``params`` is unused (same signature as the scripted ones).
    """
    del params
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    ex, ey, eyaw, evx, evy = o[0], o[1], o[2], o[5], o[6]
    ax_, ay_, ayaw, avx, avy = o[9], o[10], o[11], o[14], o[15]
    d = float(np.hypot(ax_ - ex, ay_ - ey))
    speed = float(np.hypot(avx, avy))
    base = float(ADV_TABLES_V2["adv_base"][int(scenario)])
    scale = float(ADV_TABLES_V2["adv_scale"][int(scenario)])
    if int(scenario) == 3:
        triggered = triggered or d < 11.0
        return _speed_action(0.0 if triggered else 7.0, speed, base, scale, action_dim), triggered
    if action_dim == 2:
        triggered = triggered or d < 40.0
        if not triggered:
            return np.array([-1.0, 0.0], np.float32), False
        tx, ty = ex + 0.5 * evx, ey + 0.5 * evy
        err = (np.arctan2(ty - ay_, tx - ax_) - ayaw + np.pi) % (2 * np.pi) - np.pi
        return np.array([1.0, float(np.clip(2.0 * err, -1.0, 1.0))], np.float32), True
    c, s = np.cos(ayaw - eyaw), np.sin(ayaw - eyaw)
    rx, ry = ax_ - ex, ay_ - ey
    dx = np.cos(eyaw) * rx + np.sin(eyaw) * ry
    dy = -np.sin(eyaw) * rx + np.cos(eyaw) * ry
    v_e = float(np.hypot(evx, evy))
    if abs(s) < 0.2:
        return _speed_action(base + scale, speed, base, scale, 1), True
    p_e, p_n = dx - dy * c / s, -dy / s
    if p_e <= 0.0 or p_n <= 0.0 or v_e < 0.5:
        return _speed_action(base + scale if p_n > 0.0 else 0.0, speed, base, scale, 1), True
    return _speed_action(p_n / ((p_e + RECKLESS_AIM) / v_e), speed, base, scale, 1), True
