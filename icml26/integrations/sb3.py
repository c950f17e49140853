"""Stable-Baselines3 vectorized environments over ``icml26/`` ids.

SB3's own ``make_vec_env("icml26/PointReach-v0", vec_env_cls=SubprocVecEnv)`` fails with the
``spawn`` start method (the default on macOS and Windows, and the only safe one with threads or
CUDA): the spawned workers never imported :mod:`icml26`, so the id is unknown there. These
helpers build the env through :func:`make_env`, which imports the package first, and is
picklable by reference::

    from icml26.integrations.sb3 import make_vec_env
    from stable_baselines3 import PPO

    if __name__ == "__main__":                      # needed with spawned workers
        venv = make_vec_env("icml26/PointReach-v0", n_envs=4, seed=0)
        PPO("MlpPolicy", venv, n_steps=256).learn(20_000)
        venv.close()

Seeding follows SB3: env ``i`` is reset with ``seed + i`` and its action space seeded with the
same value.

:func:`wrap` gives any env the spaces SB3's algorithms accept: the env unchanged where SB3
already accepts it, else the wrappers of :mod:`icml26.integrations.wrappers` that its docstring
names (``NormalizedAction`` for infinite Box actions, ``TokenizedText`` for Text spaces,
``FlattenDictSpaces`` for Dict actions and Dict observations SB3 cannot read)::

    from icml26.integrations.sb3 import wrap
    env = wrap(gym.make("icml26/WeatherRollout-v0"))     # Box(-1, 1) forecasts
    PPO("MultiInputPolicy", env)
"""

from __future__ import annotations

import functools
import multiprocessing
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from icml26._entry_points import unknown_name_error
from icml26.integrations.wrappers import FlattenDictSpaces, NormalizedAction, TokenizedText

__all__ = ["make_env", "env_fn", "make_vec_env", "wrap", "wrappers_for"]

# Subspaces SB3's MultiInputPolicy reads inside a Dict observation (discrete ones must start at 0).
_SB3_DICT_LEAVES = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
)


def _sb3_reads_dict(space: gym.spaces.Dict) -> bool:
    for sub in space.spaces.values():
        if not isinstance(sub, _SB3_DICT_LEAVES):
            return False
        if isinstance(sub, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)) and np.any(
            np.asarray(sub.start) != 0
        ):
            return False
    return True


def wrappers_for(env: gym.Env[Any, Any]) -> list[type[gym.Wrapper[Any, Any, Any, Any]]]:
    """The wrapper classes :func:`wrap` applies to ``env``, outermost last (empty: SB3 accepts it)."""
    obs, act = env.observation_space, env.action_space
    out: list[type[gym.Wrapper[Any, Any, Any, Any]]] = []
    if isinstance(obs, gym.spaces.Text) or isinstance(act, gym.spaces.Text):
        out.append(TokenizedText)
    if isinstance(act, gym.spaces.Dict) or (
        isinstance(obs, gym.spaces.Dict) and not _sb3_reads_dict(obs)
    ):
        out.append(FlattenDictSpaces)
    if isinstance(act, gym.spaces.Box) and not (
        np.all(np.isfinite(act.low)) and np.all(np.isfinite(act.high))
    ):
        out.append(NormalizedAction)
    return out


def wrap(env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
    """``env`` as Stable-Baselines3 accepts it: unchanged when it already does, else wrapped.

    Raises ``TypeError`` for an env with infinite Box actions that documents no
    ``action_bounds`` (see :class:`~icml26.integrations.wrappers.NormalizedAction`).
    """
    if not isinstance(env, gym.Env):
        raise TypeError(f"wrap: expected a gymnasium.Env, got {type(env).__name__}")
    for cls in wrappers_for(env):
        env = cls(env)
    return env


def make_env(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    """``gymnasium.make(env_id, **kwargs)`` after registering every ``icml26/`` id (in any process)."""
    import icml26  # noqa: F401  (registers the ids in this process)

    return gym.make(env_id, **kwargs)


def env_fn(
    env_id: str, env_kwargs: Mapping[str, Any] | None = None
) -> Callable[[], gym.Env[Any, Any]]:
    """A picklable zero-argument factory of ``env_id`` (for ``SubprocVecEnv([env_fn(...)] * n)``)."""
    _check_id(env_id)
    return functools.partial(make_env, env_id, **dict(env_kwargs or {}))


def make_vec_env(
    env_id: str,
    n_envs: int = 2,
    seed: int | None = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    vec_env: str = "subproc",
    start_method: str = "spawn",
    monitor_dir: str | None = None,
    wrapper_class: Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]] | None = None,
) -> Any:
    """An SB3 ``VecEnv`` of ``n_envs`` copies of ``env_id`` (each wrapped in SB3's ``Monitor``).

    Args:
        vec_env: ``"subproc"`` (one process per env, ``start_method``) or ``"dummy"`` (in this
            process, one after another).
        start_method: multiprocessing start method of the workers (``spawn``, ``forkserver``,
            ``fork``); ``spawn`` works everywhere.
    """
    if not isinstance(n_envs, int) or n_envs < 1:
        raise ValueError(f"make_vec_env: n_envs must be an int >= 1, got {n_envs!r}")
    if vec_env not in ("subproc", "dummy"):
        raise ValueError(f"make_vec_env: vec_env must be 'subproc' or 'dummy', got {vec_env!r}")
    if vec_env == "subproc" and start_method not in multiprocessing.get_all_start_methods():
        raise ValueError(
            f"make_vec_env: start_method must be one of "
            f"{multiprocessing.get_all_start_methods()}, got {start_method!r}"
        )
    _check_id(env_id)
    from stable_baselines3.common.env_util import make_vec_env as sb3_make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    subproc = vec_env == "subproc"
    return sb3_make_vec_env(
        functools.partial(make_env, env_id),
        n_envs=n_envs,
        seed=seed,
        env_kwargs=dict(env_kwargs or {}),
        vec_env_cls=SubprocVecEnv if subproc else DummyVecEnv,
        vec_env_kwargs={"start_method": start_method} if subproc else None,
        monitor_dir=monitor_dir,
        wrapper_class=wrapper_class,
    )


def _check_id(env_id: str) -> None:
    import icml26

    if env_id not in gym.registry:
        raise unknown_name_error("env id", env_id, [s["id"] for s in icml26.env_specs()])
