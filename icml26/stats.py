"""Statistics shared by the harness, the leaderboard and the results pages (on ``scipy.stats``).

Single task: :func:`iqm_ci` and :func:`mean_ci` (BCa bootstrap, or Student-t for the mean),
:func:`wilson_ci` / :func:`clopper_pearson_ci` for rates, :func:`paired_test` (paired bootstrap
interval and sign-flip permutation p) and :func:`mcnemar_exact` when arms share units,
:func:`holm` when a page reports several tests. Across tasks: :func:`interval_estimates`
(stratified bootstrap over runs, rliable's scheme), :func:`performance_profile` and
:func:`probability_of_improvement`.

Every random function takes a ``seed`` and draws from one ``numpy.random.Generator`` made for
that call: same inputs and seed, same interval; no global state is read or written.
Degenerate inputs (one value, all values equal) give an interval collapsed onto the estimate
with a ``note`` saying why, never an interval that claims precision it does not have.
docs/evaluation_protocol.md says which function answers which question.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "Interval",
    "PairedResult",
    "iqm",
    "iqm_ci",
    "mean_ci",
    "bootstrap_ci",
    "wilson_ci",
    "clopper_pearson_ci",
    "paired_test",
    "mcnemar_exact",
    "holm",
    "interval_estimates",
    "performance_profile",
    "probability_of_improvement",
    "paired_comparison",
    "Plateau",
    "plateau_test",
    "loglog_slope",
    "slope_test",
]

ArrayLike = Sequence[float] | np.ndarray

#: largest n for which :func:`paired_test` enumerates all 2**n sign flips
EXACT_MAX_N = 16


class _IntervalBase(NamedTuple):
    estimate: float
    low: float
    high: float


class Interval(_IntervalBase):
    """``(estimate, low, high)``; ``note`` says when the interval is degenerate or approximate,
    ``n`` is the sample size and ``method`` how the bounds were computed."""

    note: str = ""
    n: int = 0
    method: str = ""

    def __new__(
        cls,
        estimate: float,
        low: float,
        high: float,
        *,
        note: str = "",
        n: int = 0,
        method: str = "",
    ) -> Interval:
        self = super().__new__(cls, float(estimate), float(low), float(high))
        self.note, self.n, self.method = note, int(n), method
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[float, ...], dict[str, Any]]:
        return (tuple(self), {"note": self.note, "n": self.n, "method": self.method})

    @property
    def width(self) -> float:
        return self.high - self.low

    def format(self, digits: int = 3) -> str:
        """``"est [low, high]"`` with ``digits`` significant digits."""
        if self.low == self.high == self.estimate:
            return f"{self.estimate:.{digits}g} (no interval: {self.note or 'degenerate'})"
        return f"{self.estimate:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}]"


class _PairedBase(NamedTuple):
    diff: float
    low: float
    high: float
    p_value: float
    n: int


class PairedResult(_PairedBase):
    """Paired comparison of ``a`` and ``b``: ``diff`` = statistic of a - b with a paired-bootstrap
    interval ``[low, high]``, the two-sided sign-flip permutation ``p_value`` and the number of
    pairs ``n``. ``p_method`` is ``"exact"`` or ``"monte-carlo"``; ``min_p`` the smallest p this
    n can produce; ``note`` flags degenerate or underpowered cases."""

    note: str = ""
    p_method: str = ""
    min_p: float = 0.0

    def __new__(
        cls,
        diff: float,
        low: float,
        high: float,
        p_value: float,
        n: int,
        *,
        note: str = "",
        p_method: str = "",
        min_p: float = 0.0,
    ) -> PairedResult:
        self = super().__new__(cls, float(diff), float(low), float(high), float(p_value), int(n))
        self.note, self.p_method, self.min_p = note, p_method, float(min_p)
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (tuple(self), {"note": self.note, "p_method": self.p_method, "min_p": self.min_p})

    @property
    def detectable(self) -> bool:
        """Whether this n can reach p < 0.05 at all (two-sided sign-flip test)."""
        return self.min_p < 0.05


# ----------------------------------------------------------------------------- helpers
def _values(name: str, values: ArrayLike) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name}: expected a sequence of numbers, got {type(values).__name__}"
        ) from exc
    if arr.size == 0:
        raise ValueError(f"{name}: no values")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: values must be finite, got {arr.tolist()}")
    return arr


def _confidence(name: str, confidence: float) -> float:
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"{name}: confidence must lie in (0, 1), got {confidence!r}")
    return float(confidence)


def _resamples(name: str, n_resamples: int | None, reps: int | None, default: int) -> int:
    given = n_resamples if n_resamples is not None else reps
    n = default if given is None else int(given)
    if n < 1:
        raise ValueError(f"{name}: n_resamples must be >= 1, got {n}")
    return n


def _clip(
    iv: tuple[float, float, float], bounds: tuple[float, float] | None
) -> tuple[tuple[float, float, float], bool]:
    if bounds is None:
        return iv, False
    lo_b, hi_b = float(bounds[0]), float(bounds[1])
    est, lo, hi = iv
    clipped = (est, max(lo, lo_b), min(hi, hi_b))
    return clipped, clipped != iv


def _scipy_bootstrap(
    arr: np.ndarray,
    stat: Callable[..., Any],
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
    method: str,
) -> tuple[float, float, str]:
    """BCa (or percentile) bounds from ``scipy.stats.bootstrap``; falls back to the percentile
    interval when BCa is undefined (a degenerate jackknife), naming the method actually used."""
    from scipy import stats

    scipy_method = {"bca": "BCa", "percentile": "percentile", "basic": "basic"}[method]
    for m in (scipy_method, "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.bootstrap(
                (arr,),
                stat,
                n_resamples=n_resamples,
                confidence_level=confidence,
                method=m,
                vectorized=True,
                rng=np.random.default_rng(seed),
            )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return lo, hi, m
    return math.nan, math.nan, "none"


# ----------------------------------------------------------------------------- point estimates
def iqm(x: ArrayLike) -> float:
    """Interquartile mean: the mean of the middle 50% (``scipy.stats.trim_mean(x, 0.25)``)."""
    from scipy.stats import trim_mean

    return float(trim_mean(_values("iqm", x), 0.25))


def _trim_mean_stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """``scipy.stats.trim_mean(x, 0.25, axis)`` (cut ``int(0.25 n)`` values from each end),
    vectorized without scipy's per-call input handling: the bootstrap calls it on every batch."""
    a = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    n = a.shape[-1]
    k = int(0.25 * n)
    return np.sort(a, axis=-1)[..., k : n - k].mean(axis=-1)


