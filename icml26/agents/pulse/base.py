"""Shared machinery of the pulse representation learners: config, data, training loop, encode.

Every agent pretrains the same :class:`~icml26.agents.pulse.encoder.TSEncoder` with its own
objective (:meth:`RepresentationLearner.loss`), then ``act(windows) -> embeddings`` is the
pooled encoder output of the standardized windows (per-channel mean and sd of the pretraining
windows), zero-padded to the env's embedding width.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from icml26.envs.pulse.simulator import PhysioData
from icml26.protocol import Budget

__all__ = ["SSLConfig", "RepresentationLearner", "as_physio_data"]


@dataclass
class SSLConfig:
    """Hyperparameters shared by every pulse agent (each method adds its own fields)."""

    updates: int | None = None
    """gradient updates; None takes the task budget's ``updates`` (so budget ladders move it)"""
    batch_size: int = 32
    """windows per update (pairs count as one; the release's base batch size)"""
    lr: float = 1e-3
    """peak learning rate of the one-cycle schedule (the release's 1e-3)"""
    weight_decay: float = 1e-5
    """AdamW weight decay (the release's 1e-5)"""
    grad_clip: float = 5.0
    """gradient value clip (the release clips values at 5)"""
    hidden: int = 32
    """encoder width"""
    depth: int = 6
    """encoder residual blocks (dilations 1..2^(depth-1))"""
    emb_dim: int = 64
    """representation width"""
    num_threads: int | None = 1
    """torch threads while training and encoding (restored after); None leaves torch's"""
    log_every: int = 50
    """updates between entries of the training curve"""
    progress: bool = False
    """tqdm bar over the updates"""


def as_physio_data(data: Any) -> PhysioData:
    """The pretraining data from what ``learn`` received: a PhysioData, or an env whose
    ``unwrapped.pretraining_data`` is one."""
    if isinstance(data, PhysioData):
        return data
    inner = getattr(getattr(data, "unwrapped", data), "pretraining_data", None)
    if isinstance(inner, PhysioData):
        return inner
    raise TypeError(
        f"pulse agents learn from icml26.envs.pulse.PhysioData (recordings x windows x channels x "
        f"samples), got {type(data).__name__}"
    )


