"""Uniform lower confidence bounds on every member's success rate, and the sample sizes they imply.

Every bound function is vectorized over hidden systems: ``tests`` and ``passes`` are ``(..., K)``
count arrays (tests run and passed per environment), the family is ``(m, K)``, and the result is
``(..., m)`` lower bounds in ``[0, 1]``. Derivations: docs/methods/capability_eval.md.

* :func:`stratified_bounds` -- the reference certificate: post-stratified estimate
  ``sum_e q_j(e) Ybar_e`` minus the Hoeffding radius ``sqrt(V_j log(m / delta) / 2)``,
  ``V_j = sum_e q_j(e)^2 / n_e`` (uniform over the m members by a union bound).
* :func:`iw_bounds` -- importance weighting on an i.i.d. design with a one-sided Bernstein radius.
* :func:`per_env_bounds` -- Clopper-Pearson (or Hoeffding) per environment at ``delta / K'``.
* :func:`pooled_bound` -- one Clopper-Pearson bound on the pooled rate (not uniform).
"""

from __future__ import annotations

import math

import numpy as np

from icml26.certify.chi2 import as_family

__all__ = [
    "check_level",
    "clopper_pearson_lower",
    "stratified_bounds",
    "iw_bounds",
    "per_env_bounds",
    "pooled_bound",
    "n_upper",
    "n_iw",
    "n_lower",
    "n_per_env",
    "n_pooled",
]


def check_level(delta: float, name: str = "delta") -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise ValueError(f"{name}: expected a probability in (0, 1), got {delta!r}")
    return float(delta)


def _check_margin(eps: float) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps <= 1:
        raise ValueError(f"eps: expected a margin in (0, 1], got {eps!r}")
    return float(eps)


def _counts(tests: np.ndarray, passes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(tests, dtype=np.float64)
    s = np.asarray(passes, dtype=np.float64)
    if n.shape[-1:] != (k,) or s.shape != n.shape:
        raise ValueError(
            f"tests and passes: expected equal shapes (..., {k}), got {n.shape} and {s.shape}"
        )
    if np.any(n < 0) or np.any(s < 0) or np.any(s > n) or not np.all(np.isfinite(n + s)):
        raise ValueError("tests and passes: expected finite counts with 0 <= passes <= tests")
    return n, s


def clopper_pearson_lower(
    passes: np.ndarray | float, tests: np.ndarray | float, delta: float | np.ndarray
) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound at level ``delta`` (0 where nothing passed or
    nothing was tested); elementwise, the ``low`` of ``stats.clopper_pearson_ci`` at
    confidence ``1 - 2 delta``."""
    from scipy import stats

    k, n, d = np.broadcast_arrays(
        np.asarray(passes, dtype=np.float64),
        np.asarray(tests, dtype=np.float64),
        np.asarray(delta, dtype=np.float64),
    )
    out = np.zeros(k.shape)
    ok = k > 0
    out[ok] = stats.beta.ppf(d[ok], k[ok], n[ok] - k[ok] + 1)
    return out


def stratified_bounds(
    members: np.ndarray, tests: np.ndarray, passes: np.ndarray, delta: float
) -> np.ndarray:
    """Uniform lower bounds ``L_j = sum_e q_j(e) Ybar_e - sqrt(V_j log(m / delta) / 2)``.

    Valid (all m bounds hold together with probability >= 1 - delta) for any allocation fixed
    before the outcomes; untested environments count as failures (``Ybar_e := 0``), so a member
    with mass the tests never reach cannot be certified above ``1 - `` that mass."""
    q = as_family(members)
    delta = check_level(delta)
    n, s = _counts(tests, passes, q.shape[1])
    tested = n > 0
    ybar = np.divide(s, n, out=np.zeros_like(s), where=tested)
    inv = np.divide(1.0, n, out=np.zeros_like(n), where=tested)
    est = ybar @ q.T
    var = inv @ (q**2).T
    radius = np.sqrt(var * math.log(q.shape[0] / delta) / 2.0)
    return np.clip(est - radius, 0.0, 1.0)


def iw_bounds(
    members: np.ndarray,
    design: np.ndarray,
    tests: np.ndarray,
    passes: np.ndarray,
    delta: float,
) -> np.ndarray:
    """Importance-weighted bounds for tests drawn i.i.d. from ``design`` (``tests`` are the
    multinomial counts of the draws, ``passes`` their successes):
    ``mu_hat_j = (1/n) sum_e w_j(e) S_e`` with ``w_j = q_j / p``, minus the one-sided Bernstein
    radius ``a + sqrt(a^2 + 2 (1 + chi^2_j) l / n)``, ``a = l / (3 n)``, ``l = log(m / delta)``
    (``Z = mu - w Y <= 1`` and ``Var Z <= 1 + chi^2``), or Hoeffding's ``max_e w_j(e)
    sqrt(l / (2 n))`` when smaller (both radii are fixed before the data, so taking the smaller
    keeps the level). A member's mass off the design's support is never weighted in, so it
    counts as failures."""
    q = as_family(members)
    delta = check_level(delta)
    p = np.asarray(design, dtype=np.float64)
    n_e, s = _counts(tests, passes, q.shape[1])
    if p.shape != (q.shape[1],):
        raise ValueError(f"design: expected shape ({q.shape[1]},), got {p.shape}")
    pos = p > 0
    w = np.zeros_like(q)
    w[:, pos] = q[:, pos] / p[pos]  # (m, K)
    n = np.maximum(n_e.sum(axis=-1, keepdims=True), 1.0)
    est = (s @ w.T) / n
    second = (q[:, pos] ** 2 / p[pos]).sum(axis=1)  # 1 + chi^2 of the covered part
    ell = math.log(q.shape[0] / delta)
    a = ell / (3.0 * n)
    bernstein = a + np.sqrt(a * a + 2.0 * second * ell / n)
    hoeffding = w.max(axis=1) * np.sqrt(ell / (2.0 * n))  # w Y in [0, max w]
    return np.clip(est - np.minimum(bernstein, hoeffding), 0.0, 1.0)


def per_env_bounds(
    members: np.ndarray,
    tests: np.ndarray,
    passes: np.ndarray,
    delta: float,
    method: str = "clopper-pearson",
) -> np.ndarray:
    """Per-environment bounds at ``delta / K'`` (``K'`` = environments with tests; the
    allocation is fixed in advance), combined as ``L_j = sum_e q_j(e) L_e``: valid for every
    member at once because all K' environment bounds hold together."""
    q = as_family(members)
    delta = check_level(delta)
    n, s = _counts(tests, passes, q.shape[1])
    tested = n > 0
    k_prime = np.maximum(tested.sum(axis=-1, keepdims=True), 1)
    level = delta / k_prime
    if method == "clopper-pearson":
        env_lb = clopper_pearson_lower(s, np.where(tested, n, 1.0), np.broadcast_to(level, n.shape))
    elif method == "hoeffding":
        ybar = np.divide(s, n, out=np.zeros_like(s), where=tested)
        rad = np.sqrt(np.log(1.0 / level) / (2.0 * np.where(tested, n, 1.0)))
        env_lb = np.clip(ybar - rad, 0.0, 1.0)
    else:
        raise ValueError(f"method: expected 'clopper-pearson' or 'hoeffding', got {method!r}")
    env_lb = np.where(tested, env_lb, 0.0)
    return np.clip(env_lb @ q.T, 0.0, 1.0)


