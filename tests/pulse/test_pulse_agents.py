"""PULSE's objective by hand, the card's linear-Gaussian derivation, and the agents' protocol."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26 import agents
from icml26.agents.pulse.baselines import gaussian_kl, nt_xent, patch_mask
from icml26.agents.pulse.pulse import PULSE, pulse_objective, rollout_mse, rollout_targets
from icml26.envs.pulse.simulator import PhysioConfig, PhysioData, simulate
from icml26.protocol import Budget

NAMES = (
    "pulse",
    "pulse-cross",
    "pulse-simclr",
    "pulse-mae",
    "pulse-svae",
    "pulse-supervised",
    "pulse-random",
)
TINY = {"hidden": 8, "depth": 2, "emb_dim": 8, "batch_size": 8}


def test_rollout_mse_two_windows_by_hand() -> None:
    """Window 0 = [0, 1, 2, 3] rolled out from s = 0 (targets 1, 2, 3), window 1 =
    [10, 20, 30, 40] from s = 2 (target 40 only). Predictions [1, 2, 5] and [40, 99, 99]:
    squared errors 0, 0, 4 and 0 over 4 valid entries -> 1.0; the 99s are past the window."""
    target = torch.tensor([[0.0, 1, 2, 3], [10, 20, 30, 40]])[:, :, None]
    pred = torch.tensor([[1.0, 2, 5], [40, 99, 99]])[:, :, None]
    start = torch.tensor([0, 2])
    assert float(rollout_mse(pred, target, start)) == pytest.approx(1.0)
    vals, valid = rollout_targets(target, start, 2, stride=2)  # every other sample
    assert vals[:, :, 0].tolist() == [[1.0, 3.0], [40.0, 40.0]] and valid.tolist() == [
        [True, True],
        [True, False],
    ]


def test_pulse_objective_two_windows_two_passes_by_hand() -> None:
    """Pass 0 (s = 0, 0) and one sampled pass (s = 1, 0) of the two windows above.
    Pass 0: w0 pred [1, 3, 3] vs [1, 2, 3] -> 0, 1, 0; w1 pred [21, 30, 40] vs [20, 30, 40]
    -> 1, 0, 0; L_0 = 2 / 6. Pass 1: w0 from s = 1, pred [2, 5, -] vs [2, 3] -> 0, 4; w1 exact;
    L_1 = 4 / 5. Loss = 0.5 (L_0 + L_1)."""
    target = torch.tensor([[0.0, 1, 2, 3], [10, 20, 30, 40]])[:, :, None]
    pass0 = torch.tensor([[1.0, 3, 3], [21, 30, 40]])
    pass1 = torch.tensor([[2.0, 5, 0], [20, 30, 40]])
    pred = torch.cat([pass0, pass1])[:, :, None]
    start = torch.tensor([0, 0, 1, 0])
    assert float(pulse_objective(pred, target, start)) == pytest.approx(0.5 * (2 / 6 + 4 / 5))
    assert float(pulse_objective(pass0[:, :, None], target, start[:2])) == pytest.approx(2 / 6)


def test_cross_reconstruction_targets_the_other_window() -> None:
    """pairing='recording' reconstructs window B from window A's context: with a decoder that
    outputs B exactly the loss is 0; outputting A instead costs exactly MSE(A, B)."""
    agent = PULSE(pairing="recording", **TINY, n_init_samples=0, right_boundary=2)
    rng = np.random.default_rng(0)
    windows = rng.normal(size=(3, 2, 1, 16)).astype(np.float32)  # 3 recordings x 2 windows
    data = PhysioData(windows, np.zeros(3, np.int64), 64.0, ("ecg",), ("a",))
    agent.reset(0)
    agent.learn(data, Budget(updates=0))
    agent._x = torch.from_numpy((windows - agent.mean[:, None]) / agent.sd[:, None])
    a, b = agent.sample_pairs(64)
    assert not torch.equal(a, b)
    pairs = {
        (tuple(x.flatten().tolist()[:3]), tuple(y.flatten().tolist()[:3])) for x, y in zip(a, b)
    }
    for first, second in pairs:  # same recording, different window
        rec = [
            r
            for r in range(3)
            for w in range(2)
            if tuple(agent._x[r, w].flatten().tolist()[:3]) == first
        ]
        assert rec and any(
            tuple(agent._x[rec[0], w].flatten().tolist()[:3]) == second for w in range(2)
        )
        assert first != second
    zero = torch.zeros(64, dtype=torch.long)
    assert float(pulse_objective(b.transpose(1, 2)[:, 1:], b.transpose(1, 2), zero)) == 0.0
    want = float(((a - b)[:, :, 1:] ** 2).mean())
    assert float(
        pulse_objective(a.transpose(1, 2)[:, 1:], b.transpose(1, 2), zero)
    ) == pytest.approx(want, rel=1e-5)


def test_linear_gaussian_case_of_the_method_card() -> None:
    """x_i = theta u + s_i v + eps_i with Var s (4) > Var theta (1): rank-1 linear
    cross-reconstruction between windows of one system keeps u (theta's direction) and drops
    s; the rank-1 autoencoder keeps v (the nuisance). Trained by gradient descent here; the
    closed forms are in docs/methods/pulse.md."""
    torch.manual_seed(0)
    d = 6
    u = torch.zeros(d)
    v = torch.zeros(d)
    u[0], v[1] = 1.0, 1.0
    n = 4000
    theta = torch.randn(n, 1)
    xa = theta * u + 2.0 * torch.randn(n, 1) * v + 0.3 * torch.randn(n, d)
    xb = theta * u + 2.0 * torch.randn(n, 1) * v + 0.3 * torch.randn(n, d)
    out = {}
    for mode, target in (("cross", xb), ("auto", xa)):
        w = torch.nn.Parameter(0.1 * torch.randn(d, 1))
        a = torch.nn.Parameter(0.1 * torch.randn(1, d))
        opt = torch.optim.Adam([w, a], lr=0.02)
        for _ in range(1500):
            loss = ((xa @ w @ a - target) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        out[mode] = (w.detach()[:, 0] / w.detach().norm()).abs()
    assert out["cross"][0] > 0.98 and out["cross"][1] < 0.1  # keeps theta, drops s
    assert out["auto"][1] > 0.98 and out["auto"][0] < 0.1  # keeps the larger nuisance


def test_nt_xent_by_hand() -> None:
    """Orthogonal pairs: every view's positive has cosine 1 and its two negatives 0, so the
    loss is log(1 + 2 exp(-1 / tau))."""
    z = torch.eye(2)
    assert float(nt_xent(z, z.clone(), 0.5)) == pytest.approx(
        np.log(1 + 2 * np.exp(-2.0)), rel=1e-6
    )


def test_gaussian_kl_and_patch_mask() -> None:
    mu, lv = torch.tensor([0.3, -1.0]), torch.tensor([0.2, -0.5])
    mp, lp = torch.tensor([0.1, 0.5]), torch.tensor([-0.3, 0.4])
    ref = torch.distributions.kl_divergence(
        torch.distributions.Normal(mu, (0.5 * lv).exp()),
        torch.distributions.Normal(mp, (0.5 * lp).exp()),
    )
    torch.testing.assert_close(gaussian_kl(mu, lv, mp, lp), ref)
    m = patch_mask(np.random.default_rng(0), 4, 64, 16, 0.5)
    assert m.shape == (4, 64) and m.sum(1).tolist() == [32, 32, 32, 32]
    assert all(len(set(row[i : i + 16].tolist())) == 1 for row in m for i in range(0, 64, 16))


def _tiny_data(labels: bool = False) -> PhysioData:
    cfg = PhysioConfig(window_seconds=1.0)
    d = simulate(np.random.default_rng(0), 3, 3, cfg)
    return d if labels else d.without_labels()


@pytest.mark.parametrize("name", NAMES)
def test_agents_learn_deterministically_and_embed(name: str) -> None:
    kw = dict(TINY)
    if name in ("pulse", "pulse-cross"):
        kw["right_boundary"] = 16
    embeds = []
    for _ in range(2):
        agent = agents.make(name, **kw)
        agent.reset(5)
        stats = agent.learn(_tiny_data(labels=agent.uses_labels), Budget(updates=3))
        assert stats["encoder_parameters"] > 0
        x = simulate(np.random.default_rng(1), 1, 2, PhysioConfig(window_seconds=1.0)).flat()[0]
        embeds.append(agent.act(x, {}))
    np.testing.assert_array_equal(embeds[0], embeds[1])
    assert embeds[0].shape == (8, 8) and np.all(np.isfinite(embeds[0]))


def test_act_pads_to_the_env_width_and_checks_inputs() -> None:
    from gymnasium import spaces

    agent = agents.make("pulse-random", **TINY)
    with pytest.raises(RuntimeError, match="learn"):
        agent.act(np.zeros((2, 2, 64), np.float32))
    agent.reset(0)
    agent.learn(_tiny_data(), Budget(updates=10))
    agent.bind(None, spaces.Box(-1, 1, (5, 12)))
    z = agent.act(np.zeros((5, 2, 64), np.float32))
    assert z.shape == (5, 12) and np.all(z[:, 8:] == 0)
    with pytest.raises(ValueError, match="windows"):
        agent.act(np.zeros((5, 3, 64), np.float32))
    agent.bind(None, spaces.Box(-1, 1, (5, 4)))
    with pytest.raises(ValueError, match="embedding_dim"):
        agent.act(np.zeros((5, 2, 64), np.float32))


def test_agent_options_are_checked() -> None:
    with pytest.raises(TypeError, match="unknown options"):
        agents.make("pulse", nonsense=1)
    with pytest.raises(ValueError, match="pairing"):
        agents.make("pulse", pairing="class")
    sup = agents.make("pulse-supervised", **TINY)
    sup.reset(0)
    with pytest.raises(ValueError, match="labels"):
        sup.learn(_tiny_data(labels=False), Budget(updates=1))
    with pytest.raises(TypeError, match="PhysioData"):
        sup.learn(np.zeros((3, 3)), Budget(updates=1))


@pytest.mark.parametrize(
    "name", ["pulse", "pulse-cross", "pulse-simclr", "pulse-mae", "pulse-svae"]
)
def test_objectives_go_down(name: str) -> None:
    kw = {**TINY, "log_every": 20}
    if name in ("pulse", "pulse-cross"):
        kw["right_boundary"] = 16
    agent = agents.make(name, **kw)
    agent.reset(0)
    curve = agent.learn(_tiny_data(), Budget(updates=120))["curve"]
    assert curve[-1]["loss"] < curve[0]["loss"]
