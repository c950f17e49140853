"""The ScenePilot-v1 protocol of the release, per scenario: Phi phase, adversary phase, evaluation.

1. **Phi phase** (:func:`phi_phase`): collect states of the v1 world with random, held-random and
   scripted adversaries, label "ego collision within the next 2 s", train Phi to convergence on
   training episodes (early stopping on validation episodes), freeze it; its AUROC on a separate
   set of held-out episodes is reported.
2. **Adversary phase** (:func:`train_adversary`): one policy per scenario (the release trains per
   route; ``scenario="all"`` gives the mixed one) with Phi frozen, the k curriculum walked once
   with equal spacing (the release: 100 updates per k; here ``updates_per_k`` updates).
3. **Evaluation** (:func:`evaluate`): ``episodes`` distinct randomized episodes of one scenario in
   lock-step, one per scene, the same initial states for every adversary at the same seed (paired);
   per episode: collision, the pre-collision minimum sigma, the boundary-band flag (collision with
   pre-collision min sigma >= k), red-light violation, route completion.

The v1 env (``icml26.envs.driving.env_v1``) is used when present; the v0 vector env otherwise
(the same protocol on the v0 world: fixed scenarios, released sigma, no lights).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from icml26.protocol import Budget

__all__ = [
    "ENV_VERSIONS",
    "set_env_version",
    "env_version",
    "vector_class",
    "have_v1",
    "make_vector",
    "phi_phase",
    "train_adversary",
    "evaluate",
    "batched_policy",
    "PHASE_DEFAULTS",
]

PHASE_DEFAULTS: dict[str, Any] = {
    "phi_episodes": 150,  # training + validation episodes of the Phi phase
    "phi_test_episodes": 60,  # held-out episodes for the reported AUROC
    "num_envs": 16,
    "rollout_steps": 16,  # 256 steps per PPO update
    "updates_per_k": 8,  # the release: 100 (thresh_update_every); 8 k values -> 64 updates
}


# env version -> (module, vector env class, world factory, gym id of the single env)
ENV_VERSIONS: dict[str, tuple[str, str, str, str]] = {
    "v1": (
        "icml26.envs.driving.env_v1",
        "ScenePilotV1VectorEnv",
        "make_world_v1",
        "icml26/ScenePilot-v1",
    ),
    "v2": (
        "icml26.envs.driving.env_v2",
        "ScenePilotV2VectorEnv",
        "make_world_v2",
        "icml26/ScenePilot-v2",
    ),
}
_ENV = {"version": "v1"}


def set_env_version(version: str) -> None:
    """Select the ScenePilot version (``"v1"`` or ``"v2"``) the pipeline builds its envs from."""
    if version not in ENV_VERSIONS:
        raise ValueError(
            f"set_env_version: version must be one of {sorted(ENV_VERSIONS)}, got {version!r}"
        )
    _ENV["version"] = version


def env_version() -> str:
    """The ScenePilot version in use (see :func:`set_env_version`)."""
    return _ENV["version"]


def _env_attr(index: int) -> Any:
    import importlib

    spec = ENV_VERSIONS[_ENV["version"]]
    return getattr(importlib.import_module(spec[0]), spec[index])


def vector_class() -> Any:
    """The native vector env class of the selected version."""
    return _env_attr(1)


def have_v1() -> bool:
    """True when the selected ScenePilot version's env module (v1 or later) is importable."""
    try:
        _env_attr(1)
    except (ImportError, AttributeError):
        return False
    return True


def make_vector(n: int, scenario: Any, planner: str, phi: Any = "ttc", **kw: Any) -> Any:
    """The native vector env of the selected version (v0 when absent), SAME_STEP autoreset."""
    if have_v1():
        return vector_class()(num_envs=n, scenario=scenario, ego=planner, phi=phi, **kw)
    from icml26.envs.driving.env import ScenePilotVectorEnv

    kw = {
        k: v for k, v in kw.items() if k not in ("reward", "sigma", "randomize", "traffic_lights")
    }
    return ScenePilotVectorEnv(num_envs=n, scenario=scenario, ego=planner, phi=phi, **kw)


def _world_factory(planner: str, sigma: str) -> Callable[[int, tuple[int, ...]], Any] | None:
    if not have_v1():
        return None
    make_world = _env_attr(2)
    if env_version() != "v1":  # later versions carry their own sigma default
        return lambda n, scen: make_world(n, scen, ego=planner)
    return lambda n, scen: make_world(n, scen, ego=planner, sigma=sigma)


