"""Lorenz-96 (Lorenz 1996) as a tiny, fast weather source for tests and quick tasks.

``dX_k/dt = (X_{k+1} - X_{k-2}) X_{k-1} - X_k + F`` on a ring of ``K`` sectors of a latitude
circle, integrated with RK4. One model time unit is about 5 days, so 0.05 units = 6 hours
(Lorenz 1996). The dataset has WeatherBench 2 dims (``time``, ``latitude`` with the single
latitude 45 N, ``longitude`` with K points); its one variable is called ``lorenz96_x`` because
no WeatherBench 2 variable is a nondimensional Lorenz-96 state.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from icml26.envs.weather.grid import STEP_HOURS

MODEL_TIME_PER_STEP = 0.05  # Lorenz (1996): 0.05 model time units ~ 6 hours


def lorenz96_tendency(x: np.ndarray, forcing: float) -> np.ndarray:
    """``dX/dt`` for states ``x`` of shape (..., K) (the ring is the last axis)."""
    return (np.roll(x, -1, -1) - np.roll(x, 2, -1)) * np.roll(x, 1, -1) - x + forcing


def rk4_step(x: np.ndarray, forcing: float, dt: float) -> np.ndarray:
    """One classical Runge-Kutta step of :func:`lorenz96_tendency`."""
    k1 = lorenz96_tendency(x, forcing)
    k2 = lorenz96_tendency(x + 0.5 * dt * k1, forcing)
    k3 = lorenz96_tendency(x + 0.5 * dt * k2, forcing)
    k4 = lorenz96_tendency(x + dt * k3, forcing)
    return x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def _fast_rk4(k: int, forcing: float, dt: float):  # type: ignore[no-untyped-def]
    """The same RK4 step with precomputed ring indices (the rolls dominate for small K)."""
    ip1, im1, im2 = (np.arange(k) + 1) % k, (np.arange(k) - 1) % k, (np.arange(k) - 2) % k

    def f(x: np.ndarray) -> np.ndarray:
        return (x[ip1] - x[im2]) * x[im1] - x + forcing

    def step(x: np.ndarray) -> np.ndarray:
        k1 = f(x)
        k2 = f(x + 0.5 * dt * k1)
        k3 = f(x + 0.5 * dt * k2)
        k4 = f(x + dt * k3)
        return x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)

    return step


def generate_lorenz96(
    start: str = "2000-01-01",
    end: str = "2003-12-31T18",
    seed: int = 0,
    k: int = 40,
    forcing: float = 8.0,
    substeps: int = 5,
    spinup_steps: int = 2000,
) -> xr.Dataset:
    """Integrate Lorenz-96 from a seeded perturbation of the fixed point X = F, discard
    ``spinup_steps`` 6-hour steps, and return one state every 6 hours from start to end."""
    if k < 4:
        raise ValueError(f"Lorenz-96 needs K >= 4 sectors, got {k}")
    times = pd.date_range(pd.Timestamp(start), pd.Timestamp(end), freq=f"{STEP_HOURS}h")
    if times.size < 1:
        raise ValueError(f"Lorenz-96: empty period {start!r} .. {end!r}")
    rng = np.random.default_rng([int(seed), 96])
    x = forcing + 0.01 * rng.standard_normal(k)
    step = _fast_rk4(k, forcing, MODEL_TIME_PER_STEP / substeps)
    for _ in range(spinup_steps * substeps):
        x = step(x)
    out = np.empty((times.size, k), dtype=np.float32)
    for i in range(times.size):
        out[i] = x
        for _ in range(substeps):
            x = step(x)
    lon = np.arange(k) * 360.0 / k
    return xr.Dataset(
        {"lorenz96_x": (("time", "latitude", "longitude"), out[:, None, :])},
        coords={"time": times.values, "latitude": [45.0], "longitude": lon},
        attrs={
            "source": "icml26 Lorenz-96",
            "seed": int(seed),
            "forcing": float(forcing),
            "model_time_per_step": MODEL_TIME_PER_STEP,
        },
    )
