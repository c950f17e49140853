"""Statistics on hand-worked cases and against scipy / statsmodels references."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy import stats as sps

from icml26.stats import (
    Interval,
    PairedResult,
    bootstrap_ci,
    clopper_pearson_ci,
    holm,
    interval_estimates,
    iqm,
    iqm_ci,
    mcnemar_exact,
    mean_ci,
    paired_comparison,
    paired_test,
    performance_profile,
    probability_of_improvement,
    wilson_ci,
)


def test_iqm_hand_cases() -> None:
    # 8 values: trim 2 from each end -> mean of the middle four
    assert iqm([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx(4.5)
    assert iqm([5.0]) == 5.0
    with pytest.raises(ValueError, match="no values"):
        iqm([])


def test_vectorized_iqm_statistic_matches_scipy_trim_mean() -> None:
    from icml26.stats import _trim_mean_stat

    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 4, 5, 7, 8, 13, 40):
        x = rng.normal(size=(6, n))
        assert _trim_mean_stat(x, axis=-1) == pytest.approx(
            sps.trim_mean(x, 0.25, axis=-1), rel=1e-12
        )
        assert _trim_mean_stat(x.T, axis=0) == pytest.approx(
            sps.trim_mean(x.T, 0.25, axis=0), rel=1e-12
        )


def test_iqm_ci_seeded_no_global_state_and_degenerate_cases() -> None:
    x = np.random.default_rng(0).normal(size=10)
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    a, b = iqm_ci(x, seed=1), iqm_ci(x, seed=1)
    assert np.array_equal(np.random.get_state()[1], before)  # global RNG untouched
    assert a == b and isinstance(a, Interval) and a.method == "BCa" and a.n == 10
    point, lo, hi = a
    assert lo < point < hi and point == pytest.approx(iqm(x))
    assert iqm_ci(x, seed=2) != a  # the seed matters
    one = iqm_ci([2.0])
    assert one == (2.0, 2.0, 2.0) and "n=1" in one.note
    same = iqm_ci([3.0] * 6)
    assert same == (3.0, 3.0, 3.0) and "equal" in same.note
    # n = 3: IQM is the mean, Student-t interval (no 10-resample percentile bootstrap)
    small = iqm_ci([16.0, 16.0, 17.0])
    half = sps.t.ppf(0.975, 2) * np.std([16, 16, 17], ddof=1) / np.sqrt(3)
    assert small.estimate == pytest.approx(49 / 3) and small.high - small.estimate == pytest.approx(
        half
    )
    # a bounded metric: the n = 2 Student-t interval (+-12.7 standard errors) is clipped to [0, 1]
    rate = iqm_ci([0.1, 0.9], bounds=(0.0, 1.0))
    assert rate == (0.5, 0.0, 1.0) and "clipped" in rate.note
    assert iqm_ci(x, reps=500, seed=1) == iqm_ci(x, n_resamples=500, seed=1)  # old keyword
    assert pickle.loads(pickle.dumps(a)).method == "BCa"
    with pytest.raises(ValueError, match="finite"):
        iqm_ci([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        iqm_ci(x, confidence=95)


def test_mean_ci_student_t_hand_value_and_rate_bounds() -> None:
    x = np.arange(10.0)
    m, tlo, thi = mean_ci(x, method="t")
    # t(0.975, 9) = 2.2622; sd = 3.02765; half width = 2.2622 * 3.02765 / sqrt(10)
    assert m == 4.5 and thi - m == pytest.approx(2.2622 * 3.02765 / np.sqrt(10), rel=1e-4)
    # a rate near 0: the t interval would go below 0; bounds clip it and say so
    rate = [0.0] * 9 + [0.25]
    raw = mean_ci(rate, method="t")
    assert raw.low < 0
    clipped = mean_ci(rate, method="t", bounds=(0.0, 1.0))
    assert clipped.low == 0.0 and clipped.high == raw.high and "clipped" in clipped.note
    assert mean_ci([0.0] * 5).low == 0.0 and "zero variance" in mean_ci([0.0] * 5).note


def test_bca_matches_the_exact_interval_of_an_exponential_mean() -> None:
    # the mean of n Exp(theta) draws: 2 n xbar / theta ~ chi2(2n), an exact, skewed interval
    n = 60
    x = np.random.default_rng(7).exponential(2.0, size=n)
    s = 2 * n * x.mean()
    exact_lo, exact_hi = s / sps.chi2.ppf(0.975, 2 * n), s / sps.chi2.ppf(0.025, 2 * n)
    est, lo, hi = mean_ci(x, seed=0, n_resamples=4000)
    width = exact_hi - exact_lo
    assert abs(lo - exact_lo) < 0.1 * width and abs(hi - exact_hi) < 0.1 * width
    assert (hi - est) > (est - lo)  # skewed to the right like the exact one
    # coverage over repeated samples is close to 95%
    theta, hits = 1.0, 0
    for i in range(120):
        xi = np.random.default_rng(100 + i).exponential(theta, size=30)
        _, li, hi_ = mean_ci(xi, seed=i, n_resamples=1000)
        hits += li <= theta <= hi_
    assert 0.85 <= hits / 120 <= 0.99


def test_wilson_matches_newcombe_1998_textbook_values() -> None:
    # Newcombe (1998), Stat. Med. 17:857, Table I, method 3 (score interval without continuity
    # correction), to the 4 decimals printed there
    for k, n, lo, hi in [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ]:
        w = wilson_ci(k, n)
        assert (round(w.low, 4), round(w.high, 4)) == (lo, hi), (k, n, w)
    # 0/20 by hand: the upper bound is z^2 / (n + z^2)
    z2 = 1.959963984540054**2
    assert wilson_ci(0, 20).high == pytest.approx(z2 / (20 + z2), rel=1e-12)


def test_wilson_and_clopper_pearson_against_references() -> None:
    # Wilson 3/10, hand-worked: centre (0.3 + z^2/20) / (1 + z^2/10), z = 1.95996
    z = 1.959963984540054
    centre = (0.3 + z * z / 20) / (1 + z * z / 10)
    half = z * np.sqrt(0.3 * 0.7 / 10 + z * z / 400) / (1 + z * z / 10)
    w = wilson_ci(3, 10)
    assert w == pytest.approx((0.3, centre - half, centre + half))
    assert w.low == pytest.approx(0.10779, abs=1e-5) and w.high == pytest.approx(0.60322, abs=1e-5)
    for k, n in [(0, 10), (1, 40), (20, 20), (17, 256), (128, 256)]:
        res = sps.binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert wilson_ci(k, n)[1:] == pytest.approx((res.low, res.high), abs=1e-12)
        exact = sps.binomtest(k, n).proportion_ci(0.95, method="exact")
        assert clopper_pearson_ci(k, n)[1:] == pytest.approx((exact.low, exact.high), abs=1e-10)
    assert wilson_ci(0, 10).low == 0.0 and wilson_ci(10, 10).high == 1.0
    with pytest.raises(ValueError, match="successes"):
        wilson_ci(11, 10)
    with pytest.raises(TypeError, match="whole number"):
        wilson_ci(2.5, 10)


def test_wilson_and_clopper_pearson_against_statsmodels() -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    for k, n in [(0, 7), (3, 10), (40, 41), (101, 256)]:
        lo, hi = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
        assert wilson_ci(k, n)[1:] == pytest.approx((lo, hi), abs=1e-10)
        lo, hi = proportion.proportion_confint(k, n, alpha=0.1, method="beta")
        assert clopper_pearson_ci(k, n, confidence=0.9)[1:] == pytest.approx((lo, hi), abs=1e-10)


def test_paired_sign_flip_p_enumerated_by_hand() -> None:
    # d = (1, 2, 3, -0.5): |sum| over the 16 sign flips is >= 5.5 only for (+,+,+,+) = 6.5,
    # (+,+,+,-) = 5.5 and their mirror images: p = 4/16
    r = paired_test([2.0, 3.0, 4.0, 0.0], [1.0, 1.0, 1.0, 0.5])
    assert isinstance(r, PairedResult) and r.p_method == "exact"
    assert r.p_value == pytest.approx(0.25) and r.diff == pytest.approx(5.5 / 4) and r.n == 4
    assert r.min_p == pytest.approx(2 / 16) and not r.detectable
    # against scipy's exact paired permutation test on a random case
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=9), rng.normal(size=9) - 0.6
    ref = sps.permutation_test(
        (a, b),
        lambda u, v, axis: np.mean(u - v, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    )
    r = paired_test(a, b)
    assert r.p_value == pytest.approx(ref.pvalue) and r.low < r.diff < r.high
    # n = 5 can never reach p < 0.05, and the note says so
    five = paired_test(np.arange(5.0) + 1, np.arange(5.0))
    assert five.p_value == pytest.approx(0.0625) and "not detectable" in five.note
    assert paired_test([1.0, 2.0], [1.0, 2.0]).p_value == 1.0


def test_paired_monte_carlo_and_bootstrap_interval() -> None:
    rng = np.random.default_rng(11)
    a = rng.normal(0.5, 1.0, size=40)
    b = a - 0.5 + rng.normal(0, 0.3, size=40)  # a better than b by ~0.5 on every unit
    r = paired_test(a, b, n_resamples=5000, seed=4)
    assert r.p_method == "monte-carlo" and r.p_value == pytest.approx(1 / 5001)
    assert r.low < 0.5 < r.high and r.low > 0
    assert paired_test(a, b, n_resamples=5000, seed=4) == r
    null = paired_test(rng.normal(size=40), rng.normal(size=40), n_resamples=4000, seed=1)
    assert null.p_value > 0.05
    with pytest.raises(ValueError, match="same length"):
        paired_test([1, 2], [1])


def test_mcnemar_exact_against_binomtest_and_hand() -> None:
    # 7 problems only a solves, 2 only b solves, 20 both, 11 neither
    a = [1] * 7 + [0] * 2 + [1] * 20 + [0] * 11
    b = [0] * 7 + [1] * 2 + [1] * 20 + [0] * 11
    # two-sided binomial on the 9 discordant pairs: 2 * (1 + 9 + 36) / 512
    assert mcnemar_exact(a, b) == pytest.approx(92 / 512)
    assert mcnemar_exact(a, b) == pytest.approx(sps.binomtest(7, 9, 0.5).pvalue)
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]) == 1.0
    contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
    table = [[20, 7], [2, 11]]
    assert mcnemar_exact(a, b) == pytest.approx(contingency.mcnemar(table, exact=True).pvalue)
    with pytest.raises(ValueError, match="0/1"):
        mcnemar_exact([0.5, 1], [1, 1])


def test_holm_textbook_example() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.9, 0.5]) == pytest.approx([1.0, 1.0])
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = np.random.default_rng(0).uniform(0, 0.2, size=9)
    assert holm(p) == pytest.approx(multitest.multipletests(p, method="holm")[1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.2, 1.5])


def test_bootstrap_ci_generic_statistic_and_rows() -> None:
    x = np.arange(10.0)
    est, lo, hi = bootstrap_ci(x, seed=0)
    assert est == 4.5 and lo < 4.5 < hi
    curves = np.random.default_rng(0).normal(size=(8, 5)) + np.arange(5.0)
    r = bootstrap_ci(curves, lambda c: float(np.mean(c[:, -1] - c[:, 0])), seed=0)
    assert r.method == "percentile" and r.low < r.estimate < r.high
    assert bootstrap_ci(curves, lambda c: float(np.mean(c[:, -1] - c[:, 0])), seed=0) == r


def test_probability_of_improvement_and_profiles() -> None:
    assert probability_of_improvement([2, 3, 4], [0, 1, 1.5])[0] == 1.0
    assert probability_of_improvement([0, 1], [2, 3])[0] == 0.0
    assert probability_of_improvement([1, 2], [1, 2])[0] == pytest.approx(0.5)  # ties count half
    # 1 > 0 and 3 > 0, 2 vs {0, 2}: (1 + 0.5 + 1 + 1 + 1 + 1) / 6 ... = P over 3x2 pairs
    est = probability_of_improvement([1, 2, 3], [0, 2])[0]
    assert est == pytest.approx((1 + 0 + 1 + 0.5 + 1 + 1) / 6)
    scores = np.array([[0.1, 0.5], [0.9, 0.7]])
    assert performance_profile(scores, [0.0, 0.5, 0.95]) == pytest.approx([1.0, 0.5, 0.0])
    pts, cis = interval_estimates(
        {"a": scores, "b": scores + 0.1}, lambda s: np.array([iqm(s.ravel())]), reps=200
    )
    assert cis["a"].shape == (2, 1) and cis["a"][0, 0] <= pts["a"][0] <= cis["a"][1, 0]
    assert (
        interval_estimates({"a": scores}, lambda s: np.array([s.mean()]), reps=200)[1]["a"].tolist()
        == interval_estimates({"a": scores}, lambda s: np.array([s.mean()]), reps=200)[1][
            "a"
        ].tolist()
    )


def test_paired_comparison_compat() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    out = paired_comparison(a + 1.0, a)
    assert out["mean_diff"] == 1.0 and out["ci_low"] == 1.0 and out["ci_high"] == 1.0
    assert out["p_value"] == pytest.approx(0.0625) and out["t_pvalue"] == 0.0
    with pytest.raises(ValueError, match="shapes"):
        paired_comparison([1, 2], [1])