def phi_phase(
    scenario: int, planner: str, seed: int, episodes: int, test_episodes: int, sigma: str = "rss"
) -> tuple[Any, dict[str, Any]]:
    """Phi's own phase: data, training to convergence, freeze; the report holds the held-out AUROC."""
    from icml26.agents.driving.phi_pretrain import collect_phi_dataset, train_phi

    make = _world_factory(planner, sigma)
    train = collect_phi_dataset([scenario], planner, episodes, seed=seed, world_factory=make)
    test = collect_phi_dataset(
        [scenario], planner, test_episodes, seed=seed + 7919, world_factory=make
    )
    phi, rep = train_phi(train, test, seed=seed, max_epochs=80)
    rep["collisions_in_data"] = train.collisions
    rep.pop("val_loss_curve", None)
    return phi, rep


def train_adversary(
    scenario: Any,
    planner: str,
    phi: Any,
    seed: int,
    risk_only: bool = False,
    updates_per_k: int = 8,
    num_envs: int = 16,
    rollout_steps: int = 16,
    env_kwargs: Mapping[str, Any] | None = None,
    **agent_kwargs: Any,
) -> tuple[Any, dict[str, Any]]:
    """Train one ScenePilot (or risk-only PPO) adversary on ``scenario`` with Phi frozen."""
    from icml26.agents.driving.scenepilot import ScenePilotAgent

    agent = ScenePilotAgent(  # the release's hyperparameters; one minibatch = the whole rollout
        num_envs=num_envs,
        rollout_steps=rollout_steps,
        minibatch_size=num_envs * rollout_steps,
        k_update_every=updates_per_k,
        k_cycle=False,
        risk_only=risk_only,
        **agent_kwargs,
    )
    agent.reset(seed)
    venv = make_vector(num_envs, scenario, planner, phi=phi, **dict(env_kwargs or {}))
    n_updates = updates_per_k * len(agent.args.k_values)
    stats = agent.learn(venv, Budget(env_steps=n_updates * num_envs * rollout_steps))
    venv.close()
    return agent, stats


# ---------------------------------------------------------------------------- batched policies


class _Random:
    def __init__(self, seed: int, dim: int = 1) -> None:
        self.rng, self.dim = np.random.default_rng(seed), dim

    def start(self, n: int, scenario: int) -> None:
        self.n = n

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.uniform(-1.0, 1.0, size=(len(obs), self.dim)).astype(np.float32)


class _Triggered:
    """Scripted (SafeBench's nominal trigger and speed) or LC (its learned mean parameters)."""

    def __init__(self, z: np.ndarray | None = None, dim: int = 1) -> None:
        self.z, self.dim = z, dim

    def start(self, n: int, scenario: int) -> None:
        from icml26.envs.driving.scenarios import LAYOUTS

        self.scen = np.full(n, scenario)
        self.trig = np.zeros(n, bool)
        if self.z is None:  # scripted: the nominal trigger distance and action
            lay = LAYOUTS[scenario]
            d = max(lay.trigger_distance, 1e-3)
            z0 = -np.log(80.0 / d - 1.0) if d < 80.0 else 10.0
            z1 = np.arctanh(np.clip(lay.scripted_action, -0.999999, 0.999999))
            self.zz = np.tile([z0, z1], (n, 1))
        else:
            self.zz = np.tile(self.z[scenario], (n, 1))

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        from icml26.agents.driving.baselines import LCAgent

        a, self.trig = LCAgent._actions(obs, self.scen, self.zz, self.trig, self.dim)
        return a


class _PerScene:
    """A per-scene scripted behaviour ``fn(obs27, scenario, triggered, params, action_dim) ->
    (action, triggered)`` (as ``scripted_adversary_v1``) run over the N scenes of a vector env,
    with each scene's drawn parameters (``world.rparams``)."""

    def __init__(self, fn: Callable[..., Any], dim: int = 2) -> None:
        self.fn, self.dim = fn, dim
        self.world: Any = None

    def bind_env(self, venv: Any) -> None:
        self.world = venv.world

    def start(self, n: int, scenario: int) -> None:
        self.trig = np.zeros(n, bool)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if self.world is None:
            raise RuntimeError("_PerScene: bind_env(venv) must be called before acting")
        rp = getattr(self.world, "rparams", None) or {}
        self.trig &= np.asarray(self.world.t) > 0  # a scene that was reset starts untriggered
        out = np.zeros((len(obs), self.dim), np.float32)
        for i in range(len(obs)):
            params = {k: float(v[i]) for k, v in rp.items()}
            a, self.trig[i] = self.fn(
                obs[i], int(self.world.scn[i]), bool(self.trig[i]), params, self.dim
            )
            out[i] = np.asarray(a, np.float32).reshape(-1)
        return out


