"""Exact metrics of policy pairs by backward induction (vectorized over states; no sampling).

Convention: :func:`duality_gap` is the **NashConv** of the pair,
``E_{s1 ~ rho}[V_1^{†,nu}(s1) - V_1^{mu,†}(s1)]`` = (max player's best-response gain) + (min
player's best-response gain). It is >= 0 and 0 exactly at a Nash equilibrium. OpenSpiel's
``exploitability`` is NashConv / 2; :func:`exploitability` returns that. Every number this
family reports under "gap" is the NashConv.

The beta-regularized gap replaces the best responses by soft best responses of the regularized
game ``mu^T Q nu - beta KL(mu || mu_ref) + beta KL(nu || nu_ref)`` at every (h, s):
``V^{†,nu}_h(s) = beta log sum_a mu_ref(a) exp([Q nu](a) / beta) + beta KL(nu || nu_ref)`` and
mirrored for the min player; it is 0 exactly at the regularized equilibrium.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml26.envs.markov_games.game import (
    TabularMarkovGame,
    check_policy,
    masked_log,
    uniform_policy,
)
from icml26.envs.markov_games.solvers import kl, solve_matrix_games, solve_regularized_matrix_games

__all__ = [
    "Equilibrium",
    "q_values",
    "policy_value",
    "best_response_to_min",
    "best_response_to_max",
    "duality_gap",
    "gap_parts",
    "exploitability",
    "regularized_gap",
    "regularized_gap_parts",
    "nash_equilibrium",
    "regularized_equilibrium",
    "state_distribution",
    "occupancy",
    "max_reach_probability",
    "unilateral_concentrability",
]


@dataclass(frozen=True)
class Equilibrium:
    """An equilibrium of a game: policies, values V (H + 1, S), Q (H, S, A, B), initial value."""

    mu: np.ndarray
    nu: np.ndarray
    V: np.ndarray
    Q: np.ndarray
    value: float
    beta: float = 0.0


def q_values(game: TabularMarkovGame, h: int, v_next: np.ndarray) -> np.ndarray:
    """``Q_h(s, a, b) = r_h(s, a, b) + E[v_next(s')]`` (S, A, B)."""
    return game.rewards[h] + game.next_value(h, v_next)


def policy_value(game: TabularMarkovGame, mu: Any, nu: Any, validate: bool = True) -> np.ndarray:
    """``V^{mu, nu}`` (H + 1, S), row H is 0."""
    if validate:
        mu, nu = check_policy(game, mu, "max", "mu"), check_policy(game, nu, "min", "nu")
    V = np.zeros((game.H + 1, game.S))
    for h in reversed(range(game.H)):
        V[h] = np.einsum("sa,sab,sb->s", mu[h], q_values(game, h, V[h + 1]), nu[h])
    return V


def best_response_to_min(
    game: TabularMarkovGame, nu: Any, validate: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The max player's best response to ``nu``: ``(V^{†,nu} (H + 1, S), mu_br (H, S, A))``."""
    if validate:
        nu = check_policy(game, nu, "min", "nu")
    V = np.zeros((game.H + 1, game.S))
    br = np.zeros((game.H, game.S, game.A))
    for h in reversed(range(game.H)):
        qa = np.einsum("sab,sb->sa", q_values(game, h, V[h + 1]), nu[h])
        qa = np.where(game.legal_max[h], qa, -np.inf)
        best = np.argmax(qa, axis=1)
        V[h] = qa[np.arange(game.S), best]
        br[h, np.arange(game.S), best] = 1.0
    return V, br


def best_response_to_max(
    game: TabularMarkovGame, mu: Any, validate: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The min player's best response to ``mu``: ``(V^{mu,†} (H + 1, S), nu_br (H, S, B))``."""
    if validate:
        mu = check_policy(game, mu, "max", "mu")
    V = np.zeros((game.H + 1, game.S))
    br = np.zeros((game.H, game.S, game.B))
    for h in reversed(range(game.H)):
        qb = np.einsum("sa,sab->sb", mu[h], q_values(game, h, V[h + 1]))
        qb = np.where(game.legal_min[h], qb, np.inf)
        best = np.argmin(qb, axis=1)
        V[h] = qb[np.arange(game.S), best]
        br[h, np.arange(game.S), best] = 1.0
    return V, br


def gap_parts(game: TabularMarkovGame, mu: Any, nu: Any) -> dict[str, float]:
    """``{"br_max": rho.V^{†,nu}_1, "br_min": rho.V^{mu,†}_1, "value": rho.V^{mu,nu}_1, "gap": ...}``."""
    mu, nu = check_policy(game, mu, "max", "mu"), check_policy(game, nu, "min", "nu")
    v_max, _ = best_response_to_min(game, nu, validate=False)
    v_min, _ = best_response_to_max(game, mu, validate=False)
    v = policy_value(game, mu, nu, validate=False)
    hi, lo = float(game.initial @ v_max[0]), float(game.initial @ v_min[0])
    return {
        "br_max": hi,
        "br_min": lo,
        "value": float(game.initial @ v[0]),
        # as duality_gap computes it (the same number to the last bit, not hi - lo's rounding)
        "gap": max(float(game.initial @ (v_max[0] - v_min[0])), 0.0),
    }


def duality_gap(game: TabularMarkovGame, mu: Any, nu: Any) -> float:
    """NashConv ``rho . (V^{†,nu}_1 - V^{mu,†}_1)`` of the pair (mu (H, S, A), nu (H, S, B)).

    Exact backward induction, vectorized over states. Rounding below 0 (at an exact
    equilibrium) is clipped to 0.
    """
    mu, nu = check_policy(game, mu, "max", "mu"), check_policy(game, nu, "min", "nu")
    v_max, _ = best_response_to_min(game, nu, validate=False)
    v_min, _ = best_response_to_max(game, mu, validate=False)
    return max(float(game.initial @ (v_max[0] - v_min[0])), 0.0)


def exploitability(game: TabularMarkovGame, mu: Any, nu: Any) -> float:
    """OpenSpiel's exploitability: NashConv / 2."""
    return 0.5 * duality_gap(game, mu, nu)


def _references(
    game: TabularMarkovGame, mu_ref: Any | None, nu_ref: Any | None
) -> tuple[np.ndarray, np.ndarray]:
    p = (
        uniform_policy(game, "max")
        if mu_ref is None
        else check_policy(game, mu_ref, "max", "mu_ref")
    )
    q = (
        uniform_policy(game, "min")
        if nu_ref is None
        else check_policy(game, nu_ref, "min", "nu_ref")
    )
    return p, q


def _check_beta(beta: float) -> float:
    if not isinstance(beta, (int, float)) or not beta > 0 or not np.isfinite(beta):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    return float(beta)


def regularized_gap_parts(
    game: TabularMarkovGame,
    mu: Any,
    nu: Any,
    beta: float,
    mu_ref: Any | None = None,
    nu_ref: Any | None = None,
) -> dict[str, float]:
    """Soft best-response values and the regularized gap (references default to uniform)."""
    beta = _check_beta(beta)
    mu, nu = check_policy(game, mu, "max", "mu"), check_policy(game, nu, "min", "nu")
    p, q = _references(game, mu_ref, nu_ref)
    if np.any((mu > 0) & (p <= 0)) or np.any((nu > 0) & (q <= 0)):
        # KL(policy || reference) = +inf somewhere: the regularized objective is unbounded
        return {"soft_br_max": np.inf, "soft_br_min": -np.inf, "reg_gap": np.inf}
    lp, lq = masked_log(p), masked_log(q)
    v_hi = np.zeros(game.S)
    v_lo = np.zeros(game.S)
    for h in reversed(range(game.H)):
        qa = np.einsum("sab,sb->sa", q_values(game, h, v_hi), nu[h])
        v_hi = beta * _logsumexp(lp[h] + qa / beta) + beta * kl(nu[h], q[h])
        qb = np.einsum("sa,sab->sb", mu[h], q_values(game, h, v_lo))
        v_lo = -beta * _logsumexp(lq[h] - qb / beta) - beta * kl(mu[h], p[h])
    hi, lo = float(game.initial @ v_hi), float(game.initial @ v_lo)
    return {"soft_br_max": hi, "soft_br_min": lo, "reg_gap": max(hi - lo, 0.0)}


def regularized_gap(
    game: TabularMarkovGame,
    mu: Any,
    nu: Any,
    beta: float,
    mu_ref: Any | None = None,
    nu_ref: Any | None = None,
) -> float:
    """The beta-regularized duality gap (NashConv convention) w.r.t. references mu_ref, nu_ref.

    ``+inf`` when mu (nu) puts mass on an action its reference gives probability 0 at some
    (h, s): the KL term, and with it the regularized objective, is then unbounded.
    """
    return regularized_gap_parts(game, mu, nu, beta, mu_ref, nu_ref)["reg_gap"]


def _logsumexp(x: np.ndarray) -> np.ndarray:
    m = np.max(x, axis=-1)
    m = np.where(np.isfinite(m), m, 0.0)
    return m + np.log(np.sum(np.exp(x - m[..., None]), axis=-1))


_NASH_CACHE: OrderedDict[str, Equilibrium] = OrderedDict()


def nash_equilibrium(game: TabularMarkovGame) -> Equilibrium:
    """An exact Nash equilibrium by backward induction, one block LP (HiGHS) per stage.

    Cached per game fingerprint (games are immutable). The policies are the LP's vertex
    solution; when equilibria are not unique, this is one of them.
    """
    key = game.fingerprint()
    if key in _NASH_CACHE:
        _NASH_CACHE.move_to_end(key)
        return _NASH_CACHE[key]
    H, S, A, B = game.shape
    V = np.zeros((H + 1, S))
    Qs = np.zeros((H, S, A, B))
    mu, nu = np.zeros((H, S, A)), np.zeros((H, S, B))
    for h in reversed(range(H)):
        Qs[h] = q_values(game, h, V[h + 1])
        mu[h], nu[h], V[h] = solve_matrix_games(Qs[h], game.legal_max[h], game.legal_min[h])
    eq = Equilibrium(_ro(mu), _ro(nu), _ro(V), _ro(Qs), float(game.initial @ V[0]))
    _NASH_CACHE[key] = eq
    if len(_NASH_CACHE) > 32:
        _NASH_CACHE.popitem(last=False)
    return eq


def _ro(x: np.ndarray) -> np.ndarray:
    x.flags.writeable = False
    return x


def regularized_equilibrium(
    game: TabularMarkovGame, beta: float, mu_ref: Any | None = None, nu_ref: Any | None = None
) -> Equilibrium:
    """The unique equilibrium of the beta-KL-regularized game (references default to uniform).

    Backward induction; at each stage every state's regularized matrix game is solved to
    machine precision (:func:`~icml26.envs.markov_games.solvers.solve_regularized_matrix_games`).
    """
    beta = _check_beta(beta)
    p, q = _references(game, mu_ref, nu_ref)
    H, S, A, B = game.shape
    V = np.zeros((H + 1, S))
    Qs = np.zeros((H, S, A, B))
    mu, nu = np.zeros((H, S, A)), np.zeros((H, S, B))
    for h in reversed(range(H)):
        Qs[h] = q_values(game, h, V[h + 1])
        mu[h], nu[h], V[h] = solve_regularized_matrix_games(Qs[h], beta, p[h], q[h])
    return Equilibrium(mu, nu, V, Qs, float(game.initial @ V[0]), beta)


def state_distribution(game: TabularMarkovGame, mu: Any, nu: Any) -> np.ndarray:
    """``d_h(s)`` (H, S): probability of being in s at step h under (mu, nu)."""
    mu, nu = check_policy(game, mu, "max", "mu"), check_policy(game, nu, "min", "nu")
    return _state_distribution(game, mu, nu)


def _state_distribution(game: TabularMarkovGame, mu: np.ndarray, nu: np.ndarray) -> np.ndarray:
    d = np.zeros((game.H, game.S))
    d[0] = game.initial
    for h in range(game.H - 1):
        joint = d[h][:, None, None] * mu[h][:, :, None] * nu[h][:, None, :]
        d[h + 1] = _push_forward(game, h, joint)
    return d


def _push_forward(game: TabularMarkovGame, h: int, joint: np.ndarray) -> np.ndarray:
    """``sum_{s,a,b} joint(s, a, b) P_h(. | s, a, b)``."""
    if game._use_sparse():
        return np.asarray(game._sparse_slice(h).T @ joint.ravel()).ravel()
    return np.einsum("sab,sabt->t", joint, game.transitions[h])


def occupancy(game: TabularMarkovGame, mu: Any, nu: Any) -> np.ndarray:
    """``d_h(s, a, b)`` (H, S, A, B) under (mu, nu)."""
    mu, nu = check_policy(game, mu, "max", "mu"), check_policy(game, nu, "min", "nu")
    d = _state_distribution(game, mu, nu)
    return d[:, :, None, None] * mu[:, :, :, None] * nu[:, :, None, :]


def max_reach_probability(
    game: TabularMarkovGame, fixed: Any, fixed_player: str, support: Any | None = None
) -> np.ndarray:
    """``max_pi P(s_h = s)`` (H, S) over the deviating player's policies pi, the other player
    playing ``fixed``. One backward dynamic program per target step, vectorized over targets.
    ``support``: the deviating player's allowed actions (H, S, n) (default: its legal actions).
    """
    other = "min" if fixed_player == "max" else "max"
    pol = check_policy(game, fixed, fixed_player, "fixed policy")
    legal_dev = game.legal(other) if support is None else np.asarray(support, dtype=bool)
    H, S = game.H, game.S
    out = np.zeros((H, S))
    out[0] = game.initial
    eye = np.eye(S)
    for ht in range(1, H):
        R = eye  # R[s, t]: max probability of reaching target t at step ht from s at step h
        for h in reversed(range(ht)):
            nv = game.next_value(h, R)  # (S, A, B, T)
            if fixed_player == "min":
                per = np.einsum("sabt,sb->sat", nv, pol[h])
                per = np.where(legal_dev[h][:, :, None], per, -np.inf)
            else:
                per = np.einsum("sabt,sa->sbt", nv, pol[h])
                per = np.where(legal_dev[h][:, :, None], per, -np.inf)
            R = per.max(axis=1)
        out[ht] = game.initial @ R
    return out


def unilateral_concentrability(
    game: TabularMarkovGame,
    data_occupancy: np.ndarray,
    equilibrium: Equilibrium | None = None,
    return_table: bool = False,
    support: tuple[Any, Any] | None = None,
) -> float | tuple[float, np.ndarray]:
    """The unilateral concentrability coefficient C* of a data distribution.

    ``C* = max_{h,s,a,b} max over unilateral deviations pi in {(mu, nu*)} ∪ {(mu*, nu)} of
    d^pi_h(s, a, b) / d^D_h(s, a, b)``, with (mu*, nu*) the Nash equilibrium (``equilibrium``,
    default :func:`nash_equilibrium`) and ``data_occupancy`` the exact per-step data
    distribution d^D (H, S, A, B). The deviating player may put all its mass on any action, so
    the numerator is ``max(reach_h(s | nu*) nu*_h(b|s), reach_h(s | mu*) mu*_h(a|s))``. 0/0 = 0;
    positive/0 = inf (coverage fails). ``support = (max mask, min mask)`` restricts the deviating
    player's actions (for a KL-regularized equilibrium: the references' supports, since a
    deviation outside them has infinite KL and never matters).
    """
    eq = nash_equilibrium(game) if equilibrium is None else equilibrium
    dD = np.asarray(data_occupancy, dtype=np.float64)
    if dD.shape != (game.H, game.S, game.A, game.B):
        raise ValueError(
            f"unilateral_concentrability: data_occupancy must have shape "
            f"(H, S, A, B) = {game.shape}, got {dD.shape}"
        )
    dev_max, dev_min = (
        (game.legal_max, game.legal_min)
        if support is None
        else (np.asarray(support[0], dtype=bool), np.asarray(support[1], dtype=bool))
    )
    reach_vs_nu = max_reach_probability(game, eq.nu, "min", dev_max)  # max player deviates
    reach_vs_mu = max_reach_probability(game, eq.mu, "max", dev_min)  # min player deviates
    num = np.maximum(
        reach_vs_nu[:, :, None, None] * dev_max[:, :, :, None] * eq.nu[:, :, None, :],
        reach_vs_mu[:, :, None, None] * eq.mu[:, :, :, None] * dev_min[:, :, None, :],
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(num > 1e-15, num / dD, 0.0)
    ratio = np.where((num > 1e-15) & (dD <= 0), np.inf, ratio)
    c = float(ratio.max())
    return (c, ratio) if return_table else c
