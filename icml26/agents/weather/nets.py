"""Torch modules of the learned forecasters: EMFormer's blocks at CPU scale, a small ResNet, and
the losses. Grids are (lat, lon) with periodic longitude; latitude edges are zero-padded (conv)
or repeated (ResNet).

EMFormer (released code, ``networks/EMFormer.py``):

* :class:`MultiScaleDepthwiseConv` -- depthwise 1x1, 3x3 and 5x5 convolutions whose sum is one
  5x5 depthwise convolution (the "single convolution"), applied to q, k and v;
* :class:`WindowAttention` -- multi-head self-attention inside non-overlapping windows;
* :class:`EMFormerNet` -- patch embedding (2 x 2), an hourglass: a block at full token
  resolution, a linear merge of longitude pairs (shorten factor 2), valley blocks cycling
  windows 8x8, 16x4 and 4x16, a linear split back with a skip connection, a block, and a
  linear head back to the grid;
* :class:`CompositeLoss` -- ``(1 - w) L_gen + w mean(lat-weighted RMSE)``, ``w = (sin(theta) + 1) / 2``,
  theta learnable from ``theta0`` (default 0; the release's -pi/2 is a stationary point of w), ``L_gen = mean((p - y)^2 / exp(s_c) + s_c)`` with a learnable
  log-variance ``s_c`` per channel.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn


def _pad_sphere(
    x: torch.Tensor, pad_lat: int, pad_lon: int, lat_mode: str = "constant"
) -> torch.Tensor:
    """Pad (B, C, lat, lon): periodic in longitude, zeros (or edge copies) in latitude."""
    if pad_lon:
        x = F.pad(x, (pad_lon, pad_lon, 0, 0), mode="circular")
    if pad_lat:
        x = (
            F.pad(x, (0, 0, pad_lat, pad_lat), mode=lat_mode)
            if lat_mode != "constant"
            else F.pad(x, (0, 0, pad_lat, pad_lat))
        )
    return x


class MultiScaleDepthwiseConv(nn.Module):
    """Depthwise convolutions of sizes ``kernel_sizes`` merged into one (the largest size).

    ``forward`` runs a single depthwise convolution with :meth:`merged_kernel`, the zero-padded
    sum of the kernels; :meth:`forward_separate` runs the convolutions one by one and sums them.
    The two are equal (the kernels are centred and padding is shared), which is what lets
    EMFormer pay for one convolution while learning three scales.
    """

    def __init__(self, channels: int, kernel_sizes: Sequence[int] = (1, 3, 5)) -> None:
        super().__init__()
        if any(k % 2 == 0 for k in kernel_sizes):
            raise ValueError(f"kernel sizes must be odd, got {tuple(kernel_sizes)}")
        self.kernel_sizes = tuple(sorted(int(k) for k in kernel_sizes))
        self.size = self.kernel_sizes[-1]
        self.kernels = nn.ParameterList()
        for k in self.kernel_sizes:
            w = torch.zeros(channels, 1, k, k)
            if k == 1:
                w.fill_(1.0)  # start as the identity, so attention starts unperturbed
            else:
                nn.init.normal_(w, std=0.02)
            self.kernels.append(nn.Parameter(w))

    def merged_kernel(self) -> torch.Tensor:
        total = None
        for w in self.kernels:
            p = (self.size - w.shape[-1]) // 2
            wp = F.pad(w, (p, p, p, p))
            total = wp if total is None else total + wp
        assert total is not None
        return total

    @staticmethod
    def _padded_channels_last(x: torch.Tensor, p: int) -> torch.Tensor:
        """Pad (B, C, lat, lon) by ``p`` (periodic longitude, zero latitude) and return it as a
        channels-last strided NCHW view: oneDNN's depthwise convolution is ~2x faster that way,
        and the attention's (B, lat, lon, C) tensors already are channels-last."""
        if p == 0:
            return x
        xl = x.permute(0, 2, 3, 1)
        xl = torch.cat([xl[:, :, -p:], xl, xl[:, :, :p]], dim=2)
        return F.pad(xl, (0, 0, 0, 0, p, p)).permute(0, 3, 1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.size // 2
        return F.conv2d(self._padded_channels_last(x, p), self.merged_kernel(), groups=x.shape[1])

    def forward_separate(self, x: torch.Tensor) -> torch.Tensor:
        out = 0
        for w in self.kernels:
            p = w.shape[-1] // 2
            out = out + F.conv2d(self._padded_channels_last(x, p), w, groups=x.shape[1])
        return out  # type: ignore[return-value]


def fit_window(window: int, n: int) -> int:
    """The window length used along an axis of ``n`` tokens: ``window`` if it divides ``n``,
    else the whole axis."""
    return window if 0 < window <= n and n % window == 0 else n


class WindowAttention(nn.Module):
    """Window self-attention with EMFormer's multi-scale convolution on q, k and v.

    ``explicit = True`` computes ``softmax(q k^T / sqrt(d)) v`` with matmuls instead of
    ``F.scaled_dot_product_attention`` (the same function): ``torch.func.vmap`` has batching
    rules for matmul and softmax but not for every fused attention kernel, so the seed-batched
    trainer (:func:`icml26.agents.weather.neural.fit_jointly`) switches it on."""

    explicit = False

    def __init__(
        self, dim: int, heads: int, window: tuple[int, int], multiscale: bool = True
    ) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} must be divisible by heads {heads}")
        self.heads, self.window = heads, window
        self.qkv = nn.Linear(dim, 3 * dim)
        self.conv = MultiScaleDepthwiseConv(3 * dim) if multiscale else None
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, d = x.shape
        wh, ww = fit_window(self.window[0], h), fit_window(self.window[1], w)
        qkv = self.qkv(x)
        if self.conv is not None:
            qkv = self.conv(qkv.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        qkv = qkv.reshape(b, h // wh, wh, w // ww, ww, 3, self.heads, d // self.heads)
        qkv = qkv.permute(5, 0, 1, 3, 6, 2, 4, 7).reshape(
            3, -1, self.heads, wh * ww, d // self.heads
        )
        if self.explicit:
            q, k, v = qkv[0], qkv[1], qkv[2]
            att = torch.softmax((q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5, dim=-1)
            out = att @ v
        else:
            out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        out = out.reshape(b, h // wh, w // ww, self.heads, wh, ww, d // self.heads)
        out = out.permute(0, 1, 4, 2, 5, 3, 6).reshape(b, h, w, d)
        return self.proj(out)


class Block(nn.Module):
    """Pre-norm transformer block: window attention and an MLP, both residual."""

    def __init__(
        self,
        dim: int,
        heads: int,
        window: tuple[int, int],
        mlp_ratio: float = 2.0,
        multiscale: bool = True,
    ) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, heads, window, multiscale)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class EMFormerNet(nn.Module):
    """A CPU-scale EMFormer: (B, in_ch, lat, lon) -> (B, out_ch, lat, lon)."""

    def __init__(
        self,
        in_ch: int,
        out_ch: int,
        grid: tuple[int, int],
        dim: int = 32,
        heads: int = 4,
        depth: tuple[int, int, int] = (1, 3, 1),
        mlp_ratio: float = 2.0,
        valley_windows: Sequence[tuple[int, int]] = ((8, 8), (16, 4), (4, 16)),
        outer_window: tuple[int, int] = (8, 8),
        multiscale: bool = True,
    ) -> None:
        super().__init__()
        n_lat, n_lon = grid
        self.patch = (2 if n_lat % 2 == 0 and n_lat >= 4 else 1, 2 if n_lon % 2 == 0 else 1)
        self.tokens = (n_lat // self.patch[0], n_lon // self.patch[1])
        self.out_ch = out_ch
        self.embed = nn.Conv2d(in_ch, dim, self.patch, stride=self.patch)
        self.pos = nn.Parameter(torch.zeros(1, *self.tokens, dim))
        nn.init.trunc_normal_(self.pos, std=0.02)
        pre, valley, post = depth
        self.pre = nn.ModuleList(
            [Block(dim, heads, outer_window, mlp_ratio, multiscale) for _ in range(pre)]
        )
        self.hourglass = self.tokens[1] % 2 == 0 and self.tokens[1] >= 4
        if self.hourglass:
            self.down = nn.Linear(2 * dim, dim)  # shorten factor 2: merge longitude pairs
            self.up = nn.Linear(dim, 2 * dim)
        self.valley = nn.ModuleList(
            [
                Block(
                    dim,
                    heads,
                    tuple(valley_windows[i % len(valley_windows)]),
                    mlp_ratio,
                    multiscale,
                )  # type: ignore[arg-type]
                for i in range(valley)
            ]
        )
        self.post = nn.ModuleList(
            [Block(dim, heads, outer_window, mlp_ratio, multiscale) for _ in range(post)]
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, out_ch * self.patch[0] * self.patch[1])
        nn.init.zeros_(self.head.weight)  # start from "no change" (the model predicts increments)
        nn.init.zeros_(self.head.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        t = self.embed(x).permute(0, 2, 3, 1) + self.pos  # (B, h, w, D)
        for blk in self.pre:
            t = blk(t)
        skip = t
        if self.hourglass:
            h, w, d = t.shape[1:]
            t = self.down(t.reshape(b, h, w // 2, 2 * d))
        for blk in self.valley:
            t = blk(t)
        if self.hourglass:
            t = self.up(t).reshape(b, h, w, d) + skip
        for blk in self.post:
            t = blk(t)
        t = self.head(self.norm(t))  # (B, h, w, out * p0 * p1)
        p0, p1 = self.patch
        h, w = self.tokens
        t = t.reshape(b, h, w, p0, p1, self.out_ch).permute(0, 5, 1, 3, 2, 4)
        return t.reshape(b, self.out_ch, h * p0, w * p1)


class ResNetNet(nn.Module):
    """A small ResNet: 3x3 convolutions with periodic longitude, ``blocks`` residual blocks."""

    def __init__(self, in_ch: int, out_ch: int, width: int = 16, blocks: int = 3) -> None:
        super().__init__()
        self.stem = nn.Conv2d(in_ch, width, 3)
        self.blocks = nn.ModuleList(
            [
                nn.ModuleList([nn.Conv2d(width, width, 3), nn.Conv2d(width, width, 3)])
                for _ in range(blocks)
            ]
        )
        self.head = nn.Conv2d(width, out_ch, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    @staticmethod
    def _conv(conv: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
        return conv(_pad_sphere(x, 1, 1, lat_mode="replicate"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self._conv(self.stem, x))
        for c1, c2 in self.blocks:
            h = h + self._conv(c2, F.gelu(self._conv(c1, h)))
        return self.head(F.gelu(h))


class WeightedMSELoss(nn.Module):
    """Latitude-weighted MSE (cell-area weights with mean 1)."""

    def __init__(self, lat_weights: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("w", lat_weights.reshape(1, 1, -1, 1).float())

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return (self.w * (pred - target) ** 2).mean()


class CompositeLoss(nn.Module):
    """EMFormer's sinusoidally balanced composite loss (see the module docstring)."""

    def __init__(
        self,
        channels: int,
        lat_weights: torch.Tensor,
        theta0: float = 0.0,
        learn_balance: bool = True,
    ) -> None:
        super().__init__()
        self.logvar = nn.Parameter(torch.zeros(1, channels, 1, 1))
        # The release initializes theta at -pi/2, where d w / d theta = cos(theta) / 2 = 0: theta
        # then never moves. 0 (w = 1/2) is where it moves fastest; learn_balance=False fixes it.
        self.theta = nn.Parameter(torch.tensor(float(theta0)), requires_grad=learn_balance)
        self.register_buffer("w", lat_weights.reshape(1, 1, -1, 1).float())

    @property
    def balance(self) -> float:
        """The current weight ``w = (sin(theta) + 1) / 2`` of the RMSE term."""
        return float((torch.sin(self.theta.detach()) + 1) / 2)

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        err2 = (pred - target) ** 2
        l_gen = (err2 / torch.exp(self.logvar) + self.logvar).mean()
        rmse = torch.sqrt((self.w * err2).mean(dim=(-2, -1)) + 1e-12).mean()
        weight = (torch.sin(self.theta) + 1) / 2
        return (1 - weight) * l_gen + weight * rmse


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


__all__ = [
    "MultiScaleDepthwiseConv",
    "WindowAttention",
    "Block",
    "EMFormerNet",
    "ResNetNet",
    "WeightedMSELoss",
    "CompositeLoss",
    "fit_window",
    "count_parameters",
]
