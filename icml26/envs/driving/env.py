"""``icml26/ScenePilot-v0`` (the agent is the adversary) and ``icml26/ScenePilotAV-v0`` (the agent is
the ego car), plus the native vector env that steps N scenes in one batched NumPy call."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from icml26.envs._checks import check_render_mode
from icml26.envs.driving.feasibility import FeasibilityParams
from icml26.envs.driving.risk import RiskPredictor
from icml26.envs.driving.scalar import StepOne
from icml26.envs.driving.scenarios import LAYOUTS, scripted_adversary_action
from icml26.envs.driving.sim import (
    DT,
    N_BODIES,
    OBS_PER_ACTOR,
    PLANNERS,
    KinematicWorld,
)

__all__ = [
    "ScenePilotEnv",
    "ScenePilotAVEnv",
    "ScenePilotVectorEnv",
    "make_world",
    "parse_scenarios",
    "driving_score",
    "attack_score",
    "OBS_DIM",
    "BACKENDS",
]

OBS_DIM = N_BODIES * OBS_PER_ACTOR
BACKENDS = ("kinematic", "metadrive", "carla")
_POS, _VEL, _ACC = 1000.0, 25.0, 250.0


def _obs_space() -> spaces.Box:
    per = np.array([_POS, _POS, np.pi, 1.0, 1.0, _VEL, _VEL, _ACC, _ACC], dtype=np.float32)
    high = np.tile(per, N_BODIES)
    return spaces.Box(-high, high, dtype=np.float32)


def _ego_obs_space() -> spaces.Box:
    high = np.array(
        [50.0, np.pi, _VEL, 1.0] + [_POS, _POS, 2 * _VEL, 2 * _VEL] * 2, dtype=np.float32
    )
    return spaces.Box(-high, high, dtype=np.float32)


def parse_scenarios(scenario: Any, who: str = "ScenePilot-v0") -> tuple[int, ...]:
    """``1..8``, a list of them, or ``"all"``/``"mix"`` -> a tuple of scenario ids."""
    if isinstance(scenario, str):
        if scenario.lower() in ("all", "mix"):
            return tuple(sorted(LAYOUTS))
        try:
            scenario = [int(x) for x in scenario.split(",")]
        except ValueError:
            raise ValueError(
                f"{who}: scenario must be 1..8, a list of them or 'all', got {scenario!r}"
            ) from None
    ids = [scenario] if isinstance(scenario, (int, np.integer)) else list(scenario)
    if not ids or any(not isinstance(i, (int, np.integer)) or int(i) not in LAYOUTS for i in ids):
        raise ValueError(f"{who}: scenario must be 1..8, a list of them or 'all', got {scenario!r}")
    return tuple(int(i) for i in ids)


def _feasibility(feasibility: Any) -> FeasibilityParams:
    if feasibility is None:
        return FeasibilityParams()
    if isinstance(feasibility, FeasibilityParams):
        return feasibility
    if isinstance(feasibility, Mapping):
        return FeasibilityParams(**dict(feasibility))
    raise TypeError(
        f"feasibility: expected None, a dict or FeasibilityParams, got {type(feasibility).__name__}"
    )


PHI_MAX_UPDATES = 5000  # phi="online": freeze after this many updates (the release's train_avsafe_steps per route)


def _phi(phi: Any, seed: int = 0) -> RiskPredictor | None:
    """``"ttc"``/None, ``"online"``, a dict of RiskPredictor arguments (online), a RiskPredictor, or a saved path."""
    if phi is None or (isinstance(phi, str) and phi == "ttc"):
        return None
    if isinstance(phi, str) and phi == "online":
        return RiskPredictor(training=True, seed=seed, max_updates=PHI_MAX_UPDATES)
    if isinstance(phi, RiskPredictor):
        return phi
    if isinstance(phi, Mapping):
        kw = {"training": True, "seed": seed, "max_updates": PHI_MAX_UPDATES, **dict(phi)}
        try:
            return RiskPredictor(**kw)
        except TypeError as e:
            raise TypeError(f"phi: a dict must hold RiskPredictor arguments ({e})") from None
    if isinstance(phi, (str, os.PathLike)):
        return RiskPredictor.load(phi, training=False)
    raise TypeError(
        f"phi: expected 'online', 'ttc', a dict of RiskPredictor arguments, a RiskPredictor or a path "
        f"to a saved one, got {phi!r}"
    )


def make_world(
    n: int,
    scenarios: tuple[int, ...],
    action_mode: str,
    planner: str,
    feasibility: FeasibilityParams,
    phi: RiskPredictor | None,
    max_steps: int,
    backend: str,
    backend_kwargs: Mapping[str, Any],
    ego_residual: bool = False,
) -> KinematicWorld:
    """Build the simulator of ``backend`` (``kinematic``, ``metadrive`` or ``carla``)."""
    if backend == "kinematic":
        return KinematicWorld(
            n, scenarios, action_mode, planner, feasibility, phi, max_steps, ego_residual
        )
    if backend == "metadrive":
        from icml26.envs.driving.backends.metadrive_backend import MetaDriveWorld

        return MetaDriveWorld(
            n,
            scenarios,
            action_mode,
            planner,
            feasibility,
            phi,
            max_steps,
            ego_residual,
            **dict(backend_kwargs),
        )
    if backend == "carla":
        from icml26.envs.driving.backends.carla_backend import CarlaWorld

        return CarlaWorld(
            n,
            scenarios,
            action_mode,
            planner,
            feasibility,
            phi,
            max_steps,
            ego_residual,
            **dict(backend_kwargs),
        )
    raise ValueError(f"ScenePilot: backend must be one of {BACKENDS}, got {backend!r}")


class _PolicyCaller:
    """Calls an ego or adversary policy: an icml26 Agent (``act``), an SB3 model (``predict``) or a callable."""

    def __init__(self, policy: Any, what: str) -> None:
        if not (
            callable(getattr(policy, "act", None))
            or callable(getattr(policy, "predict", None))
            or callable(policy)
        ):
            raise TypeError(
                f"{what}: expected an Agent (act), an SB3 model (predict) or a callable, got {policy!r}"
            )
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


def _check_action(action: Any, space: spaces.Box, who: str) -> list[float]:
    """The action as a list of floats in [-1, 1] (clipped by 1e-6), or a clear error (state untouched)."""
    if type(action) is np.ndarray and action.shape == space.shape and action.dtype.kind == "f":
        vals = action.tolist()  # fast path: a float array of the right shape
        if all(-1.000001 <= v <= 1.000001 for v in vals):  # False for NaN
            return [-1.0 if v < -1.0 else (1.0 if v > 1.0 else v) for v in vals]
    try:
        a = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: expected an action in {space}, got {action!r}") from None
    if a.shape != space.shape:
        raise ValueError(
            f"{who}: expected an action of shape {space.shape} in {space}, got shape {a.shape}"
        )
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{who}: action must be finite, got {a.tolist()}")
    if np.any(a < space.low - 1e-6) or np.any(a > space.high + 1e-6):
        raise ValueError(f"{who}: action must lie in [-1, 1], got {a.tolist()}")
    return np.clip(a, space.low, space.high).tolist()


# ---------------------------------------------------------------------------- metrics over episodes


def driving_score(episodes: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """ScenePilot's overall driving score over episodes (``safebench/util/metric_util.get_route_scores``).

    final = [5(1 - CR) + (3 - RR - SS - OR/50) + 0.5(RF + Comp + 1 - TS/60)
             + 0.2(3 - ACC/8 - YV/3 - LI/20)] / 10.1
    """
    if not episodes:
        raise ValueError("driving_score: no episodes")
    n = len(episodes)
    cr = sum(e["collision"] for e in episodes) / n
    rr = sum(e["run_red_light"] for e in episodes) / n
    ss = sum(e["run_stop"] for e in episodes) / n
    orl = sum(e["out_of_road_length"] for e in episodes) / n
    comp = sum(e["route_completion"] for e in episodes) / n
    succ = [e for e in episodes if e["route_completion"] >= 0.99 and not e["collision"]]
    ts = sum(e["time"] for e in succ) / len(succ) if succ else 0.0
    rf = max(1 - sum(e["distance_to_route"] for e in episodes) / n / 5, 0.0)
    acc = sum(e["avg_acceleration"] for e in episodes) / n
    yv = sum(e["avg_yaw_velocity"] for e in episodes) / n
    li = sum(e["lane_invasions"] for e in episodes) / n
    final = (
        (1 - cr) * 5
        + (3 - rr - ss - orl / 50)
        + (rf + comp + 1 - ts / 60) * 0.5
        + (3 - acc / 8 - yv / 3 - li / 20) * 0.2
    ) / 10.1
    return {
        "collision_rate": cr,
        "red_light_rate": rr,
        "stop_sign_rate": ss,
        "out_of_road_length": orl,
        "route_following_stability": rf,
        "route_completion": comp,
        "avg_time_spent": ts,
        "avg_acceleration": acc,
        "avg_yaw_velocity": yv,
        "avg_lane_invasion_freq": li,
        "driving_score": final,
    }


def attack_score(episodes: Sequence[Mapping[str, float]], time_out: float = 30.0) -> float:
    """SafeBench's original attack score (higher = more failures): 0.4 CR + 0.1 OR/10 + 0.1 d_route/5
    + 0.3 (1 - completion) + 0.1 time/time_out (SafeBench's values are rounded to 2 decimals; these are not)."""
    if not episodes:
        raise ValueError("attack_score: no episodes")
    n = len(episodes)
    cr = sum(e["collision"] for e in episodes) / n
    orl = sum(e["out_of_road_length"] for e in episodes) / n
    dr = sum(e["distance_to_route"] for e in episodes) / n
    comp = sum(e["route_completion"] for e in episodes) / n
    t = sum(e["time"] for e in episodes) / n
    return 0.4 * cr + 0.1 * orl / 10 + 0.1 * dr / 5 + 0.3 * (1 - comp) + 0.1 * t / time_out


# ---------------------------------------------------------------------------- the adversary env


class ScenePilotEnv(gym.Env):
    """
    ## Description
    ScenePilot adversarial driving (ICML 2026): the agent controls the adversary (a walker,
    cyclist or car) in one of the 8 SafeBench pre-crash scenarios; the ego car is driven by a
    planner under test. The adversary is rewarded for AV risk (Phi, or the TTC proxy before Phi is
    trained) and judged by the physical feasibility sigma of what it makes the ego face.

    ## Action Space
    ``Box(-1, 1, (1,))`` by default: the adversary's target speed ``base + scale * a``
    (walker 1 + 2a, cyclist and crossing/oncoming cars 5 + 5a, scenario 3's lead car 4a after it
    has moved 5 m; negative speeds clip to 0). ``action="acc_steer"``: ``Box(-1, 1, (2,))`` =
    [acc * 3 m/s^2, steer * 0.2 rad] (ScenePilot's 2-D variant). NaN, wrong shapes and values
    outside [-1, 1] raise an error naming the expected space, and leave the state unchanged.

    ## Observation Space
    ``Box((27,))``: 9 numbers per actor, ego first, then the adversary, then the other actor
    (zeros if none): ``[x, y, yaw, cos, sin, vx, vy, ax, ay]`` in the ego's start frame.

    ## Rewards
    The risk objective: ``Phi(s')`` once the risk predictor is ready, else ``2 / (1 + TTC / 2.5)``
    (0 when not closing). ``info`` carries ``reward_vec = [risk, sigma]``, ``sigma_t``,
    ``sigma_tp1``, ``ttc``, ``collision``, ``adversary_collision``, ``cost`` =
    ``1[sigma_{t+1} < feasibility_threshold]``, ``risk``, ``risk_source`` (``"phi"``/``"ttc"``),
    ``scenario``, ``route_completion`` and ``ego_speed``.

    ## Starting State
    The scenario's layout (drawn uniformly from ``scenario`` when several;
    ``reset(options={"scenario": k})`` picks one), every actor at rest, spawn positions jittered by
    up to 1 m along their headings.

    ## Episode End
    Terminated on an ego collision or route completion (> 99% and within 10 m of the end);
    truncated after ``max_steps`` (300 x 0.1 s) or when the ego drove farther than the scenario's
    maximum. Off-road never ends an episode. ``info["episode_metrics"]`` then holds the episode's
    figures (collision, route completion, out-of-road length, distance to route, lane invasions,
    acceleration, yaw rate, time, J_risk, J_sigma, feasible_ratio, min TTC). ``step`` before
    ``reset`` or after the episode ended raises ``RuntimeError``.

    ## Arguments
    ``scenario`` (1..8, list, ``"all"``), ``ego`` (``"idm"``, ``"cautious"``, an Agent, an SB3
    model or a callable on the 12-number ego observation returning [acc, steer] in [-1, 1]),
    ``action`` (``"speed"`` or ``"acc_steer"``), ``backend`` (``"kinematic"``, ``"metadrive"``,
    ``"carla"``), ``backend_kwargs``, ``phi`` (``"online"``, ``"ttc"``, a RiskPredictor or a saved
    path), ``feasibility`` (FeasibilityParams or dict; ``{"mode": "rss"}`` for full RSS),
    ``feasibility_threshold`` (0), ``max_steps`` (300), ``render_mode`` (``"rgb_array"``).
    ``phi`` may also be a dict of RiskPredictor arguments, e.g. ``{"max_updates": n}``.

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/ScenePilot-v0", scenario=1)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.array([0.5], dtype=np.float32))
    >>> print(obs.shape, round(float(reward), 4), info["risk_source"], info["sigma_tp1"], terminated)
    (27,) 0.0211 ttc 1.0 False
    """

    metadata = {
        "render_modes": ["rgb_array"],
        "render_fps": int(1 / DT),
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }
    _name = "ScenePilot-v0"

    def __init__(
        self,
        scenario: Any = 1,
        ego: Any = "idm",
        action: str = "speed",
        backend: str = "kinematic",
        backend_kwargs: Mapping[str, Any] | None = None,
        phi: Any = "online",
        feasibility: Any = None,
        feasibility_threshold: float = 0.0,
        max_steps: int = 300,
        render_mode: str | None = None,
    ) -> None:
        check_render_mode(self._name, render_mode, self.metadata["render_modes"])
        if action not in ("speed", "acc_steer"):
            raise ValueError(f"{self._name}: action must be 'speed' or 'acc_steer', got {action!r}")
        if backend not in BACKENDS:
            raise ValueError(f"{self._name}: backend must be one of {BACKENDS}, got {backend!r}")
        self.render_mode = render_mode
        self.scenarios = parse_scenarios(scenario, self._name)
        self.action_mode = action
        self.backend = backend
        self.feasibility_threshold = float(feasibility_threshold)
        if isinstance(ego, str):
            if ego not in PLANNERS:
                raise ValueError(
                    f"{self._name}: ego must be one of {sorted(PLANNERS)} or a policy, got {ego!r}"
                )
            planner, self._ego_policy = ego, None
        else:
            planner, self._ego_policy = "external", _PolicyCaller(ego, f"{self._name} ego")
        self.ego_name = ego if isinstance(ego, str) else type(ego).__name__
        self.world = make_world(
            1,
            self.scenarios,
            action,
            planner,
            _feasibility(feasibility),
            _phi(phi),
            int(max_steps),
            backend,
            backend_kwargs or {},
        )
        self.world.k_feasible = self.feasibility_threshold
        self.phi = self.world.phi
        self.action_space = spaces.Box(
            -1.0, 1.0, shape=(1 if action == "speed" else 2,), dtype=np.float32
        )
        self.observation_space = _obs_space()
        self._viewer: Any = None
        self._running = False  # between reset() and the end of an episode

    def _check_running(self) -> None:
        if not self._running:
            raise RuntimeError(
                f"{self._name}: call reset() before step() (the episode has ended or not begun)"
            )

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        scenario = None
        if options and "scenario" in options:
            scenario = np.array(parse_scenarios(options["scenario"], self._name)[:1])
        self.world.reset(np.arange(1), self.np_random, scenario)
        self._running = True
        if self._ego_policy is not None:
            self._ego_policy.reset(None if seed is None else int(seed))
        return self.world.observation()[0], self._reset_info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._check_running()
        a = _check_action(action, self.action_space, self._name)
        ego = None
        if self._ego_policy is not None:
            ego = self._ego_control()
        r = self.world.step_one(a, ego)
        obs = r.obs if r.obs is not None else self.world.observation()[0]
        info = self._step_info(r)
        if r.terminated or r.truncated:
            self._running = False
            info["episode_metrics"] = self.world.episode_metrics(0)
        return obs, float(r.risk), r.terminated, r.truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        from icml26.envs.driving.render import render_topdown

        return render_topdown(self.world, 0)

    def close(self) -> None:
        close = getattr(self.world, "close", None)
        if callable(close):
            close()

    # ------------------------------------------------------------------ helpers
    def _ego_control(self) -> list[float]:
        eo = self.world.ego_observation()[0]
        u = self._ego_policy(eo, {"scenario": int(self.world.scn[0])})
        if u.shape != (2,) or not np.all(np.isfinite(u)):
            raise ValueError(
                f"{self._name}: the ego policy must return 2 finite numbers [acc, steer], got {u.tolist()}"
            )
        return np.clip(u, -1.0, 1.0).tolist()

    def _reset_info(self) -> dict[str, Any]:
        w = self.world
        info = {
            "scenario": int(w.scn[0]),
            "sigma": float(w.sigma_prev[0]),
            "ego_planner": str(self.ego_name),
            "backend": self.backend,
        }
        note = getattr(w, "backend_note", None)
        if note:
            info["backend_note"] = note
        return info

    def _step_info(self, r: StepOne) -> dict[str, Any]:
        sig = r.sigma
        return {
            "reward_vec": np.array([r.risk, sig], dtype=np.float32),
            "risk": r.risk,
            "risk_source": "phi" if r.phi_used else "ttc",
            "sigma": sig,
            "sigma_t": r.sigma_t,
            "sigma_tp1": sig,
            "ttc": r.ttc,
            "collision": r.collision,
            "adversary_collision": r.adversary_collision,
            "cost": float(sig < self.feasibility_threshold),
            "scenario": int(self.world.scn[0]),
            "route_completion": r.completion,
            "ego_speed": float(self.world.v[0, 0]),
        }

    def save_phi(self, path: str | os.PathLike[str]) -> None:
        """Save the env's risk predictor Phi (see :class:`RiskPredictor`)."""
        if self.phi is None:
            raise RuntimeError(f"{self._name}: phi='ttc' has no risk predictor to save")
        self.phi.save(path)


# ---------------------------------------------------------------------------- the ego env


def _make_adversary(adversary: Any, action_dim: int) -> Any:
    """'scripted' | 'random' | 'idle' | a saved ScenePilot policy path | Agent / SB3 model / callable."""
    if isinstance(adversary, str) and adversary in ("scripted", "random", "idle"):
        return adversary
    if isinstance(adversary, (str, os.PathLike)):
        from icml26.envs.driving.policy_io import load_policy

        return _PolicyCaller(load_policy(adversary), "ScenePilotAV-v0 adversary")
    return _PolicyCaller(adversary, "ScenePilotAV-v0 adversary")


class ScenePilotAVEnv(ScenePilotEnv):
    """
    ## Description
    The adversarial fine-tuning setting of ScenePilot: the agent drives the ego car through the
    8 SafeBench scenarios while an adversary policy (a trained ScenePilot adversary, the scripted
    SafeBench behaviour, random, or any policy) controls the other actor.

    ## Action Space
    ``Box(-1, 1, (2,))``: [acc * 3 m/s^2, steer * 0.3 rad] (SafeBench's RL planners). With
    ``base_planner="idm"`` or ``"cautious"`` the action is a residual added to that planner's
    control (so the zero action drives like the planner).

    ## Observation Space
    ``Box((12,))``: SafeBench's 4-number ego state [lateral distance to the route, -yaw error,
    speed, vehicle in front] followed by (dx, dy, dvx, dvy) of the adversary and of the other
    actor in the ego frame (dx = 100, rest 0 when absent).

    ## Rewards
    SafeBench's ego reward (``carla_env._get_reward``): ``-collision_penalty * collision + v_lon
    - 10 [v_lon > 8] - [|lateral| > 4] - 5 steer^2 - 0.2 |steer| v_lon^2`` (steer normalized).

    ## Starting State / Episode End
    As ``ScenePilot-v0``; ``info`` also carries the adversary-side figures (sigma, risk).

    ## Arguments
    ``adversary`` (``"scripted"``, ``"random"``, ``"idle"``, a path saved by the ScenePilot agent,
    an Agent, SB3 model or callable on the 27-number observation), ``adversary_action``
    (``"speed"``/``"acc_steer"``), ``base_planner`` (None, ``"idm"``, ``"cautious"``),
    ``collision_penalty`` (SafeBench: 1), and the ``ScenePilot-v0`` arguments.

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/ScenePilotAV-v0", scenario=5, base_planner="idm")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros(2, dtype=np.float32))
    >>> print(obs.shape, round(float(reward), 4), terminated)
    (12,) 0.3 False
    """

    _name = "ScenePilotAV-v0"

    def __init__(
        self,
        scenario: Any = 1,
        adversary: Any = "scripted",
        adversary_action: str = "speed",
        base_planner: str | None = None,
        backend: str = "kinematic",
        backend_kwargs: Mapping[str, Any] | None = None,
        phi: Any = "ttc",
        feasibility: Any = None,
        feasibility_threshold: float = 0.0,
        collision_penalty: float = 1.0,
        max_steps: int = 300,
        render_mode: str | None = None,
    ) -> None:
        if base_planner is not None and base_planner not in PLANNERS:
            raise ValueError(
                f"{self._name}: base_planner must be None or one of {sorted(PLANNERS)}, got {base_planner!r}"
            )
        super().__init__(
            scenario=scenario,
            ego="idm",
            action=adversary_action,
            backend=backend,
            backend_kwargs=backend_kwargs,
            phi=phi,
            feasibility=feasibility,
            feasibility_threshold=feasibility_threshold,
            max_steps=max_steps,
            render_mode=render_mode,
        )
        self.base_planner = base_planner
        w = self.world
        w.external_ego = True
        w.ego_residual = base_planner is not None
        if base_planner is not None:
            w.planner = PLANNERS[base_planner]
        self.ego_name = f"agent+{base_planner}" if base_planner else "agent"
        self.collision_penalty = float(collision_penalty)
        self._adv_dim = 1 if adversary_action == "speed" else 2
        self._adversary = _make_adversary(adversary, self._adv_dim)
        self._adv_space = spaces.Box(-1.0, 1.0, shape=(self._adv_dim,), dtype=np.float32)
        self._triggered = False
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.observation_space = _ego_obs_space()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        _, info = super().reset(seed=seed, options=options)
        self._triggered = False
        self._adv_space.seed(int(self.np_random.integers(2**31)))
        if isinstance(self._adversary, _PolicyCaller):
            self._adversary.reset(None if seed is None else int(seed))
        return self._ego_obs(), info

    def _ego_obs(self) -> np.ndarray:
        o = self.world.ego_observation()[0]
        return np.clip(o, self.observation_space.low, self.observation_space.high)

    def _adversary_action(self) -> np.ndarray:
        obs27 = self.world.observation()[0]
        sc = int(self.world.scn[0])
        adv = self._adversary
        if adv == "scripted":
            a, self._triggered = scripted_adversary_action(
                obs27, sc, self._triggered, self._adv_dim
            )
        elif adv == "random":
            a = self._adv_space.sample()
        elif adv == "idle":
            a = np.full(self._adv_dim, -1.0) if self._adv_dim == 1 else np.array([-1.0, 0.0])
        else:
            a = adv(obs27, {"scenario": sc})
            if a.shape != (self._adv_dim,) or not np.all(np.isfinite(a)):
                raise ValueError(
                    f"{self._name}: the adversary policy must return {self._adv_dim} finite numbers, "
                    f"got {np.asarray(a).tolist()}"
                )
        return np.clip(np.asarray(a, dtype=np.float64), -1.0, 1.0)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._check_running()
        u = _check_action(action, self.action_space, self._name)
        adv = self._adversary_action()
        r = self.world.step_one(adv.tolist(), u)
        info = self._step_info(r)
        if r.terminated or r.truncated:
            self._running = False
            info["episode_metrics"] = self.world.episode_metrics(0)
        return self._ego_obs(), self._ego_reward(r.collision), r.terminated, r.truncated, info

    def _ego_reward(self, collision: bool) -> float:
        # safebench/gym_carla/envs/carla_env.py::_get_reward (desired speed 8 m/s, out_lane_thres 4 m)
        w = self.world
        steer = float(w.last_ego_control[0, 1]) / (np.pi / 3)
        v_lon = float(w.v[0, 0] * np.cos(w.yaw[0, 0] + w.beta[0, 0] - w.ego_head[0]))
        r_fast = -1.0 if v_lon > 8.0 else 0.0
        r_out = -1.0 if abs(float(w.ego_lat[0])) > 4.0 else 0.0
        return (
            -self.collision_penalty * float(collision)
            + v_lon
            + 10 * r_fast
            + r_out
            - 5 * steer**2
            - 0.2 * abs(steer) * v_lon**2
        )


# ---------------------------------------------------------------------------- native vector env


class ScenePilotVectorEnv(VectorEnv):
    """N ``ScenePilot-v0`` scenes stepped in one batched NumPy call (``gym.make_vec(..., num_envs=N)``).

    ``autoreset_mode`` (declared in ``metadata["autoreset_mode"]``):

    * ``NEXT_STEP`` (Gymnasium's default, and ``gym.make_vec``'s): the step that ends a scene
      returns its last observation and ``info["episode_metrics"]``; the next ``step`` resets it
      (that row's action is ignored, its reward is 0, terminated and truncated False) -- the
      stream a ``SyncVectorEnv`` of single ``ScenePilot-v0`` envs gives.
    * ``SAME_STEP`` (the default when the class is built directly, as the agents' training
      loops do): a scene that ends is reset at once; its last observation is in
      ``info["final_obs"]`` (rows where ``info["_final_obs"]``).

    Either way the figures of an ended scene are in ``info["episode_metrics"]`` (a dict of
    arrays, valid where ``info["_episode_metrics"]``), and each scene's sequence of episodes is
    the same (resets draw from one generator in the same order). The risk predictor Phi is
    shared by all N scenes (as in the release, one per process); with ``phi="online"`` the two
    modes feed its training batches in a different order.
    """

    metadata = {
        "render_modes": ["rgb_array"],
        "render_fps": int(1 / DT),
        "autoreset_mode": AutoresetMode.SAME_STEP,
    }

    def __init__(
        self,
        num_envs: int = 1,
        scenario: Any = "all",
        ego: str = "idm",
        action: str = "speed",
        backend: str = "kinematic",
        backend_kwargs: Mapping[str, Any] | None = None,
        phi: Any = "online",
        feasibility: Any = None,
        feasibility_threshold: float = 0.0,
        max_steps: int = 300,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        **ignored: Any,
    ) -> None:
        if (
            max_episode_steps is not None
        ):  # passed by gym.make_vec from the registration (its TimeLimit)
            max_steps = min(
                int(max_steps), int(max_episode_steps)
            )  # as gym.make's TimeLimit over max_steps
        modes = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            mode = None
        if mode not in modes:
            raise ValueError(
                f"ScenePilot-v0 vector env: autoreset_mode must be one of "
                f"{[m.value for m in modes]}, got {autoreset_mode!r}"
            )
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self._autoreset = np.zeros(0, dtype=bool)
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(
                f"ScenePilot-v0 vector env: num_envs must be a positive int, got {num_envs!r}"
            )
        if not isinstance(ego, str) or ego not in PLANNERS:
            raise ValueError(
                f"ScenePilot-v0 vector env: ego must be one of {sorted(PLANNERS)}, got {ego!r}"
            )
        if action not in ("speed", "acc_steer"):
            raise ValueError(
                f"ScenePilot-v0 vector env: action must be 'speed' or 'acc_steer', got {action!r}"
            )
        if ignored:
            raise TypeError(f"ScenePilot-v0 vector env: unknown arguments {sorted(ignored)}")
        self.num_envs = int(num_envs)
        self.scenarios = parse_scenarios(scenario)
        self.render_mode = render_mode
        self.feasibility_threshold = float(feasibility_threshold)
        self.world = make_world(
            self.num_envs,
            self.scenarios,
            action,
            ego,
            _feasibility(feasibility),
            _phi(phi),
            int(max_steps),
            backend,
            backend_kwargs or {},
        )
        self.world.k_feasible = self.feasibility_threshold
        self.phi = self.world.phi
        self.single_action_space = spaces.Box(
            -1.0, 1.0, shape=(1 if action == "speed" else 2,), dtype=np.float32
        )
        self.single_observation_space = _obs_space()
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._rng = np.random.default_rng()

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed if isinstance(seed, int) else list(seed))
        self.world.reset(np.arange(self.num_envs), self._rng)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        return self.world.observation(), {
            "scenario": self.world.scn.copy(),
            "sigma": self.world.sigma_prev.copy(),
        }

    _label = "ScenePilot-v0 vector env"  # names the env in the errors of _check_actions

    def _check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as a float array of the action space's shape, finite and in [-1, 1]."""
        space, name = self.action_space, self._label
        try:
            a = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: expected actions in {space}, got {actions!r}") from None
        if a.shape != space.shape:
            raise ValueError(f"{name}: expected actions of shape {space.shape}, got {a.shape}")
        if not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1.0 + 1e-6):
            raise ValueError(f"{name}: actions must be finite and in [-1, 1]")
        if self._autoreset.size != self.num_envs:
            raise RuntimeError(f"{name}: call reset() before step()")
        return a

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        a = self._check_actions(actions)
        w = self.world
        resetting = self._autoreset
        active = None
        if resetting.any():  # NEXT_STEP: the scenes that ended last step start afresh, unstepped
            w.reset(np.flatnonzero(resetting), self._rng)
            active = ~resetting
        r = w.step(np.clip(a, -1.0, 1.0), active=active)
        obs = w.observation()
        done = r.terminated | r.truncated
        info: dict[str, Any] = {
            "reward_vec": np.stack([r.risk, r.sigma], axis=1).astype(np.float32),
            "sigma_t": r.sigma_t.copy(),
            "sigma_tp1": r.sigma.copy(),
            "ttc": r.ttc.copy(),
            "collision": r.collision.copy(),
            "adversary_collision": r.adversary_collision.copy(),
            "cost": (r.sigma < self.feasibility_threshold).astype(np.float64),
            "scenario": w.scn.copy(),
            "risk_source_phi": np.full(self.num_envs, r.phi_used),
        }
        if done.any():
            idx = np.flatnonzero(done)
            rows = [w.episode_metrics(int(i)) for i in idx]
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
                obs = w.observation()
        self._autoreset = (
            done.copy() if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.zeros_like(done)
        )
        return obs, r.risk.astype(np.float64), r.terminated.copy(), r.truncated.copy(), info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        from icml26.envs.driving.render import render_topdown

        return render_topdown(self.world, 0)

    def close_extras(self, **kwargs: Any) -> None:
        close = getattr(self.world, "close", None)
        if callable(close):
            close()


def make_vector_env(
    num_envs: int = 1, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP, **kwargs: Any
) -> ScenePilotVectorEnv:
    """``gym.make_vec("icml26/ScenePilot-v0", num_envs=N)``: the native vector env with Gymnasium's
    default ``autoreset_mode`` (NEXT_STEP); pass ``autoreset_mode="SameStep"`` for the other."""
    return ScenePilotVectorEnv(num_envs=num_envs, autoreset_mode=autoreset_mode, **kwargs)
