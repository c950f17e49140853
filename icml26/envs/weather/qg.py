"""A two-layer quasi-geostrophic model in numpy FFTs: the physically richer weather source.

The Phillips two-layer model on a doubly periodic beta plane, in the formulation of pyqg's
``TwoLayerModel`` (pyqg 0.7.2 does not build against Cython 3, so it is re-implemented here)::

    q1 = lap(psi1) + F1 (psi2 - psi1),   q2 = lap(psi2) + F2 (psi1 - psi2)
    F1 = 1 / (rd^2 (1 + delta)),         F2 = delta F1,   delta = H1 / H2
    dq_i/dt + J(psi_i, q_i) + U_i dq_i/dx + Q_y,i dpsi_i/dx = -[i = 2] r_ek lap(psi2)
    Q_y,1 = beta + F1 (U1 - U2),         Q_y,2 = beta - F2 (U1 - U2)

integrated with classical RK4 and pyqg's exponential small-scale filter (filterfac 23.6,
cutoff 0.65 pi). Defaults are atmospheric: a square 9430 km sector at 45 N (32 x 32 points,
295 km spacing; 120 degrees of longitude), deformation radius 700 km, layer winds 20 and 5 m/s,
bottom drag 1/(4 days); eddies equilibrate after about 80 days (spin-up 150 days). A square
domain matters: in a channel much shorter than the unstable wavelength the x-only modes, on
which the Jacobian vanishes, grow without bound.

Criticality: the inviscid (Phillips) instability needs ``Q_y,2 < 0``, a shear above ``beta / F2``
(``2 beta rd^2`` for equal layers), 15.9 m/s at the defaults, so the defaults' 15 m/s are just
subcritical and only the bottom drag destabilizes them: a few regular waves on slowly varying
zonal jets. ``beta=5e-12, rek=1/86400, dt=1080`` (task ``weather/qg-turbulent``) is three times
supercritical and drag-arrested: it decorrelates within about 5 days, and a nonlinear forecaster
fitted to the training years (``weather-quadratic-iterated``, an iterated quadratic emulator)
beats the best linear one (``weather-linear-direct``) at 1-3 days (docs/results/weather.md).
Milder or slowed-down settings keep skill longer but are close to linear at 6-hour sampling.

Output follows WeatherBench 2 names: ``geopotential``, ``u_component_of_wind`` and
``v_component_of_wind`` on levels 250 (upper layer) and 750 hPa (lower layer), geopotential
being ``Phi0_i + f0 (psi_i - U_i y)`` and the winds including the mean jet. Latitude and
longitude label the sector's grid (the model itself is a beta plane, so cells have equal area).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from icml26.envs.weather.grid import STEP_HOURS

EARTH_RADIUS = 6.371e6
OMEGA = 7.292e-5


@dataclass
class TwoLayerQG:
    """State and spectral operators of the two-layer QG model (lengths in m, time in s)."""

    nx: int = 32
    ny: int = 32
    lx: float = 9.43e6
    ly: float = 9.43e6
    rd: float = 7.0e5
    delta: float = 1.0
    beta: float = 1.62e-11
    u1: float = 20.0
    u2: float = 5.0
    rek: float = 1.0 / (4 * 86400.0)
    dt: float = 2160.0
    filterfac: float = 23.6
    filter_cutoff: float = 0.65 * np.pi
    qh: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.dx, self.dy = self.lx / self.nx, self.ly / self.ny
        self.k = 2 * np.pi * np.fft.rfftfreq(self.nx, self.dx)[None, :]
        self.l = 2 * np.pi * np.fft.fftfreq(self.ny, self.dy)[:, None]
        self.k2 = self.k**2 + self.l**2
        self.f1 = 1.0 / (self.rd**2 * (1.0 + self.delta))
        self.f2 = self.delta * self.f1
        det = self.k2 * (self.k2 + self.f1 + self.f2)
        self._inv_det = np.where(det > 0, 1.0 / np.where(det > 0, det, 1.0), 0.0)
        self.qy = np.array(
            [self.beta + self.f1 * (self.u1 - self.u2), self.beta - self.f2 * (self.u1 - self.u2)]
        )[:, None, None]
        self.ubg = np.array([self.u1, self.u2])[:, None, None]
        wv = np.sqrt((self.k * self.dx) ** 2 + (self.l * self.dy) ** 2)
        self.filtr = np.where(
            wv > self.filter_cutoff, np.exp(-self.filterfac * (wv - self.filter_cutoff) ** 4), 1.0
        )
        self.qh = np.zeros((2, self.ny, self.nx // 2 + 1), dtype=complex)

    # --------------------------------------------------------------------- operators
    def invert(self, qh: np.ndarray) -> np.ndarray:
        """Streamfunction (spectral) from potential vorticity (spectral)."""
        a11 = -self.k2 - self.f1
        a22 = -self.k2 - self.f2
        # [q1; q2] = [[a11, F1], [F2, a22]] [psi1; psi2]; det = a11 a22 - F1 F2 = K^2 (K^2 + F1 + F2)
        p1 = (a22 * qh[0] - self.f1 * qh[1]) * self._inv_det
        p2 = (-self.f2 * qh[0] + a11 * qh[1]) * self._inv_det
        return np.stack([p1, p2])

    def pv_from_streamfunction(self, ph: np.ndarray) -> np.ndarray:
        return np.stack(
            [
                -self.k2 * ph[0] + self.f1 * (ph[1] - ph[0]),
                -self.k2 * ph[1] + self.f2 * (ph[0] - ph[1]),
            ]
        )

    def tendency(self, qh: np.ndarray, nonlinear: bool = True) -> np.ndarray:
        ph = self.invert(qh)
        ik, il = 1j * self.k, 1j * self.l
        out = -ik * self.ubg * qh - ik * self.qy * ph
        out[1] += self.rek * self.k2 * ph[1]
        if nonlinear:
            shape = (self.ny, self.nx)
            u = np.fft.irfft2(-il * ph, s=shape)
            v = np.fft.irfft2(ik * ph, s=shape)
            qx = np.fft.irfft2(ik * qh, s=shape)
            qy = np.fft.irfft2(il * qh, s=shape)
            out -= np.fft.rfft2(u * qx + v * qy)
        return out

    def step(self, nonlinear: bool = True, filtered: bool = True) -> None:
        """One RK4 step of ``dt`` seconds, then the small-scale filter."""
        q, dt = self.qh, self.dt
        k1 = self.tendency(q, nonlinear)
        k2 = self.tendency(q + 0.5 * dt * k1, nonlinear)
        k3 = self.tendency(q + 0.5 * dt * k2, nonlinear)
        k4 = self.tendency(q + dt * k3, nonlinear)
        q = q + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        self.qh = q * self.filtr if filtered else q

    # --------------------------------------------------------------------- diagnostics
    def streamfunction(self) -> np.ndarray:
        """Perturbation streamfunction on the grid, (2, ny, nx)."""
        return np.fft.irfft2(self.invert(self.qh), s=(self.ny, self.nx))

    def velocities(self) -> tuple[np.ndarray, np.ndarray]:
        ph = self.invert(self.qh)
        shape = (self.ny, self.nx)
        return np.fft.irfft2(-1j * self.l * ph, s=shape), np.fft.irfft2(1j * self.k * ph, s=shape)


def generate_qg(
    start: str = "2000-01-01",
    end: str = "2003-12-31T18",
    seed: int = 0,
    spinup_days: float = 150.0,
    progress: bool = True,
    **model_kwargs: Any,
) -> xr.Dataset:
    """Spin the model up from seeded small noise for ``spinup_days`` and sample every 6 h."""
    times = pd.date_range(pd.Timestamp(start), pd.Timestamp(end), freq=f"{STEP_HOURS}h")
    if times.size < 1:
        raise ValueError(f"QG: empty period {start!r} .. {end!r}")
    m = TwoLayerQG(**model_kwargs)
    substeps = int(round(STEP_HOURS * 3600 / m.dt))
    if abs(substeps * m.dt - STEP_HOURS * 3600) > 1e-6:
        raise ValueError(f"QG: dt={m.dt} s must divide the {STEP_HOURS}-hour step")
    rng = np.random.default_rng([int(seed), 2])
    psi0 = 1e4 * rng.standard_normal((2, m.ny, m.nx))
    m.qh = m.pv_from_streamfunction(np.fft.rfft2(psi0)) * m.filtr
    n_spin = int(round(spinup_days * 24 / STEP_HOURS))
    total = n_spin + times.size
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=total, desc="two-layer QG (6-h steps)", unit="step", leave=False, mininterval=1.0
        )
    psi = np.empty((times.size, 2, m.ny, m.nx), dtype=np.float32)
    uu = np.empty_like(psi)
    vv = np.empty_like(psi)
    for i in range(total):
        if i >= n_spin:
            j = i - n_spin
            psi[j] = m.streamfunction()
            uu[j], vv[j] = m.velocities()
            if not np.all(np.isfinite(psi[j])):
                raise FloatingPointError(f"QG model blew up at step {j}; reduce dt ({m.dt} s)")
        for _ in range(substeps):
            m.step()
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()

    lat0 = 45.0
    dlon = np.rad2deg(m.dx / (EARTH_RADIUS * np.cos(np.deg2rad(lat0))))
    dlat = np.rad2deg(m.dy / EARTH_RADIUS)
    lon = np.arange(m.nx) * dlon
    lat = lat0 + (np.arange(m.ny) - (m.ny - 1) / 2) * dlat
    y = (np.arange(m.ny) - (m.ny - 1) / 2) * m.dy
    f0 = 2 * OMEGA * np.sin(np.deg2rad(lat0))
    phi0 = np.array([9.80665 * 10400.0, 9.80665 * 2500.0])[None, :, None, None]
    ubg = np.array([m.u1, m.u2])[None, :, None, None]
    geo = phi0 + f0 * (psi - ubg * y[None, None, :, None])
    dims = ("time", "level", "latitude", "longitude")
    return xr.Dataset(
        {
            "geopotential": (dims, geo.astype(np.float32)),
            "u_component_of_wind": (dims, (uu + ubg).astype(np.float32)),
            "v_component_of_wind": (dims, vv),
        },
        coords={
            "time": times.values,
            "level": np.array([250, 750]),
            "latitude": lat,
            "longitude": lon,
        },
        attrs={
            "source": "icml26 two-layer QG",
            "seed": int(seed),
            "rd_m": m.rd,
            "shear_m_s": m.u1 - m.u2,
            "dt_s": m.dt,
        },
    )
