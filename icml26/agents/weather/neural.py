"""Learned forecasters: the EMFormer-style transformer and a small ResNet, one training loop.

Both work on normalized anomalies ``z = (x - clim) / s`` (the training data's WeatherBench 2
climatology, ``s`` the anomaly standard deviation per channel), read the last ``history``
states plus forcing features of the target time (sin/cos of local solar hour and of the
fraction of the year, sin/cos latitude, the land-sea mask when the data has one), and predict
the 6-hour increment of ``z``.

Training (:class:`TrainConfig`): one-step updates, then, for EMFormer, accumulative context
fine-tuning: stages of rollouts of growing length (2, 4, 8 steps by default). In a rollout each
prediction is fed back, detached, into the context of the next step (the released code's
``inp = gen.detach()``), so the model learns from the contexts it will see at test time, and
the loss averages over the rollout's steps. By default (``updates=None``) a forecaster spends
the whole update budget it is given (``Budget.updates``; a budget ladder scales it), EMFormer
``finetune_share`` of it in the fine-tuning stages.

Validation curves: when the data come with held-out validation data (``set_validation``, which
the weather tasks call with the env's validation split), the forecaster rolls out 10 days from
``val_inits`` initializations of it ``val_points`` times during training and records the RMSE
per channel at 1, 3, 5 and 10 days (``stats["validation"]``).

``device`` puts the network on ``"cuda"``; :func:`fit_jointly` trains several seeds of one
configuration side by side (their parameters stacked, one ``torch.func.vmap`` over them): each
seed's network starts from the same initialization, sees the same batches and takes the same
optimizer steps as when it trains alone, so the result equals separate training up to
floating-point rounding (tested), at a fraction of the kernel launches on a GPU.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from icml26.agents.weather.base import WeatherForecaster
from icml26.envs.weather.env import WeatherDataset, as_weather_dataset
from icml26.envs.weather.grid import STEP, time_features
from icml26.envs.weather.metrics import latitude_weights_array
from icml26.protocol import Budget

CUDA_GRAPHS_ENV = "ICML26_WEATHER_CUDA_GRAPHS"  # "0" trains eagerly on a GPU
DEFAULT_UPDATES = 1000  # what updates=None spends when the budget does not bound updates
VAL_DAYS = (1, 3, 5, 10)  # leads of the validation curve (those within the horizon)


@dataclass
class TrainConfig:
    """Hyperparameters of :class:`NeuralForecaster` training (CleanRL-style, in one place)."""

    # one-step gradient updates; None spends the budget's updates (Budget.updates, or
    # DEFAULT_UPDATES when it sets none) minus the fine-tuning stages' share
    updates: int | None = None
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
    finetune_updates: int = 0  # updates per fine-tuning stage (when ``updates`` is an int)
    finetune_share: float = 0.2  # share of the budget spent fine-tuning (when ``updates`` is None)
    finetune_lr: float = 5e-4
    grad_clip: float = 20.0  # the released EMFormer code clips gradients at norm 20
    device: str = "cpu"  # "cpu", "cuda" or "cuda:N"
    val_points: int = 10  # validation rollouts during training (plus one before); 0: none
    val_inits: int = 16  # initializations of the validation data per rollout
    # torch threads while training and forecasting (restored after). These models are small:
    # one thread is as fast as two and never spins idle on a busy machine. None leaves torch's.
    num_threads: int | None = 1
    progress: bool = True
    log_every: int = 50
    extra: dict[str, Any] = field(default_factory=dict)

    def stages(self, budget: Budget) -> list[tuple[int, int, float]]:
        """``(rollout length, updates, learning rate)`` of each training stage."""
        n_stages = len(self.finetune_lengths)
        if self.updates is None:
            total = DEFAULT_UPDATES if budget.updates is None else int(budget.updates)
            per = int(total * self.finetune_share / n_stages) if n_stages else 0
            if n_stages and total >= 2 * n_stages:
                per = max(1, per)
            n_pre = total - per * n_stages
        else:
            n_pre, per = int(self.updates), int(self.finetune_updates) if n_stages else 0
            n_ft = per * n_stages
            if budget.updates is not None and n_pre + n_ft > budget.updates:
                frac = budget.updates / (n_pre + n_ft)
                n_pre, per = int(n_pre * frac), int(n_ft * frac) // max(n_stages, 1)
        out = [(1, n_pre, self.lr)]
        out += [(length, per, self.finetune_lr) for length in self.finetune_lengths if per > 0]
        return out


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
        if not 0.0 <= self.config.finetune_share < 1.0:
            raise ValueError(f"finetune_share must be in [0, 1), got {self.config.finetune_share}")
        dev = str(self.config.device)
        if dev != "cpu" and not dev.startswith("cuda"):
            raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {dev!r}")
        self._validation: WeatherDataset | None = None
        self.arch: dict[str, Any] = {}

    def build_model(self, in_ch: int, out_ch: int, grid: tuple[int, int]) -> Any:
        raise NotImplementedError

    def set_validation(self, data: Any) -> None:
        """Held-out data (a :class:`WeatherDataset`, env or ``xr.Dataset``) for validation
        curves during the next ``learn``; ``None`` turns them off."""
        self._validation = None if data is None else as_weather_dataset(data)

    # --------------------------------------------------------------------- features
    def _static(
        self, data_or_none: WeatherDataset | None, lat: np.ndarray, lon: np.ndarray
    ) -> np.ndarray:
        lat_r = np.deg2rad(lat)[:, None] * np.ones((1, lon.size))
        land = np.zeros_like(lat_r)
        if data_or_none is not None and "land_sea_mask" in data_or_none.data:
            lsm = data_or_none.data["land_sea_mask"].transpose("latitude", "longitude")
            land = np.asarray(lsm.values, dtype=np.float64)
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

    def _normalized(self, data: WeatherDataset) -> np.ndarray:
        """``(data - clim) / scale`` as float32, in chunks (bounded memory)."""
        arr, times = data.array, data.times
        z = np.empty(arr.shape, dtype=np.float32)
        for s in range(0, arr.shape[0], 512):
            z[s : s + 512] = arr[s : s + 512] - self.clim.at(times[s : s + 512])
        return z / self.scale[None, :, None, None]

    # --------------------------------------------------------------------- training
    def fit(self, data: WeatherDataset, budget: Budget) -> dict[str, Any]:
        return _train([self], data, budget)[0]

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
        dev = self.config.device
        with torch.no_grad():
            nxt = self._next(
                torch.from_numpy(np.ascontiguousarray(z, dtype=np.float32)).to(dev),
                torch.from_numpy(tf).to(dev),
            )
        return self.clim.at(t + STEP) + nxt.cpu().numpy() * self.scale[None, :, None, None]


def fit_jointly(
    agents: Sequence[NeuralForecaster], data: Any, budget: Budget | None = None
) -> list[dict[str, Any]]:
    """Train ``agents`` (one seed each, set by ``reset``) side by side and mark them fitted, as
    ``learn`` would one at a time; returns each one's training stats.

    Every agent must be of the same class with the same architecture and :class:`TrainConfig`,
    except that the composite loss's balance may differ between members (``loss`` "composite"
    or "fixed", and ``theta0``: a fixed member's theta gets no gradient); validation data, if
    any, must be the same object."""
    agents = list(agents)
    if not agents:
        raise ValueError("fit_jointly: no agents")
    first = agents[0]

    def shared(cfg: TrainConfig) -> dict[str, Any]:
        d = asdict(cfg)
        if cfg.loss in ("composite", "fixed"):
            d["loss"], d["theta0"] = "composite/fixed", None
        return d

    for a in agents[1:]:
        if (
            type(a) is not type(first)
            or a.arch != first.arch
            or shared(a.config) != shared(first.config)
        ):
            raise ValueError(
                "fit_jointly: every agent needs the same class, architecture and training "
                f"configuration; {type(a).__name__} {a.arch} differs from "
                f"{type(first).__name__} {first.arch} (or their TrainConfig differs)"
            )
        if a._validation is not first._validation:
            raise ValueError("fit_jointly: the agents were given different validation data")
        if a.context_length != first.context_length:
            raise ValueError("fit_jointly: the agents read different history lengths")
    members = [(a._seed, a.config.loss, a.config.theta0) for a in agents]
    if len(set(members)) != len(members):
        raise ValueError(
            f"fit_jointly: (seed, loss, theta0) repeats among {members} (reset each first)"
        )
    ds = as_weather_dataset(data)
    for a in agents:
        a.channels = ds.channels
    stats = _train(agents, ds, budget or Budget())
    for a in agents:
        a._fitted = True
    return stats


class _Members:
    """The networks (and losses) of several seeds trained side by side.

    One member calls its modules directly. Several stack their parameters (one tensor per name
    with a leading member axis) and run one module's functional call under ``torch.func.vmap``,
    so every kernel serves every member. ``step`` and ``loss`` take and return tensors with the
    member axis first in both cases."""

    def __init__(self, owners: list[NeuralForecaster], models: list[Any], losses: list[Any]):
        import torch

        self.owners, self.models, self.losses = owners, models, losses
        self.n = len(models)
        if self.n == 1:
            return
        from icml26.agents.weather.nets import WindowAttention

        def stacked(mods: list[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
            named = [dict(m.named_parameters()) for m in mods]
            params = {
                k: torch.stack([d[k].detach() for d in named]).requires_grad_(
                    any(d[k].requires_grad for d in named)
                )
                for k in named[0]
            }
            bufs = [dict(m.named_buffers()) for m in mods]
            return params, {k: torch.stack([d[k] for d in bufs]) for k in bufs[0]}

        self.m_params, self.m_bufs = stacked(models)
        self.l_params, self.l_bufs = stacked(losses)
        self.m_tmpl, self.l_tmpl = copy.deepcopy(models[0]), copy.deepcopy(losses[0])
        for mod in self.m_tmpl.modules():
            if isinstance(mod, WindowAttention):
                mod.explicit = True
        owner = owners[0]

        def one_step(p: Any, b: Any, ctx: Any, tf: Any) -> Any:
            out = torch.func.functional_call(self.m_tmpl, (p, b), (owner._inputs(ctx, tf),))
            return ctx[:, -1] + out

        def one_loss(p: Any, b: Any, pred: Any, y: Any) -> Any:
            return torch.func.functional_call(self.l_tmpl, (p, b), (pred, y))

        self._step = torch.func.vmap(one_step)
        self._loss = torch.func.vmap(one_loss)

    def model_params(self) -> list[Any]:
        if self.n == 1:
            return list(self.models[0].parameters())
        return list(self.m_params.values())

    def loss_params(self) -> list[Any]:
        if self.n == 1:
            return list(self.losses[0].parameters())
        return list(self.l_params.values())

    def step(self, ctx: Any, tf: Any) -> Any:
        """ctx (S, B, h, C, H, W), tf (S, B, 4, W) -> the next state (S, B, C, H, W)."""
        if self.n == 1:
            return self.owners[0]._next(ctx[0], tf[0])[None]
        return self._step(self.m_params, self.m_bufs, ctx, tf)

    def loss(self, pred: Any, target: Any) -> Any:
        """Each member's loss, shape (S,)."""
        if self.n == 1:
            return self.losses[0](pred[0], target[0])[None]
        return self._loss(self.l_params, self.l_bufs, pred, target)

    def freeze_fixed_balance(self) -> None:
        """Zero the theta gradient of members whose composite-loss balance is fixed (stacked with
        learning members, their theta must not move: Adam then steps it by exactly 0)."""
        if self.n == 1 or "theta" not in self.l_params:
            return
        import torch

        theta = self.l_params["theta"]
        if theta.grad is None:
            return
        if not hasattr(self, "_learns_balance"):
            learns = [float(lf.theta.requires_grad) for lf in self.losses]
            self._learns_balance = torch.tensor(learns, device=theta.device)
        theta.grad.mul_(self._learns_balance)  # no host sync (CUDA-graph safe)

    def clip(self, max_norm: float) -> None:
        """Clip each member's gradient (network and loss together) to norm ``max_norm``, as
        ``torch.nn.utils.clip_grad_norm_`` does for one."""
        import torch

        params = [p for p in self.model_params() + self.loss_params() if p.grad is not None]
        if self.n == 1:
            torch.nn.utils.clip_grad_norm_(params, max_norm)
            return
        flat = torch.cat([p.grad.detach().reshape(self.n, -1) for p in params], dim=1)
        coef = torch.clamp(max_norm / (torch.linalg.vector_norm(flat, dim=1) + 1e-6), max=1.0)
        for p in params:
            p.grad.detach().mul_(coef.reshape(-1, *([1] * (p.dim() - 1))))

    def unstack(self) -> None:
        """Write the stacked parameters back into each member's own modules."""
        if self.n == 1:
            return
        import torch

        with torch.no_grad():
            for i, (m, lf) in enumerate(zip(self.models, self.losses, strict=True)):
                for k, p in m.named_parameters():
                    p.copy_(self.m_params[k][i])
                for k, p in lf.named_parameters():
                    p.copy_(self.l_params[k][i])


