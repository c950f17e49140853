"""ScenePilot: one engine for every id (a configuration of :mod:`.versions`), as a single env
(:class:`ScenePilotEnv`, both roles) and a native vector env (:class:`ScenePilotVectorEnv`), over
one kernel (:mod:`.sim`), reward bookkeeping (:mod:`.rewards`) and risk predictor (:mod:`.risk`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from icml26.envs._checks import check_render_mode
from icml26.envs.driving import realism, rewards, risk, versions
from icml26.envs.driving.feasibility import FeasibilityParams
from icml26.envs.driving.scenarios import LAYOUTS, SCENES, TABLES
from icml26.envs.driving.sim import DT, N_BODIES, OBS_PER_ACTOR, PLANNERS, KinematicWorld

__all__ = ["ScenePilotEnv", "ScenePilotVectorEnv", "ScenePilotAVEnv", "make_vector_env",
           "make_world", "world_of", "feasibility_params", "parse_scenarios", "driving_score",
           "attack_score", "OBS_DIM", "BACKENDS"]  # fmt: skip

OBS_DIM = N_BODIES * OBS_PER_ACTOR
BACKENDS = ("kinematic", "metadrive", "carla")
_POS, _VEL, _ACC = 1000.0, 25.0, 250.0


def _obs_space() -> spaces.Box:
    high = np.tile([_POS, _POS, np.pi, 1.0, 1.0, _VEL, _VEL, _ACC, _ACC], N_BODIES)
    return spaces.Box(-high.astype(np.float32), high.astype(np.float32), dtype=np.float32)


def _ego_obs_space() -> spaces.Box:
    high = np.array([50.0, np.pi, _VEL, 1.0] + [_POS, _POS, 2 * _VEL, 2 * _VEL] * 2, np.float32)
    return spaces.Box(-high, high, dtype=np.float32)


def _box(dim: int) -> spaces.Box:
    return spaces.Box(-1.0, 1.0, (dim,), np.float32)


def parse_scenarios(scenario: Any, who: str = "ScenePilot-v0") -> tuple[int, ...]:
    """``1..8``, a list of them, or ``"all"``/``"mix"`` -> a tuple of scenario ids."""
    bad = ValueError(f"{who}: scenario must be 1..8, a list of them or 'all', got {scenario!r}")
    if isinstance(scenario, str):
        if scenario.lower() in ("all", "mix"):
            return tuple(sorted(LAYOUTS))
        try:
            scenario = [int(x) for x in scenario.split(",")]
        except ValueError:
            raise bad from None
    ids = [scenario] if isinstance(scenario, (int, np.integer)) else list(scenario)
    if not ids or any(not isinstance(i, (int, np.integer)) or int(i) not in LAYOUTS for i in ids):
        raise bad
    return tuple(int(i) for i in ids)


def feasibility_params(sigma: str = "released", feasibility: Any = None, who: str = "ScenePilot",
                       names: Mapping[str, str] | None = None) -> FeasibilityParams:  # fmt: skip
    """The constants of sigma rule ``sigma`` (:data:`~.versions.SIGMAS`, or a name of ``names``),
    with ``feasibility`` (a dict of constants) replacing some, or a FeasibilityParams instead."""
    rule = (names or {}).get(sigma, sigma)
    if rule not in versions.SIGMAS:
        known = sorted({*versions.SIGMAS, *(names or {})})
        raise ValueError(f"{who}: sigma must be one of {known}, got {sigma!r}")
    if isinstance(feasibility, FeasibilityParams):
        return feasibility
    if feasibility is not None and not isinstance(feasibility, Mapping):
        got = type(feasibility).__name__
        raise TypeError(f"feasibility: expected None, a dict or FeasibilityParams, got {got}")
    return FeasibilityParams(**{**versions.SIGMAS[rule], **dict(feasibility or {})})


def make_world(n: int, scenarios: tuple[int, ...], action_mode: str, planner: str,
               feasibility: FeasibilityParams, phi: Any, max_steps: int, backend: str,
               backend_kwargs: Mapping[str, Any],
               ego_residual: bool = False) -> KinematicWorld:  # fmt: skip
    """Build the simulator of ``backend`` (``kinematic``, ``metadrive`` or ``carla``)."""
    args = (n, scenarios, action_mode, planner, feasibility, None, max_steps, ego_residual)
    if backend == "kinematic":
        return KinematicWorld(*args)
    if backend == "metadrive":
        from icml26.envs.driving.backends.metadrive_backend import MetaDriveWorld

        return MetaDriveWorld(*args, **dict(backend_kwargs))
    if backend == "carla":
        from icml26.envs.driving.backends.carla_backend import CarlaWorld

        return CarlaWorld(*args, **dict(backend_kwargs))
    raise ValueError(f"ScenePilot: backend must be one of {BACKENDS}, got {backend!r}")


class _PolicyCaller:
    """Calls an ego or adversary policy: an icml26 Agent (``act``), an SB3 model (``predict``)
    or a callable."""

    def __init__(self, policy: Any, what: str) -> None:
        if not any(callable(x) for x in (getattr(policy, "act", None),
                                         getattr(policy, "predict", None), policy)):  # fmt: skip
            raise TypeError(f"{what}: expected an Agent (act), an SB3 model (predict) or a "
                            f"callable, got {policy!r}")  # fmt: skip
        self.policy, self.what = policy, what

    def __call__(self, obs: np.ndarray, info: Mapping[str, Any]) -> np.ndarray:
        p = self.policy
        if callable(getattr(p, "act", None)):
            a = p.act(obs, info)
        elif callable(getattr(p, "predict", None)):
            a, _ = p.predict(obs, deterministic=True)
        else:
            a = p(obs, info)
        return np.asarray(a, dtype=np.float64).reshape(-1)

    def reset(self, seed: int | None) -> None:
        r = getattr(self.policy, "reset", None)
        if callable(r) and not callable(getattr(self.policy, "predict", None)):
            r(seed)


def _check_action(action: Any, space: spaces.Box, who: str) -> np.ndarray:
    """The action(s) as floats of the space's shape in [-1, 1] (clipped by 1e-6), or a clear
    error (the env's state untouched)."""
    try:
        a = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: expected an action in {space}, got {action!r}") from None
    if a.shape != space.shape:
        raise ValueError(f"{who}: expected an action of shape {space.shape} in {space}, "
                         f"got shape {a.shape}")  # fmt: skip
    if not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1.0 + 1e-6):
        what = a.tolist() if a.size <= 4 else f"{a.size} values"
        raise ValueError(f"{who}: actions must be finite and in [-1, 1], got {what}")
    return np.clip(a, -1.0, 1.0)


