"""Game families: random tabular games, classic matrix games, the 3-stage tree game, soccer.

Every builder returns a validated :class:`TabularMarkovGame` whose ``spec`` rebuilds it, and
:func:`make_game` builds any of them by name (cached, since games are immutable)::

    make_game("random", S=10, A=3, B=3, H=5, seed=0)
    make_game("rps"); make_game("tree"); make_game("soccer", horizon=10)
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from icml26._entry_points import unknown_name_error
from icml26.envs.markov_games.game import TabularMarkovGame

__all__ = [
    "make_game",
    "game_names",
    "random_game",
    "low_rank_game",
    "matrix_game",
    "rock_paper_scissors",
    "matching_pennies",
    "biased_rps",
    "rps_water",
    "rpsfw",
    "tree_game",
    "soccer",
    "TREE_GAME_BEHAVIOR_MAX",
]


def _spec(name: str, **kwargs: Any) -> dict[str, Any]:
    return {"name": name, "kwargs": kwargs}


def random_game(
    S: int = 5,
    A: int = 3,
    B: int = 3,
    H: int = 3,
    concentration: float = 1.0,
    sparsity: float = 0.0,
    seed: int = 0,
) -> TabularMarkovGame:
    """Random tabular game: r ~ U[0, 1], P(.|h, s, a, b) ~ Dirichlet(concentration) on a support
    of ``max(1, ceil((1 - sparsity) S))`` uniformly chosen next states, uniform initial state.

    The usual testbed of the offline Markov-game literature (S in {5, 10, 20}, A = B in
    {2, 3, 5}, H in {3, 5, 10}, Dirichlet(1)).
    """
    for label, v in (("S", S), ("A", A), ("B", B), ("H", H)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"random_game: {label} must be an integer >= 1, got {v!r}")
    if not concentration > 0:
        raise ValueError(f"random_game: concentration must be > 0, got {concentration!r}")
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"random_game: sparsity must lie in [0, 1), got {sparsity!r}")
    rng = np.random.default_rng(seed)
    rewards = rng.uniform(0.0, 1.0, size=(H, S, A, B))
    support = max(1, int(np.ceil((1.0 - sparsity) * S - 1e-9)))
    raw = rng.gamma(concentration, 1.0, size=(H, S, A, B, S))
    keep = np.ones(raw.shape, dtype=bool)
    if support < S:
        keys = rng.random((H, S, A, B, S))
        keep = keys <= np.partition(keys, support - 1, axis=-1)[..., support - 1 : support]
    raw = np.where(keep, np.maximum(raw, 1e-300), 0.0)  # tiny concentrations can underflow to 0
    P = raw / raw.sum(axis=-1, keepdims=True)
    return TabularMarkovGame(
        rewards,
        P,
        np.full(S, 1.0 / S),
        name=f"random-S{S}-A{A}-B{B}-H{H}",
        spec=_spec(
            "random", S=S, A=A, B=B, H=H, concentration=concentration, sparsity=sparsity, seed=seed
        ),
    )


def low_rank_game(
    S: int = 10, A: int = 3, B: int = 3, H: int = 3, d: int = 4, seed: int = 0
) -> TabularMarkovGame:
    """A linear Markov game of rank ``d`` (Xie et al. 2020): features phi_h(s, a, b) in the
    simplex, r_h = phi^T theta_h with theta_h ~ U[0, 1]^d, and P_h(.|s, a, b) = sum_k phi_k
    psi_{h,k} with psi_{h,k} ~ Dirichlet(1). Q-functions are linear in ``game.features``.
    """
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.ones(d), size=(H, S, A, B))
    theta = rng.uniform(0.0, 1.0, size=(H, d))
    psi = rng.dirichlet(np.ones(S), size=(H, d))
    rewards = np.einsum("hsabk,hk->hsab", phi, theta)
    P = np.einsum("hsabk,hkt->hsabt", phi, psi)
    return TabularMarkovGame(
        rewards,
        P,
        np.full(S, 1.0 / S),
        name=f"low-rank-S{S}-d{d}-H{H}",
        features=phi,
        spec=_spec("low_rank", S=S, A=A, B=B, H=H, d=d, seed=seed),
    )


def matrix_game(
    payoff: Any,
    name: str = "matrix",
    action_names_max: tuple[str, ...] | None = None,
    action_names_min: tuple[str, ...] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> TabularMarkovGame:
    """A one-shot zero-sum matrix game (H = S = 1); ``payoff[a, b]`` is paid to the max player."""
    M = np.asarray(payoff, dtype=np.float64)
    if M.ndim != 2:
        raise ValueError(f"matrix_game: payoff must be a 2-D (A, B) matrix, got shape {M.shape}")
    A, B = M.shape
    return TabularMarkovGame(
        M[None, None],
        np.ones((1, 1, A, B, 1)),
        np.ones(1),
        name=name,
        spec=dict(spec) if spec is not None else _spec("matrix", payoff=M.tolist()),
        action_names_max=action_names_max,
        action_names_min=action_names_min,
    )


# OpenSpiel matrix_rps: row player's payoffs, actions (Rock, Paper, Scissors).
RPS = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=float)
# OpenSpiel matrix_mp (matching pennies), actions (Heads, Tails).
MATCHING_PENNIES = np.array([[1, -1], [-1, 1]], dtype=float)
# OpenSpiel matrix_brps (biased RPS) {0,-25,50; 25,0,-5; -50,5,0}, here divided by 50 so payoffs
# lie in [-1, 1]; the Nash equilibrium (1/16, 10/16, 5/16) is unchanged by the scaling.
BIASED_RPS = np.array([[0, -25, 50], [25, 0, -5], [-50, 5, 0]], dtype=float) / 50.0
# OpenSpiel matrix_rpsw (Martin Schmid): RPS plus "Water", which always draws; a pure
# equilibrium (Water, Water) next to the mixed one.
RPS_WATER = np.array([[0, -1, 1, 0], [1, 0, -1, 0], [-1, 1, 0, 0], [0, 0, 0, 0]], dtype=float)
# Rock-paper-scissors-fire-water: Fire beats R, P and S; Water beats Fire and loses to R, P, S.
RPSFW = np.array(
    [
        [0, -1, 1, -1, 1],
        [1, 0, -1, -1, 1],
        [-1, 1, 0, -1, 1],
        [1, 1, 1, 0, -1],
        [-1, -1, -1, 1, 0],
    ],
    dtype=float,
)
# 3-stage tree game stage payoffs (method card, SOS-MD line of work).
TREE_STAGE1 = np.array([[1, 0], [-2, 4]], dtype=float)
TREE_STAGE2 = np.array([[1, 0], [-2, 3]], dtype=float)
# Behavior of the max player at the RPSFW stage in the tree game's data (method card).
TREE_GAME_BEHAVIOR_MAX = np.array([0.6, 0.1, 0.1, 0.1, 0.1])


def rock_paper_scissors() -> TabularMarkovGame:
    """Rock-paper-scissors (payoffs in {-1, 0, 1}); unique Nash equilibrium uniform, value 0."""
    names = ("rock", "paper", "scissors")
    return matrix_game(RPS, "rps", names, names, _spec("rps"))


def matching_pennies() -> TabularMarkovGame:
    """Matching pennies; unique Nash equilibrium (1/2, 1/2), value 0."""
    names = ("heads", "tails")
    return matrix_game(
        MATCHING_PENNIES, "matching_pennies", names, names, _spec("matching_pennies")
    )


def biased_rps() -> TabularMarkovGame:
    """OpenSpiel's biased RPS scaled to [-1, 1]; Nash equilibrium (1/16, 10/16, 5/16), value 0."""
    names = ("rock", "paper", "scissors")
    return matrix_game(BIASED_RPS, "biased_rps", names, names, _spec("biased_rps"))