def _mean_stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _median_stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis)


# ----------------------------------------------------------------------------- single-sample intervals
def iqm_ci(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int | None = None,
    seed: int = 0,
    method: str = "bca",
    bounds: tuple[float, float] | None = None,
    reps: int | None = None,
) -> Interval:
    """IQM of per-unit values (seeds, datasets) with a BCa bootstrap interval.

    For n < 4 nothing is trimmed (the IQM is the mean) and the interval is Student-t's, since a
    bootstrap of 2 or 3 values has almost no distinct resamples. One value or all values equal:
    the interval collapses onto the estimate with a note. ``bounds`` (the metric's range) clips
    the interval. ``reps`` is an old name of ``n_resamples`` (default 2000).
    """
    conf = _confidence("iqm_ci", confidence)
    n_res = _resamples("iqm_ci", n_resamples, reps, 2000)
    if method not in ("bca", "percentile", "basic"):
        raise ValueError(f"iqm_ci: method must be 'bca', 'percentile' or 'basic', got {method!r}")
    arr = _values("iqm_ci", values)
    est = iqm(arr)
    if arr.size == 1:
        return Interval(est, est, est, note="n=1: no interval", n=1, method="none")
    if np.all(arr == arr[0]):
        return Interval(
            est, est, est, note=f"all {arr.size} values equal", n=arr.size, method="none"
        )
    if arr.size < 4:
        iv = mean_ci(arr, confidence=conf, method="t", bounds=bounds)
        note = f"n={arr.size}: IQM is the mean; Student-t interval" + (
            f"; {iv.note}" if iv.note else ""
        )
        return Interval(*iv, note=note, n=arr.size, method="t")
    lo, hi, used = _scipy_bootstrap(
        arr, _trim_mean_stat, confidence=conf, n_resamples=n_res, seed=seed, method=method
    )
    (est, lo, hi), clipped = _clip((est, lo, hi), bounds)
    notes = []
    if used != {"bca": "BCa"}.get(method, method):
        notes.append(f"{method} undefined, {used} used")
    if clipped:
        notes.append("clipped to the metric's range")
    return Interval(est, lo, hi, note="; ".join(notes), n=arr.size, method=used)


