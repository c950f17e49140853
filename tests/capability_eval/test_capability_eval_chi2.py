"""chi^2-radius, overlap and the optimal design on hand-worked families and against scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from icml26.certify import chi2_divergence, chi2_radius, optimal_design, uniform_design
from icml26.envs.capability_eval.families import bumps_family, family_matrix


def test_identical_environments_have_radius_zero() -> None:
    q = np.array([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])
    assert chi2_radius(q, q[0]) == pytest.approx(0.0, abs=1e-15)
    d = optimal_design(q)
    assert d.radius == pytest.approx(0.0, abs=1e-9) and d.overlap
    np.testing.assert_allclose(d.p, q[0], atol=1e-9)


def test_disjoint_supports_are_infinite_and_fail_overlap() -> None:
    q = np.array([[0.0, 0.0, 1.0]])
    p = np.array([0.5, 0.5, 0.0])
    assert chi2_radius(q, p) == np.inf
    d = optimal_design(np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]), testable=np.array([1, 1, 0]))
    assert d.radius == np.inf and not d.overlap
    np.testing.assert_allclose(d.uncovered, [0.0, 1.0])
    # the covered member still gets its best design
    np.testing.assert_allclose(d.p, [0.5, 0.5, 0.0], atol=1e-6)


def test_hand_worked_divergences() -> None:
    p = np.array([0.5, 0.5])
    np.testing.assert_allclose(chi2_divergence(np.array([[1.0, 0.0], [0.9, 0.1]]), p), [1.0, 0.64])
    k = 7
    assert chi2_radius(np.eye(k), np.full(k, 1 / k)) == pytest.approx(k - 1)


def test_two_member_optimal_design_by_hand() -> None:
    # members (1, 0) and (1/2, 1/2): the chi^2 curves 1/x - 1 and 1/(4x) + 1/(4(1-x)) - 1
    # cross at x = 3/4, where both equal 1/3
    d = optimal_design(np.array([[1.0, 0.0], [0.5, 0.5]]))
    np.testing.assert_allclose(d.p, [0.75, 0.25], atol=1e-6)
    assert d.radius == pytest.approx(1 / 3, abs=1e-7)
    assert 0 <= d.gap < 1e-6
    assert uniform_design(np.array([[1.0, 0.0], [0.5, 0.5]])).radius == pytest.approx(1.0)


def test_point_masses_need_the_uniform_design() -> None:
    d = optimal_design(np.eye(12))
    np.testing.assert_allclose(d.p, np.full(12, 1 / 12), atol=1e-9)
    assert d.radius == pytest.approx(11.0)


def _scipy_radius(q: np.ndarray) -> float:
    """Independent reference: minimize t subject to t >= sum q_j^2 / p, p in the simplex."""
    m, k = q.shape
    cons = [{"type": "eq", "fun": lambda x: x[:k].sum() - 1.0}] + [
        {
            "type": "ineq",
            "fun": (lambda x, j=j: x[k] - (q[j] ** 2 / np.maximum(x[:k], 1e-12)).sum()),
        }
        for j in range(m)
    ]
    x0 = np.concatenate([np.full(k, 1.0 / k), [float(k)]])
    res = minimize(
        lambda x: x[k],
        x0,
        constraints=cons,
        bounds=[(1e-9, 1.0)] * k + [(0.0, None)],
        method="SLSQP",
        options={"maxiter": 1000, "ftol": 1e-13},
    )
    return float(res.x[k] - 1.0)


@pytest.mark.parametrize("seed", range(4))
def test_optimal_design_matches_scipy_on_random_families(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.full(10, 0.4), size=5)
    d = optimal_design(q)
    assert d.radius == pytest.approx(_scipy_radius(q), rel=1e-5, abs=1e-6)
    assert d.dual <= d.radius + 1e-9  # weak duality
    assert d.radius <= uniform_design(q).radius + 1e-12


def test_headline_family_radius() -> None:
    q = family_matrix(bumps_family(32, (np.arange(8) + 0.5) / 8, [0.02, 0.08] * 4))
    d = optimal_design(q)
    assert d.radius == pytest.approx(_scipy_radius(q), rel=1e-5)
    assert d.radius == pytest.approx(5.118, abs=1e-3)
    assert uniform_design(q).radius == pytest.approx(12.635, abs=1e-3)


def test_bad_families_are_rejected() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        chi2_divergence(np.array([[0.5, 0.4]]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="shape"):
        chi2_divergence(np.array([[0.5, 0.5]]), np.array([1.0]))
    with pytest.raises(ValueError, match="testable"):
        optimal_design(np.eye(3), testable=np.zeros(3, dtype=bool))
