"""OpenMM side of alanine dipeptide: the System from openmmtools' Amber files and batched energies.

Kept free of torch so that the spawned workers of :class:`OpenMMEnergy` start quickly.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from icml26._entry_points import require

__all__ = [
    "KB_KJ_PER_MOL_K",
    "SOLVENTS",
    "N_ATOMS",
    "alanine_files",
    "build_system",
    "default_platform",
    "make_context",
    "OpenMMEnergy",
]

KB_KJ_PER_MOL_K = (
    0.00831446261815324  # molar gas constant R in kJ/(mol K) (CODATA 2018, openmm.unit)
)
SOLVENTS = ("vacuum", "obc1")
N_ATOMS = 22


def alanine_files() -> dict[str, Path]:
    """Paths of openmmtools' alanine-dipeptide Amber files (found without importing openmmtools)."""
    spec = importlib.util.find_spec("openmmtools")
    if spec is None or spec.origin is None:
        raise ImportError(
            "alanine dipeptide needs the Amber files shipped with openmmtools: "
            "pip install 'icml26-gym[openmm]'"
        )
    d = Path(spec.origin).parent / "data" / "alanine-dipeptide-gbsa"
    files = {ext: d / f"alanine-dipeptide.{ext}" for ext in ("prmtop", "crd", "pdb")}
    missing = [str(p) for p in files.values() if not p.exists()]
    if missing:
        raise FileNotFoundError(f"openmmtools is installed but lacks {missing}")
    return files


def build_system(solvent: str = "vacuum") -> tuple[Any, Any, np.ndarray]:
    """(openmm System, Topology, crd positions in nm) for ``solvent`` in :data:`SOLVENTS`."""
    if solvent not in SOLVENTS:
        raise ValueError(f"alanine dipeptide: solvent must be one of {SOLVENTS}, got {solvent!r}")
    require("openmm", "openmm", "alanine dipeptide")
    from openmm import app, unit

    files = alanine_files()
    prmtop = app.AmberPrmtopFile(str(files["prmtop"]))
    crd = app.AmberInpcrdFile(str(files["crd"]))
    system = prmtop.createSystem(
        nonbondedMethod=app.NoCutoff,
        constraints=None,
        rigidWater=False,
        implicitSolvent=app.OBC1 if solvent == "obc1" else None,
        removeCMMotion=False,
    )
    pos = np.asarray(crd.getPositions(asNumpy=True).value_in_unit(unit.nanometer), dtype=np.float64)
    return system, prmtop.topology, pos


def default_platform(solvent: str) -> str:
    """``"Reference"`` for vacuum (fastest for 22 atoms, double precision); ``"CPU"`` (one thread)
    for OBC1, whose ``CustomGBForce`` is about 50x slower on the Reference platform."""
    return "Reference" if solvent == "vacuum" else "CPU"


def make_context(system: Any, integrator: Any, platform: str) -> Any:
    """An OpenMM Context on ``platform`` (the CPU platform pinned to one thread)."""
    import openmm

    props = {"Threads": "1"} if platform == "CPU" else {}
    return openmm.Context(system, integrator, openmm.Platform.getPlatformByName(platform), props)


# ----------------------------------------------------------------------------- OpenMM
_WORKER: dict[str, Any] = {}


def _worker_init(solvent: str, platform: str | None) -> None:
    _WORKER["energy"] = OpenMMEnergy(solvent, platform=platform, n_workers=1)


def _worker_eval(args: tuple[np.ndarray, bool]) -> tuple[np.ndarray, np.ndarray | None]:
    x, forces = args
    return _WORKER["energy"]._evaluate_here(x, forces)


class OpenMMEnergy:
    """Potential energies (kJ/mol) and forces (kJ/mol/nm) of batches ``(n, 66)`` in nm.

    One ``Context`` is created lazily and reused for every configuration of every batch (platform:
    :func:`default_platform` unless given); with
    ``n_workers > 1`` a spawn process pool of that many workers, each holding its own Context,
    shares large batches. Pickling drops the Context and the pool (they are rebuilt on use).
    """

    def __init__(
        self, solvent: str = "vacuum", platform: str | None = None, n_workers: int = 1
    ) -> None:
        if solvent not in SOLVENTS:
            raise ValueError(f"OpenMMEnergy: solvent must be one of {SOLVENTS}, got {solvent!r}")
        if n_workers < 1:
            raise ValueError(f"OpenMMEnergy: n_workers must be >= 1, got {n_workers}")
        self.solvent, self.platform, self.n_workers = (
            solvent,
            platform or default_platform(solvent),
            int(n_workers),
        )
        self._context: Any = None
        self._pool: Any = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_context"] = None
        state["_pool"] = None
        return state

    def _ensure_context(self) -> Any:
        if self._context is None:
            import openmm

            system, _, _ = build_system(self.solvent)
            integrator = openmm.VerletIntegrator(0.001)
            self._context = make_context(system, integrator, self.platform)
            self._integrator = integrator  # the Context needs its integrator alive
        return self._context

    def _evaluate_here(self, x: np.ndarray, forces: bool) -> tuple[np.ndarray, np.ndarray | None]:
        ctx = self._ensure_context()
        n = x.shape[0]
        energies = np.empty(n)
        f = np.empty((n, 3 * N_ATOMS)) if forces else None
        pos = x.reshape(n, N_ATOMS, 3)
        for i in range(n):
            ctx.setPositions(pos[i])  # numpy array in nm: no Quantity conversion per call
            state = ctx.getState(getEnergy=True, getForces=forces)
            energies[i] = state.getPotentialEnergy()._value  # kJ/mol
            if f is not None:
                f[i] = np.asarray(state.getForces(asNumpy=True)._value).reshape(-1)
        return energies, f

    def __call__(self, x: np.ndarray, forces: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """``(U (n,), F (n, 66) or None)`` for configurations ``x`` of shape ``(n, 66)``."""
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1, 3 * N_ATOMS))
        if self.n_workers == 1 or x.shape[0] < 2 * self.n_workers:
            return self._evaluate_here(x, forces)
        if self._pool is None:
            import multiprocessing as mp

            self._pool = mp.get_context("spawn").Pool(
                self.n_workers, initializer=_worker_init, initargs=(self.solvent, self.platform)
            )
        chunks = np.array_split(x, self.n_workers)
        results = self._pool.map(_worker_eval, [(c, forces) for c in chunks])
        e = np.concatenate([r[0] for r in results])
        f = np.concatenate([r[1] for r in results]) if forces else None  # type: ignore[misc]
        return e, f

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool = None
        self._context = None

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        try:
            self.close()
        except Exception:
            pass
