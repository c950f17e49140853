"""Baselines of the driving family.

* :class:`ScriptedAdversary` -- SafeBench's hand-designed scenario behaviour (CS): wait for the
  trigger distance, then drive at the scripted speed.
* :class:`LCAgent` -- learning-to-collide (Ding et al. 2020, as compared in SafeBench): REINFORCE
  over each episode's initial scenario parameters (when the actor starts, how fast it goes),
  one Gaussian per scenario; within an episode it behaves like the scripted actor.
* :class:`NoFinetuneEgo` -- the defense control: a zero residual on the base planner, no learning.

The unshielded risk-only PPO is ``ScenePilotAgent(risk_only=True)``; random and SB3 PPO are the
generic ``random`` and ``sb3-ppo`` agents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from icml26.envs.driving.scenarios import LAYOUTS, scripted_adversary_action
from icml26.protocol import Budget

__all__ = ["ScriptedAdversary", "LCAgent", "NoFinetuneEgo"]


def _scenario_of(info: Mapping[str, Any] | None, who: str) -> int:
    if not info or "scenario" not in info:
        raise ValueError(
            f"{who}: act(observation, info) needs info['scenario'] (ScenePilot-v0 provides it)"
        )
    return int(info["scenario"])


class ScriptedAdversary:
    """SafeBench's standard scenario behaviour as an agent (``driving-scripted``)."""

    version = "1"

    def __init__(self) -> None:
        self.action_dim = 1
        self._triggered = False

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self.action_dim = int(np.prod(action_space.shape))

    def reset(self, seed: int | None = None) -> None:
        self._triggered = False

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> np.ndarray:
        a, self._triggered = scripted_adversary_action(
            observation, _scenario_of(info, "ScriptedAdversary"), self._triggered, self.action_dim
        )
        return a


_MAX_TRIGGER = 80.0  # m: LC's trigger distance lies in [0, 80]


