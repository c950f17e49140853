"""Exact metrics: hand-worked gaps, brute-force cross-checks, LP and regularized equilibria."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from icml26.envs.markov_games import (
    duality_gap,
    exploitability,
    make_game,
    matrix_game,
    nash_equilibrium,
    occupancy,
    policy_value,
    random_game,
    regularized_equilibrium,
    regularized_gap,
    unilateral_concentrability,
)
from icml26.envs.markov_games.metrics import (
    best_response_to_max,
    best_response_to_min,
    max_reach_probability,
)
from icml26.envs.markov_games.solvers import (
    log_softmax,
    solve_matrix_game_lp,
    solve_matrix_games,
    solve_regularized_matrix_games,
)


def _pure(n: int, a: int) -> np.ndarray:
    p = np.zeros((1, 1, n))
    p[0, 0, a] = 1.0
    return p


def _random_policy(rng: np.random.Generator, H: int, S: int, n: int) -> np.ndarray:
    return rng.dirichlet(np.ones(n), size=(H, S))


def test_rps_gaps_hand_worked() -> None:
    g = make_game("rps")
    u = np.full((1, 1, 3), 1 / 3)
    assert duality_gap(g, u, u) == pytest.approx(0.0, abs=1e-15)
    rock, paper = _pure(3, 0), _pure(3, 1)
    # (rock, rock): max deviates to paper (+1), min deviates to paper (max gets -1): 1 - (-1)
    assert duality_gap(g, rock, rock) == pytest.approx(2.0)
    assert exploitability(g, rock, rock) == pytest.approx(1.0)  # OpenSpiel convention: NashConv / 2
    # (rock, uniform): the max side gains 0, the min side plays paper: 0 - (-1) = 1
    assert duality_gap(g, rock, u) == pytest.approx(1.0)
    assert duality_gap(g, paper, rock) == pytest.approx(2.0)
    mp = make_game("matching_pennies")
    assert duality_gap(mp, _pure(2, 0), _pure(2, 0)) == pytest.approx(2.0)


def test_gap_matches_brute_force_enumeration() -> None:
    """The DP best responses equal the best of all deterministic Markov policies."""
    g = random_game(S=2, A=2, B=2, H=2, seed=5)
    rng = np.random.default_rng(0)
    mu, nu = _random_policy(rng, 2, 2, 2), _random_policy(rng, 2, 2, 2)
    best_max, best_min = -np.inf, np.inf
    for choice in itertools.product(range(2), repeat=4):  # (h, s) -> action
        det = np.zeros((2, 2, 2))
        for k, a in enumerate(choice):
            det[k // 2, k % 2, a] = 1.0
        best_max = max(best_max, g.initial @ policy_value(g, det, nu)[0])
        best_min = min(best_min, g.initial @ policy_value(g, mu, det)[0])
    assert duality_gap(g, mu, nu) == pytest.approx(best_max - best_min, abs=1e-12)
    v_hi, br = best_response_to_min(g, nu)
    assert g.initial @ policy_value(g, br, nu)[0] == pytest.approx(g.initial @ v_hi[0])
    v_lo, br2 = best_response_to_max(g, mu)
    assert g.initial @ policy_value(g, mu, br2)[0] == pytest.approx(g.initial @ v_lo[0])


def test_nash_equilibrium_random_games() -> None:
    for seed, (S, A, B, H) in enumerate([(5, 3, 3, 3), (10, 2, 4, 5), (20, 5, 5, 10)]):
        g = random_game(S=S, A=A, B=B, H=H, seed=seed)
        eq = nash_equilibrium(g)
        assert duality_gap(g, eq.mu, eq.nu) < 1e-9
        assert eq.value == pytest.approx(g.initial @ policy_value(g, eq.mu, eq.nu)[0], abs=1e-9)


def test_block_lp_matches_per_game_lps() -> None:
    rng = np.random.default_rng(1)
    Q = rng.normal(size=(30, 4, 3))
    legal_max = rng.random((30, 4)) < 0.8
    legal_max[:, 0] = True
    x, y, v = solve_matrix_games(Q, legal_max, None)
    for i in range(30):
        xi, yi, vi = solve_matrix_game_lp(Q[i], legal_max[i], None)
        assert v[i] == pytest.approx(vi, abs=1e-9)
        assert np.all(x[i][~legal_max[i]] == 0)
        # (x, y) is an equilibrium: max_a (Q y)_a over legal a == min_b (x^T Q)_b
        assert np.where(legal_max[i], Q[i] @ y[i], -np.inf).max() == pytest.approx(vi, abs=1e-8)


def test_regularized_equilibrium_is_the_fixed_point() -> None:
    g = random_game(S=8, A=3, B=4, H=4, seed=2)
    rng = np.random.default_rng(3)
    p, q = _random_policy(rng, 4, 8, 3), _random_policy(rng, 4, 8, 4)
    for beta in (0.01, 0.1, 1.0):
        eq = regularized_equilibrium(g, beta, p, q)
        assert regularized_gap(g, eq.mu, eq.nu, beta, p, q) < 1e-10
        x2 = np.exp(log_softmax(np.log(p) + np.einsum("hsab,hsb->hsa", eq.Q, eq.nu) / beta))
        assert np.allclose(x2, eq.mu, atol=1e-9)
        # any other pair has a positive regularized gap
        assert regularized_gap(g, p, q, beta, p, q) > 1e-3
    # single small-beta matrix games converge too (continuation in the temperature)
    Q = rng.uniform(0, 5, size=(50, 5, 5))
    a, b = rng.dirichlet(np.ones(5), 50), rng.dirichlet(np.ones(5), 50)
    x, y, _ = solve_regularized_matrix_games(Q, 1e-3, a, b)
    assert np.allclose(
        x, np.exp(log_softmax(np.log(a) + np.einsum("nab,nb->na", Q, y) / 1e-3)), atol=1e-7
    )


def test_regularized_gap_properties() -> None:
    g = random_game(S=5, A=3, B=3, H=3, seed=4)
    rng = np.random.default_rng(4)
    mu, nu = _random_policy(rng, 3, 5, 3), _random_policy(rng, 3, 5, 3)
    assert regularized_gap(g, mu, nu, 0.3) >= 0
    # beta -> 0: soft best responses become best responses (error <= beta H log A on each side)
    beta = 1e-4
    assert regularized_gap(g, mu, nu, beta) == pytest.approx(
        duality_gap(g, mu, nu), abs=2 * beta * 3 * np.log(3) + 1e-9
    )
    # a policy outside its reference's support has an infinite regularized gap
    ref = g.uniform_policy("max").copy()
    ref[:, :, 2] = 0.0
    ref /= ref.sum(-1, keepdims=True)
    assert regularized_gap(g, mu, nu, 0.1, ref, None) == np.inf
    with pytest.raises(ValueError, match="beta must be a finite number > 0"):
        regularized_gap(g, mu, nu, 0.0)
    with pytest.raises(ValueError, match=r"expected shape \(H, S, B\)"):
        duality_gap(g, mu, mu[:, :, :2])


def test_unilateral_concentrability_hand_worked() -> None:
    g = make_game("rps")
    u = np.full((1, 1, 3), 1 / 3)
    # uniform data puts 1/9 on each (a, b); a deviator against nu* = uniform puts 1/3: C* = 3
    assert unilateral_concentrability(g, occupancy(g, u, u)) == pytest.approx(3.0)
    # a saddle point (row 0, column 0); Nash-only data never shows the deviations
    saddle = matrix_game([[1.0, 2.0], [0.0, 3.0]])
    eq = nash_equilibrium(saddle)
    assert eq.value == pytest.approx(1.0)
    assert unilateral_concentrability(saddle, occupancy(saddle, eq.mu, eq.nu)) == np.inf
    half = np.full((1, 1, 2), 0.5)
    assert unilateral_concentrability(saddle, occupancy(saddle, half, half)) == pytest.approx(4.0)


def test_max_reach_matches_enumeration() -> None:
    g = random_game(S=3, A=2, B=2, H=3, seed=7, sparsity=0.4)
    rng = np.random.default_rng(7)
    nu = _random_policy(rng, 3, 3, 2)
    reach = max_reach_probability(g, nu, "min")
    from icml26.envs.markov_games import state_distribution

    best = np.zeros((3, 3))
    for choice in itertools.product(range(2), repeat=9):
        det = np.zeros((3, 3, 2))
        det[np.repeat(np.arange(3), 3), np.tile(np.arange(3), 3), choice] = 1.0
        best = np.maximum(best, state_distribution(g, det, nu))
    assert np.allclose(reach, best, atol=1e-12)
