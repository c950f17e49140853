"""Ensemble CRPS, spread-skill and zonal spectra against closed forms and brute force."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.envs.weather.probabilistic import (
    crps_ensemble,
    crps_gaussian,
    spread_skill_ratio,
    zonal_energy_spectrum,
)


def test_crps_ensemble_matches_the_pairwise_definition_and_a_hand_worked_case() -> None:
    # two members {0, 2}, y = 1: E|X - y| = 1, E|X - X'| over ordered pairs = (0 + 2 + 2 + 0) / 4 = 1
    assert crps_ensemble([0.0, 2.0], 1.0, fair=False) == pytest.approx(0.5)
    assert crps_ensemble([0.0, 2.0], 1.0, fair=True) == pytest.approx(0.0)  # 4 / (2 * 1) = 2
    rng = np.random.default_rng(0)
    ens, obs = rng.normal(size=(7, 5, 3)), rng.normal(size=(5, 3))
    brute = np.abs(ens - obs).mean(0) - 0.5 * np.abs(ens[:, None] - ens[None]).sum((0, 1)) / (7 * 6)
    np.testing.assert_allclose(crps_ensemble(ens, obs), brute, rtol=1e-12)
    np.testing.assert_allclose(
        crps_ensemble(np.moveaxis(ens, 0, -1), obs, axis=-1), brute, rtol=1e-12
    )
    with pytest.raises(ValueError, match="members"):
        crps_ensemble([1.0], 0.0)


def test_fair_crps_of_a_gaussian_ensemble_equals_the_closed_form() -> None:
    rng = np.random.default_rng(1)
    mu, sigma, y = 0.3, 1.7, np.array([-1.0, 0.0, 2.5])
    ens = rng.normal(mu, sigma, size=(10, 20_000, 3))  # 20,000 independent 10-member ensembles
    got = crps_ensemble(ens, np.broadcast_to(y, (20_000, 3))).mean(axis=0)
    np.testing.assert_allclose(got, crps_gaussian(mu, sigma, y), rtol=0.02)
    # closed form at y = mu: sigma (2 phi(0) - 1/sqrt(pi)) = sigma (sqrt(2) - 1) / sqrt(pi)
    assert crps_gaussian(0.0, 2.0, 0.0) == pytest.approx(2.0 * (np.sqrt(2) - 1) / np.sqrt(np.pi))


def test_spread_skill_is_one_for_a_calibrated_ensemble_and_below_one_when_underdispersive() -> None:
    rng = np.random.default_rng(2)
    truth_mean = rng.normal(size=(4000, 8))
    obs = truth_mean + rng.normal(size=truth_mean.shape)
    members = truth_mean + rng.normal(size=(5,) + truth_mean.shape)  # drawn like the observation
    assert spread_skill_ratio(members, obs) == pytest.approx(1.0, abs=0.03)
    tight = truth_mean + 0.3 * rng.normal(size=(5,) + truth_mean.shape)
    assert spread_skill_ratio(tight, obs) < 0.5


def test_zonal_spectrum_of_known_waves_and_parseval() -> None:
    lon = np.arange(64) * 2 * np.pi / 64
    field = 1.5 + 2.0 * np.cos(3 * lon) + 0.5 * np.sin(10 * lon)
    e = zonal_energy_spectrum(field)
    assert e.shape == (33,)
    np.testing.assert_allclose(e[[0, 3, 10]], [1.5**2, 2.0**2 / 2, 0.5**2 / 2], atol=1e-12)
    assert np.delete(e, [0, 3, 10]).max() < 1e-20
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 7, 36))
    np.testing.assert_allclose(zonal_energy_spectrum(x).sum(-1), (x**2).mean(-1), rtol=1e-12)
    np.testing.assert_allclose(
        zonal_energy_spectrum(np.swapaxes(x, 1, 2), longitude_axis=1).sum(-1),
        (x**2).mean(-1),
        rtol=1e-12,
    )
