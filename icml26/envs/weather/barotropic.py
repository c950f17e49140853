"""A spectral barotropic vorticity model on the sphere: nonlinear weather-like dynamics in NumPy.

The nondivergent barotropic vorticity equation (the classic test bed of atmospheric dynamics,
Charney, Fjortoft and von Neumann 1950; Haurwitz 1940 waves):

    d zeta / dt = -div(u (zeta + f)) - kappa zeta - nu (-lap)^p zeta + F,    u = k x grad(psi),
    lap psi = zeta,   f = 2 Omega sin(phi),

solved by the spectral transform method: triangular truncation T on a Gaussian grid with
``nlon = 2 nlat`` and ``nlon >= 3 T + 1`` (the quadratic advection term is computed without
aliasing), fully normalized associated Legendre functions, Gauss-Legendre quadrature, FFTs in
longitude, and classical RK4 in time. Without forcing and dissipation the truncated system
conserves energy ``-1/2 <psi zeta>`` and enstrophy ``1/2 <zeta^2>`` exactly, up to the time
stepping error; ``tests/weather/test_weather_barotropic.py`` checks both and the exact westward
drift of a Rossby-Haurwitz wave.

Spectral arrays hold ``m >= 0`` only, shape ``(T + 1, T + 1)`` indexed ``[m, n]`` (zero for
``n < m``); a real field's ``m < 0`` coefficients are the conjugates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import xarray as xr

EARTH_RADIUS = 6.371e6  # m
OMEGA = 7.292e-5  # 1/s, Earth's rotation rate


def gaussian_latitudes(nlat: int) -> tuple[np.ndarray, np.ndarray]:
    """``(mu, weights)``: Gauss-Legendre nodes ``mu = sin(latitude)`` (south to north) and weights (sum 2)."""
    mu, w = np.polynomial.legendre.leggauss(nlat)
    return mu, w


def legendre_table(trunc: int, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fully normalized associated Legendre functions ``P[m, n, j]`` (``int_-1^1 P^2 dmu = 1``) for
    ``0 <= m <= n <= trunc + 1`` at ``mu``, and ``H[m, n, j] = (1 - mu^2) dP/dmu`` for ``n <= trunc``."""
    nmax = trunc + 1
    p = np.zeros((nmax + 1, nmax + 1, mu.size))
    cos = np.sqrt(1.0 - mu**2)
    p[0, 0] = 1.0 / math.sqrt(2.0)
    for m in range(1, nmax + 1):
        p[m, m] = math.sqrt((2 * m + 1) / (2 * m)) * cos * p[m - 1, m - 1]
    for m in range(0, nmax):
        p[m, m + 1] = math.sqrt(2 * m + 3) * mu * p[m, m]
        for n in range(m + 2, nmax + 1):
            a = math.sqrt((4 * n * n - 1) / (n * n - m * m))
            b = math.sqrt(((n - 1) ** 2 - m * m) / (4 * (n - 1) ** 2 - 1))
            p[m, n] = a * (mu * p[m, n - 1] - b * p[m, n - 2])

    def eps(n: int, m: int) -> float:
        return math.sqrt((n * n - m * m) / (4 * n * n - 1)) if n > m else 0.0

    h = np.zeros((trunc + 1, trunc + 1, mu.size))
    for m in range(trunc + 1):
        for n in range(m, trunc + 1):
            h[m, n] = -n * eps(n + 1, m) * p[m, n + 1] + (n + 1) * eps(n, m) * (
                p[m, n - 1] if n > m else 0.0
            )
    return p[: trunc + 1, : trunc + 1], h


