"""Adversarial fine-tuning of the ego (the defense phase): a residual PPO policy on the ego planner.

After the adversary phase, ScenePilot's release fine-tunes the driving policy against the trained
adversary. Here the ego keeps its planner (IDM) and a learned residual [acc, steer] in [-1, 1]^2
(scaled by 3 m/s^2 and 0.3 rad, as ``ScenePilotAV-v1``) is added to the planner's control; the
adversary is a trained ScenePilot policy acting on its 27-number observation.

* :class:`DefenseVectorEnv` -- N v1 scenes in lock-step (``ScenePilotV1VectorEnv`` with the world's
  ego switched to planner + residual); its action is the ego residual (N, 2), its observation the
  ego's 12 numbers (``ScenePilotAV-v1``'s), its reward SafeBench's ego reward
  (``carla_env._get_reward``) with ``collision_penalty`` per collision and ``red_light_penalty``
  per red-light violation, computed before a finished scene is reset.
* :class:`ResidualEgoPPO` -- a Gaussian policy whose mean is ``tanh`` of an MLP with a zero-initialized
  output layer (so before training the residual is exactly 0: the planner alone), one critic, PPO-clip.
* :func:`evaluate_ego` -- per-episode rows (collision, route completion, the driving-score inputs) and
  the residual's statistics on the visited states (mean |acc|, mean |steer|, mean acc).

``collision_penalty`` defaults to 50 instead of SafeBench's 1: with SafeBench's value a collision
costs less than one step of driving at 8 m/s, so the fine-tuning objective barely sees the
collisions it is meant to remove (the v0 defense's residual did not move).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "DefenseVectorEnv",
    "ResidualEgoPPO",
    "evaluate_ego",
    "adversary_callable",
    "EGO_OBS_SCALE",
]

# SafeBench's ego state [lateral, -yaw error, speed, vehicle_front] + (dx, dy, dvx, dvy) x 2
EGO_OBS_SCALE = np.array(
    [4.0, 1.0, 10.0, 1.0, 50.0, 50.0, 10.0, 10.0, 50.0, 50.0, 10.0, 10.0], dtype=np.float32
)


def adversary_callable(agent: Any, deterministic: bool = True, seed: int = 0) -> Any:
    """A trained ScenePilot adversary as a batched callable on (N, 27) observations: its tanh mean
    (``deterministic``) or a sample of its Gaussian (the policy as trained; own seeded generator)."""
    import torch

    from icml26.agents.driving.scenepilot import OBS_SCALE

    gen = torch.Generator().manual_seed(int(seed))

    def act(obs: np.ndarray) -> np.ndarray:
        x = torch.as_tensor(np.asarray(obs, np.float32).reshape(-1, 27) / OBS_SCALE)
        with torch.no_grad():
            mu, std = agent.actor(x)
            a = mu if deterministic else mu + std * torch.randn(mu.shape, generator=gen)
        return a.clamp(-1.0, 1.0).numpy().astype(np.float64)

    return act


class DefenseVectorEnv:
    """N ScenePilot-v1 scenes where the agent is the ego's residual and ``adversary`` drives body 1.

    Args:
        num_envs: scenes stepped together (same-step autoreset).
        scenario: scenario id(s) (as the v1 vector env).
        planner: the ego's base planner (``"idm"``, ...).
        adversary: a callable on the (N, 27) adversary observation returning (N, d) actions in [-1, 1]
            (a ``ScenePilotAgent``'s ``act`` works), or ``None`` for the idle adversary.
        action: the adversary's action mode (``"acc_steer"`` or ``"speed"``).
        collision_penalty, red_light_penalty: ego reward terms (see the module docstring).
        speed_penalty: SafeBench's penalty per step above 8 m/s (10).
        vector_cls: the ScenePilot vector env class (default: ``ScenePilotV1VectorEnv``).
        env_kwargs: further keyword arguments of ``vector_cls`` (e.g. ``sigma``).
    """

    def __init__(
        self,
        num_envs: int,
        scenario: Any,
        planner: str = "idm",
        adversary: Any = None,
        action: str = "acc_steer",
        collision_penalty: float = 50.0,
        red_light_penalty: float = 1.0,
        speed_penalty: float = 10.0,
        vector_cls: Any = None,
        **env_kwargs: Any,
    ) -> None:
        if vector_cls is None:
            from icml26.envs.driving.env import ScenePilotV1VectorEnv as vector_cls
        if adversary is not None and not callable(adversary):
            raise TypeError(
                f"DefenseVectorEnv: adversary must be callable or None, got {type(adversary).__name__}"
            )
        self.venv = vector_cls(
            num_envs=num_envs,
            scenario=scenario,
            ego=planner,
            action=action,
            phi="ttc",
            **env_kwargs,
        )
        self.num_envs = int(num_envs)
        self.adv_dim = 1 if action == "speed" else 2
        self.adversary = adversary
        if hasattr(
            adversary, "bind_env"
        ):  # per-scene scripted behaviours read the drawn parameters
            adversary.bind_env(self.venv)
            adversary.start(self.num_envs, scenario)
        self.collision_penalty = float(collision_penalty)
        self.red_light_penalty = float(red_light_penalty)
        self.speed_penalty = float(speed_penalty)
        w = self.venv.world
        w.ego_residual = True
        self._u = np.zeros((self.num_envs, 2))
        self._obs27: np.ndarray | None = None
        self._rew = np.zeros(self.num_envs)
        self._final_ego = np.zeros((self.num_envs, 12), np.float32)
        cls_step = type(w).step

        def step_with_residual(adv: np.ndarray, ego_control: Any = None, active: Any = None) -> Any:
            r = cls_step(w, adv, self._u, active)
            self._rew = self._ego_reward(r.collision)
            self._final_ego = w.ego_observation()
            return r

        w.step = step_with_residual  # the vector env's step calls world.step(a, active=...)

    def _ego_reward(self, collision: np.ndarray) -> np.ndarray:
        """SafeBench's ego reward, batched (``ScenePilotAVEnv._ego_reward`` for N scenes)."""
        w = self.venv.world
        steer = w.last_ego_control[:, 1] / (np.pi / 3)
        v_lon = w.v[:, 0] * np.cos(w.yaw[:, 0] + w.beta[:, 0] - w.ego_head)
        return (
            -self.collision_penalty * collision.astype(float)
            + v_lon
            - self.speed_penalty * (v_lon > 8.0)
            - 1.0 * (np.abs(w.ego_lat) > 4.0)
            - 5.0 * steer**2
            - 0.2 * np.abs(steer) * v_lon**2
        )

    def _adv_action(self) -> np.ndarray:
        if self.adversary is None:
            a = np.full((self.num_envs, self.adv_dim), -1.0)
            if self.adv_dim == 2:
                a[:, 1] = 0.0
            return a
        a = np.asarray(self.adversary(self._obs27), np.float64).reshape(self.num_envs, -1)
        return np.clip(a, -1.0, 1.0)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict]:
        obs27, info = self.venv.reset(seed=seed)
        self._obs27 = obs27
        return self.venv.world.ego_observation(), info

    def step(
        self, residual: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        u = np.asarray(residual, np.float64)
        if u.shape != (self.num_envs, 2) or not np.all(np.isfinite(u)):
            raise ValueError(
                f"DefenseVectorEnv.step: residual must be {self.num_envs} x 2 finite numbers, got shape {u.shape}"
            )
        self._u = np.clip(u, -1.0, 1.0)
        obs27, _, term, trunc, info = self.venv.step(self._adv_action())
        rew = self._rew - self.red_light_penalty * np.asarray(
            info.get("red_light_violation", 0.0), float
        )
        self._obs27 = obs27
        done = np.logical_or(term, trunc)
        if done.any():
            info["final_ego_obs"] = self._final_ego.copy()
        return self.venv.world.ego_observation(), rew, term, trunc, info

    def close(self) -> None:
        self.venv.close()


class ResidualEgoPPO:
    """PPO on the ego residual; the mean starts at exactly 0 (zero-initialized output layer).

    Args:
        lr, gamma, gae_lambda, clip_coef, ent_coef, update_epochs: PPO hyperparameters.
        init_std: the initial (state-independent) standard deviation of the residual.
        hidden: width of the two hidden layers.
        seed: torch seed of the initial weights and the sampling.
    """

    def __init__(
        self,
        lr: float = 1e-3,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_coef: float = 0.2,
        ent_coef: float = 0.0,
        update_epochs: int = 4,
        minibatch_size: int = 256,
        init_std: float = 0.3,
        hidden: int = 64,
        seed: int = 0,
    ) -> None:
        import torch
        from torch import nn

        if init_std <= 0:
            raise ValueError(f"ResidualEgoPPO: init_std must be > 0, got {init_std}")
        self.lr, self.gamma, self.lam = float(lr), float(gamma), float(gae_lambda)
        self.clip, self.ent, self.epochs = float(clip_coef), float(ent_coef), int(update_epochs)
        self.minibatch = int(minibatch_size)
        self.seed = int(seed)
        torch.manual_seed(self.seed)
        self.pi = nn.Sequential(
            nn.Linear(12, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 2),
        )
        last = self.pi[-1]
        assert isinstance(last, nn.Linear)
        with torch.no_grad():
            last.weight.zero_()
            last.bias.zero_()
        self.log_std = nn.Parameter(torch.full((2,), float(np.log(init_std))))
        self.v = nn.Sequential(
            nn.Linear(12, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )
        self.history: list[dict[str, float]] = []

    def _mean(self, obs: np.ndarray) -> Any:
        import torch

        x = torch.as_tensor(np.asarray(obs, np.float32).reshape(-1, 12) / EGO_OBS_SCALE)
        return torch.tanh(self.pi(x)), x

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The deterministic residual (the tanh mean), (N, 2)."""
        import torch

        with torch.no_grad():
            mu, _ = self._mean(obs)
        return mu.numpy().astype(np.float64)

    def learn(
        self, env: DefenseVectorEnv, updates: int, rollout_steps: int = 32, seed: int = 0
    ) -> dict:
        """``updates`` PPO updates of ``env.num_envs * rollout_steps`` steps; returns curves."""
        import torch
        from torch.distributions import Normal

        from icml26.agents.driving.scenepilot import gae

        N, T = env.num_envs, int(rollout_steps)
        params = list(self.pi.parameters()) + [self.log_std]
        opt = torch.optim.Adam(params + list(self.v.parameters()), lr=self.lr)
        torch.manual_seed(self.seed + 1)
        obs, _ = env.reset(seed=seed)
        for _ in range(int(updates)):
            b_obs = np.zeros((T, N, 12), np.float32)
            b_next = np.zeros((T, N, 12), np.float32)
            b_act = np.zeros((T, N, 2), np.float32)
            rew, dones, coll = np.zeros((T, N)), np.zeros((T, N)), np.zeros((T, N))
            for t in range(T):
                with torch.no_grad():
                    mu, _ = self._mean(obs)
                    a = Normal(mu, self.log_std.exp()).sample()
                nxt, r, term, trunc, info = env.step(a.clamp(-1, 1).numpy())
                done = np.logical_or(term, trunc)
                b_obs[t], b_act[t], rew[t], dones[t] = obs, a.numpy(), r, done
                coll[t] = info["collision"]
                n2 = np.array(nxt, np.float32, copy=True)
                if done.any():
                    n2[done] = info["final_ego_obs"][done]
                b_next[t] = n2
                obs = nxt
            S = torch.as_tensor(b_obs.reshape(-1, 12) / EGO_OBS_SCALE)
            S2 = torch.as_tensor(b_next.reshape(-1, 12) / EGO_OBS_SCALE)
            with torch.no_grad():
                V = self.v(S).numpy().reshape(T, N)
                V2 = self.v(S2).numpy().reshape(T, N)
            # terminal at collision / route end / time limit: no bootstrap across a reset
            adv = gae(rew + self.gamma * (1 - dones) * V2 - V, dones, self.gamma, self.lam)
            ret = torch.as_tensor((adv + V).reshape(-1), dtype=torch.float32)
            adv_t = torch.as_tensor(
                ((adv - adv.mean()) / (adv.std() + 1e-8)).reshape(-1), dtype=torch.float32
            )
            A = torch.as_tensor(b_act.reshape(-1, 2))
            with torch.no_grad():
                mu, _ = self._mean(b_obs.reshape(-1, 12))
                old = Normal(mu, self.log_std.exp()).log_prob(A).sum(-1)
            B = T * N
            for _ in range(self.epochs):
                perm = torch.randperm(B)
                for s in range(0, B, self.minibatch):
                    i = perm[s : s + self.minibatch]
                    mu = torch.tanh(self.pi(S[i]))
                    d = Normal(mu, self.log_std.exp())
                    ratio = torch.exp(d.log_prob(A[i]).sum(-1) - old[i])
                    surr = torch.min(
                        ratio * adv_t[i], ratio.clamp(1 - self.clip, 1 + self.clip) * adv_t[i]
                    )
                    v_loss = ((self.v(S[i]).squeeze(-1) - ret[i]) ** 2).mean()
                    loss = (
                        -surr.mean()
                        - self.ent * d.entropy().sum(-1).mean()
                        + 0.5 * v_loss / (ret.var() + 1e-8)
                    )
                    opt.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(params + list(self.v.parameters()), 0.5)
                    opt.step()
            ends = dones.sum()
            self.history.append(
                {
                    "mean_reward": float(rew.mean()),
                    "collision_rate": float(coll.sum() / max(ends, 1)),
                    "episodes": float(ends),
                    "std": float(self.log_std.exp().mean().item()),
                }
            )
        return {
            "updates": int(updates),
            "env_steps": int(updates) * N * T,
            "curve": {k: [h[k] for h in self.history] for k in self.history[0]}
            if self.history
            else {},
        }


def evaluate_ego(
    residual: Any,
    scenario: int,
    planner: str,
    adversary: Any,
    seed: int,
    episodes: int = 50,
    **env_kwargs: Any,
) -> tuple[list[dict[str, float]], dict[str, float]]:
    """``episodes`` distinct episodes (one per scene, ``reset(seed=seed)``, the same scenes as the
    attack evaluation at that seed) with the ego's residual ``residual`` (a callable on (N, 12) ego
    observations, or ``None`` for the zero residual: the planner alone). Returns per-episode rows
    (``episode_metrics`` of the v1 env) and the residual's statistics over the visited live states."""
    env = DefenseVectorEnv(episodes, scenario, planner, adversary, **env_kwargs)
    obs, _ = env.reset(seed=seed)
    done = np.zeros(episodes, bool)
    rows: list[dict[str, float] | None] = [None] * episodes
    us: list[np.ndarray] = []
    while not done.all():
        u = np.zeros((episodes, 2)) if residual is None else np.asarray(residual(obs), float)
        us.append(u[~done])
        obs, _, term, trunc, info = env.step(u)
        ended = np.logical_or(term, trunc) & ~done
        for i in np.flatnonzero(ended):
            rows[i] = {key: float(v[i]) for key, v in info["episode_metrics"].items()}
        done |= ended
    env.close()
    U = np.concatenate(us) if us else np.zeros((0, 2))
    stats = {
        "mean_abs_acc": float(np.abs(U[:, 0]).mean()),
        "mean_abs_steer": float(np.abs(U[:, 1]).mean()),
        "mean_acc": float(U[:, 0].mean()),
        "share_active": float((np.abs(U).max(axis=1) > 0.05).mean()),
        "steps": float(len(U)),
    }
    return [r for r in rows if r is not None], stats
