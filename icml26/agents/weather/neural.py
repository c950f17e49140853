"""Learned forecasters: the EMFormer-style transformer and a small ResNet, one training loop.

Both work on normalized anomalies ``z = (x - clim) / s`` (the training data's WeatherBench 2
climatology, ``s`` the anomaly standard deviation per channel), read the last ``history``
states plus forcing features of the target time (sin/cos of local solar hour and of the
fraction of the year, sin/cos latitude, the land-sea mask when the data has one), and predict
the 6-hour increment of ``z``.

Training (:class:`TrainConfig`): ``updates`` one-step updates, then, for EMFormer, accumulative
context fine-tuning: stages of rollouts of growing length (2, 4, 8 steps by default). In a
rollout each prediction is fed back, detached, into the context of the next step (the released
code's ``inp = gen.detach()``), so the model learns from the contexts it will see at test time,
and the loss averages over the rollout's steps.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from icml26.agents.weather.base import WeatherForecaster
from icml26.envs.weather.env import WeatherDataset
from icml26.envs.weather.grid import STEP, time_features
from icml26.envs.weather.metrics import latitude_weights_array
from icml26.protocol import Budget


@dataclass
class TrainConfig:
    """Hyperparameters of :class:`NeuralForecaster` training (CleanRL-style, in one place)."""

    updates: int = 800  # one-step gradient updates
    batch_size: int = 8
    lr: float = 2e-3
    weight_decay: float = 1e-4
    # "mse" (latitude-weighted), "composite" (EMFormer's sinusoidal balance w = (sin(theta) + 1) / 2,
    # theta learnable from ``theta0``) or "fixed" (the same two terms at the fixed weight w(theta0))
    loss: str = "mse"
    # 0 puts w at 1/2 where d w / d theta is largest. The release starts at -pi/2, where the gradient
    # vanishes and theta never moves (kept reachable as theta0=-1.5708 for the ablation).
    theta0: float = 0.0
    finetune_lengths: tuple[int, ...] = ()  # accumulative context fine-tuning: rollout lengths
    finetune_updates: int = 0  # updates per fine-tuning stage
    finetune_lr: float = 5e-4
    grad_clip: float = 20.0  # the released EMFormer code clips gradients at norm 20
    # torch threads while training and forecasting (restored after). These models are small:
    # one thread is as fast as two and never spins idle on a busy machine. None leaves torch's.
    num_threads: int | None = 1
    progress: bool = True
    log_every: int = 50
    extra: dict[str, Any] = field(default_factory=dict)


class NeuralForecaster(WeatherForecaster):
    """Shared machinery; subclasses build the network in :meth:`build_model`."""

    def __init__(self, history: int = 2, **config: Any) -> None:
        super().__init__()
        if history < 1:
            raise ValueError(f"history must be >= 1, got {history}")
        self.context_length = int(history)
        known = set(TrainConfig.__dataclass_fields__)
        unknown = set(config) - known
        if unknown:
            raise TypeError(
                f"{type(self).__name__}: unknown options {sorted(unknown)}; known: {sorted(known)}"
            )
        if "finetune_lengths" in config:
            config["finetune_lengths"] = tuple(int(x) for x in config["finetune_lengths"])
        self.config = TrainConfig(**config)
        if self.config.loss not in ("mse", "composite", "fixed"):
            raise ValueError(
                f"loss must be 'mse', 'composite' or 'fixed', got {self.config.loss!r}"
            )

    def build_model(self, in_ch: int, out_ch: int, grid: tuple[int, int]) -> Any:
        raise NotImplementedError

    # --------------------------------------------------------------------- features
    def _static(
        self, data_or_none: WeatherDataset | None, lat: np.ndarray, lon: np.ndarray
    ) -> np.ndarray:
        lat_r = np.deg2rad(lat)[:, None] * np.ones((1, lon.size))
        land = np.zeros_like(lat_r)
        if data_or_none is not None and "land_sea_mask" in data_or_none.data:
            land = np.asarray(data_or_none.data["land_sea_mask"].values, dtype=np.float64)
        return np.stack([np.sin(lat_r), np.cos(lat_r), land]).astype(np.float32)

    def _inputs(self, ctx: Any, tf: Any) -> Any:
        """ctx (B, h, C, H, W) normalized anomalies, tf (B, 4, W) -> network input."""
        import torch

        b, h, c, nh, nw = ctx.shape
        parts = [
            ctx.reshape(b, h * c, nh, nw),
            tf[:, :, None, :].expand(b, tf.shape[1], nh, nw),
            self._static_t.expand(b, *self._static_t.shape[1:]),
        ]
        return torch.cat(parts, dim=1)

    def _next(self, ctx: Any, tf: Any) -> Any:
        return ctx[:, -1] + self.model(self._inputs(ctx, tf))

    # --------------------------------------------------------------------- training
    def fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:  # noqa: C901
        import torch

        from icml26.agents.weather.nets import CompositeLoss, WeightedMSELoss, count_parameters

        cfg = self.config
        old_threads = torch.get_num_threads()
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        try:
            arr, times = data.array, data.times
            self.clim = data.climatology()
            n_t, n_c, n_lat, n_lon = arr.shape
            h = self.context_length
            z = np.empty(arr.shape, dtype=np.float32)
            for s in range(0, n_t, 512):
                z[s : s + 512] = arr[s : s + 512] - self.clim.at(times[s : s + 512])
            self.scale = np.sqrt((z.astype(np.float64) ** 2).mean(axis=(0, 2, 3))).astype(
                np.float32
            )
            self.scale[self.scale == 0] = 1.0
            z /= self.scale[None, :, None, None]
            self.longitude = data.longitude
            self._static_t = torch.from_numpy(self._static(data, data.latitude, data.longitude))[
                None
            ]
            zt = torch.from_numpy(z)
            tft = torch.from_numpy(time_features(times, data.longitude))
            self.model = self.build_model(h * n_c + 4 + 3, n_c, (n_lat, n_lon))
            w = torch.from_numpy(latitude_weights_array(data.latitude))
            loss_fn = (
                CompositeLoss(n_c, w, cfg.theta0, learn_balance=cfg.loss == "composite")
                if cfg.loss in ("composite", "fixed")
                else WeightedMSELoss(w)
            )
            self.loss_fn = loss_fn
            rng = np.random.default_rng([0 if self._seed is None else int(self._seed), 8])
            n_pre, n_ft = cfg.updates, cfg.finetune_updates * len(cfg.finetune_lengths)
            if budget.updates is not None and n_pre + n_ft > budget.updates:
                frac = budget.updates / (n_pre + n_ft)
                n_pre = int(n_pre * frac)
                n_ft = int(n_ft * frac)
            stages = [(1, n_pre, cfg.lr)]
            if cfg.finetune_lengths and n_ft:
                per = n_ft // len(cfg.finetune_lengths)
                stages += [(length, per, cfg.finetune_lr) for length in cfg.finetune_lengths]
            deadline = (
                None if budget.wall_clock_s is None else time.monotonic() + budget.wall_clock_s
            )
            curve: list[dict[str, float]] = []
            total = sum(n for _, n, _ in stages)
            bar = None
            if cfg.progress and total:
                from tqdm.auto import tqdm

                bar = tqdm(
                    total=total, desc=f"training {type(self).__name__}", unit="upd", leave=False
                )
            t_start = time.monotonic()
            done = 0
            for length, n_upd, lr in stages:
                if n_upd <= 0:
                    continue
                params = list(self.model.parameters()) + list(loss_fn.parameters())
                # the loss's own parameters (theta, log-variances) are not shrunk towards 0
                opt = torch.optim.AdamW(
                    [
                        {"params": list(self.model.parameters())},
                        {"params": list(loss_fn.parameters()), "weight_decay": 0.0},
                    ],
                    lr=lr,
                    weight_decay=cfg.weight_decay,
                )
                sched = torch.optim.lr_scheduler.CosineAnnealingLR(
                    opt, T_max=n_upd, eta_min=lr * 0.05
                )
                starts = np.arange(h - 1, n_t - length)
                running = 0.0
                for u in range(n_upd):
                    if deadline is not None and time.monotonic() > deadline:
                        break
                    t0 = rng.choice(starts, size=cfg.batch_size)
                    ctx = zt[torch.from_numpy(t0[:, None] + np.arange(-h + 1, 1))]
                    loss = 0.0
                    for k in range(1, length + 1):
                        pred = self._next(ctx, tft[torch.from_numpy(t0 + k)])
                        loss = loss + loss_fn(pred, zt[torch.from_numpy(t0 + k)])
                        if k < length:  # feed the (detached) prediction back as context
                            ctx = torch.cat([ctx[:, 1:], pred.detach()[:, None]], dim=1)
                    loss = loss / length
                    opt.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
                    opt.step()
                    sched.step()
                    running += float(loss.detach())
                    done += 1
                    if bar is not None:
                        bar.update(1)
                    if (u + 1) % cfg.log_every == 0:
                        curve.append(
                            {"update": done, "rollout": length, "loss": running / cfg.log_every}
                        )
                        running = 0.0
            if bar is not None:
                bar.close()
            self.model.eval()
            stats: dict[str, Any] = {
                "updates": done,
                "train_time_s": time.monotonic() - t_start,
                "parameters": count_parameters(self.model),
                "curve": curve,
                "config": {k: v for k, v in asdict(cfg).items() if k != "extra"},
            }
            if cfg.loss in ("composite", "fixed"):
                stats["composite_balance_w"] = loss_fn.balance  # type: ignore[attr-defined]
                stats["composite_theta"] = float(loss_fn.theta.detach())  # type: ignore[attr-defined]
                stats["log_variance"] = loss_fn.logvar.detach().reshape(-1).tolist()  # type: ignore[attr-defined]
            return stats
        finally:
            torch.set_num_threads(old_threads)

    # --------------------------------------------------------------------- inference
    def predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        import torch

        threads = self.config.num_threads
        if threads and torch.get_num_threads() != threads:
            old = torch.get_num_threads()
            torch.set_num_threads(threads)
            try:
                return self._predict(context, times)
            finally:
                torch.set_num_threads(old)
        return self._predict(context, times)

    def _predict(self, context: np.ndarray, times: np.ndarray) -> np.ndarray:
        import torch

        t = np.asarray(times, dtype="datetime64[ns]")
        h = self.context_length
        ctx = np.asarray(context, dtype=np.float32)[:, -h:]
        ctx_times = t[:, None] + STEP * np.arange(-h + 1, 1)[None, :]
        z = (ctx - self.clim.at(ctx_times)) / self.scale[None, None, :, None, None]
        tf = time_features(t + STEP, self.longitude)
        with torch.no_grad():
            nxt = self._next(
                torch.from_numpy(np.ascontiguousarray(z, dtype=np.float32)), torch.from_numpy(tf)
            ).numpy()
        return self.clim.at(t + STEP) + nxt * self.scale[None, :, None, None]


class EMFormerForecaster(NeuralForecaster):
    """EMFormer at CPU scale: the hourglass window transformer with the merged multi-scale
    convolution, the sinusoidal composite loss, and accumulative context fine-tuning.

    Every component has a switch for ablations: ``multiscale=False`` (no convolution on q/k/v),
    ``finetune_lengths=()`` (no accumulative context fine-tuning), ``loss="fixed"`` (the composite
    loss at the fixed weight w(theta0)) or ``loss="mse"``; ``theta0=-1.5708`` is the release's
    initialization (where theta cannot move).

    Version history: 2 -- theta starts at 0 instead of -pi/2 and the loss's parameters are
    excluded from weight decay (v1's theta never moved).

    Args (besides :class:`TrainConfig`): ``dim``, ``heads``, ``depth`` (pre, valley, post
    blocks), ``mlp_ratio``, ``multiscale`` (False drops the convolution on q/k/v).
    """

    version = "2"

    def __init__(
        self,
        history: int = 2,
        dim: int = 32,
        heads: int = 4,
        depth: tuple[int, int, int] = (1, 3, 1),
        mlp_ratio: float = 2.0,
        multiscale: bool = True,
        **config: Any,
    ) -> None:
        config.setdefault("loss", "composite")
        config.setdefault("finetune_lengths", (2, 4, 8))
        config.setdefault("finetune_updates", 60)
        super().__init__(history, **config)
        self.arch = {
            "dim": int(dim),
            "heads": int(heads),
            "depth": tuple(int(d) for d in depth),
            "mlp_ratio": float(mlp_ratio),
            "multiscale": bool(multiscale),
        }

    def build_model(self, in_ch: int, out_ch: int, grid: tuple[int, int]) -> Any:
        from icml26.agents.weather.nets import EMFormerNet

        return EMFormerNet(in_ch, out_ch, grid, **self.arch)  # type: ignore[arg-type]


class ResNetForecaster(NeuralForecaster):
    """A small ResNet trained on one-step latitude-weighted MSE (iterated at test time)."""

    def __init__(self, history: int = 2, width: int = 16, blocks: int = 3, **config: Any) -> None:
        super().__init__(history, **config)
        self.arch = {"width": int(width), "blocks": int(blocks)}

    def build_model(self, in_ch: int, out_ch: int, grid: tuple[int, int]) -> Any:
        from icml26.agents.weather.nets import ResNetNet

        return ResNetNet(in_ch, out_ch, **self.arch)
