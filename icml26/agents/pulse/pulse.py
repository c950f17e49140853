"""PULSE: cross-reconstruction pretraining (Chen et al., ICML 2026), at CPU scale.

Per update (the released trainer, ``trainers/pulse.py``, on the shared small encoder):

1. the *source* window's pooled encoder output ``c`` (the representation) is the decoder's
   constant input;
2. the *target* window's unpooled features give a coarse time-varying channel ``tv``: a conv to
   ``tv_dim`` channels, max-pooled to ``T // pool_denom`` values and repeated back to length T;
3. an initial-condition encoder (a local conv on the raw target window) read at a start index
   ``s`` gives the GRU's first-layer initial state;
4. a GRU driven by ``[c, tv shifted by s]`` (dropout 0.1) rolls out and an MLP maps its states
   to the channels; the loss is the masked MSE between the rollout and ``target[s+1:]``
   (:func:`rollout_mse`), averaged as 0.5 (mean of ``n_init_samples`` passes with
   ``s ~ U[0, T - right_boundary)`` + the pass with ``s = 0``).

``pairing="window"`` (registered as ``pulse``, the paper's objective as released): source =
target, the within-window relaxation. ``pairing="recording"`` (``pulse-cross``): source and
target are *different* windows of one recording -- the cross-reconstruction of the theory
(docs/methods/pulse.md), which needs no labels when recordings have several windows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from icml26.agents.pulse.base import RepresentationLearner, SSLConfig
from icml26.agents.pulse.encoder import InitialCondition

__all__ = ["PULSE", "PULSEConfig", "pulse_objective", "rollout_mse", "rollout_targets"]


def rollout_targets(
    target: torch.Tensor, start: torch.Tensor, steps: int, stride: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """The values at the positions a rollout from each start index visits.

    target (B, T, C), start (B,) -> (values (B, steps, C), valid (B, steps)): step k of window b
    is ``target[b, start_b + 1 + k * stride]``, valid while that index is < T.
    """
    T = target.shape[1]
    idx = start[:, None] + 1 + stride * torch.arange(steps, device=start.device)[None, :]
    valid = idx < T
    gathered = torch.gather(
        target, 1, idx.clamp(max=T - 1)[:, :, None].expand(-1, -1, target.shape[2])
    )
    return gathered, valid


def rollout_mse(pred: torch.Tensor, target: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """Masked MSE of a rollout: mean over valid (window, step, channel) entries of
    ``(pred[b, k] - target[b, start_b + 1 + k])^2``; pred (B, steps, C), target (B, T, C).

    (The release multiplies both by the mask and averages over every entry, masked ones
    included; here the mean is over the valid entries only, so windows with late starts do not
    dilute the loss.)
    """
    tgt, valid = rollout_targets(target, start, pred.shape[1])
    err = ((pred - tgt) ** 2).sum(dim=2) * valid
    return err.sum() / (valid.sum() * pred.shape[2]).clamp(min=1)


def pulse_objective(pred: torch.Tensor, target: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
    """The release's loss over k rollouts of B windows, stacked pass by pass: pred (k B, steps,
    C), target (B, T, C), start (k B,) whose first B entries are 0. Returns
    ``0.5 * (L_0 + mean_{j >= 1} L_j)`` with ``L_j`` the :func:`rollout_mse` of pass j (just
    ``L_0`` when k = 1)."""
    B = target.shape[0]
    k = pred.shape[0] // B
    losses = [
        rollout_mse(pred[j * B : (j + 1) * B], target, start[j * B : (j + 1) * B]) for j in range(k)
    ]
    if k == 1:
        return losses[0]
    return 0.5 * (losses[0] + sum(losses[1:]) / (k - 1))


@dataclass
class PULSEConfig(SSLConfig):
    pairing: str = "window"
    """'window' (the release's within-window relaxation) or 'recording' (cross-reconstruction)"""
    gru_hidden: int = 64
    """decoder GRU width (the release's 64)"""
    gru_layers: int = 2
    """decoder GRU layers (the release's 2)"""
    init_hidden: int = 64
    """initial-condition conv width"""
    init_kernel: int = 7
    """initial-condition conv kernel (receptive field kernel + (kernel - 1) * dilation)"""
    init_dilation: int = 2
    tv_dim: int = 1
    """time-varying channel width (the release's 1)"""
    pool_denom: int = 128
    """tv is max-pooled to T // pool_denom values (2 for 4-s windows at 64 Hz)"""
    n_init_samples: int = 2
    """rollouts from random start indices per update, besides the one from s = 0"""
    right_boundary: int = 128
    """random starts fall in [0, T - right_boundary): at least half the window is rolled out
    (the release's synthetic config: 50 of 100 samples)"""
    dropout: float = 0.1
    decode_stride: int = 2
    """samples each GRU step emits (the release: 1). 2 halves the rollout's cost on CPU; the
    GRU then runs at 32 Hz and its readout maps each state to the next two samples"""


class _Decoder(nn.Module):
    def __init__(
        self, emb: int, tv_dim: int, hidden: int, layers: int, channels: int, stride: int
    ) -> None:
        super().__init__()
        self.gru = nn.GRU(emb + tv_dim, hidden, num_layers=layers, batch_first=True)
        self.out = nn.Sequential(
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, channels * stride)
        )
        self.layers, self.channels, self.stride = layers, channels, stride

    def forward(self, inputs: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        """inputs (B, steps, in), h0 (B, hidden) -> (B, steps * stride, channels)."""
        h = torch.cat([h0[None], h0.new_zeros(self.layers - 1, *h0.shape)], dim=0)
        states, _ = self.gru(inputs, h.contiguous())
        B, steps, _ = states.shape
        return self.out(states).reshape(B, steps * self.stride, self.channels)


class PULSE(RepresentationLearner):
    """PULSE (``pairing="window"``) and its cross-window form (``pairing="recording"``)."""

    Config = PULSEConfig
    config: PULSEConfig

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        if self.config.pairing not in ("window", "recording"):
            raise ValueError(
                f"PULSE: pairing must be 'window' or 'recording', got {self.config.pairing!r}"
            )

    def build(self, channels: int, length: int, n_classes: int) -> list[Any]:
        c = self.config
        if length - c.right_boundary < 1:
            raise ValueError(
                f"PULSE: right_boundary {c.right_boundary} leaves no start index in {length} samples"
            )
        self.init = InitialCondition(
            channels, c.init_hidden, c.gru_hidden, c.init_kernel, c.init_dilation
        )
        self.tv = nn.Conv1d(c.emb_dim, c.tv_dim, 3, padding=1) if c.tv_dim else None
        self.decoder = _Decoder(
            c.emb_dim, c.tv_dim, c.gru_hidden, c.gru_layers, channels, c.decode_stride
        )
        self.drop = nn.Dropout(c.dropout)
        self.length = length
        return [m for m in (self.init, self.tv, self.decoder) if m is not None]

    def _tv(self, feats: torch.Tensor) -> torch.Tensor | None:
        """Coarse time-varying channel (B, T, tv_dim) from unpooled features (B, emb, T)."""
        if self.tv is None:
            return None
        T = feats.shape[2]
        pooled = nn.functional.adaptive_max_pool1d(
            self.tv(feats), max(1, T // self.config.pool_denom)
        )
        return nn.functional.interpolate(pooled, size=T, mode="nearest").transpose(1, 2)

    def reconstruct(
        self,
        context: torch.Tensor,
        states: torch.Tensor,
        tv: torch.Tensor | None,
        start: torch.Tensor,
    ) -> torch.Tensor:
        """Rollout (B, steps * stride, C) from ``start`` driven by ``context`` (B, emb), from the
        target's initial-condition states (B, hidden, T) and time-varying channel (B, T, tv)."""
        T, stride = states.shape[2], self.config.decode_stride
        steps = -(-int(T - 1 - start.min()) // stride)
        inputs = context[:, None, :].expand(-1, steps, -1)
        if tv is not None:
            shifted, _ = rollout_targets(tv, start, steps, stride)
            inputs = torch.cat([inputs, shifted], dim=2)
        h0 = states[torch.arange(states.shape[0], device=start.device), :, start]
        return self.decoder(self.drop(inputs), h0)

    def loss(self) -> torch.Tensor:
        c = self.config
        if c.pairing == "recording":
            source, target = self.sample_pairs(c.batch_size)
            context, _ = self.encoder(source)
            _, feats = self.encoder(target)
        else:
            target, _ = self.sample_windows(c.batch_size)
            context, feats = self.encoder(target)
        B, T = target.shape[0], target.shape[2]
        states, tv = self.init(target), self._tv(feats)
        # one rollout from s = 0 and n_init_samples from random starts, batched in one GRU call
        starts = [torch.zeros(B, dtype=torch.long, device=target.device)] + [
            self.tensor(self.rng.integers(0, T - c.right_boundary, size=B))
            for _ in range(c.n_init_samples)
        ]
        k = len(starts)
        start = torch.cat(starts)
        pred = self.reconstruct(
            context.repeat(k, 1),
            states.repeat(k, 1, 1),
            None if tv is None else tv.repeat(k, 1, 1),
            start,
        )
        return pulse_objective(pred, target.transpose(1, 2), start)
