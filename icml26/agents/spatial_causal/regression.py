"""Regression baselines for spatial confounding with interference (Spatial-CI's baseline list).

* :class:`DifferenceInMeans` -- unadjusted contrasts (no covariates, no confounding adjustment).
* :class:`OLS` -- ``Y ~ A + X + AX``; ignores interference, so its spillover estimate is 0.
* :class:`OLSExposure` -- adds the exposure mapping ``e = W A`` (share of treated neighbours)
  and ``eX``: the "exposure mapping" baseline of Spatial-CI.
* :class:`SpatialRegression` -- ``Spatial`` and ``Spatial+`` (Dupont, Wood & Augustin 2022):
  a low-rank thin-plate spline of the coordinates in the outcome model; Spatial+ first removes
  the spatial trend from the treatment and the exposure and regresses on their residuals.
* :class:`SpatialLag2SLS` -- spatial two-stage least squares lag model (Kelejian & Prucha 1998;
  PySAL ``GM_Lag``), with ``slx=True`` the spatial Durbin model (``WA``, ``WX`` added).
* :class:`GMError` -- spatial error model by generalized moments and feasible GLS (PySAL
  ``GM_Error``).
* :class:`OracleRegression` -- sees the hidden confounder ``U`` (reference only, never ranked).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from icml26.agents.spatial_causal.common import (
    EffectAgent,
    EffectEstimate,
    SpatialData,
    flexible_design,
    g_formula,
    lstsq,
)

__all__ = [
    "DifferenceInMeans",
    "GMError",
    "kelejian_prucha_lambda",
    "OLS",
    "OLSExposure",
    "OracleRegression",
    "SpatialRegression",
    "SpatialLag2SLS",
    "ThinPlateSpline",
    "spatial_regression_effects",
]


class DifferenceInMeans(EffectAgent):
    """DE: mean(Y | A = 1) - mean(Y | A = 0); SE: unadjusted slope of Y on the exposure (times
    the exposure change 0 -> all neighbours treated). ERF from the same unadjusted fit."""

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        s = data.scored
        a, y = data.a[s], data.y[s]
        if a.min() == a.max():
            raise ValueError("difference in means needs treated and untreated scored units")
        de = float(y[a == 1].mean() - y[a == 0].mean())
        slope, icpt = np.polyfit(data.e[s], y, 1)
        se = float(slope * data.e_all[s].mean())
        erf = icpt + slope * data.e_levels[:, s].mean(axis=1)
        return EffectEstimate(de, se, erf)


class OLS(EffectAgent):
    """``Y ~ 1 + A + X + A X`` over all units; no interference term, so SE = 0."""

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        def design(a: np.ndarray, e: np.ndarray) -> np.ndarray:
            return np.column_stack([np.ones_like(a), a, data.x, a[:, None] * data.x])

        coef = lstsq(design(data.a, data.e), data.y)
        return g_formula(data, lambda a, e: design(a, e) @ coef)


class OLSExposure(EffectAgent):
    """``Y ~ 1 + A + e + X + A X + e X`` with ``e`` the share of treated neighbours."""

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        coef = lstsq(flexible_design(data.a, data.e, data.x), data.y)
        return g_formula(data, lambda a, e: flexible_design(a, e, data.x) @ coef)


class OracleRegression(EffectAgent):
    """Reference only, never ranked: OLS with exposure plus the hidden confounder ``U`` read from
    ``info["confounder"]`` (a cubic in U and in its neighbourhood mean, their interactions with A
    and e, and e^2). Near-zero error when the simulator's outcome is in this span."""

    uses_hidden_confounder = True

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        if "confounder" not in info:
            raise ValueError(
                "the oracle needs info['confounder']: make the env with reveal_confounder=True "
                "(the spatial_causal run_trial does this for agents with uses_hidden_confounder)"
            )
        u = np.asarray(info["confounder"], dtype=np.float64).reshape(-1)
        if u.size != data.n:
            raise ValueError(f"info['confounder'] has {u.size} entries for {data.n} units")
        from icml26.envs.spatial_causal import graphs

        u_nb = graphs.exposure_weights(graphs.hop_ball(data.adj, 2), "mean") @ u
        z = np.column_stack([u, u_nb])

        def design(a: np.ndarray, e: np.ndarray) -> np.ndarray:
            return np.column_stack([flexible_design(a, e, data.x, z), e**2])

        coef = lstsq(design(data.a, data.e), data.y)
        return g_formula(data, lambda a, e: design(a, e) @ coef)