def rps_water() -> TabularMarkovGame:
    """Rock-paper-scissors-water (OpenSpiel matrix_rpsw); value 0, several equilibria."""
    names = ("rock", "paper", "scissors", "water")
    return matrix_game(RPS_WATER, "rps_water", names, names, _spec("rps_water"))


def rpsfw() -> TabularMarkovGame:
    """Rock-paper-scissors-fire-water as a one-shot matrix game (the tree game's last stage)."""
    names = ("rock", "paper", "scissors", "fire", "water")
    return matrix_game(RPSFW, "rpsfw", names, names, _spec("rpsfw"))


def tree_game() -> TabularMarkovGame:
    """The 3-stage tree game: two 2-action stages, then 5-action rock-paper-scissors-fire-water.

    A game tree with perfect recall of joint actions: stage 1 is played at the root with payoff
    [[1, 0], [-2, 4]]; each of its 4 joint actions leads to its own stage-2 node with payoff
    [[1, 0], [-2, 3]]; each of the 16 stage-2 outcomes leads to its own RPSFW leaf. S = 21
    (root, 4 stage-2 nodes, 16 leaves), H = 3, A = B = 5 with only actions {0, 1} legal at
    stages 1 and 2. The method card gives the stage payoffs and the data behavior; the
    branching (one child per joint action) is this suite's choice.
    """
    H, S, A, B = 3, 21, 5, 5
    rewards = np.zeros((H, S, A, B))
    rewards[0, :, :2, :2] = TREE_STAGE1
    rewards[1, :, :2, :2] = TREE_STAGE2
    rewards[2] = RPSFW
    P = np.zeros((H, S, A, B, S))
    P[0, :, :, :, 1] = 1.0  # illegal / off-tree pairs: any valid distribution
    P[1, :, :, :, 5] = 1.0
    P[2, :, :, :, 0] = 1.0
    for a in range(2):
        for b in range(2):
            P[0, :, a, b, :] = 0.0
            P[0, :, a, b, 1 + 2 * a + b] = 1.0
            for node in range(1, 5):
                P[1, node, a, b, :] = 0.0
                P[1, node, a, b, 5 + 4 * (node - 1) + 2 * a + b] = 1.0
    legal = np.zeros((H, S, A), dtype=bool)
    legal[:2, :, :2] = True
    legal[2] = True
    initial = np.zeros(S)
    initial[0] = 1.0
    names = ("rock", "paper", "scissors", "fire", "water")
    return TabularMarkovGame(
        rewards,
        P,
        initial,
        legal,
        legal.copy(),
        name="tree",
        spec=_spec("tree"),
        action_names_max=names,
        action_names_min=names,
    )


