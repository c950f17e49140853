"""Alanine dipeptide: torch force field vs OpenMM, batched Context reuse, geometry, MD data."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch

openmm = pytest.importorskip("openmm")

from icml26.envs.boltzmann import make_target  # noqa: E402
from icml26.envs.boltzmann.alanine import AmberTorchEnergy, OpenMMEnergy, build_system  # noqa: E402
from icml26.envs.boltzmann.geometry import ALANINE_ZMATRIX, ZMatrix, dihedral, ramachandran  # noqa: E402


def _fresh_context_energy(system: object, x: np.ndarray) -> tuple[float, np.ndarray]:
    """Reference: a brand-new Context for one configuration (independent of OpenMMEnergy)."""
    ctx = openmm.Context(
        system, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName("Reference")
    )
    ctx.setPositions(openmm.unit.Quantity(x.reshape(22, 3).tolist(), openmm.unit.nanometer))
    s = ctx.getState(getEnergy=True, getForces=True)
    e = s.getPotentialEnergy().value_in_unit(openmm.unit.kilojoule_per_mole)
    f = s.getForces(asNumpy=True).value_in_unit(
        openmm.unit.kilojoule_per_mole / openmm.unit.nanometer
    )
    return e, np.asarray(f).reshape(-1)


@pytest.fixture(scope="module")
def md_tiny() -> object:
    return make_target("aldp", backend="openmm", data_preset="tiny")


@pytest.fixture(scope="module")
def configs(md_tiny: object) -> np.ndarray:
    frames = md_tiny.pool("unbiased", "train").x[:24].astype(np.float64)  # type: ignore[attr-defined]
    rng = np.random.default_rng(0)
    return np.concatenate([frames, frames[:8] + 0.01 * rng.standard_normal((8, 66))])


def test_torch_force_field_matches_openmm(configs: np.ndarray) -> None:
    system, _, _ = build_system("vacuum")
    ff = AmberTorchEnergy(system)
    x = torch.from_numpy(configs).requires_grad_(True)
    e = ff(x)
    (g,) = torch.autograd.grad(e.sum(), x)
    for i, xi in enumerate(configs):
        e_ref, f_ref = _fresh_context_energy(system, xi)
        assert abs(float(e[i].detach()) - e_ref) < 1e-3  # kJ/mol
        assert np.abs(-g[i].numpy() - f_ref).max() < 1e-6 * max(1.0, np.abs(f_ref).max()) + 1e-3


def test_batched_openmm_reuses_one_context_and_matches_fresh_contexts(configs: np.ndarray) -> None:
    energy = OpenMMEnergy("vacuum")
    e, f = energy(configs[:6], forces=True)
    ctx = energy._context
    e2, _ = energy(configs[6:9])
    assert energy._context is ctx  # the same Context for every batch
    system, _, _ = build_system("vacuum")
    for i in range(6):
        e_ref, f_ref = _fresh_context_energy(system, configs[i])
        assert e[i] == pytest.approx(e_ref, abs=1e-6)
        assert np.allclose(f[i], f_ref, atol=1e-6)
    clone = pickle.loads(pickle.dumps(energy))  # the Context is dropped and rebuilt
    assert clone._context is None
    assert np.allclose(clone(configs[6:9])[0], e2)


def test_implicit_solvent_obc1(configs: np.ndarray) -> None:
    system, _, _ = build_system("obc1")
    assert any(type(f).__name__ in ("GBSAOBCForce", "CustomGBForce") for f in system.getForces())
    e, _ = OpenMMEnergy("obc1")(configs[:3])
    vac, _ = OpenMMEnergy("vacuum")(configs[:3])
    for i in range(3):
        assert e[i] == pytest.approx(
            _fresh_context_energy(system, configs[i])[0], abs=1e-3
        )  # CPU platform (mixed precision) vs Reference
    assert np.all(e < vac - 20)  # the polar peptide is stabilized by solvation (tens of kJ/mol)
    with pytest.raises(ValueError, match="vacuum only"):
        make_target("aldp_implicit", backend="torch")


def test_reduced_energy_is_u_over_kt(configs: np.ndarray) -> None:
    t_torch = make_target("aldp", backend="torch")
    t_omm = make_target("aldp", backend="openmm")
    kt = 0.00831446261815324 * 300.0
    x = torch.from_numpy(configs[:4])
    raw, _ = OpenMMEnergy("vacuum")(configs[:4])
    assert np.allclose(t_omm.energy(x).numpy(), raw / kt, atol=1e-9)
    assert np.allclose(t_torch.energy(x).numpy(), raw / kt, atol=1e-3 / kt)


def test_zmatrix_roundtrip_and_energy_invariance(configs: np.ndarray) -> None:
    x = torch.from_numpy(configs)
    b, a, t = ALANINE_ZMATRIX.to_internal(x)
    assert b.shape[-1] + a.shape[-1] + t.shape[-1] == 60
    y = ALANINE_ZMATRIX.to_cartesian(b, a, t)
    b2, a2, t2 = ALANINE_ZMATRIX.to_internal(y)
    assert torch.allclose(b, b2) and torch.allclose(a, a2)
    assert torch.allclose(
        torch.remainder(t - t2 + math.pi, 2 * math.pi) - math.pi, torch.zeros_like(t), atol=1e-10
    )
    ff = AmberTorchEnergy()
    assert torch.allclose(ff(x), ff(y), atol=1e-8)  # rigid motion only
    phi, psi = ramachandran(x)
    assert torch.allclose(phi, t[:, 2]) and torch.allclose(
        psi, dihedral(*(x.reshape(-1, 22, 3)[:, i] for i in (16, 14, 8, 6)))
    )


def test_dihedral_convention_hand_worked() -> None:
    a, b, c = torch.tensor([1.0, 0, 0]), torch.tensor([0.0, 0, 0]), torch.tensor([0.0, 1, 0])
    assert float(dihedral(a, b, c, torch.tensor([1.0, 1, 0]))) == pytest.approx(0.0)  # cis
    assert abs(float(dihedral(a, b, c, torch.tensor([-1.0, 1, 0])))) == pytest.approx(
        math.pi
    )  # trans
    # IUPAC sign: clockwise rotation of the far bond seen along b -> c is positive
    assert float(dihedral(a, b, c, torch.tensor([0.0, 1, -1]))) == pytest.approx(math.pi / 2)


def test_log_jacobian_is_the_volume_factor() -> None:
    """x = R(euler) z(ic) + t: |det dx/d(ic, euler, t)| = J(ic) * sin(beta) (ZYZ Haar factor)."""
    zm = ZMatrix((0, 1, 2), [(3, 2, 1, 0)])

    def rot(al: torch.Tensor, be: torch.Tensor, ga: torch.Tensor) -> torch.Tensor:
        def rz(t: torch.Tensor) -> torch.Tensor:
            c, s = torch.cos(t), torch.sin(t)
            return torch.stack(
                [
                    torch.stack([c, -s, 0 * c]),
                    torch.stack([s, c, 0 * c]),
                    torch.stack([0 * c, 0 * c, 1 + 0 * c]),
                ]
            )

        c, s = torch.cos(be), torch.sin(be)
        ry = torch.stack(
            [
                torch.stack([c, 0 * c, s]),
                torch.stack([0 * c, 1 + 0 * c, 0 * c]),
                torch.stack([-s, 0 * c, c]),
            ]
        )
        return rz(al) @ ry @ rz(ga)

    def cart(p: torch.Tensor) -> torch.Tensor:
        ic, eu, tr = p[:6], p[6:9], p[9:]
        z = zm.to_cartesian(ic[:3], ic[3:5], ic[5:6]).reshape(4, 3)
        return (z @ rot(*eu).T + tr).reshape(-1)

    for ic in ([0.15, 0.11, 0.13, 1.9, 2.0, 0.7], [0.10, 0.14, 0.12, 1.2, 2.6, -2.2]):
        p = torch.tensor(ic + [0.3, 1.1, -0.4, 0.1, 0.2, 0.3], dtype=torch.float64)
        logdet = torch.linalg.slogdet(torch.autograd.functional.jacobian(cart, p))[1]
        ict = torch.tensor(ic, dtype=torch.float64)
        expected = ZMatrix.log_jacobian(ict[:3], ict[3:5]) + math.log(math.sin(1.1))
        assert float(logdet) == pytest.approx(float(expected), abs=1e-9)


def test_md_pool_labels_cache_and_bias(md_tiny: object, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = md_tiny.pool("unbiased", "train")  # type: ignore[attr-defined]
    biased = md_tiny.pool("biased", "train")  # type: ignore[attr-defined]
    assert pool.x.dtype == np.float32 and pool.x.shape == (256, 66)
    system, _, _ = build_system("vacuum")
    kt = 0.00831446261815324 * 300.0
    for i in (0, 100, 255):
        assert pool.energy[i] == pytest.approx(
            _fresh_context_energy(system, pool.x[i].astype(np.float64))[0] / kt, abs=1e-8
        )
        assert biased.energy[i] == pytest.approx(
            _fresh_context_energy(system, biased.x[i].astype(np.float64))[0] / kt, abs=1e-8
        )
    assert biased.energy.mean() > pool.energy.mean() + 5  # 600 K frames, 300 K labels
    acc = pool.meta["exchange_acceptance"]
    assert len(acc) == 1 and 0.0 < acc[0] <= 1.0
    import icml26.envs.boltzmann.md as md

    monkeypatch.setattr(
        md, "run_langevin", lambda *a, **k: (_ for _ in ()).throw(AssertionError("regenerated"))
    )
    assert np.array_equal(md_tiny.pool("unbiased", "train").x, pool.x)  # type: ignore[attr-defined]


def test_openmm_worker_pool_matches_single_context(configs: np.ndarray) -> None:
    single, _ = OpenMMEnergy("vacuum")(configs[:8])
    pooled_energy = OpenMMEnergy("vacuum", n_workers=2)
    try:
        pooled, _ = pooled_energy(configs[:8])
    finally:
        pooled_energy.close()
    assert np.allclose(single, pooled, atol=1e-9)
