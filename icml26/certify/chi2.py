"""chi^2-divergences of a task family relative to a sampling design, and the design minimizing them.

A family is an ``(m, K)`` array of members (rows: distributions over ``K`` environments); a
design is a distribution ``p`` over the same environments. See docs/methods/capability_eval.md
("chi^2-radius and overlap", "Optimal design").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "as_family",
    "as_design",
    "chi2_divergence",
    "chi2_radius",
    "uncovered_mass",
    "Design",
    "optimal_design",
    "uniform_design",
]

_ATOL = 1e-9


def as_family(members: np.ndarray | list[list[float]], name: str = "members") -> np.ndarray:
    """Check and return a family as a float ``(m, K)`` array whose rows are distributions."""
    q = np.asarray(members, dtype=np.float64)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or q.shape[0] < 1 or q.shape[1] < 1:
        raise ValueError(f"{name}: expected an (m, K) array of distributions, got shape {q.shape}")
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise ValueError(f"{name}: entries must be finite and >= 0")
    sums = q.sum(axis=1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        raise ValueError(f"{name}: every row must sum to 1, got sums {np.round(sums, 6).tolist()}")
    return q / sums[:, None]


def as_design(design: np.ndarray | list[float], k: int | None = None) -> np.ndarray:
    """Check and return a design (a distribution over ``K`` environments)."""
    p = np.asarray(design, dtype=np.float64)
    if p.ndim != 1 or (k is not None and p.shape != (k,)):
        want = f"({k},)" if k is not None else "(K,)"
        raise ValueError(f"design: expected a distribution of shape {want}, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or not abs(p.sum() - 1.0) < 1e-6:
        raise ValueError("design: expected non-negative finite entries summing to 1")
    return p / p.sum()


def chi2_divergence(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``chi^2(q || p) = sum_e q(e)^2 / p(e) - 1`` for each row of ``q`` (``inf`` without overlap)."""
    q = as_family(q, "q")
    p = as_design(p, q.shape[1])
    pos = p > 0
    out = (q[:, pos] ** 2 / p[pos]).sum(axis=1) - 1.0
    out = np.maximum(out, 0.0)  # rounding can put it a hair below 0 when q = p
    out[(q[:, ~pos] > 0).any(axis=1)] = np.inf
    return out


def chi2_radius(members: np.ndarray, design: np.ndarray) -> float:
    """The family's chi^2-radius ``max_j chi^2(q_j || p)`` relative to ``design``."""
    return float(chi2_divergence(members, design).max())


def uncovered_mass(members: np.ndarray, design: np.ndarray | None = None) -> np.ndarray:
    """Per member, the mass it puts on environments the design never samples (zero = overlap)."""
    q = as_family(members)
    if design is None:
        return np.zeros(q.shape[0])
    p = np.asarray(design, dtype=np.float64)
    return q[:, p <= 0].sum(axis=1)


@dataclass(frozen=True)
class Design:
    """A sampling design with its family's chi^2-radius: ``p`` (K,), ``radius`` (``inf`` when some
    member lacks overlap), ``covered_radius`` (the radius of the members' tested parts),
    ``divergences`` (m,), ``uncovered`` (m,), and for an optimized design its ``dual`` value
    (a lower bound on the best covered radius) and ``gap`` = covered_radius - dual."""

    p: np.ndarray
    radius: float
    covered_radius: float
    divergences: np.ndarray
    uncovered: np.ndarray
    dual: float = float("nan")
    gap: float = float("nan")

    @property
    def overlap(self) -> bool:
        return bool(np.all(self.uncovered <= _ATOL))


