"""Driving agents: the ScenePilot gate, GAE and curriculum, baselines, SB3 PPO through the adapter."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
import icml26.agents
from icml26.agents.driving.baselines import LCAgent, ScriptedAdversary
from icml26.agents.driving.scenepilot import ScenePilotAgent, gae, shield_gate
from icml26.envs.driving.env import ScenePilotVectorEnv
from icml26.protocol import Budget


def test_shield_gate_cases() -> None:
    # (sigma_t, sigma_t+1) vs k = 0.1: safe->safe = risk (0); unsafe now = feasibility (1);
    # safe now but unsafe next = feasibility early (1); unsafe->safe = 1
    s_t = np.array([0.5, 0.05, 0.5, 0.05, 0.1])
    s_n = np.array([0.5, 0.5, 0.05, 0.05, 0.1])
    np.testing.assert_array_equal(shield_gate(s_t, s_n, 0.1), [0, 1, 1, 1, 0])
    np.testing.assert_array_equal(shield_gate(s_t, s_n, 0.0), [0, 0, 0, 0, 0])


def test_gae_matches_a_brute_force_loop() -> None:
    rng = np.random.default_rng(0)
    T, N, g, lam = 12, 3, 0.99, 0.95
    deltas, dones = rng.normal(size=(T, N)), (rng.random((T, N)) < 0.2).astype(float)
    ref = np.zeros((T, N))
    for n in range(N):
        for t in range(T):
            acc, coef = 0.0, 1.0
            for u in range(t, T):
                acc += coef * deltas[u, n]
                if dones[u, n]:
                    break
                coef *= g * lam
            ref[t, n] = acc
    np.testing.assert_allclose(gae(deltas, dones, g, lam), ref, rtol=1e-12)


def test_scenepilot_learns_logs_feasible_ratio_and_walks_the_curriculum() -> None:
    agent = ScenePilotAgent(num_envs=8, rollout_steps=32, k_update_every=1, minibatch_size=128)
    env = gym.make("icml26/ScenePilot-v0", scenario="all", phi="ttc")
    agent.bind(env.observation_space, env.action_space)
    agent.reset(0)
    before = agent.act(np.zeros(27, np.float32)).copy()
    stats = agent.learn(env, Budget(env_steps=8 * 32 * 3))
    assert stats["updates"] == 3 and [h["k"] for h in agent.history] == [0.0, 0.02, 0.05]
    assert all(0.0 <= h["feasible_ratio"] <= 1.0 for h in agent.history)
    assert agent.k == 0.09
    after = agent.act(np.zeros(27, np.float32))
    assert after.shape == (1,) and np.all(np.abs(after) <= 1) and not np.allclose(before, after)
    # the risk-only ablation never gates
    ablation = ScenePilotAgent(num_envs=4, rollout_steps=16, risk_only=True)
    ablation.reset(0)
    ablation.learn(env, Budget(env_steps=64))
    assert ablation.history[0]["gate_share"] == 0.0


def test_scenepilot_learns_on_a_custom_ego_through_the_single_env() -> None:
    class Coast:
        def act(self, obs, info=None):
            return np.array([0.2, 0.0])

    env = gym.make("icml26/ScenePilot-v0", scenario=8, ego=Coast(), phi="ttc")
    agent = ScenePilotAgent(rollout_steps=16)
    agent.reset(1)
    stats = agent.learn(env, Budget(env_steps=16))
    assert stats["env_steps"] == 16


def test_scenepilot_is_deterministic_under_a_seed() -> None:
    outs = []
    for _ in range(2):
        agent = ScenePilotAgent(num_envs=4, rollout_steps=16)
        agent.reset(3)
        agent.learn(
            ScenePilotVectorEnv(num_envs=4, scenario="all", phi="ttc"), Budget(env_steps=64)
        )
        outs.append(agent.act(np.ones(27, np.float32)))
    np.testing.assert_array_equal(outs[0], outs[1])


def test_max_std_caps_the_policy_std_that_the_entropy_bonus_and_clamping_inflate() -> None:
    """The sampled action is clamped to [-1, 1], so beyond std ~1 no reward pulls the std back while
    the entropy bonus pushes it up: uncapped it passes 1 within ten aggressive updates, capped it
    stays at or below ``max_std``; the history logs the episodes' env return (``J_reward``)."""
    import torch

    from icml26.agents.driving.scenepilot import OBS_SCALE

    env = gym.make("icml26/ScenePilot-v2", scenario=[6], ego="human", action="acc_steer", phi="ttc")
    probe = torch.as_tensor(np.array([env.reset(seed=s)[0] for s in range(8)]) / OBS_SCALE)
    top = {}
    for cap in (None, 1.0):
        agent = ScenePilotAgent(
            num_envs=8, rollout_steps=32, lr=3e-2, update_epochs=4, minibatch_size=64, max_std=cap
        )
        agent.bind(env.observation_space, env.action_space)
        agent.reset(0)
        agent.learn(env, Budget(env_steps=8 * 32 * 10))
        with torch.no_grad():
            top[cap] = float(agent.actor(probe.float())[1].max())
        returns = [h["J_reward"] for h in agent.history]
        assert len(returns) == 10 and any(np.isfinite(r) for r in returns)
    assert top[None] > 1.0 and top[1.0] <= 1.0


