"""Early stopping of data objectives and the ML + reverse KL / reweighted-ML baselines."""

from __future__ import annotations

import math
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
from scipy.stats import norm

import icml26  # noqa: F401
from icml26.agents import make as make_agent
from icml26.agents.boltzmann.flow_agent import FlowSampler
from icml26.agents.boltzmann.losses import bias_log_weights, ml_rkl_loss, reweighted_nll
from icml26.envs.boltzmann.registry import make_target
from icml26.protocol import Budget

SMALL = {"n_layers": 4, "hidden": 32, "bins": 16, "batch_size": 128}


def test_ml_rkl_loss_hand_worked() -> None:
    log_q_data = torch.tensor([-1.0, -2.0, -3.0], dtype=torch.float64)
    x = torch.zeros(2, 2, dtype=torch.float64)
    log_q_model = torch.tensor([-1.0, -3.0], dtype=torch.float64)
    u = torch.tensor([2.0, 5.0], dtype=torch.float64)
    loss, nll, rkl = ml_rkl_loss(
        log_q_data, x, log_q_model, u, torch.zeros(2, 2, dtype=torch.float64), 0.5
    )
    assert float(nll) == pytest.approx(2.0)
    assert float(rkl) == pytest.approx(((-1 + 2) + (-3 + 5)) / 2)  # mean(log q + u) = 1.5
    assert float(loss) == pytest.approx(2.0 + 0.5 * 1.5)


def test_reweighted_nll_hand_worked_and_shift_invariant() -> None:
    log_q = torch.tensor([-1.0, -2.0], dtype=torch.float64)
    log_w = torch.tensor([0.0, math.log(3.0)], dtype=torch.float64)
    assert float(reweighted_nll(log_q, log_w)) == pytest.approx(0.25 * 1 + 0.75 * 2)
    assert float(reweighted_nll(log_q, log_w + 100.0)) == pytest.approx(1.75)
    assert float(reweighted_nll(log_q, torch.zeros(2, dtype=torch.float64))) == pytest.approx(
        1.5
    )  # plain NLL
    with pytest.raises(ValueError, match="same shape"):
        reweighted_nll(log_q, torch.zeros(3))


def _centred(v: np.ndarray) -> np.ndarray:
    return v - v[0]


def test_bias_log_weights_match_independent_formulas() -> None:
    rng = np.random.default_rng(0)
    # tempered targets: p_bias ∝ exp(-u T / T_b)
    u = torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64)
    x = torch.zeros(3, 32, dtype=torch.float64)
    assert np.allclose(
        bias_log_weights(make_target("many_well32"), x, u, "biased").numpy(), -0.5 * u.numpy()
    )
    lj = SimpleNamespace(name="lj13", bias_temperature=1.5)
    assert np.allclose(bias_log_weights(lj, x, u, "biased").numpy(), -(1 - 1 / 1.5) * u.numpy())
    aldp = SimpleNamespace(name="aldp", temperature=300.0, bias_temperature=600.0)
    assert np.allclose(bias_log_weights(aldp, x, u, "biased").numpy(), -0.5 * u.numpy())
    assert np.array_equal(bias_log_weights(aldp, x, u, "unbiased").numpy(), np.zeros(3))
    # GMM-40: ratio of the two mixtures, by scipy
    gmm = make_target("gmm40")
    xg = torch.from_numpy(rng.normal(0, 20, (5, 2)))
    means, s = gmm.means.numpy(), gmm.std
    p = norm.pdf(xg.numpy()[:, None, :], means, s).prod(-1).mean(-1)
    pb = norm.pdf(xg.numpy()[:, None, :], means, s * math.sqrt(2)).prod(-1).mean(-1)
    lw = bias_log_weights(gmm, xg, gmm.energy(xg), "biased").numpy()
    assert np.allclose(_centred(lw), _centred(np.log(p) - np.log(pb)), atol=1e-8)
    # Funnel-10: only x0's law differs (variance 18 instead of 9)
    fun = make_target("funnel10")
    xf = torch.from_numpy(rng.normal(0, 3, (5, 10)))
    lw = bias_log_weights(fun, xf, fun.energy(xf), "biased").numpy()
    ref = norm.logpdf(xf[:, 0].numpy(), 0, 3) - norm.logpdf(xf[:, 0].numpy(), 0, math.sqrt(18))
    assert np.allclose(_centred(lw), _centred(ref), atol=1e-10)
    with pytest.raises(ValueError, match="kind must be"):
        bias_log_weights(gmm, xg, gmm.energy(xg), "hot")