def mean_ci(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int = 0,
    n_resamples: int | None = None,
    bounds: tuple[float, float] | None = None,
) -> Interval:
    """Mean with a BCa bootstrap (``method="bca"``) or Student-t (``method="t"``) interval.

    ``bounds`` (the metric's range, e.g. ``(0, 1)`` for a rate) clips the interval, and the note
    says so; for a rate from binary outcomes prefer :func:`wilson_ci`. BCa at n < 4 falls back to
    Student-t (too few distinct resamples), with a note.
    """
    conf = _confidence("mean_ci", confidence)
    n_res = _resamples("mean_ci", n_resamples, None, 2000)
    if method not in ("bca", "t", "percentile"):
        raise ValueError(f"mean_ci: method must be 'bca', 't' or 'percentile', got {method!r}")
    arr = _values("mean_ci", values)
    m = float(arr.mean())
    if arr.size == 1:
        return Interval(m, m, m, note="n=1: no interval", n=1, method="none")
    if np.all(arr == arr[0]):
        return Interval(
            m, m, m, note=f"all {arr.size} values equal (zero variance)", n=arr.size, method="none"
        )
    notes = []
    if method in ("bca", "percentile") and arr.size < 4:
        notes.append(f"n={arr.size}: too few for a bootstrap, Student-t used")
        method = "t"
    if method == "t":
        from scipy import stats

        half = float(
            stats.t.ppf(0.5 + conf / 2, arr.size - 1) * arr.std(ddof=1) / math.sqrt(arr.size)
        )
        lo, hi, used = m - half, m + half, "t"
    else:
        lo, hi, used = _scipy_bootstrap(
            arr, _mean_stat, confidence=conf, n_resamples=n_res, seed=seed, method=method
        )
        if used != {"bca": "BCa"}.get(method, method):
            notes.append(f"{method} undefined, {used} used")
    (m, lo, hi), clipped = _clip((m, lo, hi), bounds)
    if clipped:
        notes.append("clipped to the metric's range")
    return Interval(m, lo, hi, note="; ".join(notes), n=arr.size, method=used)


