"""Alanine-dipeptide MD data sets made locally with OpenMM Langevin dynamics, cached on disk.

* ``"unbiased"``: temperature replica exchange (parallel tempering) on a geometric ladder from
  300 K; only the 300 K replica is kept, so the frames are 300 K Boltzmann samples, and the
  exchanges carry it over the phi > 0 barrier that a plain 300 K run of a few ns almost never
  crosses.
* ``"biased"``: a plain Langevin run at the bias temperature (600 K by default).

Both are labelled with the reduced *target* energy ``U / (k_B * 300 K)``, evaluated by OpenMM on
the stored float32 coordinates. Runs use the Reference platform in vacuum (deterministic; the
fastest for 22 atoms) and the one-thread CPU platform with OBC1, ``LangevinMiddleIntegrator`` with 1 fs steps and 1/ps friction, no constraints.
Each pool is cached under ``$ICML26_CACHE/boltzmann/md/`` keyed by every parameter; generation
shows a progress bar. Presets: ``"full"`` (experiments; a few minutes of CPU once) and
``"tiny"`` (tests; well under a second).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from icml26.envs.boltzmann.datasets import BoltzmannDataset, cached_arrays, progress_bar
from icml26.protocol import derive_seed

if TYPE_CHECKING:
    from icml26.envs.boltzmann.alanine import AlanineDipeptide

__all__ = ["MDPreset", "PRESETS", "run_langevin", "alanine_pool"]


@dataclass(frozen=True)
class MDPreset:
    """Run lengths of one data preset (frames are ``stride`` steps of 1 fs apart)."""

    ladder: tuple[float, ...]  # temperatures above 300 K of the replica-exchange ladder
    frames: tuple[tuple[str, int], ...]  # (split, frames) of the unbiased pools
    biased_frames: tuple[tuple[str, int], ...]
    stride: int
    burn_in_frames: int
    timestep_fs: float = 1.0
    friction_per_ps: float = 1.0


PRESETS: dict[str, MDPreset] = {
    # 6 replicas (ratio 1.217): ~20-40% exchange acceptance for 66 degrees of freedom.
    "full": MDPreset(
        ladder=(365.0, 444.0, 540.0, 657.0, 800.0),
        frames=(("train", 30_000), ("test", 10_000)),
        biased_frames=(("train", 30_000), ("test", 5_000)),
        stride=100,
        burn_in_frames=1000,
    ),
    "tiny": MDPreset(
        ladder=(450.0,),
        frames=(("train", 256), ("test", 128)),
        biased_frames=(("train", 256), ("test", 64)),
        stride=10,
        burn_in_frames=20,
    ),
}


def run_langevin(
    solvent: str,
    temperatures: tuple[float, ...],
    n_frames: int,
    stride: int,
    burn_in_frames: int,
    seed: int,
    timestep_fs: float = 1.0,
    friction_per_ps: float = 1.0,
    progress: bool = True,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Langevin MD of alanine dipeptide (replica exchange when ``len(temperatures) > 1``).

    Returns the frames of the ``temperatures[0]`` replica, ``(n_frames, 66)`` float64 nm, and
    diagnostics (exchange acceptance per neighbouring pair). Exchanges between neighbours
    (alternating even and odd pairs) are attempted after every frame with probability
    ``min(1, exp((b_i - b_j)(U_i - U_j)))``; velocities are rescaled by sqrt(T_new / T_old).
    """
    import openmm
    from openmm import unit

    from icml26.envs.boltzmann.openmm_energy import (
        KB_KJ_PER_MOL_K,
        build_system,
        default_platform,
        make_context,
    )

    system, _, pos0 = build_system(solvent)
    rng = np.random.default_rng(derive_seed(seed, "exchange"))
    contexts, integrators = [], []
    for k, t in enumerate(temperatures):
        integ = openmm.LangevinMiddleIntegrator(
            t * unit.kelvin, friction_per_ps / unit.picosecond, timestep_fs * unit.femtosecond
        )
        integ.setRandomNumberSeed(int(derive_seed(seed, "integrator", k) % 2**31))
        ctx = make_context(system, integ, default_platform(solvent))
        ctx.setPositions(pos0)
        if k == 0:
            openmm.LocalEnergyMinimizer.minimize(ctx)
            pos0 = ctx.getState(getPositions=True).getPositions(asNumpy=True)
            ctx.setPositions(pos0)
        ctx.setVelocitiesToTemperature(
            t * unit.kelvin, int(derive_seed(seed, "velocities", k) % 2**31)
        )
        contexts.append(ctx)
        integrators.append(integ)
    beta = 1.0 / (KB_KJ_PER_MOL_K * np.asarray(temperatures))
    n_pairs = len(temperatures) - 1
    tried, accepted = np.zeros(max(n_pairs, 1)), np.zeros(max(n_pairs, 1))
    frames = np.empty((n_frames, 66))
    total = burn_in_frames + n_frames
    bar = progress_bar(
        total,
        f"MD {solvent} {temperatures[0]:g} K" + (f" + {n_pairs} replicas" if n_pairs else ""),
        progress,
    )
    for f in range(total):
        for integ in integrators:
            integ.step(stride)
        if n_pairs:
            states = [
                c.getState(getPositions=True, getVelocities=True, getEnergy=True) for c in contexts
            ]
            pos = [s.getPositions(asNumpy=True)._value for s in states]
            vel = [s.getVelocities(asNumpy=True)._value for s in states]
            energy = np.array([s.getPotentialEnergy()._value for s in states])
            changed = set()
            for i in range(f % 2, n_pairs, 2):
                j = i + 1
                tried[i] += 1
                if np.log(rng.random()) < (beta[i] - beta[j]) * (energy[i] - energy[j]):
                    accepted[i] += 1
                    pos[i], pos[j] = pos[j], pos[i]
                    scale = np.sqrt(temperatures[i] / temperatures[j])
                    vel[i], vel[j] = vel[j] * scale, vel[i] / scale
                    energy[i], energy[j] = energy[j], energy[i]
                    changed.update((i, j))
            for k in changed:
                contexts[k].setPositions(pos[k])
                contexts[k].setVelocities(vel[k])
            current = pos[0]
        else:
            current = contexts[0].getState(getPositions=True).getPositions(asNumpy=True)._value
        if f >= burn_in_frames:
            frames[f - burn_in_frames] = np.asarray(current).reshape(-1)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    acceptance = (accepted / np.maximum(tried, 1)).tolist() if n_pairs else []
    return frames, {"exchange_acceptance": acceptance}