def test_scripted_adversary_waits_for_its_trigger() -> None:
    env = gym.make("icml26/ScenePilot-v0", scenario=5)
    agent = ScriptedAdversary()
    obs, info = env.reset(seed=0)
    agent.reset(0)
    assert agent.act(obs, info)[0] == -1.0  # the ego is 60 m away: wait
    for _ in range(120):
        a = agent.act(obs, info)
        obs, *_, info = env.step(a)
        if a[0] == 1.0:
            break
    assert a[0] == 1.0  # triggered: drive at 10 m/s
    d = np.hypot(obs[9] - obs[0], obs[10] - obs[1])
    assert d < 40.0
    with pytest.raises(ValueError, match="scenario"):
        agent.act(obs, None)


def test_lc_reinforce_moves_towards_better_parameters() -> None:
    lc = LCAgent(lr=0.2)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(64, 2))
    batch = [(5, z[i], float(z[i, 1] > 0)) for i in range(64)]  # faster = better in scenario 5
    mu0 = lc.mu[5].copy()
    lc._reinforce(batch, 100)
    assert lc.mu[5, 1] > mu0[1] + 0.05 and abs(lc.mu[5, 0] - mu0[0]) < abs(lc.mu[5, 1] - mu0[1])
    env = gym.make("icml26/ScenePilot-v0", scenario="all", phi="ttc")
    lc2 = LCAgent(num_envs=8, batch_episodes=8)
    lc2.bind(env.observation_space, env.action_space)
    lc2.reset(0)
    stats = lc2.learn(env, Budget(env_steps=8 * 400))
    assert stats["updates"] >= 1 and not np.allclose(lc2.mu, 0.0)


def test_registered_agents_construct() -> None:
    for name in (
        "scenepilot",
        "driving-ppo-risk",
        "driving-scripted",
        "driving-lc",
        "driving-no-finetune",
    ):
        agent = icml26.agents.make(name)
        assert callable(agent.act)
    assert icml26.agents.make("driving-ppo-risk").args.risk_only


def test_sb3_ppo_trains_a_few_thousand_steps() -> None:
    env = gym.make("icml26/ScenePilot-v0", scenario="all", phi="ttc")
    agent = icml26.agents.make("sb3-ppo", n_steps=512, batch_size=128, n_epochs=2)
    agent.reset(0)
    stats = agent.learn(env, Budget(env_steps=2048))
    assert stats["env_steps"] >= 2048
    obs, _ = env.reset(seed=1)
    a = agent.act(obs)
    assert env.action_space.contains(np.asarray(a, np.float32))
    av = gym.make("icml26/ScenePilotAV-v0", scenario="all", base_planner="idm")
    ego = icml26.agents.make("sb3-ppo", n_steps=256, batch_size=64, n_epochs=1)
    ego.reset(0)
    assert ego.learn(av, Budget(env_steps=512))["env_steps"] >= 512