def bootstrap_ci(
    values: ArrayLike,
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    n_resamples: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    method: str = "bca",
    reps: int | None = None,
) -> Interval:
    """Bootstrap interval of any ``statistic`` over the first axis (units = rows).

    1-D values: BCa (``scipy.stats.bootstrap``, falling back to percentile when BCa is
    undefined). N-D values (e.g. one curve per seed): percentile bootstrap over rows.
    """
    conf = _confidence("bootstrap_ci", confidence)
    n_res = _resamples("bootstrap_ci", n_resamples, reps, 2000)
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise ValueError("bootstrap_ci: no values")
    if not np.all(np.isfinite(arr)):
        raise ValueError("bootstrap_ci: values must be finite")
    est = float(statistic(arr))
    n = arr.shape[0]
    if n == 1:
        return Interval(est, est, est, note="n=1: no interval", n=1, method="none")
    if np.all(arr == arr[0]):
        return Interval(est, est, est, note=f"all {n} units equal", n=n, method="none")
    rng = np.random.default_rng(seed)
    if arr.ndim == 1 and method in ("bca", "percentile"):
        from scipy import stats

        for m in ({"bca": "BCa"}.get(method, method), "percentile"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = stats.bootstrap(
                    (arr,),
                    lambda v: statistic(v),
                    n_resamples=n_res,
                    confidence_level=conf,
                    method=m,
                    vectorized=False,
                    rng=np.random.default_rng(seed),
                )
            lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if math.isfinite(lo) and math.isfinite(hi):
                note = "" if m.lower() == method else f"{method} undefined, {m} used"
                return Interval(est, lo, hi, note=note, n=n, method=m)
    idx = rng.integers(0, n, size=(n_res, n))
    boots = np.array([statistic(arr[i]) for i in idx], dtype=float)
    alpha = (1 - conf) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return Interval(
        est,
        lo,
        hi,
        note="percentile bootstrap over rows" if arr.ndim > 1 else "",
        n=n,
        method="percentile",
    )


# ----------------------------------------------------------------------------- rates
def _count(name: str, successes: int, n: int) -> tuple[int, int]:
    for label, v in (("successes", successes), ("n", n)):
        if isinstance(v, bool) or not float(v).is_integer():
            raise TypeError(f"{name}: {label} must be a whole number, got {v!r}")
    k, m = int(successes), int(n)
    if m < 1:
        raise ValueError(f"{name}: n must be >= 1, got {m}")
    if not 0 <= k <= m:
        raise ValueError(f"{name}: successes must lie in [0, n={m}], got {k}")
    return k, m


def wilson_ci(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a proportion ``successes / n`` (Wilson 1927); stays in [0, 1]."""
    from scipy import stats

    k, m = _count("wilson_ci", successes, n)
    conf = _confidence("wilson_ci", confidence)
    z = float(stats.norm.ppf(0.5 + conf / 2))
    p = k / m
    denom = 1 + z * z / m
    centre = (p + z * z / (2 * m)) / denom
    half = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / denom
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    lo, hi = (0.0 if k == 0 else lo), (1.0 if k == m else hi)
    return Interval(p, lo, hi, n=m, method="wilson")


def clopper_pearson_ci(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Clopper-Pearson ("exact", conservative) interval for ``successes / n`` from beta quantiles."""
    from scipy import stats

    k, m = _count("clopper_pearson_ci", successes, n)
    conf = _confidence("clopper_pearson_ci", confidence)
    a = (1 - conf) / 2
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a, k, m - k + 1))
    hi = 1.0 if k == m else float(stats.beta.ppf(1 - a, k + 1, m - k))
    return Interval(k / m, lo, hi, n=m, method="clopper-pearson")


# ----------------------------------------------------------------------------- paired designs
def _sign_flip_p(
    d: np.ndarray, stat: Callable[..., np.ndarray], n_resamples: int, rng: np.random.Generator
) -> tuple[float, str]:
    """Two-sided sign-flip permutation p of H0 "d is symmetric about 0", statistic |stat(d)|.

    Exact (all 2**n flips) for n <= EXACT_MAX_N, else Monte-Carlo with the +1 correction
    (Phipson & Smyth 2010)."""
    n = d.size
    obs = abs(float(stat(d[None, :], axis=-1)[0]))
    tol = 1e-12 * max(1.0, obs)
    if n <= EXACT_MAX_N:
        signs = np.array(list(product((1.0, -1.0), repeat=n)))
        t = np.abs(stat(signs * d[None, :], axis=-1))
        return float(np.mean(t >= obs - tol)), "exact"
    count = 0
    done = 0
    while done < n_resamples:
        b = min(4096, n_resamples - done)
        signs = rng.choice((-1.0, 1.0), size=(b, n))
        count += int(np.sum(np.abs(stat(signs * d[None, :], axis=-1)) >= obs - tol))
        done += b
    return (count + 1) / (n_resamples + 1), "monte-carlo"