def alanine_pool(
    target: AlanineDipeptide, kind: str, split: str, progress: bool = True
) -> BoltzmannDataset:
    """The cached MD pool ``kind`` / ``split`` of ``target`` (generated on first use)."""
    preset = PRESETS[target.data_preset]
    frames = dict(preset.frames if kind == "unbiased" else preset.biased_frames)
    if split not in frames:
        raise ValueError(f"{target.name}: no {kind}/{split} pool in preset {target.data_preset!r}")
    temps = (
        (target.temperature, *preset.ladder) if kind == "unbiased" else (target.bias_temperature,)
    )
    params = {
        "solvent": target.solvent,
        "kind": kind,
        "split": split,
        "temperatures": temps,
        "label_temperature": target.temperature,
        "frames": frames[split],
        **{
            k: v
            for k, v in asdict(preset).items()
            if k not in ("ladder", "frames", "biased_frames")
        },
        "version": 1,
    }
    seed = derive_seed(0, "aldp", target.solvent, kind, split)

    def make() -> dict[str, np.ndarray]:
        x, diag = run_langevin(
            target.solvent,
            temps,
            frames[split],
            preset.stride,
            preset.burn_in_frames,
            seed,
            preset.timestep_fs,
            preset.friction_per_ps,
            progress,
        )
        x32 = x.astype(np.float32)
        from icml26.envs.boltzmann.openmm_energy import OpenMMEnergy

        e, _ = OpenMMEnergy(target.solvent)(
            x32.astype(np.float64)
        )  # labels of the stored coordinates
        return {
            "x": x32,
            "energy": e / target.kt,
            "exchange_acceptance": np.asarray(diag["exchange_acceptance"], dtype=np.float64),
        }

    arrays = cached_arrays("md", params, make)
    meta = {**params, "exchange_acceptance": arrays["exchange_acceptance"].tolist()}
    return BoltzmannDataset(arrays["x"], arrays["energy"], meta)
