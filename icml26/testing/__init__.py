"""Conformance checks shipped with the package (like ``pettingzoo.test``), usable on any env.

    from icml26.testing import check_env_conformance, check_parallel_env_conformance
    check_env_conformance("icml26/PointReach-v0")
    check_env_conformance(MyEnv)             # an env class or a zero-argument factory works too

Checks for Gymnasium envs: ``gymnasium.utils.env_checker.check_env`` on the unwrapped env; two
seeded rollouts are identical; ``reset(seed); reset()`` is deterministic; the env pickles and the
copy continues identically; ``gymnasium.make_vec(..., vectorization_mode="async")`` with the
spawn context resets and steps. For PettingZoo parallel envs: ``parallel_api_test`` and
``parallel_seed_test``.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = [
    "check_env_conformance",
    "check_parallel_env_conformance",
    "check_seeded_determinism",
    "check_reset_determinism",
    "check_pickle",
    "check_async_vector",
    "assert_same",
    "tiny_point_reach_task",
    "BudgetGainLearner",
]

EnvSource = str | Callable[[], gym.Env[Any, Any]]


def _make(source: EnvSource, kwargs: Mapping[str, Any] | None = None) -> gym.Env[Any, Any]:
    if isinstance(source, str):
        return gym.make(source, **dict(kwargs or {}))
    return source(**dict(kwargs or {}))


def assert_same(a: Any, b: Any, where: str = "value") -> None:
    """Exact structural equality for observations, rewards and infos (arrays, dicts, tuples)."""
    if isinstance(
        a, Mapping
    ):  # dicts and read-only mappings (e.g. a Boltzmann env's lazy data set)
        assert isinstance(b, Mapping) and set(a) == set(b), (
            f"{where}: keys differ {set(a) ^ set(b)}"
        )
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        assert x.shape == y.shape, f"{where}: shapes differ {x.shape} vs {y.shape}"
        if x.dtype.kind in "fc":
            assert np.array_equal(x, y, equal_nan=True), f"{where}: arrays differ"
        else:
            assert np.array_equal(x, y), f"{where}: arrays differ"
    elif isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return
    elif hasattr(a, "__array__") and not isinstance(a, (str, bytes)):
        assert_same(np.asarray(a), np.asarray(b), where)
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def _rollout(env: gym.Env[Any, Any], seed: int, steps: int) -> list[Any]:
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    trace: list[Any] = [("reset", obs, info)]
    for _ in range(steps):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append(("step", obs, float(reward), bool(terminated), bool(truncated), info))
        if terminated or truncated:
            obs, info = env.reset()
            trace.append(("reset", obs, info))
    return trace


def check_seeded_determinism(
    source: EnvSource, kwargs: Mapping[str, Any] | None = None, steps: int = 50, seed: int = 123
) -> None:
    """Two fresh envs, same seed, same sampled actions: identical transitions."""
    e1, e2 = _make(source, kwargs), _make(source, kwargs)
    try:
        assert_same(_rollout(e1, seed, steps), _rollout(e2, seed, steps), "seeded rollout")
    finally:
        e1.close()
        e2.close()


def check_reset_determinism(
    source: EnvSource, kwargs: Mapping[str, Any] | None = None, seed: int = 7
) -> None:
    """``reset(seed=s); reset()`` gives the same second observation in two fresh envs."""
    outs = []
    for _ in range(2):
        env = _make(source, kwargs)
        env.reset(seed=seed)
        outs.append(env.reset())
        env.close()
    assert_same(outs[0], outs[1], "reset(seed); reset()")


def check_pickle(
    source: EnvSource, kwargs: Mapping[str, Any] | None = None, steps: int = 10, seed: int = 3
) -> None:
    """A pickled copy of a mid-episode env continues exactly like the original."""
    env = _make(source, kwargs)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    for _ in range(2):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    clone = pickle.loads(pickle.dumps(env))
    actions = [env.action_space.sample() for _ in range(steps)]
    for i, a in enumerate(actions):
        r1, r2 = env.step(a), clone.step(a)
        assert_same(r1, r2, f"pickled copy, step {i}")
        if r1[2] or r1[3]:
            break
    env.close()
    clone.close()


def check_async_vector(
    env_id: str, kwargs: Mapping[str, Any] | None = None, num_envs: int = 2, steps: int = 3
) -> None:
    """``gym.make_vec(env_id, vectorization_mode="async")`` with spawned workers resets and steps."""
    vec = gym.make_vec(
        env_id,
        num_envs=num_envs,
        vectorization_mode="async",
        vector_kwargs={"context": "spawn"},
        **dict(kwargs or {}),
    )
    try:
        obs, _ = vec.reset(seed=0)
        assert vec.single_observation_space is not None
        vec.action_space.seed(0)
        for _ in range(steps):
            obs, rew, term, trunc, _ = vec.step(vec.action_space.sample())
            assert np.asarray(rew).shape == (num_envs,)
    finally:
        vec.close()


def check_env_conformance(
    source: EnvSource,
    kwargs: Mapping[str, Any] | None = None,
    *,
    vector: bool = True,
    pickle_check: bool = True,
    steps: int = 50,
) -> None:
    """Run every Gymnasium conformance check on an env id, class or factory."""
    from gymnasium.utils.env_checker import check_env

    env = _make(source, kwargs)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()
    check_seeded_determinism(source, kwargs, steps=steps)
    check_reset_determinism(source, kwargs)
    if pickle_check:
        check_pickle(source, kwargs)
    if vector and isinstance(source, str):
        check_async_vector(source, kwargs)


def check_parallel_env_conformance(env_fn: Callable[[], Any], num_cycles: int = 100) -> None:
    """PettingZoo's ``parallel_api_test`` and ``parallel_seed_test`` on a ParallelEnv factory."""
    from pettingzoo.test import parallel_api_test, parallel_seed_test

    parallel_api_test(env_fn(), num_cycles=num_cycles)
    parallel_seed_test(env_fn, num_cycles=num_cycles)


