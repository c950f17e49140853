"""``icml26/ScenePilot-v1`` and ``icml26/ScenePilotAV-v1``: the v0 scenes with a reward whose optimum is
an avoidable collision, RSS feasibility, a collision-horizon Phi learned in batches, randomized
scenario parameters and traffic lights. v0 (:mod:`icml26.envs.driving.env`) is unchanged."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from icml26.envs.driving.constants import DT, TABLES
from icml26.envs.driving.env import (
    ScenePilotAVEnv,
    ScenePilotEnv,
    ScenePilotVectorEnv,
    _check_action,
    make_world,
    parse_scenarios,
)
from icml26.envs.driving.feasibility import FeasibilityParams
from icml26.envs.driving.realism import AMBER_S, PARAM_KEYS, light_state
from icml26.envs.driving.risk import HorizonPhiLearner, RiskPredictor
from icml26.envs.driving.scenarios import LAYOUTS
from icml26.envs.driving.sim import PLANNERS, KinematicWorld

__all__ = [
    "ScenePilotV1Env",
    "ScenePilotAVV1Env",
    "ScenePilotV1VectorEnv",
    "make_vector_env_v1",
    "make_world_v1",
    "make_phi_v1",
    "sigma_params",
    "with_overrides",
    "scripted_adversary_v1",
    "REWARDS",
    "SIGMAS",
    "RESPONSE_STEPS",
]

REWARDS = ("collision", "released")
SIGMAS = ("rss", "released")
RESPONSE_STEPS = (
    10  # 1 s: RSS's ego response time rho (CARLA's default); the pre-collision window ends here
)
DEFAULT_BONUS = 10.0
_LEARNER_KEYS = (
    "horizon_steps",
    "batch_size",
    "samples_per_update",
    "buffer_size",
    "min_updates",
    "max_updates",
)


def sigma_params(sigma: str, feasibility: Any = None) -> FeasibilityParams:
    """sigma="rss": full RSS distances, dangerous only when both axes are unsafe; "released": the release's."""
    if sigma not in SIGMAS:
        raise ValueError(f"ScenePilot-v1: sigma must be one of {SIGMAS}, got {sigma!r}")
    base = FeasibilityParams(mode="rss", combine="min") if sigma == "rss" else FeasibilityParams()
    return with_overrides(base, feasibility)


def with_overrides(base: FeasibilityParams, feasibility: Any = None) -> FeasibilityParams:
    """``base`` with a dict of constants replaced, or a FeasibilityParams instead of it."""
    if feasibility is None:
        return base
    if isinstance(feasibility, FeasibilityParams):
        return feasibility
    if isinstance(feasibility, Mapping):
        return dataclasses.replace(base, **dict(feasibility))
    raise TypeError(
        f"feasibility: expected None, a dict or FeasibilityParams, got {type(feasibility).__name__}"
    )


def make_phi_v1(phi: Any, n: int, seed: int = 0) -> HorizonPhiLearner | None:
    """``"online"`` (learned here, collision within 2 s), ``"ttc"``/None, ``"frozen:<path>"`` or a path
    (loaded, frozen), a :class:`RiskPredictor` (frozen ones are used as they are, trainable ones are
    trained here), a dict of :class:`HorizonPhiLearner` / RiskPredictor arguments, or a learner."""
    if phi is None or (isinstance(phi, str) and phi == "ttc"):
        return None
    if isinstance(phi, HorizonPhiLearner):
        if phi.n != n:
            raise ValueError(f"phi: the learner serves {phi.n} scenes, this env has {n}")
        return phi
    if isinstance(phi, str) and phi == "online":
        return HorizonPhiLearner(n, RiskPredictor(training=True, seed=seed, k_inv_d=0.0), seed=seed)
    if isinstance(phi, RiskPredictor):
        return HorizonPhiLearner(n, phi, seed=seed)
    if isinstance(phi, Mapping):
        kw = dict(phi)
        lk = {k: kw.pop(k) for k in _LEARNER_KEYS if k in kw}
        kw = {"training": True, "seed": seed, "k_inv_d": 0.0, **kw}
        try:
            return HorizonPhiLearner(n, RiskPredictor(**kw), seed=seed, **lk)
        except TypeError as e:
            raise TypeError(
                f"phi: a dict must hold HorizonPhiLearner/RiskPredictor arguments ({e})"
            ) from None
    if isinstance(phi, str) and phi.startswith("frozen:"):
        phi = phi[len("frozen:") :]
    if isinstance(phi, (str, os.PathLike)):
        return HorizonPhiLearner(n, RiskPredictor.load(phi, training=False), seed=seed)
    raise TypeError(
        "phi: expected 'online', 'ttc', 'frozen:<path>', a path, a RiskPredictor, a dict or a "
        f"HorizonPhiLearner, got {phi!r}"
    )


