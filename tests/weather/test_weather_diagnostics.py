"""The task's per-initialization scores and spectra agree with ForecastScorer and plain NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.benchmarks.tasks.weather import diagnostics
from icml26.envs.weather.climatology import Climatology
from icml26.envs.weather.metrics import ForecastScorer


def _case(seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    b, lead, c, nlat, nlon = 5, 8, 2, 4, 8
    truth = rng.standard_normal((b, lead, c, nlat, nlon)).astype(np.float32)
    fc = (truth + 0.5 * rng.standard_normal(truth.shape)).astype(np.float32)
    inits = np.datetime64("2001-01-01T00") + np.timedelta64(24, "h") * np.arange(b)
    valid = inits[:, None] + np.timedelta64(6, "h") * np.arange(1, lead + 1)[None]
    return fc, truth, valid


def test_per_init_scores_average_to_the_scorer() -> None:
    fc, truth, valid = _case()
    lat = np.array([-60.0, -20.0, 20.0, 60.0])
    clim = Climatology(
        np.zeros((366, 4, 2, 4, 8), np.float32), np.array([0, 6, 12, 18]), ("a", "b")
    )
    d = diagnostics(fc, truth, valid, clim, lat, ("a", "b"), days=(1, 2, 3))
    assert d["diag_days"] == [1, 2]  # 3 days are beyond the 8-step lead
    mse, acc = np.array(d["per_init"]["mse"]), np.array(d["per_init"]["acc"], dtype=float)
    assert mse.shape == acc.shape == (5, 2, 2)
    sc = ForecastScorer(("a", "b"), lat, 8, clim)
    sc.update(fc, truth, valid)
    res = sc.result()
    for k, step in enumerate((3, 7)):
        assert np.allclose(np.sqrt(mse[:, k].mean(0)), res["rmse"].values[:, step], rtol=1e-4)
        assert np.allclose(acc[:, k].mean(0), res["acc"].values[:, step], rtol=1e-4)


def test_climatology_acc_is_undefined_and_spectra_sum_to_the_variance() -> None:
    fc, truth, valid = _case(1)
    lat = np.array([-60.0, -20.0, 20.0, 60.0])
    clim = Climatology(
        np.zeros((366, 4, 2, 4, 8), np.float32), np.array([0, 6, 12, 18]), ("a", "b")
    )
    d = diagnostics(np.zeros_like(fc), truth, valid, clim, lat, ("a", "b"), days=(1,))
    assert all(v is None for row in d["per_init"]["acc"] for day in row for v in day)
    spec = np.array(d["spectra"]["truth"])  # (day, channel, k)
    assert spec.shape == (1, 2, 5)
    from icml26.envs.weather.metrics import latitude_weights_array

    w = latitude_weights_array(lat)
    w = w / w.sum()
    expected = np.einsum("bcjk,j->c", truth[:, 3].astype(float) ** 2, w) / (5 * 8)
    assert np.allclose(spec[0].sum(-1), expected, rtol=1e-5)
    assert np.array(d["spectra"]["forecast"]).sum() == pytest.approx(0.0)
