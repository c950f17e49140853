"""Targets: analytic energies, normalizers, exact samplers, MCMC pools and their cache."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from icml26.envs.boltzmann import make_target
from icml26.envs.boltzmann.datasets import cache_path, mala_sample
from icml26.envs.boltzmann.targets import remove_mean


def test_gmm40_matches_fab_construction_and_is_normalized() -> None:
    t = make_target("gmm40")
    torch.manual_seed(0)
    means = (torch.rand((40, 2)) - 0.5) * 2 * 40  # FAB's construction, on the global generator
    assert torch.allclose(t.means.float(), means)
    assert t.std == pytest.approx(math.log1p(math.e), rel=1e-12)  # softplus(1)
    x = torch.randn(50, 2, dtype=torch.float64) * 20
    ref = np.log(
        np.mean(
            [stats.multivariate_normal(m, t.std**2).pdf(x.numpy()) for m in t.means.numpy()], axis=0
        )
    )
    assert np.allclose(-t.energy(x).numpy(), ref, atol=1e-8)
    g = torch.linspace(
        -48, 48, 401, dtype=torch.float64
    )  # h = 0.24 = 0.18 std: trapezoid exact for Gaussians
    xx, yy = torch.meshgrid(g, g, indexing="ij")
    mass = torch.exp(-t.energy(torch.stack([xx, yy], -1))).sum() * (g[1] - g[0]) ** 2
    assert float(mass) == pytest.approx(1.0, abs=1e-6)  # log Z = 0


def test_many_well_log_z_by_quadrature_and_exact_sampler() -> None:
    t = make_target("many_well32")
    z1, _ = integrate.quad(
        lambda x: math.exp(-(x**4 - 6 * x**2 - 0.5 * x)), -6, 6, epsabs=0, epsrel=1e-12
    )
    assert z1 == pytest.approx(11784.50927, rel=1e-8)
    assert t.log_z == pytest.approx(16 * (math.log(z1) + 0.5 * math.log(2 * math.pi)), abs=1e-6)
    x = t.sample(4000, seed=3).numpy()
    # the double-well coordinate follows p(x1) exactly: KS test against the quadrature CDF
    grid = np.linspace(-4, 4, 8001)
    pdf = np.exp(-(grid**4 - 6 * grid**2 - 0.5 * grid))
    cdf = np.cumsum(pdf) / pdf.sum()
    ks = stats.kstest(x[:, 0::2].ravel()[:20000], lambda v: np.interp(v, grid, cdf))
    assert ks.pvalue > 1e-3
    assert abs(x[:, 1::2].std() - 1.0) < 0.02
    # biased data: the exact target at T = 2 puts more mass in the left well than T = 1
    xb = t.sample_biased(4000, seed=3).numpy()
    assert (xb[:, 0::2] < 0).mean() > (x[:, 0::2] < 0).mean() + 0.05
    assert np.array_equal(t.sample(10, seed=5).numpy(), t.sample(10, seed=5).numpy())


def test_funnel_energy_is_neals_density() -> None:
    t = make_target("funnel10")
    x = t.sample(200, seed=1)
    ref = stats.norm(0, 3).logpdf(x[:, 0].numpy()) + stats.norm(
        0, np.exp(x[:, :1].numpy() / 2)
    ).logpdf(x[:, 1:].numpy()).sum(1)
    assert np.allclose(-t.energy(x).numpy(), ref, atol=1e-9)
    assert t.log_z == 0.0


def test_dw4_hand_worked_square() -> None:
    t = make_target("dw4")
    square = torch.tensor([[0, 0, 4, 0, 4, 4, 0, 4]], dtype=torch.float64)
    dg = 4 * math.sqrt(2) - 4
    expected = 4 * 0.0 + 2 * (0.9 * dg**4 - 4 * dg**2)  # four sides at d0 = 4, two diagonals
    assert float(t.energy(square)) == pytest.approx(expected, rel=1e-12)
    assert float(t.energy(square + 3.0)) == pytest.approx(
        expected, rel=1e-12
    )  # translation invariant


def test_lj13_convention_brute_force() -> None:
    t = make_target("lj13")
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(3, 39, generator=gen, dtype=torch.float64) * 3
    for xi in x:
        p = xi.reshape(13, 3).numpy()
        lj = sum(
            (1 / np.linalg.norm(p[i] - p[j])) ** 12 - 2 * (1 / np.linalg.norm(p[i] - p[j])) ** 6
            for i in range(13)
            for j in range(i + 1, 13)
        )
        osc = 0.5 * ((p - p.mean(0)) ** 2).sum()
        assert float(t.energy(xi)) == pytest.approx(lj + osc, rel=1e-10)
    two = torch.zeros(39, dtype=torch.float64)
    two[3:] = 50.0 + torch.arange(36, dtype=torch.float64) * 10  # particle pair at d = 1 dominates
    two[3:6] = torch.tensor([1.0, 0.0, 0.0])
    lj_only = float(t.energy(two)) - 0.5 * float((remove_mean(two, 13, 3) ** 2).sum())
    assert lj_only == pytest.approx(-1.0, abs=1e-3)  # pair minimum -epsilon at r_m = 1


def test_exact_dataset_labels_and_determinism() -> None:
    t = make_target("gmm40")
    a = t.dataset(100, "biased", "train", seed=4)
    b = t.dataset(100, "biased", "train", seed=4)
    c = t.dataset(100, "biased", "train", seed=5)
    assert np.array_equal(a.x, b.x) and not np.array_equal(a.x, c.x)
    assert np.allclose(a.energy, t.energy(torch.from_numpy(a.x).double()).numpy())
    with pytest.raises(ValueError, match="data kind"):
        t.dataset(10, "hot")
    with pytest.raises(ValueError, match="split"):
        t.dataset(10, "unbiased", "valid")


def test_mala_samples_a_gaussian() -> None:
    def energy(x: torch.Tensor) -> torch.Tensor:
        return 0.5 * (x[..., 0] ** 2 / 4.0 + x[..., 1] ** 2)

    s = mala_sample(energy, np.zeros((32, 2)), 200, 5, 300, seed=0, step=0.1, progress=False)
    assert abs(s[:, 0].var() - 4.0) < 0.4 and abs(s[:, 1].var() - 1.0) < 0.1
    assert abs(s.mean(0)).max() < 0.15


def test_particle_pool_cached_and_centre_of_mass_free(monkeypatch: pytest.MonkeyPatch) -> None:
    t = make_target("dw4", data_preset="tiny")
    pool = t.pool("unbiased", "train")
    assert pool.x.shape == (8 * 16, 8)
    assert np.abs(pool.x.reshape(-1, 4, 2).mean(1)).max() < 1e-5
    assert np.allclose(pool.energy, t.energy(torch.from_numpy(pool.x).double()).numpy())
    import icml26.envs.boltzmann.targets as targets_mod

    monkeypatch.setattr(
        targets_mod,
        "mala_sample",
        lambda *a, **k: (_ for _ in ()).throw(AssertionError("regenerated")),
    )
    again = t.pool("unbiased", "train")  # from the cache, no MCMC
    assert np.array_equal(again.x, pool.x)
    path = cache_path("mcmc", again.meta)
    assert path.exists() and "boltzmann" in str(path)
    sub = t.dataset(20, "unbiased", "train", seed=1)
    assert len(sub) == 20 and set(map(tuple, sub.x)) <= set(map(tuple, pool.x))
    with pytest.raises(ValueError, match="holds"):
        t.dataset(10_000, "unbiased", "train")


def test_unknown_target_suggests_names() -> None:
    with pytest.raises(KeyError, match="gmm40"):
        make_target("gmm4")
