"""ScenePilot: feasibility-shielded PPO for adversarial driving scenarios (ICML 2026), in one file.

Read top to bottom, CleanRL style. The adversary's policy is a Gaussian with a tanh mean; two
critics learn V_risk (the risk reward) and V_sigma (the feasibility sigma) by TD(0). Each step
gets a gate ``alpha_t = unsafe_t + safe_t * unsafe_{t+1}`` (unsafe: sigma < k); the advantage is
``(1 - alpha) A_risk + alpha A_sigma`` with both GAE advantages normalized. The threshold k walks
through the curriculum ``[0, .02, .05, .09, .14, .2, .27, .35]`` (cyclically), one step every
``k_update_every`` updates. ``feasible_ratio = mean(sigma_{t+1} >= k)`` is logged every update.
Source: ``safebench/scenario/scenario_policy/rl/scenepilot.py`` of the public release.

``risk_only=True`` drops the gate (alpha = 0): the unshielded risk-only PPO ablation.
``reward="released"`` trains V_risk on the release's own reward ``r_t = risk_t`` (Phi, or the TTC
proxy before Phi is ready; ``info["risk"]``) instead of the env's reward, so that the
shield is the only feasibility term (on v1/v2, whose reward pays a boundary-band collision bonus:
the ablation arm ``scenepilot-released``). ``k_update_every=0`` walks the curriculum once over
the learning budget (``n_updates // len(k_values)`` updates per k, at least 1), as the release's
800 updates of 100 per k do; this keeps the schedule's shape on a budget ladder.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from icml26.protocol import Budget

__all__ = [
    "ScenePilotArgs",
    "ScenePilotAgent",
    "OBS_SCALE",
    "make_training_vector_env",
    "shield_gate",
    "gae",
]

REWARD_SOURCES = ("env", "released")  # ScenePilotArgs.reward

# Fixed observation scale (per actor: x, y, yaw, cos, sin, vx, vy, ax, ay).
OBS_SCALE = np.tile(
    np.array([50.0, 50.0, np.pi, 1.0, 1.0, 10.0, 10.0, 10.0, 10.0], dtype=np.float32), 3
)


@dataclass
class ScenePilotArgs:
    """Hyperparameters. Defaults are the release's (``scenario/config/scenepilot.yaml``) except
    ``num_envs``/``rollout_steps`` (the release collects one CARLA rollout of 2048 steps)."""

    num_envs: int = 16  # scenes stepped together (native vector env)
    rollout_steps: int = 128  # per scene: batch = 16 * 128 = 2048 (release batch_size)
    lr: float = 1e-4  # release lr
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_coef: float = 0.25  # release ppo_clip
    ent_coef: float = 0.03  # release entropy_coef
    update_epochs: int = 1  # release ppo_epochs
    minibatch_size: int = 2048  # release batch_size
    max_grad_norm: float = 0.5
    hidden: int = 128
    k_values: tuple[float, ...] = (0.0, 0.02, 0.05, 0.09, 0.14, 0.2, 0.27, 0.35)
    k_update_every: int = (
        100  # release thresh_update_every (updates per k); 0: once over the budget
    )
    risk_only: bool = False  # True: the unshielded ablation (alpha = 0)
    reward: str = "env"  # "env": the env's reward; "released": r = risk (Phi), the release's
    collision_reward: float = (
        0.0  # added to the risk reward at an ego collision (0: the env's reward only)
    )
    k_cycle: bool = (
        True  # True: k walks the curriculum cyclically (release); False: stays at the last k
    )
    deterministic: bool = True  # act with the tanh mean at evaluation
    init_std: float | None = (
        None  # None: the release's init (std ~0.7); else the initial policy std
    )
    max_std: float | None = (
        None  # None: unbounded (the release); else the policy std is capped here (see _build_nets)
    )
    logprob_of: str = "clamped"  # "clamped": the release (log-prob of the clamped action); "sample"
    torch_threads: int = 1


def _build_nets(
    obs_dim: int, act_dim: int, hidden: int, max_std: float | None = None
) -> tuple[Any, Any]:
    """Actor (tanh mean, softplus std, optionally capped at ``max_std``) and the two-head critic.

    Why a cap: the sampled action is clamped to [-1, 1] before the env sees it, so once the std is
    well above 1 the env sees bang-bang actions whatever the std is and no reward can pull it
    back, while the entropy bonus keeps pushing it up (measured: std 3 after 8 updates, ~100 after
    32, ~900 after 128 at the study's lr 1e-3 x 4 epochs): the policy degenerates to random
    full-scale actions and its tanh mean saturates."""
    import torch
    from torch import nn

    class Actor(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
            )
            self.fc_mu, self.fc_std = nn.Linear(hidden, act_dim), nn.Linear(hidden, act_dim)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = self.net(x)
            std = nn.functional.softplus(self.fc_std(h)) + 1e-3
            if max_std is not None:  # a hard cap: no gradient (entropy's included) beyond it
                std = torch.clamp(std, max=max_std)
            return torch.tanh(self.fc_mu(h)), std

    class Critic(nn.Module):  # shared trunk, heads V_risk and V_sigma
        def __init__(self) -> None:
            super().__init__()
            self.shared = nn.Sequential(
                nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
            )
            self.head_risk = nn.Sequential(nn.Linear(hidden, 64), nn.ReLU(), nn.Linear(64, 1))
            self.head_sigma = nn.Sequential(nn.Linear(hidden, 64), nn.ReLU(), nn.Linear(64, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.shared(x)
            return torch.cat([self.head_risk(h), self.head_sigma(h)], dim=-1)

    return Actor(), Critic()


def gae(deltas: np.ndarray, dones: np.ndarray, gamma: float, lam: float) -> np.ndarray:
    """GAE over a (T, N) rollout; ``dones`` cuts the recursion (as ``_gae_1d`` in the release)."""
    adv = np.zeros_like(deltas)
    last = np.zeros(deltas.shape[1])
    for t in reversed(range(deltas.shape[0])):
        last = deltas[t] + gamma * lam * (1.0 - dones[t]) * last
        adv[t] = last
    return adv


def shield_gate(sigma_t: np.ndarray, sigma_tp1: np.ndarray, k: float) -> np.ndarray:
    """The step-level gate ``alpha = unsafe_t + safe_t * unsafe_{t+1}`` with unsafe = sigma < k (0 or 1)."""
    unsafe_t, unsafe_tp1 = (sigma_t < k).astype(float), (sigma_tp1 < k).astype(float)
    return unsafe_t + (1.0 - unsafe_t) * unsafe_tp1


class _SingleAsVector:
    """A single Gymnasium env seen through the vector API with same-step autoreset."""

    def __init__(self, env: Any) -> None:
        self.env, self.num_envs = env, 1

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict]:
        obs, info = self.env.reset(seed=seed)
        return np.asarray(obs)[None], info

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        obs, r, term, trunc, info = self.env.step(actions[0])
        out: dict[str, Any] = {
            "sigma_t": np.array([info["sigma_t"]]),
            "sigma_tp1": np.array([info["sigma_tp1"]]),
            "collision": np.array([info["collision"]]),
            "risk_source_phi": np.array([info.get("risk_source") == "phi"]),
            "reward_vec": np.asarray(info["reward_vec"])[None],
            "risk": np.array([info["risk"]], dtype=np.float64),
        }
        if term or trunc:
            out["final_obs"], out["_final_obs"] = np.asarray(obs)[None], np.array([True])
            m = info.get("episode_metrics", {})
            out["episode_metrics"] = {k: np.array([v]) for k, v in m.items()}
            out["_episode_metrics"] = np.array([True])
            obs, _ = self.env.reset()
        return np.asarray(obs)[None], np.array([r]), np.array([term]), np.array([trunc]), out


def make_training_vector_env(env: Any, num_envs: int) -> Any:
    """The native batched vector env matching ``env`` (a ScenePilot adversary env with a named
    planner on the kinematic backend; the same configuration and the same Phi, so that
    ``env.save_phi`` saves what was trained), or ``env`` itself seen as a vector of one when it
    cannot be batched (a custom ego policy, the ego role, another backend)."""
    from gymnasium.vector import VectorEnv

    from icml26.envs.driving.env import VECTOR_CLASSES, ScenePilotEnv, ScenePilotVectorEnv

    base = getattr(env, "unwrapped", env)
    if isinstance(base, (ScenePilotVectorEnv, VectorEnv)):
        return base
    if not (
        isinstance(base, ScenePilotEnv)
        and base.role == "adversary"
        and base.world.planner_name != "external"
        and base.backend == "kinematic"
    ):
        return _SingleAsVector(env)
    w, c = base.world, base.config
    phi = base.phi_learner.net if base.phi_learner is not None else base.phi
    cls = VECTOR_CLASSES.get(c["version"], ScenePilotVectorEnv)
    return cls(
        num_envs=num_envs,
        **{**c, "scenario": list(base.scenarios), "ego": w.planner_name, "feasibility": w.feas,
           "phi": "ttc" if phi is None else phi, "render_mode": None,
           "feasibility_threshold": base.feasibility_threshold},
    )  # fmt: skip


class ScenePilotAgent:
    """The ScenePilot adversary (an icml26 Learner). Keyword arguments override :class:`ScenePilotArgs`."""

    version = "1"

    def __init__(self, **overrides: Any) -> None:
        known = {f.name for f in fields(ScenePilotArgs)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(
                f"ScenePilotAgent: unknown hyperparameter(s) {unknown}; known: {sorted(known)}"
            )
        if "k_values" in overrides:
            overrides["k_values"] = tuple(float(k) for k in overrides["k_values"])
        self.args = ScenePilotArgs(**overrides)
        if self.args.reward not in REWARD_SOURCES:
            raise ValueError(
                f"ScenePilotAgent: reward must be one of {REWARD_SOURCES}, got {self.args.reward!r}"
            )
        if self.args.logprob_of not in ("clamped", "sample"):
            raise ValueError(
                "ScenePilotAgent: logprob_of must be 'clamped' (the release) or 'sample', got "
                f"{self.args.logprob_of!r}"
            )
        if self.args.max_std is not None and not float(self.args.max_std) > 0:
            raise ValueError(
                f"ScenePilotAgent: max_std must be > 0 or None, got {self.args.max_std!r}"
            )
        if int(self.args.k_update_every) < 0:
            raise ValueError(
                "ScenePilotAgent: k_update_every must be >= 0 (0: the curriculum once over the "
                f"budget), got {self.args.k_update_every!r}"
            )
        self.actor: Any = None
        self.critic: Any = None
        self._seed: int | None = None
        self.act_dim = 1
        self.k_index = 0
        self.history: list[dict[str, float]] = []

    # ------------------------------------------------------------------ protocol
    def bind(self, observation_space: Any, action_space: Any) -> None:
        self.act_dim = int(np.prod(action_space.shape))
        if observation_space.shape != (27,):
            raise ValueError(
                f"ScenePilotAgent: expects the 27-number ScenePilot-v0 observation, got {observation_space.shape}"
            )

    def reset(self, seed: int | None = None) -> None:
        if self._seed is None:
            self._seed = seed

    @property
    def k(self) -> float:
        return float(self.args.k_values[self.k_index])

    def _ensure_nets(self) -> None:
        if self.actor is None:
            import torch

            torch.manual_seed(0 if self._seed is None else int(self._seed))
            self.actor, self.critic = _build_nets(
                27, self.act_dim, self.args.hidden, self.args.max_std
            )
            if self.args.init_std is not None:  # softplus(b) = init_std, tiny state dependence
                with torch.no_grad():
                    self.actor.fc_std.weight.mul_(0.01)
                    self.actor.fc_std.bias.fill_(float(np.log(np.expm1(self.args.init_std))))

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> np.ndarray:
        import torch

        self._ensure_nets()
        x = torch.as_tensor(np.asarray(observation, np.float32).reshape(-1, 27) / OBS_SCALE)
        with torch.no_grad():
            mu, std = self.actor(x)
            a = mu if self.args.deterministic else torch.distributions.Normal(mu, std).sample()
        return a.clamp(-1.0, 1.0).numpy().reshape(-1).astype(np.float32)

    # ------------------------------------------------------------------ learning
    def learn(self, env: Any, budget: Budget) -> dict[str, Any]:
        """Train on ``env`` (ScenePilot-v0) for ``budget.env_steps`` steps; returns curves."""
        import torch
        from torch.distributions import Normal

        if budget.env_steps is None:
            raise ValueError("ScenePilotAgent.learn: the Budget must set env_steps")
        A = self.args
        torch.set_num_threads(A.torch_threads)
        space = getattr(env, "single_action_space", getattr(env, "action_space", None))
        if space is not None:
            self.act_dim = int(np.prod(space.shape))
        self._ensure_nets()
        venv = make_training_vector_env(env, A.num_envs)
        N, T = venv.num_envs, A.rollout_steps
        opt_pi = torch.optim.Adam(self.actor.parameters(), lr=A.lr)
        opt_v = torch.optim.Adam(self.critic.parameters(), lr=A.lr)
        n_updates = max(1, int(budget.env_steps) // (N * T))
        k_every = int(A.k_update_every) or max(1, n_updates // len(A.k_values))
        seed = 0 if self._seed is None else int(self._seed)
        obs, _ = venv.reset(seed=seed)
        torch.manual_seed(seed)
        tick = 0
        ep_collisions, ep_count, ep_jr, ep_js, ep_ret = 0, 0, [], [], []
        try:
            from tqdm.auto import tqdm

            bar = tqdm(range(n_updates), desc="ScenePilot", leave=False, disable=n_updates < 20)
        except ImportError:  # pragma: no cover
            bar = range(n_updates)
        for update in bar:
            k = self.k
            set_k = getattr(venv, "set_feasibility_threshold", None)
            if callable(set_k):  # v1: the env's boundary-band collision bonus uses the same k
                set_k(k)
            buf_obs = np.zeros((T, N, 27), np.float32)
            buf_next = np.zeros((T, N, 27), np.float32)
            buf_act = np.zeros((T, N, self.act_dim), np.float32)
            r_risk, r_sig, dones, sig_t, sig_tp1, from_phi = (np.zeros((T, N)) for _ in range(6))
            for t in range(T):
                x = torch.as_tensor(obs / OBS_SCALE)
                with torch.no_grad():
                    mu, std = self.actor(x)
                    sample = Normal(mu, std).sample()
                    a = sample.clamp(-1.0, 1.0)  # the release clamps the sample
                action = a.numpy()
                next_obs, risk, term, trunc, info = venv.step(action)
                done = np.logical_or(term, trunc)
                # the release scores the clamped action; "sample": the drawn one (PPO as CleanRL
                # and SB3 do it: clip for the env only, so the ratio is of the action drawn)
                buf_obs[t], buf_act[t] = (
                    obs,
                    (sample.numpy() if A.logprob_of == "sample" else action),
                )
                nxt = np.array(next_obs, dtype=np.float32, copy=True)
                if done.any():
                    nxt[done] = info["final_obs"][done]
                    em = info["episode_metrics"]
                    ep_collisions += int(em["collision"][done].sum())
                    ep_count += int(done.sum())
                    ep_jr += em["J_risk"][done].tolist()
                    ep_js += em["J_sigma"][done].tolist()
                    if "J_reward" in em:  # v1, v2: the episode's sum of the env's reward
                        ep_ret += em["J_reward"][done].tolist()
                buf_next[t] = nxt
                if A.reward == "released":  # the release's r = risk (Phi / TTC proxy)
                    src = info["risk"] if "risk" in info else np.asarray(info["reward_vec"])[:, 0]
                    risk = np.asarray(src, dtype=np.float64)
                r_risk[t] = risk + A.collision_reward * np.asarray(info["collision"], float)
                r_sig[t] = info["sigma_tp1"]
                sig_t[t], sig_tp1[t], dones[t] = info["sigma_t"], info["sigma_tp1"], done
                from_phi[t] = info.get("risk_source_phi", False)
                obs = next_obs
            # ---- critics' TD(0) targets and the two GAE advantages
            S = torch.as_tensor(buf_obs.reshape(T * N, 27) / OBS_SCALE)
            S_next = torch.as_tensor(buf_next.reshape(T * N, 27) / OBS_SCALE)
            with torch.no_grad():
                V = self.critic(S).numpy().reshape(T, N, 2)
                V_next = self.critic(S_next).numpy().reshape(T, N, 2)
            target_r = r_risk + A.gamma * (1.0 - dones) * V_next[..., 0]
            target_s = r_sig + A.gamma * (1.0 - dones) * V_next[..., 1]
            adv_r = gae(target_r - V[..., 0], dones, A.gamma, A.gae_lambda)
            adv_s = gae(target_s - V[..., 1], dones, A.gamma, A.gae_lambda)
            adv_r = (adv_r - adv_r.mean()) / (adv_r.std() + 1e-6)
            adv_s = (adv_s - adv_s.mean()) / (adv_s.std() + 1e-6)
            # ---- the step-level gate
            alpha = shield_gate(sig_t, sig_tp1, k)
            if A.risk_only:
                alpha = np.zeros_like(alpha)
            adv = ((1.0 - alpha) * adv_r + alpha * adv_s).reshape(-1)
            # ---- PPO update (clip), value MSE on both heads
            b_act = torch.as_tensor(buf_act.reshape(T * N, self.act_dim))
            b_adv = torch.as_tensor(adv, dtype=torch.float32)
            b_tr = torch.as_tensor(target_r.reshape(-1), dtype=torch.float32)
            b_ts = torch.as_tensor(target_s.reshape(-1), dtype=torch.float32)
            with torch.no_grad():
                mu, std = self.actor(S)
                old_logp = Normal(mu, std).log_prob(b_act).sum(-1)
            B = T * N
            mb = min(A.minibatch_size, B)
            pl, vl = [], []
            for _ in range(A.update_epochs):
                perm = torch.randperm(B)
                for start in range(0, B, mb):
                    idx = perm[start : start + mb]
                    v = self.critic(S[idx])
                    v_loss = torch.nn.functional.mse_loss(
                        v[:, 0], b_tr[idx]
                    ) + torch.nn.functional.mse_loss(v[:, 1], b_ts[idx])
                    opt_v.zero_grad()
                    v_loss.backward()
                    torch.nn.utils.clip_grad_norm_(self.critic.parameters(), A.max_grad_norm)
                    opt_v.step()
                    mu, std = self.actor(S[idx])
                    dist = Normal(mu, std)
                    ratio = torch.exp(dist.log_prob(b_act[idx]).sum(-1) - old_logp[idx])
                    surr = torch.min(
                        ratio * b_adv[idx],
                        torch.clamp(ratio, 1 - A.clip_coef, 1 + A.clip_coef) * b_adv[idx],
                    )
                    p_loss = -(surr.mean() + A.ent_coef * dist.entropy().sum(-1).mean())
                    opt_pi.zero_grad()
                    p_loss.backward()
                    torch.nn.utils.clip_grad_norm_(self.actor.parameters(), A.max_grad_norm)
                    opt_pi.step()
                    pl.append(p_loss.item())
                    vl.append(v_loss.item())
            feasible_ratio = float((sig_tp1 >= k).mean())
            self.history.append(
                {
                    "update": update,
                    "env_steps": (update + 1) * B,
                    "k": k,
                    "feasible_ratio": feasible_ratio,
                    "gate_share": float(alpha.mean()),
                    "mean_risk": float(r_risk.mean()),
                    "mean_sigma": float(r_sig.mean()),
                    "phi_reward_share": float(from_phi.mean()),
                    "policy_loss": float(np.mean(pl)),
                    "value_loss": float(np.mean(vl)),
                    "episodes": ep_count,
                    "collision_rate": ep_collisions / max(ep_count, 1),
                    "J_risk": float(np.mean(ep_jr)) if ep_jr else float("nan"),
                    "J_sigma": float(np.mean(ep_js)) if ep_js else float("nan"),
                    "J_reward": float(np.mean(ep_ret)) if ep_ret else float("nan"),
                }
            )
            ep_collisions, ep_count, ep_jr, ep_js, ep_ret = 0, 0, [], [], []
            # ---- the k curriculum (cyclic, as in the release)
            tick += 1
            if tick >= k_every:
                tick = 0
                last = len(A.k_values) - 1
                self.k_index = (
                    (self.k_index + 1) % len(A.k_values)
                    if A.k_cycle
                    else min(self.k_index + 1, last)
                )
        phi = getattr(venv, "phi", None) or getattr(getattr(env, "unwrapped", env), "phi", None)
        return {
            "updates": n_updates,
            "env_steps": n_updates * N * T,
            "final_k": self.k,
            "phi_ready": bool(phi.ready) if phi is not None else False,
            "phi_updates": int(phi.n_updates) if phi is not None else 0,
            "curve": {
                key: [h[key] for h in self.history]
                for key in (
                    "env_steps",
                    "k",
                    "feasible_ratio",
                    "gate_share",
                    "collision_rate",
                    "mean_risk",
                    "mean_sigma",
                    "phi_reward_share",
                )
            },
        }

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the policy as ``.npz`` (loadable without torch by ``icml26.envs.driving.policy_io``)."""
        self._ensure_nets()
        arrays = {f"p{i}": p.detach().numpy() for i, p in enumerate(self.actor.parameters())}
        arrays.update({f"c{i}": p.detach().numpy() for i, p in enumerate(self.critic.parameters())})
        np.savez(
            path,
            obs_scale=OBS_SCALE,
            act_dim=np.array(self.act_dim),
            k_index=np.array(self.k_index),
            kind=np.array("scenepilot-tanh-gaussian"),
            **arrays,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> ScenePilotAgent:
        import torch

        agent = cls(**overrides)
        with np.load(path) as z:
            agent.act_dim, agent.k_index = int(z["act_dim"]), int(z["k_index"])
            agent._ensure_nets()
            with torch.no_grad():
                for i, p in enumerate(agent.actor.parameters()):
                    p.copy_(torch.from_numpy(z[f"p{i}"]))
                for i, p in enumerate(agent.critic.parameters()):
                    p.copy_(torch.from_numpy(z[f"c{i}"]))
        return agent

    def config(self) -> dict[str, Any]:
        return asdict(self.args)

    def clone(self) -> ScenePilotAgent:
        return copy.deepcopy(self)