def test_reweighting_recovers_target_expectations_from_biased_data() -> None:
    # Many-Well-32 at T = 2 reweighted to T = 1: E[x2^2] = 1 per coordinate (x2 ~ N(0, 1) at T = 1)
    mw = make_target("many_well32")
    data = mw.dataset(20_000, "biased", seed=0)
    x, u = torch.from_numpy(data.x).double(), torch.from_numpy(data.energy)
    w = torch.softmax(bias_log_weights(mw, x, u, "biased"), 0).numpy()
    x2 = data.x[:, 1::2].astype(np.float64)
    assert (x2**2).mean() == pytest.approx(2.0, rel=0.05)  # the biased data are at T = 2
    # the 32-D weights are degenerate at this n; the pairs are independent, so check the weights of
    # one pair (a 2-D Many-Well tempered the same way) on its marginal
    u_pair = mw.energy(x[:, :2].repeat(1, 16)) / 16
    w1 = torch.softmax(bias_log_weights(mw, x, u_pair, "biased"), 0).numpy()
    assert float((w1 * x2[:, 0] ** 2).sum()) == pytest.approx(1.0, rel=0.1)
    assert w.sum() == pytest.approx(1.0)


def _gmm_env(**kw: object) -> gym.Env:
    env = gym.make("icml26/BoltzmannGMM40-v0", **{"dataset_size": 500, "energy_budget": 0, **kw})
    env.reset(seed=0)
    return env


def test_early_stopping_stops_on_overfitting_and_restores_the_best_flow() -> None:
    env = _gmm_env(dataset_size=40)
    agent = FlowSampler(
        objective="ml",
        n_iters=3000,
        n_layers=4,
        hidden=64,
        bins=16,
        batch_size=32,
        lr=3e-3,
        lr_decay=False,
        eval_every=10,
        patience=5,
        val_fraction=0.25,
    )
    agent.reset(0)
    stats = agent.learn(env, Budget())
    assert stats["stopped_early"] and stats["iterations"] < 3000
    assert stats["train_size"] == 30 and stats["val_size"] == 10
    vals = [v["val_loss"] for v in stats["val_curve"]]
    assert stats["val_loss_best"] == min(vals)
    assert (
        stats["iterations"] == stats["best_iteration"] + 5 * 10
    )  # patience evaluations after the best
    assert (
        max(vals[vals.index(min(vals)) :]) > min(vals) + 0.1
    )  # validation loss rose after the best
    # the returned flow is the best one: its held-out NLL (physical coordinates) is the best recorded
    nll = -float(np.mean(agent.log_prob(agent.val_x)))
    assert nll == pytest.approx(stats["val_loss_best"], abs=1e-3)


def test_no_validation_split_trains_the_full_budget() -> None:
    agent = FlowSampler(objective="ldr", n_iters=30, val_fraction=0.0, **SMALL)
    agent.reset(0)
    stats = agent.learn(_gmm_env(), Budget())
    assert stats["iterations"] == 30 == stats["best_iteration"] and not stats["stopped_early"]
    assert stats["val_size"] == 0 and agent.val_x.shape == (0, 2)
    with pytest.raises(ValueError, match="val_fraction"):
        FlowSampler(val_fraction=1.0)
    agent = FlowSampler(objective="ml", val_fraction=0.1, **SMALL)
    agent.reset(0)
    with pytest.raises(ValueError, match="validation"):
        agent.learn(_gmm_env(dataset_size=10), Budget())


def test_reweighted_ml_on_unbiased_data_is_ml() -> None:
    params = []
    for name in ("flow-ml", "flow-ml-reweighted"):
        agent = make_agent(name, n_iters=20, **SMALL)
        agent.reset(1)
        stats = agent.learn(_gmm_env(), Budget())
        params.append(torch.cat([p.detach().ravel() for p in agent.flow.parameters()]))
    assert stats["weights_ess"] == pytest.approx(1.0)
    assert torch.allclose(params[0], params[1], atol=1e-6)


