"""Weighting estimators with a joint propensity for own treatment and exposure.

Each unit's exposure condition is ``(A_i, G_i)`` with ``G_i`` the number of treated units among
its ``k_i`` neighbours within the radius (exposure ``e_i = G_i / k_i``). With treatments drawn
independently given covariates, the joint propensity factorizes (Forastiere, Airoldi & Mealli
2021; Aronow & Samii 2017)::

    p_i(a, g) = P(A_i = a | X_i) P(G_i = g | X_{N(i)}),   G_i ~ PoissonBinomial(pi_j, j in N(i))

with individual propensities ``pi_j`` from a logistic regression of ``A`` on ``X``.

* :class:`HorvitzThompson` -- unbiased inverse-probability sums for each estimand:
  ``DE = mean_s [A Y / pi - (1 - A) Y / (1 - pi)]``,
  ``SE = mean_s [1{G = k} Y / P(G = k) - 1{G = 0} Y / P(G = 0)]`` (own treatment as observed).
* :class:`IPW` -- a marginal structural model ``E[Y(a, e)] = b0 + b_A a + b_e e`` fitted by
  weighted least squares with stabilized weights ``p*(A, G) / p_i(A, G)``, where ``p*`` is the
  average joint propensity over units with the same ``k`` (the marginal exposure distribution).
* :class:`AIPW` -- the doubly robust version of the same MSM: an outcome model ``m(a, e, X)``
  (the exposure-OLS design) plus the weighted residuals; it solves
  ``sum_i w_i h_i (Y_i - m_i) + sum_i sum_(a,g) p*(a, g) h(a, g) (m_i(a, g) - h(a, g)'b) = 0``.

None of these sees the spatial confounder: they are the reviewer's unconfounded-design baselines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from icml26.agents.spatial_causal.common import (
    EffectAgent,
    EffectEstimate,
    SpatialData,
    flexible_design,
    lstsq,
)

__all__ = [
    "logistic_propensity",
    "poisson_binomial_pmf",
    "joint_propensity",
    "JointPropensity",
    "HorvitzThompson",
    "IPW",
    "AIPW",
    "horvitz_thompson",
]


def logistic_propensity(
    a: np.ndarray, x: np.ndarray, ridge: float = 1e-6, iters: int = 50
) -> np.ndarray:
    """``P(A = 1 | X)`` from a logistic regression of ``a`` on ``[1, x]`` (Newton-Raphson)."""
    a = np.asarray(a, dtype=np.float64)
    d = np.column_stack([np.ones(a.size), np.asarray(x, dtype=np.float64).reshape(a.size, -1)])
    if a.min() == a.max():
        raise ValueError("logistic_propensity: needs both treated and untreated units")
    b = np.zeros(d.shape[1])
    for _ in range(iters):
        p = expit(d @ b)
        grad = d.T @ (a - p) - ridge * b
        hess = (d * (p * (1 - p))[:, None]).T @ d + ridge * np.eye(b.size)
        step = np.linalg.solve(hess, grad)
        b += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return np.clip(expit(d @ b), 1e-6, 1 - 1e-6)


def poisson_binomial_pmf(probs: np.ndarray) -> np.ndarray:
    """Row-wise pmf of the number of successes of independent Bernoulli(probs[i, j]) trials
    (pad absent trials with probability 0): shape ``(n, K + 1)``."""
    p = np.asarray(probs, dtype=np.float64)
    n, k = p.shape
    pmf = np.zeros((n, k + 1))
    pmf[:, 0] = 1.0
    for j in range(k):
        pj = p[:, j : j + 1]
        pmf[:, 1:] = pmf[:, 1:] * (1 - pj) + pmf[:, :-1] * pj
        pmf[:, 0] *= 1 - p[:, j]
    return pmf


class JointPropensity:
    """Individual propensities, neighbour counts and the exposure pmf of one data set."""

    def __init__(self, data: SpatialData, pi: np.ndarray | None = None) -> None:
        self.pi = (
            logistic_propensity(data.a, data.x) if pi is None else np.asarray(pi, dtype=np.float64)
        )
        ball = data.ball.tocsr()
        self.k = np.diff(ball.indptr).astype(np.int64)
        kmax = int(self.k.max()) if self.k.size else 0
        nb_probs = np.zeros((data.n, kmax))
        counts = np.zeros(data.n)
        for i in range(data.n):
            nb = ball.indices[ball.indptr[i] : ball.indptr[i + 1]]
            nb_probs[i, : nb.size] = self.pi[nb]
            counts[i] = data.a[nb].sum()
        self.g = np.rint(counts).astype(np.int64)
        self.pmf = poisson_binomial_pmf(nb_probs)  # (n, kmax + 1), zero beyond k_i

    def joint(self, a: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``p_i(a_i, g_i)`` for per-unit values ``a``, ``g``."""
        own = np.where(np.asarray(a) > 0.5, self.pi, 1 - self.pi)
        return own * self.pmf[np.arange(self.pi.size), g]

    def marginal(self) -> dict[int, np.ndarray]:
        """For each neighbour count k: the average joint pmf over units with that k, shape (2, k+1)."""
        out = {}
        for k in np.unique(self.k):
            m = self.k == k
            pg = self.pmf[m, : k + 1]
            out[int(k)] = np.stack(
                [((1 - self.pi[m])[:, None] * pg).mean(0), (self.pi[m][:, None] * pg).mean(0)]
            )
        return out


