"""Verification metrics against hand-worked arrays, literature tables and a plain-xarray reference."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from icml26.envs.weather import xarray_reference as ref
from icml26.envs.weather.climatology import Climatology
from icml26.envs.weather.forecast_io import forecast_dataset
from icml26.envs.weather.metrics import (
    EventThresholds,
    ForecastScorer,
    acc,
    csi,
    ets,
    frequency_bias,
    headline_table,
    hss,
    latitude_weights,
    latitude_weights_array,
    rmse,
    score,
    sedi,
    tqe_levels,
)


def test_latitude_weights_are_cell_areas() -> None:
    # Edges at -90, -30, 30, 90: areas 0.5, 1, 0.5 (in sin units) -> mean-1 weights 0.75, 1.5, 0.75.
    np.testing.assert_allclose(
        latitude_weights_array([-60.0, 0.0, 60.0]), [0.75, 1.5, 0.75], rtol=1e-12
    )
    lat = -90 + (np.arange(32) + 0.5) * 180 / 32  # WeatherBench 5.625 deg grid
    w = latitude_weights(lat)
    edges = np.deg2rad(np.r_[-90.0, (lat[1:] + lat[:-1]) / 2, 90.0])
    area = 2 * np.pi * 6.371e6**2 * np.diff(np.sin(edges))  # exact band areas on the sphere
    np.testing.assert_allclose(w.values, area / area.mean(), rtol=1e-12)
    assert w.values.mean() == pytest.approx(1.0)
    # On an equiangular grid without poles, sin(lat + d/2) - sin(lat - d/2) = 2 sin(d/2) cos(lat):
    # identical to the WeatherBench 1 cos(lat) weights.
    np.testing.assert_allclose(
        w.values, np.cos(np.deg2rad(lat)) / np.cos(np.deg2rad(lat)).mean(), rtol=1e-12
    )
    # With grid points on the poles (ERA5 style) they differ: the polar caps get area, cos(90) = 0.
    # Edges -90, -67.5, -22.5, 22.5, 67.5, 90: areas 1 - sin 67.5, sin 67.5 - sin 22.5, 2 sin 22.5.
    a_pole, a_mid, a_eq = (
        1 - math.sin(math.radians(67.5)),
        math.sin(math.radians(67.5)) - math.sin(math.radians(22.5)),
        2 * math.sin(math.radians(22.5)),
    )
    np.testing.assert_allclose(
        latitude_weights_array([-90.0, -45.0, 0.0, 45.0, 90.0]),
        np.array([a_pole, a_mid, a_eq, a_mid, a_pole]) / 0.4,
        rtol=1e-12,
    )


def _tiny_forecast(values: np.ndarray, init: str = "2001-01-01") -> xr.Dataset:
    """(init, lead, 1 channel, 3 lat, 2 lon) -> WB2 forecast of z500 on lat -60, 0, 60."""
    inits = pd.date_range(init, periods=values.shape[0], freq="12h")
    return forecast_dataset(values[:, :, None], inits, ["z500"], [-60.0, 0.0, 60.0], [0.0, 180.0])


def test_rmse_and_bias_hand_computed() -> None:
    truth = np.zeros((2, 1, 3, 2))
    fc = np.array([[[[1.0, 1.0], [2.0, 0.0], [0.0, 0.0]]], [[[0.0, 0.0], [0.0, 0.0], [3.0, -3.0]]]])
    w = np.array([0.75, 1.5, 0.75])
    # MSE per init: mean over 6 cells of w * e^2.
    mse1 = (0.75 * (1 + 1) + 1.5 * (4 + 0)) / 6  # 1.25
    mse2 = (0.75 * (9 + 9)) / 6  # 2.25
    f, t = _tiny_forecast(fc), _tiny_forecast(truth)
    assert float(rmse(f, t).squeeze()) == pytest.approx(math.sqrt((mse1 + mse2) / 2))
    assert float(rmse(f, t, per_init=True).squeeze()) == pytest.approx(
        (math.sqrt(mse1) + math.sqrt(mse2)) / 2
    )
    b1 = (0.75 * 2 + 1.5 * 2) / 6
    b2 = 0.0
    assert float(score(f, t, tqe=False)["bias"].squeeze()) == pytest.approx((b1 + b2) / 2)
    assert np.allclose(w, latitude_weights_array([-60, 0, 60]))


def test_acc_hand_computed() -> None:
    # Climatology 10 everywhere; anomalies f' and o' chosen by hand.
    clim = Climatology(
        np.full((366, 2, 1, 3, 2), 10.0, dtype=np.float32), np.array([0, 12]), ("z500",)
    )
    fa = np.array([[1.0, -1.0], [2.0, 0.0], [0.0, 1.0]])
    oa = np.array([[1.0, 0.0], [1.0, 1.0], [-1.0, 1.0]])
    w = np.array([0.75, 1.5, 0.75])[:, None]
    expected = (w * fa * oa).sum() / math.sqrt((w * fa * fa).sum() * (w * oa * oa).sum())
    # Valid time 2001-01-01T12 (lead 12 h from 00): climatology hour 12 is used.
    f = forecast_dataset(
        (10 + fa)[None, None, None],
        ["2001-01-01T00"],
        ["z500"],
        [-60.0, 0.0, 60.0],
        [0.0, 180.0],
        lead_steps=[2],
    )
    t = forecast_dataset(
        (10 + oa)[None, None, None],
        ["2001-01-01T00"],
        ["z500"],
        [-60.0, 0.0, 60.0],
        [0.0, 180.0],
        lead_steps=[2],
    )
    assert float(acc(f, t, clim).squeeze()) == pytest.approx(expected, rel=1e-6)
    # A perfect forecast has ACC 1; the negated anomaly has ACC -1.
    assert float(acc(t, t, clim).squeeze()) == pytest.approx(1.0)
    neg = forecast_dataset(
        (10 - oa)[None, None, None],
        ["2001-01-01T00"],
        ["z500"],
        [-60.0, 0.0, 60.0],
        [0.0, 180.0],
        lead_steps=[2],
    )
    assert float(acc(neg, t, clim).squeeze()) == pytest.approx(-1.0)


def test_contingency_scores_on_finley_table() -> None:
    # Finley's 1884 tornado forecasts (Wilks, Statistical Methods in the Atmospheric Sciences,
    # ch. 8): TP 28, FP 72, FN 23, TN 2680; threat score 0.228, ETS (GSS) 0.216, HSS 0.355, bias 1.96.
    tp, fp, fn, tn = 28.0, 72.0, 23.0, 2680.0
    assert csi(tp, fp, fn) == pytest.approx(0.2276, abs=1e-4)
    assert ets(tp, fp, fn, tn) == pytest.approx(0.2160, abs=1e-4)
    assert hss(tp, fp, fn, tn) == pytest.approx(0.3553, abs=1e-4)
    assert frequency_bias(tp, fp, fn) == pytest.approx(1.9608, abs=1e-4)
    # SEDI by hand: H = 28/51, F = 72/2752; ln F = -3.64349, ln H = -0.59962, ln(1-H) = -0.79633,
    # ln(1-F) = -0.02651 -> (-3.81369) / (-5.06595) = 0.75281.
    assert sedi(tp, fp, fn, tn) == pytest.approx(0.75281, abs=1e-4)


def test_sedi_limits() -> None:
    # Random forecasts (H = F) score 0; perfect ones 1 (H, F clipped to 1e-6); inverted ones -1.
    assert sedi(10.0, 90.0, 90.0, 810.0) == pytest.approx(0.0, abs=1e-12)  # H = F = 0.1
    assert sedi(50.0, 0.0, 0.0, 950.0) == pytest.approx(1.0, abs=1e-6)
    assert sedi(0.0, 950.0, 50.0, 0.0) == pytest.approx(-1.0, abs=1e-6)
    # Symmetric in events and non-events: swapping TP<->TN and FP<->FN keeps SEDI.
    assert sedi(28.0, 72.0, 23.0, 2680.0) == pytest.approx(sedi(2680.0, 23.0, 72.0, 28.0))


def test_top_quantile_error_shift() -> None:
    rng = np.random.default_rng(0)
    truth = rng.normal(size=(3, 2, 3, 2))
    t = _tiny_forecast(truth)
    assert np.allclose(score(_tiny_forecast(truth + 2.5), t)["tqe"].values, 2.5)
    assert np.allclose(score(t, t)["tqe"].values, 0.0)
    q = tqe_levels()
    assert (
        q.size == 100 and q[0] == pytest.approx(1 - 1e-5) and q[-1] == pytest.approx(1 - 10**-0.1)
    )


def _random_case(seed: int = 0, n_init: int = 7, n_lead: int = 4):
    rng = np.random.default_rng(seed)
    lat, lon = -90 + (np.arange(8) + 0.5) * 22.5, np.arange(16) * 22.5
    times = pd.date_range("2001-01-01", periods=n_init * 2 + n_lead + 2, freq="6h")
    obs = rng.normal(size=(times.size, 2, 8, 16)).astype(np.float32)
    inits = times[: 2 * n_init : 2]
    fc = np.stack([obs[2 * i + 1 : 2 * i + 1 + n_lead] for i in range(n_init)])
    fc = (fc + rng.normal(scale=0.7, size=fc.shape) + 0.1).astype(np.float32)
    clim_vals = rng.normal(scale=0.3, size=(366, 4, 2, 8, 16)).astype(np.float32)
    return lat, lon, times, obs, inits, fc, clim_vals


def test_matches_plain_xarray_reference() -> None:
    lat, lon, times, obs, inits, fc, clim_vals = _random_case()
    chans = ["t2m", "u10"]
    fds = forecast_dataset(fc, inits, chans, lat, lon)
    obs_ds = xr.Dataset(
        {
            "2m_temperature": (("time", "latitude", "longitude"), obs[:, 0]),
            "10m_u_component_of_wind": (("time", "latitude", "longitude"), obs[:, 1]),
        },
        coords={"time": times, "latitude": lat, "longitude": lon},
    )
    clim = Climatology(clim_vals, np.array([0, 6, 12, 18]), tuple(chans))
    thr = EventThresholds(
        (0.8, 0.95), np.quantile(obs, [0.8, 0.95], axis=0).astype(np.float32), tuple(chans)
    )
    ours = score(fds, obs_ds, clim, thr, tqe=False)
    w = ref.cell_area_weights(fds["latitude"])
    cds = clim.to_dataset(lat, lon)
    for c, var in zip(chans, ["2m_temperature", "10m_u_component_of_wind"]):
        f = fds[var]
        o = ref.align_truth(f, obs_ds[var])
        cl = ref.climatology_at(cds[var], f)
        expect = {
            "rmse": ref.rmse(f, o, w),
            "rmse_per_init": ref.rmse_per_init(f, o, w),
            "bias": ref.bias(f, o, w),
            "acc": ref.acc(f, o, cl, w),
            "activity": ref.activity(f, cl, w),
        }
        for name, da in expect.items():
            np.testing.assert_allclose(
                ours[name].sel(channel=c).values,
                da.values,
                rtol=2e-5,
                atol=1e-6,
                err_msg=f"{name} {c}",
            )
        for k, q in enumerate(thr.quantiles):
            thr_da = xr.DataArray(thr.values[k, chans.index(c)], dims=("latitude", "longitude"))
            table = ref.contingency(f, o, thr_da, w)
            for name, da in {**table, **ref.scores_from_table(table)}.items():
                np.testing.assert_allclose(
                    ours[name].sel(channel=c, quantile=q).values,
                    da.values,
                    rtol=2e-5,
                    atol=1e-9,
                    err_msg=f"{name} {c} q{q}",
                )


def test_scorer_chunking_is_invariant() -> None:
    lat, lon, times, obs, inits, fc, clim_vals = _random_case(1)
    chans = ("t2m", "u10")
    clim = Climatology(clim_vals, np.array([0, 6, 12, 18]), chans)
    valid = np.asarray(inits.values)[:, None] + np.timedelta64(6, "h") * np.arange(1, 5)[None]
    truth = np.stack([obs[2 * i + 1 : 2 * i + 5] for i in range(len(inits))])
    whole = ForecastScorer(chans, lat, 4, clim)
    whole.update(fc, truth, valid)
    parts = ForecastScorer(chans, lat, 4, clim)
    for s in (slice(0, 3), slice(3, 4), slice(4, 7)):
        parts.update(fc[s], truth[s], valid[s])
    a, b = whole.result(), parts.result()
    for v in ("rmse", "rmse_per_init", "acc", "bias", "activity", "tqe"):
        np.testing.assert_allclose(a[v].values, b[v].values, rtol=1e-6, err_msg=v)


def test_scorer_rejects_bad_input() -> None:
    s = ForecastScorer(("z500",), [-60.0, 0.0, 60.0], 2)
    with pytest.raises(ValueError, match="must both be"):
        s.update(np.zeros((1, 3, 1, 3, 2)), np.zeros((1, 3, 1, 3, 2)))
    with pytest.raises(ValueError, match="finite"):
        s.update(np.full((1, 2, 1, 3, 2), np.nan), np.zeros((1, 2, 1, 3, 2)))
    with pytest.raises(ValueError, match="no forecasts"):
        s.result()


def test_headline_table_picks_leads() -> None:
    rng = np.random.default_rng(2)
    lat, lon = [-60.0, 0.0, 60.0], [0.0, 180.0]
    truth = rng.normal(size=(2, 40, 1, 3, 2))
    t = forecast_dataset(
        truth, pd.date_range("2001-01-01", periods=2, freq="12h"), ["z500"], lat, lon
    )
    fc = truth.copy()
    fc[:, 19] += 1.0  # error only at lead 20 (5 days)
    f = forecast_dataset(fc, t["time"].values, ["z500"], lat, lon)
    table = headline_table(score(f, t, tqe=False))
    assert list(table.index) == ["Z500"]
    assert table.loc["Z500", ("rmse", "5d")] == pytest.approx(1.0)
    assert table.loc["Z500", ("rmse", "3d")] == pytest.approx(0.0)


def test_sorted_quantiles_equal_numpy_linear_quantiles() -> None:
    from icml26.envs.weather.metrics import sorted_quantiles

    x = np.random.default_rng(3).normal(size=(2, 3, 257))
    q = np.concatenate([tqe_levels(), [0.0, 0.5, 1.0]])
    np.testing.assert_allclose(
        sorted_quantiles(x, q), np.quantile(x, q, axis=-1), rtol=0, atol=1e-12
    )
