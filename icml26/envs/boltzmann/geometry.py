"""Molecular geometry in torch: distances, angles, dihedrals and a Z-matrix internal-coordinate map.

The Z-matrix map is an exact bijection between Cartesian configurations modulo rigid motion
(translation and proper rotation) and internal coordinates (bond lengths, bond angles, torsions).
The volume element of the Cartesian configuration space factorizes as

    dx = (translation) * (rotation) * prod_i r_i^2 sin(theta_i) dr_i dtheta_i dphi_i

so, with the rigid motions integrated out, a density on internal coordinates and a density on
Cartesian configurations modulo rigid motion differ by ``log J = sum_i 2 log r_i + sum_i log sin
theta_i`` (:func:`ZMatrix.log_jacobian`). Every alanine-dipeptide density in this family
(``log_q`` of samplers, NLL) is with respect to that quotient measure.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = [
    "distance",
    "angle",
    "dihedral",
    "ZMatrix",
    "ALANINE_ZMATRIX",
    "PHI_ATOMS",
    "PSI_ATOMS",
    "ramachandran",
]


def distance(a: Tensor, b: Tensor) -> Tensor:
    """|a - b| over the last axis."""
    return torch.linalg.vector_norm(a - b, dim=-1)


def angle(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """The angle a-b-c at b in [0, pi] (atan2 form: finite gradients near 0 and pi)."""
    u, v = a - b, c - b
    cross = torch.linalg.vector_norm(torch.cross(u, v, dim=-1), dim=-1)
    return torch.atan2(cross, (u * v).sum(-1))


def dihedral(a: Tensor, b: Tensor, c: Tensor, d: Tensor) -> Tensor:
    """The IUPAC dihedral a-b-c-d in (-pi, pi] (the convention of OpenMM's torsion forces)."""
    b0, b1, b2 = a - b, c - b, d - c
    b1n = b1 / torch.linalg.vector_norm(b1, dim=-1, keepdim=True)
    v = b0 - (b0 * b1n).sum(-1, keepdim=True) * b1n
    w = b2 - (b2 * b1n).sum(-1, keepdim=True) * b1n
    x = (v * w).sum(-1)
    y = (torch.cross(b1n, v, dim=-1) * w).sum(-1)
    return torch.atan2(y, x)


class ZMatrix:
    """Cartesian <-> internal coordinates for a molecule given as a Z-matrix.

    ``order[0]``, ``order[1]``, ``order[2]`` are the three reference atoms (``order[1]`` bonded
    to ``order[0]``; ``order[2]`` bonded to ``order[1]`` with angle ``order[2]-order[1]-order[0]``);
    every further row ``(i, j, k, l)`` places atom ``i`` at bond ``|i - j|``, angle ``i-j-k`` and
    dihedral ``i-j-k-l`` from atoms placed before it.

    Internal coordinates are returned as ``(bonds, angles, torsions)`` with shapes
    ``(..., n - 1)``, ``(..., n - 2)``, ``(..., n - 3)``: the bond of ``order[1]``, ``order[2]``,
    then each row; the angle of ``order[2]`` then each row; the torsion of each row.
    """

    def __init__(self, reference: Sequence[int], rows: Sequence[Sequence[int]]) -> None:
        if len(reference) != 3:
            raise ValueError(f"ZMatrix: expected 3 reference atoms, got {list(reference)}")
        self.reference = tuple(int(a) for a in reference)
        self.rows = tuple(tuple(int(a) for a in r) for r in rows)
        placed = set(self.reference)
        for r in self.rows:
            if len(r) != 4:
                raise ValueError(f"ZMatrix: each row must be (atom, bond, angle, torsion), got {r}")
            if r[0] in placed or not set(r[1:]) <= placed or len(set(r)) != 4:
                raise ValueError(f"ZMatrix: row {r} places an atom twice or uses unplaced atoms")
            placed.add(r[0])
        self.n_atoms = len(placed)
        if placed != set(range(self.n_atoms)):
            raise ValueError(f"ZMatrix: atoms must be 0..n-1, got {sorted(placed)}")

    @property
    def n_internal(self) -> int:
        return 3 * self.n_atoms - 6

    def to_internal(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Cartesian ``(..., n_atoms * 3)`` or ``(..., n_atoms, 3)`` -> (bonds, angles, torsions)."""
        x = x.reshape(*x.shape[: -1 if x.shape[-1] != 3 else -2], self.n_atoms, 3)
        a0, a1, a2 = self.reference
        i, j, k, m = (torch.tensor([r[c] for r in self.rows], dtype=torch.long) for c in range(4))
        bonds = torch.cat(
            [
                distance(x[..., [a1], :], x[..., [a0], :]),
                distance(x[..., [a2], :], x[..., [a1], :]),
                distance(x[..., i, :], x[..., j, :]),
            ],
            dim=-1,
        )
        angles = torch.cat(
            [
                angle(x[..., [a2], :], x[..., [a1], :], x[..., [a0], :]),
                angle(x[..., i, :], x[..., j, :], x[..., k, :]),
            ],
            dim=-1,
        )
        torsions = dihedral(x[..., i, :], x[..., j, :], x[..., k, :], x[..., m, :])
        return bonds, angles, torsions

    def to_cartesian(self, bonds: Tensor, angles: Tensor, torsions: Tensor) -> Tensor:
        """(bonds, angles, torsions) -> Cartesian ``(..., n_atoms * 3)`` in a canonical frame:
        ``order[0]`` at the origin, ``order[1]`` on +z, ``order[2]`` in the xz half-plane x > 0."""
        batch = bonds.shape[:-1]
        pos: list[Tensor | None] = [None] * self.n_atoms
        a0, a1, a2 = self.reference
        zero = torch.zeros(batch, dtype=bonds.dtype, device=bonds.device)
        pos[a0] = torch.stack([zero, zero, zero], -1)
        pos[a1] = torch.stack([zero, zero, bonds[..., 0]], -1)
        r2, t2 = bonds[..., 1], angles[..., 0]
        pos[a2] = pos[a1] + torch.stack([r2 * torch.sin(t2), zero, -r2 * torch.cos(t2)], -1)
        for n, (i, j, k, m) in enumerate(self.rows):
            pos[i] = _place(
                pos[m], pos[k], pos[j], bonds[..., n + 2], angles[..., n + 1], torsions[..., n]
            )  # type: ignore[arg-type]
        return torch.stack(pos, -2).reshape(*batch, 3 * self.n_atoms)  # type: ignore[arg-type]

    @staticmethod
    def log_jacobian(bonds: Tensor, angles: Tensor) -> Tensor:
        """``log J = sum 2 log r + sum log sin theta``: Cartesian volume (modulo rigid motion) per
        unit internal-coordinate volume."""
        return 2 * torch.log(bonds).sum(-1) + torch.log(torch.sin(angles).abs()).sum(-1)


def _place(a: Tensor, b: Tensor, c: Tensor, r: Tensor, theta: Tensor, phi: Tensor) -> Tensor:
    """Natural extension reference frame: the atom d with |cd| = r, angle b-c-d = theta and
    dihedral a-b-c-d = phi."""
    bc = c - b
    bc = bc / torch.linalg.vector_norm(bc, dim=-1, keepdim=True)
    n = torch.cross(b - a, bc, dim=-1)
    n = n / torch.linalg.vector_norm(n, dim=-1, keepdim=True)
    m = torch.cross(n, bc, dim=-1)
    d0 = -r * torch.cos(theta)
    d1 = r * torch.sin(theta) * torch.cos(phi)
    d2 = r * torch.sin(theta) * torch.sin(phi)
    return c + d0[..., None] * bc + d1[..., None] * m + d2[..., None] * n


# Alanine dipeptide in the atom order of openmmtools' alanine-dipeptide-gbsa files:
# ACE: HH31 0, CH3 1, HH32 2, HH33 3, C 4, O 5; ALA: N 6, H 7, CA 8, HA 9, CB 10, HB1-3 11-13,
# C 14, O 15; NME: N 16, H 17, C 18, H1-3 19-21. Rows follow bgflow's alanine Z-matrix (Noé et
# al. 2019; also FAB, Midgley et al. 2023) with its Cartesian block (N, CA, HA, CB, C) made
# internal too, so all 60 degrees of freedom are internal.
PHI_ATOMS = (4, 6, 8, 14)  # C(ACE)-N-CA-C
PSI_ATOMS = (6, 8, 14, 16)  # N-CA-C-N(NME)
ALANINE_ZMATRIX = ZMatrix(
    reference=(6, 8, 14),
    rows=[
        (10, 8, 14, 6),
        (9, 8, 14, 6),
        (4, 6, 8, 14),
        (16, 14, 8, 6),
        (7, 6, 8, 4),
        (1, 4, 6, 8),
        (5, 4, 6, 8),
        (0, 1, 4, 6),
        (2, 1, 4, 0),
        (3, 1, 4, 0),
        (11, 10, 8, 6),
        (12, 10, 8, 11),
        (13, 10, 8, 11),
        (15, 14, 8, 16),
        (17, 16, 14, 15),
        (18, 16, 14, 8),
        (19, 18, 16, 14),
        (20, 18, 16, 19),
        (21, 18, 16, 19),
    ],
)


def ramachandran(x: Tensor) -> tuple[Tensor, Tensor]:
    """(phi, psi) in (-pi, pi] of alanine-dipeptide configurations ``(..., 66)`` in nm."""
    x = x.reshape(*x.shape[:-1], 22, 3)
    phi = dihedral(*(x[..., a, :] for a in PHI_ATOMS))
    psi = dihedral(*(x[..., a, :] for a in PSI_ATOMS))
    return phi, psi
