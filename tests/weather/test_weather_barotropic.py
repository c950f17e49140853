"""The spectral barotropic vorticity model: exact transforms, conservation, an analytic wave."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.envs.weather.barotropic import (
    BarotropicModel,
    SphereGrid,
    rossby_haurwitz,
    rossby_haurwitz_speed,
)

GRID = SphereGrid(trunc=21, nlat=32)


def _random_spec(seed: int, amp: float = 1e-5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    spec = (rng.normal(size=GRID.valid.shape) + 1j * rng.normal(size=GRID.valid.shape)) * GRID.valid
    spec[0] = spec[0].real  # m = 0 coefficients of a real field are real
    spec = spec * amp / (1.0 + GRID.n) ** 1.5
    spec[:, 0] = 0.0  # no n = 0 vorticity on a sphere
    return spec


def test_legendre_functions_are_orthonormal_and_transforms_round_trip() -> None:
    gram = np.einsum("nj,kj->nk", GRID.P[3] * GRID.weights, GRID.P[3])
    np.testing.assert_allclose(gram[3:, 3:], np.eye(19), atol=1e-12)
    spec = _random_spec(0)
    np.testing.assert_allclose(GRID.to_spectral(GRID.to_grid(spec)), spec, atol=1e-18)
    # a pure Y_1^0 = sqrt(3/2) mu field: its Laplacian is -2 / a^2 times itself
    mu_field = np.repeat(GRID.mu[:, None], GRID.nlon, axis=1)
    coef = GRID.to_spectral(mu_field)
    assert abs(coef[0, 1]) == pytest.approx(np.sqrt(2.0 / 3.0), rel=1e-12)
    np.testing.assert_allclose(
        GRID.to_grid(coef * GRID.lap), -2.0 / GRID.radius**2 * mu_field, rtol=1e-10
    )
    with pytest.raises(ValueError, match="aliases"):
        SphereGrid(trunc=42, nlat=32)


def test_rossby_haurwitz_wave_drifts_at_the_analytic_speed() -> None:
    model = BarotropicModel(GRID)
    z0 = rossby_haurwitz(GRID)
    dt, steps = 900.0, 96  # one day
    z1 = model.integrate(z0, dt, steps)
    expected = z0 * np.exp(-1j * GRID.m * rossby_haurwitz_speed() * dt * steps)
    assert np.abs(z1 - expected).max() < 1e-8 * np.abs(z0).max()


def test_unforced_inviscid_flow_conserves_energy_and_enstrophy_over_a_day() -> None:
    model = BarotropicModel(GRID)
    z0 = _random_spec(1)
    e0, s0 = model.energy(z0), model.enstrophy(z0)
    z1 = model.integrate(z0, 600.0, 144)
    assert np.abs(z1 - z0).max() > 0.5 * np.abs(z0).max()  # the flow evolved (nonlinearly)
    assert model.energy(z1) == pytest.approx(e0, rel=1e-7)
    assert model.enstrophy(z1) == pytest.approx(s0, rel=1e-7)
    # with drag, energy decays by exp(-2 kappa t)
    damped = BarotropicModel(GRID, drag=1.0 / (5 * 86400.0))
    z2 = damped.integrate(z0, 600.0, 144)
    assert damped.energy(z2) == pytest.approx(e0 * np.exp(-2 * 86400.0 / (5 * 86400.0)), rel=1e-5)


def test_barotropic_source_generates_a_seeded_weatherbench_dataset(tmp_path, monkeypatch) -> None:
    from icml26.envs.weather.sources import open_source

    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    kw = {"spinup_days": 2.0, "progress": False}
    ds = open_source("barotropic", "2000-01-01", "2000-01-02T18", **kw)
    assert ds["geopotential"].sizes == {"time": 8, "level": 1, "latitude": 32, "longitude": 64}
    assert set(ds.data_vars) >= {"geopotential", "u_component_of_wind", "v_component_of_wind"}
    assert np.all(np.diff(ds.latitude.values) > 0)
    u = ds["u_component_of_wind"].sel(level=500).values
    assert 20.0 < u.max() < 60.0  # the forced mid-latitude jet
    from icml26.envs.weather.barotropic import generate_barotropic

    again = generate_barotropic("2000-01-01", "2000-01-02T18", **kw)
    np.testing.assert_array_equal(again["geopotential"].values, ds["geopotential"].values)
    other = generate_barotropic("2000-01-01", "2000-01-02T18", seed=1, **kw)
    assert not np.array_equal(other["geopotential"].values, ds["geopotential"].values)


def test_hyperdiffusion_options_are_checked_and_scale_selective() -> None:
    from icml26.envs.weather.barotropic import generate_barotropic

    with pytest.raises(ValueError, match="hyperdiffusion_order"):
        generate_barotropic(end="2000-01-01T06", hyperdiffusion_order=3, progress=False)
    g = SphereGrid(10, 16)
    lmax = 10 * 11.0
    for order in (4, 8):
        m = BarotropicModel(g, hyperdiffusion_time=3600.0, order=order)
        n = 5  # damping rate of total wavenumber 5 relative to the truncation scale
        rate = m._damp[0, n] * 3600.0
        assert rate == pytest.approx((n * (n + 1) / lmax) ** (order // 2), rel=1e-9)