SOCCER_ACTIONS = ("north", "south", "east", "west", "stand")
_MOVES = {0: (-1, 0), 1: (1, 0), 2: (0, 1), 3: (0, -1), 4: (0, 0)}


def soccer(horizon: int = 10, rows: int = 4, cols: int = 5) -> TabularMarkovGame:
    """Littman's (1994) soccer on a ``rows`` x ``cols`` grid, truncated to ``horizon`` steps.

    Players A (max) and B (min) occupy distinct cells; one of them holds the ball. Both choose
    among N, S, E, W, stand; the two moves are executed in random order (1/2 each). A move into
    the other player's cell does not happen and the ball goes to the stationary player. The ball
    carrier scores by moving off the grid through the opponent's goal (A attacks the left edge,
    B the right edge; goal rows are the middle rows): +1 to A if A scores, -1 if B scores, and
    the board resets to the start (A at row rows/2 - 1, column cols - 2; B at row rows/2,
    column 1) with the ball given to either player at random. Other moves off the grid are
    blocked. S = 2 (rows cols)(rows cols - 1) states (760 on the 4 x 5 field), A = B = 5.
    """
    if rows < 2 or cols < 3:
        raise ValueError(f"soccer: need rows >= 2 and cols >= 3, got rows={rows}, cols={cols}")
    if horizon < 1:
        raise ValueError(f"soccer: horizon must be >= 1, got {horizon}")
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    states = [(pa, pb, ball) for pa in cells for pb in cells if pa != pb for ball in (0, 1)]
    index = {st: i for i, st in enumerate(states)}
    S = len(states)
    goal_rows = {r for r in range(rows) if abs(r - (rows - 1) / 2) <= 0.5}
    start_a, start_b = (rows // 2 - 1 if rows % 2 == 0 else rows // 2, cols - 2), (rows // 2, 1)
    if start_a == start_b:
        start_b = (rows // 2, 0)
    starts = [index[(start_a, start_b, 0)], index[(start_a, start_b, 1)]]
    R = np.zeros((S, 5, 5))
    P = np.zeros((S, 5, 5, S))

    def move(
        state: tuple[Any, ...], player: int, action: int
    ) -> tuple[tuple[Any, ...] | None, float]:
        pos = [state[0], state[1]]
        ball = state[2]
        dr, dc = _MOVES[action]
        r, c = pos[player][0] + dr, pos[player][1] + dc
        if ball == player and r in goal_rows and 0 <= r < rows:
            if player == 0 and c < 0:
                return None, 1.0
            if player == 1 and c >= cols:
                return None, -1.0
        r, c = min(max(r, 0), rows - 1), min(max(c, 0), cols - 1)
        if (r, c) == pos[1 - player]:
            return (pos[0], pos[1], 1 - player), 0.0
        pos[player] = (r, c)
        return (pos[0], pos[1], ball), 0.0

    for i, st in enumerate(states):
        for a in range(5):
            for b in range(5):
                for order in ((0, a, 1, b), (1, b, 0, a)):
                    p1, act1, p2, act2 = order
                    mid, rew = move(st, p1, act1)
                    if mid is not None:
                        end, rew = move(mid, p2, act2)
                    else:
                        end = None
                    R[i, a, b] += 0.5 * rew
                    if end is None:
                        P[i, a, b, starts[0]] += 0.25
                        P[i, a, b, starts[1]] += 0.25
                    else:
                        P[i, a, b, index[end]] += 0.5
    initial = np.zeros(S)
    initial[starts] = 0.5
    return TabularMarkovGame(
        np.broadcast_to(R[None], (horizon, S, 5, 5)).copy(),
        np.broadcast_to(P[None], (horizon, S, 5, 5, S)),
        initial,
        name=f"soccer-{rows}x{cols}-H{horizon}",
        spec=_spec("soccer", horizon=horizon, rows=rows, cols=cols),
        action_names_max=SOCCER_ACTIONS,
        action_names_min=SOCCER_ACTIONS,
    )


_BUILDERS: dict[str, Callable[..., TabularMarkovGame]] = {
    "random": random_game,
    "low_rank": low_rank_game,
    "matrix": lambda payoff, **kw: matrix_game(payoff, **kw),
    "rps": rock_paper_scissors,
    "matching_pennies": matching_pennies,
    "biased_rps": biased_rps,
    "rps_water": rps_water,
    "rpsfw": rpsfw,
    "tree": tree_game,
    "soccer": soccer,
    "openspiel": lambda openspiel_game, params=None: _openspiel(openspiel_game, params),
}


def _openspiel(game: str, params: Mapping[str, Any] | None = None) -> TabularMarkovGame:
    """An OpenSpiel simultaneous-move game as a tabular game (needs ``open_spiel``)."""
    from icml26.envs.markov_games.openspiel import from_openspiel

    return from_openspiel(game, dict(params or {})).game


# simultaneous-move OpenSpiel games that convert (recognized without open_spiel installed)
_OPENSPIEL_GAMES = ("goofspiel", "oshi_zumo")


def _is_openspiel_game(name: str) -> bool:
    """``name`` names an OpenSpiel game (``pyspiel.registered_names()`` when installed)."""
    key = name.replace("-", "_")
    try:
        import pyspiel
    except ImportError:
        return key in _OPENSPIEL_GAMES
    return key in _OPENSPIEL_GAMES or key in pyspiel.registered_names()


def game_names() -> list[str]:
    return sorted(_BUILDERS)


@functools.lru_cache(maxsize=16)
def _cached(name: str, kwargs_json: str) -> TabularMarkovGame:
    return _BUILDERS[name](**json.loads(kwargs_json))


def make_game(
    game: str | TabularMarkovGame | Mapping[str, Any], **kwargs: Any
) -> TabularMarkovGame:
    """Build a game by name (``"random"``, ``"rps"``, ``"tree"``, ``"soccer"``, ...), from a spec
    ``{"name": ..., "kwargs": {...}}``, or pass a :class:`TabularMarkovGame` through.

    Games are immutable, so equal requests return the same cached object.
    """
    if isinstance(game, TabularMarkovGame):
        if kwargs:
            raise ValueError(f"make_game: got a game object and extra kwargs {sorted(kwargs)}")
        return game
    if isinstance(game, Mapping):
        if "name" not in game:
            raise ValueError(f"make_game: a game spec needs a 'name', got keys {sorted(game)}")
        return make_game(str(game["name"]), **{**dict(game.get("kwargs", {})), **kwargs})
    if not isinstance(game, str):
        raise TypeError(
            f"make_game: expected a game name, a spec dict or a TabularMarkovGame, got {type(game).__name__}"
        )
    if game not in _BUILDERS:
        if _is_openspiel_game(game):
            raise KeyError(
                f"make_game: {game!r} is an OpenSpiel game: pass game='openspiel', "
                f"openspiel_game={game.replace('-', '_')!r} and the game's params, e.g. "
                "parallel_env(game='openspiel', openspiel_game='goofspiel', "
                "params={'num_cards': 3}) (needs the openspiel extra: "
                "pip install 'icml26-gym[openspiel]')"
            )
        raise unknown_name_error("game", game, _BUILDERS)
    try:
        key = json.dumps(kwargs, sort_keys=True)
    except TypeError:
        return _BUILDERS[game](**kwargs)
    try:
        return _cached(game, key)
    except TypeError as e:
        raise TypeError(f"make_game({game!r}): bad arguments {kwargs}: {e}") from None
