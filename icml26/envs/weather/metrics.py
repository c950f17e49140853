"""Forecast verification in WeatherBench 2 conventions, on xarray (numpy underneath).

Formulas (WeatherBench 2, Rasp et al. 2024; WeatherBench-X; FourCastNet):

* latitude weights ``w_i = (sin(phi_i+) - sin(phi_i-)) / mean``: cell area with edges at
  midpoints clamped to +-90 deg, normalized to mean 1;
* ``MSE(init, lead) = mean_ij w_i (f - o)^2`` over the grid;
* ``RMSE(lead) = sqrt(mean_init MSE)`` (WeatherBench 2); ``rmse_per_init`` = ``mean_init sqrt(MSE)``
  (the variant EMFormer's and FourCastNet's code compute);
* ``ACC(lead) = mean_init [ sum w f' o' / sqrt(sum w f'^2 sum w o'^2) ]``, uncentred, with
  anomalies ``f' = f - c``, ``o' = o - c`` from the day-of-year x hour climatology;
* ``bias = mean_init mean_ij w (f - o)``; ``activity = sqrt(mean_init mean_ij w f'^2)``;
* top-quantile error (FourCastNet): ``mean_q [Q_q(f) - Q_q(o)]`` over the grid points of each
  field, ``q = 1 - logspace(-qlim, -qcut, n)``, averaged over initializations;
* extremes at climatological quantile thresholds per grid point: events ``x > threshold``,
  area-weighted contingency table (TP, FP, FN, TN) over grid points and initializations, then
  CSI, ETS, HSS, frequency bias and SEDI (Ferro and Stephenson 2011).

:class:`ForecastScorer` accumulates all of them over chunks of initializations (so a year of
40-step forecasts never has to sit in memory at once); :func:`score` and the single-metric
functions wrap it for ``xr.Dataset`` forecasts in WeatherBench 2 layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from icml26.envs.weather.climatology import Climatology
from icml26.envs.weather.grid import (
    HEADLINE_CHANNELS,
    HEADLINE_DAYS,
    STEP_HOURS,
    channels_of,
    dataset_to_array,
    latitude_bounds,
)

SEDI_CLIP = 1e-6  # WeatherBench-X clips hit and false-alarm rates to [1e-6, 1 - 1e-6]


# ----------------------------------------------------------------------------- weights
def latitude_weights_array(latitude: Any) -> np.ndarray:
    """Cell-area latitude weights normalized to mean 1 (WeatherBench 2), as numpy."""
    b = np.deg2rad(latitude_bounds(np.asarray(latitude, dtype=np.float64)))
    w = np.sin(b[1:]) - np.sin(b[:-1])
    return w / w.mean()


def latitude_weights(latitude: Any) -> xr.DataArray:
    """Cell-area latitude weights normalized to mean 1, as a DataArray over ``latitude``."""
    lat = latitude.values if isinstance(latitude, xr.DataArray) else np.asarray(latitude)
    return xr.DataArray(latitude_weights_array(lat), dims=("latitude",), coords={"latitude": lat})


# ----------------------------------------------------------------------------- contingency
def csi(tp: Any, fp: Any, fn: Any, tn: Any = None) -> Any:
    """Critical success index TP / (TP + FP + FN)."""
    return tp / (tp + fp + fn)


def ets(tp: Any, fp: Any, fn: Any, tn: Any) -> Any:
    """Equitable threat score (Gilbert skill score): hits corrected for random hits."""
    n = tp + fp + fn + tn
    hits_random = (tp + fp) * (tp + fn) / n
    return (tp - hits_random) / (tp + fp + fn - hits_random)


def hss(tp: Any, fp: Any, fn: Any, tn: Any) -> Any:
    """Heidke skill score."""
    return 2 * (tp * tn - fp * fn) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))


def frequency_bias(tp: Any, fp: Any, fn: Any, tn: Any = None) -> Any:
    """(TP + FP) / (TP + FN): forecast events per observed event."""
    return (tp + fp) / (tp + fn)


def sedi(tp: Any, fp: Any, fn: Any, tn: Any, clip: float = SEDI_CLIP) -> Any:
    """Symmetric extremal dependence index (Ferro and Stephenson 2011) with H, F clipped.

    ``SEDI = [ln F - ln H + ln(1-H) - ln(1-F)] / [ln F + ln H + ln(1-H) + ln(1-F)]``.
    """
    h = np.clip(tp / (tp + fn), clip, 1 - clip)
    f = np.clip(fp / (fp + tn), clip, 1 - clip)
    num = np.log(f) - np.log(h) + np.log(1 - h) - np.log(1 - f)
    den = np.log(f) + np.log(h) + np.log(1 - h) + np.log(1 - f)
    return num / den


def tqe_levels(qlim: float = 5.0, qcut: float = 0.1, n: int = 100) -> np.ndarray:
    """FourCastNet's top quantiles ``1 - logspace(-qlim, -qcut, n)``."""
    return 1.0 - np.logspace(-qlim, -qcut, n)


