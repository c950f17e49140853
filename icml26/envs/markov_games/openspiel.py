"""OpenSpiel simultaneous-move zero-sum games converted to :class:`TabularMarkovGame` (needs
``open_spiel``, the ``openspiel`` extra; imported lazily).

:func:`from_openspiel` enumerates the game layer by layer: layer h holds the distinct decision
states (keyed by OpenSpiel's ``str(state)``) after h joint moves, chance nodes are folded into
the transitions (and into ``initial`` at the root), the reward of a transition is player 0's
expected OpenSpiel reward collected until the next decision state, and a state that ends the
game moves to an absorbing sink (one legal action, reward 0). Player 0 is the max player.
Action ids are OpenSpiel's (``A = B = num_distinct_actions``); illegal ones are masked.

:func:`openspiel_policy` maps policy tables back to an OpenSpiel policy on the turn-based
version of the game (:func:`pyspiel.convert_to_turn_based`), so that
``open_spiel.python.algorithms.exploitability.nash_conv`` can cross-check
:func:`~icml26.envs.markov_games.metrics.duality_gap` (both are NashConv). That needs games with
information-state strings (goofspiel, repeated matrix games); oshi_zumo returns an empty one,
so OpenSpiel's best responder merges all its states and cannot evaluate it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml26.envs.markov_games.game import TabularMarkovGame

__all__ = ["OpenSpielConversion", "from_openspiel", "openspiel_policy", "load_openspiel_game"]

_MAX_STATES = 5000


def _pyspiel() -> Any:
    from icml26._entry_points import require

    return require("pyspiel", "openspiel", "icml26.envs.markov_games.openspiel")


def load_openspiel_game(name: str, params: dict[str, Any] | None = None) -> Any:
    """``pyspiel.load_game(name, params)``, checked to be a 2-player zero-sum simultaneous game."""
    pyspiel = _pyspiel()
    game = pyspiel.load_game(name, dict(params or {}))
    gt = game.get_type()
    if game.num_players() != 2 or gt.utility != pyspiel.GameType.Utility.ZERO_SUM:
        raise ValueError(f"from_openspiel: {name} must be a two-player zero-sum game")
    if gt.dynamics != pyspiel.GameType.Dynamics.SIMULTANEOUS:
        raise ValueError(
            f"from_openspiel: {name} must be a simultaneous-move game, got {gt.dynamics}"
        )
    return game


@dataclass
class OpenSpielConversion:
    """The tabular game plus the map between its states and OpenSpiel's."""

    game: TabularMarkovGame
    openspiel_game: Any
    keys: list[list[str]]  # keys[h][s] = str(OpenSpiel state) of tabular state s at step h
    index: list[dict[str, int]]  # index[h][key] = s


def _expand_chance(state: Any) -> list[tuple[Any, float, float]]:
    """Resolve chance nodes below ``state``: [(decision-or-terminal state, prob, reward to p0)]."""
    out: list[tuple[Any, float, float]] = []
    stack = [(state, 1.0, 0.0)]
    while stack:
        st, p, r = stack.pop()
        if st.is_chance_node():
            for a, pa in st.chance_outcomes():
                child = st.child(a)
                stack.append((child, p * pa, r + float(child.rewards()[0])))
        else:
            out.append((st, p, r))
    return out