@dataclass
class SphereGrid:
    """Gaussian grid and transforms for triangular truncation ``trunc`` on a sphere of ``radius``."""

    trunc: int = 21
    nlat: int = 32
    radius: float = EARTH_RADIUS

    def __post_init__(self) -> None:
        self.nlon = 2 * self.nlat
        if self.nlon < 3 * self.trunc + 1 or 2 * self.nlat < 3 * self.trunc + 1:
            raise ValueError(
                f"SphereGrid: T{self.trunc} aliases on {self.nlat} x {self.nlon}; need "
                f"nlon >= 3T + 1 = {3 * self.trunc + 1}"
            )
        self.mu, self.weights = gaussian_latitudes(self.nlat)
        self.latitude = np.degrees(np.arcsin(self.mu))
        self.longitude = np.arange(self.nlon) * 360.0 / self.nlon
        self.lam = np.radians(self.longitude)
        self.P, self.H = legendre_table(self.trunc, self.mu)
        n = np.arange(self.trunc + 1)
        self.n = np.broadcast_to(n[None, :], (self.trunc + 1, self.trunc + 1))
        self.m = np.broadcast_to(n[:, None], (self.trunc + 1, self.trunc + 1))
        self.valid = self.n >= self.m
        lap = -(self.n * (self.n + 1.0)) / self.radius**2
        self.lap = np.where(self.valid, lap, 0.0)
        self.inv_lap = np.where(self.valid & (self.n > 0), 1.0 / np.where(lap == 0, 1.0, lap), 0.0)
        self._pw = self.P * self.weights[None, None, :]
        self._hw = self.H * (self.weights / (1.0 - self.mu**2))[None, None, :]
        self._pw_c = self.P * (self.weights / (1.0 - self.mu**2))[None, None, :]

    # ------------------------------------------------------------------ transforms
    def to_spectral(self, field: np.ndarray) -> np.ndarray:
        """Grid ``(nlat, nlon)`` -> coefficients ``(T + 1, T + 1)`` (complex, ``[m, n]``)."""
        fm = np.fft.rfft(field, axis=-1)[:, : self.trunc + 1] / self.nlon  # (nlat, M)
        return np.einsum("jm,mnj->mn", fm, self._pw)

    def to_grid(self, spec: np.ndarray) -> np.ndarray:
        """Coefficients -> grid ``(nlat, nlon)``."""
        return self._synth(np.einsum("mn,mnj->jm", spec, self.P))

    def _synth(self, fm: np.ndarray) -> np.ndarray:
        full = np.zeros((self.nlat, self.nlon // 2 + 1), dtype=complex)
        full[:, : self.trunc + 1] = fm
        return np.fft.irfft(full * self.nlon, n=self.nlon, axis=-1)

    def velocity(self, psi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(U, V) = (u cos(phi), v cos(phi))`` on the grid from the streamfunction's coefficients."""
        u = -self._synth(np.einsum("mn,mnj->jm", psi, self.H)) / self.radius
        v = self._synth(np.einsum("mn,mnj->jm", 1j * self.m * psi, self.P)) / self.radius
        return u, v

    def divergence(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Coefficients of ``div`` of the vector field whose ``cos(phi)``-weighted components are
        ``(a, b)`` on the grid: ``(1 / (a cos^2)) [d a / d lam + cos d b / d phi]``."""
        am = np.fft.rfft(a, axis=-1)[:, : self.trunc + 1] / self.nlon
        bm = np.fft.rfft(b, axis=-1)[:, : self.trunc + 1] / self.nlon
        out = 1j * self.m[:, :1] * np.einsum("jm,mnj->mn", am, self._pw_c) - np.einsum(
            "jm,mnj->mn", bm, self._hw
        )
        return np.where(self.valid, out, 0.0) / self.radius

    # ------------------------------------------------------------------ integrals
    def mean(self, field: np.ndarray) -> float:
        """Area mean of a grid field."""
        return float(np.sum(self.weights[:, None] * field) / (2.0 * self.nlon))


@dataclass
class BarotropicModel:
    """The forced-dissipative barotropic vorticity model on :class:`SphereGrid` (see the module doc).

    ``drag`` kappa (1/s), ``hyperdiffusion`` nu for ``(-lap)^order``, given as the e-folding time
    (s) of the smallest resolved scale; ``forcing`` a grid field of vorticity tendency (1/s^2)."""

    grid: SphereGrid
    omega: float = OMEGA
    drag: float = 0.0
    hyperdiffusion_time: float | None = None
    order: int = 4
    forcing: np.ndarray | None = None

    def __post_init__(self) -> None:
        g = self.grid
        self._f = 2.0 * self.omega * g.mu[:, None] * np.ones((1, g.nlon))
        damp = np.zeros_like(g.lap)
        if self.hyperdiffusion_time:
            lmax = g.trunc * (g.trunc + 1.0)
            damp = ((-g.lap * g.radius**2) / lmax) ** (self.order // 2) / self.hyperdiffusion_time
        self._damp = np.where(g.valid, damp + self.drag, 0.0)
        self._force = None if self.forcing is None else g.to_spectral(self.forcing)

    def tendency(self, zeta: np.ndarray) -> np.ndarray:
        g = self.grid
        psi = zeta * g.inv_lap
        u, v = g.velocity(psi)
        q = g.to_grid(zeta) + self._f
        out = -g.divergence(u * q, v * q) - self._damp * zeta
        if self._force is not None:
            out = out + self._force
        return np.where(g.valid, out, 0.0)

    def step(self, zeta: np.ndarray, dt: float) -> np.ndarray:
        """One classical RK4 step of the spectral vorticity."""
        k1 = self.tendency(zeta)
        k2 = self.tendency(zeta + 0.5 * dt * k1)
        k3 = self.tendency(zeta + 0.5 * dt * k2)
        k4 = self.tendency(zeta + dt * k3)
        return zeta + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)

    def integrate(self, zeta: np.ndarray, dt: float, steps: int) -> np.ndarray:
        for _ in range(steps):
            zeta = self.step(zeta, dt)
        return zeta

    # ------------------------------------------------------------------ invariants
    def energy(self, zeta: np.ndarray) -> float:
        """Kinetic energy per unit area, ``-1/2 mean(psi zeta)`` (m^2/s^2)."""
        g = self.grid
        return -0.5 * g.mean(g.to_grid(zeta * g.inv_lap) * g.to_grid(zeta))

    def enstrophy(self, zeta: np.ndarray) -> float:
        """``1/2 mean(zeta^2)`` (1/s^2)."""
        g = self.grid
        return 0.5 * g.mean(g.to_grid(zeta) ** 2)


def rossby_haurwitz(
    grid: SphereGrid, wavenumber: int = 4, omega_wave: float = 7.848e-6, amplitude: float = 7.848e-6
) -> np.ndarray:
    """The vorticity of a Rossby-Haurwitz wave (Williamson et al. 1992, test 6, barotropic form):
    ``psi = -a^2 w sin(phi) + a^2 K cos^R(phi) sin(phi) cos(R lam)``, as spectral coefficients."""
    r = wavenumber
    mu = grid.mu[:, None]
    cosphi = np.sqrt(1.0 - mu**2)
    zeta = 2.0 * omega_wave * mu - amplitude * (r + 1) * (r + 2) * cosphi**r * mu * np.cos(
        r * grid.lam[None, :]
    )
    return grid.to_spectral(zeta)


def rossby_haurwitz_speed(
    wavenumber: int = 4, omega_wave: float = 7.848e-6, omega: float = OMEGA
) -> float:
    """Angular phase speed (rad/s, eastward positive) of the wave in the nondivergent model (Haurwitz 1940)."""
    r = wavenumber
    return (r * (3 + r) * omega_wave - 2.0 * omega) / ((1 + r) * (2 + r))


__all__ = [
    "SphereGrid",
    "BarotropicModel",
    "gaussian_latitudes",
    "legendre_table",
    "rossby_haurwitz",
    "rossby_haurwitz_speed",
    "jet_vorticity",
    "generate_barotropic",
    "EARTH_RADIUS",
    "OMEGA",
]


def jet_vorticity(
    grid: SphereGrid, speed: float = 40.0, latitude: float = 45.0, width: float = 10.0
) -> np.ndarray:
    """Grid vorticity of a zonal Gaussian jet ``u = speed exp(-((phi - phi0) / width)^2)``:
    ``zeta = -(1 / (a cos phi)) d(u cos phi) / d phi``."""
    phi = np.radians(grid.latitude)[:, None]
    phi0, w = math.radians(latitude), math.radians(width)
    u = speed * np.exp(-(((phi - phi0) / w) ** 2))
    du = u * (-2.0 * (phi - phi0) / w**2)
    zeta = -(du * np.cos(phi) - u * np.sin(phi)) / (grid.radius * np.cos(phi))
    return np.repeat(zeta, grid.nlon, axis=1)


def generate_barotropic(
    start: str = "2000-01-01",
    end: str = "2003-12-31T18",
    seed: int = 0,
    spinup_days: float = 100.0,
    trunc: int = 21,
    nlat: int = 32,
    dt: float = 1800.0,
    jet_speed: float = 40.0,
    relaxation_days: float = 10.0,
    stir_amplitude: float = 1e-9,
    stir_wavenumbers: tuple[int, int] = (8, 12),
    hyperdiffusion_hours: float = 6.0,
    hyperdiffusion_order: int = 4,
    progress: bool = True,
) -> xr.Dataset:
    """Forced-dissipative barotropic turbulence on the sphere, sampled every 6 h.

    The flow is relaxed towards a barotropically unstable mid-latitude jet (time scale
    ``relaxation_days``) and stirred by seeded white-in-time forcing on total wavenumbers
    ``stir_wavenumbers`` (Vallis-style ring forcing, ``stir_amplitude`` in 1/s^2 per mode); a
    hyperdiffusion ``(-lap)^(hyperdiffusion_order / 2)`` damps the smallest resolved scale in
    ``hyperdiffusion_hours`` (a higher order leaves the large scales closer to inviscid). Channels (WeatherBench 2 names,
    level 500 hPa): ``geopotential`` = ``g 5500 m + f0 psi`` (linear balance with f0 at 45 N),
    ``u_component_of_wind``, ``v_component_of_wind`` and ``vorticity``."""
    import pandas as pd
    import xarray as xr

    from icml26.envs.weather.grid import STEP_HOURS

    times = pd.date_range(pd.Timestamp(start), pd.Timestamp(end), freq=f"{STEP_HOURS}h")
    if times.size < 1:
        raise ValueError(f"barotropic: empty period {start!r} .. {end!r}")
    substeps = int(round(STEP_HOURS * 3600 / dt))
    if substeps < 1 or abs(substeps * dt - STEP_HOURS * 3600) > 1e-6:
        raise ValueError(f"barotropic: dt={dt} s must divide the {STEP_HOURS}-hour step")
    grid = SphereGrid(trunc, nlat)
    kappa = 1.0 / (relaxation_days * 86400.0)
    jet = jet_vorticity(grid, jet_speed)
    if hyperdiffusion_order < 2 or hyperdiffusion_order % 2:
        raise ValueError(
            f"barotropic: hyperdiffusion_order must be an even int >= 2, got {hyperdiffusion_order!r}"
        )
    model = BarotropicModel(
        grid,
        drag=kappa,
        hyperdiffusion_time=hyperdiffusion_hours * 3600.0,
        order=int(hyperdiffusion_order),
        forcing=kappa * jet,
    )
    rng = np.random.default_rng([int(seed), 7])
    ring = (
        grid.valid
        & (grid.n >= stir_wavenumbers[0])
        & (grid.n <= stir_wavenumbers[1])
        & (grid.m > 0)
    )
    zeta = grid.to_spectral(jet) + ring * 1e-6 * (
        rng.standard_normal(ring.shape) + 1j * rng.standard_normal(ring.shape)
    )
    n_spin = int(round(spinup_days * 24 / STEP_HOURS))
    total = n_spin + times.size
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=total,
            desc="barotropic sphere (6-h steps)",
            unit="step",
            leave=False,
            mininterval=1.0,
        )
    shape = (times.size, grid.nlat, grid.nlon)
    out = {k: np.empty(shape, dtype=np.float32) for k in ("psi", "u", "v", "zeta")}
    cosphi = np.sqrt(1.0 - grid.mu**2)[:, None]
    for i in range(total):
        if i >= n_spin:
            j = i - n_spin
            psi = zeta * grid.inv_lap
            uu, vv = grid.velocity(psi)
            out["psi"][j], out["zeta"][j] = grid.to_grid(psi), grid.to_grid(zeta)
            out["u"][j], out["v"][j] = uu / cosphi, vv / cosphi
            if not np.all(np.isfinite(out["zeta"][j])):
                raise FloatingPointError(
                    f"barotropic model blew up at step {j}; reduce dt ({dt} s)"
                )
        for _ in range(substeps):
            zeta = model.step(zeta, dt)
        # one stirring impulse per 6-h step: white noise in time with variance rate amplitude^2
        kick = ring * (rng.standard_normal(ring.shape) + 1j * rng.standard_normal(ring.shape))
        kick[0] = kick[0].real
        zeta = zeta + stir_amplitude * math.sqrt(STEP_HOURS * 3600.0) * kick
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    f0 = 2.0 * OMEGA * math.sin(math.radians(45.0))
    dims = ("time", "level", "latitude", "longitude")

    def lev(x: np.ndarray) -> np.ndarray:
        return x[:, None]

    return xr.Dataset(
        {
            "geopotential": (dims, lev((9.80665 * 5500.0 + f0 * out["psi"]).astype(np.float32))),
            "u_component_of_wind": (dims, lev(out["u"])),
            "v_component_of_wind": (dims, lev(out["v"])),
            "vorticity": (dims, lev(out["zeta"])),
        },
        coords={
            "time": times,
            "level": np.array([500]),
            "latitude": grid.latitude,
            "longitude": grid.longitude,
        },
        attrs={
            "source": "icml26 barotropic vorticity model on the sphere",
            "truncation": f"T{trunc}",
            "seed": int(seed),
        },
    )
