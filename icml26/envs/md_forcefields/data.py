"""Labelled frames (positions, energies, forces) generated locally with OpenMM, cached.

Frames come from Langevin MD (LangevinMiddleIntegrator, 1/ps friction, 1 fs, no constraints) of
one system in several replicas at different temperatures, one frame every ``stride`` steps after
``equil`` discarded steps; every frame is relabelled by a fresh OpenMM evaluation at the stored
positions. Files live under ``cache_dir("md_forcefields")`` as ``.npz`` with a SHA-256 sidecar
checked on every load; generation shows a progress bar and happens only on request
(:func:`load_frames`), never when an env is constructed.

Splits (:func:`split`): ``random`` (a seeded 80/10/10 permutation of all frames, MD22 style)
and ``temporal`` (per replica, the first 80% of frames train, the next 10% validation, the
last 10% test: tests extrapolation along the trajectory).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from icml26._paths import atomic_write, cache_dir, params_digest
from icml26.envs.md_forcefields.systems import NM_PER_A, Oracle, load_system

DEFAULTS: dict[str, Any] = {
    "system": "ala2",
    "temperatures": (300.0, 400.0, 500.0, 600.0),
    "frames_per_replica": 500,
    "stride": 100,  # 0.1 ps at 1 fs
    "equil": 5000,  # 5 ps discarded per replica
    "timestep_fs": 1.0,
    "seed": 0,
}
SPLITS = ("random", "temporal")


@dataclass
class Frames:
    """Labelled frames of one system: ``positions`` (F, N, 3) A, ``energies`` (F,) kcal/mol,
    ``forces`` (F, N, 3) kcal/mol/A, ``numbers`` (N,), ``replica`` (F,), ``time_ps`` (F,),
    ``temperature`` (F,)."""

    positions: np.ndarray
    energies: np.ndarray
    forces: np.ndarray
    numbers: np.ndarray
    replica: np.ndarray
    time_ps: np.ndarray
    temperature: np.ndarray
    system: str = "ala2"

    def __len__(self) -> int:
        return int(self.energies.shape[0])

    def subset(self, idx: np.ndarray) -> Frames:
        return Frames(
            self.positions[idx],
            self.energies[idx],
            self.forces[idx],
            self.numbers,
            self.replica[idx],
            self.time_ps[idx],
            self.temperature[idx],
            self.system,
        )

    def as_dict(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in _KEYS}


_KEYS = ("positions", "energies", "forces", "numbers", "replica", "time_ps", "temperature")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cache_path(params: dict[str, Any]) -> Path:
    return cache_dir("md_forcefields") / f"frames-{params['system']}-{params_digest(params)}.npz"


def generate_frames(params: dict[str, Any], progress: bool = True) -> Frames:
    """Run the replicas and label every frame (see the module doc)."""
    import openmm
    import openmm.unit as u

    mol = load_system(params["system"])
    oracle = Oracle(mol)
    temps = tuple(float(t) for t in params["temperatures"])
    nf, stride = int(params["frames_per_replica"]), int(params["stride"])
    bar = None
    if progress:
        import sys

        from tqdm.auto import tqdm

        bar = tqdm(total=len(temps) * nf, desc=f"OpenMM frames {params['system']}", file=sys.stderr)
    out: dict[str, list[Any]] = {k: [] for k in _KEYS if k != "numbers"}
    for r, temp in enumerate(temps):
        integ = openmm.LangevinMiddleIntegrator(
            temp * u.kelvin, 1.0 / u.picosecond, params["timestep_fs"] * u.femtosecond
        )
        integ.setRandomNumberSeed(int(params["seed"]) * 1000 + r + 1)
        ctx = openmm.Context(
            mol.system, integ, openmm.Platform.getPlatformByName("CPU"), {"Threads": "1"}
        )
        ctx.setPositions(mol.positions * NM_PER_A)
        openmm.LocalEnergyMinimizer.minimize(ctx, 1.0, 200)
        ctx.setVelocitiesToTemperature(temp * u.kelvin, int(params["seed"]) * 1000 + r + 1)
        integ.step(int(params["equil"]))
        for k in range(nf):
            integ.step(stride)
            x = ctx.getState(getPositions=True).getPositions(asNumpy=True).value_in_unit(u.angstrom)
            e, f = oracle(np.asarray(x))
            out["positions"].append(np.asarray(x, dtype=np.float64))
            out["energies"].append(e)
            out["forces"].append(f)
            out["replica"].append(r)
            out["time_ps"].append((k + 1) * stride * params["timestep_fs"] / 1000.0)
            out["temperature"].append(temp)
            if bar is not None:
                bar.update(1)
        del ctx
    if bar is not None:
        bar.close()
    arr = {k: np.asarray(v) for k, v in out.items()}
    return Frames(numbers=mol.numbers.copy(), system=params["system"], **arr)


def _load(path: Path) -> Frames:
    meta = json.loads(path.with_suffix(".json").read_text())
    if meta.get("sha256") != _sha(path):
        raise ValueError(f"md_forcefields: checksum mismatch for {path}")
    with np.load(path) as z:
        return Frames(system=meta["system"], **{k: z[k] for k in _KEYS})


def load_frames(progress: bool = True, **overrides: Any) -> Frames:
    """The cached frames for ``DEFAULTS | overrides`` (generated on first request)."""
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ValueError(
            f"md_forcefields: unknown frame parameters {sorted(unknown)}; expected {sorted(DEFAULTS)}"
        )
    params = {**DEFAULTS, **overrides}
    params["temperatures"] = [float(t) for t in params["temperatures"]]
    path = cache_path(params)
    if path.exists() and path.with_suffix(".json").exists():
        try:
            return _load(path)
        except (ValueError, OSError, KeyError):
            path.unlink(missing_ok=True)
    frames = generate_frames(params, progress)
    atomic_write(path, lambda tmp: np.savez(tmp, **frames.as_dict()))
    meta = {"sha256": _sha(path), "params": params, "system": frames.system}
    atomic_write(path.with_suffix(".json"), lambda tmp: tmp.write_text(json.dumps(meta)))
    return frames


def split(frames: Frames, kind: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Index arrays ``{"train", "val", "test"}`` (see the module doc for the two kinds)."""
    n = len(frames)
    if kind == "random":
        perm = np.random.default_rng(seed).permutation(n)
        a, b = int(0.8 * n), int(0.9 * n)
        return {"train": np.sort(perm[:a]), "val": np.sort(perm[a:b]), "test": np.sort(perm[b:])}
    if kind == "temporal":
        parts: dict[str, list[np.ndarray]] = {"train": [], "val": [], "test": []}
        for r in np.unique(frames.replica):
            idx = np.nonzero(frames.replica == r)[0]
            idx = idx[np.argsort(frames.time_ps[idx], kind="stable")]
            a, b = int(0.8 * len(idx)), int(0.9 * len(idx))
            parts["train"].append(idx[:a])
            parts["val"].append(idx[a:b])
            parts["test"].append(idx[b:])
        return {k: np.concatenate(v) for k, v in parts.items()}
    raise ValueError(f"md_forcefields: split must be one of {SPLITS}, got {kind!r}")
