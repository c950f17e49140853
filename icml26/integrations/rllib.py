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
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable, Mapping
from typing import Any

from icml26._entry_points import require

__all__ = ["register_envs", "make_env", "make_parallel_env", "registered_names"]


def make_env(env_id: str, env_config: Mapping[str, Any] | None = None) -> Any:
    """RLlib env creator: ``gymnasium.make(env_id, **env_config)`` after importing icml26."""
    import gymnasium as gym

    import icml26  # noqa: F401  (registers the ids in this worker process)

    return gym.make(env_id, **dict(env_config or {}))


def make_parallel_env(name: str, env_config: Mapping[str, Any] | None = None) -> Any:
    """RLlib env creator for a PettingZoo ParallelEnv, wrapped as an RLlib ``MultiAgentEnv``."""
    import icml26

    spec = next((s for s in icml26.parallel_env_specs() if s["name"] == name), None)
    if spec is None:
        names = [s["name"] for s in icml26.parallel_env_specs()]
        raise KeyError(f"unknown PettingZoo env {name!r}; known: {', '.join(names) or '(none)'}")
    module, _, attr = spec["entry_point"].partition(":")
    factory = getattr(importlib.import_module(module), attr)
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    return ParallelPettingZooEnv(factory(**{**spec.get("kwargs", {}), **dict(env_config or {})}))


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
        raise KeyError(f"register_envs: unknown env(s) {unknown}; known: {sorted(gym_ids | pz_names)}")
    for name in wanted:
        creator = make_env if name in gym_ids else make_parallel_env
        registry.register_env(name, functools.partial(creator, name))
    return wanted