def _action_list(action: Any, space: spaces.Box, who: str) -> list[float]:
    """:func:`_check_action` as a list, without NumPy for a float array of the right shape."""
    if type(action) is np.ndarray and action.shape == space.shape and action.dtype.kind == "f":
        vals = action.tolist()
        if all(-1.000001 <= v <= 1.000001 for v in vals):  # False for NaN
            return [-1.0 if v < -1.0 else (1.0 if v > 1.0 else v) for v in vals]
    return _check_action(action, space, who).tolist()


def _means(episodes: Sequence[Mapping[str, float]], keys: str, who: str) -> list[float]:
    if not episodes:
        raise ValueError(f"{who}: no episodes")
    return [sum(e[k] for e in episodes) / len(episodes) for k in keys.split()]


def driving_score(episodes: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """ScenePilot's overall driving score over episodes (SafeBench's
    ``metric_util.get_route_scores``):

    final = [5(1 - CR) + (3 - RR - SS - OR/50) + 0.5(RF + Comp + 1 - TS/60)
             + 0.2(3 - ACC/8 - YV/3 - LI/20)] / 10.1
    """
    keys = "collision run_red_light run_stop out_of_road_length route_completion "
    cr, rr, ss, orl, comp, acc, yv, li = _means(
        episodes, keys + "avg_acceleration avg_yaw_velocity lane_invasions", "driving_score"
    )
    succ = [e for e in episodes if e["route_completion"] >= 0.99 and not e["collision"]]
    ts = sum(e["time"] for e in succ) / len(succ) if succ else 0.0
    rf = max(1 - sum(e["distance_to_route"] for e in episodes) / len(episodes) / 5, 0.0)
    final = ((1 - cr) * 5 + (3 - rr - ss - orl / 50) + (rf + comp + 1 - ts / 60) * 0.5
             + (3 - acc / 8 - yv / 3 - li / 20) * 0.2) / 10.1  # fmt: skip
    return {"collision_rate": cr, "red_light_rate": rr, "stop_sign_rate": ss,
            "out_of_road_length": orl, "route_following_stability": rf, "route_completion": comp,
            "avg_time_spent": ts, "avg_acceleration": acc, "avg_yaw_velocity": yv,
            "avg_lane_invasion_freq": li, "driving_score": final}  # fmt: skip


def attack_score(episodes: Sequence[Mapping[str, float]], time_out: float = 30.0) -> float:
    """SafeBench's original attack score (higher = more failures): 0.4 CR + 0.1 OR/10 + 0.1
    d_route/5 + 0.3 (1 - completion) + 0.1 time/time_out (SafeBench rounds to 2 decimals)."""
    cr, orl, dr, comp, t = _means(episodes, "collision out_of_road_length distance_to_route "
                                  "route_completion time", "attack_score")  # fmt: skip
    return 0.4 * cr + 0.1 * orl / 10 + 0.1 * dr / 5 + 0.3 * (1 - comp) + 0.1 * t / time_out


# ---------------------------------------------------------------------------- the engine


class _Engine:
    """One configuration's world, risk predictor and reward bookkeeping for N scenes (N = 1: the
    single env, on the kernel's float binding)."""

    def __init__(self, kwargs: Mapping[str, Any], n: int, preset: str = "v0",
                 who: str = "") -> None:  # fmt: skip
        c = self.config = versions.merge(kwargs, preset)
        self.name = versions.env_name(c) + who
        check_render_mode(self.name, c["render_mode"], ["rgb_array"])
        choices = {"action": ("speed", "acc_steer"), "backend": BACKENDS,
                   "reward": tuple(rewards.REWARDS), "phi_model": versions.PHI_MODELS,
                   "scenes": tuple(SCENES), "role": ("adversary", "ego")}  # fmt: skip
        for key, allowed in choices.items():
            if c[key] not in allowed:
                raise ValueError(f"{self.name}: {key} must be one of {list(allowed)}, "
                                 f"got {c[key]!r}")  # fmt: skip
        bonus = c["collision_bonus"]
        number = isinstance(bonus, (int, float)) and not isinstance(bonus, bool)
        if not number or not math.isfinite(bonus):
            raise ValueError(f"{self.name}: collision_bonus must be a finite number, got {bonus!r}")
        self.scenarios = parse_scenarios(c["scenario"], self.name)
        self.feas = feasibility_params(c["sigma"], c["feasibility"], self.name, c["sigma_names"])
        self.phi_model = c["phi_model"]
        self.learner = risk.make_phi(c["phi"], self.phi_model, n)
        self.n, self.k = n, float(c["feasibility_threshold"])
        self.reward, self.bonus, self.band_info = c["reward"], float(bonus), bool(c["band"])
        self.scenes = SCENES[c["scenes"]]
        self.band = rewards.Band(0.0 if n == 1 else np.zeros(n))

    def make_world(self, planner: str, residual: bool = False) -> KinematicWorld:
        c = self.config
        act = c["action"] if c["role"] == "adversary" else c["adversary_action"]
        w = make_world(self.n, self.scenarios, act, planner, self.feas, None, int(c["max_steps"]),
                       c["backend"], c["backend_kwargs"] or {}, residual)  # fmt: skip
        w.k_feasible = self.k
        w.randomize, w.lights_on = bool(c["randomize"]), bool(c["traffic_lights"])
        w.ranges = self.scenes.ranges
        if self.scenes.adv:
            names = ("adv_base", "adv_scale", "lead_after")
            w.adv_tables = tables = {k: TABLES[k].copy() for k in names}
            for sc, vals in self.scenes.adv.items():
                for k, v in zip(names, vals):
                    tables[k][sc] = v
        self.world = w
        return w

    @property
    def predictor(self) -> risk.RiskPredictor | None:
        """The risk predictor's network (the TD model's predictor is its own learner)."""
        L = self.learner
        return L.net if isinstance(L, risk.HorizonPhiLearner) else L

    def reset_rows(self, rows: Any) -> None:
        """Start the bookkeeping of scenes ``rows`` (0: the single env's scene; an index array)."""
        w, L = self.world, self.learner
        one = isinstance(rows, int)
        idx = np.arange(1) if one else rows
        r0 = L.risk(w.feat_prev[idx]) if L is not None and L.ready else np.zeros(len(idx))
        front = w.ego_s[idx] + 0.5 * w.length[idx, 0]
        if one:
            s0, r, f = float(w.sigma_prev[0]), float(r0[0]), float(front[0])
            rewards.band_reset_one(self.band, True, s0, r, f)
        else:
            mask = np.zeros(self.n, bool)
            mask[idx] = True
            full = [np.zeros(self.n) for _ in range(3)]
            for f, v in zip(full, (w.sigma_prev[idx], r0, front)):
                f[idx] = v
            rewards.band_reset(self.band, mask, *full)
        if isinstance(L, risk.HorizonPhiLearner):
            L.reset_rows(idx)

    def set_k(self, k: float) -> None:
        self.k = self.world.k_feasible = float(k)

    def metrics(self, i: int) -> dict[str, Any]:
        """The figures of scene ``i``'s episode (band: v1's additions)."""
        m = self.world.episode_metrics(i)
        if not self.band_info:
            return m
        B, rp = self.band, self.world.rparams
        get = lambda a: float(np.ravel(a)[i])  # noqa: E731  (a scalar or an (n,) array)
        m["run_red_light"] = min(get(B.red_run), 1.0)
        m["J_reward"], m["min_sigma_pre_collision"] = get(B.j_reward), get(B.min_old)
        m["avoidable_collision"] = get(B.avoidable)
        for key in realism.PARAM_KEYS:
            m[f"param_{key}"] = float(rp[key][i]) if rp is not None else 0.0
        return m

    def scenario_params(self, i: int = 0) -> dict[str, float]:
        rp = self.world.rparams
        return {k: float(rp[k][i]) for k in realism.PARAM_KEYS} if rp is not None else {}

    def save_phi(self, path: str | os.PathLike[str]) -> None:
        """Save the risk predictor: the TD model's as it stands, the horizon model's frozen."""
        L = self.learner
        if L is None:
            raise RuntimeError(f"{self.name}: phi='ttc' has no risk predictor to save")
        (L.frozen_copy() if isinstance(L, risk.HorizonPhiLearner) else L).save(path)


def _make_adversary(adversary: Any, who: str) -> Any:
    """'scripted' | 'random' | 'idle' | a saved ScenePilot policy path | Agent / SB3 / callable."""
    if isinstance(adversary, str) and adversary in ("scripted", "random", "idle"):
        return adversary
    if isinstance(adversary, (str, os.PathLike)):
        from icml26.envs.driving.policy_io import load_policy

        adversary = load_policy(adversary)
    return _PolicyCaller(adversary, f"{who} adversary")


class _Common:
    """What the single and the vector env share."""

    engine: _Engine
    world: KinematicWorld
    render_mode: str | None

    def _setup(self, E: _Engine) -> dict[str, Any]:
        c = E.config
        self.feasibility_threshold, self.action_mode, self.scenarios = E.k, c["action"], E.scenarios
        self.reward_mode, self.sigma_mode, self.collision_bonus = c["reward"], c["sigma"], E.bonus
        self.render_mode = c["render_mode"]
        self.phi, self.phi_learner = E.predictor, E.learner if E.phi_model == "horizon" else None
        return c

    def set_feasibility_threshold(self, k: float) -> None:
        """Move k (the band's collision gate, ``cost`` and feasible_ratio threshold) in a run."""
        self.feasibility_threshold = float(k)
        self.engine.set_k(k)

    def save_phi(self, path: str | os.PathLike[str]) -> None:
        """Save the env's risk predictor Phi (the horizon model's as a frozen copy; load it with
        ``phi=path`` or ``phi="frozen:<path>"``)."""
        self.engine.save_phi(path)

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        from icml26.envs.driving.render import render_topdown

        return render_topdown(self.world, 0)

    def _close_world(self, **kwargs: Any) -> None:
        close = getattr(self.world, "close", None)
        if callable(close):
            close()


# ---------------------------------------------------------------------------- the single env


class ScenePilotEnv(_Common, gym.Env):
    """
    ## Description
    ScenePilot adversarial driving (ICML 2026) in the 8 SafeBench pre-crash scenarios. With
    ``role="adversary"`` (``ScenePilot-vN``) the agent controls the adversary (a walker, cyclist
    or car) and the ego car is driven by a planner under test: the adversary is rewarded for AV
    risk and judged by the physical feasibility sigma of what it makes the ego face. With
    ``role="ego"`` (``ScenePilotAV-vN``, adversarial fine-tuning) the agent drives the ego car
    against an adversary policy. Every id is this class with the keyword arguments of
    :mod:`~icml26.envs.driving.versions` (the family page lists each version's diff).

    ## Action Space
    Adversary: ``Box(-1, 1, (1,))``, the target speed ``base + scale * a`` (walker 1 + 2a, cyclist
    and crossing/oncoming cars 5 + 5a, scenario 3's lead car 4a after it moved 5 m, 5 + 5a in the
    re-tuned scenes; negative speeds clip to 0); ``action="acc_steer"``: ``Box(-1, 1, (2,))`` =
    [acc * 3 m/s^2, steer * 0.2 rad]. Ego: ``Box(-1, 1, (2,))`` = [acc * 3 m/s^2, steer * 0.3
    rad] (SafeBench's RL planners), added to ``base_planner``'s control when one is given. NaN,
    wrong shapes and values outside [-1, 1] raise an error naming the space; the state is kept.

    ## Observation Space
    Adversary: ``Box((27,))``, 9 numbers per actor, ego first, then the adversary, then the other
    actor (zeros if none): ``[x, y, yaw, cos, sin, vx, vy, ax, ay]`` in the ego's start frame.
    Ego: ``Box((12,))``, SafeBench's ego state [lateral distance to the route, -yaw error, speed,
    vehicle in front] and (dx, dy, dvx, dvy) of the adversary and the other actor in the ego frame.

    ## Rewards
    Adversary: ``reward="released"`` (v0): the risk ``Phi(s')`` once the risk predictor is ready,
    else the TTC proxy ``2 / (1 + TTC / 2.5)`` (0 when not closing); ``reward="collision"`` (v1,
    v2): ``(risk_t - risk_{t-1}) + collision_bonus * 1[collision at t and min_sigma_pre_t >= k]``
    (:mod:`~icml26.envs.driving.rewards`). Ego: SafeBench's ``-collision_penalty * collision +
    v_lon - 10 [v_lon > 8] - [|lateral| > 4] - 5 steer^2 - 0.2 |steer| v_lon^2`` minus
    ``red_light_penalty`` per red-light violation. ``info`` carries ``reward_vec = [risk,
    sigma]``, ``sigma_t``, ``sigma_tp1``, ``ttc``, ``collision``, ``adversary_collision``, ``cost``
    = ``1[sigma_{t+1} < k]``, ``risk``, ``risk_source`` (``"phi"``/``"ttc"``), ``scenario``,
    ``route_completion``, ``ego_speed``; with ``band`` (v1, v2) also ``min_sigma_pre``,
    ``avoidable``, ``red_light`` (0 red, 1 amber, 2 green, -1 none), ``red_light_violation`` and
    the adversary's ``reward``.

    ## Starting State
    The scenario's layout (drawn uniformly from ``scenario`` when several;
    ``reset(options={"scenario": k})`` picks one), spawn positions jittered by up to 1 m along
    their headings; with ``randomize`` also the spawn offsets, the third body's speed, the
    scripted adversary's trigger distance and speed, and the light timing
    (``info["scenario_params"]``); the re-tuned scene 3 starts moving.

    ## Episode End
    Terminated on an ego collision or route completion (> 99% and within 10 m of the end);
    truncated after ``max_steps`` (300 x 0.1 s) or when the ego drove farther than the scenario's
    maximum. ``info["episode_metrics"]`` then holds the episode's figures (collision, route
    completion, out-of-road length, distance to route, lane invasions, acceleration, yaw rate,
    time, J_risk, J_sigma, feasible_ratio, min TTC; with ``band`` also ``run_red_light``,
    ``J_reward``, ``min_sigma_pre_collision``, ``avoidable_collision`` and the drawn parameters).
    ``step`` before ``reset`` or after the episode ended raises ``RuntimeError``.

    ## Arguments
    | Parameter | Default (v0) | Description |
    |---|---|---|
    | ``scenario`` | 1 | 1..8, a list of them, or ``"all"`` |
    | ``ego`` | ``"idm"`` | ``"idm"``, ``"cautious"``, ``"human"``, or a policy on the 12-number ego observation |
    | ``action`` | ``"speed"`` | the adversary's action: ``"speed"`` or ``"acc_steer"`` |
    | ``reward`` | ``"released"`` | ``"released"`` or ``"collision"`` (``collision_bonus`` 10) |
    | ``sigma`` | ``"released"`` | ``"released"``, ``"rss"``, ``"rss-crossing"``; ``feasibility`` overrides constants |
    | ``feasibility_threshold`` | 0 | k: the band's gate, ``cost``, feasible_ratio (``set_feasibility_threshold``) |
    | ``phi`` | ``"online"`` | ``"online"``, ``"ttc"``, ``"frozen:<path>"``/path, a RiskPredictor or a dict of its arguments |
    | ``phi_model`` | ``"td"`` | ``"td"`` (the release's av_safe) or ``"horizon"`` (collision within 2 s) |
    | ``scenes``, ``randomize``, ``traffic_lights`` | safebench, off, off | scene tuning and realism |
    | ``role`` | ``"adversary"`` | ``"ego"``: ``adversary``, ``adversary_action``, ``base_planner``, ``collision_penalty``, ``red_light_penalty`` |
    | ``backend`` | ``"kinematic"`` | ``"metadrive"``, ``"carla"`` (``backend_kwargs``) |
    | ``max_steps``, ``render_mode`` | 300, None | episode length; ``"rgb_array"`` |

    ## Version History
    Each version is its diff over the previous one (:data:`~icml26.envs.driving.versions.VERSIONS`).

    * v2: ``sigma="rss-crossing"``, ``scenes="retuned"``, ``ego="human"``. Measured on v1: every
      collision in scenarios 5-7 kept min sigma >= 0.35 (band share 1.000 for every arm);
      scenario 3 never collided, 4 collided for every actor
      ([driving_v1.md](../results/driving_v1.md), [scenarios](../results/driving_scenarios.md)).
    * v1: ``reward="collision"``, ``sigma="rss"``, ``phi_model="horizon"``, ``randomize``,
      ``traffic_lights``, ``band``. Measured on v0: its reward has no collision term (surviving
      pays more than colliding), its sigma puts every same-lane car at <= 0, its Phi is nearly
      constant, its episodes barely vary ([driving_v0.md](../results/driving_v0.md)).
    * v0: initial version (the release's reward ``r = risk``, sigma and TD Phi; SafeBench's
      scenes). The AV ids (``ScenePilotAV-vN``) are vN with ``role="ego"``, ``phi="ttc"``,
      ``reward="released"``.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/ScenePilot-v2", scenario=5)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
    >>> print(obs.shape, info["risk_source"], info["red_light"], terminated)
    (27,) ttc 2 False
    >>> env = gym.make("icml26/ScenePilot-v0", scenario=1)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
    >>> print(obs.shape, round(float(reward), 4), info["risk_source"], info["sigma_tp1"], terminated)
    (27,) 0.0211 ttc 1.0 False
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": int(1 / DT),
                "autoreset_mode": AutoresetMode.NEXT_STEP}  # fmt: skip

    def __init__(self, **kwargs: Any) -> None:
        self.engine = E = _Engine(kwargs, 1)
        c, name = self._setup(E), E.name
        self.config, self._name, self.backend = c, name, c["backend"]
        self.role, self.ego_role = c["role"], c["role"] == "ego"
        self._ego_policy: _PolicyCaller | None = None
        if self.ego_role:
            bp = c["base_planner"]
            if bp is not None and bp not in PLANNERS:
                raise ValueError(f"{name}: base_planner must be None or one of "
                                 f"{sorted(PLANNERS)}, got {bp!r}")  # fmt: skip
            self.world = w = E.make_world("idm", bp is not None)
            w.external_ego = True
            if bp is not None:
                w.planner = PLANNERS[bp]
            self.base_planner, self.ego_name = bp, f"agent+{bp}" if bp else "agent"
            self.collision_penalty = float(c["collision_penalty"])
            self.red_light_penalty = float(c["red_light_penalty"])
            self._adv_dim = 1 if c["adversary_action"] == "speed" else 2
            self._adversary = _make_adversary(c["adversary"], name)
            self._adv_space, self._triggered = _box(self._adv_dim), False
            self.action_space, self.observation_space = _box(2), _ego_obs_space()
        else:
            ego = c["ego"]
            if isinstance(ego, str) and ego not in PLANNERS:
                raise ValueError(f"{name}: ego must be one of {sorted(PLANNERS)} or a policy, "
                                 f"got {ego!r}")  # fmt: skip
            if not isinstance(ego, str):
                self._ego_policy = _PolicyCaller(ego, f"{name} ego")
            self.ego_name = ego if isinstance(ego, str) else type(ego).__name__
            self.world = E.make_world(ego if isinstance(ego, str) else "external")
            self.action_space = _box(1 if c["action"] == "speed" else 2)
            self.observation_space = _obs_space()
        self._running = False  # between reset() and the end of an episode

    def scenario_params(self) -> dict[str, float]:
        """This episode's drawn scenario parameters (empty when nothing is drawn)."""
        return self.engine.scenario_params(0)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:  # fmt: skip
        super().reset(seed=seed)
        scenario = None
        if options and "scenario" in options:
            scenario = np.array(parse_scenarios(options["scenario"], self._name)[:1])
        w = self.world
        w.reset(np.arange(1), self.np_random, scenario)
        self._running = True
        info: dict[str, Any] = {"scenario": int(w.scn[0]), "sigma": float(w.sigma_prev[0]),
                                "ego_planner": str(self.ego_name),
                                "backend": self.backend}  # fmt: skip
        note = getattr(w, "backend_note", None)
        if note:
            info["backend_note"] = note
        if self.ego_role:
            self._triggered = False
            self._adv_space.seed(int(self.np_random.integers(2**31)))
            if isinstance(self._adversary, _PolicyCaller):
                self._adversary.reset(None if seed is None else int(seed))
        elif self._ego_policy is not None:
            self._ego_policy.reset(None if seed is None else int(seed))
        self.engine.reset_rows(0)
        if self.engine.band_info:
            info["scenario_params"] = self.scenario_params()
            if not self.ego_role:
                info["red_light"] = int(realism.light_state(w)[0])
        return (self._ego_obs() if self.ego_role else w.observation()[0]), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._running:
            raise RuntimeError(f"{self._name}: call reset() before step() (the episode has "
                               "ended or not begun)")  # fmt: skip
        a = _action_list(action, self.action_space, self._name)
        if self.ego_role:
            adv, ego = self._adversary_action().tolist(), a
        else:
            adv, ego = a, (self._ego_control() if self._ego_policy is not None else None)
        E, w = self.engine, self.world
        L = E.learner
        before = w.features()[0] if L is not None and L.learning else None
        r = w.step_one(adv, ego)
        ended = r.terminated or r.truncated
        risk_v, used, sig, S = r.risk, False, r.sigma, r.scene
        if L is not None:
            risk_v, used = L.observe_step_one(before, r.feat, r.risk, r.collision, r.terminated,
                                              ended)  # fmt: skip
        w.add_j_risk(risk_v)
        light_before = realism.light_phase_one(S.t - 1, S.green_from, S.green_until, S.has_light)
        rew, avoid, red = rewards.band_step_one(
            E.band, r.collision, sig, risk_v, True, E.k, rewards.REWARDS_ONE[E.reward], E.bonus,
            r.ttc, S.ego_s + 0.5 * S.L[0], S.route.j_entry, light_before)  # fmt: skip
        info = {
            "reward_vec": np.array([risk_v, sig], dtype=np.float32),
            "risk": risk_v, "risk_source": "phi" if used else "ttc",
            "sigma": sig, "sigma_t": r.sigma_t, "sigma_tp1": sig, "ttc": r.ttc,
            "collision": r.collision, "adversary_collision": r.adversary_collision,
            "cost": float(sig < E.k), "scenario": S.scn, "route_completion": r.completion,
            "ego_speed": S.v[0],
        }  # fmt: skip
        if E.band_info:
            light = realism.light_phase_one(S.t, S.green_from, S.green_until, S.has_light)
            info.update(min_sigma_pre=E.band.min_old, avoidable=avoid, red_light_violation=red,
                        reward=rew, red_light=light)  # fmt: skip
        if ended:
            self._running = False
            info["episode_metrics"] = E.metrics(0)
        if self.ego_role:
            reward = self._ego_reward(r.collision) - self.red_light_penalty * float(red)
            return self._ego_obs(), reward, r.terminated, r.truncated, info
        obs = r.obs if r.obs is not None else w.observation()[0]
        return obs, rew, r.terminated, r.truncated, info

    def close(self) -> None:
        self._close_world()

    def _ego_control(self) -> list[float]:
        eo = self.world.ego_observation()[0]
        u = self._ego_policy(eo, {"scenario": int(self.world.scn[0])})  # type: ignore[misc]
        if u.shape != (2,) or not np.all(np.isfinite(u)):
            raise ValueError(f"{self._name}: the ego policy must return 2 finite numbers "
                             f"[acc, steer], got {u.tolist()}")  # fmt: skip
        return np.clip(u, -1.0, 1.0).tolist()

    def _ego_obs(self) -> np.ndarray:
        o = self.world.ego_observation()[0]
        return np.clip(o, self.observation_space.low, self.observation_space.high)

    def _adversary_action(self) -> np.ndarray:
        obs27 = self.world.observation()[0]
        sc, adv, dim = int(self.world.scn[0]), self._adversary, self._adv_dim
        if adv == "scripted":
            a, self._triggered = self.engine.scenes.scripted(
                obs27, sc, self._triggered, self.scenario_params(), dim)  # fmt: skip
        elif adv == "random":
            a = self._adv_space.sample()
        elif adv == "idle":
            a = np.full(dim, -1.0) if dim == 1 else np.array([-1.0, 0.0])
        else:
            a = adv(obs27, {"scenario": sc})
            if a.shape != (dim,) or not np.all(np.isfinite(a)):
                raise ValueError(f"{self._name}: the adversary policy must return {dim} finite "
                                 f"numbers, got {np.asarray(a).tolist()}")  # fmt: skip
        return np.clip(np.asarray(a, dtype=np.float64), -1.0, 1.0)

    def _ego_reward(self, collision: bool) -> float:
        # safebench/gym_carla/envs/carla_env.py::_get_reward (desired speed 8 m/s, out_lane 4 m)
        w = self.world
        steer = float(w.last_ego_control[0, 1]) / (np.pi / 3)
        v_lon = float(w.v[0, 0] * np.cos(w.yaw[0, 0] + w.beta[0, 0] - w.ego_head[0]))
        r_fast = -1.0 if v_lon > 8.0 else 0.0
        r_out = -1.0 if abs(float(w.ego_lat[0])) > 4.0 else 0.0
        return (-self.collision_penalty * float(collision) + v_lon + 10 * r_fast + r_out
                - 5 * steer**2 - 0.2 * abs(steer) * v_lon**2)  # fmt: skip


ScenePilotAVEnv = ScenePilotEnv  # the ego-driving ids are ScenePilotEnv(role="ego")


# ---------------------------------------------------------------------------- native vector env


class ScenePilotVectorEnv(_Common, VectorEnv):
    """N scenes of one ScenePilot configuration stepped in one batched NumPy call
    (``gym.make_vec("icml26/ScenePilot-v2", num_envs=N)``; adversary role, planner egos).

    ``autoreset_mode`` (declared in ``metadata["autoreset_mode"]``):

    * ``NEXT_STEP`` (Gymnasium's default, and ``gym.make_vec``'s): the step that ends a scene
      returns its last observation and ``info["episode_metrics"]``; the next ``step`` resets it
      (that row's action is ignored, its reward is 0, terminated and truncated False) -- the
      stream a ``SyncVectorEnv`` of single envs gives.
    * ``SAME_STEP`` (the default when the class is built directly, as the agents' training
      loops do): a scene that ends is reset at once; its last observation is in
      ``info["final_obs"]`` (rows where ``info["_final_obs"]``).

    Either way the figures of an ended scene are in ``info["episode_metrics"]`` (a dict of
    arrays, valid where ``info["_episode_metrics"]``), and each scene's sequence of episodes is
    the same (resets draw from one generator in the same order). One risk predictor serves all
    N scenes (as in the release, one per process). Built directly, the class takes the keyword
    arguments of :class:`ScenePilotEnv` (``version`` picks the preset; default v0).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": int(1 / DT),
                "autoreset_mode": AutoresetMode.SAME_STEP}  # fmt: skip
    preset = "v0"  # the version when built directly without ``version``

    def __init__(self, num_envs: int = 1, max_episode_steps: int | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
                 **kwargs: Any) -> None:  # fmt: skip
        name = versions.env_name({"version": kwargs.get("version", self.preset)}) + " vector env"
        count = isinstance(num_envs, (int, np.integer)) and not isinstance(num_envs, bool)
        if not count or num_envs < 1:
            raise ValueError(f"{name}: num_envs must be a positive int, got {num_envs!r}")
        modes = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            mode = None
        if mode not in modes:
            raise ValueError(f"{name}: autoreset_mode must be one of {[m.value for m in modes]}, "
                             f"got {autoreset_mode!r}")  # fmt: skip
        kwargs.setdefault("scenario", "all")
        if max_episode_steps is not None:  # from gym.make_vec's registration (its TimeLimit)
            kwargs["max_steps"] = min(int(kwargs.get("max_steps", 300)), int(max_episode_steps))
        self.engine = E = _Engine(kwargs, int(num_envs), self.preset, " vector env")
        c, self._label = self._setup(E), E.name
        if c["role"] != "adversary" or not isinstance(c["ego"], str) or c["ego"] not in PLANNERS:
            raise ValueError(f"{self._label}: ego must be one of {sorted(PLANNERS)}, "
                             f"got {c['ego']!r}")  # fmt: skip
        self.autoreset_mode, self.num_envs = mode, int(num_envs)
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self._autoreset = np.zeros(0, dtype=bool)
        self.world = E.make_world(c["ego"])
        self.single_action_space = _box(1 if c["action"] == "speed" else 2)
        self.single_observation_space = _obs_space()
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | list[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:  # fmt: skip
        if seed is not None:
            self._rng = np.random.default_rng(seed if isinstance(seed, int) else list(seed))
        idx = np.arange(self.num_envs)
        self.world.reset(idx, self._rng)
        self.engine.reset_rows(idx)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        info = {"scenario": self.world.scn.copy(), "sigma": self.world.sigma_prev.copy()}
        if self.engine.band_info:
            info["red_light"] = realism.light_state(self.world)
        return self.world.observation(), info

    def reset_scenes(self, idx: np.ndarray, rng: np.random.Generator,
                     scenario: np.ndarray | None = None) -> None:  # fmt: skip
        """Start scenes ``idx`` afresh (drawing from ``rng``, on ``scenario`` if given) outside the
        autoreset: the world and the per-scene bookkeeping (band window, sums, Phi's rows)."""
        idx = np.asarray(idx, dtype=np.int64)
        self.world.reset(idx, rng, scenario)
        self.engine.reset_rows(idx)
        if self._autoreset.size == self.num_envs:
            self._autoreset[idx] = False

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        a = _check_action(actions, self.action_space, self._label)
        if self._autoreset.size != self.num_envs:
            raise RuntimeError(f"{self._label}: call reset() before step()")
        E, w, L = self.engine, self.world, self.engine.learner
        resetting, on = self._autoreset, True
        if resetting.any():  # NEXT_STEP: the scenes that ended last step start afresh, unstepped
            idx = np.flatnonzero(resetting)
            w.reset(idx, self._rng)
            E.reset_rows(idx)
            on = ~resetting
        active = None if on is True else on
        before = w.features() if L is not None and L.learning else None
        r = w.step(a, active=active)
        done = r.terminated | r.truncated
        risk_v, used = r.risk, False
        if L is not None:
            risk_v, used = L.observe_step(before, w.feat_prev, r.risk, r.collision, r.terminated,
                                          done, active)  # fmt: skip
            risk_v = risk_v if on is True else np.where(on, risk_v, 0.0)
        w.add_j_risk(risk_v)
        light_before = realism.light_state(w, w.t - 1)
        front, j_in = w.ego_s + 0.5 * w.length[:, 0], TABLES["j_entry"][w.scn]
        rew, avoid, red = rewards.band_step(E.band, r.collision, r.sigma, risk_v, on, E.k,
                                            rewards.REWARDS[E.reward], E.bonus, r.ttc, front, j_in,
                                            light_before)  # fmt: skip
        obs = w.observation()
        info: dict[str, Any] = {
            "reward_vec": np.stack([risk_v, r.sigma], axis=1).astype(np.float32),
            "sigma_t": r.sigma_t.copy(), "sigma_tp1": r.sigma.copy(), "ttc": r.ttc.copy(),
            "collision": r.collision.copy(), "adversary_collision": r.adversary_collision.copy(),
            "cost": (r.sigma < E.k).astype(np.float64), "scenario": w.scn.copy(),
            "risk_source_phi": np.full(self.num_envs, used),
        }  # fmt: skip
        if E.band_info:
            info.update(risk=risk_v, sigma=r.sigma.copy(), min_sigma_pre=E.band.min_old.copy(),
                        avoidable=avoid, red_light=realism.light_state(w),
                        red_light_violation=red)  # fmt: skip
        if done.any():
            idx = np.flatnonzero(done)
            rows = [E.metrics(int(i)) for i in idx]
            em = {k: np.zeros(self.num_envs) for k in rows[0]}
            for i, row in zip(idx, rows):
                for k, v in row.items():
                    em[k][i] = v
            info["episode_metrics"], info["_episode_metrics"] = em, done.copy()
            if self.autoreset_mode == AutoresetMode.SAME_STEP:
                info["final_obs"], info["_final_obs"] = obs.copy(), done.copy()
                w.reset(idx, self._rng)
                E.reset_rows(idx)
                obs = w.observation()
        next_step = self.autoreset_mode == AutoresetMode.NEXT_STEP
        self._autoreset = done.copy() if next_step else np.zeros_like(done)
        return obs, np.asarray(rew, dtype=np.float64), r.terminated.copy(), r.truncated.copy(), info

    def close_extras(self, **kwargs: Any) -> None:
        self._close_world()


def _preset(version: str) -> type[ScenePilotVectorEnv]:
    name = f"ScenePilot{version.upper()}VectorEnv"
    doc = f"ScenePilotVectorEnv(version={version!r})."
    return type(name, (ScenePilotVectorEnv,), {"preset": version, "__doc__": doc})


# names kept for code written against the former per-version classes: the same class, preset
ScenePilotV1VectorEnv, ScenePilotV2VectorEnv = _preset("v1"), _preset("v2")
VECTOR_CLASSES = {"v0": ScenePilotVectorEnv, "v1": ScenePilotV1VectorEnv,
                  "v2": ScenePilotV2VectorEnv}  # fmt: skip


def world_of(n: int, scenario: Any = "all", **kwargs: Any) -> KinematicWorld:
    """The simulator of a configuration (``version`` and keyword arguments as for
    :class:`ScenePilotEnv`) for ``n`` scenes, without an env around it (and without Phi)."""
    engine = _Engine({**kwargs, "scenario": scenario, "phi": "ttc"}, int(n))
    return engine.make_world(engine.config["ego"])


def make_vector_env(num_envs: int = 1,
                    autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                    **kwargs: Any) -> ScenePilotVectorEnv:  # fmt: skip
    """``gym.make_vec("icml26/ScenePilot-vN", num_envs=N)``: the native vector env with
    Gymnasium's default ``autoreset_mode`` (NEXT_STEP); ``autoreset_mode="SameStep"`` for the
    other."""
    cls = VECTOR_CLASSES.get(kwargs.get("version", "v0"), ScenePilotVectorEnv)
    return cls(num_envs=num_envs, autoreset_mode=autoreset_mode, **kwargs)
