"""The game type rejects malformed games; the game families have their known structure."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from icml26.envs.markov_games import TabularMarkovGame, check_policy, make_game, nash_equilibrium
from icml26.envs.markov_games.games import RPSFW, TREE_STAGE1, TREE_STAGE2


def _valid(H: int = 2, S: int = 3, A: int = 2, B: int = 2) -> dict:
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(S), size=(H, S, A, B))
    return {"rewards": rng.uniform(size=(H, S, A, B)), "transitions": P, "initial": np.ones(S) / S}


def test_valid_game_is_read_only_and_sized() -> None:
    g = TabularMarkovGame(**_valid())
    assert g.shape == (2, 3, 2, 2)
    with pytest.raises(ValueError):
        g.rewards[0, 0, 0, 0] = 5.0  # read-only: a shared game cannot be corrupted


@pytest.mark.parametrize(
    "change, match",
    [
        ({"rewards": np.zeros((2, 3, 2))}, r"rewards must have shape \(H, S, A, B\)"),
        (
            {"transitions": np.ones((2, 3, 2, 2, 4)) / 4},
            r"transitions must have shape .*\(2, 3, 2, 2, 3\)",
        ),
        ({"initial": np.array([0.5, 0.5])}, r"initial must have shape \(S,\)"),
        ({"initial": np.array([0.5, 0.4, 0.2])}, r"initial sums to 1.1"),
    ],
)
def test_malformed_shapes_rejected(change: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TabularMarkovGame(**{**_valid(), **change})


def test_bad_probabilities_and_rewards_name_the_index() -> None:
    kw = _valid()
    P = kw["transitions"].copy()
    P[1, 2, 0, 1] = [0.5, 0.2, 0.2]
    with pytest.raises(ValueError, match=r"transitions\[1, 2, 0, 1\] sums to 0.9"):
        TabularMarkovGame(**{**kw, "transitions": P})
    P = kw["transitions"].copy()
    P[0, 1, 1, 0] = [1.2, -0.2, 0.0]
    with pytest.raises(
        ValueError, match=r"non-negative probabilities; transitions\[0, 1, 1, 0, 1\]"
    ):
        TabularMarkovGame(**{**kw, "transitions": P})
    r = kw["rewards"].copy()
    r[1, 0, 1, 1] = np.nan
    with pytest.raises(ValueError, match=r"rewards must be finite; rewards\[1, 0, 1, 1\]"):
        TabularMarkovGame(**{**kw, "rewards": r})
    with pytest.raises(TypeError, match="rewards must be a numeric array"):
        TabularMarkovGame(**{**kw, "rewards": "bad"})


def test_masks_validated() -> None:
    kw = _valid()
    mask = np.ones((2, 3, 2), bool)
    mask[1, 2] = False
    with pytest.raises(ValueError, match=r"legal_max\[h=1, s=2\] has no legal action"):
        TabularMarkovGame(**kw, legal_max=mask)
    with pytest.raises(ValueError, match=r"legal_min must have shape \(2, 3, 2\)"):
        TabularMarkovGame(**kw, legal_min=np.ones((2, 3, 3), bool))


def test_policy_checks() -> None:
    g = make_game("tree")
    mu = g.uniform_policy("max")
    assert np.allclose(mu[0, 0], [0.5, 0.5, 0, 0, 0]) and np.allclose(mu[2, 7], 0.2)
    with pytest.raises(ValueError, match=r"expected shape \(H, S, A\) = \(3, 21, 5\)"):
        check_policy(g, mu[:2], "max")
    bad = mu.copy()
    bad[0, 0] = 0.2
    with pytest.raises(
        ValueError, match=r"row \(h=0, s=0\) puts mass .* on illegal actions \[2, 3, 4\]"
    ):
        check_policy(g, bad, "max")
    bad = mu.copy()
    bad[2, 5] = [0.5, 0.5, 0.5, 0, 0]
    with pytest.raises(ValueError, match=r"row \(h=2, s=5\) sums to 1.5"):
        check_policy(g, bad, "max")


def test_matrix_games_known_equilibria() -> None:
    cases = {
        "rps": ([1 / 3] * 3, 0.0),
        "matching_pennies": ([0.5, 0.5], 0.0),
        "biased_rps": ([1 / 16, 10 / 16, 5 / 16], 0.0),  # OpenSpiel matrix_brps equilibrium
    }
    for name, (strategy, value) in cases.items():
        eq = nash_equilibrium(make_game(name))
        assert np.allclose(eq.mu[0, 0], strategy, atol=1e-9), name
        assert np.allclose(eq.nu[0, 0], strategy, atol=1e-9), name
        assert eq.value == pytest.approx(value, abs=1e-12)
    assert nash_equilibrium(make_game("rps_water")).value == pytest.approx(0.0, abs=1e-12)
    # RPSFW: skew-symmetric, value 0; equilibrium (1/9, 1/9, 1/9, 1/3, 1/3) by hand
    eq = nash_equilibrium(make_game("rpsfw"))
    assert np.allclose(eq.mu[0, 0], [1 / 9, 1 / 9, 1 / 9, 1 / 3, 1 / 3], atol=1e-9)
    assert np.allclose(RPSFW, -RPSFW.T)


def test_tree_game_structure_and_value() -> None:
    g = make_game("tree")
    assert g.shape == (3, 21, 5, 5)
    assert np.array_equal(g.rewards[0, 0, :2, :2], TREE_STAGE1)
    # every joint action of stage 1 leads to its own stage-2 node; of stage 2 to its own leaf
    assert g.transitions[0, 0, 1, 0, 3] == 1.0 and g.transitions[1, 3, 0, 1, 5 + 4 * 2 + 1] == 1.0
    # value: 2x2 [[1,0],[-2,4]] has value 4/7, [[1,0],[-2,3]] has 1/2, RPSFW 0 (hand-solved)
    assert nash_equilibrium(g).value == pytest.approx(4 / 7 + 1 / 2, abs=1e-10)
    assert np.allclose(g.rewards[1, 4, :2, :2], TREE_STAGE2)


def test_soccer_rules_hand_checked() -> None:
    g = make_game("soccer", horizon=3)
    assert g.shape == (3, 760, 5, 5) and g.stationary
    from icml26.envs.markov_games.games import soccer  # noqa: F401  (same builder, cached)

    cells = [(r, c) for r in range(4) for c in range(5)]
    states = [(pa, pb, ball) for pa in cells for pb in cells if pa != pb for ball in (0, 1)]
    idx = {s: i for i, s in enumerate(states)}
    N, S_, E, W, STAND = range(5)
    start = [idx[((1, 3), (2, 1), 0)], idx[((1, 3), (2, 1), 1)]]
    assert np.allclose(g.initial[start], 0.5)
    # A holds the ball at the left edge of a goal row and moves west: scores whatever B does
    s = idx[((1, 0), (3, 4), 0)]
    for b in range(5):
        assert g.rewards[0, s, W, b] == 1.0
        assert np.allclose(g.transitions[0, s, W, b, start], 0.5)
    # A with the ball runs into a standing B: the move fails, the ball goes to B (stationary)
    s = idx[((1, 3), (1, 2), 0)]
    assert g.transitions[0, s, W, STAND, idx[((1, 3), (1, 2), 1)]] == pytest.approx(1.0)
    # B with the ball at the right edge of a goal row moves east: A's reward is -1
    s = idx[((0, 0), (2, 4), 1)]
    assert g.rewards[0, s, STAND, E] == -1.0
    # moves off the grid elsewhere are blocked
    s = idx[((0, 0), (3, 4), 1)]
    assert g.transitions[0, s, N, STAND, s] == pytest.approx(1.0)
    # a 180-degree rotation swaps the players, so the game value is 0
    assert nash_equilibrium(g).value == pytest.approx(0.0, abs=1e-9)


def test_stationary_game_pickles_compactly() -> None:
    g = make_game("soccer", horizon=3)
    blob = pickle.dumps(g)
    assert len(blob) < 1.5 * g.transitions[0].nbytes  # one slice, not three
    g2 = pickle.loads(blob)
    assert g2.fingerprint() == g.fingerprint() and g2.transitions.shape == g.transitions.shape


def test_random_and_low_rank_games() -> None:
    a, b = make_game("random", S=6, seed=3), make_game("random", S=6, seed=3)
    assert a is b  # cached: games are immutable
    from icml26.envs.markov_games import random_game

    c = random_game(S=6, seed=3)
    assert (
        c.fingerprint() == a.fingerprint()
        and c.fingerprint() != random_game(S=6, seed=4).fingerprint()
    )
    sparse = random_game(S=10, sparsity=0.7, seed=1)
    assert np.all((sparse.transitions > 0).sum(-1) == 3)
    with pytest.raises(ValueError, match="sparsity must lie in"):
        random_game(sparsity=1.0)
    lr = make_game("low_rank", S=8, A=2, B=2, H=3, d=3, seed=0)
    from icml26.envs.markov_games.metrics import q_values

    # Q_h = r_h + P_h V is linear in the features for any V: least squares fits it exactly
    v = np.random.default_rng(0).uniform(size=8)
    Q = q_values(lr, 1, v).ravel()
    phi = lr.features[1].reshape(-1, 3)
    w, *_ = np.linalg.lstsq(phi, Q, rcond=None)
    assert np.allclose(phi @ w, Q, atol=1e-10)


def test_make_game_errors() -> None:
    with pytest.raises(KeyError, match="Did you mean 'soccer'"):
        make_game("socer")
    # an OpenSpiel game by its own name: the error names the call that works (no open_spiel needed)
    for name in ("goofspiel", "oshi-zumo"):
        with pytest.raises(
            KeyError, match=r"game='openspiel', openspiel_game='(goofspiel|oshi_zumo)'"
        ):
            make_game(name)
    with pytest.raises(TypeError, match="bad arguments"):
        make_game("rps", size=3)
