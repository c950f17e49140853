"""Phi, the online TD(0) risk predictor: training lowers its TD loss, save/load, the TTC fallback."""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.envs.driving.risk import RiskPredictor


def _transitions(n: int = 256, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Synthetic approach episodes: inv_d rises towards a collision at the end of some of them."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(-1, 1, size=(n, 6)).astype(np.float32)
    dist = rng.uniform(0.0, 40.0, size=n)
    s[:, 4] = 1.0 / (dist + 1.0)
    s_next = s.copy()
    s_next[:, 4] = 1.0 / (np.maximum(dist - 1.0, 0.0) + 1.0)
    collision = (dist < 1.5).astype(np.float32)
    r = collision + 0.95 * s_next[:, 4] - s[:, 4]
    return s, s_next, r.astype(np.float32), collision


def test_training_reduces_td_loss() -> None:
    phi = RiskPredictor(training=True, seed=0)
    s, s2, r, done = _transitions(64)

    def excess() -> (
        float
    ):  # the weighted BCE minus its floor, the targets' weighted entropy (a weighted KL)
        tgt, w = phi.td_targets(s, s2, r, done)
        t = np.clip(tgt.astype(np.float64), 1e-7, 1 - 1e-7)
        return phi.td_loss(s, s2, r, done) - float(
            np.mean(-w * (t * np.log(t) + (1 - t) * np.log(1 - t)))
        )

    before = excess()
    for _ in range(10):
        phi.update(s, s2, r, done)
    after = excess()
    assert after < 0.2 * before, (before, after)
    assert phi.n_updates == 640  # one Adam step per transition, as the release


def _release_update(net, tgt, opt, s, s2, r, done, step, gamma=0.95, tau=0.01, gap=100):
    """The release's ``av_safe.update`` for one transition, written out with torch (the reference)."""
    import torch

    x, x2 = torch.from_numpy(s[None]), torch.from_numpy(s2[None])
    with torch.no_grad():
        t = torch.clamp(
            torch.tensor([[float(r)]]) + (1.0 - float(done)) * gamma * tgt(x2), 0.0, 1.0
        )
        w = torch.where(torch.clamp(t + 1.0 * x[:, -2:-1], 0.0, 1.0) > 0.85, 50.0, 1.0)
    loss = torch.nn.functional.binary_cross_entropy(net(x), t, weight=w)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if (step + 1) % gap == 0:
        with torch.no_grad():
            for pt, p in zip(tgt.parameters(), net.parameters()):
                pt.mul_(1 - tau).add_(tau * p)


def test_update_matches_the_release_one_transition_at_a_time() -> None:
    import torch

    phi = RiskPredictor(training=True, seed=5)
    s, s2, r, done = _transitions(150, seed=5)
    done[::7] = 1.0
    phi.update(
        s[:1], s2[:1], r[:1], done[:1]
    )  # builds the torch nets; then a batch that crosses a soft update
    T = phi._torch

    def mk() -> torch.nn.Sequential:
        return torch.nn.Sequential(
            torch.nn.Linear(6, 128),
            torch.nn.ReLU(),
            torch.nn.Linear(128, 128),
            torch.nn.ReLU(),
            torch.nn.Linear(128, 1),
            torch.nn.Sigmoid(),
        )

    net, tgt = mk(), mk()
    net.load_state_dict(T["online"].state_dict())
    tgt.load_state_dict(T["target"].state_dict())
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    opt.load_state_dict(
        copy.deepcopy(T["opt"].state_dict())
    )  # a copy: load_state_dict shares tensors
    phi.update(s[1:], s2[1:], r[1:], done[1:])
    for i in range(1, 150):
        _release_update(net, tgt, opt, s[i], s2[i], r[i], done[i], step=i)
    assert phi.n_updates == 150
    phi._sync_from_torch()
    for ours, ref in ((phi._online, net), (phi._target, tgt)):
        for a, b in zip(ours, ref.parameters()):
            np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(
        phi.value(s), tgt(torch.from_numpy(s))[:, 0].detach().numpy(), rtol=1e-4, atol=1e-6
    )


def test_release_convergence_test_makes_phi_ready_and_stops_learning() -> None:
    # terminal transitions with r = 0 and no NPC (inv_d = 0): every TD target is 0, the BCE can reach 0
    phi = RiskPredictor(training=True, seed=6)
    rng = np.random.default_rng(6)
    s = rng.uniform(-0.1, 0.1, size=(500, 6)).astype(np.float32)
    s[:, 4:] = 0.0
    zeros = np.zeros(500, np.float32)
    for _ in range(20):
        if phi.ready:
            break
        phi.update(s, s, zeros, np.ones(500, np.float32))
    assert phi.ready and phi.converged and phi.frozen_at is None
    assert np.mean(phi._losses) < 0.01 and len(phi._losses) == 1000
    n = phi.n_updates
    assert phi.update(s, s, zeros, zeros) is None and phi.n_updates == n  # no more learning


def test_max_updates_freezes_phi_with_its_online_network() -> None:
    phi = RiskPredictor(training=True, seed=7, max_updates=250)
    s, s2, r, done = _transitions(100, seed=7)
    for _ in range(4):
        phi.update(s, s2, r, done)
    assert phi.ready and phi.n_updates == 250 and phi.frozen_at == 250
    phi._sync_from_torch()
    for a, b in zip(phi._online, phi._target):
        np.testing.assert_array_equal(
            a, b
        )  # the release's checkpoint: _net loaded into both networks
    np.testing.assert_allclose(
        phi.risk(s), np.clip(phi.value(s, target=False) + s[:, 4], 0, 1), rtol=1e-6
    )
    with pytest.raises(ValueError, match="max_updates"):
        RiskPredictor(max_updates=0)


def test_risk_is_clipped_value_plus_inverse_distance() -> None:
    phi = RiskPredictor(training=False, seed=1)
    s, *_ = _transitions(32)
    expected = np.clip(phi.value(s) + 1.0 * s[:, 4], 0.0, 1.0)
    np.testing.assert_allclose(phi.risk(s), expected, rtol=1e-6)
    assert phi.ready  # inference-only predictors are ready


def test_numpy_forward_matches_torch() -> None:
    phi = RiskPredictor(training=True, seed=2)
    s, s2, r, done = _transitions(64)
    phi.update(s, s2, r, done)  # builds the torch nets
    import torch

    with torch.no_grad():
        t_out = phi._torch["online"](torch.from_numpy(s))[:, 0].numpy()
    np.testing.assert_allclose(phi.value(s, target=False), t_out, rtol=1e-5, atol=1e-6)


def test_save_load_roundtrip(tmp_path) -> None:
    phi = RiskPredictor(training=True, seed=3)
    s, s2, r, done = _transitions(64)
    phi.update(s, s2, r, done)
    phi.update(
        s[:56], s2[:56], r[:56], done[:56]
    )  # 120 updates: passes update_gap = 100, the target moved
    path = tmp_path / "phi.npz"
    phi.save(path)
    loaded = RiskPredictor.load(path)
    np.testing.assert_allclose(loaded.risk(s), phi.risk(s), rtol=1e-6)
    assert loaded.ready and not loaded.training and loaded.n_updates == 120
    copy = pickle.loads(pickle.dumps(phi))
    copy.update(s, s2, r, done)
    phi.update(s, s2, r, done)
    np.testing.assert_allclose(copy.value(s, target=False), phi.value(s, target=False), rtol=1e-6)


def test_env_uses_ttc_fallback_then_trains_phi_after_a_collision() -> None:
    # scenario 5 with the IDM planner and the scripted red-light runner ends in a collision
    from icml26.agents.driving.baselines import ScriptedAdversary

    env = gym.make("icml26/ScenePilot-v0", scenario=5, ego="idm", phi="online")
    agent = ScriptedAdversary()
    obs, info = env.reset(seed=0)
    agent.reset(0)
    phi = env.unwrapped.phi
    collided = False
    for _ in range(300):
        obs, r, term, trunc, info = env.step(agent.act(obs, info))
        assert info["risk_source"] == "ttc"
        expected = 0.0 if not np.isfinite(info["ttc"]) else 2.0 / (1.0 + info["ttc"] / 2.5)
        assert r == pytest.approx(expected)
        assert info["reward_vec"][0] == pytest.approx(r) and info["reward_vec"][1] == pytest.approx(
            info["sigma"]
        )
        if info["collision"]:
            collided = True
        if term or trunc:
            break
    assert collided and phi.started and phi.n_updates >= 1


def test_env_with_a_ready_phi_rewards_phi(tmp_path) -> None:
    path = tmp_path / "phi.npz"
    RiskPredictor(training=False, seed=4).save(path)
    env = gym.make("icml26/ScenePilot-v0", scenario=8, phi=str(path))
    env.reset(seed=1)
    _, r, *_, info = env.step(np.array([0.5], np.float32))
    assert info["risk_source"] == "phi" and 0.0 <= r <= 1.0
    with pytest.raises(TypeError, match="phi"):
        gym.make("icml26/ScenePilot-v0", phi=3.0)


def test_phi_trains_from_the_first_collision_then_becomes_the_reward() -> None:
    # scenario 5: the scripted red-light runner hits the IDM ego (step ~76 of every episode)
    import torch

    from icml26.agents.driving.baselines import ScriptedAdversary

    env = gym.make("icml26/ScenePilot-v0", scenario=5, ego="idm", phi={"max_updates": 150})
    phi, world = env.unwrapped.phi, env.unwrapped.world
    agent = ScriptedAdversary()
    collisions, phi_steps, last_n = 0, 0, 0
    for episode in range(4):
        obs, info = env.reset(seed=episode)
        agent.reset(episode)
        while True:
            ready_before = phi.ready
            obs, r, term, trunc, info = env.step(agent.act(obs, info))
            collisions += info["collision"]
            if (
                not ready_before
            ):  # TTC fallback; Phi learns one transition per step from the first collision on
                assert info["risk_source"] == "ttc"
                ttc = info["ttc"]
                assert r == pytest.approx(0.0 if not np.isfinite(ttc) else 2.0 / (1.0 + ttc / 2.5))
                assert phi.n_updates == (0 if collisions == 0 else min(last_n + 1, 150))
            else:  # Phi's risk of s' from the frozen online network: clip(V(s') + 1 / (d + 1), 0, 1)
                phi_steps += 1
                assert info["risk_source"] == "phi" and phi.n_updates == 150
                feat = world.feat_prev[0]
                d = np.hypot(*(obs[9:11] - obs[0:2]))
                assert feat[4] == pytest.approx(1.0 / (d + 1.0), rel=1e-4)
                with torch.no_grad():
                    v = float(phi._torch["online"](torch.from_numpy(feat[None]))[0, 0])
                assert r == pytest.approx(min(max(v + feat[4], 0.0), 1.0), abs=1e-6)
                assert info["reward_vec"][0] == pytest.approx(r)
            last_n = phi.n_updates
            if term or trunc:
                break
    assert phi.ready and phi.frozen_at == 150 and phi_steps > 50


def test_scenepilot_trains_the_envs_phi_and_switches_to_its_reward(tmp_path) -> None:
    # scenario 4 against IDM: every episode ends in the head-on collision of the pass (step ~60)
    from icml26.agents.driving.scenepilot import ScenePilotAgent
    from icml26.protocol import Budget

    env = gym.make("icml26/ScenePilot-v0", scenario=4, ego="idm", phi={"max_updates": 300})
    agent = ScenePilotAgent(num_envs=8, rollout_steps=64, minibatch_size=256)
    agent.reset(0)
    stats = agent.learn(env, Budget(env_steps=8 * 64 * 3))
    phi = env.unwrapped.phi  # the very predictor the batched training scenes shared
    assert stats["phi_ready"] and stats["phi_updates"] == 300 and phi.ready and phi.n_updates == 300
    share = stats["curve"]["phi_reward_share"]
    assert share[0] < 0.5 and share[-1] == 1.0, share
    path = tmp_path / "phi.npz"
    env.unwrapped.save_phi(path)
    loaded = RiskPredictor.load(path)
    s, *_ = _transitions(16)
    np.testing.assert_allclose(loaded.risk(s), phi.risk(s), rtol=1e-6)
