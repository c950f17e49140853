"""Data sources: the synthetic sphere, Lorenz-96, the two-layer QG model and the ERA5 loader."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from icml26.envs.weather.era5 import conservative_weights, open_era5
from icml26.envs.weather.grid import latitude_bounds, regular_latitudes
from icml26.envs.weather.lorenz96 import generate_lorenz96, lorenz96_tendency, rk4_step
from icml26.envs.weather.qg import TwoLayerQG
from icml26.envs.weather.synthetic import (
    OMEGA,
    _inject_events,
    event_footprint,
    generate_sphere,
)


@pytest.fixture(scope="module")
def sphere() -> xr.Dataset:
    return generate_sphere("2000-01-01", "2000-02-15T18", seed=3, progress=False)


def test_sphere_layout_is_weatherbench2(sphere: xr.Dataset) -> None:
    assert set(sphere.data_vars) == {
        "geopotential",
        "temperature",
        "2m_temperature",
        "10m_u_component_of_wind",
        "10m_v_component_of_wind",
        "land_sea_mask",
    }
    assert sphere["geopotential"].dims == ("time", "level", "latitude", "longitude")
    assert sphere.sizes["latitude"] == 32 and sphere.sizes["longitude"] == 64
    np.testing.assert_allclose(sphere["latitude"].values, regular_latitudes(32))
    assert sphere["latitude"].values[0] == pytest.approx(-87.1875)
    assert list(sphere["level"].values) == [500, 850]
    assert np.all(np.diff(sphere["time"].values) == np.timedelta64(6, "h"))
    z500 = sphere["geopotential"].sel(level=500).values
    assert 4.3e4 < z500.min() and z500.max() < 6.1e4  # m2/s2: 4400-6200 m heights
    t2m = sphere["2m_temperature"].values
    assert 200 < t2m.min() and t2m.max() < 330
    assert np.isfinite(sphere["10m_u_component_of_wind"].values).all()


def test_sphere_is_seeded_and_prefix_stable(sphere: xr.Dataset) -> None:
    again = generate_sphere("2000-01-01", "2000-01-10", seed=3, progress=False)
    other = generate_sphere("2000-01-01", "2000-01-10", seed=4, progress=False)
    part = sphere.sel(time=again["time"])
    for v in ("geopotential", "2m_temperature"):
        np.testing.assert_array_equal(again[v].values, part[v].values)
        assert not np.allclose(other[v].values, part[v].values)


def test_sphere_has_seasons_diurnal_cycle_and_propagation(sphere: xr.Dataset) -> None:
    t2m = sphere["2m_temperature"]
    # January: the northern extratropics are colder than the southern ones.
    nh = float(t2m.sel(latitude=slice(30, 60)).mean())
    sh = float(t2m.sel(latitude=slice(-60, -30)).mean())
    assert sh - nh > 10
    # Diurnal cycle over land: 2 m temperature at local afternoon beats local early morning.
    land = sphere["land_sea_mask"].values > 0.8
    hour = sphere["time"].dt.hour.values
    lon = sphere["longitude"].values
    local = (hour[:, None] + lon[None, :] / 15) % 24
    vals = t2m.values
    afternoon = [
        vals[i][:, (local[i] >= 12) & (local[i] <= 18)][
            land[:, (local[i] >= 12) & (local[i] <= 18)]
        ].mean()
        for i in range(40)
    ]
    night = [vals[i][:, (local[i] <= 6)][land[:, (local[i] <= 6)]].mean() for i in range(40)]
    assert np.nanmean(afternoon) > np.nanmean(night)
    # Anomalies are red in time: 6-hour lag correlation of z500 exceeds the 3-day one.
    z = sphere["geopotential"].sel(level=500).values
    a = z - z.mean(axis=0)
    lag = lambda k: np.corrcoef(a[k:].ravel(), a[:-k].ravel())[0, 1]  # noqa: E731
    assert lag(1) > 0.9 and lag(1) > lag(12)


def test_injected_heatwave_and_cyclone_are_known_exactly() -> None:
    lat, lon = regular_latitudes(32), np.arange(64) * 5.625
    times = pd.date_range("2001-07-01", periods=9, freq="6h")
    zeros = {
        c: np.zeros((9, 32, 64), dtype=np.float64)
        for c in ("z500", "z850", "t500", "t850", "t2m", "u10", "v10")
    }
    lat_c = float(lat[22])  # 36.5625 N
    heat = {
        "kind": "heatwave",
        "start": "2001-07-01T00",
        "duration_h": 48,
        "lat0": lat_c,
        "lon0": 45.0,
        "dlon_per_day": 0.0,
        "dlat_per_day": 0.0,
        "amplitude": 10.0,
        "radius_m": 8e5,
    }
    _inject_events(zeros, [heat], times, lat, lon)
    # Peak at mid-event (24 h): the full amplitude at the centre; envelope sin^2(pi t / D).
    assert zeros["t2m"][4].max() == pytest.approx(10.0)
    assert zeros["t2m"][4][22, 8] == pytest.approx(10.0)
    assert zeros["t2m"][2][22, 8] == pytest.approx(10.0 * math.sin(math.pi / 4) ** 2)
    assert zeros["t850"][4][22, 8] == pytest.approx(7.0)
    ds = xr.Dataset(
        coords={"time": times, "latitude": lat, "longitude": lon},
        attrs={"events": json.dumps([heat])},
    )
    fp = event_footprint(ds, "heatwave", level=0.6)
    np.testing.assert_array_equal(fp.values, zeros["t2m"] >= 6.0)
    assert fp.values.sum() > 0

    winds = {c: np.zeros((9, 32, 64)) for c in zeros}
    for sign, la in ((1, lat_c), (-1, -lat_c)):
        cyc = {
            "kind": "cyclone",
            "start": "2001-07-01T00",
            "duration_h": 48,
            "lat0": la,
            "lon0": 180.0,
            "dlon_per_day": 0.0,
            "dlat_per_day": 0.0,
            "amplitude": 2000.0,
            "radius_m": 7e5,
        }
        w = {c: np.zeros((9, 32, 64)) for c in zeros}
        _inject_events(w, [cyc], times, lat, lon)
        i = int(np.flatnonzero(np.isclose(lat, la))[0])
        j = 32  # lon 180
        # Cyclonic: counter-clockwise in the north, clockwise in the south; either way the
        # flow is westward on the poleward side and poleward on the eastern side.
        assert sign * w["v10"][4][i, j + 2] > 0 and sign * w["v10"][4][i, j - 2] < 0
        assert w["u10"][4][i + 2 * sign, j] < 0 and w["u10"][4][i - 2 * sign, j] > 0
        assert w["z500"][4][i, j] == pytest.approx(-0.8 * 2000.0)
        # Geostrophic vortex speed 0.7 A r / (f R^2) exp(-r^2 / 2R^2) <= its maximum at r = R.
        f = 2 * OMEGA * math.sin(math.radians(abs(la)))
        vmax = 0.7 * 2000.0 / (f * 7e5) * math.exp(-0.5)
        speed = np.hypot(w["u10"][4], w["v10"][4])
        assert 0.6 * vmax < speed.max() <= vmax * 1.001
        winds = w
    assert winds["t2m"].max() == 0.0  # cyclones leave 2 m temperature alone


def test_lorenz96_tendency_and_statistics() -> None:
    # Hand-worked: x = (1, 2, 3, 4), F = 8: dx_k = (x_{k+1} - x_{k-2}) x_{k-1} - x_k + F.
    np.testing.assert_allclose(
        lorenz96_tendency(np.array([1.0, 2.0, 3.0, 4.0]), 8.0), [3.0, 5.0, 11.0, 1.0]
    )
    ds = generate_lorenz96("2000-01-01", "2001-12-31T18", seed=0)
    x = ds["lorenz96_x"].values
    assert ds["lorenz96_x"].dims == ("time", "latitude", "longitude") and x.shape[2] == 40
    # Climate of K = 40, F = 8: mean ~2.34, standard deviation ~3.6 (Lorenz 1996; Lorenz & Emanuel 1998).
    assert x.mean() == pytest.approx(2.34, abs=0.1)
    assert x.std() == pytest.approx(3.63, abs=0.1)


def test_open_source_progress_flag_reaches_only_generators_that_take_it(
    tmp_path, monkeypatch
) -> None:
    # progress=False is accepted for every source (the ladder's validation-data process passes
    # it to all); Lorenz-96 has no progress bar, so it must not be forwarded to its generator.
    from icml26.envs.weather.sources import clear_memory_cache, open_source

    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    clear_memory_cache()
    kw = {"seed": 1, "k": 8, "spinup_steps": 10}
    ds = open_source("lorenz96", "2000-01-01", "2000-01-02", progress=False, **kw)
    ref = generate_lorenz96("2000-01-01", "2000-01-02", **kw)
    np.testing.assert_array_equal(ds["lorenz96_x"].values, ref["lorenz96_x"].values)
    clear_memory_cache()


def test_lorenz96_error_growth_matches_its_lyapunov_exponent() -> None:
    # Leading Lyapunov exponent of K = 40, F = 8 is about 1.7 per model time unit
    # (doubling time ~0.4 units ~ 2 days; Lorenz 1996, Karimi & Paul 2010).
    x = (
        generate_lorenz96("2000-01-01", "2000-01-01", seed=1)["lorenz96_x"]
        .values[0, 0]
        .astype(np.float64)
    )
    rng = np.random.default_rng(0)
    dt, n = 0.01, 400
    logs = []
    for _ in range(8):
        a, b = x.copy(), x + 1e-9 * rng.standard_normal(40)
        err = []
        for _ in range(n):
            a, b = rk4_step(a, 8.0, dt), rk4_step(b, 8.0, dt)
            err.append(np.linalg.norm(a - b))
        logs.append(np.log(err))
        x = a
    t = dt * np.arange(1, n + 1)
    slope = np.polyfit(t[100:], np.mean(logs, axis=0)[100:], 1)[0]
    assert 1.3 < slope < 2.2


def test_qg_inversion_round_trip() -> None:
    m = TwoLayerQG(nx=16, ny=16)
    rng = np.random.default_rng(0)
    ph = np.fft.rfft2(rng.standard_normal((2, 16, 16)))
    ph[:, 0, 0] = 0.0
    np.testing.assert_allclose(m.invert(m.pv_from_streamfunction(ph)), ph, rtol=1e-9, atol=1e-9)


def test_qg_baroclinic_growth_rate_matches_phillips() -> None:
    # Phillips model, beta = 0, equal layers, U1 = -U2 = U: c = +-U sqrt((K^2 - 2F) / (K^2 + 2F)),
    # so a wave with K^2 < 2F = 1 / rd^2 grows at k U sqrt((2F - K^2) / (2F + K^2)).
    u, rd, length = 10.0, 5e5, 4e6
    m = TwoLayerQG(
        nx=16,
        ny=16,
        lx=length,
        ly=length,
        rd=rd,
        delta=1.0,
        beta=0.0,
        u1=u,
        u2=-u,
        rek=0.0,
        dt=1800.0,
    )
    k = 2 * math.pi / length
    two_f = 1 / rd**2
    sigma = k * u * math.sqrt((two_f - k**2) / (two_f + k**2))
    ph = np.zeros((2, 16, 9), dtype=complex)
    ph[0, 0, 1], ph[1, 0, 1] = 1.0, 0.3j
    m.qh = m.pv_from_streamfunction(ph)
    amps = []
    for _ in range(480):  # 10 days
        m.step(nonlinear=False, filtered=False)
        amps.append(abs(m.invert(m.qh)[0, 0, 1]))
    t = 1800.0 * np.arange(1, 481)
    measured = np.polyfit(t[240:], np.log(amps[240:]), 1)[0]
    assert measured == pytest.approx(sigma, rel=0.01)


def _era5_like(lat: np.ndarray, lon: np.ndarray, hours: int = 24) -> xr.Dataset:
    """A CDS-style file: short names, valid_time, pressure_level, descending latitude."""
    t = pd.date_range("2001-01-01", periods=hours, freq="1h")
    la, lo = np.meshgrid(lat, lon, indexing="ij")
    base = np.cos(np.deg2rad(la)) * 1000 + np.sin(np.deg2rad(lo)) * 100
    z = np.stack([[50000 + base + k * 10 + lev for lev in (500, 850)] for k in range(hours)])
    t2m = np.stack([280 + 0.01 * base + k for k in range(hours)])
    return xr.Dataset(
        {
            "z": (("valid_time", "pressure_level", "latitude", "longitude"), z),
            "t": (("valid_time", "pressure_level", "latitude", "longitude"), z / 200.0),
            "t2m": (("valid_time", "latitude", "longitude"), t2m),
            "u10": (("valid_time", "latitude", "longitude"), t2m - 280),
            "v10": (("valid_time", "latitude", "longitude"), -(t2m - 280)),
        },
        coords={
            "valid_time": t,
            "pressure_level": [500.0, 850.0],
            "latitude": lat,
            "longitude": lon,
        },
    )


def test_era5_netcdf_loader_on_a_tiny_file(tmp_path) -> None:
    src_lat = np.arange(64)[::-1] * 2.8125 - 88.59375  # 2.8125 deg, no poles, descending
    src_lon = np.arange(128) * 2.8125 - 180.0  # -180 .. 177.1875
    raw = _era5_like(src_lat, src_lon)
    path = tmp_path / "era5.nc"
    raw.to_netcdf(path, engine="netcdf4")
    ds = open_era5(path, channels=("z500", "t850", "t2m", "u10", "v10"), progress=False)
    assert set(ds.data_vars) == {
        "geopotential",
        "temperature",
        "2m_temperature",
        "10m_u_component_of_wind",
        "10m_v_component_of_wind",
    }
    assert list(ds["time"].dt.hour.values) == [0, 6, 12, 18]
    assert ds.sizes["latitude"] == 32 and np.all(np.diff(ds["latitude"].values) > 0)
    assert ds["longitude"].values[0] == 0.0 and ds.sizes["longitude"] == 64
    # Hand-worked conservative average for target cell (lat -87.1875, lon 0): two source latitude
    # bands (-88.59, -85.78) weighted by area sin differences, and longitude cells at -2.8125, 0,
    # 2.8125 overlapping a quarter, a half and a quarter of the target cell.
    src = (
        raw.sortby("latitude").assign_coords(longitude=(raw["longitude"] % 360)).sortby("longitude")
    )
    v = src["t2m"].isel(valid_time=6).values
    la_s = src["latitude"].values
    e = np.deg2rad([-90.0, -87.1875, -84.375])
    wl = np.array([np.sin(e[1]) - np.sin(e[0]), np.sin(e[2]) - np.sin(e[1])])
    wl /= wl.sum()
    lon_s = src["longitude"].values
    cols = [int(np.flatnonzero(np.isclose(lon_s, x))[0]) for x in (357.1875, 0.0, 2.8125)]
    wo = np.array([0.25, 0.5, 0.25])
    rows = [int(np.flatnonzero(np.isclose(la_s, x))[0]) for x in (-88.59375, -85.78125)]
    expected = sum(wl[a] * wo[b] * v[rows[a], cols[b]] for a in range(2) for b in range(3))
    assert float(ds["2m_temperature"].isel(time=1, latitude=0, longitude=0)) == pytest.approx(
        expected, rel=1e-6
    )


def test_conservative_regridding_conserves_area_means(tmp_path) -> None:
    lat = np.linspace(90, -90, 65)  # with poles, as ERA5 grids have
    lon = np.arange(128) * 2.8125
    raw = _era5_like(lat, lon, hours=6)
    rng = np.random.default_rng(0)
    raw["t2m"].values[:] = rng.normal(size=raw["t2m"].shape)
    path = tmp_path / "era5_poles.nc"
    raw.to_netcdf(path)
    ds = open_era5(path, channels=("t2m",), progress=False)
    src_lat = np.sort(lat)
    w_src = np.diff(np.sin(np.deg2rad(latitude_bounds(src_lat))))
    w_dst = np.diff(np.sin(np.deg2rad(latitude_bounds(ds["latitude"].values))))
    src = raw["t2m"].isel(valid_time=0).values[::-1]
    mean_src = (src * w_src[:, None]).sum() / (w_src.sum() * lon.size)
    dst = ds["2m_temperature"].isel(time=0).values.astype(np.float64)
    mean_dst = (dst * w_dst[:, None]).sum() / (w_dst.sum() * 64)
    assert mean_dst == pytest.approx(mean_src, abs=1e-6)
    const = conservative_weights(
        latitude_bounds(src_lat),
        latitude_bounds(regular_latitudes(32)),
        transform=lambda x: np.sin(np.deg2rad(x)),
    )
    np.testing.assert_allclose(const.sum(axis=1), 1.0)


def test_era5_zarr_store_and_errors(tmp_path) -> None:
    src_lat = np.arange(64) * 2.8125 - 88.59375
    src_lon = np.arange(128) * 2.8125
    wb2 = _era5_like(src_lat, src_lon, hours=12).rename(
        {
            "valid_time": "time",
            "pressure_level": "level",
            "z": "geopotential",
            "t": "temperature",
            "t2m": "2m_temperature",
            "u10": "10m_u_component_of_wind",
            "v10": "10m_v_component_of_wind",
        }
    )
    wb2 = wb2.assign_coords(level=[50000.0, 85000.0])  # in Pa: converted to hPa
    store = tmp_path / "wb2.zarr"
    wb2.to_zarr(store, zarr_format=2, consolidated=True)
    ds = open_era5(store, channels=("z500", "t850"), progress=False)
    assert list(ds["level"].values) == [500, 850] and ds.sizes["time"] == 2
    z_in = wb2["geopotential"].sel(level=50000.0).isel(time=0).values
    assert float(ds["geopotential"].sel(level=500).isel(time=0).mean()) == pytest.approx(
        float(z_in.mean()), rel=1e-3
    )
    with pytest.raises(KeyError, match="specific_humidity"):
        open_era5(store, channels=("q700",), progress=False)
    with pytest.raises(KeyError, match="level 700"):
        open_era5(store, channels=("z700",), progress=False)
    with pytest.raises(FileNotFoundError):
        open_era5(tmp_path / "missing.nc")
