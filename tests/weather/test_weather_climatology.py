"""The WeatherBench 2 climatology (day of year x hour, 61-day window) on series with known means."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from icml26.envs.weather.climatology import Climatology, climatological_quantiles


def _series(values_fn, years=(2001, 2002)) -> tuple[np.ndarray, pd.DatetimeIndex]:
    t = pd.date_range(f"{years[0]}-01-01", f"{years[-1]}-12-31T18", freq="6h")
    return values_fn(t).astype(np.float64)[:, None, None, None] * np.ones((1, 1, 2, 3)), t


def test_year_offsets_average_out() -> None:
    # 1 in the first year, 3 in the second: every window holds equally many samples of each.
    arr, t = _series(lambda t: np.where(t.year == 2001, 1.0, 3.0))
    clim = Climatology.from_array(arr, t, ["t2m"])
    assert clim.values.shape == (366, 4, 1, 2, 3)
    np.testing.assert_allclose(clim.values[:365], 2.0, rtol=1e-6)


def test_hour_of_day_is_kept_apart() -> None:
    arr, t = _series(lambda t: t.hour.to_numpy() * 1.0)
    clim = Climatology.from_array(arr, t, ["t2m"])
    for k, h in enumerate((0, 6, 12, 18)):
        np.testing.assert_allclose(clim.values[:, k], h, rtol=1e-6)
    np.testing.assert_allclose(
        clim.at(np.array(["2005-07-01T18"], dtype="datetime64[ns]"))[0], 18.0
    )


def test_window_smooths_an_annual_harmonic_by_the_boxcar_factor() -> None:
    # x = cos(2 pi (doy - 1) / 366); a 61-bin circular boxcar over the 366 day-of-year bins
    # multiplies the harmonic by sin(61 pi / 366) / (61 sin(pi / 366)).
    arr, t = _series(
        lambda t: np.cos(2 * np.pi * (t.day_of_year.to_numpy() - 1) / 366), years=(2000,)
    )
    clim = Climatology.from_array(arr, t, ["t2m"])
    factor = np.sin(61 * np.pi / 366) / (61 * np.sin(np.pi / 366))
    expected = factor * np.cos(2 * np.pi * np.arange(366) / 366)
    np.testing.assert_allclose(clim.values[:, 0, 0, 0, 0], expected, atol=1e-6)


def test_to_dataset_layout_and_errors() -> None:
    arr, t = _series(lambda t: np.ones(t.size))
    clim = Climatology.from_array(arr, t, ["z500"])
    ds = clim.to_dataset(np.array([-45.0, 45.0]), np.array([0.0, 120.0, 240.0]))
    assert ds["geopotential"].dims == ("dayofyear", "hour", "level", "latitude", "longitude")
    assert ds["dayofyear"].values[0] == 1 and ds["dayofyear"].values[-1] == 366
    with pytest.raises(ValueError, match="not all in"):
        clim.at(np.array(["2001-01-01T03"], dtype="datetime64[ns]"))
    with pytest.raises(ValueError, match="odd"):
        Climatology.from_array(arr, t, ["z500"], window=60)


def test_quantile_thresholds_per_grid_point() -> None:
    x = (
        np.arange(100, dtype=np.float64)[:, None, None, None]
        * np.array([1.0, 2.0])[None, :, None, None]
    )
    x = np.broadcast_to(x, (100, 2, 2, 2))
    q = climatological_quantiles(x, (0.5, 0.99))
    np.testing.assert_allclose(q[0, 0], 49.5)
    np.testing.assert_allclose(q[1, 1], 2 * 98.01)
    with pytest.raises(ValueError):
        climatological_quantiles(x, (1.0,))


def test_short_training_periods_fill_days_without_data_from_the_nearest_day() -> None:
    t = pd.date_range("2001-01-01", "2001-03-31T18", freq="6h")
    arr = np.broadcast_to(
        t.day_of_year.to_numpy(dtype=float)[:, None, None, None], (t.size, 1, 1, 1)
    )
    clim = Climatology.from_array(arr, t, ["t2m"])
    assert np.isfinite(clim.values).all()
    # Day 200 (mid-July) is far from any sample: it takes the window mean of the nearest day with
    # data (day 120 = 90 + 30, whose window holds days 90-60 .. 90).
    assert clim.values[199, 0, 0, 0, 0] == pytest.approx(clim.values[119, 0, 0, 0, 0])