def paired_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    statistic: str = "mean",
    confidence: float = 0.95,
    n_resamples: int = 10000,
    seed: int = 0,
) -> PairedResult:
    """Compare paired values (same seeds/datasets/problems, same order): ``a - b``.

    Interval: BCa paired bootstrap (resampling pairs) of the mean (or median) difference.
    p: two-sided sign-flip permutation test, exact for n <= 16 pairs, Monte-Carlo with
    ``n_resamples`` flips otherwise. With n pairs the smallest attainable p is 2 / 2**n
    (0.0625 at n = 5): ``PairedResult.detectable`` is False when that is >= 0.05.
    """
    if statistic not in ("mean", "median"):
        raise ValueError(f"paired_test: statistic must be 'mean' or 'median', got {statistic!r}")
    conf = _confidence("paired_test", confidence)
    x, y = _values("paired_test(a)", a), _values("paired_test(b)", b)
    if x.shape != y.shape:
        raise ValueError(
            f"paired_test: a and b must have the same length (paired), got {x.size} and {y.size}"
        )
    stat = _mean_stat if statistic == "mean" else _median_stat
    d = x - y
    n = d.size
    diff = float(stat(d[None, :], axis=-1)[0])
    min_p = min(1.0, 2.0 / 2.0**n) if n <= 1023 else 0.0
    rng = np.random.default_rng(seed)
    notes = []
    if np.all(d == 0):
        return PairedResult(
            0.0, 0.0, 0.0, 1.0, n, note="all differences are zero", p_method="exact", min_p=min_p
        )
    if n == 1:
        return PairedResult(
            diff, diff, diff, 1.0, 1, note="n=1: no interval, no test", p_method="exact", min_p=1.0
        )
    p, p_method = _sign_flip_p(d, stat, n_resamples, rng)
    if np.all(d == d[0]):
        lo = hi = diff
        notes.append(f"all {n} differences equal: no interval")
    elif n < 4:
        from scipy import stats as sps

        if statistic == "mean":
            half = float(sps.t.ppf(0.5 + conf / 2, n - 1) * d.std(ddof=1) / math.sqrt(n))
            lo, hi = diff - half, diff + half
            notes.append(f"n={n}: Student-t interval")
        else:
            lo, hi = float(d.min()), float(d.max())
            notes.append(f"n={n}: interval is the range of differences")
    else:
        lo, hi, used = _scipy_bootstrap(
            d,
            stat,
            confidence=conf,
            n_resamples=min(n_resamples, 10000),
            seed=int(rng.integers(2**63)),
            method="bca",
        )
        if used != "BCa":
            notes.append(f"BCa undefined, {used} used")
    if min_p >= 0.05:
        notes.append(
            f"n={n}: smallest attainable p is {min_p:.3g}, a difference is not detectable at this n"
        )
    return PairedResult(diff, lo, hi, p, n, note="; ".join(notes), p_method=p_method, min_p=min_p)


def mcnemar_exact(a_correct: ArrayLike, b_correct: ArrayLike) -> float:
    """Exact (binomial) McNemar p, two-sided, for paired binary outcomes (e.g. per-problem
    correctness of two arms on the same problems): only the discordant pairs count."""
    from scipy import stats

    x = np.asarray(a_correct).ravel()
    y = np.asarray(b_correct).ravel()
    if x.shape != y.shape:
        raise ValueError(
            f"mcnemar_exact: a and b must have the same length, got {x.size} and {y.size}"
        )
    if x.size == 0:
        raise ValueError("mcnemar_exact: no pairs")
    for name, v in (("a_correct", x), ("b_correct", y)):
        if not np.all(np.isin(v, (0, 1, True, False))):
            raise ValueError(
                f"mcnemar_exact: {name} must hold 0/1 or booleans, got values {np.unique(v).tolist()}"
            )
    x, y = x.astype(bool), y.astype(bool)
    b = int(np.sum(x & ~y))
    c = int(np.sum(~x & y))
    if b + c == 0:
        return 1.0
    return float(stats.binomtest(b, b + c, 0.5).pvalue)


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (Holm 1979), in the input order; reject H_i at level
    alpha when ``adjusted[i] <= alpha``, controlling the family-wise error rate."""
    p = np.asarray(p_values, dtype=float).ravel()
    if p.size == 0:
        return p
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"holm: p-values must lie in [0, 1], got {p.tolist()}")
    m = p.size
    order = np.argsort(p, kind="stable")
    adj_sorted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj_sorted
    return out


# ----------------------------------------------------------------------------- across runs and tasks
def interval_estimates(
    scores: Mapping[str, np.ndarray],
    func: Callable[[np.ndarray], np.ndarray],
    reps: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Stratified bootstrap (runs resampled independently within each task, as in rliable).

    ``scores[name]`` has shape (runs, tasks); ``func`` maps such an array to a 1-D array of
    k statistics. Returns (point estimates {name: (k,)}, percentile intervals {name: (2, k)}).
    """
    conf = _confidence("interval_estimates", confidence)
    if reps < 1:
        raise ValueError(f"interval_estimates: reps must be >= 1, got {reps}")
    points, cis = {}, {}
    for i, (name, s) in enumerate(scores.items()):
        arr = np.asarray(s, dtype=float)
        if arr.ndim != 2 or arr.shape[0] == 0:
            raise ValueError(
                f"interval_estimates: scores[{name!r}] must have shape (runs, tasks), got {arr.shape}"
            )
        rng = np.random.default_rng([seed, i])
        runs, tasks = arr.shape
        point = np.atleast_1d(np.asarray(func(arr), dtype=float))
        idx = rng.integers(0, runs, size=(reps, runs, tasks))
        boots = np.stack([np.atleast_1d(func(np.take_along_axis(arr, ix, axis=0))) for ix in idx])
        alpha = (1 - conf) / 2
        points[name] = point
        cis[name] = np.quantile(boots, [alpha, 1 - alpha], axis=0)
    return points, cis


