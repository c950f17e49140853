"""Alanine dipeptide (22 atoms, 66 Cartesian coordinates in nm) through OpenMM and in torch.

The Amber files are the ones shipped inside openmmtools
(``openmmtools/data/alanine-dipeptide-gbsa/alanine-dipeptide.{prmtop,crd}``), loaded with
``openmm.app.AmberPrmtopFile``: no cutoff, ``constraints=None`` (every bond is flexible, as a
Boltzmann generator needs), vacuum or OBC1 implicit solvent, 300 K.

* :class:`OpenMMEnergy` evaluates batches with one reused ``Context`` per worker (never one per
  configuration); ``n_workers > 1`` spreads a batch over a spawn process pool, each worker with
  its own Context.
* :class:`AmberTorchEnergy` is a vectorized torch implementation of the vacuum force field
  (harmonic bonds and angles, periodic torsions, Lennard-Jones + Coulomb with Amber's scaled
  1-4 pairs and exclusions), read from the same OpenMM ``System`` and checked against OpenMM to
  1e-3 kJ/mol in the tests; it is differentiable, so flows can use forces.
* :class:`AlanineDipeptide` is the :class:`~icml26.envs.boltzmann.targets.Target`: reduced
  energy ``u = U / (k_B T)``, MD data pools (:mod:`icml26.envs.boltzmann.md`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icml26.envs.boltzmann.datasets import BoltzmannDataset
from icml26.envs.boltzmann.openmm_energy import (
    KB_KJ_PER_MOL_K,
    SOLVENTS,
    OpenMMEnergy,
    alanine_files,
    build_system,
)
from icml26.envs.boltzmann.targets import DATA_KINDS, SPLITS, Target

ONE_4PI_EPS0 = 138.935456  # kJ nm / (mol e^2), OpenMM's Coulomb constant (SimTKOpenMMRealType.h)

__all__ = [
    "KB_KJ_PER_MOL_K",
    "ONE_4PI_EPS0",
    "alanine_files",
    "build_system",
    "OpenMMEnergy",
    "AmberTorchEnergy",
    "AlanineDipeptide",
    "SOLVENTS",
]


# ----------------------------------------------------------------------------- torch force field
class AmberTorchEnergy:
    """The vacuum Amber energy (kJ/mol) of configurations ``(..., 66)`` in nm, in torch.

    Terms (OpenMM's functional forms): ``0.5 k (r - r0)^2``, ``0.5 k (theta - theta0)^2``,
    ``k (1 + cos(n phi - phase))``, and over every non-excluded pair ``4 eps ((s/r)^12 - (s/r)^6)
    + ONE_4PI_EPS0 q_i q_j / r`` with Lorentz-Berthelot mixing, Amber's 1-4 pairs taking their
    scaled ``chargeProd``, ``sigma`` and ``epsilon`` from the ``NonbondedForce`` exceptions.
    Computed in float64.
    """

    def __init__(self, system: Any | None = None) -> None:  # noqa: C901
        import openmm

        if system is None:
            system, _, _ = build_system("vacuum")
        bonds, angles, torsions, nb = [], [], [], None
        for force in system.getForces():
            if isinstance(force, openmm.HarmonicBondForce):
                for i in range(force.getNumBonds()):
                    a, b, r0, k = force.getBondParameters(i)
                    bonds.append((a, b, r0._value, k._value))
            elif isinstance(force, openmm.HarmonicAngleForce):
                for i in range(force.getNumAngles()):
                    a, b, c, t0, k = force.getAngleParameters(i)
                    angles.append((a, b, c, t0._value, k._value))
            elif isinstance(force, openmm.PeriodicTorsionForce):
                for i in range(force.getNumTorsions()):
                    a, b, c, d, n, ph, k = force.getTorsionParameters(i)
                    torsions.append((a, b, c, d, n, ph._value, k._value))
            elif isinstance(force, openmm.NonbondedForce):
                nb = force
            elif isinstance(force, openmm.CMMotionRemover):
                continue
            else:
                raise ValueError(
                    f"AmberTorchEnergy implements the vacuum force field only; the System has "
                    f"{type(force).__name__}"
                )
        if nb is None:
            raise ValueError("AmberTorchEnergy: the System has no NonbondedForce")
        t = torch.tensor
        self.bond_idx = t([b[:2] for b in bonds], dtype=torch.long)
        self.bond_r0, self.bond_k = t([b[2] for b in bonds]), t([b[3] for b in bonds])
        self.angle_idx = t([a[:3] for a in angles], dtype=torch.long)
        self.angle_t0, self.angle_k = t([a[3] for a in angles]), t([a[4] for a in angles])
        self.tors_idx = t([d[:4] for d in torsions], dtype=torch.long)
        self.tors_n = t([float(d[4]) for d in torsions])
        self.tors_phase, self.tors_k = t([d[5] for d in torsions]), t([d[6] for d in torsions])
        n = system.getNumParticles()
        q = np.empty(n)
        sig = np.empty(n)
        eps = np.empty(n)
        for i in range(n):
            qi, si, ei = nb.getParticleParameters(i)
            q[i], sig[i], eps[i] = qi._value, si._value, ei._value
        pairs: dict[tuple[int, int], tuple[float, float, float]] = {}
        for i in range(n):
            for j in range(i + 1, n):
                pairs[(i, j)] = (q[i] * q[j], 0.5 * (sig[i] + sig[j]), math.sqrt(eps[i] * eps[j]))
        for k in range(nb.getNumExceptions()):
            i, j, qq, s, e = nb.getExceptionParameters(k)
            key = (min(i, j), max(i, j))
            if qq._value == 0.0 and e._value == 0.0:
                pairs.pop(key, None)  # excluded pair (1-2, 1-3)
            else:
                pairs[key] = (qq._value, s._value, e._value)  # scaled 1-4 pair
        keys = sorted(pairs)
        self.pair_idx = t(keys, dtype=torch.long)
        vals = np.array([pairs[k] for k in keys])
        self.pair_qq, self.pair_sig, self.pair_eps = (t(vals[:, c]) for c in range(3))
        self.n_atoms = n

    def __call__(self, x: Tensor) -> Tensor:
        """U(x) in kJ/mol for ``x`` of shape ``(..., 66)`` (nm); float64.

        Coordinates are split into x, y, z planes ``(..., 22)`` so every geometric quantity is
        an elementwise expression over ``(..., n_terms)`` (no reductions over size-3 axes)."""
        c = x.to(torch.float64).reshape(*x.shape[:-1], self.n_atoms, 3)
        planes = (c[..., 0], c[..., 1], c[..., 2])

        def vec(i: Tensor, j: Tensor) -> tuple[Tensor, Tensor, Tensor]:  # x_i - x_j
            return tuple(
                torch.index_select(p, -1, i) - torch.index_select(p, -1, j) for p in planes
            )  # type: ignore[return-value]

        def dot(a: tuple[Tensor, ...], b: tuple[Tensor, ...]) -> Tensor:
            return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]

        def cross(a: tuple[Tensor, ...], b: tuple[Tensor, ...]) -> tuple[Tensor, Tensor, Tensor]:
            return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])

        b = self.bond_idx
        d = vec(b[:, 0], b[:, 1])
        r = torch.sqrt(dot(d, d))
        e = (0.5 * self.bond_k * (r - self.bond_r0) ** 2).sum(-1)
        a = self.angle_idx
        u, v = vec(a[:, 0], a[:, 1]), vec(a[:, 2], a[:, 1])
        w = cross(u, v)
        theta = torch.atan2(torch.sqrt(dot(w, w)), dot(u, v))
        e = e + (0.5 * self.angle_k * (theta - self.angle_t0) ** 2).sum(-1)
        t = self.tors_idx
        b0, b1, b2 = vec(t[:, 0], t[:, 1]), vec(t[:, 2], t[:, 1]), vec(t[:, 3], t[:, 2])
        inv = torch.rsqrt(dot(b1, b1))
        b1n = tuple(q * inv for q in b1)
        p0, p2 = dot(b0, b1n), dot(b2, b1n)
        vv = tuple(q - p0 * n for q, n in zip(b0, b1n))
        ww = tuple(q - p2 * n for q, n in zip(b2, b1n))
        phi = torch.atan2(dot(cross(b1n, vv), ww), dot(vv, ww))  # IUPAC, as geometry.dihedral
        e = e + (self.tors_k * (1 + torch.cos(self.tors_n * phi - self.tors_phase))).sum(-1)
        p = self.pair_idx
        d = vec(p[:, 0], p[:, 1])
        r2 = dot(d, d)
        sr6 = (self.pair_sig**2 / r2) ** 3
        e = e + (
            4 * self.pair_eps * (sr6 * sr6 - sr6) + ONE_4PI_EPS0 * self.pair_qq * torch.rsqrt(r2)
        ).sum(-1)
        return e


# ----------------------------------------------------------------------------- target
class AlanineDipeptide(Target):
    """Alanine dipeptide at ``temperature`` (300 K) in vacuum or OBC1 implicit solvent.

    ``energy(x)`` is the reduced energy ``U(x) / (k_B T)`` of ``(..., 66)`` Cartesian coordinates
    in nm. ``backend="torch"`` (vacuum only; differentiable) or ``"openmm"`` (a reused Context;
    energies without autograd, forces from OpenMM). Densities are with respect to Cartesian
    volume modulo rigid motion (:mod:`icml26.envs.boltzmann.geometry`); log Z is unknown.

    Data pools come from OpenMM Langevin MD (:func:`icml26.envs.boltzmann.md.alanine_pool`):
    ``"unbiased"`` is parallel tempering whose 300 K replica is kept, ``"biased"`` a 600 K run;
    both labelled with the 300 K reduced energy. ``data_preset`` picks the run lengths
    (``"full"`` for experiments, ``"tiny"`` for tests).
    """

    dim, geometry, exact, log_z, scale = 66, "alanine", False, None, 0.1

    def __init__(
        self,
        solvent: str = "vacuum",
        temperature: float = 300.0,
        backend: str | None = None,
        data_preset: str = "full",
        n_workers: int = 1,
        bias_temperature: float = 600.0,
    ) -> None:
        if solvent not in SOLVENTS:
            raise ValueError(
                f"alanine dipeptide: solvent must be one of {SOLVENTS}, got {solvent!r}"
            )
        backend = backend or ("torch" if solvent == "vacuum" else "openmm")
        if backend not in ("torch", "openmm"):
            raise ValueError(
                f"alanine dipeptide: backend must be 'torch' or 'openmm', got {backend!r}"
            )
        if backend == "torch" and solvent != "vacuum":
            raise ValueError(
                "alanine dipeptide: the torch force field covers vacuum only; use backend='openmm'"
            )
        from icml26.envs.boltzmann.md import PRESETS

        if data_preset not in PRESETS:
            raise ValueError(
                f"alanine dipeptide: data_preset must be one of {sorted(PRESETS)}, got {data_preset!r}"
            )
        self.solvent, self.temperature, self.backend = solvent, float(temperature), backend
        self.data_preset, self.bias_temperature = data_preset, float(bias_temperature)
        self.name = "aldp" if solvent == "vacuum" else "aldp_implicit"
        self.kt = KB_KJ_PER_MOL_K * self.temperature  # kJ/mol
        self.bias = f"MD at {self.bias_temperature:g} K"
        self.openmm = OpenMMEnergy(solvent, n_workers=n_workers)
        self._torch_ff: AmberTorchEnergy | None = None

    @property
    def torch_ff(self) -> AmberTorchEnergy:
        if self._torch_ff is None:
            if self.solvent != "vacuum":
                raise ValueError("the torch force field covers vacuum only")
            self._torch_ff = AmberTorchEnergy()
        return self._torch_ff

    def energy(self, x: Tensor) -> Tensor:
        if self.backend == "torch":
            return (self.torch_ff(x) / self.kt).to(
                x.dtype if x.is_floating_point() else torch.float64
            )
        e, _ = self.openmm(x.detach().reshape(-1, self.dim).cpu().numpy())
        return torch.from_numpy(e / self.kt).reshape(x.shape[:-1]).to(x.dtype)

    def energy_and_forces(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if self.backend == "torch":
            return super().energy_and_forces(x)
        e, f = self.openmm(x.detach().reshape(-1, self.dim).cpu().numpy(), forces=True)
        return torch.from_numpy(e / self.kt), torch.from_numpy(f / self.kt)  # type: ignore[operator]

    def minimum_structure(self) -> np.ndarray:
        """The crd structure (nm, shape (66,))."""
        return build_system(self.solvent)[2].reshape(-1)

    def pool(self, kind: str, split: str) -> BoltzmannDataset:
        if kind not in DATA_KINDS or split not in SPLITS:
            raise ValueError(f"{self.name}: unknown pool {kind}/{split}")
        from icml26.envs.boltzmann.md import alanine_pool

        return alanine_pool(self, kind, split)
