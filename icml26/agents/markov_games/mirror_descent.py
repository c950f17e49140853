"""Self-play mirror descent on a batch of (regularized) matrix games, vectorized over states.

SOS-MD update (explicit, last iterate; the method card):
    mu^{t+1}(a) ∝ mu^t(a)^{1 - eta beta} mu_ref(a)^{eta beta} exp(eta [Q nu^t](a))
    nu^{t+1}(b) ∝ nu^t(b)^{1 - eta beta} nu_ref(b)^{eta beta} exp(-eta [Q^T mu^t](b))
Magnetic mirror descent (Sokota et al. 2023), the implicit variant:
    pi^{t+1} ∝ (pi^t exp(eta g) ref^{eta beta})^{1 / (1 + eta beta)}.
With beta = 0 both are plain (unregularized) multiplicative-weights self-play.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.envs.markov_games.game import TabularMarkovGame, masked_log, uniform_policy
from icml26.envs.markov_games.metrics import q_values
from icml26.envs.markov_games.solvers import kl, log_softmax

__all__ = ["self_play_md", "md_step", "stage_value", "self_play_md_exact", "auto_eta"]

VARIANTS = ("explicit", "magnetic")


def auto_eta(
    Q: np.ndarray,
    beta: float,
    sup_p: np.ndarray | None = None,
    sup_q: np.ndarray | None = None,
) -> np.ndarray:
    """Per-game step ``beta / (beta^2 + (L / 2)^2)`` with L = max - min of the game's entries
    (over the references' supports ``sup_p`` (N, A) x ``sup_q`` (N, B) when given: entries the
    iterates can never play do not slow the step down).

    The linearized explicit update contracts with modulus ``sqrt((1 - eta beta)^2 + eta^2
    sigma^2)`` (sigma: the payoff's strength, at most L / 2 around its mean); this step
    minimizes it. With beta = 0 it falls back to ``1 / L``.
    """
    flat = Q.reshape(Q.shape[0], -1)
    if sup_p is None or sup_q is None:
        L = np.ptp(flat, axis=1)
    else:
        m = (sup_p[:, :, None] & sup_q[:, None, :]).reshape(Q.shape[0], -1)
        L = np.where(m, flat, -np.inf).max(1) - np.where(m, flat, np.inf).min(1)
    half = np.maximum(L / 2, 1e-12)
    if beta > 0:
        return beta / (beta**2 + half**2)
    return 1.0 / (2 * half)


def _check(beta: float, eta: float | str, T: int, variant: str) -> None:
    if not beta >= 0:
        raise ValueError(f"mirror descent: beta must be >= 0, got {beta!r}")
    if isinstance(eta, str):
        if eta != "auto":
            raise ValueError(f"mirror descent: eta must be a number > 0 or 'auto', got {eta!r}")
        return
    if not eta > 0:
        raise ValueError(f"mirror descent: eta must be > 0, got {eta!r}")
    if not isinstance(T, (int, np.integer)) or T < 0:
        raise ValueError(f"mirror descent: T must be an integer >= 0, got {T!r}")
    if variant not in VARIANTS:
        raise ValueError(f"mirror descent: variant must be one of {VARIANTS}, got {variant!r}")
    if variant == "explicit" and eta * beta > 1:
        raise ValueError(
            f"SOS-MD explicit update needs eta * beta <= 1, got eta={eta}, beta={beta}"
        )


def self_play_md(
    Q: np.ndarray,
    beta: float,
    eta: float | str,
    T: int,
    p: np.ndarray,
    q: np.ndarray,
    variant: str = "explicit",
    init: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """T simultaneous self-play steps on N games ``Q`` (N, A, B).

    ``p`` (N, A) / ``q`` (N, B) are the references (with beta = 0 they only fix the support:
    actions with reference 0 are never played). Starts from ``init`` or from the references.
    ``eta="auto"`` picks a step per game (:func:`auto_eta`).
    Returns ``(mu_T, nu_T, mu_avg, nu_avg)``: last iterates and averages of iterates 1..T.
    """
    _check(beta, eta, T, variant)
    Q = np.asarray(Q, dtype=np.float64)
    sup_p, sup_q = p > 0, q > 0
    lp, lq = np.where(sup_p, masked_log(p), 0.0), np.where(sup_q, masked_log(q), 0.0)
    if init is None:
        m0, n0 = p, q
    else:  # keep every supported action alive (a zero would stay zero forever)
        m0 = (1 - 1e-12) * np.asarray(init[0], dtype=np.float64) + 1e-12 * p
        n0 = (1 - 1e-12) * np.asarray(init[1], dtype=np.float64) + 1e-12 * q
    lmu = np.where(sup_p, log_softmax(np.where(sup_p, masked_log(m0 * sup_p), -np.inf)), 0.0)
    lnu = np.where(sup_q, log_softmax(np.where(sup_q, masked_log(n0 * sup_q), -np.inf)), 0.0)
    mu, nu = np.exp(lmu) * sup_p, np.exp(lnu) * sup_q
    mu_sum, nu_sum = np.zeros_like(mu), np.zeros_like(nu)
    step = (
        auto_eta(Q, beta, sup_p, sup_q)[:, None]
        if isinstance(eta, str)
        else np.full((Q.shape[0], 1), float(eta))
    )
    for _ in range(int(T)):
        lmu, lnu = md_step(Q, lmu, lnu, lp, lq, sup_p, sup_q, step, beta, variant)
        mu, nu = np.exp(lmu) * sup_p, np.exp(lnu) * sup_q
        mu_sum += mu
        nu_sum += nu
    if T == 0:
        return mu, nu, mu.copy(), nu.copy()
    return mu, nu, mu_sum / T, nu_sum / T


def md_step(
    Q: np.ndarray,
    lmu: np.ndarray,
    lnu: np.ndarray,
    lp: np.ndarray,
    lq: np.ndarray,
    sup_p: np.ndarray,
    sup_q: np.ndarray,
    eta: np.ndarray,
    beta: float,
    variant: str = "explicit",
) -> tuple[np.ndarray, np.ndarray]:
    """One simultaneous self-play step on N games from log-policies ``lmu`` (N, A), ``lnu`` (N, B).

    ``lp``/``lq``: log-references (0 outside the supports ``sup_p``/``sup_q``, which the
    iterates never leave); ``eta`` (N, 1) per-game steps. Returns the new log-policies.
    """
    mu, nu = np.exp(lmu) * sup_p, np.exp(lnu) * sup_q
    g_mu = np.einsum("nab,nb->na", Q, nu)
    g_nu = -np.einsum("nab,na->nb", Q, mu)
    eb = eta * beta
    if variant == "explicit":
        zmu = (1 - eb) * lmu + eb * lp + eta * g_mu
        znu = (1 - eb) * lnu + eb * lq + eta * g_nu
    else:
        zmu = (lmu + eta * g_mu + eb * lp) / (1 + eb)
        znu = (lnu + eta * g_nu + eb * lq) / (1 + eb)
    lmu = np.where(sup_p, log_softmax(np.where(sup_p, zmu, -np.inf)), 0.0)
    lnu = np.where(sup_q, log_softmax(np.where(sup_q, znu, -np.inf)), 0.0)
    return lmu, lnu


def stage_value(
    Q: np.ndarray, mu: np.ndarray, nu: np.ndarray, beta: float, p: np.ndarray, q: np.ndarray
) -> np.ndarray:
    """``mu^T Q nu - beta KL(mu || p) + beta KL(nu || q)`` per game (beta = 0: the bilinear value)."""
    v = np.einsum("na,nab,nb->n", mu, Q, nu)
    if beta > 0:
        v = v - beta * kl(mu, p) + beta * kl(nu, q)
    return v


def self_play_md_exact(
    game: TabularMarkovGame,
    beta: float,
    eta: float | str,
    T: int,
    mu_ref: Any | None = None,
    nu_ref: Any | None = None,
    variant: str = "explicit",
) -> tuple[np.ndarray, np.ndarray]:
    """SOS-MD's optimization alone: backward induction with the *exact* Q of ``game`` and T
    self-play steps per stage (last iterate). As T grows it converges to
    :func:`~icml26.envs.markov_games.metrics.regularized_equilibrium`."""
    p = uniform_policy(game, "max") if mu_ref is None else np.asarray(mu_ref, dtype=np.float64)
    q = uniform_policy(game, "min") if nu_ref is None else np.asarray(nu_ref, dtype=np.float64)
    H, S, A, B = game.shape
    mu, nu = np.zeros((H, S, A)), np.zeros((H, S, B))
    v = np.zeros(S)
    for h in reversed(range(H)):
        Q = q_values(game, h, v)
        mu[h], nu[h], _, _ = self_play_md(Q, beta, eta, T, p[h], q[h], variant)
        v = stage_value(Q, mu[h], nu[h], beta, p[h], q[h])
    return mu, nu
