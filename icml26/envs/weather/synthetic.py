"""A synthetic atmosphere on the WeatherBench 5.625 deg grid, generated offline in seconds.

WeatherBench 2 names and layout: ``geopotential`` and ``temperature`` on levels 500 and 850 hPa,
``2m_temperature``, ``10m_u_component_of_wind``, ``10m_v_component_of_wind`` (plus the static
``land_sea_mask``); the default task channels are z500, t850, t2m, u10 and v10. Each field is an
analytic climatology plus anomalies:

* **Climatology**: zonal structure, a seasonal cycle of opposite sign in the two hemispheres
  (stronger over land), a diurnal cycle in local solar time (strong over land for 2 m
  temperature), stationary waves in winter, trade winds, westerlies and an ITCZ that migrates.
* **Propagating anomalies**: a streamfunction expanded in spherical harmonics up to degree
  ``n_max`` (T21). Every mode is a complex Ornstein-Uhlenbeck process (red in time, decorrelation
  time shrinking with degree, a red spatial spectrum peaking near degree 6) that drifts east or
  west at the Rossby-Haurwitz angular phase speed ``nu_n = omega - 2 (Omega + omega) / (n (n + 1) + L)``
  (Haurwitz 1940; L a Lamb parameter for equivalent-barotropic waves) on a solid-body superrotation ``omega``. The steering itself varies with a
  slow zonal-jet index (its own red process, visible in the state as a balanced zonal wind and
  geopotential pattern), so the waves' speed depends on the state: a nonlinearity (a product of
  the index and the waves) that a linear model cannot capture. Geopotential is
  ``f psi`` (linear balance, small in the tropics), 500 hPa winds are the rotational winds,
  10 m winds are reduced and turned toward low pressure (Ekman turning), 850 hPa temperature
  is the streamfunction in quadrature (warm advection ahead of troughs) plus an independent
  slower field, 2 m temperature follows 850 hPa plus land-enhanced red noise.
* **Rare extremes with known ground truth**: heatwaves (summer land, warm blob in t2m and
  t850 under a blocking high in z500) and cyclones (storm-track oceans, a deep low with its
  geostrophic surface vortex), with random positions, durations, drifts and amplitudes. The
  catalogue is in ``ds.attrs["events"]`` (JSON); :func:`event_table` and
  :func:`event_footprint` decode it.

Years are processed in chunks with per-year random streams, so the same ``seed`` and start
give the same values for a year whatever the end date. Amplitudes are calibrated to ERA5-like
anomaly magnitudes (z500 about 800 m2/s2, t850 about 3.5 K area-weighted RMS).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from icml26.envs.weather.grid import (
    STEP_HOURS,
    latitude_bounds,
    regular_latitudes,
    regular_longitudes,
)

EARTH_RADIUS = 6.371e6  # m
OMEGA = 7.292e-5  # Earth's rotation rate, 1/s
GRAVITY = 9.80665  # m/s^2 (WMO standard gravity, used by ERA5 geopotential)
_DT = STEP_HOURS * 3600.0

# Continents as smooth ellipses: (lat centre, lon centre, lat half-axis, lon half-axis), degrees.
_CONTINENTS = (
    (45.0, 258.0, 22.0, 33.0),  # North America
    (72.0, 318.0, 9.0, 16.0),  # Greenland
    (-14.0, 299.0, 26.0, 16.0),  # South America
    (52.0, 85.0, 20.0, 75.0),  # Eurasia
    (28.0, 45.0, 12.0, 22.0),  # Arabia / Middle East
    (22.0, 78.0, 10.0, 10.0),  # India
    (5.0, 20.0, 30.0, 22.0),  # Africa
    (-25.0, 134.0, 11.0, 19.0),  # Australia
    (-90.0, 0.0, 22.0, 720.0),  # Antarctica
)


def land_sea_mask(latitude: np.ndarray, longitude: np.ndarray) -> np.ndarray:
    """A smooth land fraction in [0, 1] of shape (lat, lon) from idealized continents."""
    lat = np.asarray(latitude)[:, None]
    lon = np.asarray(longitude)[None, :]
    mask = np.zeros((lat.size, lon.size))
    for lc, oc, a, b in _CONTINENTS:
        dlon = (lon - oc + 180.0) % 360.0 - 180.0
        d = np.sqrt(((lat - lc) / a) ** 2 + (dlon / b) ** 2)
        mask = np.maximum(mask, 1.0 / (1.0 + np.exp((d - 1.0) / 0.12)))
    return mask


def _season(times: pd.DatetimeIndex) -> tuple[np.ndarray, np.ndarray]:
    """(S, hour): S = +1 in mid-July, -1 in mid-January (northern summer positive)."""
    hour = (times.hour + times.minute / 60.0).to_numpy(dtype=np.float64)
    doy = times.day_of_year.to_numpy(dtype=np.float64) - 1 + hour / 24.0
    return -np.cos(2 * np.pi * (doy - 15.0) / 365.25), hour


def climatology_fields(
    times: Any, latitude: np.ndarray, longitude: np.ndarray, land: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The analytic climatology of every channel at ``times``: arrays of shape (T, lat, lon)."""
    t = pd.DatetimeIndex(np.atleast_1d(np.asarray(times, dtype="datetime64[ns]")))
    lat = np.deg2rad(np.asarray(latitude))[None, :, None]
    lon_deg = np.asarray(longitude)[None, None, :]
    land = land_sea_mask(latitude, longitude) if land is None else land
    land = land[None]
    s, hour = _season(t)
    s = s[:, None, None]
    local = hour[:, None, None] + lon_deg / 15.0
    diurnal = np.cos(2 * np.pi * (local - 15.0) / 24.0)  # peaks at 15 local solar time
    sin, cos = np.sin(lat), np.cos(lat)
    nh = (lat > 0).astype(float)
    winter_nh = 0.5 * (1 - s)
    height = (
        5870.0
        - 620.0 * sin**2
        + 90.0 * s * sin
        - 75.0 * nh * sin**2 * winter_nh * np.cos(2 * np.deg2rad(lon_deg - 140.0))
    )
    t850 = 252.0 + 38.0 * cos**2 + (5.0 + 9.0 * land) * s * sin + 0.8 * land * diurnal * cos
    t2m = t850 + 11.0 + (1.5 + 5.0 * land) * s * sin + (0.6 + 4.0 * land) * diurnal * cos
    shifted = lat - np.deg2rad(4.0) * s
    u10 = -5.5 * np.cos(3 * shifted) * (1 - 0.35 * land)
    itcz = np.deg2rad(6.0) * s
    d = lat - itcz
    v10 = -3.0 * np.sin(6 * d) * np.exp(-((d / np.deg2rad(25.0)) ** 4))
    height850 = 1500.0 - 140.0 * sin**2 + 25.0 * s * sin
    shape = (t.size, np.size(latitude), np.size(longitude))
    fields = {
        "z500": GRAVITY * height,
        "z850": GRAVITY * height850,
        "t500": t850 - 27.0 - 0.8 * land * diurnal * cos,
        "t850": t850,
        "t2m": t2m,
        "u10": u10,
        "v10": v10,
    }
    return {k: np.broadcast_to(v, shape).astype(np.float32) for k, v in fields.items()}


