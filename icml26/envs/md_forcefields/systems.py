"""OpenMM systems of the md_forcefields family and the oracle that labels frames.

Units used throughout the family: positions in Angstrom, energies in kcal/mol, forces in
kcal/mol/A (the MD22 convention), masses in amu, time in fs. OpenMM works in nm and kJ/mol.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

KJ_PER_KCAL = 4.184  # thermochemical calorie
NM_PER_A = 0.1
# 1 kcal/mol/A divided by 1 amu, in A/fs^2: 4184 J/mol / N_A / 1e-10 m / 1.66054e-27 kg = 4.184e16 m/s^2
ACCEL = 4.184e-4
KB_KCAL = 0.0019872043  # Boltzmann constant in kcal/mol/K (CODATA)
SYSTEMS = ("ala2", "t4l", "dhfr", "waterbox")


@dataclass
class MolSystem:
    """An OpenMM ``System`` with its starting positions (A), atomic numbers, masses and bonds."""

    name: str
    system: Any
    topology: Any
    positions: np.ndarray
    numbers: np.ndarray
    masses: np.ndarray
    bonds: np.ndarray  # (n_bonds, 2) covalent bonds from the topology
    box: np.ndarray | None = None  # (3,) orthorhombic box edge in A for periodic systems

    @property
    def n_atoms(self) -> int:
        return int(self.numbers.shape[0])


def _openmm() -> Any:
    try:
        import openmm
    except ImportError as e:  # pragma: no cover - openmm is in the dev extra
        raise ImportError(
            "md_forcefields needs OpenMM and openmmtools: pip install 'icml26-gym[openmm]'"
        ) from e
    return openmm


def _from_parts(name: str, system: Any, topology: Any, positions: Any) -> MolSystem:
    import openmm.unit as u

    pos = np.asarray(positions.value_in_unit(u.angstrom), dtype=np.float64)
    numbers = np.array([a.element.atomic_number for a in topology.atoms()], dtype=np.int64)
    masses = np.array(
        [system.getParticleMass(i).value_in_unit(u.dalton) for i in range(system.getNumParticles())]
    )
    bonds = np.array([(b[0].index, b[1].index) for b in topology.bonds()], dtype=np.int64)
    box = None
    if system.usesPeriodicBoundaryConditions():
        vecs = system.getDefaultPeriodicBoxVectors()
        box = np.array([vecs[i][i].value_in_unit(u.angstrom) for i in range(3)])
    return MolSystem(name, system, topology, pos, numbers, masses, bonds.reshape(-1, 2), box)


def load_system(name: str, **kwargs: Any) -> MolSystem:
    """Build one of :data:`SYSTEMS` (offline, from openmmtools' shipped files).

    ``ala2``: alanine dipeptide in vacuum, no constraints (22 atoms). ``t4l``: T4 lysozyme L99A +
    p-xylene, vacuum, 1.0 nm non-periodic cutoff (2,621 atoms). ``dhfr``: DHFR/JAC explicit
    water, PME (23,558 atoms). ``waterbox``: TIP3P box, ``box_edge`` in A (any size).
    """
    _openmm()
    import openmm.app as app
    import openmm.unit as u

    # openmmtools imports pymbar, which logs a 10-line "JAX NOT FOUND" banner and a long warning
    # about its timeseries module (neither is used here) at import, in every trial that gets here
    logging.getLogger("pymbar").setLevel(logging.ERROR)
    from openmmtools import testsystems

    if name == "ala2":
        ts = testsystems.AlanineDipeptideVacuum(constraints=None)
    elif name == "dhfr":
        ts = testsystems.DHFRExplicit(constraints=None, rigid_water=False)
    elif name == "waterbox":
        edge = float(kwargs.get("box_edge", 12.0))
        ts = testsystems.WaterBox(
            box_edge=edge * u.angstrom,
            cutoff=min(9.0, edge / 2 - 0.01) * u.angstrom,
            constrained=False,
        )
    elif name == "t4l":
        import openmmtools

        d = os.path.join(os.path.dirname(openmmtools.__file__), "data", "T4-lysozyme-L99A-implicit")
        prmtop = app.AmberPrmtopFile(os.path.join(d, "complex.prmtop"))
        crd = app.AmberInpcrdFile(os.path.join(d, "complex.crd"))
        system = prmtop.createSystem(
            nonbondedMethod=app.CutoffNonPeriodic,
            nonbondedCutoff=1.0 * u.nanometer,
            constraints=None,
        )
        return _from_parts(name, system, prmtop.topology, crd.getPositions(asNumpy=True))
    else:
        raise ValueError(f"md_forcefields: system must be one of {SYSTEMS}, got {name!r}")
    return _from_parts(name, ts.system, ts.topology, ts.positions)


class Oracle:
    """OpenMM reference energies and forces (CPU platform, double precision where offered)."""

    def __init__(self, mol: MolSystem, threads: int = 1) -> None:
        openmm = _openmm()
        self.mol = mol
        platform = openmm.Platform.getPlatformByName("CPU")
        props = {"Threads": str(threads)}
        integ = openmm.VerletIntegrator(0.001)
        self.context = openmm.Context(mol.system, integ, platform, props)

    def __call__(self, positions_a: np.ndarray) -> tuple[float, np.ndarray]:
        """``(energy kcal/mol, forces (N, 3) kcal/mol/A)`` at ``positions_a`` (A)."""
        import openmm.unit as u

        self.context.setPositions(np.asarray(positions_a, dtype=np.float64) * NM_PER_A)
        st = self.context.getState(getEnergy=True, getForces=True)
        e = st.getPotentialEnergy().value_in_unit(u.kilojoule_per_mole) / KJ_PER_KCAL
        f = st.getForces(asNumpy=True).value_in_unit(u.kilojoule_per_mole / u.nanometer)
        return float(e), np.asarray(f) * NM_PER_A / KJ_PER_KCAL


def radius_of_gyration(x: np.ndarray, masses: np.ndarray) -> float:
    """Mass-weighted radius of gyration (A)."""
    c = (masses[:, None] * x).sum(0) / masses.sum()
    return float(np.sqrt((masses * ((x - c) ** 2).sum(1)).sum() / masses.sum()))


def bond_lengths(x: np.ndarray, bonds: np.ndarray) -> np.ndarray:
    return np.linalg.norm(x[bonds[:, 0]] - x[bonds[:, 1]], axis=1)