def from_openspiel(
    name: str, params: dict[str, Any] | None = None, *, max_states: int = _MAX_STATES
) -> OpenSpielConversion:
    """Convert an OpenSpiel two-player zero-sum simultaneous-move game to a tabular game.

    ``max_states``: refuse games with more decision states per layer (the transition table is
    dense, H x S x A x B x S).
    """
    osg = load_openspiel_game(name, params)
    A = B = int(osg.num_distinct_actions())
    layers: list[dict[str, Any]] = []
    root = osg.new_initial_state()
    first: dict[str, Any] = {}
    init_w: dict[str, float] = {}
    for st, p, _r in _expand_chance(root):
        if st.is_terminal():
            raise ValueError(f"from_openspiel: {name} can end before the first move")
        k = str(st)
        first.setdefault(k, st)
        init_w[k] = init_w.get(k, 0.0) + p
    layers.append(first)
    # edges[h][(key, a, b)] = list of (next key or None for terminal, prob, reward)
    edges: list[dict[tuple[str, int, int], list[tuple[str | None, float, float]]]] = []
    while layers[-1]:
        nxt: dict[str, Any] = {}
        e: dict[tuple[str, int, int], list[tuple[str | None, float, float]]] = {}
        for k, st in layers[-1].items():
            for a in st.legal_actions(0):
                for b in st.legal_actions(1):
                    child = st.clone()
                    child.apply_actions([a, b])
                    r0 = float(child.rewards()[0])
                    lst = []
                    for leaf, p, r in _expand_chance(child):
                        if leaf.is_terminal():
                            lst.append((None, p, r0 + r))
                        else:
                            lk = str(leaf)
                            nxt.setdefault(lk, leaf)
                            lst.append((lk, p, r0 + r))
                    e[(k, a, b)] = lst
        edges.append(e)
        layers.append(nxt)
        if len(nxt) > max_states:
            raise ValueError(
                f"from_openspiel: {name} has more than {max_states} states at step {len(layers) - 1}"
            )
    layers.pop()  # the last (empty) layer
    H = len(layers)
    S = max(len(layer) for layer in layers) + 1  # + the absorbing sink
    sink = S - 1
    keys = [list(layer) for layer in layers]
    index = [{k: i for i, k in enumerate(ks)} for ks in keys]
    R = np.zeros((H, S, A, B))
    P = np.zeros((H, S, A, B, S))
    lmax = np.zeros((H, S, A), bool)
    lmin = np.zeros((H, S, B), bool)
    for h in range(H):
        for k, st in layers[h].items():
            s = index[h][k]
            lmax[h, s, st.legal_actions(0)] = True
            lmin[h, s, st.legal_actions(1)] = True
        for (k, a, b), lst in edges[h].items():
            s = index[h][k]
            for nk, p, r in lst:
                R[h, s, a, b] += p * r
                s2 = sink if nk is None else index[h + 1][nk]
                P[h, s, a, b, s2] += p
        # padding states and the sink: one legal action each, stay in the sink, reward 0
        unused = ~lmax[h].any(-1)
        lmax[h, unused, 0] = True
        lmin[h, unused, 0] = True
        P[h, unused, :, :, sink] = 1.0
        # illegal action pairs of used states: any valid distribution (never played)
        empty = P[h].sum(-1) == 0
        P[h][empty, sink] = 1.0
    rho = np.zeros(S)
    for k, w in init_w.items():
        rho[index[0][k]] += w
    pstr = ",".join(f"{k}={v}" for k, v in sorted((params or {}).items()))
    game = TabularMarkovGame(
        R,
        P,
        rho,
        lmax,
        lmin,
        name=f"openspiel:{name}({pstr})",
        spec={
            "name": "openspiel",
            "kwargs": {"openspiel_game": name, "params": dict(params or {})},
        },
    )
    return OpenSpielConversion(game, osg, keys, index)


def openspiel_policy(conv: OpenSpielConversion, mu: np.ndarray, nu: np.ndarray) -> tuple[Any, Any]:
    """``(turn_based_game, policy)``: the pair (mu, nu) as an OpenSpiel policy on the
    turn-based version of the game, keyed by information-state string (built by walking the
    game tree; raises ValueError if one information state would need two different rows)."""
    pyspiel = _pyspiel()
    from open_spiel.python import policy as os_policy

    tb = pyspiel.convert_to_turn_based(conv.openspiel_game)
    table: dict[tuple[int, str], np.ndarray] = {}

    def visit(sim: Any, h: int) -> None:
        if sim.is_terminal():
            return
        if sim.is_chance_node():
            for a, _p in sim.chance_outcomes():
                visit(sim.child(a), h)
            return
        s = conv.index[h][str(sim)]
        for player, pol in ((0, mu), (1, nu)):
            info = f"{h}|{_turn_info(tb, sim, player)}"
            row = pol[h, s]
            prev = table.setdefault((player, info), row)
            if prev is not row and np.abs(prev - row).max() > 1e-12:
                raise ValueError(
                    "openspiel_policy: an information state of player "
                    f"{player} covers tabular states with different policies"
                )
        for a in sim.legal_actions(0):
            for b in sim.legal_actions(1):
                child = sim.clone()
                child.apply_actions([a, b])
                visit(child, h + 1)

    def _turn_info(tbg: Any, sim: Any, player: int) -> str:
        return _info_of(sim, player)

    visit(conv.openspiel_game.new_initial_state(), 0)

    class _Policy(os_policy.Policy):  # type: ignore[misc]
        def action_probabilities(
            self, state: Any, player_id: int | None = None
        ) -> dict[int, float]:
            p = state.current_player() if player_id is None else player_id
            h = _depth(state)
            row = table[(p, f"{h}|{_strip_player(state.information_state_string(p))}")]
            return {int(a): float(row[a]) for a in state.legal_actions(p)}

    return tb, _Policy(tb, [0, 1])


def _info_of(sim: Any, player: int) -> str:
    """The information-state string of ``player`` in the sim-move state (as the turn-based
    wrapper reports it, less its 'Current player' line)."""
    return str(sim.information_state_string(player))


def _strip_player(info: str) -> str:
    lines = info.split("\n")
    if lines and lines[0].startswith("Current player:"):
        lines = lines[1:]
    return "\n".join(lines)


def _depth(state: Any) -> int:
    """Joint moves made so far in a turn-based state: decision actions // 2 (chance excluded)."""
    n = 0
    for item in state.full_history():
        if item.player >= 0:
            n += 1
    return n // 2