class _GraphedStep:
    """An update captured once as a CUDA graph and replayed (the host then only copies the
    batch's start indices): the first ``warmup`` updates run eagerly on a side stream, as
    ``torch.cuda.graphs`` requires, and are real updates. If capture fails the step stays
    eager (``graph`` is None); the captured step does what the eager one does, from the same
    kernels (a self-check in ``experiments/weather_ladder.py`` compares the two)."""

    warmup = 3

    def __init__(self, body: Any, opt: Any, n_mem: int, batch: int, device: str) -> None:
        import torch

        self.body, self.opt, self.calls = body, opt, 0
        self.t0 = torch.zeros((n_mem, batch), dtype=torch.long, device=device)
        self.graph: Any = None
        self.failed: str | None = None
        self.side = torch.cuda.Stream(device=device)

    def __call__(self, t0: np.ndarray) -> Any:
        import torch

        self.t0.copy_(torch.from_numpy(t0))
        if self.graph is not None:
            self.graph.replay()
            return self.loss.clone()
        if self.calls < self.warmup or self.failed is not None:
            self.calls += 1
            self.side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.side):
                self.opt.zero_grad(set_to_none=True)
                loss = self.body(self.t0)
            torch.cuda.current_stream().wait_stream(self.side)
            return loss
        try:
            graph = torch.cuda.CUDAGraph()
            self.opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                self.loss = self.body(self.t0)
            self.graph = graph
        except Exception as e:  # stay eager; the step was not taken during capture
            self.failed = repr(e)
            torch.cuda.synchronize()
            return self(t0)
        self.graph.replay()
        return self.loss.clone()


