"""Problems of the minmax_vi family: monotonicity / weak Minty constants, residuals, solutions, noise."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from icml26.envs.minmax_vi.problems import (
    VIProblem,
    bilinear,
    global_forsaken,
    lagrangian_qp,
    make_problem,
    quadratic_game,
    weak_minty_quadratic,
)

MONOTONE = [
    bilinear(n=6, spectrum="well", domain="free", seed=1),
    bilinear(n=6, spectrum="ill", domain="box", seed=2),
    quadratic_game(n=6, rank=2, seed=3),
    lagrangian_qp(n=6, m=4, active=2, seed=4),
]


def _pairs(
    prob: VIProblem, k: int = 500, scale: float = 3.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(0, scale, (k, prob.dim)), rng.normal(0, scale, (k, prob.dim))


@pytest.mark.parametrize("prob", MONOTONE, ids=lambda p: p.name)
def test_monotone_generators_are_monotone_and_lipschitz(prob: VIProblem) -> None:
    z, w = _pairs(prob)
    fz, fw = prob.operator(z), prob.operator(w)
    inner = np.sum((fz - fw) * (z - w), axis=1)
    assert inner.min() >= -1e-9 * np.sum((z - w) ** 2, axis=1).max()
    ratio = np.linalg.norm(fz - fw, axis=1) / np.linalg.norm(z - w, axis=1)
    assert ratio.max() <= prob.lipschitz * (1 + 1e-9)
    assert ratio.max() >= 0.5 * prob.lipschitz  # the constant is not a loose bound
    assert prob.monotone


@pytest.mark.parametrize(
    "prob",
    [
        *MONOTONE,
        weak_minty_quadratic(copies=3, seed=5),
        weak_minty_quadratic(domain="box"),
        global_forsaken(),
    ],
    ids=lambda p: p.name,
)
def test_residual_is_zero_at_the_known_solution_and_positive_elsewhere(prob: VIProblem) -> None:
    assert prob.residual(prob.solution) < 1e-12
    z0 = prob.project(prob.z0)
    assert prob.residual(z0) > 0.1
    assert np.all(prob.project(prob.solution) == prob.solution)


def test_weak_minty_quadratic_has_exactly_the_stated_rho_and_l() -> None:
    prob = weak_minty_quadratic(copies=4, lipschitz=2.0, rho=-0.2, seed=7)
    z = np.random.default_rng(0).normal(size=(300, prob.dim))
    f = prob.operator(z)
    # Pethick's convention: <F(z), z - z*> = rho |F(z)|^2, and |F(z)| = L |z - z*|.
    np.testing.assert_allclose(
        np.sum(f * (z - prob.solution), axis=1), -0.2 * np.sum(f * f, axis=1), rtol=1e-10
    )
    np.testing.assert_allclose(
        np.linalg.norm(f, axis=1), 2.0 * np.linalg.norm(z, axis=1), rtol=1e-10
    )
    assert prob.lipschitz == pytest.approx(2.0) and prob.rho == -0.2 and not prob.monotone
    w = z[::-1]
    assert (
        np.min(np.sum((prob.operator(z) - prob.operator(w)) * (z - w), axis=1)) < 0
    )  # not monotone


def test_global_forsaken_weak_minty_constant_holds_on_random_points_of_the_box() -> None:
    prob = global_forsaken()
    z = np.random.default_rng(1).uniform(-1.5, 1.5, (5000, 2))
    f = prob.operator(z)
    assert np.all(np.sum(f * z, axis=1) >= prob.rho * np.sum(f * f, axis=1) - 1e-3)
    assert -0.5 < prob.rho < 0  # nonmonotone, with a weak Minty solution
    w = np.random.default_rng(2).uniform(-1.5, 1.5, (5000, 2))
    ratio = np.linalg.norm(prob.operator(z) - prob.operator(w), axis=1) / np.linalg.norm(
        z - w, axis=1
    )
    assert ratio.max() <= prob.lipschitz * 1.001
    np.testing.assert_allclose(prob.operator(np.zeros(2)), 0.0)


def test_box_residual_hand_worked() -> None:
    """F(z) = z - 2 on C = [0, 1]: z* = 1 (upper bound, F = -1 pushes outward, residual 0);
    at z = 0 (lower bound) F = -2 gives max(-F, 0) = 2; inside at 0.5, |F| = 1.5."""
    prob = VIProblem(
        "hand",
        np.zeros(1),
        np.ones(1),
        np.ones(1),
        np.zeros(1),
        1.0,
        True,
        matrix=np.eye(1),
        offset=np.array([-2.0]),
    )
    assert prob.residual(np.array([1.0])) == 0.0
    assert prob.residual(np.array([0.0])) == 2.0
    assert prob.residual(np.array([0.5])) == 1.5
    assert prob.natural_residual(np.array([0.5]), 1.0) == pytest.approx(0.5)  # P(0.5 + 1.5) = 1


def test_lagrangian_solution_matches_an_independent_qp_solve() -> None:
    prob = lagrangian_qp(n=8, m=5, active=3, seed=11)
    a, b, c = prob.params["A"], prob.params["b"], prob.params["c"]
    sol = minimize(
        lambda x: 0.5 * np.sum((x - c) ** 2),
        np.zeros(8),
        jac=lambda x: x - c,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda x: b - a @ x, "jac": lambda x: -a}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert sol.success
    np.testing.assert_allclose(sol.x, prob.solution[:8], atol=1e-6)
    assert np.all(prob.solution[8:] >= 0) and np.sum(prob.solution[8:] > 0) == 3


def test_oracle_is_unbiased_with_variance_growing_like_the_squared_distance() -> None:
    prob = bilinear(n=4, seed=0)
    rng = np.random.default_rng(0)
    near, far = prob.solution + 0.5, prob.solution + 5.0
    k = 20_000
    for z in (near, far):
        s = prob.sample(np.tile(z, (k, 1)), rng, 1, "operator", 0.0, 1.0)
        np.testing.assert_allclose(
            s.mean(0), prob.operator(z), atol=6 * np.sqrt(s.var(0).max() / k)
        )
    var = [
        np.sum(prob.sample(np.tile(z, (k, 1)), rng, 1, "operator", 0.0, 1.0).var(0))
        for z in (near, far)
    ]
    assert var[1] / var[0] == pytest.approx(100.0, rel=0.1)  # |z - z*|^2 ratio (5 / 0.5)^2
    # the mean of b samples, drawn in one step, has the variance of an average of b draws
    v16 = np.sum(prob.sample(np.tile(far, (k, 1)), rng, 16, "operator", 0.0, 1.0).var(0))
    assert v16 * 16 / var[1] == pytest.approx(1.0, rel=0.1)
    add = prob.sample(np.tile(far, (k, 1)), rng, 1, "additive", 0.1, 0.0)
    assert np.sum(add.var(0)) == pytest.approx(0.01, rel=0.1)  # bounded variance sigma0^2


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: bilinear(n=0), "n must be an int"),
        (lambda: bilinear(spectrum="flat"), "spectrum"),
        (lambda: bilinear(domain="ball"), "domain"),
        (lambda: quadratic_game(n=3, rank=5), "rank"),
        (lambda: lagrangian_qp(n=3, m=5, active=4), "active"),
        (lambda: weak_minty_quadratic(rho=-2.0), "rho"),
        (lambda: weak_minty_quadratic(copies=True), "copies"),
        (
            lambda: bilinear(n=3).sample(
                np.zeros(6), np.random.default_rng(), 1, "gaussian", 0.1, 1.0
            ),
            "noise",
        ),
    ],
)
def test_bad_problem_arguments_are_clear_errors(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_unknown_problem_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="bilinear, global_forsaken"):
        make_problem("nope")


def test_network_game_has_exact_gradients_is_nonmonotone_and_a_certified_stationary_point() -> None:
    from icml26.envs.minmax_vi.problems import build_network_game as network_game

    prob = network_game(samples=32, seed=1)
    rng = np.random.default_rng(0)
    z = 0.5 * rng.normal(size=prob.dim)
    f = prob.operator(z)
    h = 1e-6
    num = np.array(
        [(prob.value(z + h * e) - prob.value(z - h * e)) / (2 * h) for e in np.eye(prob.dim)]
    )
    np.testing.assert_allclose(f[:13], num[:13], atol=1e-7)  # grad_x f
    np.testing.assert_allclose(f[13:], -num[13:], atol=1e-7)  # -grad_y f
    # not monotone: the symmetric part of the Jacobian has a negative eigenvalue somewhere
    eig = []
    for p in rng.uniform(-1.5, 1.5, (20, prob.dim)):
        jac = np.stack(
            [
                (prob.operator(p + h * e) - prob.operator(p - h * e)) / (2 * h)
                for e in np.eye(prob.dim)
            ],
            1,
        )
        eig.append(np.linalg.eigvalsh(0.5 * (jac + jac.T)).min())
    assert min(eig) < -1e-3
    assert prob.params["certified_residual"] < 1e-9
    assert prob.residual(prob.solution) == prob.params["certified_residual"]
    assert np.linalg.norm(prob.solution[:13]) > 0.1  # a generator that does something