def joint_propensity(data: SpatialData) -> JointPropensity:
    return JointPropensity(data)


def horvitz_thompson(
    y: np.ndarray,
    a: np.ndarray,
    jp: JointPropensity,
    units: np.ndarray,
    levels: tuple[float, ...] = (0.0, 0.5, 1.0),
) -> tuple[float, float, np.ndarray]:
    """HT estimates over ``units`` (bool mask): DE, SE and the ERF at neighbour shares
    ``levels`` (``floor(q k)`` of ``k`` neighbours treated, own treatment as observed)."""
    idx = np.nonzero(units)[0]
    yy, aa, pi = y[idx], a[idx], jp.pi[idx]
    de = float(np.mean(aa * yy / pi - (1 - aa) * yy / (1 - pi)))
    k, g, pmf = jp.k[idx], jp.g[idx], jp.pmf[idx]
    erf = []
    for q in levels:
        target = np.floor(q * k + 1e-9).astype(np.int64)
        p = pmf[np.arange(idx.size), target]
        erf.append(float(np.mean(np.where(g == target, yy / p, 0.0))))
    top = np.where(g == k, yy / pmf[np.arange(idx.size), k], 0.0)
    bottom = np.where(g == 0, yy / pmf[:, 0], 0.0)
    return de, float(np.mean(top - bottom)), np.array(erf)


class HorvitzThompson(EffectAgent):
    """Horvitz-Thompson estimator of DE, SE and the ERF with the joint propensity (module doc)."""

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        jp = JointPropensity(data)
        units = data.scored & (jp.k > 0)
        de, se, erf = horvitz_thompson(data.y, data.a, jp, units, tuple(data.erf_q))
        k = jp.k[units]
        self.diagnostics = {
            "units_all_treated": float(np.sum(jp.g[units] == k)),
            "units_none_treated": float(np.sum(jp.g[units] == 0)),
        }
        return EffectEstimate(de, se, erf)


def _msm_effects(data: SpatialData, coef: np.ndarray) -> EffectEstimate:
    s = data.scored
    b0, b_a, b_e = (float(c) for c in coef)
    base = b0 + b_a * float(data.a[s].mean())
    erf = base + b_e * data.e_levels[:, s].mean(axis=1)
    return EffectEstimate(b_a, b_e * float(data.e_all[s].mean()), erf)


def _stabilized_weights(
    jp: JointPropensity, a: np.ndarray
) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    marg = jp.marginal()
    ai = (a > 0.5).astype(np.int64)
    num = np.array([marg[int(k)][ai[i], jp.g[i]] for i, k in enumerate(jp.k)])
    return num / jp.joint(a, jp.g), marg


class IPW(EffectAgent):
    """IPW fit of the MSM ``E[Y(a, e)] = b0 + b_A a + b_e e`` with stabilized joint weights."""

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        jp = JointPropensity(data)
        w, _ = _stabilized_weights(jp, data.a)
        m = jp.k > 0
        h = np.column_stack([np.ones(data.n), data.a, data.e])[m]
        sw = np.sqrt(w[m])
        coef = lstsq(h * sw[:, None], data.y[m] * sw)
        self.diagnostics = {
            "max_weight": float(w[m].max()),
            "ess_share": float(w[m].sum() ** 2 / (w[m] ** 2).sum() / m.sum()),
        }
        return _msm_effects(data, coef)


class AIPW(EffectAgent):
    """Doubly robust (augmented IPW) fit of the same MSM; outcome model = exposure-OLS design."""

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        jp = JointPropensity(data)
        w, marg = _stabilized_weights(jp, data.a)
        out_coef = lstsq(flexible_design(data.a, data.e, data.x), data.y)
        m_obs = flexible_design(data.a, data.e, data.x) @ out_coef
        lhs = np.zeros((3, 3))
        rhs = np.zeros(3)
        use = jp.k > 0
        h_obs = np.column_stack([np.ones(data.n), data.a, data.e])
        rhs += (h_obs[use] * (w[use] * (data.y - m_obs)[use])[:, None]).sum(0)
        for k, pk in marg.items():
            if k == 0:
                continue
            members = np.nonzero(jp.k == k)[0]
            xk = data.x[members]
            for av in (0, 1):
                for g in range(k + 1):
                    p = float(pk[av, g])
                    if p <= 0:
                        continue
                    h = np.array([1.0, av, g / k])
                    mk = (
                        flexible_design(
                            np.full(members.size, float(av)), np.full(members.size, g / k), xk
                        )
                        @ out_coef
                    )
                    lhs += p * members.size * np.outer(h, h)
                    rhs += p * h * mk.sum()
        coef = np.linalg.solve(lhs, rhs)
        self.diagnostics = {"max_weight": float(w[use].max())}
        return _msm_effects(data, coef)
