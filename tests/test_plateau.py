"""plateau_test on synthetic budget ladders: rising, flat, noisy flat, and the edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.stats import plateau_test

SEEDS = range(10)


def _ladder(curve, noise: float, seed: int = 0) -> dict[float, dict[int, float]]:
    """Per-seed scores curve(scale) + a per-(seed, scale) Gaussian noise of sd ``noise``."""
    rng = np.random.default_rng(seed)
    return {s: {k: curve(s) + noise * rng.standard_normal() for k in SEEDS} for s in (1, 2, 4, 8)}


def test_a_rising_curve_is_still_improving() -> None:
    pl = plateau_test(_ladder(lambda s: 1.0 - 1.0 / s, 0.01), tolerance=0.05)
    # last step x4 -> x8: 0.875 - 0.75 = 0.125, far outside 5% of 0.75
    assert not pl.at_plateau and pl.status == "still improving"
    assert (pl.from_scale, pl.to_scale, pl.n) == (4.0, 8.0, 10)
    assert pl.improvement == pytest.approx(0.125, abs=0.01) and pl.low > 0.1
    assert pl.tolerance == pytest.approx(0.05 * 0.75, rel=0.05)
    assert pl.reading.startswith("still improving (+0.12") and "x4 to x8" in pl.reading


def test_a_flat_curve_is_at_plateau() -> None:
    pl = plateau_test({1: [0.5] * 10, 2: [0.5] * 10, 4: [0.5] * 10})
    assert pl.at_plateau and pl.status == "at plateau" and pl.improvement == 0.0
    assert pl.reading.startswith("at plateau (+0 [+0, +0] from x2 to x4")


def test_a_noisy_flat_curve_reads_at_plateau_when_the_interval_fits_the_tolerance() -> None:
    pl = plateau_test(_ladder(lambda s: 1.0, 0.01), tolerance=0.05)
    assert pl.at_plateau and abs(pl.improvement) < 0.02 and pl.high - pl.low < 0.05


def test_a_flat_curve_too_noisy_to_tell_is_not_at_plateau() -> None:
    pl = plateau_test(_ladder(lambda s: 1.0, 0.3, seed=1), tolerance=0.05)
    assert not pl.at_plateau and pl.high - pl.low > 0.1
    assert pl.status in ("still improving", "not at plateau")
    assert f"[{pl.low:+.3g}, {pl.high:+.3g}]" in pl.reading


def test_hand_worked_constant_difference_and_absolute_tolerance() -> None:
    # every seed gains exactly 0.1 from x1 to x2: the interval collapses onto +0.1
    lad = {1: [1.0, 2.0, 3.0, 4.0, 5.0], 2: [1.1, 2.1, 3.1, 4.1, 5.1]}
    strict = plateau_test(lad, tolerance=0.05, relative=False)
    assert not strict.at_plateau and strict.reading.startswith("still improving (+0.1 [+0.1, +0.1]")
    loose = plateau_test(lad, tolerance=0.2, relative=False)
    assert loose.at_plateau and loose.tolerance == 0.2
    # relative: 5% of the lower rung's mean magnitude, |3.0| -> 0.15, so +0.1 fits
    assert plateau_test(lad, tolerance=0.05).at_plateau


def test_direction_min_counts_a_fall_as_improvement() -> None:
    lad = {1: [1.0, 2.0, 3.0, 4.0], 2: [0.5, 1.5, 2.5, 3.5]}
    assert plateau_test(lad, direction="max").status == "not at plateau"
    pl = plateau_test(lad, direction="min")
    assert pl.status == "still improving" and pl.improvement == pytest.approx(0.5)


def test_pairs_by_seed_with_fewer_seeds_on_lower_rungs() -> None:
    lad = {
        0.25: {0: 0.0, 1: 0.0},
        1: {0: 1.0, 1: 1.0, 2: 1.0},
        2: {2: 1.0, 1: 1.0, 0: 1.0, 9: 50.0},  # seed 9 has no partner at x1: left out
    }
    pl = plateau_test(lad)
    assert pl.n == 3 and pl.at_plateau and (pl.from_scale, pl.to_scale) == (1.0, 2.0)


def test_degenerate_ladders_and_bad_input() -> None:
    assert plateau_test({1: [1.0, 2.0]}).status == "no ladder"
    one = plateau_test({1: {0: 1.0}, 2: {0: 1.0, 1: 2.0}})
    assert one.status == "no ladder" and not one.at_plateau and "1 seed(s)" in one.reading
    with pytest.raises(ValueError, match="same seeds"):
        plateau_test({1: [1.0, 2.0], 2: [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="direction"):
        plateau_test({1: [1.0], 2: [1.0]}, direction="up")
    with pytest.raises(ValueError, match="scales"):
        plateau_test({0: [1.0, 2.0], 2: [1.0, 2.0]})
    with pytest.raises(ValueError, match="finite"):
        plateau_test({1: [1.0, np.nan], 2: [1.0, 2.0]})
