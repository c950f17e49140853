"""NVE (microcanonical) stability check: velocity Verlet driven by any force function (a learned
model's forces or the oracle), and the total-energy drift metric reported next to the Langevin run."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from icml26.envs.md_forcefields.systems import ACCEL

__all__ = ["velocity_verlet", "energy_drift", "MD_ACCEL"]

# kcal/mol/A per amu in A/ps^2: with forces in kcal/mol/A, masses in amu, dt in ps, pass
# accel_scale=MD_ACCEL (kinetic energy then comes back in kcal/mol); the env's ACCEL is per fs^2
MD_ACCEL = ACCEL * 1e6  # 418.4

ForceFn = Callable[[np.ndarray], tuple[float, np.ndarray]]


def velocity_verlet(
    x0: np.ndarray,
    v0: np.ndarray,
    masses: np.ndarray,
    force_fn: ForceFn,
    dt: float,
    steps: int,
    accel_scale: float = 1.0,
    stop: Callable[[np.ndarray], bool] | None = None,
) -> dict[str, np.ndarray]:
    """Integrate ``steps`` velocity-Verlet steps of size ``dt`` from ``(x0, v0)``; ``force_fn(x)``
    returns ``(potential, forces)`` with forces ``(N, 3)`` in units where ``a = accel_scale * F / m``
    (kinetic energy is divided by ``accel_scale`` to share the potential's units). Returns
    ``positions (T+1, N, 3)``, ``velocities``, ``potential (T+1,)``, ``kinetic`` and ``total``.
    ``stop(x)``, if given, sees each new position before its force call; ``True`` ends the run
    and the arrays end at the last position it accepted (``T`` steps, ``T <= steps``)."""
    x = np.array(x0, dtype=np.float64)
    v = np.array(v0, dtype=np.float64)
    m = np.asarray(masses, dtype=np.float64).reshape(-1, 1)
    if x.ndim != 2 or x.shape != v.shape or len(m) != len(x):
        raise ValueError(
            f"velocity_verlet: expected x0, v0 of shape (N, 3) and N masses, got {x.shape}, {v.shape}, {len(m)}"
        )
    if not dt > 0 or steps < 1:
        raise ValueError(f"velocity_verlet: expected dt > 0 and steps >= 1, got {dt}, {steps}")
    c = float(accel_scale)
    u, f = force_fn(x)
    xs, vs, us = [x.copy()], [v.copy()], [float(u)]
    for _ in range(int(steps)):
        v = v + 0.5 * dt * c * f / m
        x = x + dt * v
        if stop is not None and stop(x):
            break
        u, f = force_fn(x)
        v = v + 0.5 * dt * c * f / m
        xs.append(x.copy())
        vs.append(v.copy())
        us.append(float(u))
    pos, vel, pot = np.stack(xs), np.stack(vs), np.array(us)
    kin = 0.5 * (m[None] * vel**2).sum(axis=(1, 2)) / c
    return {
        "positions": pos,
        "velocities": vel,
        "potential": pot,
        "kinetic": kin,
        "total": pot + kin,
    }


def energy_drift(total: np.ndarray, dt: float, n_atoms: int) -> dict[str, float]:
    """NVE drift: least-squares slope of total energy per atom per unit time, and the largest
    excursion ``max |E_t - E_0|`` per atom."""
    e = np.asarray(total, dtype=np.float64)
    if e.ndim != 1 or len(e) < 2:
        raise ValueError(f"energy_drift: expected at least 2 total energies, got shape {e.shape}")
    t = np.arange(len(e)) * float(dt)
    slope = float(np.polyfit(t, e, 1)[0])
    return {
        "drift_per_atom_per_time": slope / n_atoms,
        "max_dev_per_atom": float(np.max(np.abs(e - e[0]))) / n_atoms,
    }
