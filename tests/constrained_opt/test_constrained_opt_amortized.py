"""Parametric families, the conditional INN, the release's step-size rule and the family task."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import icml26  # noqa: F401  (registers the ids)
import icml26.agents
from icml26.agents.constrained_opt.maps import CondINNMap, _ball_samples
from icml26.agents.constrained_opt.solvers import _ball_pgd_release, run
from icml26.benchmarks import get_task
from icml26.benchmarks.tasks.constrained_opt import run_family_trial
from icml26.envs.constrained_opt.problems import (
    TEST_OFFSET,
    TRAIN_SEEDS,
    VALIDATION_OFFSET,
    Family,
    qcqp,
    qcqp_param,
    star,
)
from icml26.protocol import Budget


# ---------------------------------------------------------------------------- the family
def test_qcqp_param_shares_the_constraint_rows_and_draws_rhs_and_objective_per_instance() -> None:
    a, b = qcqp_param(6, 12, seed=1, radius=None), qcqp_param(6, 12, seed=2, radius=None)
    base = qcqp(6, 12, seed=0)  # the family's rows are qcqp's at family_seed 0
    np.testing.assert_array_equal(a.Qs, base.Qs)
    np.testing.assert_array_equal(b.ps, base.ps)
    for p in (a, b):
        assert p.condition is not None and p.condition.shape == (12,)
        assert np.all(np.abs(p.condition) <= 1.0)
        np.testing.assert_allclose(p.bs, base.bs * (1 + 0.5 * p.condition), rtol=1e-15)
        assert np.max(p.g(p.x0)) < -1e-6  # x0 = 0 strictly feasible for every instance
        # the release's objective: Q0 = U diag(lam) U' / n has rank n // 2, p0 ~ N(0, I) / n
        assert np.linalg.matrix_rank(p.Q0, tol=1e-10) == 3
        np.testing.assert_allclose(p.Q0, p.Q0.T, atol=1e-15)
    assert not np.allclose(a.bs, b.bs) and not np.allclose(a.Q0, b.Q0)
    assert a.key() != b.key()
    # the release's ball ||x|| <= 5 is one more row, not conditioned on
    c = qcqp_param(6, 12, seed=1)
    assert c.Qs.shape[0] == 13 and c.bs[-1] == 25.0
    np.testing.assert_allclose(c.g(np.full(6, 5 / np.sqrt(6)))[12], 0.0, atol=1e-12)


def test_with_the_release_ball_the_quadratic_rows_never_bind_in_high_dimension() -> None:
    """The documented reason the family drops the ball: at n = 60 the bound
    0.5 ||Q_i|| R^2 + R ||p_i|| <= b_i holds for every row (b = b0), so the set is the ball; an
    independent check samples the sphere ||x|| = 5 and finds every quadratic row slack."""
    p = qcqp_param(60, 200, seed=0, spread=0.0)
    Q, pq, bq = p.Qs[:200], p.ps[:200], p.bs[:200]
    norms = np.abs(np.linalg.eigvalsh(Q)).max(axis=1)
    assert np.all(0.5 * norms * 25 + 5 * np.linalg.norm(pq, axis=1) <= bq)
    X = _ball_samples(np.random.default_rng(0), 500, 60)
    X = 5 * X / np.linalg.norm(X, axis=1, keepdims=True)
    assert p.g_batch(X)[:, :200].max() < 0


def test_family_seeds_are_split_between_training_validation_and_tests() -> None:
    fam = Family.make("qcqp_param", {"n": 3, "m": 5, "radius": None})
    rng = np.random.default_rng(0)
    train = {int(fam.train_instance(rng).params["seed"]) for _ in range(200)}
    assert max(train) < TRAIN_SEEDS <= VALIDATION_OFFSET
    val = {int(p.params["seed"]) for p in fam.validation_instances(5)}
    assert val == set(range(VALIDATION_OFFSET, VALIDATION_OFFSET + 5))
    assert int(fam.test_instance(7).params["seed"]) == TEST_OFFSET + 7 > max(val)
    assert fam.n == 3 and fam.condition_dim == 5
    with pytest.raises(ValueError, match="not parametric"):
        Family.make("qcqp", {"n": 3, "m": 5})
    with pytest.raises(ValueError, match="drawn by the family"):
        Family.make("qcqp_param", {"seed": 3})


# ---------------------------------------------------------------------------- conditional INN
@pytest.fixture(scope="module")
def trained() -> tuple[Family, CondINNMap]:
    fam = Family.make("qcqp_param", {"n": 3, "m": 8, "radius": None, "spread": 0.9})
    cinn = CondINNMap(fam.n, fam.condition_dim, layers=3, hidden=32, embed=16, seed=0)
    return fam, cinn.fit(fam, 400, seed=0)


def test_conditional_inn_maps_the_ball_into_each_held_out_set_and_inverts(trained) -> None:
    """On 20 held-out instances (never trained on): the images of ball samples lie in that
    instance's set up to the learning error (eps_inn: at most 15% of samples near the boundary
    of the ball, 7.8% on average here), the inner half ball lands inside K, the map inverts to
    1e-5 both ways, and the instance's own condition beats another instance's (conditioning
    carries the set's shape)."""
    fam, cinn = trained
    rng = np.random.default_rng(0)
    own, wrong = [], []
    for i in range(20):
        p = fam.test_instance(i)
        psi = cinn.bind(p.condition, p.x0)
        Z = _ball_samples(rng, 1000, fam.n)
        X = psi.forward(Z)
        own.append(np.mean(p.violation_batch(X) > 1e-5))
        assert own[-1] <= 0.25
        assert np.mean(p.violation_batch(psi.forward(0.5 * Z)) > 1e-5) <= 0.02
        np.testing.assert_allclose(psi.inverse(X), Z, atol=1e-5)
        XK = X[p.violation_batch(X) <= 0]
        np.testing.assert_allclose(psi.forward(psi.inverse(XK)), XK, atol=1e-5)
        other = fam.test_instance(100 + i)
        X_wrong = cinn.bind(other.condition, p.x0).forward(Z)
        wrong.append(np.mean(p.violation_batch(X_wrong) > 1e-5))
    assert np.mean(own) <= 0.15
    assert np.mean(own) < np.mean(wrong)
    assert np.mean(np.array(own) < np.array(wrong)) >= 0.6
    assert cinn.train_cpu > 0 and len(cinn.history) == 400


def test_bound_conditional_map_vjp_matches_finite_differences() -> None:
    import torch

    cinn = CondINNMap(4, 6, layers=2, hidden=16, embed=8, seed=1)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for prm in cinn.params():
            prm.add_(0.3 * torch.randn(prm.shape, generator=g, dtype=prm.dtype))
    psi = cinn.bind(np.linspace(-1, 1, 6), np.arange(4.0))
    z, v, e = np.array([0.1, -0.3, 0.2, 0.05]), np.array([1.0, -2.0, 0.5, 0.3]), 1e-6
    fd = np.array(
        [v @ (psi.forward(z + e * d) - psi.forward(z - e * d)) / (2 * e) for d in np.eye(4)]
    )
    np.testing.assert_allclose(psi.vjp(z, v), fd, atol=1e-6)
    with pytest.raises(ValueError, match="6 entries"):
        cinn.bind(np.zeros(5), np.zeros(4))


# ---------------------------------------------------------------------------- the release's rule
class _Line:
    """K = [-lim, lim] in one dimension, f(x) = a (x - c)^2 + b x, identity 'map'."""

    n = 1

    def __init__(self, a: float, c: float, b: float = 0.0, lim: float = 1.0) -> None:
        self.a, self.c, self.b, self.lim = a, c, b, lim

    def f(self, x: np.ndarray) -> float:
        return float(self.a * (x[0] - self.c) ** 2 + self.b * x[0])

    def grad(self, x: np.ndarray) -> np.ndarray:
        return np.array([2 * self.a * (x[0] - self.c) + self.b])

    def violation(self, x: np.ndarray) -> float:
        return max(0.0, abs(float(x[0])) - self.lim)

    forward = staticmethod(lambda z: np.asarray(z, float).copy())
    vjp = staticmethod(lambda z, v: np.asarray(v, float))


def test_release_rule_takes_every_step_and_decays_only_after_an_increase() -> None:
    """Hand-worked: f = 15 (x - 0.2)^2 from 0 with lr 0.1 overshoots to 0.6 (f rises 0.6 ->
    2.4: lr -> 0.0999), then to 0.6 - 0.0999 * 12 = -0.5988 (rises again: lr -> 0.0998001),
    then past the ball's edge."""
    o = _Line(15.0, 0.2)
    xs = [x[0] for x in _ball_pgd_release(o, o, 3, np.zeros(1))]
    assert xs[0] == pytest.approx(0.6, abs=1e-15)
    assert xs[1] == pytest.approx(0.6 - 0.0999 * 12, abs=1e-12)
    # the third trial, 1.79, leaves the ball: projected onto it
    assert xs[1] - 0.0998001 * 30 * (xs[1] - 0.2) > 1.0 and xs[2] == 1.0
    # a descent path never changes the step: x_k = 0.5 - 0.5 * 0.8^k for f = (x - 0.5)^2
    o = _Line(1.0, 0.5)
    xs = [x[0] for x in _ball_pgd_release(o, o, 6, np.zeros(1))]
    np.testing.assert_allclose(xs, 0.5 - 0.5 * 0.8 ** np.arange(1, 7), atol=1e-14)


def test_release_bisection_pulls_an_infeasible_trial_back_towards_the_current_iterate() -> None:
    """K = [-0.5, 0.5] inside the unit ball (the 'map' overshoots K: eps_inn > 0); f = -x moves
    +0.1 per step to 0.5; every later trial is bisected back onto the segment and stays put."""
    o = _Line(0.0, 0.0, b=-1.0, lim=0.5)
    stats: dict = {}
    xs = [x[0] for x in _ball_pgd_release(o, o, 8, np.zeros(1), stats)]
    np.testing.assert_allclose(xs[:5], [0.1, 0.2, 0.3, 0.4, 0.5], atol=1e-12)
    assert all(abs(x) <= 0.5 + 1e-12 for x in xs)
    assert xs[-1] == pytest.approx(0.5, abs=1e-12)
    assert stats["bp_triggered"] == 3 and stats["bp_calls"] == 8
    # without the ball projection (the release's INN-PGD code path) the same holds here
    xs = [x[0] for x in _ball_pgd_release(o, o, 8, np.zeros(1), project=False)]
    assert max(xs) <= 0.5 + 1e-12


def test_exact_projection_pgd_under_the_release_rule_projects_infeasible_trials_only() -> None:
    p = star(n=4, seed=0)
    tr = run("pgd_exact", p, {"iters": 60, "rule": "release"})
    assert max(p.violation(x) for x in tr.xs) <= 1e-5
    assert 0 < tr.info["proj_calls"] < len(tr.xs)
    assert len(tr.info["proj_cpu"]) == tr.info["proj_calls"]
    tr = run("slsqp", p, {"timed": True})
    assert len(tr.xs) > 2 and np.all(np.diff(tr.cpu) >= 0) and np.all(np.diff(tr.times) >= 0)
    np.testing.assert_allclose(tr.x, run("slsqp", p).x, atol=1e-12)  # same final point


# ---------------------------------------------------------------------------- agent and task
def _tiny_task(updates: int = 30, own: int = 30):  # type: ignore[no-untyped-def]
    t = get_task("constrained_opt/qcqp-param-40x1500")
    return dataclasses.replace(
        t,
        env_kwargs={**t.env_kwargs, "problem_kwargs": {"n": 3, "m": 6, "radius": None}},
        budget=Budget(updates=updates),
        eval_episodes=5,
        extra={**t.extra, "reference_shards": 2, "references_at_updates": own},
    )


def test_family_trial_pairs_the_references_on_the_seed_shard_in_rotated_order() -> None:
    agent = icml26.agents.make("hom-pgd-plus-amortized", iters=30, val_instances=2)
    out = run_family_trial(_tiny_task(), agent, 1)
    recs = out.extra["instances"]
    assert [r["i"] for r in recs] == list(range(5))
    for r in recs:
        paired = r["i"] % 2 == 1  # seed 1's shard
        assert set(r["methods"]) == (
            {"agent", "pgd_exact", "slsqp", "hom_pgd_gauge"} if paired else {"agent"}
        )
        if paired:
            base = ["agent", "pgd_exact", "slsqp", "hom_pgd_gauge"]
            k = r["i"] % 4
            assert r["order"] == base[k:] + base[:k]  # the first method rotates per instance
            assert set(r["match"]) <= {"pgd_exact", "slsqp", "hom_pgd_gauge"}
            assert r["methods"]["pgd_exact"]["proj"]["calls"] > 0
        for m in r["methods"].values():
            reached = [m["to_target"][str(g)] for g in out.extra["targets"]]
            cpu = [np.inf if t is None else t[0] for t in reached]
            assert all(a <= b for a, b in zip(cpu, cpu[1:]))  # looser targets are reached first
            assert m["cpu"] > 0 and m["iters"] >= 1
    assert out.metrics["learn_cpu_s"] > 0 and out.metrics["feasible_rate"] == 1.0
    assert out.metrics["reach_rate"] == np.mean(
        [r["methods"]["agent"]["to_target"]["0.1"] is not None for r in recs]
    )
    assert out.extra["learn"]["steps"] == 30 and out.extra["learn"]["history"]
    # at another rung of a budget ladder the references are not run again
    out = run_family_trial(_tiny_task(updates=15, own=30), agent, 1)
    assert all(set(r["methods"]) == {"agent"} for r in out.extra["instances"])


def test_amortized_agent_needs_a_family_and_a_budget() -> None:
    agent = icml26.agents.make("hom-pgd-plus-amortized")
    with pytest.raises(RuntimeError, match="learn"):
        next(agent.solve(qcqp_param(3, 4, seed=0)))
    with pytest.raises(ValueError, match="updates"):
        agent.learn(Family.make("qcqp_param", {"n": 3, "m": 4}), Budget(env_steps=10))
    agent.learn(Family.make("qcqp_param", {"n": 3, "m": 4}), Budget(updates=2))
    with pytest.raises(ValueError, match="no condition"):
        next(agent.solve(qcqp(3, 4, seed=0)))
    with pytest.raises(ValueError, match="rule"):
        icml26.agents.make("hom-pgd-plus-amortized", rule="fast")
