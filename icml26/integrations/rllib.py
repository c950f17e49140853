"""RLlib: every ``icml26/`` id (and every PettingZoo env) registered with Ray Tune's registry.

    import icml26.integrations.rllib as icml26_rllib
    from ray.rllib.algorithms.ppo import PPOConfig

    icml26_rllib.register_envs()
    config = (PPOConfig()
              .environment("icml26/PointReach-v0", env_config={})   # env_config = gym.make kwargs
              .env_runners(num_env_runners=2))
    algo = config.build_algo()
    print(algo.train()["env_runners"]["episode_return_mean"])

The creators import :mod:`icml26` inside RLlib's env-runner processes, so remote runners on other
machines find the ids too (they need ``icml26-gym`` installed, as the docker/ image does). The
``env_config`` dict RLlib passes becomes the ``gymnasium.make`` keyword arguments. PettingZoo
envs are registered under their names (``markov_games/rps``) wrapped in RLlib's
``ParallelPettingZooEnv``; their ``env_config`` overrides the registered kwargs.

Installing RLlib (``pip install 'icml26-gym[rllib]'``) may pin an older Gymnasium than this
package is tested with; see docs/scaling.md.

Multi-agent PPO on a Markov game: RLlib's default encoders read flat ``Box`` observations, not
the games' ``Dict(observation, action_mask)``. ``env_config={"observation": "flat"}`` (the
default) gives each player ``Box(0, 1)`` = one-hot step, one-hot state, action mask; games
whose masks forbid some actions (the tree game) need ``"masked"``, which keeps the mask apart
for RLlib's action-masking module (:func:`multi_agent_ppo_config` sets it up)::

    config = icml26_rllib.multi_agent_ppo_config("markov_games/soccer")
    algo = config.build_algo()
    algo.train()
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from icml26._entry_points import require

__all__ = [
    "register_envs",
    "make_env",
    "make_parallel_env",
    "registered_names",
    "FlatObservationParallelEnv",
    "multi_agent_ppo_config",
]

OBSERVATION_MODES = ("flat", "masked", "dict")


def make_env(env_id: str, env_config: Mapping[str, Any] | None = None) -> Any:
    """RLlib env creator: ``gymnasium.make(env_id, **env_config)`` after importing icml26."""
    import gymnasium as gym

    import icml26  # noqa: F401  (registers the ids in this worker process)

    return gym.make(env_id, **dict(env_config or {}))


class FlatObservationParallelEnv:
    """A Markov-game ParallelEnv whose observations RLlib's default encoders read.

    ``mode="flat"``: ``Box(0, 1, (H + 1 + S + n_actions,), float32)`` = one-hot step h, one-hot
    state s, the player's action mask. ``mode="masked"``: ``Dict(action_mask=Box(0, 1,
    (n_actions,)), observations=Box(0, 1, (H + 1 + S,)))``, the layout of RLlib's
    ``ActionMaskingTorchRLModule``. Actions, rewards and episode ends are the game's own.
    """

    def __init__(self, env: Any, mode: str = "flat") -> None:
        from gymnasium import spaces

        if mode not in ("flat", "masked"):
            raise ValueError(
                f"FlatObservationParallelEnv: mode must be 'flat' or 'masked', got {mode!r}"
            )
        game = getattr(env, "game", None)
        if game is None:
            raise TypeError(
                f"FlatObservationParallelEnv: expected a Markov-game ParallelEnv, got {type(env).__name__}"
            )
        self.env, self.mode, self.game = env, mode, game
        H, S, A, B = game.shape
        self._sizes = (H + 1, S)
        self.possible_agents = list(env.possible_agents)
        self.metadata = dict(env.metadata)
        self.render_mode = env.render_mode
        self._n = {self.possible_agents[0]: A, self.possible_agents[1]: B}
        if mode == "flat" and not (game.legal_max.all() and game.legal_min.all()):
            raise ValueError(
                f"{game.name}: some actions are illegal in some states, and a flat observation "
                "cannot stop a policy from choosing them; use observation='masked' "
                "(multi_agent_ppo_config sets up RLlib's action-masking module)"
            )
        base = H + 1 + S
        self._spaces: dict[str, Any] = {}
        for agent, n in self._n.items():
            if mode == "flat":
                self._spaces[agent] = spaces.Box(0.0, 1.0, (base + n,), np.float32)
            else:
                self._spaces[agent] = spaces.Dict(
                    {
                        "action_mask": spaces.Box(0.0, 1.0, (n,), np.float32),
                        "observations": spaces.Box(0.0, 1.0, (base,), np.float32),
                    }
                )

    @property
    def agents(self) -> list[str]:
        return list(self.env.agents)

    def observation_space(self, agent: str) -> Any:
        return self._spaces[agent]

    def action_space(self, agent: str) -> Any:
        return self.env.action_space(agent)

    def _convert(self, obs: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for agent, o in obs.items():
            h, s = (int(v) for v in o["observation"])
            onehot = np.zeros(sum(self._sizes), np.float32)
            onehot[h] = 1.0
            onehot[self._sizes[0] + s] = 1.0
            mask = np.asarray(o["action_mask"], np.float32)
            out[agent] = (
                np.concatenate([onehot, mask])
                if self.mode == "flat"
                else {"action_mask": mask, "observations": onehot}
            )
        return out

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._convert(obs), infos

    def step(self, actions: Mapping[str, Any]) -> tuple[Any, ...]:
        obs, rewards, terms, truncs, infos = self.env.step({k: int(v) for k, v in actions.items()})
        return self._convert(obs), rewards, terms, truncs, infos

    def state(self) -> Any:
        return self.env.state()

    def render(self, *args: Any) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self) -> Any:
        return self.env


def _parallel_factory(name: str) -> tuple[Any, dict[str, Any]]:
    import icml26

    spec = next((s for s in icml26.parallel_env_specs() if s["name"] == name), None)
    if spec is None:
        names = [s["name"] for s in icml26.parallel_env_specs()]
        raise KeyError(f"unknown PettingZoo env {name!r}; known: {', '.join(names) or '(none)'}")
    module, _, attr = spec["entry_point"].partition(":")
    return getattr(importlib.import_module(module), attr), dict(spec.get("kwargs", {}))


def make_parallel_env(name: str, env_config: Mapping[str, Any] | None = None) -> Any:
    """RLlib env creator for a PettingZoo ParallelEnv, wrapped as an RLlib ``MultiAgentEnv``.

    ``env_config`` overrides the registered kwargs; its ``"observation"`` key picks the view:
    ``"flat"`` (default), ``"masked"`` (see :class:`FlatObservationParallelEnv`) or ``"dict"``
    (the game's own ``Dict(observation, action_mask)``, which RLlib's default encoders cannot read).
    """
    factory, kwargs = _parallel_factory(name)
    config = dict(env_config or {})
    mode = config.pop("observation", "flat")
    if mode not in OBSERVATION_MODES:
        raise ValueError(
            f"make_parallel_env: env_config['observation'] must be one of {OBSERVATION_MODES}, got {mode!r}"
        )
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    env = factory(**{**kwargs, **config})
    return ParallelPettingZooEnv(env if mode == "dict" else FlatObservationParallelEnv(env, mode))


def multi_agent_ppo_config(name: str, env_config: Mapping[str, Any] | None = None) -> Any:
    """An RLlib ``PPOConfig`` training one policy per player on the Markov game ``name``.

    Uses the flat observation when every action is always legal, else the masked view with
    RLlib's ``ActionMaskingTorchRLModule``. Tune the returned config as usual (``.training``,
    ``.env_runners``); the env is registered under ``name``.
    """
    require("ray.rllib.algorithms.ppo", "rllib", "icml26.integrations.rllib")
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    factory, kwargs = _parallel_factory(name)
    config = dict(env_config or {})
    probe = factory(**{**kwargs, **{k: v for k, v in config.items() if k != "observation"}})
    all_legal = bool(probe.game.legal_max.all() and probe.game.legal_min.all())
    config.setdefault("observation", "flat" if all_legal else "masked")
    register_envs([name])
    agents = list(probe.possible_agents)
    specs: dict[str, Any] = {}
    if config["observation"] == "masked":
        from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
            ActionMaskingTorchRLModule,
        )

        specs = {a: RLModuleSpec(module_class=ActionMaskingTorchRLModule) for a in agents}
    else:
        specs = {a: RLModuleSpec() for a in agents}
    # RLlib's env pre-check steps random actions from the unmasked spaces; a game with illegal
    # actions refuses them, so the check is off for the masked view.
    return (
        PPOConfig()
        .environment(
            name, env_config=config, disable_env_checking=config["observation"] == "masked"
        )
        .multi_agent(policies=set(agents), policy_mapping_fn=_policy_for_agent)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    )


def _policy_for_agent(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    return agent_id


def registered_names(parallel: bool = True) -> list[str]:
    """The names :func:`register_envs` registers: every ``icml26/`` id, then the PettingZoo names."""
    import icml26

    names = [s["id"] for s in icml26.env_specs()]
    if parallel:
        names += [s["name"] for s in icml26.parallel_env_specs()]
    return names


def register_envs(ids: Iterable[str] | None = None, parallel: bool = True) -> list[str]:
    """Register env creators with Ray Tune's registry (all ids by default); returns the names.

    Safe to call any number of times, before or after ``ray.init``.
    """
    registry = require("ray.tune.registry", "rllib", "icml26.integrations.rllib")
    import icml26

    gym_ids = {s["id"] for s in icml26.env_specs()}
    pz_names = {s["name"] for s in icml26.parallel_env_specs()} if parallel else set()
    wanted = registered_names(parallel) if ids is None else list(ids)
    unknown = [n for n in wanted if n not in gym_ids | pz_names]
    if unknown:
        raise KeyError(
            f"register_envs: unknown env(s) {unknown}; known: {sorted(gym_ids | pz_names)}"
        )
    for name in wanted:
        creator = make_env if name in gym_ids else make_parallel_env
        registry.register_env(name, functools.partial(creator, name))
    return wanted
