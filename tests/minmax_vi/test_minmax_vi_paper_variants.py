"""The paper's variants as derived here (issue 40): the same-sample pair oracle (problem and
``icml26/StochasticVI-v1``), the multilevel Monte Carlo resolvent estimate of ``km_mlmc`` and the
variance-reduced Halpern FBF ``halpern_vr``: unbiasedness, cost, the rho range theory gives, and
the env path equal to the direct path."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401  (registers the ids)
import icml26.agents
from icml26.agents.minmax_vi.algorithms import (
    Context,
    VIAlgorithmAgent,
    km_mlmc,
    mlmc_level_probabilities,
    run_direct,
)
from icml26.benchmarks import get_task
from icml26.benchmarks.tasks.minmax_vi import run_trial
from icml26.envs.minmax_vi.problems import bilinear, lagrangian_qp, weak_minty_quadratic


@pytest.mark.parametrize("noise", ["operator", "additive"])
def test_pair_oracle_uses_one_draw_at_both_points(noise: str) -> None:
    prob = bilinear(n=3, seed=1)
    rng = np.random.default_rng(5)
    z, w = rng.standard_normal((2, prob.dim))
    # the first element is exactly what sample() draws from the same generator state
    a, b = prob.sample_pair(z, w, np.random.default_rng(9), 4, noise, 0.1, 1.0)
    assert np.array_equal(a, prob.sample(z, np.random.default_rng(9), 4, noise, 0.1, 1.0))
    # same point: identical samples
    a, b = prob.sample_pair(z, z, np.random.default_rng(9), 4, noise, 0.1, 1.0)
    assert np.array_equal(a, b)
    # differences: the additive sigma0 part cancels; what is left is exactly
    # (M + Delta)(z - w) (operator) or F(z) - F(w) + sigma1 (|z| - |w|) e / sqrt(d) (additive),
    # so their spread shrinks with |z - w| (mean-square Lipschitz), unlike independent samples
    w_near = z + 1e-3 * rng.standard_normal(prob.dim)
    diffs = np.array(
        [
            np.subtract(*prob.sample_pair(z, w_near, rng, 1, noise, 0.1, 1.0))
            - (prob.operator(z) - prob.operator(w_near))
            for _ in range(400)
        ]
    )
    indep = np.array(
        [
            prob.sample(z, rng, 1, noise, 0.1, 1.0) - prob.sample(w_near, rng, 1, noise, 0.1, 1.0)
            for _ in range(400)
        ]
    )
    assert (
        np.sqrt(np.mean(np.sum(diffs**2, 1))) < 3e-3 < 0.05 < np.sqrt(np.mean(np.sum(indep**2, 1)))
    )
    with pytest.raises(ValueError, match="one shape"):
        prob.sample_pair(z, w[:2], rng, 1, noise, 0.1, 1.0)


def _v1(**kw):
    return gym.make(
        "icml26/StochasticVI-v1", problem_kwargs={"n": 2, "seed": 0}, oracle_budget=11, **kw
    ).unwrapped


def test_paired_env_serves_pairs_at_twice_the_cost_and_unpaired_steps_as_v0() -> None:
    env, v0 = (
        _v1(),
        gym.make(
            "icml26/StochasticVI-v0", problem_kwargs={"n": 2, "seed": 0}, oracle_budget=11
        ).unwrapped,
    )
    assert env.action_space.shape == (14,) and env.observation_space.shape == (8,)
    _, info = env.reset(seed=3)
    v0.reset(seed=3)
    assert info["paired"] is True
    z, w = np.full(4, 0.5), np.full(4, -0.5)
    obs, *_, info = env.step(np.r_[z, w, z, 3.0, 0.0])  # unpaired: v0's draw, second half zeros
    obs0, *_ = v0.step(np.r_[z, z, 3.0])
    assert np.array_equal(obs[:4], obs0) and not obs[4:].any() and info["oracle_calls"] == 3
    state = copy.deepcopy(env.np_random)
    obs, *_, info = env.step(np.r_[z, w, z, 3.0, 1.0])  # paired: 2 x 3 calls, same samples
    assert info["oracle_calls"] == 9 and info["batch_served"] == 3
    both = env.problem.sample_pair(z, w, state, 3, "operator", 0.1, 1.0)
    assert np.array_equal(obs, np.concatenate(both))
    obs, _, term, trunc, info = env.step(np.r_[z, w, z, 5.0, 1.0])  # 2 calls left: one pair
    assert info["oracle_calls"] == 11 and info["batch_served"] == 1 and trunc and not term
    env.reset(seed=0)
    env.step(np.r_[z, w, z, 10.0, 0.0])
    *_, trunc, info = env.step(np.r_[z, w, z, 1.0, 1.0])  # 1 call left cannot buy a pair
    assert trunc and info["batch_served"] == 0 and info["oracle_calls"] == 11
    with pytest.raises(ValueError, match=r"StochasticVI-v1: paired must be in \[0, 1\]"):
        env.reset(seed=0)
        env.step(np.r_[z, w, z, 1.0, 2.0])
    with pytest.raises(ValueError, match="StochasticVI-v1: expected an action of shape"):
        env.step(np.r_[z, z, 1.0])
    with pytest.raises(ValueError, match="paired must be a bool"):
        gym.make("icml26/StochasticVI-v0", paired="yes")


def test_vr_agent_refuses_the_unpaired_env_by_name() -> None:
    env = gym.make("icml26/StochasticVI-v0", problem_kwargs={"n": 2})
    agent = VIAlgorithmAgent("halpern_vr")
    agent.bind(env.observation_space, env.action_space)
    _, info = env.reset(seed=0)
    agent.reset(0)
    with pytest.raises(ValueError, match="StochasticVI-v1"):
        agent.act(np.zeros(4), info)


def test_mlmc_estimate_of_the_resolvent_is_unbiased_at_the_expected_cost() -> None:
    """Many independent MLMC estimates of J(z0) = (I + lam (F + N_C))^-1 z0 on a linear game:
    their mean is the exact resolvent within its Monte Carlo error, and the mean cost per
    estimate is 2 levels x batch calls (P(J = j) ~ 2^-j, 2^J inner FBF steps of two calls)."""
    prob = bilinear(n=3, seed=0)
    eta_res, levels, b0, n_est = 0.5, 5, 4, 3000
    lam = eta_res / prob.lipschitz
    exact = np.linalg.solve(np.eye(prob.dim) + lam * prob.matrix, prob.z0 - lam * prob.offset)
    rng = np.random.default_rng(0)
    estimates, cost = [], 0
    for i in range(n_est):
        ctx = Context(prob.z0, prob.lipschitz, prob.lower, prob.upper, np.random.default_rng(i))
        gen = km_mlmc(
            ctx, 0.5, "constant", b0, eta_res=eta_res, levels=levels, relax=1.0, relax_decay=1e30
        )
        q = next(gen)
        while np.array_equal(q.iterate, prob.z0):  # relax 1: the next iterate is the estimate
            cost += q.batch
            q = gen.send(prob.sample(q.point, rng, q.batch, "operator", 0.1, 1.0))
        estimates.append(q.iterate)
    est = np.array(estimates)
    se = est.std(0) / np.sqrt(n_est)
    assert np.all(np.abs(est.mean(0) - exact) < 4 * se + 1e-4)
    expected_cost = (
        2 * b0 * np.sum(mlmc_level_probabilities(levels) * 2.0 ** np.arange(1, levels + 1))
    )
    assert expected_cost == pytest.approx(2 * b0 * levels / (1 - 2.0**-levels))
    assert cost / n_est == pytest.approx(expected_cost, rel=0.15)


def _final(prob, alg: str, calls: int, **params):
    run = run_direct(
        prob,
        alg,
        {"eta": 0.5, **params},
        noise="operator",
        sigma0=0.1,
        sigma1=1.0,
        oracle_budget=calls,
        seed=1,
        replicates=6,
        max_batch=2**40,
    )
    return run


def test_mlmc_km_tolerates_rho_up_to_its_resolvent_step_where_growing_batch_fbf_breaks() -> None:
    """Weak Minty game with |rho| L = 0.4: KM on the resolvent with lam = 1/(2L) > |rho| converges
    (Alacaoglu-Kim-Wright's range rho < lam); minibatch FBF with eta = 1/(2L) diverges (its range
    is |rho| < eta/2); at |rho| = 0.6 > lam the same KM diverges."""
    prob = weak_minty_quadratic(copies=2, rho=-0.4, seed=0)
    mlmc = dict(batch="constant", b0=128, relax=0.3, eta_res=0.5, levels=6)
    run = _final(prob, "km_mlmc", 3_000_000, **mlmc)
    assert not run.diverged.any() and np.median(run.final_residual) < 0.01 * prob.residual(prob.z0)
    assert _final(prob, "fbf", 3_000_000, batch="linear", b0=1.0).diverged.all()
    beyond = weak_minty_quadratic(copies=2, rho=-0.6, seed=0)
    assert _final(beyond, "km_mlmc", 3_000_000, **mlmc).diverged.all()


def test_variance_reduced_halpern_beats_the_growing_batch_halpern_at_equal_calls() -> None:
    for prob in (bilinear(n=5, seed=2), lagrangian_qp(n=5, m=3, active=2, seed=2)):
        vr = _final(prob, "halpern_vr", 10**8, batch="linear", b0=1.0)
        gb = _final(prob, "halpern_fbf", 10**8, batch="quadratic", b0=1.0)
        assert not vr.diverged.any() and not gb.diverged.any()
        assert np.mean(vr.final_residual) < 0.3 * np.mean(gb.final_residual), prob.name


@pytest.mark.parametrize("agent_name", ["vi-halpern-vr", "vi-km-mlmc"])
def test_env_path_equals_direct_path_for_the_paper_variants(agent_name: str) -> None:
    env = gym.make(
        "icml26/StochasticVI-v1",
        problem="bilinear",
        problem_kwargs={"n": 3, "seed": 2},
        oracle_budget=20_000,
    )
    agent = icml26.agents.make(agent_name)
    agent.bind(env.observation_space, env.action_space)
    obs, info = env.reset(seed=17)
    agent.reset(17)
    while True:
        obs, reward, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            break
    direct = run_direct(
        env.unwrapped.problem,
        agent.algorithm,
        agent.params,
        noise="operator",
        sigma0=0.1,
        sigma1=1.0,
        oracle_budget=20_000,
        seed=17,
    )
    assert info["oracle_calls"] == direct.oracle_calls == 20_000
    assert info["residual"] == direct.final_residual[0]


def test_v1_tasks_read_the_oracle_budget_from_the_scaled_budget() -> None:
    task = get_task("minmax_vi/weak-minty")
    assert task.version == 1 and task.env_id == "icml26/StochasticVI-v1"
    assert get_task("minmax_vi/weak-minty@v0").env_id == "icml26/StochasticVI-v0"
    half = task.scaled(0.2)
    out = run_trial(half, icml26.agents.make("vi-halpern-vr"), 0)
    assert out.metrics["oracle_calls"] == 20_000 and out.metrics["diverged"] == 0.0
