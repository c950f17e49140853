"""Stable-Baselines3 as an icml26 Learner: any SB3 algorithm, trained within a Budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.protocol import Budget

_ALGOS = ("PPO", "A2C", "SAC", "TD3", "DDPG", "DQN")


class SB3Agent:
    """Wraps an SB3 algorithm: ``learn(env, budget)`` trains for ``budget.env_steps`` steps.

    Args:
        algo: SB3 class name (PPO, A2C, SAC, TD3, DDPG, DQN).
        policy: SB3 policy name, default ``"MlpPolicy"``.
        deterministic: act with the policy's mode at evaluation.
        model: an already trained SB3 model (or a path to a saved zip) to act with.
        **algo_kwargs: passed to the algorithm's constructor (e.g. ``n_steps=256``).
    """

    version = "1"

    def __init__(
        self,
        algo: str = "PPO",
        policy: str = "MlpPolicy",
        deterministic: bool = True,
        model: Any = None,
        **algo_kwargs: Any,
    ) -> None:
        if algo not in _ALGOS:
            raise ValueError(f"SB3Agent: algo must be one of {_ALGOS}, got {algo!r}")
        self.algo, self.policy, self.deterministic = algo, policy, deterministic
        if algo_kwargs:  # a misspelt kwarg fails here, not in every trial's learn()
            import inspect

            accepted = {
                p for p in inspect.signature(self._cls()).parameters if not p.startswith("_")
            } - {"policy", "env", "seed"}
            bad = sorted(set(algo_kwargs) - accepted)
            if bad:
                raise TypeError(
                    f"SB3Agent: {algo} has no keyword argument(s) {', '.join(bad)}; it "
                    f"accepts: {', '.join(sorted(accepted))}"
                )
        self.algo_kwargs = dict(algo_kwargs)
        self._seed: int | None = None
        self.model = self._load(model) if isinstance(model, str) else model

    def _cls(self) -> Any:
        import stable_baselines3

        return getattr(stable_baselines3, self.algo)

    def _load(self, path: str) -> Any:
        return self._cls().load(path, device="cpu")

    def reset(self, seed: int | None = None) -> None:
        if self._seed is None:
            self._seed = seed

    def learn(self, env_or_dataset: gym.Env[Any, Any], budget: Budget) -> dict[str, Any]:
        if budget.env_steps is None:
            raise ValueError("SB3Agent.learn: the task's Budget must set env_steps")
        kwargs = {"verbose": 0, "device": "cpu", **self.algo_kwargs}
        self.model = self._cls()(self.policy, env_or_dataset, seed=self._seed, **kwargs)
        self.model.learn(total_timesteps=int(budget.env_steps))
        return {"env_steps": int(self.model.num_timesteps)}

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        if self.model is None:
            raise RuntimeError("SB3Agent: learn() first or pass a trained model")
        action, _ = self.model.predict(np.asarray(observation), deterministic=self.deterministic)
        return action

    def save(self, path: str) -> None:
        if self.model is None:
            raise RuntimeError("SB3Agent: nothing to save; learn() first")
        self.model.save(path)
