"""Generators, radial functions, best-known solutions and the env of the constrained_opt family."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401  (registers the ids)
from icml26.envs.constrained_opt.problems import (
    attack,
    best_known,
    jcc_opf,
    make_problem,
    qcqp,
    rel_gap,
    sample_feasible,
    star,
)

CASES = [
    ("qcqp", {"n": 2, "m": 3}),
    ("qcqp", {"n": 10, "m": 100}),
    ("star", {"n": 5}),
    ("jcc_opf", {"case": "case30"}),
    ("attack", {"p": 2.0, "eps": 0.06}),
]


def _units(n: int, k: int, seed: int) -> np.ndarray:
    U = np.random.default_rng(seed).normal(size=(k, n))
    return U / np.linalg.norm(U, axis=1, keepdims=True)


@pytest.mark.parametrize(("name", "kw"), CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_instances_are_feasible_with_a_strictly_interior_anchor(name, kw, seed) -> None:
    p = make_problem(name, **kw, seed=seed)
    assert np.max(p.g(p.x0)) < -1e-6  # strictly inside every constraint and the box
    X = sample_feasible(p, 300, np.random.default_rng(seed))
    assert p.violation_batch(X).max() <= 1e-9
    # g and g_batch agree row by row
    np.testing.assert_allclose(p.g_batch(X[:3]), np.stack([p.g(x) for x in X[:3]]), atol=1e-12)


@pytest.mark.parametrize(("name", "kw"), CASES)
def test_radial_function_is_the_first_exit_distance(name, kw) -> None:
    """x0 + rho u is on the boundary (max g = 0) and a step beyond it leaves the set."""
    p = make_problem(name, **kw, seed=0)
    U = _units(p.n, 50, 1)
    rho = p.radial(U)
    assert np.all(rho > 0) and np.all(np.isfinite(rho))
    on = p.x0 + rho[:, None] * U
    gmax = p.g_batch(on).max(axis=1)
    assert np.abs(gmax).max() < 1e-6
    out = p.x0 + (rho * (1 + 1e-4))[:, None] * U
    assert np.all(p.g_batch(out).max(axis=1) > 0)
    inside = p.x0 + (rho * (1 - 1e-4))[:, None] * U
    assert np.all(p.g_batch(inside).max(axis=1) < 0)


def test_qcqp_radial_matches_a_dense_scan_of_the_ray() -> None:
    """Independent reference: the first t on a fine grid where the ray leaves K."""
    p = qcqp(n=4, m=6, seed=3)
    ts = np.linspace(0, 15, 150_001)
    for u in _units(4, 8, 2):
        viol = p.g_batch(p.x0 + ts[:, None] * u).max(axis=1)
        first = ts[np.argmax(viol > 0)]
        assert abs(first - p.radial(u[None])[0]) <= 1.5e-4


def test_star_radial_is_the_defining_function_and_jcc_counts_scenarios() -> None:
    s = star(n=3, seed=4)
    U = _units(3, 20, 0)
    np.testing.assert_allclose(s.radial(U), s.R(U), rtol=1e-12)
    assert s.R(U).min() >= s.r0 * (1 - s.amp) - 1e-12
    j = jcc_opf()
    U = _units(j.n, 20, 5)
    x = j.x0 + 0.999 * j.radial(U)[:, None] * U
    v, _ = j.scenario_violation(x)
    held = (v <= 1e-9).sum(axis=1)
    assert np.all(held >= j.keep)  # at least S - K = 18 of 20 scenarios hold inside
    x = j.x0 + 1.001 * j.radial(U)[:, None] * U
    box_out = (x < j.lb).any(1) | (x > j.ub).any(1)
    v, _ = j.scenario_violation(x)
    assert np.all(box_out | ((v <= 1e-9).sum(axis=1) < j.keep))


@pytest.mark.parametrize(("name", "kw"), CASES)
def test_cached_best_known_solutions_verify(name, kw) -> None:
    p = make_problem(name, **kw, seed=0)
    xb, fb = best_known(p)
    assert p.violation(xb) <= 1e-7
    assert p.f(xb) == pytest.approx(fb, abs=1e-12)
    X = sample_feasible(p, 200, np.random.default_rng(9))
    assert fb <= min(p.f(x) for x in X) + 1e-9
    assert fb <= p.f(p.x0)
    xb2, fb2 = best_known(p)  # second call reads the cache
    assert fb2 == fb and np.array_equal(xb, xb2)


def test_jcc_best_known_is_the_exact_optimum_on_a_small_instance() -> None:
    """Exact enumeration must match (or beat) multi-start local solves of the non-smooth JCC."""
    from icml26.envs.constrained_opt.problems import _multistart

    p = jcc_opf(scenarios=8, eps=0.25, seed=2)
    _, fb = best_known(p)
    xm = _multistart(p, 10, 0)
    assert fb <= p.f(xm) + 1e-7


def test_attack_classifier_and_problem() -> None:
    a = attack(index=0)
    assert float(a.net["test_acc"]) > 0.9
    assert np.argmax(a.logits(np.zeros(64))) == a.label
    assert a.f(np.zeros(64)) > 0  # correctly classified: positive margin
    # the margin gradient matches finite differences
    d = a.x0.copy()
    e = 1e-6
    fd = np.array(
        [(a.f(d + e * np.eye(64)[i]) - a.f(d - e * np.eye(64)[i])) / (2 * e) for i in range(64)]
    )
    np.testing.assert_allclose(a.grad(d), fd, atol=1e-6)


def test_generators_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="n must be an int"):
        qcqp(n=0)
    with pytest.raises(ValueError, match="amp"):
        star(amp=1.5)
    with pytest.raises(ValueError, match="case"):
        jcc_opf(case="case9999")
    with pytest.raises(ValueError, match="p must be"):
        attack(p=0.5)
    with pytest.raises(ValueError, match="problem must be one of"):
        make_problem("lp")


def test_env_scores_the_best_known_point_and_the_anchor_exactly() -> None:
    env = gym.make("icml26/ConstrainedOpt-v0", problem="qcqp", problem_kwargs={"n": 2, "m": 3})
    obs, info = env.reset(seed=5)
    prob = env.unwrapped.problem
    xb, fb = best_known(prob)
    assert info["f_best"] == fb
    assert obs[0] == prob.f(prob.x0) and obs[1] == 0.0
    assert obs[2] == pytest.approx(rel_gap(prob.f(prob.x0), fb))
    obs, r, term, trunc, info = env.step(np.concatenate([xb, [0.0]]))
    assert not term and info["feasible"] and abs(info["rel_gap"]) < 1e-12 and r == 0.0
    far = np.full(2, 100.0)
    obs, r, term, trunc, info = env.step(np.concatenate([far, [1.0]]))
    assert term and not info["feasible"]
    assert r == pytest.approx(-(max(info["rel_gap"], 0) + 100 * info["violation"]))
    assert info["violation"] == pytest.approx(float(np.max(prob.g(far))))
    assert info["violation"] >= 95.0  # at least the box row x - 5 <= 0


def test_env_rejects_bad_actions_without_changing_state() -> None:
    env = gym.make("icml26/ConstrainedOpt-v0", problem="qcqp", problem_kwargs={"n": 2, "m": 3})
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        env.step(np.zeros(5))
    with pytest.raises(ValueError, match="finite"):
        env.step(np.array([np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="problem must be one of"):
        gym.make("icml26/ConstrainedOpt-v0", problem="lp")
    with pytest.raises(ValueError, match="reset"):
        gym.make("icml26/ConstrainedOpt-v0", problem_kwargs={"n": 2, "m": 3, "seed": 1})
    _, _, _, _, info = env.step(np.zeros(3))
    assert info["iterates"] == 1