class LCAgent:
    """Learning-to-collide: REINFORCE over per-episode scenario parameters (``driving-lc``).

    Parameters z ~ N(mu_s, diag(exp(log_std_s))^2) per scenario s map to a trigger distance
    ``80 sigmoid(z0)`` m and a speed action ``tanh(z1)``. The episode's return is
    ``collision + 0.01 J_risk``; updates use the per-batch mean return as baseline.

    Args:
        lr: step size of the REINFORCE updates on (mu, log_std).
        batch_episodes: finished episodes per update.
        num_envs: scenes stepped together while learning.
    """

    version = "1"

    def __init__(
        self, lr: float = 0.1, batch_episodes: int = 32, num_envs: int = 16, init_std: float = 1.0
    ) -> None:
        self.lr, self.batch_episodes, self.num_envs = float(lr), int(batch_episodes), int(num_envs)
        n = max(LAYOUTS) + 1
        self.mu = np.zeros((n, 2))
        self.log_std = np.full((n, 2), math.log(init_std))
        self.action_dim = 1
        self._rng = np.random.default_rng(0)
        self._z: np.ndarray | None = None
        self._triggered = False
        self.history: list[dict[str, float]] = []

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self.action_dim = int(np.prod(action_space.shape))

    def reset(self, seed: int | None = None) -> None:
        self._z, self._triggered = None, False
        if seed is not None and not self.history:
            self._rng = np.random.default_rng(seed)

    @staticmethod
    def _actions(
        obs: np.ndarray, scen: np.ndarray, z: np.ndarray, triggered: np.ndarray, action_dim: int
    ) -> tuple[np.ndarray, np.ndarray]:
        d = np.hypot(obs[:, 9] - obs[:, 0], obs[:, 10] - obs[:, 1])
        trig_d = _MAX_TRIGGER / (1.0 + np.exp(-z[:, 0]))
        immediate = np.array([LAYOUTS[int(s)].trigger_distance <= 0 for s in scen])
        triggered = triggered | immediate | (d < trig_d)
        speed_a = np.tanh(z[:, 1])
        if action_dim == 1:
            return np.where(triggered, speed_a, -1.0)[:, None].astype(np.float32), triggered
        base = np.array([LAYOUTS[int(s)].adv_base for s in scen])
        scale = np.array([LAYOUTS[int(s)].adv_scale for s in scen])
        target = np.where(triggered, np.maximum(base + scale * speed_a, 0.0), 0.0)
        speed = np.hypot(obs[:, 14], obs[:, 15])
        acc = np.clip((target - speed) / 0.3, -1.0, 1.0)
        return np.stack([acc, np.zeros_like(acc)], axis=1).astype(np.float32), triggered

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> np.ndarray:
        s = _scenario_of(info, "LCAgent")
        if self._z is None:
            self._z = self.mu[s].copy()  # evaluation: the learned mean parameters
        a, trig = self._actions(
            np.asarray(observation, np.float64)[None],
            np.array([s]),
            self._z[None],
            np.array([self._triggered]),
            self.action_dim,
        )
        self._triggered = bool(trig[0])
        return a[0]

    def learn(self, env: Any, budget: Budget) -> dict[str, Any]:
        from icml26.agents.driving.scenepilot import make_training_vector_env

        if budget.env_steps is None:
            raise ValueError("LCAgent.learn: the Budget must set env_steps")
        space = getattr(env, "single_action_space", getattr(env, "action_space", None))
        if space is not None:
            self.action_dim = int(np.prod(space.shape))
        venv = make_training_vector_env(env, self.num_envs)
        N = venv.num_envs
        obs, info = venv.reset(seed=int(self._rng.integers(2**31)))
        scen = np.asarray(info.get("scenario", np.full(N, 1)))

        def draw(rows: np.ndarray) -> np.ndarray:
            s = scen[rows]
            return self.mu[s] + np.exp(self.log_std[s]) * self._rng.standard_normal((len(rows), 2))

        z = draw(np.arange(N))
        triggered = np.zeros(N, dtype=bool)
        batch: list[tuple[int, np.ndarray, float]] = []
        steps = 0
        while steps < int(budget.env_steps):
            a, triggered = self._actions(obs, scen, z, triggered, self.action_dim)
            obs, _, term, trunc, info = venv.step(a)
            steps += N
            done = np.logical_or(term, trunc)
            if done.any():
                em = info["episode_metrics"]
                for i in np.flatnonzero(done):
                    batch.append(
                        (
                            int(scen[i]),
                            z[i].copy(),
                            float(em["collision"][i] + 0.01 * em["J_risk"][i]),
                        )
                    )
                scen = np.asarray(self._scenarios_after_reset(venv, scen, done))
                z[done] = draw(np.flatnonzero(done))
                triggered[done] = False
            if len(batch) >= self.batch_episodes:
                self._reinforce(batch, steps)
                batch = []
        return {
            "env_steps": steps,
            "updates": len(self.history),
            "curve": {
                "env_steps": [h["env_steps"] for h in self.history],
                "mean_return": [h["mean_return"] for h in self.history],
            },
        }

    @staticmethod
    def _scenarios_after_reset(venv: Any, scen: np.ndarray, done: np.ndarray) -> np.ndarray:
        world = getattr(venv, "world", None)
        if world is not None:
            return world.scn.copy()
        return scen

    def _reinforce(self, batch: list[tuple[int, np.ndarray, float]], steps: int) -> None:
        rets = np.array([r for _, _, r in batch])
        for s in {b[0] for b in batch}:
            rows = [(z, r) for sc, z, r in batch if sc == s]
            if len(rows) < 2:
                continue
            zs, rs = np.array([z for z, _ in rows]), np.array([r for _, r in rows])
            adv = rs - rs.mean()
            std = np.exp(self.log_std[s])
            eps = (zs - self.mu[s]) / std
            g_mu = (adv[:, None] * eps / std).mean(axis=0)
            g_ls = (adv[:, None] * (eps**2 - 1.0)).mean(axis=0)
            self.mu[s] += self.lr * g_mu
            self.log_std[s] = np.clip(
                self.log_std[s] + self.lr * g_ls, math.log(0.05), math.log(3.0)
            )
        self.history.append({"env_steps": float(steps), "mean_return": float(rets.mean())})


class NoFinetuneEgo:
    """Defense control (``driving-no-finetune``): the zero residual, i.e. the base planner as is."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> np.ndarray:
        return np.zeros(2, dtype=np.float32)

    def learn(self, env: Any, budget: Budget) -> dict[str, Any]:
        return {"env_steps": 0}
