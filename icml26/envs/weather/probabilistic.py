"""Ensemble scores and energy spectra for forecasts, in plain NumPy (WeatherBench 2 conventions).

* :func:`crps_ensemble` -- CRPS of an m-member ensemble, ``E|X - y| - 1/2 E|X - X'|``, computed
  from the sorted members in O(m log m); ``fair=True`` (the default, WeatherBench 2's
  ``CRPSEnsemble``) divides the spread term by ``m (m - 1)`` instead of ``m^2``, which makes it
  unbiased for the CRPS of the distribution the members are drawn from (Ferro 2014).
* :func:`crps_gaussian` -- the closed form for a normal forecast (Gneiting et al. 2005), the
  reference the ensemble formula is tested against.
* :func:`spread_skill_ratio` -- ``sqrt(mean w var_ens) / sqrt(mean w (mean_ens - y)^2)`` with the
  finite-ensemble factor ``sqrt((m + 1) / m)`` (Fortin et al. 2014): 1 for a calibrated ensemble,
  < 1 under-dispersive.
* :func:`zonal_energy_spectrum` -- per latitude, the energy of each zonal wavenumber k along the
  latitude circle, normalized so that the energies sum to the circle's mean square (Parseval);
  the standard diagnostic of blurring (a smooth forecast loses energy at high k).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def crps_ensemble(ensemble: Any, obs: Any, axis: int = 0, fair: bool = True) -> np.ndarray:
    """CRPS of the ensemble (members along ``axis``) against ``obs`` (broadcast without that axis)."""
    x = np.moveaxis(np.asarray(ensemble, dtype=float), axis, 0)
    y = np.asarray(obs, dtype=float)
    m = x.shape[0]
    if m < 1 or (fair and m < 2):
        raise ValueError(f"crps_ensemble: need at least {2 if fair else 1} members, got {m}")
    skill = np.abs(x - y[None]).mean(axis=0)
    xs = np.sort(x, axis=0)
    i = np.arange(1, m + 1, dtype=float).reshape((m,) + (1,) * (x.ndim - 1))
    pair_sum = 2.0 * np.sum((2.0 * i - m - 1.0) * xs, axis=0)  # sum over i, j of |x_i - x_j|
    spread = pair_sum / (m * (m - 1) if fair else m * m)
    return skill - 0.5 * spread


def crps_gaussian(mu: Any, sigma: Any, obs: Any) -> np.ndarray:
    """CRPS of ``N(mu, sigma^2)`` at ``obs``: ``sigma [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)]``."""
    from scipy.stats import norm

    s = np.asarray(sigma, dtype=float)
    if np.any(s <= 0):
        raise ValueError("crps_gaussian: sigma must be > 0")
    z = (np.asarray(obs, dtype=float) - np.asarray(mu, dtype=float)) / s
    return s * (z * (2.0 * norm.cdf(z) - 1.0) + 2.0 * norm.pdf(z) - 1.0 / math.sqrt(math.pi))


def spread_skill_ratio(ensemble: Any, obs: Any, weights: Any = None, axis: int = 0) -> float:
    """Spread-skill ratio of an ensemble (members along ``axis``) over every other axis, with
    optional ``weights`` (e.g. latitude weights) broadcast against ``obs``."""
    x = np.moveaxis(np.asarray(ensemble, dtype=float), axis, 0)
    y = np.asarray(obs, dtype=float)
    m = x.shape[0]
    if m < 2:
        raise ValueError(f"spread_skill_ratio: need at least 2 members, got {m}")
    w = (
        np.ones_like(y)
        if weights is None
        else np.broadcast_to(np.asarray(weights, dtype=float), y.shape)
    )
    var = x.var(axis=0, ddof=1)
    err2 = (x.mean(axis=0) - y) ** 2
    spread = math.sqrt(float(np.sum(w * var) / np.sum(w)))
    skill = math.sqrt(float(np.sum(w * err2) / np.sum(w)))
    return math.sqrt((m + 1) / m) * spread / skill


def zonal_energy_spectrum(field: Any, longitude_axis: int = -1) -> np.ndarray:
    """Energy per zonal wavenumber ``k = 0 .. n // 2`` along ``longitude_axis`` (other axes kept):
    ``E_0 = |f_0|^2``, ``E_k = 2 |f_k|^2`` (the +-k pair; ``E_{n/2} = |f_{n/2}|^2`` for even n),
    ``f_k`` the DFT divided by n, so ``sum_k E_k = mean(field^2)`` along the circle."""
    x = np.moveaxis(np.asarray(field, dtype=float), longitude_axis, -1)
    n = x.shape[-1]
    f = np.fft.rfft(x, axis=-1) / n
    e = np.abs(f) ** 2
    e[..., 1:] *= 2.0
    if n % 2 == 0:
        e[..., -1] /= 2.0
    return e


__all__ = ["crps_ensemble", "crps_gaussian", "spread_skill_ratio", "zonal_energy_spectrum"]
