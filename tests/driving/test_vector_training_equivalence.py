"""Adversary training on the native vector env (one scene) and on the single env seen as a vector
of one give the same PPO updates: the vectorization changes speed, not the algorithm."""

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.agents.driving import scenepilot
from icml26.agents.driving.scenepilot import ScenePilotAgent, _SingleAsVector
from icml26.protocol import Budget


def _train(monkeypatch: pytest.MonkeyPatch, single: bool) -> ScenePilotAgent:
    env = gym.make("icml26/ScenePilot-v2", phi="ttc")
    if single:
        monkeypatch.setattr(scenepilot, "make_training_vector_env", lambda e, n: _SingleAsVector(e))
    agent = ScenePilotAgent(num_envs=1, rollout_steps=128)
    agent.bind(env.observation_space, env.action_space)
    agent.reset(seed=3)
    agent.learn(env, Budget(env_steps=256))
    monkeypatch.undo()
    return agent


def test_vector_and_single_env_training_give_the_same_parameters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vec, one = _train(monkeypatch, single=False), _train(monkeypatch, single=True)
    assert len(vec.history) == len(one.history) == 2
    for a, b in zip(vec.history, one.history):
        assert a["mean_risk"] == pytest.approx(b["mean_risk"], abs=1e-9)
        assert a["mean_sigma"] == pytest.approx(b["mean_sigma"], abs=1e-9)
    fresh = ScenePilotAgent(num_envs=1, rollout_steps=128)
    fresh.bind(*(lambda e: (e.observation_space, e.action_space))(gym.make("icml26/ScenePilot-v2")))
    fresh.reset(seed=3)
    fresh._ensure_nets()
    moved = [
        float(np.abs(p.detach().numpy() - q.detach().numpy()).max())
        for p, q in zip(vec.actor.parameters(), fresh.actor.parameters())
    ]
    assert max(moved) > 1e-4  # the updates did change the policy
    for net in ("actor", "critic"):
        pv = [p.detach().numpy() for p in getattr(vec, net).parameters()]
        ps = [p.detach().numpy() for p in getattr(one, net).parameters()]
        assert len(pv) == len(ps)
        for x, y in zip(pv, ps):
            np.testing.assert_allclose(x, y, atol=1e-6, rtol=0)
