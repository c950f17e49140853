"""Early stopping on an alanine-like case: a few hundred MD frames of alanine dipeptide in
internal coordinates (60 dimensions), where a flow overfits within tens of updates.

The alanine section of docs/results/boltzmann.md once kept the untrained flow (update 0) for
every ML run: the learning rate tuned on 2-D GMM-40 made the validation NLL rise from the first
validation point on. These tests pin both behaviours: when the updates improve the held-out
NLL, early stopping returns a trained flow (not update 0), and when they stop improving it
stops and restores the best one.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.agents.boltzmann.flow_agent import FlowSampler
from icml26.protocol import Budget

FLOW = {"n_layers": 4, "hidden": 32, "bins": 8, "batch_size": 64, "val_fraction": 0.2}


@pytest.fixture(scope="module")
def aldp_env(tmp_path_factory: pytest.TempPathFactory) -> gym.Env:
    mp = pytest.MonkeyPatch()
    mp.setenv("ICML26_CACHE", str(tmp_path_factory.mktemp("cache")))
    env = gym.make(
        "icml26/BoltzmannAlanineDipeptide-v0",
        data="biased",
        dataset_size=256,
        energy_budget=0,
        target_kwargs={"backend": "openmm", "data_preset": "tiny"},
    )
    env.reset(seed=0)
    yield env
    mp.undo()


def _learn(env: gym.Env, **kw: object) -> tuple[FlowSampler, dict]:
    agent = FlowSampler(objective="ml", **{**FLOW, **kw})
    agent.reset(0)
    return agent, agent.learn(env, Budget())


def test_early_stopping_keeps_a_trained_flow_when_training_helps(aldp_env: gym.Env) -> None:
    agent, stats = _learn(aldp_env, lr=3e-4, n_iters=60, eval_every=5, patience=20)
    vals = [v["val_loss"] for v in stats["val_curve"]]
    assert stats["val_curve"][0]["iteration"] == 0
    assert stats["best_iteration"] > 0 and stats["val_loss_best"] < vals[0] - 0.2
    # the returned flow is the best one, evaluated independently on the held-out frames
    nll = -float(np.mean(agent.log_prob(agent.val_x)))
    assert nll == pytest.approx(stats["val_loss_best"], abs=1e-2)


def test_early_stopping_stops_and_restores_the_best_flow(aldp_env: gym.Env) -> None:
    agent, stats = _learn(aldp_env, lr=3e-3, lr_decay=False, n_iters=2000, eval_every=5, patience=6)
    vals = [v["val_loss"] for v in stats["val_curve"]]
    assert stats["stopped_early"] and stats["iterations"] < 2000
    assert stats["iterations"] == stats["best_iteration"] + 6 * 5
    assert stats["val_loss_best"] == min(vals) and vals[-1] > min(vals)
    nll = -float(np.mean(agent.log_prob(agent.val_x)))
    assert nll == pytest.approx(stats["val_loss_best"], abs=1e-2)
