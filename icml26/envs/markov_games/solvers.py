"""Exact solvers for batches of zero-sum matrix games, plain and KL-regularized.

* :func:`solve_matrix_games` -- Nash equilibria of N matrix games at once: one block-diagonal
  linear program (scipy ``linprog``, HiGHS) ``max v s.t. Q^T x >= v 1, 1^T x = 1, x >= 0`` per
  block; the min player's strategy is the LP dual, checked and re-solved if inaccurate.
* :func:`solve_matrix_game_lp` -- the same for one matrix with two separate LPs (reference).
* :func:`solve_regularized_matrix_games` -- the unique equilibrium of
  ``x^T Q y - beta KL(x || p) + beta KL(y || q)``, i.e. the fixed point
  ``x ∝ p exp(Q y / beta)``, ``y ∝ q exp(-Q^T x / beta)``, by damped Newton on the logits to
  machine precision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "solve_matrix_games",
    "solve_matrix_game_lp",
    "solve_regularized_matrix_games",
    "regularized_value",
    "log_softmax",
    "kl",
]


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis; ``-inf`` logits stay ``-inf`` (probability 0)."""
    m = np.max(logits, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    z = logits - m
    with np.errstate(divide="ignore"):
        return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))


def kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p || q) over the last axis (0 log 0 = 0; +inf where p > 0 = q)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q)), 0.0)
    return terms.sum(axis=-1)


