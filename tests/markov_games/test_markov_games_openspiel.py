"""OpenSpiel simultaneous-move games converted to tabular form agree with OpenSpiel."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.algorithms import exploitability  # noqa: E402

from icml26.envs.markov_games import duality_gap, make_game, nash_equilibrium  # noqa: E402
from icml26.envs.markov_games.metrics import policy_value  # noqa: E402
from icml26.envs.markov_games.openspiel import from_openspiel, openspiel_policy  # noqa: E402

GAMES = [
    ("goofspiel", {"num_cards": 3, "points_order": "descending", "imp_info": False}),
    ("goofspiel", {"num_cards": 3, "points_order": "random", "imp_info": False}),  # chance
    ("oshi_zumo", {"coins": 4, "size": 1, "horizon": 6, "min_bid": 1}),
]


def _policies(game, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    eq = nash_equilibrium(game)
    out = [(game.uniform_policy("max"), game.uniform_policy("min")), (eq.mu, eq.nu)]
    for _ in range(2):
        mu = rng.dirichlet(np.ones(game.A), game.shape[:2]) * game.legal_max
        nu = rng.dirichlet(np.ones(game.B), game.shape[:2]) * game.legal_min
        out.append((mu / mu.sum(-1, keepdims=True), nu / nu.sum(-1, keepdims=True)))
    return out


@pytest.mark.parametrize("name,params", GAMES)
def test_gap_matches_openspiel_nash_conv(name: str, params: dict) -> None:
    conv = from_openspiel(name, params)
    game = conv.game
    for mu, nu in _policies(game):
        tb, pol = openspiel_policy(conv, mu, nu)
        theirs = exploitability.nash_conv(tb, pol)
        assert duality_gap(game, mu, nu) == pytest.approx(theirs, abs=1e-9)
        assert 0.5 * duality_gap(game, mu, nu) == pytest.approx(
            exploitability.exploitability(tb, pol), abs=1e-9
        )


def test_values_match_openspiel_and_symmetric_games_have_value_zero() -> None:
    from open_spiel.python.algorithms import expected_game_score

    conv = from_openspiel(*GAMES[1])
    game = conv.game
    mu, nu = _policies(game, seed=3)[2]
    tb, pol = openspiel_policy(conv, mu, nu)
    theirs = expected_game_score.policy_value(tb.new_initial_state(), [pol, pol])[0]
    assert float(game.initial @ policy_value(game, mu, nu)[0]) == pytest.approx(theirs, abs=1e-12)
    for name, params in GAMES:  # both games are symmetric between the players: value 0
        assert abs(nash_equilibrium(from_openspiel(name, params).game).value) < 1e-9


def test_conversion_shapes_masks_and_spec() -> None:
    conv = from_openspiel(
        "goofspiel", {"num_cards": 3, "points_order": "descending", "imp_info": False}
    )
    g = conv.game
    # 3 cards, fixed point order: 1 root state, 9 after one round (the last round is automatic)
    assert (g.H, g.A, g.B) == (2, 3, 3) and [len(k) for k in conv.keys] == [1, 9]
    assert g.legal_max[0, 0].all() and g.legal_max[1, 0].sum() == 2  # two cards left
    assert g.reward_range == (-1.0, 1.0)
    again = make_game(g.spec)  # the spec rebuilds the same game
    assert again.fingerprint() == g.fingerprint()
    with pytest.raises(ValueError, match="simultaneous-move"):
        from_openspiel("kuhn_poker")