def _validation_setup(
    owner: NeuralForecaster, val: WeatherDataset, lead: int, n_inits: int, device: str
) -> dict[str, Any]:
    """Normalized validation data, initialization indices and forcing features on ``device``."""
    import torch

    if val.channels != owner.channels:
        raise ValueError(
            f"validation data channels {val.channels} differ from the training data's "
            f"{owner.channels}"
        )
    z = owner._normalized(val)
    h = owner.context_length
    last = z.shape[0] - lead - 1
    if last < h - 1:
        raise ValueError(f"validation data hold {z.shape[0]} states, too few for {lead} leads")
    idx = np.unique(np.round(np.linspace(h - 1, last, n_inits)).astype(int))
    return {
        "z": torch.from_numpy(z).to(device),
        "tf": torch.from_numpy(time_features(val.times, owner.longitude)).to(device),
        "idx": idx,
        "h": h,
        "lead": lead,
        "days": [d for d in VAL_DAYS if 4 * d <= lead],
    }


def _validate(members: _Members, v: dict[str, Any], w: Any, scale: np.ndarray) -> list[Any]:
    """One validation rollout of every member: RMSE (physical units) per channel at each of
    ``v["days"]``; a member whose rollout overflows gets ``None`` from there on."""
    import torch

    s, idx, h = members.n, v["idx"], v["h"]
    ctx = v["z"][torch.from_numpy(idx[:, None] + np.arange(-h + 1, 1)).to(v["z"].device)]
    ctx = ctx[None].expand(s, *ctx.shape).contiguous()
    want = {4 * d: d for d in v["days"]}
    out: list[dict[int, Any]] = [{} for _ in range(s)]
    with torch.no_grad():
        for k in range(1, v["lead"] + 1):
            tf = v["tf"][torch.from_numpy(idx + k).to(ctx.device)]
            pred = members.step(ctx, tf[None].expand(s, *tf.shape))
            if k in want:
                err = pred - v["z"][torch.from_numpy(idx + k).to(ctx.device)][None]
                mse = (w * err.double() ** 2).mean(dim=(-2, -1)).mean(dim=1)  # (S, C)
                rmse = (torch.sqrt(mse).cpu().numpy() * scale[None]).tolist()
                for i in range(s):
                    out[i][want[k]] = rmse[i]
            ctx = torch.cat([ctx[:, :, 1:], pred[:, :, None]], dim=2)
    return [
        {
            ch: [None if not np.isfinite(o[d][c]) else float(f"{o[d][c]:.6g}") for d in v["days"]]
            for c, ch in enumerate(members.owners[0].channels or ())
        }
        for o in out
    ]