def pooled_bound(tests: np.ndarray, passes: np.ndarray, delta: float) -> np.ndarray:
    """One-sided Clopper-Pearson bound on the pooled success rate ``sum passes / sum tests``.

    It bounds the success rate under the design that produced the tests, NOT each member's:
    reporting it for every member is the pooled test the suite shows to be invalid."""
    delta = check_level(delta)
    n = np.asarray(tests, dtype=np.float64).sum(axis=-1)
    s = np.asarray(passes, dtype=np.float64).sum(axis=-1)
    return clopper_pearson_lower(s, np.maximum(n, 1.0), delta)


# ----------------------------------------------------------------------------- sample sizes
def n_upper(radius: float, m: int, eps: float, delta: float) -> int:
    """Tests the stratified certificate needs: ``ceil(2 (1 + R) log(m / delta) / eps^2)``; with
    them (allocation ``ceil(n p)``), every claim true with margin ``eps`` is certified with
    probability >= 1 - delta."""
    eps, delta = _check_margin(eps), check_level(delta)
    if not math.isfinite(radius):
        raise ValueError(
            "n_upper: the radius is infinite (overlap fails): no finite test certifies"
        )
    return math.ceil(2.0 * (1.0 + max(radius, -1.0)) * math.log(m / delta) / eps**2)


def n_iw(radius: float, m: int, eps: float, delta: float, wmax: float | None = None) -> int:
    """Tests the IW certificate needs for margin ``eps``: the smallest n with twice its radius
    below ``eps`` (Bernstein; or Hoeffding with weights up to ``wmax`` when that needs fewer)."""
    eps, delta = _check_margin(eps), check_level(delta)
    if not math.isfinite(radius):
        raise ValueError("n_iw: the radius is infinite (overlap fails): no finite test certifies")
    ell = math.log(m / delta)
    # 2 r(n) <= eps with r = a + sqrt(a^2 + b / n), a = ell / (3 n), b = 2 (1 + R) ell:
    # (eps/2 - a)^2 >= a^2 + b/n  <=>  eps^2/4 - eps a >= b / n  <=>  n >= (b + eps ell / 3) * 4 / eps^2
    b = 2.0 * (1.0 + radius) * ell
    n = math.ceil(4.0 * (b + eps * ell / 3.0) / eps**2)
    if wmax is not None:
        n = min(n, math.ceil(2.0 * wmax**2 * ell / eps**2))
    return n


def n_lower(radius: float, tau: float, eps: float, delta: float) -> float:
    """Le Cam / Bretagnolle-Huber lower bound on the tests any protocol with this design needs:
    ``(1 + R) c (1 - c) log(1 / (4 delta)) / eps^2``, ``c = tau + eps`` (0 when ``delta >= 1/4``)."""
    eps, delta = _check_margin(eps), check_level(delta)
    c = tau + eps
    if not 0 < c < 1:
        raise ValueError(f"n_lower: tau + eps must lie in (0, 1), got {c}")
    return max(0.0, (1.0 + radius) * c * (1.0 - c) * math.log(1.0 / (4.0 * delta)) / eps**2)


def n_per_env(k: int, eps: float, delta: float) -> int:
    """Tests for per-environment Hoeffding bounds at ``delta / k`` on ``k`` environments, each
    within ``eps / 2`` of its rate: ``k ceil(2 log(k / delta) / eps^2)``."""
    eps, delta = _check_margin(eps), check_level(delta)
    return k * math.ceil(2.0 * math.log(k / delta) / eps**2)


def n_pooled(eps: float, delta: float) -> int:
    """Tests for one Hoeffding bound within ``eps / 2``: ``ceil(2 log(1 / delta) / eps^2)``."""
    eps, delta = _check_margin(eps), check_level(delta)
    return math.ceil(2.0 * math.log(1.0 / delta) / eps**2)