# ----------------------------------------------------------------------------- spectral basis
def _mode_list(n_max: int) -> tuple[np.ndarray, np.ndarray]:
    ns, ms = [], []
    for n in range(1, n_max + 1):
        for m in range(0, n + 1):
            ns.append(n)
            ms.append(m)
    return np.array(ns), np.array(ms)


def _harmonics(ns: np.ndarray, ms: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Complex orthonormal spherical harmonics Y_n^m on the grid: (K, lat, lon)."""
    from scipy.special import sph_harm_y

    theta = (np.pi / 2 - lat)[:, None]  # colatitude
    phi = lon[None, :]
    return np.stack([sph_harm_y(n, m, theta, phi) for n, m in zip(ns, ms)])


class _Basis:
    """Real matrices mapping mode amplitudes (Re w, Im w) to fields, with derivative maps."""

    def __init__(self, n_max: int, latitude: np.ndarray, longitude: np.ndarray) -> None:
        self.ns, self.ms = _mode_list(n_max)
        lat, lon = np.deg2rad(latitude), np.deg2rad(longitude)
        h = 1e-5
        y = _harmonics(self.ns, self.ms, lat, lon)
        dy_dlat = (
            _harmonics(self.ns, self.ms, lat + h, lon) - _harmonics(self.ns, self.ms, lat - h, lon)
        ) / (2 * h)
        dy_dlon = 1j * self.ms[:, None, None] * y
        k = len(self.ns)
        hw = lat.size * lon.size
        # field = Re(sum w_k Y_k) = sum Re(w) Re(Y) - Im(w) Im(Y)
        self.value = np.concatenate([y.real, -y.imag]).reshape(2 * k, hw)
        self.dlat = np.concatenate([dy_dlat.real, -dy_dlat.imag]).reshape(2 * k, hw)
        self.dlon = np.concatenate([dy_dlon.real, -dy_dlon.imag]).reshape(2 * k, hw)


def _ou_variances(ns: np.ndarray, ms: np.ndarray, peak: float = 6.0) -> np.ndarray:
    """Stationary E|w|^2 per mode: a red spectrum per degree ~ n / (1 + (n/peak)^4) (a maximum
    near ``peak``, falling as n^-3 beyond), spread evenly over the degree's 2n+1 real modes and
    converted from field variance to streamfunction variance by n (n + 1)."""
    per_degree = (ns / peak) / (1.0 + (ns / peak) ** 4)
    var = per_degree / (2 * ns + 1) / (ns * (ns + 1.0))
    return np.where(ms == 0, var, 2 * var)  # complex modes carry Re and Im halves


def _decorrelation_days(ns: np.ndarray, at_6: float) -> np.ndarray:
    """Decorrelation time per degree: ``at_6`` days at n = 6, ~n^-0.5, capped at 1.2 at_6."""
    return np.minimum(1.2 * at_6, at_6 * (6.0 / ns) ** 0.5)


def _field_rms(coef_var: np.ndarray, ms: np.ndarray, mat: np.ndarray, weights: np.ndarray) -> float:
    """Area-weighted RMS of the linear field ``[Re w, Im w] @ mat`` under the stationary law."""
    k = coef_var.size
    var_re = np.where(ms == 0, coef_var, coef_var / 2)
    var_im = np.where(ms == 0, 0.0, coef_var / 2)
    var = var_re @ (mat[:k] ** 2) + var_im @ (mat[k:] ** 2)
    return float(np.sqrt(np.sum(var * weights) / np.sum(weights)))


def _area_weights(latitude: np.ndarray, n_lon: int) -> np.ndarray:
    b = np.deg2rad(latitude_bounds(latitude))
    w = np.sin(b[1:]) - np.sin(b[:-1])
    return np.repeat(w, n_lon)


# ----------------------------------------------------------------------------- extremes
def _great_circle(lat0: float, lon0: float, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Great-circle distance (m) from (lat0, lon0) to the grid (degrees in, (lat, lon) out)."""
    p0, l0 = np.deg2rad(lat0), np.deg2rad(lon0)
    p, lo = np.deg2rad(lat)[:, None], np.deg2rad(lon)[None, :]
    c = np.sin(p0) * np.sin(p) + np.cos(p0) * np.cos(p) * np.cos(lo - l0)
    return EARTH_RADIUS * np.arccos(np.clip(c, -1.0, 1.0))


def _sample_events(
    rng: np.random.Generator,
    year_start: pd.Timestamp,
    year_end: pd.Timestamp,
    latitude: np.ndarray,
    longitude: np.ndarray,
    land: np.ndarray,
    heatwaves: float,
    cyclones: float,
) -> list[dict[str, Any]]:
    span_h = (year_end - year_start) / pd.Timedelta(hours=1)
    frac = span_h / (365.25 * 24)
    events: list[dict[str, Any]] = []
    lat2 = np.repeat(latitude[:, None], longitude.size, axis=1)
    lon2 = np.repeat(longitude[None, :], latitude.size, axis=0)
    for kind, rate in (("heatwave", heatwaves), ("cyclone", cyclones)):
        for _ in range(int(rng.poisson(rate * frac))):
            start = year_start + pd.Timedelta(
                hours=STEP_HOURS * int(rng.integers(0, max(1, span_h // STEP_HOURS)))
            )
            doy = start.day_of_year
            nh_summer = 120 <= doy <= 273
            if kind == "heatwave":
                hemi = 1.0 if nh_summer else -1.0
                ok = (land > 0.6) & (hemi * lat2 >= 28) & (hemi * lat2 <= 60)
                duration_h = STEP_HOURS * int(rng.integers(16, 41))  # 4-10 days
                amp = float(rng.uniform(8.0, 14.0))  # K at the peak, t2m
                radius = float(rng.uniform(700e3, 1100e3))
                drift = (float(rng.uniform(0.0, 3.0)), 0.0)  # deg lon/day, deg lat/day
            else:
                hemi = (
                    (-1.0 if nh_summer else 1.0)
                    if rng.random() < 0.7
                    else (1.0 if nh_summer else -1.0)
                )
                ok = (land < 0.3) & (hemi * lat2 >= 35) & (hemi * lat2 <= 58)
                duration_h = STEP_HOURS * int(rng.integers(12, 25))  # 3-6 days
                amp = float(rng.uniform(1800.0, 2800.0))  # m2/s2 surface geopotential deficit
                radius = float(rng.uniform(600e3, 900e3))
                drift = (float(rng.uniform(9.0, 15.0)), float(hemi * rng.uniform(0.0, 1.5)))
            cand = np.flatnonzero(ok.ravel())
            if cand.size == 0:
                continue
            i = int(rng.choice(cand))
            events.append(
                {
                    "kind": kind,
                    "start": start.isoformat(),
                    "duration_h": int(duration_h),
                    "lat0": float(lat2.ravel()[i]),
                    "lon0": float(lon2.ravel()[i]),
                    "dlon_per_day": drift[0],
                    "dlat_per_day": drift[1],
                    "amplitude": amp,
                    "radius_m": radius,
                }
            )
    return events


def _event_shape(
    ev: dict[str, Any], times: pd.DatetimeIndex, latitude: np.ndarray, longitude: np.ndarray
) -> tuple[np.ndarray, list[tuple[np.ndarray, float, float, float]]]:
    """Indices of ``times`` inside the event and, for each, (gaussian, envelope, lat_c, lon_c)."""
    start = pd.Timestamp(ev["start"])
    elapsed_h = (times - start) / pd.Timedelta(hours=1)
    inside = np.flatnonzero((elapsed_h >= 0) & (elapsed_h <= ev["duration_h"]))
    out = []
    for j in inside:
        tau = elapsed_h[j] / ev["duration_h"]
        days = elapsed_h[j] / 24.0
        lat_c = float(np.clip(ev["lat0"] + ev["dlat_per_day"] * days, -85, 85))
        lon_c = float((ev["lon0"] + ev["dlon_per_day"] * days) % 360.0)
        env = (
            float(np.sin(np.pi * tau) ** 2)
            if ev["kind"] == "heatwave"
            else float(np.sin(np.pi * tau))
        )
        g = np.exp(-0.5 * (_great_circle(lat_c, lon_c, latitude, longitude) / ev["radius_m"]) ** 2)
        out.append((g, env, lat_c, lon_c))
    return inside, out


def _inject_events(
    fields: dict[str, np.ndarray],
    events: list[dict[str, Any]],
    times: pd.DatetimeIndex,
    latitude: np.ndarray,
    longitude: np.ndarray,
) -> None:
    lat_r = np.deg2rad(latitude)[:, None]
    for ev in events:
        idx, shapes = _event_shape(ev, times, latitude, longitude)
        for j, (g, env, lat_c, lon_c) in zip(idx, shapes):
            a = ev["amplitude"] * env
            if ev["kind"] == "heatwave":
                fields["t2m"][j] += a * g
                fields["t850"][j] += 0.7 * a * g
                fields["t500"][j] += 0.4 * a * g
                fields["z500"][j] += 120.0 * a * g  # blocking ridge aloft, m2/s2 per K
                fields["z850"][j] += 50.0 * a * g
            else:
                fields["z500"][j] -= 0.8 * a * g
                fields["z850"][j] -= 1.0 * a * g
                # Geostrophic vortex of the surface low phi_s = -a g on the local tangent plane.
                f = 2 * OMEGA * np.sin(np.deg2rad(lat_c))
                dlon = np.deg2rad((longitude[None, :] - lon_c + 180.0) % 360.0 - 180.0)
                x = EARTH_RADIUS * np.cos(lat_r) * dlon
                y = EARTH_RADIUS * (lat_r - np.deg2rad(lat_c))
                r2 = ev["radius_m"] ** 2
                fields["u10"][j] += -0.7 * a * y / r2 * g / f
                fields["v10"][j] += 0.7 * a * x / r2 * g / f


def event_table(ds: xr.Dataset) -> pd.DataFrame:
    """The injected extremes of a synthetic dataset (one row per event)."""
    events = json.loads(ds.attrs.get("events", "[]"))
    df = pd.DataFrame(
        events,
        columns=[
            "kind",
            "start",
            "duration_h",
            "lat0",
            "lon0",
            "dlon_per_day",
            "dlat_per_day",
            "amplitude",
            "radius_m",
        ],
    )
    if len(df):
        df["start"] = pd.to_datetime(df["start"])
    return df


def event_footprint(ds: xr.Dataset, kind: str | None = None, level: float = 0.5) -> xr.DataArray:
    """Boolean (time, latitude, longitude): cells where an injected event's anomaly is at least
    ``level`` times its peak amplitude (the known ground truth of the extremes)."""
    times = pd.DatetimeIndex(ds["time"].values)
    lat, lon = ds["latitude"].values, ds["longitude"].values
    out = np.zeros((times.size, lat.size, lon.size), dtype=bool)
    for ev in json.loads(ds.attrs.get("events", "[]")):
        if kind is not None and ev["kind"] != kind:
            continue
        idx, shapes = _event_shape(ev, times, lat, lon)
        for j, (g, env, _, _) in zip(idx, shapes):
            out[j] |= g * env >= level
    return xr.DataArray(
        out,
        dims=("time", "latitude", "longitude"),
        coords={"time": ds["time"], "latitude": lat, "longitude": lon},
    )


# ----------------------------------------------------------------------------- generator
_FIELDS = ("z500", "z850", "t500", "t850", "t2m", "u10", "v10")


def _jet_height(latitude: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zonal-index structure: u = sin^2(2 lat) (m/s per unit index) and its geostrophically
    balanced geopotential, d phi / d lat = -f a u, with zero area mean. Returns (u, phi)."""
    fine = np.linspace(-np.pi / 2, np.pi / 2, 4001)
    u = np.sin(2 * fine) ** 2
    dphi = -2 * OMEGA * np.sin(fine) * EARTH_RADIUS * u
    phi = np.concatenate([[0.0], np.cumsum((dphi[1:] + dphi[:-1]) / 2 * np.diff(fine))])
    phi -= np.sum(phi * np.cos(fine)) / np.sum(np.cos(fine))
    lat = np.deg2rad(latitude)
    return np.sin(2 * lat) ** 2, np.interp(lat, fine, phi)


def generate_sphere(
    start: str = "2000-01-01",
    end: str = "2003-12-31T18",
    seed: int = 0,
    n_lat: int = 32,
    n_lon: int = 64,
    n_max: int = 21,
    extremes: bool = True,
    heatwaves_per_year: float = 8.0,
    cyclones_per_year: float = 16.0,
    superrotation: float = 20.0,
    lamb: float = 20.0,
    jet_index_wind: float = 1.5,
    decorrelation_days: float = 25.0,
    spectral_peak: float = 8.0,
    z500_rms: float = 800.0,
    t850_rms: float = 3.5,
    u10_rms: float = 2.8,
    progress: bool = True,
) -> xr.Dataset:
    """Generate the synthetic sphere every 6 h from ``start`` to ``end`` (inclusive).

    Args:
        superrotation: mean steering wind (m/s) at 45 deg of the solid-body superrotation.
        lamb: Lamb parameter a^2 / L_R^2 of the equivalent-barotropic dispersion relation
            (slows the retrogression of the longest waves).
        jet_index_wind: standard deviation (m/s at 45 deg) of the zonal-jet index that also
            speeds up or slows down every wave (the state-dependent, nonlinear part).
        spectral_peak: total wavenumber where the streamfunction variance per degree peaks.
        decorrelation_days: decorrelation time of degree-6 waves (the stochastic forcing is
            weak, so predictability comes from the deterministic drift and is lost mainly
            through the unpredictable part of the jet index and the gridpoint noise).
        z500_rms, t850_rms, u10_rms: area-weighted RMS of the propagating wave anomalies.

    Returns a Dataset with ``geopotential`` and ``temperature`` on levels 500 and 850 hPa,
    ``2m_temperature``, ``10m_u_component_of_wind``, ``10m_v_component_of_wind`` (time,
    latitude, longitude) and the static ``land_sea_mask``.
    """
    times = pd.date_range(pd.Timestamp(start), pd.Timestamp(end), freq=f"{STEP_HOURS}h")
    if times.size < 1:
        raise ValueError(f"synthetic sphere: empty period {start!r} .. {end!r}")
    if pd.Timestamp(start).hour % STEP_HOURS or pd.Timestamp(start).minute:
        raise ValueError(
            f"synthetic sphere: start {start!r} must fall on a {STEP_HOURS}-hourly step"
        )
    lat, lon = regular_latitudes(n_lat), regular_longitudes(n_lon)
    land = land_sea_mask(lat, lon)
    hw = n_lat * n_lon
    basis = _Basis(n_max, lat, lon)
    ns, ms = basis.ns, basis.ms
    k = ns.size
    weights = _area_weights(lat, n_lon)
    lat_r = np.deg2rad(np.repeat(lat, n_lon))
    f = 2 * OMEGA * np.sin(lat_r)

    # Stationary mode variances; psi is scaled so that z500 = f psi has the target RMS.
    var_psi = _ou_variances(ns, ms, peak=spectral_peak)
    var_psi *= (z500_rms / _field_rms(var_psi, ms, basis.value * f[None, :], weights)) ** 2
    var_chi = _ou_variances(ns, ms, peak=4.0)
    rho_psi = np.exp(-_DT / (_decorrelation_days(ns, decorrelation_days) * 86400.0))
    rho_chi = np.exp(-_DT / (_decorrelation_days(ns, decorrelation_days) * 86400.0))
    rho_jet = np.exp(-_DT / (10.0 * 86400.0))
    omega0 = superrotation / (EARTH_RADIUS * np.cos(np.pi / 4))
    jet_u, jet_phi = _jet_height(lat)
    jet_u = np.repeat(jet_u, n_lon) * jet_index_wind
    jet_phi = np.repeat(jet_phi, n_lon) * jet_index_wind

    # Linear maps from (Re w, Im w) to anomaly fields.
    m_z = basis.value * f[None, :]
    m_u = -basis.dlat / EARTH_RADIUS
    m_v = basis.dlon / (EARTH_RADIUS * np.cos(lat_r)[None, :])
    beta = (
        np.pi / 3
    )  # temperature leads geopotential by beta in phase (warm advection ahead of troughs)
    a_re, a_im = basis.value[:k], basis.value[k:]
    m_t = np.concatenate(
        [np.cos(beta) * a_re + np.sin(beta) * a_im, -np.sin(beta) * a_re + np.cos(beta) * a_im]
    )
    m_t = m_t * (0.25 + 0.75 * np.sin(lat_r) ** 2)[None, :]
    m_t[np.r_[np.flatnonzero(ms == 0), k + np.flatnonzero(ms == 0)]] = 0.0  # no zonal-mean part
    m_chi = basis.value * (0.3 + 0.7 * np.sin(lat_r) ** 2)[None, :]
    m_t *= 0.7 * t850_rms / _field_rms(var_psi, ms, m_t, weights)
    m_chi *= np.sqrt(1 - 0.7**2) * t850_rms / _field_rms(var_chi, ms, m_chi, weights)
    # 10 m wind: the rotational wind reduced and turned 20 degrees toward low pressure.
    alpha = np.deg2rad(20.0) * np.sign(lat_r)
    u_rms = np.hypot(_field_rms(var_psi, ms, m_u, weights), _field_rms(var_psi, ms, m_v, weights))
    k10 = u10_rms * np.sqrt(2) / u_rms
    m_u10 = k10 * (np.cos(alpha) * m_u - np.sin(alpha) * m_v)
    m_v10 = k10 * (np.sin(alpha) * m_u + np.cos(alpha) * m_v)
    psi_maps = np.stack([m_z, m_t, m_u10, m_v10]).astype(np.float32)
    m_chi32 = m_chi.astype(np.float32)

    out = {c: np.empty((times.size, n_lat, n_lon), dtype=np.float32) for c in _FIELDS}
    sd_psi, sd_chi = np.sqrt(var_psi), np.sqrt(var_chi)
    noise_sd = np.stack([0.6 + 1.2 * land.ravel(), np.full(hw, 1.5), np.full(hw, 1.5)])
    noise_rho = np.exp(-_DT / (np.array([1.5, 0.5, 0.5]) * 86400.0))[:, None]
    years = sorted(set(times.year))
    events: list[dict[str, Any]] = []
    w_psi = w_chi = None
    jet = 0.0
    noise_state = None

    iterator: Any = years
    if progress and len(years) > 1:
        from tqdm.auto import tqdm

        iterator = tqdm(years, desc="synthetic sphere (years)", unit="yr", leave=False)
    for year in iterator:
        sel = np.flatnonzero(times.year == year)
        nt = sel.size
        # Independent streams per component, each drawn for the whole calendar year and sliced:
        # a year's values depend only on (seed, start), never on where the period ends.
        year_start = pd.Timestamp(f"{year}-01-01")
        steps_in_year = int(
            (pd.Timestamp(f"{year + 1}-01-01") - year_start) / pd.Timedelta(hours=STEP_HOURS)
        )
        pos = ((times[sel] - year_start) / pd.Timedelta(hours=STEP_HOURS)).to_numpy().astype(int)
        streams = [np.random.default_rng([int(seed), int(year), i]) for i in range(5)]
        if w_psi is None:  # start from the stationary law
            w_psi = _complex_normal(streams[0], sd_psi, ms)
            w_chi = _complex_normal(streams[0], sd_chi, ms)
            jet = float(streams[0].standard_normal())
        eps_psi = _complex_normal(streams[1], sd_psi, ms, size=steps_in_year)[pos]
        eps_chi = _complex_normal(streams[2], sd_chi, ms, size=steps_in_year)[pos]
        eps_jet = streams[3].standard_normal(steps_in_year)[pos]
        coef_psi = np.empty((nt, 2 * k))
        coef_chi = np.empty((nt, 2 * k))
        jets = np.empty(nt)
        g_psi, g_chi, g_jet = (
            np.sqrt(1 - rho_psi**2),
            np.sqrt(1 - rho_chi**2),
            np.sqrt(1 - rho_jet**2),
        )
        for j in range(nt):
            coef_psi[j, :k], coef_psi[j, k:] = w_psi.real, w_psi.imag
            coef_chi[j, :k], coef_chi[j, k:] = w_chi.real, w_chi.imag
            jets[j] = jet
            # Waves drift at the Rossby-Haurwitz speed on the current superrotation.
            omega = omega0 + jet * jet_index_wind / (EARTH_RADIUS * np.cos(np.pi / 4))
            nu = omega - 2 * (OMEGA + omega) / (ns * (ns + 1.0) + lamb)
            rot = np.exp(-1j * ms * nu * _DT)
            w_psi = rho_psi * rot * w_psi + g_psi * eps_psi[j]
            w_chi = rho_chi * rot * w_chi + g_chi * eps_chi[j]
            jet = rho_jet * jet + g_jet * eps_jet[j]
        c32 = coef_psi.astype(np.float32)
        z, t_bc, u10, v10 = (c32 @ m for m in psi_maps)
        t850 = t_bc + coef_chi.astype(np.float32) @ m_chi32
        jz = (jets[:, None] * jet_phi[None, :]).astype(np.float32)
        ju = (jets[:, None] * jet_u[None, :]).astype(np.float32)
        # Red gridpoint noise (AR(1)), lightly smoothed in longitude: t2m, u10, v10.
        raw = streams[4].standard_normal((steps_in_year, 3, n_lat, n_lon), dtype=np.float32)[pos]
        raw = (0.5 * raw + 0.25 * (np.roll(raw, 1, -1) + np.roll(raw, -1, -1))) / np.float32(
            np.sqrt(0.375)
        )
        raw = raw.reshape(nt, 3, hw)
        noise = np.empty_like(raw)
        state = raw[0] * noise_sd if noise_state is None else noise_state
        for j in range(nt):
            if j or noise_state is not None:
                state = noise_rho * state + np.sqrt(1 - noise_rho**2) * noise_sd * raw[j]
            noise[j] = state
        noise_state = state
        clim = climatology_fields(times[sel], lat, lon, land)
        anom = {
            "z500": z + jz,
            "z850": 0.55 * z + 0.6 * jz,
            "t500": 0.75 * t850,
            "t850": t850,
            "t2m": 0.6 * t850 + noise[:, 0],
            "u10": u10 + 0.5 * ju + noise[:, 1],
            "v10": v10 + noise[:, 2],
        }
        shape = (nt, n_lat, n_lon)
        for c in _FIELDS:
            out[c][sel] = clim[c] + anom[c].reshape(shape)
        if extremes:  # sampled for the whole calendar year; kept if they touch the period
            year_events = _sample_events(
                np.random.default_rng([int(seed), int(year), 23]),
                year_start,
                pd.Timestamp(f"{year}-12-31T18"),
                lat,
                lon,
                land,
                heatwaves_per_year,
                cyclones_per_year,
            )
            for ev in year_events:
                s0 = pd.Timestamp(ev["start"])
                if s0 <= times[-1] and s0 + pd.Timedelta(hours=ev["duration_h"]) >= times[0]:
                    events.append(ev)
    if extremes:
        _inject_events(out, events, times, lat, lon)

    dims3 = ("time", "latitude", "longitude")
    dims4 = ("time", "level", "latitude", "longitude")
    ds = xr.Dataset(
        {
            "geopotential": (dims4, np.stack([out["z500"], out["z850"]], axis=1)),
            "temperature": (dims4, np.stack([out["t500"], out["t850"]], axis=1)),
            "2m_temperature": (dims3, out["t2m"]),
            "10m_u_component_of_wind": (dims3, out["u10"]),
            "10m_v_component_of_wind": (dims3, out["v10"]),
            "land_sea_mask": (("latitude", "longitude"), land.astype(np.float32)),
        },
        coords={
            "time": times.values,
            "level": np.array([500, 850]),
            "latitude": lat,
            "longitude": lon,
        },
        attrs={
            "source": "icml26 synthetic sphere",
            "seed": int(seed),
            "events": json.dumps(events),
        },
    )
    units = {
        "geopotential": "m**2 s**-2",
        "temperature": "K",
        "2m_temperature": "K",
        "10m_u_component_of_wind": "m s**-1",
        "10m_v_component_of_wind": "m s**-1",
        "land_sea_mask": "1",
    }
    for v, u in units.items():
        ds[v].attrs["units"] = u
    ds["level"].attrs["units"] = "hPa"
    return ds


def _complex_normal(
    rng: np.random.Generator, sd: np.ndarray, ms: np.ndarray, size: int | None = None
) -> np.ndarray:
    """Complex normal with E|w|^2 = sd^2 (real for m = 0 modes)."""
    shape = sd.shape if size is None else (size, *sd.shape)
    re = rng.standard_normal(shape)
    im = rng.standard_normal(shape)
    half = np.where(ms == 0, 1.0, np.sqrt(0.5))
    return sd * half * (re + 1j * np.where(ms == 0, 0.0, im))
