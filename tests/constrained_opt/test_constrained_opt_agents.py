"""Maps (gauge homeomorphism, ball projection, INN), solvers and the suite agents."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from scipy.optimize import minimize

import icml26  # noqa: F401  (registers the ids)
import icml26.agents
from icml26.agents.constrained_opt.maps import GaugeMap, INNMap, ball_project
from icml26.agents.constrained_opt.solvers import METHODS, project_exact, run, time_to_gap
from icml26.benchmarks import get_task
from icml26.benchmarks.tasks.constrained_opt import run_trial
from icml26.envs.constrained_opt.problems import (
    attack,
    best_known,
    jcc_opf,
    qcqp,
    rel_gap,
    sample_feasible,
    star,
)


def _ball(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    U = rng.normal(size=(k, n))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return U * rng.uniform(size=k)[:, None] ** (1 / n)


@pytest.mark.parametrize("seed", range(6))
def test_gauge_map_is_a_bijection_onto_the_ball_on_random_star_shaped_sets(seed) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    p = star(n=n, seed=seed, amp=float(rng.uniform(0.2, 0.9)), waves=int(rng.integers(1, 6)))
    G = GaugeMap(p)
    Z = _ball(rng, 200, n)
    X = G.forward_batch(Z)
    assert p.violation_batch(X).max() <= 1e-12  # the ball lands inside K
    for z, x in zip(Z, X):
        np.testing.assert_allclose(G.forward(z), x, atol=1e-12)
        np.testing.assert_allclose(G.inverse(x), z, atol=1e-6)  # psi^-1 psi = id
    Xk = sample_feasible(p, 200, rng)  # ... and every point of K has a preimage in the ball
    for x in Xk:
        z = G.inverse(x)
        assert np.linalg.norm(z) <= 1 + 1e-12
        np.testing.assert_allclose(G.forward(z), x, atol=1e-6)  # psi psi^-1 = id
    # the sphere maps onto the boundary, outside the ball onto the outside
    S = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    assert np.abs(p.g_batch(G.forward_batch(S)).max(axis=1)).max() < 1e-9
    assert np.all(p.g_batch(G.forward_batch(1.01 * S)).max(axis=1) > 0)


@pytest.mark.parametrize(
    "make", [lambda: qcqp(10, 10, seed=0), lambda: star(6, seed=1), jcc_opf, attack]
)
def test_gauge_vjp_matches_finite_differences(make) -> None:
    p = make()
    G = GaugeMap(p)
    rng = np.random.default_rng(0)
    for _ in range(3):
        z = rng.normal(size=p.n)
        z *= 0.8 / np.linalg.norm(z)
        v = rng.normal(size=p.n)
        e = 1e-6
        fd = np.array(
            [v @ (G.forward(z + e * d) - G.forward(z - e * d)) / (2 * e) for d in np.eye(p.n)]
        )
        np.testing.assert_allclose(G.vjp(z, v), fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())


def test_ball_projection_is_exact() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=5) * rng.uniform(0.1, 3)
        pv = ball_project(v)
        ref = minimize(
            lambda y, v=v: float((y - v) @ (y - v)),
            np.zeros(5),
            jac=lambda y, v=v: 2 * (y - v),
            constraints=[{"type": "ineq", "fun": lambda y: 1 - y @ y, "jac": lambda y: -2 * y}],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 200},
        ).x
        np.testing.assert_allclose(pv, ref, atol=1e-6)
        if np.linalg.norm(v) <= 1:
            assert np.array_equal(pv, v)
        else:
            assert np.linalg.norm(pv) == pytest.approx(1.0, abs=1e-15)
            assert np.linalg.norm(np.cross(pv[:3], v[:3])) < 1e-12  # same ray


def _random_inn(n: int, seed: int) -> INNMap:
    import torch

    inn = INNMap(n, np.arange(n, dtype=float), layers=3, hidden=16, seed=seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for prm in inn.params():
            prm.add_(0.3 * torch.randn(prm.shape, generator=g, dtype=prm.dtype))
    return inn


@pytest.mark.parametrize("n", [1, 2, 7])
def test_inn_inverse_matches_its_forward_pass_and_its_vjp_matches_finite_differences(n) -> None:
    inn = _random_inn(n, seed=n)
    Z = _ball(np.random.default_rng(n), 100, n)
    X = inn.forward_batch(Z)
    assert np.abs(X - (np.arange(n) + Z)).max() > 1e-2  # not the identity
    np.testing.assert_allclose(inn.inverse(X), Z, atol=1e-10)
    np.testing.assert_allclose(inn.forward(inn.inverse(X[0])), X[0], atol=1e-10)
    z, v, e = Z[0], np.linspace(-1, 1, n), 1e-6
    fd = np.array(
        [v @ (inn.forward(z + e * d) - inn.forward(z - e * d)) / (2 * e) for d in np.eye(n)]
    )
    np.testing.assert_allclose(inn.vjp(z, v), fd, atol=1e-6)


def test_inn_training_shrinks_the_infeasible_share_and_hom_pgd_plus_stays_feasible() -> None:
    p = star(n=3, seed=0)
    inn = INNMap(3, p.x0, layers=2, hidden=16, seed=0)
    before = INNMap(3, p.x0, layers=2, hidden=16, seed=0).fit(p, iters=1, seed=0)
    inn.fit(p, iters=150, seed=0)
    q0, q1 = before.quality(p), inn.quality(p)
    assert q1["infeasible_share"] <= 0.2
    # training grows the image: mean |psi(z) - x0| increases while staying mostly inside K
    Z = _ball(np.random.default_rng(3), 500, 3)
    assert (
        np.linalg.norm(inn.forward_batch(Z) - p.x0, axis=1).mean()
        > np.linalg.norm(before.forward_batch(Z) - p.x0, axis=1).mean()
    )
    assert q0["infeasible_share"] <= 1.0
    tr = run("hom_pgd_plus", p, {"iters": 60, "inn": inn})
    assert max(p.violation(x) for x in tr.xs) <= 1e-5  # the bisected projection keeps feasibility
    fs = [p.f(x) for x in tr.xs]
    assert all(b <= a + 1e-12 for a, b in zip(fs, fs[1:]))  # monotone
    assert fs[-1] < p.f(p.x0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_projection_is_the_nearest_feasible_point_on_a_convex_set(seed) -> None:
    """The attack set (weighted l2 ball and box) is convex: no sampled feasible point is closer."""
    p = attack(index=seed)
    rng = np.random.default_rng(seed)
    v = p.x0 + rng.normal(size=64) * 0.2
    y = project_exact(p, v, p.x0)
    assert p.violation(y) <= 1e-5
    X = sample_feasible(p, 3000, rng)
    assert np.linalg.norm(y - v) <= np.linalg.norm(X - v, axis=1).min() + 1e-9


def test_solvers_reach_the_best_known_on_the_star_set_and_gauge_iterates_stay_feasible() -> None:
    p = star(n=10, seed=0)
    _, fb = best_known(p)
    for m in ("hom_pgd_gauge", "pgd_exact", "slsqp"):
        tr = run(m, p, {"iters": 500})
        assert rel_gap(p.f(tr.x), fb) < 1e-3, m
        assert p.violation(tr.x) <= 1e-5
        assert time_to_gap(tr, p, fb, 1e-3) < np.inf
    tr = run("hom_pgd_gauge", qcqp(10, 100, seed=0), {"iters": 100})
    assert max(qcqp(10, 100, seed=0).violation(x) for x in tr.xs) <= 1e-9


def test_penalty_methods_end_near_feasible_and_unknown_methods_are_rejected() -> None:
    p = qcqp(10, 10, seed=1)
    for m in ("penalty", "alm"):
        tr = run(m, p, {"iters": 300})
        assert p.violation(tr.x) < 1e-2
    with pytest.raises(ValueError, match="method must be one of"):
        run("newton", p)
    with pytest.raises(ValueError):
        icml26.agents.make("hom-pgd-gauge", iters=0)
    assert set(METHODS) == {"hom_pgd_plus", "hom_pgd_gauge", "pgd_exact", "penalty", "alm", "slsqp"}


def test_agent_through_the_env_equals_the_direct_run() -> None:
    env = gym.make("icml26/ConstrainedOpt-v0", problem="qcqp", problem_kwargs={"n": 10, "m": 10})
    agent = icml26.agents.make("hom-pgd-gauge", iters=200)
    obs, info = env.reset(seed=3)
    agent.reset(3)
    steps = 0
    while True:
        obs, r, term, trunc, info = env.step(agent.act(obs, info))
        steps += 1
        if term or trunc:
            break
    direct = run("hom_pgd_gauge", env.unwrapped.problem, {"iters": 200})
    assert term and steps == len(direct.xs) + 1
    assert info["objective"] == env.unwrapped.problem.f(direct.x)
    assert info["oracle_calls"] > 0


def test_run_trial_reports_every_metric() -> None:
    task = get_task("constrained_opt/qcqp-10x10")
    out = run_trial(task, icml26.agents.make("co-slsqp"), 0)
    assert set(out.metrics) == {m.name for m in task.metrics}
    assert all(np.isfinite(v) for v in out.metrics.values())
    assert len(out.scores) == task.eval_episodes
