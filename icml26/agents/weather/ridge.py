"""Ridge regression on local patches: a linear 6-hour model applied iteratively.

The next normalized anomaly of every channel at grid point (i, j) is a linear function of the
(2r+1) x (2r+1) patch of all channels' normalized anomalies around (i, j) (longitude periodic,
latitude edges repeated) plus a bias. Weights are shared along a latitude circle and differ
between latitudes (the Coriolis parameter, the climate and the grid change with latitude), in
the spirit of WeatherBench's iterative linear regression baseline made local. Anomalies are
taken from the training data's WeatherBench 2 climatology, so the seasonal and diurnal cycles
are handled exactly and the regression only models the weather.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from icml26.agents.weather.base import WeatherForecaster
from icml26.envs.weather.env import WeatherDataset
from icml26.envs.weather.grid import STEP
from icml26.protocol import Budget


def local_patches(z: np.ndarray, radius: int) -> np.ndarray:
    """``z`` (B, C, lat, lon) -> (B, lat, lon, C * (2r+1)^2): patches with periodic longitude
    and repeated edge latitudes."""
    r = radius
    zp = np.pad(z, ((0, 0), (0, 0), (r, r), (0, 0)), mode="edge")
    zp = np.pad(zp, ((0, 0), (0, 0), (0, 0), (r, r)), mode="wrap")
    win = sliding_window_view(zp, (2 * r + 1, 2 * r + 1), axis=(2, 3))  # (B, C, lat, lon, p, p)
    b, c, h, w = z.shape
    return np.ascontiguousarray(win.transpose(0, 2, 3, 1, 4, 5)).reshape(b, h, w, -1)


class RidgePatchForecaster(WeatherForecaster):
    """Local-patch ridge regression of the next normalized anomaly.

    Args:
        radius: patch half-width in grid points (2 -> 5 x 5 patches).
        alpha: ridge penalty per training row (features are standardized anomalies).
        max_rows: cap on training rows per latitude (times are subsampled evenly to meet it).
    """

    def __init__(self, radius: int = 2, alpha: float = 1e-2, max_rows: int = 30_000) -> None:
        super().__init__()
        if radius < 0:
            raise ValueError(f"radius must be >= 0, got {radius}")
        self.radius, self.alpha, self.max_rows = int(radius), float(alpha), int(max_rows)

    def _normalize(self, x: np.ndarray, times: np.ndarray) -> np.ndarray:
        return (x - self.clim.at(times)) / self.scale[None, :, None, None]

    def fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:
        # The systems are small (~126 unknowns): BLAS threads only spin, so use one.
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            return self._fit(data, budget)
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(data, budget)

    def _fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:
        arr, times = data.array, data.times
        self.clim = data.climatology()
        n_t, n_c, n_lat, n_lon = arr.shape
        stride = max(1, int(np.ceil((n_t - 1) * n_lon / self.max_rows)))
        if budget.dataset_size is not None:
            stride = max(stride, int(np.ceil((n_t - 1) / max(1, budget.dataset_size))))
        idx = np.arange(0, n_t - 1, stride)
        # Anomaly scale per channel (for conditioning), from the sampled states.
        anom = arr[idx] - self.clim.at(times[idx])
        self.scale = np.sqrt((anom**2).mean(axis=(0, 2, 3))).astype(np.float32)
        self.scale[self.scale == 0] = 1.0
        z = anom / self.scale[None, :, None, None]
        y = self._normalize(arr[idx + 1], times[idx + 1])  # (N, C, lat, lon)
        del anom
        r = self.radius
        zp = np.pad(
            np.pad(z, ((0, 0), (0, 0), (r, r), (0, 0)), mode="edge"),
            ((0, 0), (0, 0), (0, 0), (r, r)),
            mode="wrap",
        )
        n_f = n_c * (2 * r + 1) ** 2 + 1
        self.weights = np.zeros((n_lat, n_f, n_c), dtype=np.float32)
        residual = 0.0
        for i in range(n_lat):
            # Patches centred on latitude row i: (N, lon, C * (2r+1)^2), same order as local_patches.
            win = sliding_window_view(
                zp[:, :, i : i + 2 * r + 1], 2 * r + 1, axis=3
            )  # (N, C, p, lon, p)
            xi = win.transpose(0, 3, 1, 2, 4).reshape(-1, n_f - 1)
            xi = np.concatenate([xi, np.ones((xi.shape[0], 1), dtype=np.float32)], axis=1)
            yi = y[:, :, i].transpose(0, 2, 1).reshape(-1, n_c)
            # Normal equations in float32 BLAS (standardized features), solved in float64.
            gram = (xi.T @ xi).astype(np.float64)
            reg = self.alpha * xi.shape[0] * np.eye(n_f)
            reg[-1, -1] = 0.0  # no penalty on the bias
            w = np.linalg.solve(gram + reg, (xi.T @ yi).astype(np.float64))
            self.weights[i] = w
            residual += float(((xi @ w.astype(np.float32) - yi) ** 2).mean())
        return {
            "rows_per_latitude": int(idx.size * n_lon),
            "features": int(n_f),
            "train_mse_normalized": residual / n_lat,
        }

    def predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        t = np.asarray(times, dtype="datetime64[ns]")
        z = self._normalize(np.asarray(context[:, -1], dtype=np.float32), t)
        x = local_patches(z, self.radius)  # (B, lat, lon, F - 1)
        w = self.weights
        out = np.einsum("bhwf,hfc->bchw", x, w[:, :-1]) + w[:, -1].T[None, :, :, None]
        return self.clim.at(t + STEP) + out * self.scale[None, :, None, None]