class RepresentationLearner:
    """Base class: subclasses set ``Config`` and implement :meth:`build` and :meth:`loss`."""

    Config: type[SSLConfig] = SSLConfig
    version = "0"
    uses_labels = False

    def __init__(self, **config: Any) -> None:
        known = {f.name for f in dataclasses.fields(self.Config)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}: unknown options {unknown}; known: {sorted(known)}"
            )
        self.config = self.Config(**config)
        self.encoder: Any = None
        self.mean: np.ndarray | None = None
        self.sd: np.ndarray | None = None
        self._seed = 0
        self._width: int | None = None
        self.rng = np.random.default_rng(0)
        # called as checkpoint(update) after every ``log_every`` updates (e.g. to probe the
        # encoder during training); None by default
        self.checkpoint: Any = None
        self.device: Any = "cpu"

    # ------------------------------------------------------------------ protocol
    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self._seed = int(seed)
            self.rng = np.random.default_rng(self._seed)

    def bind(self, observation_space: Any, action_space: Any) -> None:
        shape = getattr(action_space, "shape", None)
        if shape is not None and len(shape) == 2:
            self._width = int(shape[1])

    def learn(self, data: Any, budget: Budget) -> dict[str, Any]:
        import torch

        from icml26.agents.pulse.encoder import TSEncoder, count_parameters

        cfg = self.config
        d = as_physio_data(data)
        if self.uses_labels and np.any(d.labels < 0):
            raise ValueError(
                f"{type(self).__name__} trains on labels; the pretraining data has none"
            )
        updates = cfg.updates if cfg.updates is not None else budget.updates
        if updates is None:
            raise ValueError(f"{type(self).__name__}: set `updates` or give a budget with updates")
        old = torch.get_num_threads()
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        try:
            torch.manual_seed(self._seed)
            # an execution detail, not a hyperparameter (kept out of the trial key): the
            # device-batch script sets it to "cuda"; CUDA kernels are not bit-reproducible
            self.device = torch.device(os.environ.get("ICML26_TORCH_DEVICE", "cpu"))
            self.rng = np.random.default_rng(self._seed)
            x = d.windows.astype(np.float32)
            self.mean = x.mean(axis=(0, 1, 3)).astype(np.float32)
            self.sd = (x.std(axis=(0, 1, 3)) + 1e-6).astype(np.float32)
            self.data = d
            self._x = self.tensor((x - self.mean[:, None]) / self.sd[:, None])
            self._labels = self.tensor(d.labels)
            self.encoder = TSEncoder(x.shape[2], cfg.hidden, cfg.emb_dim, cfg.depth)
            heads = self.build(x.shape[2], x.shape[3], len(d.class_names))
            self.encoder.to(self.device)
            for h in heads:
                h.to(self.device)
            params = list(self.encoder.parameters()) + [p for h in heads for p in h.parameters()]
            curve: list[dict[str, float]] = []
            t0 = time.perf_counter()
            if updates > 0 and params:
                # the release's base trainer: AdamW (weight decay 1e-5) with a one-cycle schedule
                # over the whole budget (30% warm-up, cosine annealing), for every method
                opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
                sched = torch.optim.lr_scheduler.OneCycleLR(
                    opt, max_lr=cfg.lr, total_steps=int(updates)
                )
                bar = range(int(updates))
                if cfg.progress:
                    from tqdm.auto import tqdm

                    bar = tqdm(bar, desc=type(self).__name__, leave=False)
                self.encoder.train()
                for h in heads:
                    h.train()
                running = 0.0
                for step in bar:
                    loss = self.loss()
                    opt.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_value_(params, cfg.grad_clip)
                    opt.step()
                    sched.step()
                    running += float(loss.detach())
                    if (step + 1) % cfg.log_every == 0 or step + 1 == updates:
                        n = (step % cfg.log_every) + 1
                        curve.append({"update": step + 1, "loss": running / n})
                        running = 0.0
                        if self.checkpoint is not None:
                            self.encoder.eval()
                            self.checkpoint(step + 1)
                            self.encoder.train()
            self.encoder.eval()
            for h in heads:
                h.eval()
            return {
                "updates": int(updates),
                "device": str(self.device),
                "train_seconds": time.perf_counter() - t0,
                "encoder_parameters": count_parameters(self.encoder),
                "head_parameters": sum(count_parameters(h) for h in heads),
                "final_loss": curve[-1]["loss"] if curve else None,
                "curve": curve,
            }
        finally:
            torch.set_num_threads(old)
            self._x = None

    def act(self, observation: Any, info: Any = None) -> np.ndarray:
        z = self.encode(np.asarray(observation, dtype=np.float32))
        width = self._width or z.shape[1]
        if z.shape[1] > width:
            raise ValueError(
                f"{type(self).__name__}: emb_dim {z.shape[1]} exceeds the env's embedding_dim {width}"
            )
        out = np.zeros((z.shape[0], width), dtype=np.float32)
        out[:, : z.shape[1]] = z
        return out

    def encode(self, windows: np.ndarray, batch: int = 512) -> np.ndarray:
        """Pooled embeddings (n, emb_dim) of windows (n, channels, samples)."""
        import torch

        if self.encoder is None or self.mean is None or self.sd is None:
            raise RuntimeError(f"{type(self).__name__}: call learn() before act()/encode()")
        if windows.ndim != 3 or windows.shape[1] != self.mean.size:
            raise ValueError(
                f"{type(self).__name__}: expected windows (n, {self.mean.size}, samples), got {windows.shape}"
            )
        old = torch.get_num_threads()
        if self.config.num_threads:
            torch.set_num_threads(self.config.num_threads)
        try:
            x = (windows - self.mean[:, None]) / self.sd[:, None]
            out = []
            with torch.no_grad():
                for i in range(0, x.shape[0], batch):
                    out.append(
                        self.encoder(self.tensor(np.ascontiguousarray(x[i : i + batch])))[0]
                        .cpu()
                        .numpy()
                    )
            return np.concatenate(out).astype(np.float32)
        finally:
            torch.set_num_threads(old)

    # ------------------------------------------------------------------ data
    def sample_windows(self, n: int) -> Any:
        """n standardized windows (n, C, T) drawn uniformly from the pretraining pool."""

        rec = self.rng.integers(0, self._x.shape[0], size=n)
        win = self.rng.integers(0, self._x.shape[1], size=n)
        return self._x[self.tensor(rec), self.tensor(win)], rec

    def sample_pairs(self, n: int) -> tuple[Any, Any]:
        """n pairs of *different* windows of the same recording: (A (n, C, T), B (n, C, T))."""

        w = self._x.shape[1]
        if w < 2:
            raise ValueError("pairs of windows need recordings with >= 2 windows")
        rec = self.tensor(self.rng.integers(0, self._x.shape[0], size=n))
        a = self.rng.integers(0, w, size=n)
        b = (a + self.rng.integers(1, w, size=n)) % w
        return self._x[rec, self.tensor(a)], self._x[rec, self.tensor(b)]

    def tensor(self, array: Any) -> Any:
        """A numpy array as a tensor on the training device."""
        import torch

        return torch.as_tensor(np.asarray(array)).to(self.device)

    # ------------------------------------------------------------------ subclass hooks
    def build(self, channels: int, length: int, n_classes: int) -> list[Any]:
        """Create the objective's modules (beside ``self.encoder``); return them."""
        return []

    def loss(self) -> Any:
        """One minibatch loss (a scalar tensor)."""
        raise NotImplementedError
