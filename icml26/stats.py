"""Honest statistics shared by the harness, the leaderboard and the results write-ups.

IQM with stratified-bootstrap confidence intervals and probability of improvement come from
rliable (Agarwal et al. 2021); plain percentile bootstraps and paired tests are here so every
family reports intervals the same way. Every function takes a ``seed``: the same inputs and
seed give the same interval.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "iqm",
    "iqm_ci",
    "interval_estimates",
    "bootstrap_ci",
    "mean_ci",
    "paired_comparison",
    "probability_of_improvement",
]


@contextlib.contextmanager
def _rliable_seeded(seed: int) -> Iterator[np.random.RandomState]:
    """rliable's StratifiedBootstrap draws its indices from NumPy's *global* generator (its
    ``random_state`` only reaches arch), so seed that for the call and restore it afterwards;
    arch's RandomState deprecation warning is silenced (the result is the same)."""
    state = np.random.get_state()
    np.random.seed(seed % 2**32)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield np.random.RandomState(seed % 2**32)
    finally:
        np.random.set_state(state)


def iqm(x: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% (scipy's ``trim_mean(x, 0.25)``)."""
    from scipy.stats import trim_mean

    arr = np.asarray(x, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("iqm: no values")
    return float(trim_mean(arr, 0.25))


def interval_estimates(
    scores: Mapping[str, np.ndarray],
    func: Callable[[np.ndarray], np.ndarray],
    reps: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """rliable's ``get_interval_estimates`` (stratified bootstrap over runs), seeded.

    ``scores[name]`` has shape (runs, tasks). Returns (point estimates, intervals (2, k)).
    """
    from rliable import library as rly

    with _rliable_seeded(seed) as rs:
        return rly.get_interval_estimates(
            {k: np.asarray(v, dtype=float) for k, v in scores.items()},
            func,
            reps=reps,
            confidence_interval_size=confidence,
            random_state=rs,
        )


def iqm_ci(
    values: Sequence[float] | np.ndarray, reps: int = 2000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float]:
    """IQM of per-seed values with a stratified-bootstrap interval: ``(iqm, low, high)``.

    With a single value the interval collapses to the value (no uncertainty can be claimed
    from one seed, and the table shows n = 1 next to it).
    """
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("iqm_ci: no values")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"iqm_ci: values must be finite, got {arr.tolist()}")
    if arr.size == 1 or np.all(arr == arr[0]):
        v = float(arr[0]) if arr.size == 1 else float(arr[0])
        return v, v, v
    from rliable import metrics

    point, ci = interval_estimates(
        {"x": arr[:, None]},
        lambda s: np.array([metrics.aggregate_iqm(s)]),
        reps=reps,
        seed=seed,
        confidence=confidence,
    )
    return float(point["x"][0]), float(ci["x"][0, 0]), float(ci["x"][1, 0])


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    reps: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """Percentile bootstrap of ``statistic`` over the first axis: ``(estimate, low, high)``."""
    arr = np.asarray(values, dtype=float)
    if arr.shape[0] == 0:
        raise ValueError("bootstrap_ci: no values")
    est = float(statistic(arr))
    if arr.shape[0] == 1:
        return est, est, est
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.shape[0], size=(reps, arr.shape[0]))
    boots = np.array([statistic(arr[i]) for i in idx], dtype=float)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return est, float(lo), float(hi)


def mean_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean with a Student-t interval: ``(mean, low, high)``."""
    from scipy import stats

    arr = np.asarray(values, dtype=float).ravel()
    m = float(arr.mean())
    if arr.size < 2:
        return m, m, m
    half = float(stats.t.ppf(0.5 + confidence / 2, arr.size - 1) * arr.std(ddof=1) / np.sqrt(arr.size))
    return m, m - half, m + half


def paired_comparison(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, seed: int = 0
) -> dict[str, Any]:
    """Compare paired per-seed values ``a`` and ``b`` (same seeds, same order).

    Returns the mean difference a - b with a bootstrap 95% interval, the paired t-test and
    Wilcoxon signed-rank p-values (two-sided), and the number of pairs.
    """
    from scipy import stats

    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired_comparison: shapes differ, {x.shape} vs {y.shape}")
    d = x - y
    est, lo, hi = bootstrap_ci(d, np.mean, seed=seed)
    out: dict[str, Any] = {"n": int(d.size), "mean_diff": est, "ci_low": lo, "ci_high": hi}
    if d.size >= 2 and np.any(d != d[0]):
        out["t_pvalue"] = float(stats.ttest_rel(x, y).pvalue)
    else:
        out["t_pvalue"] = float("nan") if np.all(d == 0) or d.size < 2 else 0.0
    if d.size >= 2 and np.any(d != 0):
        out["wilcoxon_pvalue"] = float(stats.wilcoxon(x, y).pvalue)
    else:
        out["wilcoxon_pvalue"] = float("nan")
    return out


def probability_of_improvement(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, reps: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """P(X > Y) (Mann-Whitney, ties count half) for runs of two algorithms, with an rliable
    stratified-bootstrap interval: ``(estimate, low, high)``. Higher values are assumed better."""
    from rliable import metrics

    xa = np.asarray(x, dtype=float).ravel()[:, None]
    ya = np.asarray(y, dtype=float).ravel()[:, None]
    est = float(metrics.probability_of_improvement(xa, ya))
    if min(xa.shape[0], ya.shape[0]) < 2:
        return est, est, est
    from rliable import library as rly

    with _rliable_seeded(seed) as rs:
        bs = rly.StratifiedIndependentBootstrap(xa, ya, random_state=rs)
        ci = bs.conf_int(
            lambda u, v: np.array([metrics.probability_of_improvement(u, v)]), reps=reps,
            method="percentile",
        )
    return est, float(ci[0, 0]), float(ci[1, 0])