def test_reweighted_ml_on_biased_data_reports_weights() -> None:
    agent = make_agent("flow-ml-reweighted", n_iters=20, **SMALL)
    agent.reset(0)
    stats = agent.learn(_gmm_env(data="biased"), Budget())
    assert 0.0 < stats["weights_ess"] < 1.0 and stats["objective"] == "ml_reweighted"
    assert agent.val_log_w is not None and agent.val_log_w.shape == (50,)
    # the validation objective is the self-normalized weighted NLL of the held-out data (numpy)
    w = np.exp(agent.val_log_w - agent.val_log_w.max())
    ref = -float(np.sum(w / w.sum() * agent.log_prob(agent.val_x)))
    assert ref == pytest.approx(stats["val_loss_best"], abs=1e-3)


def test_ml_rkl_spends_its_energy_budget_and_needs_one() -> None:
    env = _gmm_env(energy_budget=300)
    agent = make_agent("flow-ml-rkl", n_iters=10, rkl_batch=64, val_fraction=0.0, **SMALL)
    agent.reset(0)
    stats = agent.learn(env, Budget())
    assert (
        stats["energy_evals"] == 300 == env.unwrapped.total_evaluations
    )  # 4 x 64 + 44, then plain ML
    assert stats["iterations"] == 10
    agent = make_agent("flow-ml-rkl", n_iters=10, **SMALL)
    with pytest.raises(ValueError, match="needs an energy budget"):
        agent.learn(_gmm_env(), Budget())


def _gauss_q(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return -0.5 * (x**2).sum(-1) - math.log(2 * math.pi), -x


def _gauss_p(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # u = |x - 1|^2 / (2 * 0.5^2)
    return ((x - 1) ** 2).sum(-1) / 0.5, -(x - 1) / 0.25


def test_ais_weights_hand_worked_and_log_z_estimate() -> None:
    from icml26.agents.boltzmann.ais import ais

    x0 = torch.tensor([[0.0, 0.0], [1.0, -1.0]], dtype=torch.float64)
    res = ais(
        x0, _gauss_q, _gauss_p, 1, torch.tensor([0.1]), torch.Generator().manual_seed(0), alpha=2.0
    )
    lq, u = _gauss_q(x0)[0], _gauss_p(x0)[0]
    assert torch.allclose(res.log_w, 2.0 * (-u - lq))  # one level: alpha * r(x0)
    assert float(res.log_w[0]) == pytest.approx(2 * (-4.0 + math.log(2 * math.pi)))
    # alpha = 1, many levels: logmeanexp(log w) -> log Z = log(2 pi 0.25); samples -> N(1, 0.25 I)
    gen = torch.Generator().manual_seed(0)
    x0 = torch.randn(20_000, 2, generator=gen, dtype=torch.float64)
    res = ais(x0, _gauss_q, _gauss_p, 64, torch.full((64,), 0.1), gen, alpha=1.0)
    log_z = float(torch.logsumexp(res.log_w, 0) - math.log(20_000))
    assert log_z == pytest.approx(math.log(2 * math.pi * 0.25), abs=0.01)
    assert torch.allclose(res.x.mean(0), torch.ones(2, dtype=torch.float64), atol=0.03)
    assert 0.3 < res.accept[-1] < 0.99


def test_fab_spends_at_most_its_budget_and_learns() -> None:
    env = gym.make("icml26/BoltzmannGMM40-v0", data="none", energy_budget=5000, batch_size=256)
    env.reset(seed=0)
    agent = make_agent("flow-fab", ais_levels=4, **SMALL)
    agent.reset(0)
    stats = agent.learn(env, Budget(energy_evals=5000))
    assert (
        stats["energy_evals"]
        == env.unwrapped.total_evaluations
        == stats["iterations"] * 128 * 5
        <= 5000
    )
    assert stats["iterations"] == 5000 // (128 * 5)
    assert (
        all(0 < s for s in stats["ais_step_sizes"]) and 0.0 < stats["curve"][-1]["ais_ess"] <= 1.0
    )
    x, log_q = agent.sample(64)
    assert np.allclose(agent.log_prob(x), log_q, atol=1e-3)
