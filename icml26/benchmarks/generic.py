"""``run_trial`` for plain Gymnasium tasks: learn within the budget, then evaluate episodes.

Tasks whose score is the episode return (and, when the env reports ``info["is_success"]`` or
terminates at a goal, a success rate) use this directly as their ``run_trial``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from icml26.protocol import Task, TrialOutcome, derive_seed


def bind_agent(agent: Any, env: gym.Env[Any, Any]) -> None:
    """Give an agent the env's spaces if it asks for them (``bind``)."""
    bind = getattr(agent, "bind", None)
    if callable(bind):
        bind(env.observation_space, env.action_space)


def learn_if_learner(agent: Any, env_or_dataset: Any, task: Task) -> dict[str, Any]:
    """Call ``agent.learn(env_or_dataset, task.budget)`` when the agent learns; return its stats."""
    learn = getattr(agent, "learn", None)
    if not callable(learn):
        return {}
    stats = learn(env_or_dataset, task.budget)
    return dict(stats) if stats else {}


def train_phase(
    task: Task,
    agent: Any,
    seed: int,
    env_or_dataset: Any = None,
    env_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The common preamble of a trial: bind the agent to a training env seeded from ``seed``
    (``derive_seed(seed, "train")``, its action space too), ``agent.reset(seed)``, and let the
    agent learn within ``task.budget`` when it is a learner; returns the learner's stats.

    ``env_or_dataset`` (a data set, or an env the caller built) replaces the training env the
    function would make from ``task.env_id`` and ``env_kwargs`` (default ``task.env_kwargs``)."""
    if env_or_dataset is None:
        env = gym.make(task.env_id, **(task.env_kwargs if env_kwargs is None else env_kwargs))
        env.reset(seed=derive_seed(seed, "train"))
        env.action_space.seed(derive_seed(seed, "train-actions"))
        try:
            bind_agent(agent, env)
            agent.reset(seed)
            return learn_if_learner(agent, env, task)
        finally:
            env.close()
    agent.reset(seed)
    return learn_if_learner(agent, env_or_dataset, task)


class Episode(NamedTuple):
    """What :func:`rollout` returns: the last ``info``, the return, the length, and how it ended."""

    info: dict[str, Any]
    total_reward: float
    length: int
    terminated: bool
    truncated: bool


def rollout(
    agent: Any,
    env: gym.Env[Any, Any],
    seed: int,
    options: dict[str, Any] | None = None,
    *,
    act: Callable[[Any, dict[str, Any]], Any] | None = None,
    reset_agent: bool = True,
    max_steps: int | None = None,
) -> Episode:
    """One episode: ``env.reset(seed=seed, options=options)``, ``agent.reset(seed)`` (unless
    ``reset_agent`` is False), then ``agent.act`` (or ``act(obs, info)``) until the episode ends
    or ``max_steps`` steps (which then counts as truncated)."""
    obs, info = env.reset(seed=seed, options=options)
    if reset_agent:
        agent.reset(seed)
    policy = agent.act if act is None else act
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs, info))
        total += float(reward)
        steps += 1
        if terminated or truncated or (max_steps is not None and steps >= max_steps):
            return Episode(info, total, steps, bool(terminated), bool(truncated) or not terminated)


def evaluate_episodes(
    agent: Any, env: gym.Env[Any, Any], seeds: list[int], max_steps: int | None = None
) -> tuple[list[float], list[float], list[int]]:
    """Roll the agent out once per seed: (returns, successes, lengths)."""
    returns, successes, lengths = [], [], []
    for s in seeds:
        ep = rollout(agent, env, s, max_steps=max_steps)
        returns.append(ep.total_reward)
        successes.append(float(ep.info.get("is_success", ep.terminated and not ep.truncated)))
        lengths.append(ep.length)
    return returns, successes, lengths


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Learn on ``task.env_id`` seeded with ``seed`` (if the agent learns), then evaluate
    ``task.eval_episodes`` episodes on seeds derived from ``seed`` (disjoint from training).

    Metrics: ``return`` (mean episode return), ``success_rate``, ``episode_length``.
    """
    learn_stats = train_phase(task, agent, seed)

    env = gym.make(task.env_id, **task.env_kwargs)
    bind_agent(agent, env)
    eval_seeds = [derive_seed(seed, "eval", i) for i in range(task.eval_episodes)]
    returns, successes, lengths = evaluate_episodes(agent, env, eval_seeds)
    env.close()
    metrics = {
        "return": float(np.mean(returns)),
        "success_rate": float(np.mean(successes)),
        "episode_length": float(np.mean(lengths)),
    }
    return TrialOutcome(
        metrics=metrics, scores=returns, extra={"learn": learn_stats} if learn_stats else {}
    )
