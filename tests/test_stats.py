"""Statistics on hand-worked cases and against direct computation."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.stats import (
    bootstrap_ci,
    iqm,
    iqm_ci,
    mean_ci,
    paired_comparison,
    probability_of_improvement,
)


def test_iqm_hand_cases() -> None:
    # 8 values: trim 2 from each end -> mean of the middle four
    assert iqm([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx(4.5)
    assert iqm([5.0]) == 5.0
    with pytest.raises(ValueError):
        iqm([])


def test_iqm_ci_is_seeded_and_brackets_the_estimate() -> None:
    x = np.random.default_rng(0).normal(size=10)
    a, b = iqm_ci(x, seed=1), iqm_ci(x, seed=1)
    assert a == b
    point, lo, hi = a
    assert lo <= point <= hi and lo < hi
    assert point == pytest.approx(iqm(x))
    assert iqm_ci([2.0]) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="finite"):
        iqm_ci([1.0, float("nan")])


def test_bootstrap_and_t_intervals_cover_the_mean() -> None:
    x = np.arange(10.0)
    est, lo, hi = bootstrap_ci(x, seed=0)
    assert est == 4.5 and lo < 4.5 < hi
    m, tlo, thi = mean_ci(x)
    # t(0.975, 9) = 2.2622; sd = 3.02765; half width = 2.2622 * 3.02765 / sqrt(10)
    assert m == 4.5 and thi - m == pytest.approx(2.2622 * 3.02765 / np.sqrt(10), rel=1e-4)


def test_paired_comparison() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    out = paired_comparison(a + 1.0, a)
    assert out["mean_diff"] == 1.0 and out["ci_low"] == 1.0 and out["ci_high"] == 1.0
    assert out["t_pvalue"] == 0.0
    noisy = paired_comparison(a + np.array([0.1, -0.1, 0.2, -0.2, 0.0]), a)
    assert noisy["t_pvalue"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="shapes"):
        paired_comparison([1, 2], [1])


def test_probability_of_improvement() -> None:
    assert probability_of_improvement([2, 3, 4], [0, 1, 1.5])[0] == 1.0
    assert probability_of_improvement([0, 1], [2, 3])[0] == 0.0
    # identical samples: all ties count half
    assert probability_of_improvement([1, 2], [1, 2])[0] == pytest.approx(0.5)
