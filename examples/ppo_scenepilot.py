"""PPO on icml26/ScenePilot-v0 in one file (CleanRL style: read it top to bottom).

The agent is ScenePilot's adversary car: a continuous action in [-1, 1] steers its attack, and
the reward is the risk it creates for the ego vehicle. Everything PPO needs is here: a Gaussian
actor and a critic, rollouts from a synchronous vector env, GAE, and the clipped objective.

    python examples/ppo_scenepilot.py                          # 100k steps, a minute or two on one core
    python examples/ppo_scenepilot.py --total-timesteps 512    # a quick check that it runs

It prints the mean return of the episodes that ended during each update, and at the end the
mean return of 5 deterministic evaluation episodes on seeds the training never used.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Normal

import icml26  # noqa: F401  (registers the icml26/ env ids)


@dataclass
class Args:
    env_id: str = "icml26/ScenePilot-v0"
    scenario: int = 1  # SafeBench scenario 1..8
    seed: int = 0
    total_timesteps: int = 100_000
    num_envs: int = 4
    num_steps: int = 128  # rollout length per env; one update uses num_envs * num_steps steps
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    eval_episodes: int = 5


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Args):
        parser.add_argument(
            "--" + f.name.replace("_", "-"), type=type(f.default), default=f.default
        )
    return Args(**vars(parser.parse_args()))


def make_env(args: Args) -> gym.Env:
    env = gym.make(args.env_id, scenario=args.scenario)
    env = gym.wrappers.RecordEpisodeStatistics(env)
    return gym.wrappers.ClipAction(env)


def layer(n_in: int, n_out: int, std: float = float(np.sqrt(2))) -> nn.Linear:
    lin = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.zeros_(lin.bias)
    return lin


class Agent(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, obs_scale: np.ndarray):
        super().__init__()
        # ScenePilot's observations are positions (up to 1000 m), speeds and accelerations:
        # divide by the space's bounds so every input is in [-1, 1].
        self.register_buffer("obs_scale", torch.as_tensor(obs_scale, dtype=torch.float32))
        self.critic = nn.Sequential(
            layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0)
        )
        self.actor_mean = nn.Sequential(
            layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, act_dim, 0.01)
        )
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs / self.obs_scale).squeeze(-1)

    def action_and_value(self, obs: torch.Tensor, action: torch.Tensor | None = None):
        x = obs / self.obs_scale
        mean = self.actor_mean(x)
        dist = Normal(mean, self.actor_logstd.expand_as(mean).exp())
        if action is None:
            action = dist.sample()
        return (
            action,
            dist.log_prob(action).sum(-1),
            dist.entropy().sum(-1),
            self.critic(x).squeeze(-1),
        )


def evaluate(agent: Agent, args: Args) -> float:
    """Mean return of deterministic (mean-action) episodes on seeds after the training seeds."""
    env = make_env(args)
    returns = []
    for i in range(args.eval_episodes):
        obs, _ = env.reset(seed=args.seed + 10_000 + i)
        done, total = False, 0.0
        while not done:
            with torch.no_grad():
                mean = agent.actor_mean(
                    torch.as_tensor(obs, dtype=torch.float32)[None] / agent.obs_scale
                )
            obs, reward, terminated, truncated, _ = env.step(mean[0].numpy())
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def main(args: Args) -> float:
    torch.manual_seed(args.seed)
    # Same-step autoreset (as in CleanRL): when an episode ends, the returned observation is
    # already the first of the next episode, and `done` masks the bootstrap across the boundary.
    envs = gym.vector.SyncVectorEnv(
        [lambda: make_env(args) for _ in range(args.num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    obs_space, act_space = envs.single_observation_space, envs.single_action_space
    agent = Agent(obs_space.shape[0], act_space.shape[0], obs_space.high)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    batch_size = args.num_envs * args.num_steps
    num_updates = max(1, args.total_timesteps // batch_size)
    obs_buf = torch.zeros((args.num_steps, args.num_envs, obs_space.shape[0]))
    act_buf = torch.zeros((args.num_steps, args.num_envs, act_space.shape[0]))
    logp_buf, rew_buf, done_buf, val_buf = (
        torch.zeros((args.num_steps, args.num_envs)) for _ in range(4)
    )

    next_obs = torch.as_tensor(envs.reset(seed=args.seed)[0], dtype=torch.float32)
    next_done = torch.zeros(args.num_envs)
    global_step, start = 0, time.time()
    for update in range(1, num_updates + 1):
        for g in optimizer.param_groups:  # linear learning-rate annealing
            g["lr"] = (1.0 - (update - 1.0) / num_updates) * args.learning_rate
        episode_returns = []
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs_buf[step], done_buf[step] = next_obs, next_done
            with torch.no_grad():
                action, logp, _, value = agent.action_and_value(next_obs)
            act_buf[step], logp_buf[step], val_buf[step] = action, logp, value
            obs, reward, terminated, truncated, info = envs.step(action.numpy())
            rew_buf[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs = torch.as_tensor(obs, dtype=torch.float32)
            next_done = torch.as_tensor(np.logical_or(terminated, truncated), dtype=torch.float32)
            final = info.get("final_info", {})  # same-step autoreset: the ended episodes' info
            if "episode" in final:
                episode_returns.extend(final["episode"]["r"][final["_episode"]].tolist())

        # generalized advantage estimation, backwards through the rollout
        with torch.no_grad():
            next_value = agent.value(next_obs)
            advantages = torch.zeros_like(rew_buf)
            last = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                not_done = 1.0 - (next_done if t == args.num_steps - 1 else done_buf[t + 1])
                value_next = next_value if t == args.num_steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + args.gamma * value_next * not_done - val_buf[t]
                last = delta + args.gamma * args.gae_lambda * not_done * last
                advantages[t] = last
            returns = advantages + val_buf

        b_obs, b_act = obs_buf.reshape(batch_size, -1), act_buf.reshape(batch_size, -1)
        b_logp, b_adv = logp_buf.reshape(-1), advantages.reshape(-1)
        b_ret, b_val = returns.reshape(-1), val_buf.reshape(-1)
        rng = np.random.default_rng(args.seed + update)
        for _ in range(args.update_epochs):
            for mb in np.split(rng.permutation(batch_size), args.num_minibatches):
                _, new_logp, entropy, new_value = agent.action_and_value(b_obs[mb], b_act[mb])
                ratio = (new_logp - b_logp[mb]).exp()
                adv = (b_adv[mb] - b_adv[mb].mean()) / (b_adv[mb].std() + 1e-8)
                pg_loss = torch.max(
                    -adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                v_clipped = b_val[mb] + (new_value - b_val[mb]).clamp(
                    -args.clip_coef, args.clip_coef
                )
                v_loss = (
                    0.5
                    * torch.max((new_value - b_ret[mb]) ** 2, (v_clipped - b_ret[mb]) ** 2).mean()
                )
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        mean_ret = f"{np.mean(episode_returns):.2f}" if episode_returns else "-"
        print(
            f"update {update}/{num_updates}  step {global_step}  episodes {len(episode_returns)}  "
            f"mean return {mean_ret}  loss {loss.item():.3f}  {global_step / (time.time() - start):.0f} steps/s"
        )
    envs.close()
    score = evaluate(agent, args)
    print(f"evaluation: mean return {score:.2f} over {args.eval_episodes} episodes")
    return score


if __name__ == "__main__":
    main(parse_args())
