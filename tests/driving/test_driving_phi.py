"""Phi, the online TD(0) risk predictor: training lowers its TD loss, save/load, the TTC fallback."""

from __future__ import annotations

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
    s, s2, r, done = _transitions()
    before = phi.td_loss(s, s2, r, done)
    for _ in range(300):
        phi.update(s, s2, r, done)
    after = phi.td_loss(s, s2, r, done)
    assert after < 0.5 * before, (before, after)
    assert phi.n_updates == 300


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
    for _ in range(120):  # passes update_gap = 100: the target net moved
        phi.update(s, s2, r, done)
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
        assert info["reward_vec"][0] == pytest.approx(r) and info["reward_vec"][1] == pytest.approx(info["sigma"])
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