def performance_profile(scores: np.ndarray, taus: ArrayLike) -> np.ndarray:
    """Fraction of all (run, task) normalized scores above each threshold tau (Agarwal et al.
    2021's score distribution)."""
    s = np.asarray(scores, dtype=float).reshape(-1)
    t = np.asarray(taus, dtype=float).ravel()
    return (s[None, :] > t[:, None]).mean(axis=1)


def _poi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) + 0.5 P(X = Y) for batches x (B, nx), y (B, ny)."""
    gt = (x[:, :, None] > y[:, None, :]).mean(axis=(1, 2))
    eq = (x[:, :, None] == y[:, None, :]).mean(axis=(1, 2))
    return gt + 0.5 * eq


def probability_of_improvement(
    x: ArrayLike,
    y: ArrayLike,
    *,
    n_resamples: int | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    reps: int | None = None,
) -> Interval:
    """P(X > Y) (Mann-Whitney, ties count half) of two algorithms' runs, higher is better, with
    a percentile interval from an independent bootstrap of each side."""
    xa, ya = (
        _values("probability_of_improvement(x)", x),
        _values("probability_of_improvement(y)", y),
    )
    conf = _confidence("probability_of_improvement", confidence)
    n_res = _resamples("probability_of_improvement", n_resamples, reps, 2000)
    est = float(_poi(xa[None], ya[None])[0])
    if min(xa.size, ya.size) < 2:
        return Interval(
            est,
            est,
            est,
            note="fewer than 2 runs on a side: no interval",
            n=min(xa.size, ya.size),
            method="none",
        )
    rng = np.random.default_rng(seed)
    boots = []
    chunk = max(1, min(500, 4_000_000 // (xa.size * ya.size)))  # bounds the (b, nx, ny) comparison
    for start in range(0, n_res, chunk):
        b = min(chunk, n_res - start)
        bx = xa[rng.integers(0, xa.size, size=(b, xa.size))]
        by = ya[rng.integers(0, ya.size, size=(b, ya.size))]
        boots.append(_poi(bx, by))
    allb = np.concatenate(boots)
    alpha = (1 - conf) / 2
    lo, hi = np.quantile(allb, [alpha, 1 - alpha])
    return Interval(est, lo, hi, n=min(xa.size, ya.size), method="percentile")


# ----------------------------------------------------------------------------- rates
def loglog_slope(curves: ArrayLike, xs: ArrayLike) -> float:
    """OLS slope of log10(mean over rows) on log10(xs); ``curves`` is (units, len(xs)). NaN when
    a mean is not finite and positive."""
    m = np.mean(np.asarray(curves, dtype=float), axis=0)
    if np.any(~np.isfinite(m)) or np.any(m <= 0):
        return float("nan")
    return float(np.polyfit(np.log10(np.asarray(xs, dtype=float)), np.log10(m), 1)[0])


def slope_test(
    curves: ArrayLike,
    xs: ArrayLike,
    bound: float,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[Interval, float]:
    """The fitted :func:`loglog_slope` with a percentile bootstrap interval over rows (units,
    e.g. seeds; the resampling of :func:`bootstrap_ci`), and the one-sided bootstrap p of
    H0 "the slope is >= ``bound``" (``(#{slope* >= bound} + 1) / (B + 1)``): a small p says the
    curve falls faster than ``x ** bound``."""
    arr = np.asarray(curves, dtype=float)
    x = np.asarray(xs, dtype=float)
    est = loglog_slope(arr, x)
    if not math.isfinite(est) or arr.shape[0] < 2:
        return Interval(est, math.nan, math.nan, note="no slope", n=arr.shape[0]), math.nan
    conf = _confidence("slope_test", confidence)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.shape[0], size=(n_resamples, arr.shape[0]))
    boots = np.array([loglog_slope(arr[i], x) for i in idx])
    alpha = (1 - conf) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    p = (int(np.sum(boots >= bound)) + 1) / (boots.size + 1)
    iv = Interval(est, lo, hi, n=arr.shape[0], method="percentile")
    return iv, float(p)


# ----------------------------------------------------------------------------- budget ladders
@dataclass(frozen=True)
class Plateau:
    """What :func:`plateau_test` found on the last step of a budget ladder.

    ``improvement`` is the paired mean change from ``from_scale`` to ``to_scale`` signed so that
    positive is better (for a ``"min"`` metric, a fall), with its paired-bootstrap interval
    ``[low, high]`` over ``n`` seeds; ``tolerance`` is the absolute band around 0 it was held to.
    """

    at_plateau: bool
    status: str  # "at plateau", "still improving", "not at plateau", "no ladder"
    improvement: float = math.nan
    low: float = math.nan
    high: float = math.nan
    n: int = 0
    tolerance: float = math.nan
    from_scale: float = math.nan
    to_scale: float = math.nan
    p_value: float = math.nan
    note: str = ""

    @property
    def reading(self) -> str:
        """One line for a page: ``"at plateau (+0.01 [-0.02, +0.03] from x2 to x4, within
        +-0.05)"`` or ``"still improving (+0.2 [+0.1, +0.3] at the last step, x2 to x4)"``."""
        if self.status == "no ladder":
            return f"no ladder ({self.note})" if self.note else "no ladder"
        step = f"x{_fmt_scale(self.from_scale)} to x{_fmt_scale(self.to_scale)}"
        iv = f"{self.improvement:+.3g} [{self.low:+.3g}, {self.high:+.3g}]"
        if self.at_plateau:
            return f"at plateau ({iv} from {step}, within +-{self.tolerance:.3g})"
        return f"{self.status} ({iv} at the last step, {step}; tolerance +-{self.tolerance:.3g})"


def _fmt_scale(s: float) -> str:
    return str(int(s)) if float(s).is_integer() else repr(float(s))


def plateau_test(
    ladder: Mapping[float, Mapping[int, float] | ArrayLike],
    *,
    direction: str = "max",
    tolerance: float = 0.05,
    relative: bool = True,
    confidence: float = 0.95,
    seed: int = 0,
) -> Plateau:
    """Is the top of a budget ladder at its plateau? A paired test on the ladder's last step.

    ``ladder`` maps each budget scale to that rung's per-seed scores, either ``{seed: value}``
    (paired by seed; lower rungs may have fewer seeds) or a sequence in the same seed order on
    every rung. The two largest scales are compared with :func:`paired_test` (same seeds at
    both; the step is a doubling on a x2 ladder). The improvement is signed so that positive is
    better (``direction="min"``: a fall). The ladder is *at plateau* when the whole
    ``confidence`` interval of the improvement lies within ``[-tol, +tol]``, where ``tol`` is
    ``tolerance`` times the mean magnitude at the lower rung (``relative=True``, default 5%) or
    ``tolerance`` itself (``relative=False``). Otherwise it is *still improving* (estimate > 0)
    or *not at plateau* (estimate <= 0: worse or too noisy to tell); the interval says which.
    """
    if direction not in ("max", "min"):
        raise ValueError(f"plateau_test: direction must be 'max' or 'min', got {direction!r}")
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0):
        raise ValueError(f"plateau_test: tolerance must be a finite number >= 0, got {tolerance!r}")
    scales = sorted(float(k) for k in ladder)
    if any(not math.isfinite(k) or k <= 0 for k in scales):
        raise ValueError(f"plateau_test: budget scales must be finite and > 0, got {scales}")
    if len(scales) < 2:
        return Plateau(False, "no ladder", n=0, note=f"{len(scales)} rung(s); a ladder needs 2")
    by_scale = {float(k): v for k, v in ladder.items()}
    lo_s, hi_s = scales[-2], scales[-1]
    a_raw, b_raw = by_scale[hi_s], by_scale[lo_s]
    if isinstance(a_raw, Mapping) != isinstance(b_raw, Mapping):
        raise TypeError(
            "plateau_test: give every rung as {seed: value} or every rung as a sequence"
        )
    if isinstance(a_raw, Mapping) and isinstance(b_raw, Mapping):
        common = sorted(set(a_raw) & set(b_raw))
        if len(common) < 2:
            return Plateau(
                False,
                "no ladder",
                n=len(common),
                from_scale=lo_s,
                to_scale=hi_s,
                note=f"{len(common)} seed(s) shared by x{_fmt_scale(lo_s)} and "
                f"x{_fmt_scale(hi_s)}; the paired test needs 2",
            )
        top = _values("plateau_test(top rung)", [a_raw[k] for k in common])
        prev = _values("plateau_test(lower rung)", [b_raw[k] for k in common])
    else:
        top = _values("plateau_test(top rung)", a_raw)  # type: ignore[arg-type]
        prev = _values("plateau_test(lower rung)", b_raw)  # type: ignore[arg-type]
        if top.shape != prev.shape:
            raise ValueError(
                f"plateau_test: the last two rungs must have the same seeds (paired), got "
                f"{prev.size} and {top.size} values"
            )
    sign = 1.0 if direction == "max" else -1.0
    res = paired_test(sign * top, sign * prev, confidence=confidence, seed=seed)
    tol = float(tolerance) * (abs(float(prev.mean())) if relative else 1.0)
    at = -tol <= res.low and res.high <= tol
    status = "at plateau" if at else ("still improving" if res.diff > 0 else "not at plateau")
    return Plateau(
        at,
        status,
        improvement=res.diff,
        low=res.low,
        high=res.high,
        n=res.n,
        tolerance=tol,
        from_scale=lo_s,
        to_scale=hi_s,
        p_value=res.p_value,
        note=res.note,
    )