def make_world_v1(
    n: int,
    scenarios: Any = "all",
    ego: str = "idm",
    action: str = "speed",
    sigma: str = "rss",
    max_steps: int = 300,
    randomize: bool = True,
    traffic_lights: bool = True,
    backend: str = "kinematic",
    backend_kwargs: Mapping[str, Any] | None = None,
    feasibility: Any = None,
) -> KinematicWorld:
    """The simulator of ScenePilot-v1 (its world has no Phi: v1 computes the risk outside it)."""
    w = make_world(
        int(n),
        parse_scenarios(scenarios, "ScenePilot-v1"),
        action,
        ego,
        sigma_params(sigma, feasibility),
        None,
        int(max_steps),
        backend,
        backend_kwargs or {},
    )
    w.randomize, w.lights_on = bool(randomize), bool(traffic_lights)
    return w


def scripted_adversary_v1(
    obs: np.ndarray,
    scenario: int,
    triggered: bool,
    params: Mapping[str, float],
    action_dim: int = 1,
) -> tuple[np.ndarray, bool]:
    """SafeBench's scripted behaviour with v1's drawn trigger distance and target speed
    (``params`` = ``info["scenario_params"]``: ``trigger_scale``, ``adv_speed_scale``)."""
    lay = LAYOUTS[int(scenario)]
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    d = float(np.hypot(o[9] - o[0], o[10] - o[1]))
    trig = lay.trigger_distance * float(params.get("trigger_scale", 1.0))
    triggered = triggered or lay.trigger_distance <= 0.0 or d < trig
    target = (lay.adv_base + lay.adv_scale * lay.scripted_action) * float(
        params.get("adv_speed_scale", 1.0)
    )
    if not triggered:
        target = 0.0
    if action_dim == 1:
        a = -1.0 if not triggered else (target - lay.adv_base) / lay.adv_scale
        return np.array([np.clip(a, -1.0, 1.0)], dtype=np.float32), triggered
    speed = float(np.hypot(o[14], o[15]))
    acc = float(np.clip((target - speed) / 0.3, -1.0, 1.0))
    return np.array([acc, 0.0], dtype=np.float32), triggered