def tiny_point_reach_task(
    task_id: str, *, seeds: tuple[int, ...] = (0, 1), eval_episodes: int = 1
) -> Any:
    """A small variant of ``tutorial/point-reach`` under ``task_id`` (two seeds and one evaluation
    episode by default, no learning budget) for tests that need a cheap task of their own."""
    from icml26.protocol import Budget, Metric, Task

    return Task(
        id=task_id,
        version=0,
        family="tutorial",
        env_id="icml26/PointReach-v0",
        run_trial="icml26.benchmarks.generic:run_trial",
        metrics=(
            Metric("return", "max"),
            Metric("success_rate", "max", 0, 1),
            Metric("episode_length", "min"),
        ),
        primary_metric="return",
        budget=Budget(),
        seeds=seeds,
        eval_episodes=eval_episodes,
    )


class BudgetGainLearner:
    """A point-reach learner for tests of budget ladders: its gain is ``env_steps / full_steps``
    (at most 1), so its return rises with the budget it is given. ``learn`` reports the
    ``env_steps`` it got (and ``rl_steps`` when the budget has them) and a gain curve."""

    version = "1"

    def __init__(self, full_steps: int = 4000) -> None:
        self.full_steps = full_steps
        self.gain = 0.0

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self.low, self.high = action_space.low, action_space.high

    def reset(self, seed: int | None = None) -> None:
        pass

    def learn(self, env: Any, budget: Any) -> dict[str, Any]:
        self.gain = min(1.0, budget.env_steps / self.full_steps)
        steps = np.linspace(0, budget.env_steps, 5)
        stats: dict[str, Any] = {
            "env_steps": budget.env_steps,
            "curve": {"env_steps": steps.tolist(), "gain": (steps / self.full_steps).tolist()},
        }
        if "rl_steps" in budget.extra:
            stats["rl_steps"] = budget.extra["rl_steps"]
        return stats

    def act(self, observation: Any, info: Any = None) -> Any:
        return np.clip(self.gain * observation[4:6], self.low, self.high)
