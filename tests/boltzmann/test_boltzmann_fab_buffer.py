"""FAB's prioritized replay buffer: sampling probabilities, weight adjustment, loss, budget."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
import torch

import icml26  # noqa: F401
from icml26.agents import make as make_agent
from icml26.agents.boltzmann.fab_buffer import PrioritizedBuffer, buffer_loss
from icml26.agents.boltzmann.flow_agent import FlowConfig
from icml26.protocol import Budget

SMALL = {"n_layers": 4, "hidden": 32, "bins": 16, "batch_size": 128}


def _f64(*v: float) -> torch.Tensor:
    return torch.tensor(v, dtype=torch.float64)


def test_sampling_probabilities_are_proportional_to_the_weights() -> None:
    buf = PrioritizedBuffer(10)
    buf.add(torch.arange(4.0)[:, None], torch.log(_f64(1, 2, 3, 4)), torch.zeros(4))
    assert torch.allclose(buf.probabilities(), _f64(0.1, 0.2, 0.3, 0.4))
    gen = torch.Generator().manual_seed(0)
    first = torch.stack([buf.sample_indices(2, gen) for _ in range(20_000)])
    assert all(len(set(row.tolist())) == 2 for row in first[:200])  # without replacement
    freq = torch.bincount(first[:, 0], minlength=4).double() / 20_000
    assert torch.allclose(freq, _f64(0.1, 0.2, 0.3, 0.4), atol=0.012)
    # second draw given first = 3 (p 0.4): index 2 with 0.3 / 0.6 = 0.5
    sel = first[first[:, 0] == 3, 1]
    assert float((sel == 2).double().mean()) == pytest.approx(0.5, abs=0.025)
    with pytest.raises(ValueError, match="cannot draw 5 of 4"):
        buf.sample_indices(5, gen)


def test_adjust_folds_q_old_over_q_new_into_the_weights() -> None:
    buf = PrioritizedBuffer(10)
    buf.add(torch.zeros(3, 1), _f64(0.0, 0.0, 0.5), _f64(-1.0, -2.0, -3.0))
    buf.adjust(torch.tensor([0, 1]), _f64(-2.0, -1.0))
    # log w_i + log q_old_i - log q_new_i: 0 - 1 + 2 = 1, 0 - 2 + 1 = -1; index 2 untouched
    assert torch.allclose(buf.log_w, _f64(1.0, -1.0, 0.5))
    assert torch.allclose(buf.log_q_old, _f64(-2.0, -1.0, -3.0))
    z = math.e + math.exp(-1) + math.exp(0.5)
    assert torch.allclose(
        buf.probabilities(), _f64(math.e / z, math.exp(-1) / z, math.exp(0.5) / z)
    )


def test_buffer_loss_hand_worked_with_and_without_clip() -> None:
    log_q_new = _f64(-1.0, -2.0).requires_grad_(True)
    log_q_old = _f64(-1.0 + math.log(2.0), -2.0 - math.log(4.0))  # q_old / q_new = 2, 1/4
    loss, w = buffer_loss(log_q_new, log_q_old)
    assert torch.allclose(w, _f64(2.0, 0.25))
    assert float(loss.detach()) == pytest.approx(-(2.0 * -1.0 + 0.25 * -2.0) / 2)  # 1.25
    (g,) = torch.autograd.grad(loss, log_q_new)
    assert torch.allclose(g, _f64(-1.0, -0.125))  # the weights carry no gradient
    loss_c, w_c = buffer_loss(log_q_new, log_q_old, w_clip=1.0)
    assert float(loss_c) == pytest.approx(-(1.0 * -1.0 + 0.25 * -2.0) / 2)  # 0.75
    assert torch.allclose(w_c, w)  # reported unclipped


def test_buffer_is_fifo_and_drops_nonfinite_weights() -> None:
    buf = PrioritizedBuffer(3)
    buf.add(_f64(0, 1)[:, None], _f64(0.0, -math.inf), _f64(0.0, 0.0))
    assert len(buf) == 1
    buf.add(_f64(2, 3, 4)[:, None], _f64(1.0, 2.0, 3.0), _f64(0.0, 0.0, 0.0))
    assert buf.x is not None and buf.x[:, 0].tolist() == [2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match="same length"):
        buf.add(torch.zeros(2, 1), _f64(0.0), _f64(0.0, 0.0))


def test_config_rejects_min_length_below_replay_batches() -> None:
    with pytest.raises(ValueError, match="fab_buffer_min_batches must be >= fab_replay_steps"):
        FlowConfig(objective="fab", fab_buffer=True, fab_buffer_min_batches=2, fab_replay_steps=4)
    with pytest.raises(ValueError, match="fab_w_clip"):
        FlowConfig(objective="fab", fab_w_clip=0.0)


def test_fab_with_buffer_spends_its_budget_and_makes_replay_updates() -> None:
    budget = 128 * 5 * 8  # 8 AIS batches of 128 chains x (4 levels + 1)
    env = gym.make("icml26/BoltzmannGMM40-v0", data="none", energy_budget=budget, batch_size=256)
    env.reset(seed=0)
    agent = make_agent(
        "flow-fab",
        ais_levels=4,
        fab_buffer=True,
        fab_buffer_min_batches=3,
        fab_replay_steps=3,
        fab_buffer_batches=5,
        **SMALL,
    )
    agent.reset(0)
    stats = agent.learn(env, Budget(energy_evals=budget))
    assert stats["energy_evals"] == env.unwrapped.total_evaluations == budget
    assert stats["ais_batches"] == 8
    assert stats["iterations"] == (8 - 3 + 1) * 3  # replay steps once 3 batches are stored
    assert stats["buffer_length"] == 5 * 128  # capped at 5 batches
    c = stats["curve"][-1]
    assert math.isfinite(c["loss"]) and c["w_adjust_mean"] > 0 and 0 < c["ais_ess"] <= 1