class _Core:
    """v1's reward, boundary-band bookkeeping, red lights and Phi for the N scenes of a world."""

    def __init__(
        self,
        world: KinematicWorld,
        reward: str,
        bonus: float,
        k: float,
        learner: HorizonPhiLearner | None,
    ) -> None:
        n = world.n
        self.w, self.reward, self.bonus, self.k, self.learner = world, reward, bonus, k, learner
        self.ring = np.zeros((n, RESPONSE_STEPS))
        self.rpos = np.zeros(n, np.int64)
        self.rcount = np.zeros(n, np.int64)
        self.min_old = np.ones(n)
        self.risk_prev = np.zeros(n)
        self.j_reward, self.j_risk = np.zeros(n), np.zeros(n)
        self.red_run, self.avoidable = np.zeros(n), np.zeros(n)
        self._front_before = np.zeros(n)
        self._light_before = np.full(n, -1)
        self._feat_before = np.zeros((n, 6), np.float32)

    def reset(self, idx: np.ndarray) -> None:
        w = self.w
        self.rcount[idx], self.rpos[idx] = 0, 0
        self.min_old[idx] = w.sigma_prev[idx]
        self.j_reward[idx], self.j_risk[idx] = 0.0, 0.0
        self.red_run[idx], self.avoidable[idx] = 0.0, 0.0
        ready = self.learner is not None and self.learner.ready
        self.risk_prev[idx] = self.learner.risk(w.feat_prev[idx]) if ready else 0.0
        if self.learner is not None:
            self.learner.reset_rows(idx)

    def before(self) -> None:
        w = self.w
        self._front_before = w.ego_s + 0.5 * w.length[:, 0]
        self._light_before = light_state(w)
        if self.learner is not None and self.learner.learning:
            self._feat_before = w.feat_prev.copy()

    def after(
        self,
        collision: np.ndarray,
        sigma: np.ndarray,
        ttc_risk: np.ndarray,
        ended: np.ndarray,
        active: np.ndarray,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The v1 reward of this step and its per-step info arrays."""
        w = self.w
        L = self.learner
        if L is not None:
            L.observe(self._feat_before, collision, ended, active)
        use_phi = L is not None and L.ready
        risk = L.risk(w.feat_prev) if use_phi else np.asarray(ttc_risk, np.float64)
        risk = np.where(active, risk, 0.0)
        # boundary band: the minimum sigma up to RESPONSE_STEPS steps before now
        out = active & (self.rcount >= RESPONSE_STEPS)
        old = self.ring[np.arange(w.n), self.rpos]
        self.min_old = np.where(out, np.minimum(self.min_old, old), self.min_old)
        self.ring[active, self.rpos[active]] = sigma[active]
        self.rpos = np.where(active, (self.rpos + 1) % RESPONSE_STEPS, self.rpos)
        self.rcount = np.where(active, np.minimum(self.rcount + 1, RESPONSE_STEPS), self.rcount)
        avoid = collision & active & (self.min_old >= self.k)
        if self.reward == "released":
            rew = risk
        else:
            rew = (risk - self.risk_prev) + self.bonus * avoid
        rew = np.where(active, rew, 0.0)
        self.risk_prev = np.where(active, risk, self.risk_prev)
        front = w.ego_s + 0.5 * w.length[:, 0]
        j_in = TABLES["j_entry"][w.scn]
        red = (
            w.has_light
            & active
            & (self._light_before == 0)
            & (self._front_before < j_in)
            & (front >= j_in)
        )
        self.red_run += red
        self.avoidable = np.maximum(self.avoidable, avoid.astype(float))
        self.j_reward += rew
        self.j_risk += risk
        return rew, {
            "risk": risk,
            "min_sigma_pre": self.min_old.copy(),
            "avoidable": avoid.copy(),
            "red_light": light_state(w),
            "red_light_violation": red.copy(),
            "phi_used": use_phi,
        }

    def metrics(self, i: int) -> dict[str, Any]:
        m = self.w.episode_metrics(i)
        m["run_red_light"] = float(min(self.red_run[i], 1.0))
        m["J_risk"] = float(self.j_risk[i])
        m["J_reward"] = float(self.j_reward[i])
        m["min_sigma_pre_collision"] = float(self.min_old[i])
        m["avoidable_collision"] = float(self.avoidable[i])
        rp = getattr(self.w, "rparams", None)
        for key in PARAM_KEYS:
            m[f"param_{key}"] = float(rp[key][i]) if rp is not None else 0.0
        return m


class _CoreOne(_Core):
    """:class:`_Core` for a one-scene world in Python floats (the single env's per-step cost)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._ring: list[float] = []
        self._j_in = 0.0

    def reset(self, idx: np.ndarray) -> None:
        super().reset(idx)
        self._ring = []
        self._j_in = float(TABLES["j_entry"][int(self.w.scn[0])])
        self._min_old = float(self.min_old[0])
        self._risk_prev = float(self.risk_prev[0])
        self._jr = self._jk = 0.0
        self._red = self._avoid = 0.0
        self._lit = bool(self.w.has_light[0])

    def _light(self) -> int:
        if not self._lit:
            return -1
        w = self.w
        ts = float(w.t[0]) * DT
        gf, gu = float(w.rparams["green_from"][0]), float(w.rparams["green_until"][0])
        return 2 if gf <= ts < gu else (1 if gu <= ts < gu + AMBER_S else 0)

    def before(self) -> None:
        w = self.w
        self._fb = float(w.ego_s[0]) + 0.5 * float(w.length[0, 0])
        self._lb = self._light()
        if self.learner is not None and self.learner.learning:
            self._feat_before = w.feat_prev.copy()

    def after_one(
        self, collision: bool, sigma: float, ttc_risk: float, ended: bool
    ) -> tuple[float, dict[str, Any]]:
        w, L = self.w, self.learner
        if L is not None:
            one = np.ones(1, bool)
            L.observe(self._feat_before, np.array([collision]), np.array([ended]), one)
        use_phi = L is not None and L.ready
        risk = float(L.risk(w.feat_prev)[0]) if use_phi else float(ttc_risk)
        ring = self._ring
        if len(ring) >= RESPONSE_STEPS:
            old = ring.pop(0)
            if old < self._min_old:
                self._min_old = old
        ring.append(sigma)
        avoid = bool(collision) and self._min_old >= self.k
        if self.reward == "released":
            rew = risk
        else:
            rew = (risk - self._risk_prev) + (self.bonus if avoid else 0.0)
        self._risk_prev = risk
        red = False
        if self._lb == 0:
            front = float(w.ego_s[0]) + 0.5 * float(w.length[0, 0])
            red = self._fb < self._j_in <= front
        self._red += red
        self._avoid = max(self._avoid, float(avoid))
        self._jr += rew
        self._jk += risk
        return rew, {
            "risk": risk,
            "min_sigma_pre": self._min_old,
            "avoidable": avoid,
            "red_light": self._light(),
            "red_light_violation": red,
            "phi_used": use_phi,
        }

    def metrics(self, i: int) -> dict[str, Any]:
        self.red_run[0], self.j_risk[0], self.j_reward[0] = self._red, self._jk, self._jr
        self.min_old[0], self.avoidable[0] = self._min_old, self._avoid
        return super().metrics(i)


def _check_v1(name: str, reward: str, collision_bonus: float) -> None:
    if reward not in REWARDS:
        raise ValueError(f"{name}: reward must be one of {REWARDS}, got {reward!r}")
    if not isinstance(collision_bonus, (int, float)) or not np.isfinite(collision_bonus):
        raise ValueError(
            f"{name}: collision_bonus must be a finite number, got {collision_bonus!r}"
        )


class _V1Single:
    """The v1 parts shared by the single adversary env and the AV env (mixin over ScenePilotEnv)."""

    world: KinematicWorld
    feasibility_threshold: float
    _sigma_params = staticmethod(sigma_params)  # sigma name -> FeasibilityParams (v2 overrides)

    @staticmethod
    def _tune_world(world: KinematicWorld) -> None:
        """Version-specific world settings after construction (v1: none)."""

    def _v1_setup(
        self,
        reward: str,
        sigma: str,
        phi: Any,
        collision_bonus: float,
        randomize: bool,
        traffic_lights: bool,
    ) -> None:
        self.reward_mode, self.sigma_mode = reward, sigma
        self.collision_bonus = float(collision_bonus)
        self.world.randomize, self.world.lights_on = bool(randomize), bool(traffic_lights)
        self._tune_world(self.world)
        self.phi_learner = make_phi_v1(phi, 1)
        self.phi = None if self.phi_learner is None else self.phi_learner.net
        self._core = _CoreOne(
            self.world, reward, self.collision_bonus, self.feasibility_threshold, self.phi_learner
        )

    def set_feasibility_threshold(self, k: float) -> None:
        """Move k (the collision gate, ``cost`` and feasible_ratio threshold) during a run."""
        self.feasibility_threshold = float(k)
        self.world.k_feasible = float(k)
        self._core.k = float(k)

    def scenario_params(self) -> dict[str, float]:
        rp = self.world.rparams
        return {k: float(rp[k][0]) for k in PARAM_KEYS} if rp is not None else {}

    def _v1_step(self, adv: list[float], ego: list[float] | None) -> tuple[Any, float, dict]:
        core = self._core
        core.before()
        r = self.world.step_one(adv, ego)
        ended = r.terminated or r.truncated
        rew, extra = core.after_one(r.collision, r.sigma, r.risk, ended)
        info = self._step_info(r)  # type: ignore[attr-defined]
        risk = extra["risk"]
        info.update(
            reward_vec=np.array([risk, r.sigma], dtype=np.float32),
            risk=risk,
            risk_source="phi" if extra["phi_used"] else "ttc",
            min_sigma_pre=extra["min_sigma_pre"],
            avoidable=extra["avoidable"],
            red_light=extra["red_light"],
            red_light_violation=extra["red_light_violation"],
            reward=rew,
        )
        if ended:
            self._running = False
            info["episode_metrics"] = core.metrics(0)
        return r, rew, info

    def save_phi(self, path: str | os.PathLike[str]) -> None:
        """Save a frozen copy of the env's Phi (load it with ``phi="frozen:<path>"``)."""
        if self.phi_learner is None:
            raise RuntimeError("ScenePilot-v1: phi='ttc' has no risk predictor to save")
        self.phi_learner.frozen_copy().save(path)


class ScenePilotV1Env(_V1Single, ScenePilotEnv):
    """
    ## Description
    ScenePilot-v1: the v0 scenes (the agent is the adversary of one of the 8 SafeBench pre-crash
    scenarios, the ego a planner under test) with four changes, each for a measured reason
    (``docs/results/driving.md``, v0): (1) the default reward pays for *avoidable* collisions,
    because v0's released per-step risk reward makes surviving worth more than colliding;
    (2) sigma uses full RSS distances with the RSS "both axes unsafe" rule, because the
    released formula puts any car in the ego's lane at sigma <= 0 at any distance; (3) Phi
    predicts "ego collision within the next 2 s" and learns from batches; (4) scenario
    parameters are drawn per episode and scenarios 5 and 7 have traffic lights.

    ## Action Space
    As v0: ``Box(-1, 1, (1,))`` target speed (or ``action="acc_steer"``: ``Box(-1, 1, (2,))``).

    ## Observation Space
    As v0: ``Box((27,))``, 9 numbers per actor (ego, adversary, other).

    ## Rewards
    ``reward="collision"`` (default): ``r_t = (risk_t - risk_{t-1}) + collision_bonus *
    1[ego collision at t and min_sigma_pre_t >= k]``. ``risk`` is Phi (collision probability
    within 2 s) once ready, else the TTC proxy ``2 / (1 + TTC / 2.5)``; the shaping telescopes to
    ``risk_T - risk_0`` (at most 2 in size), so any avoidable collision (bonus 10) is worth more
    than any episode without one and collisions the ego could not have avoided earn nothing
    extra: the optimum is a boundary-band collision. ``min_sigma_pre_t`` is the minimum sigma
    from the reset up to 1 s (RSS's ego response time, 10 steps) before t; ``k`` is
    ``feasibility_threshold`` (``env.unwrapped.set_feasibility_threshold(k)`` moves it).
    ``reward="released"``: ``r_t = risk_t`` (what the release optimizes: ``_get_scenario_moreward_vec``
    returns ``[risk, sigma]`` each step, Phi or the TTC proxy, with no collision or end term;
    = v0's reward). ``info["reward_vec"] = [risk, sigma]`` either way.

    ## Starting State
    The layout, then per episode from the reset seed: actor spawn offsets, the third body's
    speed, the scripted adversary's trigger distance and speed, and the light timing
    (ranges in :mod:`icml26.envs.driving.realism`); ``info["scenario_params"]`` lists them.

    ## Episode End
    As v0. ``info["episode_metrics"]`` adds ``run_red_light`` (measured), ``J_reward``,
    ``min_sigma_pre_collision`` (min sigma up to 1 s before the end) and
    ``avoidable_collision``; per step ``info`` adds ``min_sigma_pre``, ``avoidable``,
    ``red_light`` (0 red, 1 amber, 2 green, -1 none) and ``red_light_violation``.

    ## Arguments
    v0's (``scenario``, ``ego``, ``action``, ``backend``, ``backend_kwargs``,
    ``feasibility_threshold``, ``max_steps``, ``render_mode``; ``ego`` also takes ``"human"``:
    IDM at 9 m/s, 1 s headway, jerk-limited brake onset, the planner for which the most scenarios
    discriminate) plus ``reward``
    (``"collision"``/``"released"``), ``sigma`` (``"rss"``/``"released"``; ``feasibility`` a dict
    overrides its constants), ``phi`` (``"online"``: learned here, ready after 500 batch updates,
    frozen after 5000; ``"ttc"``; ``"frozen:<path>"`` or a path; a RiskPredictor -- a frozen one is
    used as it is; a dict of HorizonPhiLearner/RiskPredictor arguments), ``collision_bonus`` (10),
    ``randomize`` (True), ``traffic_lights`` (True).

    ## Version History
    * v1: collision reward, RSS sigma, collision-horizon Phi, randomized scenarios, traffic lights.
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/ScenePilot-v1", scenario=5)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
    >>> print(obs.shape, info["risk_source"], info["red_light"], terminated)
    (27,) ttc 2 False
    """

    _name = "ScenePilot-v1"

    def __init__(
        self,
        scenario: Any = 1,
        ego: Any = "idm",
        action: str = "speed",
        reward: str = "collision",
        sigma: str = "rss",
        phi: Any = "online",
        collision_bonus: float = DEFAULT_BONUS,
        randomize: bool = True,
        traffic_lights: bool = True,
        backend: str = "kinematic",
        backend_kwargs: Mapping[str, Any] | None = None,
        feasibility: Any = None,
        feasibility_threshold: float = 0.0,
        max_steps: int = 300,
        render_mode: str | None = None,
    ) -> None:
        _check_v1(self._name, reward, collision_bonus)
        super().__init__(
            scenario=scenario,
            ego=ego,
            action=action,
            backend=backend,
            backend_kwargs=backend_kwargs,
            phi="ttc",
            feasibility=self._sigma_params(sigma, feasibility),
            feasibility_threshold=feasibility_threshold,
            max_steps=max_steps,
            render_mode=render_mode,
        )
        self._v1_setup(reward, sigma, phi, collision_bonus, randomize, traffic_lights)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        obs, info = super().reset(seed=seed, options=options)
        self._core.reset(np.arange(1))
        info["scenario_params"] = self.scenario_params()
        info["red_light"] = int(light_state(self.world)[0])
        return obs, info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._check_running()
        a = _check_action(action, self.action_space, self._name)
        ego = self._ego_control() if self._ego_policy is not None else None
        r, rew, info = self._v1_step(a, ego)
        obs = r.obs if r.obs is not None else self.world.observation()[0]
        return obs, rew, r.terminated, r.truncated, info


class ScenePilotAVV1Env(_V1Single, ScenePilotAVEnv):
    """
    ## Description
    ScenePilotAV-v1: the agent drives the ego car (as ``ScenePilotAV-v0``) in the v1 scenes
    (randomized parameters, traffic lights in scenarios 5 and 7, RSS sigma); the scripted
    adversary uses the episode's drawn trigger distance and speed (``scripted_adversary_v1``).

    ## Action Space / Observation Space / Rewards
    As ``ScenePilotAV-v0``: ``Box(-1, 1, (2,))`` [acc, steer] (a residual over ``base_planner``),
    the 12-number ego observation, SafeBench's ego reward, minus ``red_light_penalty`` (1) per
    red-light violation.

    ## Starting State / Episode End
    As ``ScenePilot-v1``; ``info`` carries the v1 adversary-side figures and ``episode_metrics``.

    ## Arguments
    ``ScenePilotAV-v0``'s plus ``sigma``, ``randomize``, ``traffic_lights``, ``red_light_penalty``
    and ``phi`` (as v1; default ``"ttc"``).

    ## Version History
    * v1: v1 scenes, red-light penalty.
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/ScenePilotAV-v1", scenario=5, base_planner="idm")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros(2, dtype=np.float32))
    >>> print(obs.shape, terminated)
    (12,) False
    """

    _name = "ScenePilotAV-v1"

    def __init__(
        self,
        scenario: Any = 1,
        adversary: Any = "scripted",
        adversary_action: str = "speed",
        base_planner: str | None = None,
        sigma: str = "rss",
        phi: Any = "ttc",
        randomize: bool = True,
        traffic_lights: bool = True,
        red_light_penalty: float = 1.0,
        backend: str = "kinematic",
        backend_kwargs: Mapping[str, Any] | None = None,
        feasibility: Any = None,
        feasibility_threshold: float = 0.0,
        collision_penalty: float = 1.0,
        max_steps: int = 300,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            scenario=scenario,
            adversary=adversary,
            adversary_action=adversary_action,
            base_planner=base_planner,
            backend=backend,
            backend_kwargs=backend_kwargs,
            phi="ttc",
            feasibility=self._sigma_params(sigma, feasibility),
            feasibility_threshold=feasibility_threshold,
            collision_penalty=collision_penalty,
            max_steps=max_steps,
            render_mode=render_mode,
        )
        self.red_light_penalty = float(red_light_penalty)
        self._v1_setup("released", sigma, phi, DEFAULT_BONUS, randomize, traffic_lights)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        obs, info = super().reset(seed=seed, options=options)
        self._core.reset(np.arange(1))
        info["scenario_params"] = self.scenario_params()
        return obs, info

    def _adversary_action(self) -> np.ndarray:
        if isinstance(self._adversary, str) and self._adversary == "scripted":
            obs27 = self.world.observation()[0]
            a, self._triggered = scripted_adversary_v1(
                obs27,
                int(self.world.scn[0]),
                self._triggered,
                self.scenario_params(),
                self._adv_dim,
            )
            return np.clip(np.asarray(a, dtype=np.float64), -1.0, 1.0)
        return super()._adversary_action()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._check_running()
        u = _check_action(action, self.action_space, self._name)
        adv = self._adversary_action()
        r, _, info = self._v1_step(adv.tolist(), u)
        rew = self._ego_reward(r.collision)
        rew -= self.red_light_penalty * float(info["red_light_violation"])
        return self._ego_obs(), rew, r.terminated, r.truncated, info


class ScenePilotV1VectorEnv(ScenePilotVectorEnv):
    """N ``ScenePilot-v1`` scenes in one batched NumPy call (``gym.make_vec("icml26/ScenePilot-v1", num_envs=N)``).

    As :class:`~icml26.envs.driving.env.ScenePilotVectorEnv` (autoreset modes, ``episode_metrics``,
    ``final_obs``) with v1's arguments, reward and info (arrays). One Phi learner serves all N
    scenes: it takes one Adam step per 128 labelled states, so its cost per env step does not
    grow with N. ``set_feasibility_threshold(k)`` moves the gate.
    """

    _sigma_params = staticmethod(sigma_params)
    _tune_world = staticmethod(_V1Single._tune_world)

    def __init__(
        self,
        num_envs: int = 1,
        scenario: Any = "all",
        ego: str = "idm",
        action: str = "speed",
        reward: str = "collision",
        sigma: str = "rss",
        phi: Any = "online",
        collision_bonus: float = DEFAULT_BONUS,
        randomize: bool = True,
        traffic_lights: bool = True,
        backend: str = "kinematic",
        backend_kwargs: Mapping[str, Any] | None = None,
        feasibility: Any = None,
        feasibility_threshold: float = 0.0,
        max_steps: int = 300,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        **ignored: Any,
    ) -> None:
        _check_v1(self._label, reward, collision_bonus)
        super().__init__(
            num_envs=num_envs,
            scenario=scenario,
            ego=ego,
            action=action,
            backend=backend,
            backend_kwargs=backend_kwargs,
            phi="ttc",
            feasibility=self._sigma_params(sigma, feasibility),
            feasibility_threshold=feasibility_threshold,
            max_steps=max_steps,
            render_mode=render_mode,
            max_episode_steps=max_episode_steps,
            autoreset_mode=autoreset_mode,
            **ignored,
        )
        self.reward_mode, self.sigma_mode = reward, sigma
        self.collision_bonus = float(collision_bonus)
        self.world.randomize, self.world.lights_on = bool(randomize), bool(traffic_lights)
        self._tune_world(self.world)
        self.phi_learner = make_phi_v1(phi, self.num_envs)
        self.phi = None if self.phi_learner is None else self.phi_learner.net
        self._core = _Core(
            self.world, reward, self.collision_bonus, self.feasibility_threshold, self.phi_learner
        )
        if ego not in PLANNERS:  # pragma: no cover - the parent checks first
            raise ValueError(f"ScenePilot-v1 vector env: unknown ego {ego!r}")

    def set_feasibility_threshold(self, k: float) -> None:
        self.feasibility_threshold = float(k)
        self.world.k_feasible = float(k)
        self._core.k = float(k)

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        obs, info = super().reset(seed=seed, options=options)
        self._core.reset(np.arange(self.num_envs))
        info["red_light"] = light_state(self.world)
        return obs, info

    _label = "ScenePilot-v1 vector env"

    def reset_scenes(
        self, idx: np.ndarray, rng: np.random.Generator, scenario: np.ndarray | None = None
    ) -> None:
        """Start scenes ``idx`` afresh (drawing from ``rng``, on ``scenario`` if given) outside the
        autoreset: the world and v1's per-scene bookkeeping (pre-collision window, sums, Phi rows)."""
        idx = np.asarray(idx, dtype=np.int64)
        self.world.reset(idx, rng, scenario)
        self._core.reset(idx)
        if self._autoreset.size == self.num_envs:
            self._autoreset[idx] = False

    def _check_actions(self, actions: Any) -> np.ndarray:
        return np.clip(super()._check_actions(actions), -1.0, 1.0)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        a = self._check_actions(actions)
        w, core = self.world, self._core
        resetting = self._autoreset
        active = np.ones(self.num_envs, bool)
        if resetting.any():  # NEXT_STEP: the scenes that ended last step start afresh, unstepped
            idx = np.flatnonzero(resetting)
            w.reset(idx, self._rng)
            core.reset(idx)
            active = ~resetting
        core.before()
        r = w.step(a, active=None if active.all() else active)
        done = r.terminated | r.truncated
        rew, extra = core.after(r.collision, r.sigma, r.risk, done, active)
        obs = w.observation()
        info: dict[str, Any] = {
            "reward_vec": np.stack([extra["risk"], r.sigma], axis=1).astype(np.float32),
            "risk": extra["risk"],
            "sigma": r.sigma.copy(),
            "sigma_t": r.sigma_t.copy(),
            "sigma_tp1": r.sigma.copy(),
            "ttc": r.ttc.copy(),
            "collision": r.collision.copy(),
            "adversary_collision": r.adversary_collision.copy(),
            "cost": (r.sigma < self.feasibility_threshold).astype(np.float64),
            "scenario": w.scn.copy(),
            "risk_source_phi": np.full(self.num_envs, extra["phi_used"]),
            "min_sigma_pre": extra["min_sigma_pre"],
            "avoidable": extra["avoidable"],
            "red_light": extra["red_light"],
            "red_light_violation": extra["red_light_violation"],
        }
        if done.any():
            idx = np.flatnonzero(done)
            rows = [core.metrics(int(i)) for i in idx]
            em = {k: np.zeros(self.num_envs) for k in rows[0]}
            for i, row in zip(idx, rows):
                for k, v in row.items():
                    em[k][i] = v
            info["episode_metrics"] = em
            info["_episode_metrics"] = done.copy()
            if self.autoreset_mode == AutoresetMode.SAME_STEP:
                info["final_obs"] = obs.copy()
                info["_final_obs"] = done.copy()
                w.reset(idx, self._rng)
                core.reset(idx)
                obs = w.observation()
        self._autoreset = (
            done.copy() if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.zeros_like(done)
        )
        return obs, rew.astype(np.float64), r.terminated.copy(), r.truncated.copy(), info

    def save_phi(self, path: str | os.PathLike[str]) -> None:
        """Save a frozen copy of the shared Phi (load it with ``phi="frozen:<path>"``)."""
        if self.phi_learner is None:
            raise RuntimeError("ScenePilot-v1 vector env: phi='ttc' has no risk predictor to save")
        self.phi_learner.frozen_copy().save(path)


def make_vector_env_v1(
    num_envs: int = 1, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, **kwargs: Any
) -> ScenePilotV1VectorEnv:
    """``gym.make_vec("icml26/ScenePilot-v1", num_envs=N)``: the native v1 vector env (NEXT_STEP autoreset)."""
    return ScenePilotV1VectorEnv(num_envs=num_envs, autoreset_mode=autoreset_mode, **kwargs)
