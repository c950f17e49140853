"""How much of the hidden confounder ``U`` a substitute confounder or a smooth proxy explains.

``R^2(U | F)`` is the in-sample coefficient of determination of ``U`` regressed on the columns
of ``F`` (with an intercept): ``1 - RSS / TSS``. :func:`proxy_r2` reports it for the proxies an
agent could build without ``U`` (issue 21):

* ``r2_u_latent``: the agent's substitute confounder ``Z`` (linear in ``Z``), when given;
* ``r2_u_ring_means``: the mean treatment (and coverage) of each hop ring ``1..r+2``;
* ``r2_u_spline_of_a``: a thin-plate spline of ``A`` on the coordinates (its fitted surface);
* ``r2_u_tps_basis``: the thin-plate-spline basis of the coordinates itself (ridge-penalized,
  smoothing parameter by GCV): the ceiling for any purely spatial smooth adjustment.

A substitute confounder helps beyond these only if ``r2_u_latent`` exceeds them.
"""

from __future__ import annotations

import numpy as np

from icml26.agents.spatial_causal.common import SpatialData

__all__ = ["r_squared", "proxy_r2"]


def r_squared(
    target: np.ndarray, features: np.ndarray | None, penalized: np.ndarray | None = None
) -> float:
    """``1 - RSS/TSS`` of least squares of ``target`` on ``[1, features]`` (+ a ridge-penalized
    block ``penalized`` with its smoothing parameter chosen by GCV). Rows with a non-finite
    feature are left out."""
    y = np.asarray(target, dtype=np.float64).reshape(-1)
    n = y.size
    blocks = [np.ones((n, 1))]
    if features is not None:
        f = np.asarray(features, dtype=np.float64)
        if f.shape[0] != n:
            raise ValueError(f"r_squared: features have {f.shape[0]} rows for {n} target values")
        blocks.append(f.reshape(n, -1))
    fixed = np.column_stack(blocks)
    pen = None if penalized is None else np.asarray(penalized, dtype=np.float64).reshape(n, -1)
    keep = np.isfinite(fixed).all(1) & np.isfinite(y)
    if pen is not None:
        keep &= np.isfinite(pen).all(1)
    if keep.sum() < 3:
        raise ValueError(f"r_squared: need at least 3 complete rows, got {int(keep.sum())}")
    y, fixed = y[keep], fixed[keep]
    tss = float(((y - y.mean()) ** 2).sum())
    if tss == 0:
        raise ValueError("r_squared: the target is constant, so R^2 is undefined")
    if pen is None:
        coef, *_ = np.linalg.lstsq(fixed, y, rcond=None)
        fit = fixed @ coef
    else:
        from icml26.agents.spatial_causal.regression import penalized_fit

        coef, _ = penalized_fit(fixed, pen[keep], y)
        fit = np.column_stack([fixed, pen[keep]]) @ coef
    return 1.0 - float(((y - fit) ** 2).sum()) / tss


def proxy_r2(
    data: SpatialData,
    confounder: np.ndarray,
    latent: np.ndarray | None = None,
    n_knots: int = 100,
    seed: int = 0,
) -> dict[str, float]:
    """R^2 of the hidden confounder on each proxy (see the module docstring), over all units."""
    from icml26.agents.spatial_causal.deconfounder import ring_features
    from icml26.agents.spatial_causal.regression import ThinPlateSpline, penalized_fit

    u = np.asarray(confounder, dtype=np.float64).reshape(-1)
    if u.size != data.n:
        raise ValueError(f"proxy_r2: confounder has {u.size} entries for {data.n} units")
    tps = ThinPlateSpline(data.coords, n_knots, seed=seed)
    lin, rad = tps.basis(data.coords)
    fixed = np.column_stack([np.ones(data.n), lin])
    coef_a, _ = penalized_fit(fixed, rad, data.a)
    a_surface = np.column_stack([fixed, rad]) @ coef_a
    out = {
        "r2_u_ring_means": r_squared(u, ring_features(data, data.radius + 2, include_own=False)),
        "r2_u_spline_of_a": r_squared(u, a_surface),
        "r2_u_tps_basis": r_squared(u, lin, penalized=rad),
    }
    if latent is not None:
        out["r2_u_latent"] = r_squared(u, latent)
    return out