def _train(  # noqa: C901
    owners: list[NeuralForecaster], data: WeatherDataset, budget: Budget
) -> list[dict[str, Any]]:
    """The training loop of one or several members (see :class:`_Members`)."""
    import torch

    from icml26.agents.weather.nets import CompositeLoss, WeightedMSELoss, count_parameters

    lead_cfg = owners[0]
    cfg = lead_cfg.config
    dev = cfg.device
    old_threads = torch.get_num_threads()
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    try:
        times = data.times
        n_t, n_c, n_lat, n_lon = data.array.shape
        h = lead_cfg.context_length
        clim = data.climatology()
        anomaly = np.empty(data.array.shape, dtype=np.float32)
        for s in range(0, n_t, 512):
            anomaly[s : s + 512] = data.array[s : s + 512] - clim.at(times[s : s + 512])
        scale = np.sqrt((anomaly.astype(np.float64) ** 2).mean(axis=(0, 2, 3))).astype(np.float32)
        scale[scale == 0] = 1.0
        del anomaly
        static = torch.from_numpy(lead_cfg._static(data, data.latitude, data.longitude))[None]
        for o in owners:
            o.clim, o.scale, o.longitude, o.channels = clim, scale, data.longitude, data.channels
            o._static_t = static.to(dev)
        zt = torch.from_numpy(lead_cfg._normalized(data)).to(dev)
        tft = torch.from_numpy(time_features(times, data.longitude)).to(dev)
        w_lat = torch.from_numpy(latitude_weights_array(data.latitude))
        models, losses = [], []
        for o in owners:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0 if o._seed is None else int(o._seed))
                o.model = o.build_model(h * n_c + 4 + 3, n_c, (n_lat, n_lon))
            o.model.to(dev)
            oc = o.config
            o.loss_fn = (
                CompositeLoss(n_c, w_lat, oc.theta0, learn_balance=oc.loss == "composite")
                if oc.loss in ("composite", "fixed")
                else WeightedMSELoss(w_lat)
            ).to(dev)
            models.append(o.model)
            losses.append(o.loss_fn)
        members = _Members(owners, models, losses)
        n_mem = members.n
        rngs = [np.random.default_rng([0 if o._seed is None else int(o._seed), 8]) for o in owners]
        stages = cfg.stages(budget)
        val = None
        if lead_cfg._validation is not None and cfg.val_points > 0:
            val = _validation_setup(
                lead_cfg, lead_cfg._validation, lead_cfg._validation.lead_steps, cfg.val_inits, dev
            )
            w_val = w_lat.to(dev).reshape(1, 1, 1, -1, 1).double()
        total = sum(n for _, n, _ in stages)
        val_at = set()
        if val is not None:
            val_at = {int(round(total * (i + 1) / cfg.val_points)) for i in range(cfg.val_points)}
        val_curve: list[list[dict[str, Any]]] = [[] for _ in owners]

        def validate(done: int) -> None:
            assert val is not None
            for i, r in enumerate(_validate(members, val, w_val, scale)):
                val_curve[i].append({"update": done, "rmse": r})

        deadline = None if budget.wall_clock_s is None else time.monotonic() + budget.wall_clock_s
        curves: list[list[dict[str, float]]] = [[] for _ in owners]
        bar = None
        if cfg.progress and total:
            from tqdm.auto import tqdm

            name = type(lead_cfg).__name__ + (f" x{n_mem}" if n_mem > 1 else "")
            bar = tqdm(total=total, desc=f"training {name}", unit="upd", leave=False)
        t_start = time.monotonic()
        done = 0
        if val is not None:
            validate(0)
        graphs = dev.startswith("cuda") and os.environ.get(CUDA_GRAPHS_ENV, "1") != "0"
        graphed_stages = 0
        ar_h = torch.arange(-h + 1, 1, device=dev)
        for length, n_upd, lr in stages:
            if n_upd <= 0:
                continue
            # the loss's own parameters (theta, log-variances) are not shrunk towards 0
            groups = [
                {"params": members.model_params()},
                {"params": members.loss_params(), "weight_decay": 0.0},
            ]
            if graphs:  # the learning rate lives on the device, so a captured step reads it
                opt = torch.optim.AdamW(
                    groups,
                    lr=torch.tensor(lr, device=dev),
                    weight_decay=cfg.weight_decay,
                    capturable=True,
                )
                shadow = torch.optim.SGD([torch.zeros(1)], lr=lr)  # the same schedule, on host
                sched = torch.optim.lr_scheduler.CosineAnnealingLR(
                    shadow, T_max=n_upd, eta_min=lr * 0.05
                )
            else:
                opt = torch.optim.AdamW(groups, lr=lr, weight_decay=cfg.weight_decay)
                sched = torch.optim.lr_scheduler.CosineAnnealingLR(
                    opt, T_max=n_upd, eta_min=lr * 0.05
                )
            starts = np.arange(h - 1, n_t - length)
            running = torch.zeros(n_mem, dtype=torch.float64, device=dev)

            def body(t0_dev: Any, length: int = length, opt: Any = opt) -> Any:
                """One update from the batch starting at ``t0_dev`` (S, B) on the device."""
                ctx = zt[t0_dev[..., None] + ar_h]
                loss = torch.zeros(n_mem, device=dev)
                for k in range(1, length + 1):
                    tk = t0_dev + k
                    pred = members.step(ctx, tft[tk])
                    loss = loss + members.loss(pred, zt[tk])
                    if k < length:  # feed the (detached) prediction back as context
                        ctx = torch.cat([ctx[:, :, 1:], pred.detach()[:, :, None]], dim=2)
                loss = loss / length
                loss.sum().backward()
                members.freeze_fixed_balance()
                members.clip(cfg.grad_clip)
                opt.step()
                return loss.detach()

            step = _GraphedStep(body, opt, n_mem, cfg.batch_size, dev) if graphs else None
            for u in range(n_upd):
                if deadline is not None and time.monotonic() > deadline:
                    break
                t0 = np.stack([r.choice(starts, size=cfg.batch_size) for r in rngs])  # (S, B)
                if step is None:
                    opt.zero_grad()
                    loss = body(torch.from_numpy(t0).to(dev))
                    sched.step()
                else:
                    opt.param_groups[0]["lr"].fill_(sched.get_last_lr()[0])
                    opt.param_groups[1]["lr"].fill_(sched.get_last_lr()[0])
                    loss = step(t0)
                    sched.step()
                running += loss
                done += 1
                if bar is not None:
                    bar.update(1)
                if (u + 1) % cfg.log_every == 0:
                    for i, v in enumerate((running / cfg.log_every).tolist()):
                        curves[i].append({"update": done, "rollout": length, "loss": v})
                    running.zero_()
                if done in val_at:
                    validate(done)
            if step is not None and step.graph is not None:
                graphed_stages += 1
        if bar is not None:
            bar.close()
        members.unstack()
        elapsed = time.monotonic() - t_start
        out = []
        for i, o in enumerate(owners):
            o.model.eval()
            stats: dict[str, Any] = {
                "updates": done,
                "train_time_s": elapsed,
                "parameters": count_parameters(o.model),
                "curve": curves[i],
                "config": {k: v for k, v in asdict(cfg).items() if k != "extra"},
                "stages": [list(st) for st in stages],
            }
            if n_mem > 1:
                stats["trained_jointly_with_seeds"] = [x._seed for x in owners]
            if graphs:
                stats["cuda_graph_stages"] = graphed_stages
            if val is not None:
                stats["validation"] = {
                    "days": val["days"],
                    "inits": int(len(val["idx"])),
                    "points": val_curve[i],
                }
            stats["config"].update(loss=o.config.loss, theta0=o.config.theta0)
            if o.config.loss in ("composite", "fixed"):
                lf: Any = o.loss_fn
                stats["composite_balance_w"] = lf.balance
                stats["composite_theta"] = float(lf.theta.detach())
                stats["log_variance"] = lf.logvar.detach().reshape(-1).tolist()
            out.append(stats)
        return out
    finally:
        torch.set_num_threads(old_threads)


