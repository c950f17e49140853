"""The small time-series encoder every pulse agent shares (torch).

After the PULSE release's ``TSEncoder`` (itself from REBAR / TS2Vec): a 1x1 input projection,
``depth`` residual blocks of two dilated same-padded convolutions (kernel 3, dilation 2^i,
GELU before each), a 1x1 projection to ``emb_dim``, LayerNorm over the embedding, and
max-pooling over time. Scaled down for CPU: hidden 32, depth 6 (receptive field 253 samples,
the whole 4-s window at 64 Hz), emb_dim 64 -- about 38k parameters instead of ~0.6M.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["TSEncoder", "ConvBlock", "InitialCondition", "count_parameters"]


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


class ConvBlock(nn.Module):
    """x + conv(gelu(conv(gelu(x)))) with dilated same padding."""

    def __init__(self, channels: int, kernel: int, dilation: int) -> None:
        super().__init__()
        pad = (kernel - 1) * dilation // 2
        self.conv1 = nn.Conv1d(channels, channels, kernel, padding=pad, dilation=dilation)
        self.conv2 = nn.Conv1d(channels, channels, kernel, padding=pad, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(nn.functional.gelu(self.conv1(nn.functional.gelu(x))))


class TSEncoder(nn.Module):
    """(batch, channels, time) -> (pooled (batch, emb_dim), features (batch, emb_dim, time))."""

    def __init__(
        self, in_channels: int, hidden: int = 32, emb_dim: int = 64, depth: int = 6, kernel: int = 3
    ) -> None:
        super().__init__()
        self.inp = nn.Conv1d(in_channels, hidden, 1)
        self.blocks = nn.Sequential(*[ConvBlock(hidden, kernel, 2**i) for i in range(depth)])
        self.out = nn.Conv1d(hidden, emb_dim, 1)
        self.norm = nn.LayerNorm(emb_dim)
        self.receptive_field = 1 + sum(2 * (kernel - 1) * 2**i for i in range(depth))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.out(self.blocks(self.inp(x)))
        h = self.norm(h.transpose(1, 2)).transpose(1, 2)
        return h.amax(dim=2), h


class InitialCondition(nn.Module):
    """PULSE's initial-condition encoder: conv (kernel k) -> ReLU -> dilated grouped conv (kernel
    k, groups = gcd of the widths, as released) on the raw window, read at a start index: a
    *local* view (receptive field k + (k-1) d samples) that gives the decoder the window's state
    but cannot see its system parameters."""

    def __init__(
        self, in_channels: int, hidden: int, out: int, kernel: int = 7, dilation: int = 2
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(
            in_channels, hidden, kernel, padding="same", padding_mode="replicate"
        )
        self.conv2 = nn.Conv1d(
            hidden,
            out,
            kernel,
            padding="same",
            dilation=dilation,
            groups=math.gcd(hidden, out),
            padding_mode="replicate",
        )
        self.receptive_field = kernel + (kernel - 1) * dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (batch, channels, time) -> states (batch, out, time); read them at a start index."""
        return self.conv2(torch.relu(self.conv1(x)))
