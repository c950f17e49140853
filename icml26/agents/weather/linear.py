"""Direct linear forecasts of the whole state: one ridge map per lead in EOF coordinates.

The strongest linear baseline for the nonlinearity check. The normalized anomaly of the
whole state (every channel and grid point) ``k`` steps ahead is regressed directly on the last
``history`` states, for every lead ``k = 1 .. lead_steps`` separately (not a one-step map
iterated): the best linear predictor of each lead in the least-squares sense, which a Markov
linear inverse model (one propagator, iterated) can at best equal. Inputs are the leading
``n_eofs`` principal components of each context state (whitened), targets the leading
``target_eofs`` components of the state at the lead (the remainder, tiny-variance small scales,
is forecast as climatology). The EOF count and the ridge penalty are chosen per lead on the last
``val_fraction`` of the training period, then the maps are refitted on all of it.

``rollout`` computes every lead from the same context; ``act`` keeps the initial context of the
episode (``lead_step == 0``) and answers lead ``lead_step + 1`` from it, so stepping the env
gives the same forecast.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from icml26.agents.weather.base import WeatherForecaster
from icml26.envs.weather.env import WeatherDataset
from icml26.envs.weather.grid import STEP
from icml26.protocol import Budget


def ridge_solve(x: np.ndarray, y: np.ndarray, alpha: float | np.ndarray) -> np.ndarray:
    """``argmin_W |x W - y|^2 + n sum_j alpha_j |W[j]|^2`` with ``alpha`` a scalar or one
    penalty per column; the last column of ``x`` is the bias, never penalized."""
    gram = x.T.astype(np.float64) @ x.astype(np.float64)
    reg = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (x.shape[1],)).copy()
    reg[-1] = 0.0
    return np.linalg.solve(
        gram + np.diag(reg * x.shape[0]), x.T.astype(np.float64) @ y.astype(np.float64)
    )


class DirectLinearForecaster(WeatherForecaster):
    """Per-lead ridge regression of the state on the last ``history`` states, in EOF space.

    Args:
        history: context states used as predictors (1 or more).
        n_eofs: candidate numbers of input EOFs per context state.
        alphas: candidate ridge penalties (per training row; inputs are whitened).
        quad_alphas: candidate penalties of the quadratic block (a separate penalty, so that a
            large one recovers the linear model).
        target_eofs: EOFs kept for the targets.
        val_fraction: final share of the training period used to choose (n_eofs, alpha) per lead.
        max_eof_rows: training states used to compute the EOFs (evenly subsampled).
        quadratic: 0 for the linear model; ``q > 0`` adds the products of the newest state's
            leading ``q`` whitened PCs (``q (q + 1) / 2`` features), a quadratic forecaster on
            the same footing (the QG nonlinearity, the Jacobian, is quadratic).
        reference: what anomalies are taken from: ``"climatology"`` (the training data's
            WeatherBench 2 day-of-year x hour climatology) or ``"mean"`` (the training time-mean
            per grid point; for sources without a seasonal cycle, where the day-of-year
            climatology of a few years is mostly sampling noise).
    """

    def __init__(
        self,
        history: int = 2,
        n_eofs: Sequence[int] = (8, 16, 32, 64, 128, 256),
        alphas: Sequence[float] = (1e-4, 1e-3, 1e-2, 1e-1),
        target_eofs: int = 512,
        val_fraction: float = 0.2,
        max_eof_rows: int = 3000,
        quadratic: int = 0,
        quad_alphas: Sequence[float] = (1e-2, 1e-1, 1.0, 10.0),
        reference: str = "climatology",
    ) -> None:
        super().__init__()
        if reference not in ("climatology", "mean"):
            raise ValueError(f"reference must be 'climatology' or 'mean', got {reference!r}")
        self.reference = reference
        if history < 1:
            raise ValueError(f"history must be >= 1, got {history}")
        if not n_eofs or min(n_eofs) < 1:
            raise ValueError(f"n_eofs must be positive ints, got {list(n_eofs)}")
        if not alphas or min(alphas) < 0:
            raise ValueError(f"alphas must be >= 0, got {list(alphas)}")
        if not 0.0 < val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        self.context_length = int(history)
        self.n_eofs = tuple(sorted(int(r) for r in n_eofs))
        self.alphas = tuple(float(a) for a in alphas)
        self.target_eofs, self.val_fraction = int(target_eofs), float(val_fraction)
        self.max_eof_rows = int(max_eof_rows)
        if quadratic < 0 or quadratic > min(self.n_eofs):
            raise ValueError(
                f"quadratic must be in [0, min(n_eofs) = {min(self.n_eofs)}], got {quadratic}"
            )
        self.quadratic = int(quadratic)
        qa = tuple(float(a) for a in quad_alphas) if self.quadratic else (0.0,)
        self.penalties = [(a, b) for a in self.alphas for b in qa]
        self._anchor: tuple[np.ndarray, np.ndarray] | None = None

    # --------------------------------------------------------------------- features
    def _anomaly(self, x: np.ndarray, times: np.ndarray) -> np.ndarray:
        """(B, C, lat, lon) states -> (B, D) normalized anomalies."""
        z = (x - self._reference(times)) / self.scale[None, :, None, None]
        return z.reshape(z.shape[0], -1).astype(np.float32)

    def _reference(self, times: np.ndarray) -> np.ndarray:
        """The state anomalies are taken from: (B, C, lat, lon) at ``times``."""
        if self.reference == "mean":
            return np.broadcast_to(self._mean, (len(times), *self._mean.shape))
        return self.clim.at(times)

    def _features(self, pcs: np.ndarray, r: int) -> np.ndarray:
        """``pcs`` (B, h, K) whitened PCs of the context (oldest first) -> (B, r h + 1), ordered
        EOF-major (EOF i of every context state, newest first) so that smaller r are prefixes."""
        b = pcs.shape[0]
        x = pcs[:, ::-1, :r].transpose(0, 2, 1).reshape(b, -1)
        parts = [x]
        if self.quadratic:
            q = pcs[:, -1, : self.quadratic]
            iu = np.triu_indices(self.quadratic)
            parts.append((q[:, :, None] * q[:, None, :])[:, iu[0], iu[1]] / np.sqrt(2.0))
        parts.append(np.ones((b, 1), dtype=x.dtype))
        return np.concatenate(parts, axis=1)

    def _cols(self, r: int, n_features: int) -> np.ndarray:
        """Columns of the rank-``r`` model inside the rank-``max`` design: its linear prefix,
        the quadratic block and the bias."""
        n_quad = self.quadratic * (self.quadratic + 1) // 2
        return np.r_[
            np.arange(r * self.context_length), np.arange(n_features - 1 - n_quad, n_features)
        ]

    def _penalty(self, n_cols: int, alpha: float, alpha_quad: float) -> np.ndarray:
        """Per-column penalty of a design with ``n_cols`` columns (linear, quadratic, bias)."""
        n_quad = self.quadratic * (self.quadratic + 1) // 2
        pen = np.full(n_cols, alpha)
        pen[n_cols - 1 - n_quad : n_cols - 1] = alpha_quad
        pen[-1] = 0.0
        return pen

    def _design(self, pcs: np.ndarray, ends: np.ndarray, r: int) -> np.ndarray:
        h = self.context_length
        ctx = np.stack([pcs[ends - h + 1 + j] for j in range(h)], axis=1)
        return self._features(ctx, r)

    # --------------------------------------------------------------------- training
    def _basis(self, data: WeatherDataset, lead: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fit the climatology, channel scales and EOFs; return the whitened input PCs (T, kmax),
        the unwhitened target PCs (T, kt) and the EOF variances."""
        arr, times = data.array, data.times
        if self.reference == "climatology":
            self.clim = data.climatology()
        n_t = arr.shape[0]
        self._grid = tuple(arr.shape[2:])
        h = self.context_length
        if n_t < h + lead + 10:
            raise ValueError(f"{n_t} training states are too few for history {h} and {lead} leads")
        z = np.empty((n_t, arr[0].size), dtype=np.float32)
        if self.reference == "mean":
            self._mean = arr.mean(axis=0, dtype=np.float64).astype(np.float32)
        anom = arr - self._reference(times)
        self.scale = np.sqrt((anom.astype(np.float64) ** 2).mean(axis=(0, 2, 3))).astype(np.float32)
        self.scale[self.scale == 0] = 1.0
        z[:] = (anom / self.scale[None, :, None, None]).reshape(n_t, -1)
        del anom
        rows = np.linspace(0, n_t - 1, min(n_t, self.max_eof_rows)).astype(int)
        _, sv, vt = np.linalg.svd(z[rows].astype(np.float64), full_matrices=False)
        var = sv**2 / rows.size
        kmax = min(max(self.n_eofs), vt.shape[0])
        kt = min(self.target_eofs, vt.shape[0])
        self.eofs = vt[: max(kmax, kt)].astype(np.float32)  # (K, D)
        self.pc_std = np.sqrt(np.maximum(var[:kmax], 1e-12)).astype(np.float32)
        pcs = z @ self.eofs.T  # (T, K)
        return pcs[:, :kmax] / self.pc_std, pcs[:, :kt], var

    def fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:
        h, lead = self.context_length, int(data.lead_steps)
        inputs, targets, var = self._basis(data, lead)
        n_t, kmax, kt = inputs.shape[0], inputs.shape[1], targets.shape[1]
        ranks = [r for r in self.n_eofs if r <= kmax] or [kmax]

        ends = np.arange(h - 1, n_t - lead)
        n_val = max(1, int(round(self.val_fraction * ends.size)))
        tr, va = ends[: ends.size - n_val - lead], ends[ends.size - n_val :]  # gap of `lead`
        choice, val_mse = self._select(inputs, targets, tr, va, lead, ranks)
        self.weights: list[np.ndarray] = []
        self.ranks = [ranks[c[0]] for c in choice]
        self.lead_alphas = [self.penalties[c[1]] for c in choice]
        x_all = self._design(inputs, ends, kmax)
        for k in range(1, lead + 1):
            r = self.ranks[k - 1]
            cols = self._cols(r, x_all.shape[1])
            pen = self._penalty(cols.size, *self.lead_alphas[k - 1])
            w = ridge_solve(x_all[:, cols], targets[ends + k], pen)
            self.weights.append(w.astype(np.float32))
        self.lead_steps = lead
        return {
            "leads": lead,
            "target_variance_kept": float(var[:kt].sum() / var.sum()),
            "n_eofs_per_lead": self.ranks,
            "alpha_per_lead": self.lead_alphas,
            "val_mse_normalized": val_mse,
        }

    def _select(
        self,
        inputs: np.ndarray,
        targets: np.ndarray,
        tr: np.ndarray,
        va: np.ndarray,
        lead: int,
        ranks: list[int],
    ) -> tuple[list[tuple[int, int]], list[float]]:
        """Per lead, the (rank index, alpha index) with the smallest validation MSE."""
        kmax = max(ranks)
        x_tr, x_va = self._design(inputs, tr, kmax), self._design(inputs, va, kmax)
        g_full = x_tr.T.astype(np.float64) @ x_tr.astype(np.float64)
        out, best_mse = [], []
        for k in range(1, lead + 1):
            y_tr, y_va = targets[tr + k].astype(np.float64), targets[va + k].astype(np.float64)
            c_full = x_tr.T.astype(np.float64) @ y_tr
            best = (np.inf, (0, 0))
            for ri, r in enumerate(ranks):
                cols = self._cols(r, x_tr.shape[1])
                g, c = g_full[np.ix_(cols, cols)], c_full[cols]
                for ai, pen in enumerate(self.penalties):
                    reg = self._penalty(cols.size, *pen) * tr.size
                    w = np.linalg.solve(g + np.diag(reg), c)
                    mse = float(((x_va[:, cols] @ w - y_va) ** 2).sum(axis=1).mean())
                    if mse < best[0]:
                        best = (mse, (ri, ai))
            out.append(best[1])
            best_mse.append(best[0] / self.eofs.shape[1])
        return out, best_mse

    # --------------------------------------------------------------------- forecasting
    def _context_pcs(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        h = self.context_length
        ctx = np.asarray(context, dtype=np.float32)[:, -h:]
        t = np.asarray(times, dtype="datetime64[ns]")
        b = ctx.shape[0]
        ctx_t = (t[:, None] + STEP * np.arange(-h + 1, 1)[None, :]).reshape(-1)
        z = self._anomaly(ctx.reshape(b * h, *ctx.shape[2:]), ctx_t)
        kmax = self.pc_std.size
        return ((z @ self.eofs[:kmax].T) / self.pc_std).reshape(b, h, kmax)

    def _at_lead(self, pcs: np.ndarray, t0: np.ndarray, k: int) -> np.ndarray:
        if not 1 <= k <= self.lead_steps:
            raise ValueError(f"lead {k} outside the fitted leads 1..{self.lead_steps}")
        w = self.weights[k - 1]
        x = self._features(pcs, self.pc_std.size)
        y = x[:, self._cols(self.ranks[k - 1], x.shape[1])] @ w  # (B, kt) target PCs
        z = y @ self.eofs[: w.shape[1]]
        t = t0 + STEP * k
        shape = (pcs.shape[0], self.scale.size, *self._grid)
        return self._reference(t) + z.reshape(shape) * self.scale[None, :, None, None]

    def predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        """The lead-1 (6-hour) forecast."""
        self._require_fit()
        t = np.asarray(times, dtype="datetime64[ns]")
        return self._at_lead(self._context_pcs(context, t), t, 1).astype(np.float32)

    def rollout(self, context: np.ndarray, init_times: Any, steps: int) -> np.ndarray:
        """Every lead 1..steps directly from the initial context."""
        self._require_fit()
        t = np.asarray(init_times, dtype="datetime64[ns]").reshape(-1)
        pcs = self._context_pcs(context, t)
        return np.stack([self._at_lead(pcs, t, k) for k in range(1, steps + 1)], axis=1).astype(
            np.float32
        )

    def act(
        self, observation: Mapping[str, Any], info: Mapping[str, Any] | None = None
    ) -> np.ndarray:
        """Lead ``lead_step + 1`` from the context seen at ``lead_step == 0`` of the episode."""
        state, times = self._observed(observation)
        k = int(np.asarray(observation["lead_step"]))
        if k == 0:
            self._anchor = (self._context_pcs(state[None], times), times)
        if self._anchor is None:
            raise RuntimeError("DirectLinearForecaster: episode must start at lead_step 0")
        pcs, t0 = self._anchor
        return self._at_lead(pcs, t0, k + 1)[0].astype(np.float32)


class DirectQuadraticForecaster(DirectLinearForecaster):
    """:class:`DirectLinearForecaster` plus the pairwise products of the newest state's leading
    ``quadratic`` PCs: the same per-lead direct regression, made quadratic in the state."""

    def __init__(
        self, quadratic: int = 16, n_eofs: Sequence[int] = (16, 32, 64, 128, 256), **kw: Any
    ) -> None:
        super().__init__(n_eofs=n_eofs, quadratic=quadratic, **kw)


class IteratedQuadraticForecaster(DirectLinearForecaster):
    """A one-step (6-hour) quadratic regression in EOF space, iterated: a nonlinear emulator.

    The QG tendency is quadratic in the state (the Jacobian), so this is the model class of the
    dynamics, truncated to the leading ``n_eofs`` PCs. The whitened PCs' 6-hour increment is
    regressed on the last ``history`` states' PCs and the pairwise products of the newest
    state's leading ``quadratic`` PCs (ridge, separate penalties for the linear and quadratic
    blocks). The penalty pair is chosen by the error of ``val_steps``-step rollouts on the last
    ``val_fraction`` of the training period (a one-step fit can be unstable when iterated), then
    the map is refitted on all of it. Rollouts clip the whitened PCs at ``+-clip`` (a guard
    against blow-up; inactive on stable rollouts). The EOFs beyond ``n_eofs`` are forecast as
    the reference. Anomalies are taken from the training time-mean by default
    (``reference="mean"``): the map is autonomous, and on sources without a seasonal cycle (QG,
    Lorenz-96) a day-of-year climatology of a few years would add sampling noise to the state it
    sees; use ``reference="climatology"`` on data with a seasonal cycle.
    """

    def __init__(
        self,
        history: int = 2,
        n_eofs: int = 48,
        quadratic: int = 32,
        alphas: Sequence[float] = (1e-4, 1e-3, 1e-2, 1e-1, 1.0),
        quad_alphas: Sequence[float] = (1e-3, 1e-2, 1e-1, 1.0),
        val_steps: int = 12,
        val_fraction: float = 0.2,
        clip: float = 8.0,
        max_eof_rows: int = 3000,
        reference: str = "mean",
    ) -> None:
        if isinstance(n_eofs, Sequence) or int(n_eofs) < 1:
            raise ValueError(f"n_eofs must be one positive int, got {n_eofs!r}")
        if quadratic < 1:
            raise ValueError(f"quadratic must be >= 1 (use weather-linear-direct), got {quadratic}")
        if val_steps < 1 or clip <= 0:
            raise ValueError(f"val_steps must be >= 1 and clip > 0, got {val_steps}, {clip}")
        super().__init__(
            history=history,
            n_eofs=(int(n_eofs),),
            alphas=alphas,
            target_eofs=int(n_eofs),
            val_fraction=val_fraction,
            max_eof_rows=max_eof_rows,
            quadratic=quadratic,
            quad_alphas=quad_alphas,
            reference=reference,
        )
        self.val_steps, self.clip = int(val_steps), float(clip)
        self._state: tuple[np.ndarray, np.ndarray, int] | None = None

    def _step(self, ctx: np.ndarray) -> np.ndarray:
        """(B, h, r) whitened PCs, oldest first -> the next state's (B, r)."""
        x = self._features(ctx, ctx.shape[2])
        return np.clip(ctx[:, -1] + x @ self.w, -self.clip, self.clip)

    def fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:
        h, m = self.context_length, self.val_steps
        p, _, var = self._basis(data, m)
        r = p.shape[1]
        ends = np.arange(h - 1, p.shape[0] - 1)
        n_val = max(1, int(round(self.val_fraction * ends.size)))
        tr, va = ends[: ends.size - n_val - m], ends[ends.size - n_val : ends.size - m]
        va = va[:: max(1, va.size // 200)]  # up to ~200 validation rollouts
        x_tr = self._design(p, tr, r)
        g, c = x_tr.T.astype(np.float64) @ x_tr, x_tr.T.astype(np.float64) @ (p[tr + 1] - p[tr])
        w2 = self.pc_std.astype(np.float64) ** 2  # the error in unwhitened (state) units
        best: tuple[float, tuple[float, float]] = (np.inf, self.penalties[0])
        for pen in self.penalties:
            self.w = np.linalg.solve(g + np.diag(self._penalty(g.shape[0], *pen) * tr.size), c)
            ctx = np.stack([p[va - h + 1 + j] for j in range(h)], axis=1)
            for _ in range(m):
                ctx = np.concatenate([ctx[:, 1:], self._step(ctx)[:, None]], axis=1)
            err = float((((ctx[:, -1] - p[va + m]) ** 2) * w2).sum(1).mean())
            if np.isfinite(err) and err < best[0]:
                best = (err, pen)
        x_all = self._design(p, ends, r)
        cols_pen = self._penalty(x_all.shape[1], *best[1])
        self.w = ridge_solve(x_all, p[ends + 1] - p[ends], cols_pen).astype(np.float32)
        return {
            "n_eofs": r,
            "variance_kept": float(var[:r].sum() / var.sum()),
            "alphas": list(best[1]),
            f"val_mse_{m}_steps_normalized": best[0] / self.eofs.shape[1],
        }

    def _to_state(self, pcs: np.ndarray, t: np.ndarray) -> np.ndarray:
        z = (pcs * self.pc_std) @ self.eofs[: pcs.shape[1]]
        shape = (pcs.shape[0], self.scale.size, *self._grid)
        return (self._reference(t) + z.reshape(shape) * self.scale[None, :, None, None]).astype(
            np.float32
        )

    def predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        """The 6-hour forecast."""
        return self.rollout(context, times, 1)[:, 0]

    def rollout(self, context: np.ndarray, init_times: Any, steps: int) -> np.ndarray:
        """The one-step map iterated ``steps`` times in EOF space."""
        self._require_fit()
        t = np.asarray(init_times, dtype="datetime64[ns]").reshape(-1)
        ctx = self._context_pcs(context, t)
        out = []
        for k in range(1, steps + 1):
            nxt = self._step(ctx)
            ctx = np.concatenate([ctx[:, 1:], nxt[:, None]], axis=1)
            out.append(self._to_state(nxt, t + STEP * k))
        return np.stack(out, axis=1)

    def act(
        self, observation: Mapping[str, Any], info: Mapping[str, Any] | None = None
    ) -> np.ndarray:
        """One more step of the rollout started at ``lead_step == 0`` (the env feeds the forecast
        back, so this equals :meth:`rollout` from the episode's initial context)."""
        state, times = self._observed(observation)
        k = int(np.asarray(observation["lead_step"]))
        if k == 0:
            self._state = (self._context_pcs(state[None], times), times, 0)
        if self._state is None or self._state[2] != k:
            raise RuntimeError(
                "IteratedQuadraticForecaster: episode must start at lead_step 0 and step in order"
            )
        ctx, t0, _ = self._state
        nxt = self._step(ctx)
        self._state = (np.concatenate([ctx[:, 1:], nxt[:, None]], axis=1), t0, k + 1)
        return self._to_state(nxt, t0 + STEP * (k + 1))[0]