def _covered_divergences(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``sum_{e: p(e) > 0} q(e)^2 / p(e) - 1``: the chi^2 of the tested part of each member."""
    pos = p > 0
    return (q[:, pos] ** 2 / p[pos]).sum(axis=1) - 1.0


def _design_of(q: np.ndarray, p: np.ndarray, dual: float = float("nan")) -> Design:
    div = chi2_divergence(q, p)
    cov = _covered_divergences(q, p)
    covered = float(np.max(cov))
    return Design(
        p=p,
        radius=float(div.max()),
        covered_radius=covered,
        divergences=div,
        uncovered=uncovered_mass(q, p),
        dual=dual,
        gap=covered - dual if np.isfinite(dual) else float("nan"),
    )


def _testable_mask(k: int, testable: np.ndarray | None) -> np.ndarray:
    if testable is None:
        return np.ones(k, dtype=bool)
    t = np.asarray(testable, dtype=bool)
    if t.shape != (k,) or not t.any():
        raise ValueError(
            f"testable: expected a boolean mask of shape ({k},) with at least one True, got {t.shape}"
        )
    return t


def uniform_design(members: np.ndarray, testable: np.ndarray | None = None) -> Design:
    """The uniform design over the testable environments."""
    q = as_family(members)
    mask = _testable_mask(q.shape[1], testable)
    p = mask / mask.sum()
    return _design_of(q, p.astype(np.float64))


def _eg_step(lam: np.ndarray, grad: np.ndarray, step: float) -> np.ndarray:
    """One exponentiated-gradient step on the simplex (gradient scaled to max 1)."""
    z = np.log(np.maximum(lam, 1e-300)) + step * grad / max(float(np.abs(grad).max()), 1e-300)
    z -= z.max()
    out = np.exp(z)
    return out / out.sum()


def optimal_design(
    members: np.ndarray,
    testable: np.ndarray | None = None,
    *,
    tol: float = 1e-7,
    max_iter: int = 20_000,
) -> Design:
    """The design minimizing the family's chi^2-radius over the testable environments.

    Minimax duality (docs/methods/capability_eval.md): for member weights ``lam`` the best
    design is ``p(e) ~ sqrt(a_e)``, ``a_e = sum_j lam_j q_j(e)^2``, with value
    ``(sum_e sqrt(a_e))^2``; ``1 + R* = max_lam (sum_e sqrt(a_e))^2``. We maximize the concave
    ``h(lam) = sum_e sqrt(a_e)`` by exponentiated-gradient ascent and return the best primal
    design seen; ``gap`` (primal minus dual) certifies how close it is. Members' mass on
    untestable environments cannot be covered: their radius is ``inf`` (overlap fails) and the
    design optimizes their tested parts.
    """
    q = as_family(members)
    mask = _testable_mask(q.shape[1], testable)
    qt = q[:, mask]
    sq = qt**2
    m = q.shape[0]
    lam = np.full(m, 1.0 / m)
    grad = np.zeros(m)
    best_primal, best_p, best_dual = np.inf, np.zeros(qt.shape[1]), -np.inf
    step = 1.0
    h_old = -np.inf
    lam_old = lam
    for _ in range(max_iter if m > 1 else 1):
        a = lam @ sq
        root = np.sqrt(np.maximum(a, 0.0))
        h = float(root.sum())
        if h <= 0:
            raise ValueError("optimal_design: no member has mass on a testable environment")
        if h < h_old:  # overshot: halve the step and retry from the last accepted point
            step *= 0.5
            lam = _eg_step(lam_old, grad, step)
            continue
        step *= 1.5
        h_old, lam_old = h, lam
        best_dual = max(best_dual, h * h - 1.0)
        p = root / h
        primal = float(_covered_divergences(qt, p).max())
        if np.any(sq[:, p <= 0].sum(axis=1) > 0):  # a member lives where p vanishes
            primal = np.inf
        if primal < best_primal:
            best_primal, best_p = primal, p
        if best_primal - best_dual <= tol * (1.0 + best_dual):
            break
        # gradient of h: sum_e q_j(e)^2 / (2 sqrt(a_e)); floor a_e so untouched envs pull hard
        grad = (sq / (2.0 * np.maximum(root, 1e-12))).sum(axis=1)
        lam = _eg_step(lam, grad, step)
    p_full = np.zeros(q.shape[1])
    p_full[mask] = best_p
    return _design_of(q, p_full, dual=best_dual if m > 1 else best_primal)