def _legal(mask: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    return np.ones(shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)


def solve_matrix_games(
    Q: np.ndarray,
    legal_max: np.ndarray | None = None,
    legal_min: np.ndarray | None = None,
    tol: float = 1e-7,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nash equilibria of N zero-sum matrix games ``Q`` (N, A, B) (max player picks rows).

    Returns ``(x (N, A), y (N, B), value (N,))`` where value is ``min_b (x^T Q)_b``, the payoff
    the max strategy guarantees. Illegal actions (masks (N, A) / (N, B)) get probability 0.
    """
    from scipy import sparse
    from scipy.optimize import linprog

    Q = np.asarray(Q, dtype=np.float64)
    N, A, B = Q.shape
    lmax, lmin = _legal(legal_max, (N, A)), _legal(legal_min, (N, B))
    nvar = N * (A + 1)  # per block: x_0..x_{A-1}, v
    xi = np.arange(N)[:, None] * (A + 1) + np.arange(A)[None, :]  # (N, A) variable index
    vi = np.arange(N) * (A + 1) + A
    # inequalities v_i - sum_a Q[i, a, b] x_ia <= 0 for each legal b of block i
    blocks, bs = np.nonzero(lmin)
    nrow = blocks.size
    rows = np.concatenate([np.repeat(np.arange(nrow), A), np.arange(nrow)])
    cols = np.concatenate([xi[blocks].ravel(), vi[blocks]])
    vals = np.concatenate([-Q[blocks, :, bs].ravel(), np.ones(nrow)])
    A_ub = sparse.csr_matrix((vals, (rows, cols)), shape=(nrow, nvar))
    A_eq = sparse.csr_matrix(
        (np.ones(N * A), (np.repeat(np.arange(N), A), xi.ravel())), shape=(N, nvar)
    )
    c = np.zeros(nvar)
    c[vi] = -1.0
    bounds = np.zeros((nvar, 2))
    bounds[xi.ravel(), 1] = np.where(lmax.ravel(), 1.0, 0.0)
    bounds[vi, 0], bounds[vi, 1] = -np.inf, np.inf
    res = linprog(
        c, A_ub=A_ub, b_ub=np.zeros(nrow), A_eq=A_eq, b_eq=np.ones(N), bounds=bounds, method="highs"
    )
    if res.status != 0:
        raise RuntimeError(f"solve_matrix_games: HiGHS failed ({res.status}): {res.message}")
    x = np.clip(res.x[xi], 0.0, None) * lmax
    x /= x.sum(axis=1, keepdims=True)
    y = np.zeros((N, B))
    y[blocks, bs] = np.clip(-np.asarray(res.ineqlin.marginals), 0.0, None)
    ysum = y.sum(axis=1, keepdims=True)
    ok_dual = ysum[:, 0] > 0.5
    y = np.where(ok_dual[:, None], y / np.where(ysum > 0, ysum, 1.0), 0.0)
    value = _guaranteed_max(Q, x, lmin)
    upper = _guaranteed_min(Q, y, lmax)
    scale = 1.0 + np.abs(Q).reshape(N, -1).max(axis=1)
    bad = ~ok_dual | (upper - value > tol * scale)
    for i in np.flatnonzero(bad):  # rare: re-solve the min player's LP for this block
        _, y[i], _ = solve_matrix_game_lp(Q[i], lmax[i], lmin[i])
    return x, y, value


def _guaranteed_max(Q: np.ndarray, x: np.ndarray, lmin: np.ndarray) -> np.ndarray:
    return np.where(lmin, np.einsum("na,nab->nb", x, Q), np.inf).min(axis=1)


def _guaranteed_min(Q: np.ndarray, y: np.ndarray, lmax: np.ndarray) -> np.ndarray:
    return np.where(lmax, np.einsum("nab,nb->na", Q, y), -np.inf).max(axis=1)


def solve_matrix_game_lp(
    M: np.ndarray, legal_max: np.ndarray | None = None, legal_min: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """One matrix game by two separate LPs (max player's and min player's): ``(x, y, value)``."""
    from scipy.optimize import linprog

    M = np.asarray(M, dtype=np.float64)
    A, B = M.shape
    lmax = np.ones(A, bool) if legal_max is None else np.asarray(legal_max, bool)
    lmin = np.ones(B, bool) if legal_min is None else np.asarray(legal_min, bool)
    # max player: variables (x, v); minimize -v s.t. v - M[:, b]^T x <= 0 (legal b)
    c = np.zeros(A + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-M.T[lmin], np.ones((int(lmin.sum()), 1))])
    bounds = [(0.0, 1.0 if lmax[a] else 0.0) for a in range(A)] + [(None, None)]
    A_eq = np.hstack([np.ones((1, A)), np.zeros((1, 1))])
    rx = linprog(
        c,
        A_ub=A_ub,
        b_ub=np.zeros(A_ub.shape[0]),
        A_eq=A_eq,
        b_eq=[1.0],
        bounds=bounds,
        method="highs",
    )
    # min player: variables (y, w); minimize w s.t. M[a, :] y - w <= 0 (legal a)
    c2 = np.zeros(B + 1)
    c2[-1] = 1.0
    A_ub2 = np.hstack([M[lmax], -np.ones((int(lmax.sum()), 1))])
    bounds2 = [(0.0, 1.0 if lmin[b] else 0.0) for b in range(B)] + [(None, None)]
    A_eq2 = np.hstack([np.ones((1, B)), np.zeros((1, 1))])
    ry = linprog(
        c2,
        A_ub=A_ub2,
        b_ub=np.zeros(A_ub2.shape[0]),
        A_eq=A_eq2,
        b_eq=[1.0],
        bounds=bounds2,
        method="highs",
    )
    if rx.status != 0 or ry.status != 0:
        raise RuntimeError(f"solve_matrix_game_lp: HiGHS failed: {rx.message} / {ry.message}")
    x = np.clip(rx.x[:A], 0.0, None) * lmax
    y = np.clip(ry.x[:B], 0.0, None) * lmin
    x, y = x / x.sum(), y / y.sum()
    value = float(np.where(lmin, x @ M, np.inf).min())
    return x, y, value


def regularized_value(
    Q: np.ndarray, x: np.ndarray, y: np.ndarray, beta: float, p: np.ndarray, q: np.ndarray
) -> np.ndarray:
    """``x^T Q y - beta KL(x || p) + beta KL(y || q)`` for batches (N, A, B)."""
    return np.einsum("na,nab,nb->n", x, Q, y) - beta * kl(x, p) + beta * kl(y, q)


def solve_regularized_matrix_games(
    Q: np.ndarray,
    beta: float,
    p: np.ndarray,
    q: np.ndarray,
    tol: float = 1e-12,
    max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique equilibria of N KL-regularized matrix games: ``(x (N, A), y (N, B), value (N,))``.

    Solves ``z1 = Q y(z2) / beta``, ``z2 = -Q^T x(z1) / beta`` with ``x = softmax(log p + z1)``,
    ``y = softmax(log q + z2)`` by Newton's method with a backtracking line search on the
    residual (the Jacobian ``[[I, -Q J_y / beta], [Q^T J_x / beta, I]]`` is always invertible),
    continued from a large temperature down to ``beta`` (warm starts ``z * beta_prev / beta``)
    so that small ``beta`` converges too. Zeros in the references ``p`` / ``q`` stay zeros.
    Raises RuntimeError if some game has not converged to ``tol`` (relative to max|Q| / beta).
    """
    if not beta > 0:
        raise ValueError(f"solve_regularized_matrix_games: beta must be > 0, got {beta!r}")
    Q = np.asarray(Q, dtype=np.float64)
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    lp, lq = _log(p), _log(q)
    N = Q.shape[0]
    scale = max(1.0, float(np.abs(Q).max()) / beta)
    z1, z2 = np.zeros(p.shape), np.zeros(q.shape)
    merit = np.full(N, np.inf)
    todo = np.arange(N)
    for factor in (2.0, 1.2, 1.05):  # finer temperature steps for the games that failed
        if todo.size == 0:
            break
        z1[todo], z2[todo], merit[todo] = _continuation(
            Q[todo], beta, lp[todo], lq[todo], p[todo], q[todo], factor, tol, max_iter
        )
        todo = np.flatnonzero(merit > 1e3 * tol * scale)
    if todo.size:
        worst = int(todo[np.argmax(merit[todo])])
        raise RuntimeError(
            f"solve_regularized_matrix_games: game {worst} did not converge (residual "
            f"{merit[worst]:.3g}, beta={beta})"
        )
    x, y = np.exp(log_softmax(lp + z1)), np.exp(log_softmax(lq + z2))
    return x, y, regularized_value(Q, x, y, beta, p, q)


def _continuation(
    Q: np.ndarray,
    beta: float,
    lp: np.ndarray,
    lq: np.ndarray,
    p: np.ndarray,
    q: np.ndarray,
    factor: float,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Newton solves from temperature ``max(beta, spread of Q)`` down to ``beta`` by ``factor``."""
    spread = float(np.ptp(Q)) if Q.size else 0.0
    betas = [float(beta)]
    while betas[-1] < spread:
        betas.append(betas[-1] * factor)
    betas.reverse()
    z1 = np.einsum("nab,nb->na", Q, q) / betas[0]
    z2 = -np.einsum("nab,na->nb", Q, p) / betas[0]
    prev = betas[0]
    merit = np.full(Q.shape[0], np.inf)
    for i, b in enumerate(betas):
        z1, z2 = z1 * (prev / b), z2 * (prev / b)
        last = i == len(betas) - 1
        z1, z2, merit = _newton(Q, b, lp, lq, z1, z2, tol if last else 1e-6, max_iter)
        prev = b
    return z1, z2, merit


def _newton(
    Q: np.ndarray,
    beta: float,
    lp: np.ndarray,
    lq: np.ndarray,
    z1: np.ndarray,
    z2: np.ndarray,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Damped Newton on the fixed-point residual of one temperature; returns (z1, z2, residual)."""
    N, A, B = Q.shape
    scale = max(1.0, float(np.abs(Q).max()) / beta)
    eye = np.eye(A + B)

    def residual(
        sel: np.ndarray, z1s: np.ndarray, z2s: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x, y = np.exp(log_softmax(lp[sel] + z1s)), np.exp(log_softmax(lq[sel] + z2s))
        g = np.concatenate(
            [
                z1s - np.einsum("nab,nb->na", Q[sel], y) / beta,
                z2s + np.einsum("nab,na->nb", Q[sel], x) / beta,
            ],
            axis=1,
        )
        return g, x, y

    allidx = np.arange(N)
    g, x, y = residual(allidx, z1, z2)
    merit = np.max(np.abs(g), axis=1)
    for _ in range(max_iter):
        idx = np.flatnonzero(merit > tol * scale)
        if idx.size == 0:
            break
        Qa = Q[idx]
        M = np.tile(eye, (idx.size, 1, 1))
        M[:, :A, A:] = -np.einsum("nab,nbc->nac", Qa, _softmax_jacobian(y[idx])) / beta
        M[:, A:, :A] = np.einsum("nab,nac->nbc", Qa, _softmax_jacobian(x[idx])) / beta
        step = np.linalg.solve(M, -g[idx][..., None])[..., 0]
        t = np.ones(idx.size)
        pending = np.ones(idx.size, dtype=bool)
        for _ls in range(40):
            if not np.any(pending):
                break
            pos = np.flatnonzero(pending)
            sel = idx[pos]
            nz1 = z1[sel] + t[pos, None] * step[pos, :A]
            nz2 = z2[sel] + t[pos, None] * step[pos, A:]
            ng, nx, ny = residual(sel, nz1, nz2)
            nm = np.max(np.abs(ng), axis=1)
            ok = (nm < merit[sel] * (1 - 1e-4 * t[pos])) | (nm <= tol * scale)
            acc = sel[ok]
            z1[acc], z2[acc], g[acc], x[acc], y[acc], merit[acc] = (
                nz1[ok],
                nz2[ok],
                ng[ok],
                nx[ok],
                ny[ok],
                nm[ok],
            )
            pending[pos[ok]] = False
            t[pos[~ok]] *= 0.5
        if np.all(pending):
            break
    return z1, z2, merit


def _log(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, -np.inf)
    out[p > 0] = np.log(p[p > 0])
    return out


def _softmax_jacobian(x: np.ndarray) -> Any:
    return np.einsum("na,ab->nab", x, np.eye(x.shape[1])) - x[:, :, None] * x[:, None, :]