# ----------------------------------------------------------------------------- backward compatibility
def paired_comparison(a: ArrayLike, b: ArrayLike, seed: int = 0) -> dict[str, Any]:
    """Older dict form of :func:`paired_test` (kept for existing scripts).

    Keys: ``n``, ``mean_diff``, ``ci_low``, ``ci_high``, ``p_value`` (sign-flip permutation),
    ``p_method``, ``min_p``, ``note``; ``t_pvalue`` and ``wilcoxon_pvalue`` are still given for
    old pages but the protocol reports ``p_value``.
    """
    from scipy import stats

    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired_comparison: shapes differ, {x.shape} vs {y.shape}")
    r = paired_test(x, y, seed=seed)
    d = x - y
    out: dict[str, Any] = {
        "n": r.n,
        "mean_diff": r.diff,
        "ci_low": r.low,
        "ci_high": r.high,
        "p_value": r.p_value,
        "p_method": r.p_method,
        "min_p": r.min_p,
        "note": r.note,
    }
    if d.size >= 2 and np.any(d != d[0]):
        out["t_pvalue"] = float(stats.ttest_rel(x, y).pvalue)
    else:
        out["t_pvalue"] = float("nan") if np.all(d == 0) or d.size < 2 else 0.0
    out["wilcoxon_pvalue"] = (
        float(stats.wilcoxon(x, y).pvalue) if d.size >= 2 and np.any(d != 0) else float("nan")
    )
    return out
