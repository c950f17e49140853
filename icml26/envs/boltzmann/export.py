"""Boltzmann data sets as files other tools read: PDB + npz with units, and DCD through mdtraj.

    from icml26.envs.boltzmann.export import write_dataset, read_dataset
    env = gym.make("icml26/BoltzmannAlanineDipeptide-v0")
    _, info = env.reset(seed=0)
    files = write_dataset(info["dataset"], "aldp_train", target=env.unwrapped.target)
    # aldp_train.npz (+ aldp_train.pdb and aldp_train.dcd for alanine dipeptide)
    traj = mdtraj.load("aldp_train.dcd", top="aldp_train.pdb")

The npz holds ``x`` (``(n, dim)`` float32, in ``units["x"]``), ``energy`` (reduced, kT of the
target's temperature), for alanine dipeptide also ``positions`` ``(n, 22, 3)`` nm and
``energy_kj_per_mol``, and ``meta``: a JSON string with ``units``, ``target``,
``temperature_K`` and the data set's own description. Alanine's PDB is the openmmtools Amber
topology with the first frame; the DCD (written only when mdtraj is installed) holds every frame.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from icml26.envs.boltzmann.targets import Target

__all__ = ["write_dataset", "read_dataset"]

_FORMAT = 1


def _arrays(data: Any) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    if isinstance(data, Mapping):
        x, e, meta = data.get("x"), data.get("energy"), dict(data.get("meta", {}))
    else:
        x, e, meta = (
            getattr(data, "x", None),
            getattr(data, "energy", None),
            dict(getattr(data, "meta", {}) or {}),
        )
    if x is None or e is None:
        raise TypeError(
            "write_dataset: expected a BoltzmannDataset or a mapping with 'x' and 'energy' "
            f"(as info['dataset'] of a reset), got {type(data).__name__}"
        )
    x = np.asarray(x, dtype=np.float32)
    e = np.asarray(e, dtype=np.float64)
    if x.ndim != 2 or e.shape != (x.shape[0],):
        raise ValueError(
            f"write_dataset: expected x (n, dim) and energy (n,), got {x.shape} and {e.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("write_dataset: x holds NaN or inf")
    return x, e, meta


def write_dataset(data: Any, path: str | os.PathLike[str], *, target: Target) -> dict[str, Path]:
    """Write ``data`` (a BoltzmannDataset or ``info["dataset"]``) of ``target`` next to ``path``.

    Returns the written files by kind (``npz``; for alanine dipeptide also ``pdb`` and, with
    mdtraj, ``dcd``). ``path``'s suffix, if any, is dropped.
    """
    x, e, meta = _arrays(data)
    if x.shape[1] != target.dim:
        raise ValueError(
            f"write_dataset: {target.name} has dim {target.dim}, got x of shape {x.shape}"
        )
    base = Path(path)
    base = base.with_suffix("") if base.suffix in (".npz", ".pdb", ".dcd") else base
    base.parent.mkdir(parents=True, exist_ok=True)
    alanine = target.geometry == "alanine"
    temperature = float(getattr(target, "temperature", float("nan")))
    units = {
        "x": "nm" if alanine else "reduced (dimensionless)",
        "energy": "kT (reduced: U / (k_B T))" if alanine else "reduced (dimensionless)",
    }
    arrays: dict[str, np.ndarray] = {"x": x, "energy": e}
    if alanine:
        kt = float(target.kt)  # type: ignore[attr-defined]
        arrays["positions"] = x.reshape(len(x), -1, 3)
        arrays["energy_kj_per_mol"] = e * kt
        units.update({"positions": "nm", "energy_kj_per_mol": "kJ/mol"})
    header = {
        "format": _FORMAT,
        "target": target.name,
        "dim": target.dim,
        "geometry": target.geometry,
        "temperature_K": temperature if alanine else None,
        "units": units,
        "source": json.loads(json.dumps(meta, default=str)),
    }
    arrays["meta"] = np.array(json.dumps(header))
    out = {"npz": base.with_suffix(".npz")}
    np.savez_compressed(out["npz"], **arrays)  # type: ignore[arg-type]
    if alanine:
        out.update(_write_structure(target, x, base))
    return out


def _write_structure(target: Target, x: np.ndarray, base: Path) -> dict[str, Path]:
    from openmm import app, unit

    from icml26.envs.boltzmann.openmm_energy import build_system

    _, topology, _ = build_system(getattr(target, "solvent", "vacuum"))
    out = {"pdb": base.with_suffix(".pdb")}
    frame = x[0].reshape(-1, 3).astype(np.float64)
    with open(out["pdb"], "w") as fh:
        app.PDBFile.writeFile(topology, unit.Quantity(frame, unit.nanometer), fh)
    try:
        import mdtraj
    except ImportError:  # DCD needs mdtraj; the npz holds every frame anyway
        return out
    top = mdtraj.load_topology(str(out["pdb"]))
    traj = mdtraj.Trajectory(x.reshape(len(x), -1, 3), top)  # mdtraj works in nm
    out["dcd"] = base.with_suffix(".dcd")
    traj.save_dcd(str(out["dcd"]))
    return out


def read_dataset(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read what :func:`write_dataset` wrote: the npz arrays plus ``meta`` (a dict with ``units``)."""
    p = Path(path)
    p = p if p.suffix == ".npz" else p.with_suffix(".npz")
    if not p.exists():
        raise FileNotFoundError(f"read_dataset: no file at {p}")
    with np.load(p, allow_pickle=False) as z:
        out: dict[str, Any] = {k: z[k] for k in z.files if k != "meta"}
        meta = json.loads(str(z["meta"]))
    if meta.get("format") != _FORMAT:
        raise ValueError(f"read_dataset: {p} has format {meta.get('format')!r}, expected {_FORMAT}")
    out["meta"] = meta
    return out