class EMFormerForecaster(NeuralForecaster):
    """EMFormer at CPU scale: the hourglass window transformer with the merged multi-scale
    convolution, the sinusoidal composite loss, and accumulative context fine-tuning.

    Every component has a switch for ablations: ``multiscale=False`` (no convolution on q/k/v),
    ``finetune_lengths=()`` (no accumulative context fine-tuning), ``loss="fixed"`` (the composite
    loss at the fixed weight w(theta0)) or ``loss="mse"``; ``theta0=-1.5708`` is the release's
    initialization (where theta cannot move).

    Version history: 2 -- theta starts at 0 instead of -pi/2 and the loss's parameters are
    excluded from weight decay (v1's theta never moved). 3 -- by default (``updates=None``) it
    spends the whole update budget (80% one-step, ``finetune_share`` = 20% in the fine-tuning
    stages; v2: 800 + 3 x 60 updates whatever the budget), seeds its initialization itself,
    records validation curves when the task gives validation data, and runs on ``device``.

    Args (besides :class:`TrainConfig`): ``dim``, ``heads``, ``depth`` (pre, valley, post
    blocks), ``mlp_ratio``, ``multiscale`` (False drops the convolution on q/k/v).
    """

    version = "3"

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
    """A small ResNet trained on one-step latitude-weighted MSE (iterated at test time).

    Version history: 2 -- by default (``updates=None``) it spends the whole update budget (v1:
    800 updates whatever the budget); as EMFormer v3 otherwise (seeded initialization,
    validation curves, ``device``).
    """

    version = "2"

    def __init__(self, history: int = 2, width: int = 16, blocks: int = 3, **config: Any) -> None:
        super().__init__(history, **config)
        self.arch = {"width": int(width), "blocks": int(blocks)}

    def build_model(self, in_ch: int, out_ch: int, grid: tuple[int, int]) -> Any:
        from icml26.agents.weather.nets import ResNetNet

        return ResNetNet(in_ch, out_ch, **self.arch)
