"""Flows, coordinate maps, losses and the FlowSampler agent."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import icml26  # noqa: F401
from icml26.agents import make as make_agent
from icml26.agents.boltzmann.coordinates import AlanineInternal, CenterOfMassFree, Standardize
from icml26.agents.boltzmann.flow_agent import FlowSampler
from icml26.agents.boltzmann.flows import SplineFlow, _knots, rqs
from icml26.agents.boltzmann.losses import dispersion, ldr_loss, reverse_kl_surrogate
from icml26.protocol import Budget


def test_spline_matches_zuko_on_the_same_knots() -> None:
    zuko = pytest.importorskip("zuko")
    gen = torch.Generator().manual_seed(0)
    k, m = 8, 5
    params = 2 * torch.randn(m, 3 * k - 1, generator=gen, dtype=torch.float64)
    bound = torch.full((m,), 3.0, dtype=torch.float64)
    x = torch.linspace(-4, 4, 101, dtype=torch.float64)[:, None].expand(101, m)
    y, ladj = rqs(x, params.expand(101, m, -1), bound)
    ref = zuko.transforms.MonotonicRQSTransform(
        params[:, :k], params[:, k : 2 * k], params[:, 2 * k :], bound=3.0
    )
    pos, ds = _knots(params, bound)
    assert torch.allclose(pos[:, 0], ref.horizontal) and torch.allclose(pos[:, 1], ref.vertical)
    assert torch.allclose(ds, ref.derivatives)
    y_ref, ladj_ref = ref.call_and_ladj(x)
    inside = x.abs() < 3.0
    assert torch.allclose(y, y_ref, atol=1e-12) and torch.allclose(
        ladj[inside], ladj_ref[inside], atol=1e-10
    )
    assert torch.equal(ladj[~inside], torch.zeros_like(ladj[~inside]))  # identity tails
    x_back, ladj_inv = rqs(y, params.expand(101, m, -1), bound, inverse=True)
    assert torch.allclose(x_back, x, atol=1e-9) and torch.allclose(ladj_inv, -ladj, atol=1e-9)
    assert torch.allclose(
        rqs(x, torch.zeros(101, m, 3 * k - 1, dtype=torch.float64), bound)[0], x, atol=1e-14
    )  # identity


def test_flow_is_a_bijection_with_exact_log_det_on_the_torus() -> None:
    torch.manual_seed(1)
    circ = [False, True, False, True, False]
    flow = SplineFlow(5, circ, n_layers=4, hidden=16).double()
    for p in flow.parameters():
        p.data += 0.2 * torch.randn_like(p)
    z = flow.base_sample(64, torch.Generator().manual_seed(0))
    x, ladj = flow.forward(z)
    assert bool(((x[:, [1, 3]] >= -math.pi) & (x[:, [1, 3]] < math.pi)).all())
    z2, ladj_inv = flow.inverse(x)
    dz = torch.where(
        flow.circular, torch.remainder(z2 - z + math.pi, 2 * math.pi) - math.pi, z2 - z
    )
    assert dz.abs().max() < 1e-8 and (ladj + ladj_inv).abs().max() < 1e-8
    jac = torch.autograd.functional.jacobian(lambda v: flow.forward(v[None])[0][0], z[0])
    assert float(torch.linalg.slogdet(jac)[1]) == pytest.approx(float(ladj[0].detach()), abs=1e-9)
    # a circular spline is a circle diffeomorphism: the endpoints stay fixed
    layer = flow.layers[0]
    if bool(flow.circular[layer.idx_t].any()):
        edge = z[:2].clone()
        edge[:, layer.idx_t] = torch.where(
            flow.circular[layer.idx_t], math.pi, edge[:, layer.idx_t]
        )
        out, _ = layer(edge)
        assert torch.allclose(
            out[:, layer.idx_t][:, flow.circular[layer.idx_t]],
            torch.full((2, int(flow.circular[layer.idx_t].sum())), math.pi, dtype=torch.float64),
        )


@pytest.mark.parametrize("kind", ["standardize", "com", "alanine"])
def test_coordinate_maps_round_trip_with_consistent_log_dets(kind: str) -> None:
    gen = torch.Generator().manual_seed(0)
    if kind == "standardize":
        cmap, x = Standardize(3, 2.0), torch.randn(16, 3, generator=gen, dtype=torch.float64)
    elif kind == "com":
        cmap = CenterOfMassFree(4, 2, 1.5)
        x = torch.randn(16, 8, generator=gen, dtype=torch.float64)
        x = (x.reshape(16, 4, 2) - x.reshape(16, 4, 2).mean(1, keepdim=True)).reshape(16, 8)
    else:
        from icml26.envs.boltzmann.openmm_energy import build_system

        x0 = torch.from_numpy(build_system()[2].reshape(-1))
        x = x0 + 0.003 * torch.randn(16, 66, generator=gen, dtype=torch.float64)
        cmap = AlanineInternal().fit(x)
    if kind != "alanine":
        cmap.fit(x)
    y, ladj = cmap.to_flow(x)
    assert y.shape == (16, cmap.flow_dim)
    x_back, ladj_back = cmap.to_phys(y)
    if kind == "alanine":
        y2, _ = cmap.to_flow(x_back)  # same configuration modulo rigid motion
        assert torch.allclose(y2, y, atol=1e-9)
    else:
        assert torch.allclose(x_back, x, atol=1e-10)
    assert torch.allclose(ladj, -ladj_back, atol=1e-9)
    if kind == "alanine":  # log|dy/d ic| part by autograd: remove log J to compare
        from icml26.envs.boltzmann.geometry import ALANINE_ZMATRIX, ZMatrix

        b, a, t = ALANINE_ZMATRIX.to_internal(x[0])
        ic = torch.cat([b, a, t])

        def ic_to_y(v: torch.Tensor) -> torch.Tensor:
            return cmap.to_flow(ALANINE_ZMATRIX.to_cartesian(v[:21], v[21:41], v[41:])[None])[0][0]

        jac = torch.autograd.functional.jacobian(ic_to_y, ic)
        expected = torch.linalg.slogdet(jac)[1] - ZMatrix.log_jacobian(b, a)
        assert float(ladj[0]) == pytest.approx(float(expected), abs=1e-8)


def test_dispersions_are_shift_invariant_and_vanish_on_constants() -> None:
    r = torch.tensor([0.0, 1.0, 2.0, 10.0], dtype=torch.float64)
    for kind in ("variance", "mad", "huber", "iqr"):
        assert float(dispersion(torch.full((5,), 3.0), kind)) == 0.0
        assert float(dispersion(r + 7.0, kind)) == pytest.approx(float(dispersion(r, kind)))
    assert float(dispersion(r, "variance")) == pytest.approx(float(((r - r.mean()) ** 2).mean()))
    assert float(dispersion(r, "mad")) == pytest.approx(
        (1 + 0 + 1 + 9) / 4
    )  # torch median = lower middle = 1
    assert float(dispersion(r, "iqr")) == pytest.approx(
        float(np.quantile(r.numpy(), 0.75) - np.quantile(r.numpy(), 0.25))
    )
    assert float(dispersion(r, "huber")) == pytest.approx((0.5 + 0 + 0.5 + 8.5) / 4)
    with pytest.raises(ValueError, match="unknown dispersion"):
        dispersion(r, "range")
    log_q, u = torch.tensor([-1.0, -2.0, -3.0]), torch.tensor([0.5, 1.0, 4.0])
    loss, nll, disp = ldr_loss(log_q, u, 0.3)
    assert float(nll) == pytest.approx(2.0) and float(loss) == pytest.approx(
        2.0 + 0.3 * float((-u - log_q).var(unbiased=False))
    )


def test_reverse_kl_surrogate_has_the_reparametrized_gradient() -> None:
    torch.manual_seed(0)
    flow = SplineFlow(2, None, n_layers=2, hidden=8).double()
    for p in flow.parameters():
        p.data += 0.1 * torch.randn_like(p)

    def energy(x: torch.Tensor) -> torch.Tensor:
        return 0.25 * (x**4).sum(-1) + x[:, 0] * x[:, 1]

    gen = torch.Generator().manual_seed(3)
    x, log_q = flow.rsample(64, gen)
    (ref := (log_q + energy(x)).mean()).backward()
    g_ref = [p.grad.clone() for p in flow.parameters()]
    flow.zero_grad()
    x, log_q = flow.rsample(64, torch.Generator().manual_seed(3))
    xd = x.detach().requires_grad_(True)
    u = energy(xd)
    (f,) = torch.autograd.grad(-u.sum(), xd)
    loss = reverse_kl_surrogate(x, log_q, u.detach(), f)
    assert float(loss) == pytest.approx(float(ref))
    loss.backward()
    for a, b in zip(g_ref, (p.grad for p in flow.parameters())):
        assert torch.allclose(a, b, atol=1e-10)


def _gmm_env(**kw: object) -> gym.Env:
    return gym.make("icml26/BoltzmannGMM40-v0", **{"dataset_size": 2000, "energy_budget": 0, **kw})


SMALL = {"n_layers": 4, "hidden": 32, "bins": 16, "batch_size": 128}


def test_ml_training_improves_and_samples_are_consistent_and_seeded() -> None:
    env = _gmm_env()
    env.reset(seed=0)
    agent = FlowSampler(objective="ml", n_iters=80, **SMALL)
    agent.reset(0)
    stats = agent.learn(env, Budget(updates=10_000))
    assert stats["iterations"] == 80 and stats["energy_evals"] == 0
    assert (
        stats["curve"][-1]["nll"] < stats["curve"][0]["nll"] - 0.5
    )  # from the fitted Gaussian (9.1)
    x, log_q = agent.sample(300)
    assert x.shape == (300, 2) and np.allclose(agent.log_prob(x), log_q, atol=1e-3)
    twin = FlowSampler(objective="ml", n_iters=80, **SMALL)
    twin.reset(0)
    env2 = _gmm_env()
    env2.reset(seed=0)
    twin.learn(env2, Budget())
    twin.sample(300)
    x1, _ = agent.sample(5)
    x2, _ = twin.sample(5)
    assert np.array_equal(x1, x2)  # same seeds, same flow, same draws


def test_ldr_with_zero_lambda_is_maximum_likelihood() -> None:
    params = []
    for obj, lam in (("ml", 1.0), ("ldr", 0.0)):
        env = _gmm_env(dataset_size=500)
        env.reset(seed=1)
        agent = make_agent(f"flow-{obj}", lam=lam, n_iters=20, **SMALL)
        agent.reset(1)
        agent.learn(env, Budget())
        params.append(torch.cat([p.detach().ravel() for p in agent.flow.parameters()]))
    assert torch.allclose(params[0], params[1], atol=1e-6)


@pytest.mark.parametrize("objective", ["rkl", "lv_onpolicy", "ldr_var"])
def test_variational_objectives_spend_exactly_the_budget(objective: str) -> None:
    env = gym.make("icml26/BoltzmannGMM40-v0", data="none", energy_budget=1000, batch_size=256)
    env.reset(seed=0)
    agent = FlowSampler(objective=objective, replay_steps=1, **SMALL)
    agent.reset(0)
    stats = agent.learn(env, Budget(energy_evals=1000))
    assert stats["energy_evals"] == 1000 == env.unwrapped.total_evaluations
    assert stats["iterations"] == math.ceil(1000 / 128) * (2 if objective == "ldr_var" else 1)


def test_data_objectives_need_data_and_variational_ones_need_budget() -> None:
    agent = FlowSampler(objective="ldr", **SMALL)
    agent.reset(0)
    env = gym.make("icml26/BoltzmannGMM40-v0", data="none", energy_budget=10)
    with pytest.raises(ValueError, match="needs a data set"):
        agent.learn(env, Budget())
    agent = FlowSampler(objective="rkl", **SMALL)
    with pytest.raises(ValueError, match="needs an energy budget"):
        agent.learn(_gmm_env(), Budget())
    with pytest.raises(ValueError, match="objective must be one of"):
        FlowSampler(objective="nope")
    with pytest.raises(RuntimeError, match="learn"):
        FlowSampler().sample(3)


def test_centre_of_mass_free_sampler_on_dw4() -> None:
    env = gym.make(
        "icml26/BoltzmannDW4-v0",
        dataset_size=64,
        energy_budget=0,
        target_kwargs={"data_preset": "tiny"},
    )
    env.reset(seed=0)
    agent = FlowSampler(objective="ldr", dispersion="mad", n_iters=5, **SMALL)
    agent.reset(0)
    agent.learn(env, Budget())
    assert agent.flow.dim == 6  # (4 - 1) * 2 coordinates
    x, log_q = agent.sample(50)
    assert np.abs(x.reshape(50, 4, 2).mean(1)).max() < 1e-9  # samples stay centre-of-mass free
    assert np.allclose(agent.log_prob(x), log_q, atol=1e-3)