# ----------------------------------------------------------------------------- thin-plate splines


class ThinPlateSpline:
    """Low-rank thin-plate regression spline in 2-D (Ruppert, Wand & Carroll 2003, ch. 13.5).

    Basis ``[x, y, eta(|s - k_j|) Omega^{-1/2}]`` with ``eta(r) = r^2 log r``, knots ``k_j`` from
    k-means (scipy ``kmeans2``, k-means++ start, seeded), ``Omega = [eta(|k_i - k_j|)]``; the
    radial part is ridge-penalized with the smoothing parameter chosen by generalized
    cross-validation.
    """

    def __init__(self, coords: np.ndarray, n_knots: int = 100, seed: int = 0) -> None:
        from scipy.cluster.vq import kmeans2

        c = np.asarray(coords, dtype=np.float64)
        self.centre, self.scale = c.mean(0), float(c.std()) or 1.0
        cs = (c - self.centre) / self.scale
        k = int(min(n_knots, max(3, len(np.unique(cs, axis=0)) - 1)))
        knots, labels = kmeans2(cs, k, minit="++", seed=np.random.default_rng(seed))
        self.knots = knots[np.unique(labels)]  # drop empty clusters
        omega = self._eta(self._dist(self.knots, self.knots))
        u, d, vt = np.linalg.svd(omega)
        d = np.maximum(d, d.max() * 1e-10)
        self.omega_inv_sqrt = (u / np.sqrt(d)) @ vt

    @staticmethod
    def _dist(p: np.ndarray, q: np.ndarray) -> np.ndarray:
        return np.sqrt(((p[:, None, :] - q[None, :, :]) ** 2).sum(-1))

    @staticmethod
    def _eta(r: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = r**2 * np.log(r)
        return np.nan_to_num(out)

    def basis(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(unpenalized linear part (n, 2), penalized radial part (n, k))."""
        cs = (np.asarray(coords, dtype=np.float64) - self.centre) / self.scale
        return cs, self._eta(self._dist(cs, self.knots)) @ self.omega_inv_sqrt


def penalized_fit(
    fixed: np.ndarray, penalized: np.ndarray, y: np.ndarray, lambdas: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """Ridge on the ``penalized`` block only, lambda by GCV: ``(coef, lambda)``."""
    m = np.column_stack([fixed, penalized])
    mtm, mty = m.T @ m, m.T @ y
    d = np.concatenate([np.zeros(fixed.shape[1]), np.ones(penalized.shape[1])])
    n = y.size
    best: tuple[float, np.ndarray, float] | None = None
    for lam in lambdas if lambdas is not None else np.logspace(-6, 4, 21):
        a = mtm + lam * np.diag(d) + 1e-10 * np.eye(d.size)
        try:
            coef = np.linalg.solve(a, mty)
            edf = float(np.trace(np.linalg.solve(a, mtm)))
        except np.linalg.LinAlgError:
            continue
        rss = float(((y - m @ coef) ** 2).sum())
        gcv = n * rss / max(n - edf, 1.0) ** 2
        if best is None or gcv < best[0]:
            best = (gcv, coef, float(lam))
    if best is None:
        raise np.linalg.LinAlgError("penalized spline fit failed for every smoothing parameter")
    return best[1], best[2]


def spatial_regression_effects(
    data: SpatialData,
    plus: bool = True,
    n_knots: int = 100,
    seed: int = 0,
    extra: np.ndarray | None = None,
) -> EffectEstimate:
    """Spatial / Spatial+ regression with exposure mapping (``extra``: further adjustment
    columns, e.g. a substitute confounder; they enter like covariates)."""
    tps = ThinPlateSpline(data.coords, n_knots, seed=seed)
    lin, rad = tps.basis(data.coords)
    ones = np.ones((data.n, 1))
    a, e = data.a, data.e
    if plus:
        sp_fixed = np.column_stack([ones, lin])
        ca, _ = penalized_fit(sp_fixed, rad, a)
        ce, _ = penalized_fit(sp_fixed, rad, e)
        sp_design = np.column_stack([sp_fixed, rad])
        a = a - sp_design @ ca
        e = e - sp_design @ ce
    cov = data.x if extra is None else np.column_stack([data.x, extra])
    fixed = np.column_stack([ones, a, e, cov, lin])
    coef, _ = penalized_fit(fixed, rad, data.y)
    beta_a, beta_e = float(coef[1]), float(coef[2])
    s = data.scored
    se = beta_e * float(data.e_all[s].mean())
    # ERF: observed outcomes moved along the fitted exposure slope to each level's exposure
    erf = np.array([float(np.mean((data.y + beta_e * (lv - data.e))[s])) for lv in data.e_levels])
    return EffectEstimate(beta_a, se, erf)


class SpatialRegression(EffectAgent):
    """Spatial (``plus=False``) or Spatial+ (``plus=True``) regression with exposure mapping.

    Spatial: ``Y ~ A + e + X + f(s)``. Spatial+: ``A = g_A(s) + r_A`` and ``e = g_e(s) + r_e``
    first (thin-plate splines), then ``Y ~ r_A + r_e + X + f(s)``; DE is the coefficient of the
    treatment term, SE the exposure coefficient times the exposure change.
    """

    def __init__(self, plus: bool = True, n_knots: int = 100, radius: int | None = None) -> None:
        super().__init__(radius)
        self.plus, self.n_knots = bool(plus), int(n_knots)

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        return spatial_regression_effects(data, self.plus, self.n_knots, self._rng_seed())


# ----------------------------------------------------------------------------- spatial econometrics


def _two_sls(y: np.ndarray, regressors: np.ndarray, instruments: np.ndarray) -> np.ndarray:
    """2SLS: project the regressors on the instruments, regress y on the projections."""
    proj, *_ = np.linalg.lstsq(instruments, regressors, rcond=None)
    fitted = instruments @ proj
    coef, *_ = np.linalg.lstsq(fitted, y, rcond=None)
    return coef


class SpatialLag2SLS(EffectAgent):
    """Spatial two-stage least squares lag model ``Y = rho W Y + A b + X c (+ W A t + W X d) + u``.

    ``W`` is the row-normalized exposure mapping over the radius; ``WY`` is instrumented by
    ``W Z, ..., W^{w_lags} Z`` of the exogenous regressors ``Z`` (Kelejian & Prucha 1998, as in
    PySAL ``spreg.GM_Lag``). ``slx=True`` adds ``WA`` and ``WX``: the spatial Durbin model.
    Effects are the model's: ``S = (I - rho W)^{-1} (b I + t W)``; DE = mean_i S_ii and
    SE = mean_i sum_{j in N_r(i)} S_ij over the scored units (dense inverse; n <= 6000). A
    2SLS estimate of rho outside (-0.99, 0.99) is clipped for the effects and flagged in
    ``diagnostics`` (a smooth unmeasured confounder pushes rho^ towards and past 1).
    """

    MAX_UNITS = 6000
    RHO_MAX = 0.99

    def __init__(self, slx: bool = False, w_lags: int = 1, radius: int | None = None) -> None:
        super().__init__(radius)
        if w_lags < 1:
            raise ValueError(f"w_lags must be >= 1, got {w_lags}")
        self.slx, self.w_lags = bool(slx), int(w_lags)

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        n = data.n
        if n > self.MAX_UNITS:
            raise ValueError(
                f"{type(self).__name__} computes (I - rho W)^-1 densely; n = {n} > {self.MAX_UNITS}"
            )
        w = data.w
        exog = np.column_stack([data.a, data.x])
        if self.slx:
            exog = np.column_stack([exog, w @ exog])
        ones = np.ones((n, 1))
        wy = w @ data.y
        lagged, cur = [], np.column_stack([data.a, data.x])
        start = (
            2 if self.slx else 1
        )  # with slx, W Z is already a regressor: instrument with W^2 Z...
        for k in range(1, start + self.w_lags):
            cur = w @ cur
            if k >= start:
                lagged.append(cur)
        instruments = np.column_stack([ones, exog, *lagged])
        regressors = np.column_stack([ones, exog, wy])
        coef = _two_sls(data.y, regressors, instruments)
        self.rho = rho_hat = float(coef[-1])
        # 2SLS does not constrain rho; beyond the stationarity bound (I - rho W)^-1 is not the
        # model's impact matrix, so effects use rho clipped to +-RHO_MAX (recorded in diagnostics)
        rho = float(np.clip(rho_hat, -self.RHO_MAX, self.RHO_MAX))
        self.diagnostics = {"rho": rho_hat, "rho_clipped": float(rho != rho_hat)}
        b = float(coef[1])
        t = float(coef[2 + data.x.shape[1]]) if self.slx else 0.0
        m = np.linalg.inv(np.eye(n) - rho * w.toarray())
        s_mat = b * m + t * (sp.csr_matrix(m) @ w).toarray() if t else b * m
        sc = data.scored
        de = float(np.mean(np.diag(s_mat)[sc]))
        nb = (data.ball > 0).astype(np.float64)
        se_i = np.asarray(nb.multiply(s_mat).sum(axis=1)).ravel()
        se = float(np.mean(se_i[sc]))
        # ERF: Y_i moves by sum_j S_ij (pattern_j - a_j) when unit i's neighbours take the level's
        # pattern (the first floor(q k) by index treated), as the simulator's per-unit counterfactual
        ball = sp.csr_matrix(data.ball)
        rows = np.repeat(np.arange(n), np.diff(ball.indptr))
        rank = np.arange(rows.size) - ball.indptr[rows]
        k = np.diff(ball.indptr)[rows]
        s_vals = s_mat[rows, ball.indices]
        erf = []
        for q in data.erf_q:
            pattern = (rank < np.floor(q * k + 1e-9)).astype(np.float64)
            shift = np.bincount(
                rows, weights=s_vals * (pattern - data.a[ball.indices]), minlength=n
            )
            erf.append(float(np.mean((data.y + shift)[sc])))
        return EffectEstimate(de, se, np.array(erf))


# ----------------------------------------------------------------------------- spatial error model


def kelejian_prucha_lambda(
    u: np.ndarray, w: sp.csr_matrix, bound: float = 0.99
) -> tuple[float, float]:
    """Generalized-moments estimate of ``lambda`` in ``u = lambda W u + eps`` (Kelejian & Prucha
    1999) from regression residuals ``u``: ``(lambda, sigma^2)``.

    The three moments ``E[eps'eps]/n = sigma^2``, ``E[(W eps)'(W eps)]/n = sigma^2 tr(W'W)/n`` and
    ``E[(W eps)'eps]/n = 0`` are linear in ``(lambda, lambda^2, sigma^2)``; ``sigma^2`` is profiled
    out by least squares and ``lambda`` is found on ``[-bound, bound]`` (bounded scalar search).
    """
    from scipy.optimize import minimize_scalar

    n = u.size
    ub = w @ u
    ubb = w @ ub
    tr = float(w.multiply(w).sum())  # tr(W'W) = sum of squared entries
    g = np.array([u @ u, ub @ ub, u @ ub]) / n
    big = (
        np.array(
            [
                [2 * u @ ub, -(ub @ ub), n],
                [2 * ub @ ubb, -(ubb @ ubb), tr],
                [u @ ubb + ub @ ub, -(ub @ ubb), 0.0],
            ]
        )
        / n
    )
    g3 = big[:, 2]

    def resid(lam: float) -> tuple[np.ndarray, float]:
        r = g - big[:, :2] @ np.array([lam, lam * lam])
        s2 = float(g3 @ r / (g3 @ g3))
        return r - g3 * s2, s2

    res = minimize_scalar(
        lambda lam: float(np.sum(resid(lam)[0] ** 2)),
        bounds=(-bound, bound),
        method="bounded",
        options={"xatol": 1e-8},
    )
    lam = float(res.x)
    return lam, resid(lam)[1]


class GMError(EffectAgent):
    """Spatial error model ``Y = b0 + A b + e t + X c + u``, ``u = lambda W u + eps`` (PySAL
    ``spreg.GM_Error``; Spatial-CI's ``gmerror`` baseline): OLS residuals give ``lambda`` by
    Kelejian-Prucha generalized moments, then feasible GLS on the spatially filtered data
    ``(I - lambda W) Y`` and ``(I - lambda W) [1, A, e, X]``. The error process carries no
    treatment effect, so DE = b and SE = t x (exposure change 0 -> all neighbours treated).
    """

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        w = data.w
        z = np.column_stack([np.ones(data.n), data.a, data.e, data.x])
        beta = lstsq(z, data.y)
        lam, sigma2 = kelejian_prucha_lambda(data.y - z @ beta, w)
        self.diagnostics = {"lambda": lam, "sigma2": sigma2}
        beta = lstsq(z - lam * (w @ z), data.y - lam * (w @ data.y))
        s = data.scored
        b_a, b_e = float(beta[1]), float(beta[2])
        erf = np.array([float(np.mean((data.y + b_e * (lv - data.e))[s])) for lv in data.e_levels])
        return EffectEstimate(b_a, b_e * float(data.e_all[s].mean()), erf)