class _Actor:
    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def start(self, n: int, scenario: int) -> None:
        pass

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.asarray(self.agent.act(obs), np.float32).reshape(len(obs), -1)


def batched_policy(kind: str, agent: Any = None, seed: int = 0, dim: int = 1) -> Any:
    """``random``, ``scripted``, ``lc`` (an LCAgent), ``actor`` (a ScenePilotAgent) or ``per-scene``
    (a function as ``scripted_adversary_v1``, run with each scene's drawn parameters); ``dim`` is
    the action size (1: target speed, 2: [acc, steer])."""
    if kind == "random":
        return _Random(seed, dim)
    if kind == "scripted":
        return _Triggered(dim=dim)
    if kind == "lc":
        return _Triggered(np.asarray(agent.mu), dim=dim)
    if kind == "actor":
        return _Actor(agent)
    if kind == "per-scene":
        return _PerScene(agent, dim)
    raise ValueError(
        f"batched_policy: kind must be random, scripted, lc, actor or per-scene, got {kind!r}"
    )


# ---------------------------------------------------------------------------- evaluation


def evaluate(
    policy: Any,
    scenario: int,
    planner: str,
    seed: int,
    episodes: int = 50,
    k: float = 0.0,
    env_kwargs: Mapping[str, Any] | None = None,
) -> list[dict[str, float]]:
    """``episodes`` distinct episodes of ``scenario`` (one per scene, reset(seed=seed)); per-episode rows.

    ``min_sigma_pre`` is the minimum of sigma over the states before the last step (the pre-collision
    minimum for a colliding episode); ``boundary`` = collision and min_sigma_pre >= k.
    """
    venv = make_vector(episodes, scenario, planner, phi="ttc", **dict(env_kwargs or {}))
    obs, _ = venv.reset(seed=seed)
    if hasattr(policy, "bind_env"):
        policy.bind_env(venv)
    policy.start(episodes, scenario)
    done = np.zeros(episodes, bool)
    min_sig = np.full(episodes, np.inf)
    rows: list[dict[str, float] | None] = [None] * episodes
    red = np.zeros(episodes)
    while not done.all():
        obs, _, term, trunc, info = venv.step(policy(obs))
        live = ~done
        min_sig = np.where(live, np.minimum(min_sig, info["sigma_t"]), min_sig)
        if "red_light_violation" in info:
            red = np.maximum(red, np.where(live, info["red_light_violation"], 0.0))
        ended = np.logical_or(term, trunc) & live
        for i in np.flatnonzero(ended):
            em = {key: float(v[i]) for key, v in info["episode_metrics"].items()}
            coll = em["collision"] > 0
            row = {
                "collision": float(coll),
                "min_sigma_pre": float(min_sig[i]),
                "boundary": float(coll and min_sig[i] >= k),
                "run_red_light": max(em.get("run_red_light", 0.0), float(red[i])),
                "route_completion": em.get("route_completion", 0.0),
                "feasible_ratio": em.get("feasible_ratio", float("nan")),
            }
            if "min_sigma_pre_collision" in em:
                row["min_sigma_pre_collision_env"] = em["min_sigma_pre_collision"]
            rows[i] = row
        done |= ended
    venv.close()
    return [r for r in rows if r is not None]


def evaluate_transfer(
    agent: Any,
    scenario: int,
    planner: str,
    seed: int,
    episodes: int,
    backend: str = "metadrive",
    env_kwargs: Mapping[str, Any] | None = None,
) -> list[dict[str, float]]:
    """Episodes of the single v1 env on another physics ``backend`` with ``agent`` (trained on the
    kinematic backend) as the adversary: the transfer result. ``backend="kinematic"`` runs the same
    code path on the training physics."""
    import gymnasium as gym

    env_id = ENV_VERSIONS[env_version()][3] if have_v1() else "icml26/ScenePilot-v0"
    env = gym.make(
        env_id,
        scenario=scenario,
        ego=planner,
        phi="ttc",
        backend=backend,
        **dict(env_kwargs or {}),
    )
    rows = []
    for i in range(episodes):
        obs, info = env.reset(seed=seed + i)
        done = False
        while not done:
            a = np.asarray(agent.act(obs, info), np.float32).reshape(env.action_space.shape)
            obs, _, term, trunc, info = env.step(a)
            done = term or trunc
        em = info["episode_metrics"]
        rows.append({"collision": float(em["collision"]), "steps": float(em["steps"])})
    env.close()
    return rows
