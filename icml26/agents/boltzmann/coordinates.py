"""Maps between a target's physical coordinates and a flow's coordinates, with log-determinants.

* :class:`Standardize`: ``y = (x - mean) / std`` (Euclidean targets).
* :class:`CenterOfMassFree`: particles with the centre of mass fixed at 0: an orthonormal basis
  of the zero-mean subspace (``(n - 1) d`` coordinates), then standardization. Densities are
  with respect to Lebesgue measure on that subspace, as the target's.
* :class:`AlanineInternal`: the internal-coordinate transform of alanine dipeptide (Z-matrix of
  :mod:`icml26.envs.boltzmann.geometry`): ``log r`` for bonds and ``logit(theta / pi)`` for
  angles (standardized), torsions shifted by their circular mean (circular coordinates, except
  narrow single-peaked torsions, which are standardized like the others). Its
  log-determinant includes ``-log J`` so densities are with respect to Cartesian volume modulo
  rigid motion, the measure of the target.

Every map: ``to_flow(x) -> (y, log|dy/dx|)``, ``to_phys(y) -> (x, log|dx/dy|)``, ``circular``
(bool per flow coordinate), ``flow_dim``; ``fit(x)`` sets the statistics from data.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn

from icml26.envs.boltzmann.geometry import ALANINE_ZMATRIX, ZMatrix

__all__ = [
    "CoordinateMap",
    "Standardize",
    "CenterOfMassFree",
    "AlanineInternal",
    "make_coordinate_map",
]


class CoordinateMap(nn.Module):
    """Base class; subclasses implement ``to_flow`` and ``to_phys``."""

    flow_dim: int
    circular: list[bool]

    def to_flow(self, x: Tensor) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def to_phys(self, y: Tensor) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def fit(self, x: Tensor) -> CoordinateMap:
        return self


class Standardize(CoordinateMap):
    def __init__(self, dim: int, scale: float = 1.0) -> None:
        super().__init__()
        self.flow_dim, self.circular = dim, [False] * dim
        self.register_buffer("mean", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("std", torch.full((dim,), float(scale), dtype=torch.float64))

    def fit(self, x: Tensor) -> Standardize:
        x = x.to(torch.float64)
        self.mean.copy_(x.mean(0))
        self.std.copy_(x.std(0).clamp_min(1e-6))
        return self

    def to_flow(self, x: Tensor) -> tuple[Tensor, Tensor]:
        y = (x.to(torch.float64) - self.mean) / self.std
        return y, torch.full(x.shape[:-1], -float(torch.log(self.std).sum()), dtype=torch.float64)

    def to_phys(self, y: Tensor) -> tuple[Tensor, Tensor]:
        x = y.to(torch.float64) * self.std + self.mean
        return x, torch.full(y.shape[:-1], float(torch.log(self.std).sum()), dtype=torch.float64)


def _helmert_basis(n: int, d: int) -> Tensor:
    """``(n d, (n - 1) d)`` orthonormal basis of particle configurations with zero mean."""
    h = np.zeros((n, n - 1))
    for k in range(1, n):
        h[:k, k - 1] = 1.0 / math.sqrt(k * (k + 1))
        h[k, k - 1] = -k / math.sqrt(k * (k + 1))
    return torch.from_numpy(np.kron(h, np.eye(d)))


class CenterOfMassFree(CoordinateMap):
    def __init__(self, n_particles: int, spatial_dim: int, scale: float = 1.0) -> None:
        super().__init__()
        self.n, self.d = n_particles, spatial_dim
        self.flow_dim = (n_particles - 1) * spatial_dim
        self.circular = [False] * self.flow_dim
        self.register_buffer("basis", _helmert_basis(n_particles, spatial_dim))
        self.inner = Standardize(self.flow_dim, scale)

    def fit(self, x: Tensor) -> CenterOfMassFree:
        self.inner.fit(x.to(torch.float64) @ self.basis)
        return self

    def to_flow(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return self.inner.to_flow(x.to(torch.float64) @ self.basis)

    def to_phys(self, y: Tensor) -> tuple[Tensor, Tensor]:
        c, ladj = self.inner.to_phys(y)
        return c @ self.basis.T, ladj


class AlanineInternal(CoordinateMap):
    """Cartesian (66, nm) <-> 60 flow coordinates: 21 log-bonds and 20 logit-angles
    (standardized), then 19 torsions centred on their circular mean. ``fit`` makes a torsion
    whose circular standard deviation in the data is below ``narrow_torsion`` radians an
    ordinary standardized coordinate (its distribution is a single peak many standard deviations
    away from the cut at +-pi); the others (phi, psi, methyl rotors) stay circular."""

    def __init__(self, zmatrix: ZMatrix = ALANINE_ZMATRIX, narrow_torsion: float = 0.5) -> None:
        super().__init__()
        self.z = zmatrix
        nb, na, nt = zmatrix.n_atoms - 1, zmatrix.n_atoms - 2, zmatrix.n_atoms - 3
        self.nb, self.na, self.nt = nb, na, nt
        self.narrow_torsion = float(narrow_torsion)
        self.flow_dim = nb + na + nt
        self.register_buffer("mean", torch.zeros(nb + na, dtype=torch.float64))
        self.register_buffer("std", torch.ones(nb + na, dtype=torch.float64))
        self.register_buffer("center", torch.zeros(nt, dtype=torch.float64))
        self.register_buffer(
            "tscale", torch.ones(nt, dtype=torch.float64)
        )  # 1 for circular torsions
        self.register_buffer("tcirc", torch.ones(nt, dtype=torch.bool))

    @property
    def circular(self) -> list[bool]:  # type: ignore[override]
        return [False] * (self.nb + self.na) + [bool(c) for c in self.tcirc]

    def _raw(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        bonds, angles, torsions = self.z.to_internal(x.to(torch.float64))
        a = angles / math.pi
        real = torch.cat([torch.log(bonds), torch.log(a) - torch.log1p(-a)], -1)
        # log|d real / d ic|: -log r per bond, log(pi / (theta (pi - theta))) per angle
        ladj = -torch.log(bonds).sum(-1) + torch.log(math.pi / (angles * (math.pi - angles))).sum(
            -1
        )
        return real, torsions, ladj, ZMatrix.log_jacobian(bonds, angles)

    def fit(self, x: Tensor) -> AlanineInternal:
        real, tors, _, _ = self._raw(x)
        self.mean.copy_(real.mean(0))
        self.std.copy_(real.std(0).clamp_min(1e-4))
        s, c = torch.sin(tors).mean(0), torch.cos(tors).mean(0)
        self.center.copy_(torch.atan2(s, c))
        circ_std = torch.sqrt(-2 * torch.log(torch.sqrt(s**2 + c**2).clamp(1e-12, 1.0)))
        narrow = circ_std < self.narrow_torsion
        self.tcirc.copy_(~narrow)
        spread = _wrap(tors - self.center).std(0).clamp_min(1e-3)
        self.tscale.copy_(torch.where(narrow, spread, torch.ones_like(spread)))
        return self

    def fit_structure(
        self, x0: Tensor, bond_std: float = 0.03, angle_std: float = 0.1
    ) -> AlanineInternal:
        """Statistics from one structure and typical 300 K spreads (for training without data);
        every torsion stays circular."""
        real, tors, _, _ = self._raw(x0.reshape(1, -1))
        self.mean.copy_(real[0])
        self.std.copy_(
            torch.cat(
                [torch.full((self.nb,), bond_std), torch.full((self.na,), angle_std)]
            ).double()
        )
        self.center.copy_(tors[0])
        self.tcirc.fill_(True)
        self.tscale.fill_(1.0)
        return self

    def to_flow(self, x: Tensor) -> tuple[Tensor, Tensor]:
        real, tors, ladj, log_j = self._raw(x)
        y = torch.cat([(real - self.mean) / self.std, _wrap(tors - self.center) / self.tscale], -1)
        return y, ladj - torch.log(self.std).sum() - torch.log(self.tscale).sum() - log_j

    def to_phys(self, y: Tensor) -> tuple[Tensor, Tensor]:
        y = y.to(torch.float64)
        real = y[..., : self.nb + self.na] * self.std + self.mean
        log_b, logit_a = real[..., : self.nb], real[..., self.nb :]
        bonds, angles = torch.exp(log_b), math.pi * torch.sigmoid(logit_a)
        tors = _wrap(y[..., self.nb + self.na :] * self.tscale + self.center)
        x = self.z.to_cartesian(bonds, angles, tors)
        ladj_fwd = -log_b.sum(-1) + torch.log(math.pi / (angles * (math.pi - angles))).sum(-1)
        return x, -(
            ladj_fwd
            - torch.log(self.std).sum()
            - torch.log(self.tscale).sum()
            - ZMatrix.log_jacobian(bonds, angles)
        )


def _wrap(a: Tensor) -> Tensor:
    return torch.remainder(a + math.pi, 2 * math.pi) - math.pi


def make_coordinate_map(
    geometry: str, dim: int, scale: float = 1.0, n_particles: int = 0, spatial_dim: int = 0
) -> CoordinateMap:
    """The map for a target's ``geometry`` (``"euclidean"``, ``"com_free"``, ``"alanine"``)."""
    if geometry == "euclidean":
        return Standardize(dim, scale)
    if geometry == "com_free":
        if n_particles * spatial_dim != dim:
            raise ValueError(
                f"com_free geometry needs n_particles * spatial_dim == dim, got {n_particles} x {spatial_dim} != {dim}"
            )
        return CenterOfMassFree(n_particles, spatial_dim, scale)
    if geometry == "alanine":
        return AlanineInternal()
    raise ValueError(
        f"unknown geometry {geometry!r}; expected 'euclidean', 'com_free' or 'alanine'"
    )
