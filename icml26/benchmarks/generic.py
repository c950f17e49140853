"""``run_trial`` for plain Gymnasium tasks: learn within the budget, then evaluate episodes.

Tasks whose score is the episode return (and, when the env reports ``info["is_success"]`` or
terminates at a goal, a success rate) use this directly as their ``run_trial``.
"""

from __future__ import annotations

from typing import Any

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


def evaluate_episodes(
    agent: Any, env: gym.Env[Any, Any], seeds: list[int], max_steps: int | None = None
) -> tuple[list[float], list[float], list[int]]:
    """Roll the agent out once per seed: (returns, successes, lengths)."""
    returns, successes, lengths = [], [], []
    for s in seeds:
        obs, info = env.reset(seed=s)
        agent.reset(s)
        total, steps, success = 0.0, 0, 0.0
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            total += float(reward)
            steps += 1
            if terminated or truncated or (max_steps is not None and steps >= max_steps):
                success = float(info.get("is_success", terminated and not truncated))
                break
        returns.append(total)
        successes.append(success)
        lengths.append(steps)
    return returns, successes, lengths


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Learn on ``task.env_id`` seeded with ``seed`` (if the agent learns), then evaluate
    ``task.eval_episodes`` episodes on seeds derived from ``seed`` (disjoint from training).

    Metrics: ``return`` (mean episode return), ``success_rate``, ``episode_length``.
    """
    train_env = gym.make(task.env_id, **task.env_kwargs)
    train_env.reset(seed=derive_seed(seed, "train"))
    train_env.action_space.seed(derive_seed(seed, "train-actions"))
    bind_agent(agent, train_env)
    agent.reset(seed)
    learn_stats = learn_if_learner(agent, train_env, task)
    train_env.close()

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
    return TrialOutcome(metrics=metrics, scores=returns, extra={"learn": learn_stats} if learn_stats else {})