def sorted_quantiles(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``np.quantile(x, q, axis=-1)`` (linear interpolation) by one sort per row: much faster
    than numpy's partition when there are many quantile levels. Returns (len(q), *x.shape[:-1])."""
    s = np.sort(x, axis=-1)
    pos = np.asarray(q, dtype=np.float64) * (x.shape[-1] - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, x.shape[-1] - 1)
    frac = pos - lo
    a, b = np.moveaxis(s[..., lo], -1, 0), np.moveaxis(s[..., hi], -1, 0)
    frac = frac.reshape(-1, *([1] * (x.ndim - 1)))
    return a + (b - a) * frac


@dataclass
class EventThresholds:
    """Per-grid-point event thresholds: ``values`` (n_quantiles, C, lat, lon)."""

    quantiles: tuple[float, ...]
    values: np.ndarray
    channels: tuple[str, ...]

    @classmethod
    def from_array(
        cls, array: np.ndarray, channels: Sequence[str], quantiles: Sequence[float] = (0.95, 0.99)
    ) -> EventThresholds:
        from icml26.envs.weather.climatology import climatological_quantiles

        return cls(
            tuple(float(q) for q in quantiles),
            climatological_quantiles(array, quantiles),
            tuple(channels),
        )


# ----------------------------------------------------------------------------- streaming scorer
class ForecastScorer:
    """Accumulate every score over chunks of initializations.

    Args:
        channels: channel names, in the order of the arrays' channel axis.
        latitude: the grid latitudes (increasing).
        lead_steps: the lead of each forecast step, in 6-hour steps (``1..L`` by default).
        climatology: needed for ACC and activity.
        thresholds: needed for the contingency scores.
        tqe: compute the top-quantile error (sorts every field; the most expensive score).
    """

    def __init__(
        self,
        channels: Sequence[str],
        latitude: Any,
        lead_steps: Sequence[int] | int,
        climatology: Climatology | None = None,
        thresholds: EventThresholds | None = None,
        tqe: bool = True,
        tqe_qlim: float = 5.0,
    ) -> None:
        self.channels = tuple(channels)
        self.weights = latitude_weights_array(latitude)
        self.lead_steps = (
            np.arange(1, int(lead_steps) + 1)
            if isinstance(lead_steps, (int, np.integer))
            else np.asarray(lead_steps, dtype=int)
        )
        self.climatology = climatology
        self.thresholds = thresholds
        if climatology is not None and climatology.channels != self.channels:
            raise ValueError(f"climatology channels {climatology.channels} != {self.channels}")
        if thresholds is not None and thresholds.channels != self.channels:
            raise ValueError(f"threshold channels {thresholds.channels} != {self.channels}")
        self.tqe_q = tqe_levels(qlim=tqe_qlim) if tqe else None
        nl, nc = self.lead_steps.size, len(self.channels)
        z = lambda *s: np.zeros(s)  # noqa: E731
        self.n = 0
        self.sum_mse, self.sum_rmse, self.sum_bias = z(nl, nc), z(nl, nc), z(nl, nc)
        self.sum_acc, self.cnt_acc = z(nl, nc), z(nl, nc)
        self.sum_act, self.sum_tact, self.sum_tqe = z(nl, nc), z(nl, nc), z(nl, nc)
        nq = 0 if thresholds is None else len(thresholds.quantiles)
        self.table = z(nq, 4, nl, nc)  # TP, FP, FN, TN (area-weighted fractions, summed)
        self._truth_q: dict[int, np.ndarray] = {}

    def _wmean(self, x: np.ndarray) -> np.ndarray:
        """Area-weighted mean over the last two axes (lat, lon), accumulated in float64."""
        return x.sum(-1, dtype=np.float64) @ (self.weights / (x.shape[-1] * x.shape[-2]))

    def update(self, forecast: np.ndarray, truth: np.ndarray, valid_times: Any = None) -> None:
        """Add a chunk: ``forecast`` and ``truth`` (B, L, C, lat, lon), ``valid_times`` (B, L)."""
        f = np.asarray(forecast, dtype=np.float32)
        o = np.asarray(truth, dtype=np.float32)
        nl, nc = self.lead_steps.size, len(self.channels)
        if f.ndim != 5 or f.shape[1:3] != (nl, nc) or f.shape != o.shape:
            raise ValueError(
                f"forecast and truth must both be (B, {nl}, {nc}, lat, lon); got "
                f"{f.shape} and {o.shape}"
            )
        if f.shape[3] != self.weights.size:
            raise ValueError(f"{f.shape[3]} latitudes but {self.weights.size} weights")
        if not (np.all(np.isfinite(f)) and np.all(np.isfinite(o))):
            raise ValueError("forecast and truth must be finite (NaN or inf found)")
        self.n += f.shape[0]
        e = f - o
        mse = self._wmean(e * e)
        self.sum_mse += mse.sum(0)
        self.sum_rmse += np.sqrt(mse).sum(0)
        self.sum_bias += self._wmean(e).sum(0)
        del e
        if self.climatology is not None:
            if valid_times is None:
                raise ValueError("ACC and activity need the valid times of the forecast")
            c = self.climatology.at(np.asarray(valid_times))
            fa, oa = f - c, o - c
            del c
            ff, oo, fo = self._wmean(fa * fa), self._wmean(oa * oa), self._wmean(fa * oa)
            del fa, oa
            with np.errstate(invalid="ignore", divide="ignore"):
                a = fo / np.sqrt(ff * oo)
            ok = np.isfinite(a)
            self.sum_acc += np.where(ok, a, 0.0).sum(0)
            self.cnt_acc += ok.sum(0)
            self.sum_act += ff.sum(0)
            self.sum_tact += oo.sum(0)
        if self.tqe_q is not None:
            b, hw = f.shape[0], f.shape[3] * f.shape[4]
            qf = sorted_quantiles(f.reshape(b, nl, nc, hw), self.tqe_q)
            qo = self._truth_quantiles(o, valid_times)
            self.sum_tqe += (qf - qo).mean(0).sum(0)
        if self.thresholds is not None:
            for k, thr in enumerate(self.thresholds.values):
                fe, oe = f > thr, o > thr
                tp = self._wmean(fe & oe)
                fp = self._wmean(fe & ~oe)
                fn = self._wmean(~fe & oe)
                self.table[k, 0] += tp.sum(0)
                self.table[k, 1] += fp.sum(0)
                self.table[k, 2] += fn.sum(0)
                self.table[k, 3] += (1.0 - tp - fp - fn).sum(0)

    def _truth_quantiles(self, o: np.ndarray, valid_times: Any) -> np.ndarray:
        """Quantiles of the truth fields (memoized by valid time: truth depends on it alone)."""
        b, nl, nc = o.shape[:3]
        flat = o.reshape(b, nl, nc, -1)
        if valid_times is None:
            return sorted_quantiles(flat, self.tqe_q)
        keys = np.asarray(valid_times, dtype="datetime64[ns]").astype(np.int64)
        out = np.empty((self.tqe_q.size, b, nl, nc))
        todo = [(i, j) for i in range(b) for j in range(nl) if int(keys[i, j]) not in self._truth_q]
        if todo:
            idx = np.array(todo)
            q = sorted_quantiles(flat[idx[:, 0], idx[:, 1]], self.tqe_q)  # (nq, n, C)
            for n, (i, j) in enumerate(todo):
                self._truth_q[int(keys[i, j])] = q[:, n]
        for i in range(b):
            for j in range(nl):
                out[:, i, j] = self._truth_q[int(keys[i, j])]
        return out

    def result(self) -> xr.Dataset:
        """Every score as an ``xr.Dataset`` over (channel, prediction_timedelta[, quantile])."""
        if self.n == 0:
            raise ValueError("no forecasts were scored")
        n = float(self.n)
        lead = pd.to_timedelta(self.lead_steps * STEP_HOURS, unit="h")
        dims = ("prediction_timedelta", "channel")
        coords: dict[str, Any] = {"prediction_timedelta": lead, "channel": list(self.channels)}
        data: dict[str, Any] = {
            "mse": (dims, self.sum_mse / n),
            "rmse": (dims, np.sqrt(self.sum_mse / n)),
            "rmse_per_init": (dims, self.sum_rmse / n),
            "bias": (dims, self.sum_bias / n),
        }
        if self.climatology is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                data["acc"] = (
                    dims,
                    np.where(self.cnt_acc > 0, self.sum_acc / np.maximum(self.cnt_acc, 1), np.nan),
                )
            data["activity"] = (dims, np.sqrt(self.sum_act / n))
            data["truth_activity"] = (dims, np.sqrt(self.sum_tact / n))
        if self.tqe_q is not None:
            data["tqe"] = (dims, self.sum_tqe / n)
        if self.thresholds is not None:
            qd = ("quantile", *dims)
            coords["quantile"] = list(self.thresholds.quantiles)
            tp, fp, fn, tn = (self.table[:, i] for i in range(4))
            with np.errstate(invalid="ignore", divide="ignore"):
                data.update(
                    {
                        "tp": (qd, tp),
                        "fp": (qd, fp),
                        "fn": (qd, fn),
                        "tn": (qd, tn),
                        "csi": (qd, csi(tp, fp, fn)),
                        "ets": (qd, ets(tp, fp, fn, tn)),
                        "hss": (qd, hss(tp, fp, fn, tn)),
                        "frequency_bias": (qd, frequency_bias(tp, fp, fn)),
                        "sedi": (qd, sedi(tp, fp, fn, tn)),
                    }
                )
        ds = xr.Dataset(data, coords=coords, attrs={"n_inits": int(self.n)})
        return ds.transpose("channel", "prediction_timedelta", ...)


# ----------------------------------------------------------------------------- xarray API
def _lead_steps(forecast: xr.Dataset) -> np.ndarray:
    td = pd.to_timedelta(forecast["prediction_timedelta"].values)
    steps = td / pd.Timedelta(hours=STEP_HOURS)
    if np.any(steps != np.round(steps)):
        raise ValueError(f"prediction_timedelta must be multiples of {STEP_HOURS} h, got {td}")
    return np.round(steps).astype(int)


def _valid_times(forecast: xr.Dataset) -> np.ndarray:
    init = np.asarray(forecast["time"].values, dtype="datetime64[ns]")
    td = np.asarray(forecast["prediction_timedelta"].values, dtype="timedelta64[ns]")
    return init[:, None] + td[None, :]


def _truth_array(forecast: xr.Dataset, truth: xr.Dataset, channels: Sequence[str]) -> np.ndarray:
    """Truth as (B, L, C, lat, lon): already aligned, or looked up by valid time in a series."""
    if "prediction_timedelta" in truth.dims:
        truth = truth.sel(
            time=forecast["time"], prediction_timedelta=forecast["prediction_timedelta"]
        )
        return dataset_to_array(truth, channels, ("time", "prediction_timedelta"))
    obs = dataset_to_array(truth, channels, ("time",))
    index = pd.Index(np.asarray(truth["time"].values, dtype="datetime64[ns]"))
    valid = _valid_times(forecast)
    pos = index.get_indexer(valid.ravel())
    if np.any(pos < 0):
        missing = valid.ravel()[pos < 0][:3]
        raise KeyError(f"the truth has no state at valid times {missing.tolist()} (and maybe more)")
    return obs[pos].reshape(*valid.shape, *obs.shape[1:])


def _as_climatology(
    clim: Climatology | xr.Dataset | None, channels: Sequence[str]
) -> Climatology | None:
    if clim is None or isinstance(clim, Climatology):
        if clim is not None and clim.channels != tuple(channels):
            idx = [clim.channels.index(c) for c in channels]
            return Climatology(clim.values[:, :, idx], clim.hours, tuple(channels))
        return clim
    vals = dataset_to_array(clim, channels, ("dayofyear", "hour"))
    if vals.shape[0] != 366:
        raise ValueError(f"climatology must have 366 days of year, got {vals.shape[0]}")
    return Climatology(vals, np.asarray(clim["hour"].values), tuple(channels))


def score(
    forecast: xr.Dataset,
    truth: xr.Dataset,
    climatology: Climatology | xr.Dataset | None = None,
    thresholds: EventThresholds | None = None,
    channels: Sequence[str] | None = None,
    tqe: bool = True,
    chunk: int = 64,
) -> xr.Dataset:
    """Every score of a WeatherBench 2 forecast Dataset (``time``, ``prediction_timedelta``,
    [``level``], ``latitude``, ``longitude``) against ``truth`` (aligned forecast-shaped, or an
    observation series over ``time`` looked up at the valid times)."""
    chans = tuple(channels) if channels is not None else channels_of(forecast)
    clim = _as_climatology(climatology, chans)
    if thresholds is not None and thresholds.channels != chans:
        idx = [thresholds.channels.index(c) for c in chans]
        thresholds = EventThresholds(thresholds.quantiles, thresholds.values[:, idx], chans)
    scorer = ForecastScorer(
        chans, forecast["latitude"].values, _lead_steps(forecast), clim, thresholds, tqe
    )
    valid = _valid_times(forecast)
    for s in range(0, forecast.sizes["time"], chunk):
        part = forecast.isel(time=slice(s, s + chunk))
        scorer.update(
            dataset_to_array(part, chans, ("time", "prediction_timedelta")),
            _truth_array(part, truth, chans),
            valid[s : s + chunk],
        )
    return scorer.result()


def rmse(forecast: xr.Dataset, truth: xr.Dataset, per_init: bool = False) -> xr.DataArray:
    """Latitude-weighted RMSE per channel and lead: sqrt of the time-mean MSE (WeatherBench 2),
    or the time mean of per-initialization RMSEs with ``per_init=True``."""
    s = score(forecast, truth, tqe=False)
    return s["rmse_per_init" if per_init else "rmse"]


def acc(
    forecast: xr.Dataset, truth: xr.Dataset, climatology: Climatology | xr.Dataset
) -> xr.DataArray:
    """Uncentred anomaly correlation per channel and lead, averaged over initializations."""
    return score(forecast, truth, climatology, tqe=False)["acc"]


def bias(forecast: xr.Dataset, truth: xr.Dataset) -> xr.DataArray:
    return score(forecast, truth, tqe=False)["bias"]


def activity(
    forecast: xr.Dataset, truth: xr.Dataset, climatology: Climatology | xr.Dataset
) -> xr.DataArray:
    """sqrt(time-mean area-mean squared forecast anomaly): falls as a forecast blurs."""
    return score(forecast, truth, climatology, tqe=False)["activity"]


def top_quantile_error(forecast: xr.Dataset, truth: xr.Dataset) -> xr.DataArray:
    """FourCastNet's top-quantile error (negative: extremes under-forecast)."""
    return score(forecast, truth, tqe=True)["tqe"]


def headline_table(
    scores: xr.Dataset,
    channels: Sequence[str] = HEADLINE_CHANNELS,
    days: Sequence[int] = HEADLINE_DAYS,
    metrics: Sequence[str] = ("rmse", "acc"),
) -> pd.DataFrame:
    """Rows = channels, columns = (metric, lead day): the WeatherBench-style headline table."""
    rows = {}
    leads = pd.to_timedelta(scores["prediction_timedelta"].values)
    for ch in channels:
        if ch not in scores["channel"].values:
            continue
        row = {}
        for m in metrics:
            if m not in scores:
                continue
            for d in days:
                td = pd.Timedelta(days=d)
                row[(m, f"{d}d")] = (
                    float(scores[m].sel(channel=ch, prediction_timedelta=td))
                    if td in leads
                    else np.nan
                )
        rows[ch.upper()] = row
    return pd.DataFrame.from_dict(rows, orient="index")
