"""The baselines of the PULSE paper on the shared encoder: contrastive (SimCLR as released),
masked autoencoding (TST / TimeMAE-style), a sequential VAE (DSVAE-style), supervised (the upper
bound, reference only) and an untrained random encoder (the null)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from icml26.agents.pulse.base import RepresentationLearner, SSLConfig

__all__ = [
    "SimCLR",
    "MaskedAutoencoder",
    "SequentialVAE",
    "Supervised",
    "RandomEncoder",
    "nt_xent",
    "patch_mask",
    "gaussian_kl",
]


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, tau: float) -> torch.Tensor:
    """SimCLR's normalized-temperature cross entropy over 2B views, both directions: each view's
    positive is its pair, its negatives the other 2B - 2 views; cosine similarity / tau."""
    z = nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.T / tau
    n = z1.shape[0]
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(n)]).to(z.device)
    return nn.functional.cross_entropy(sim, target)


@dataclass
class SimCLRConfig(SSLConfig):
    tau: float = 0.1
    """temperature (the release's ECG config says 0.001, which saturates the softmax; 0.1 is
    SimCLR's time-series default)"""
    max_shift: float = 0.5
    """time shift of the positive, up to this fraction of the window (circular; the release
    shifts a crop of a continuous series by up to half a window)"""
    scale: tuple[float, float] = (0.5, 1.5)
    """amplitude scaling of the positive (the release's range)"""
    jitter: float = 0.2
    """sd of the positive's additive jitter in standardized units (the release: data sd / 5)"""
    p: float = 0.5
    """probability of each augmentation (the release's 0.5)"""


class SimCLR(RepresentationLearner):
    """Contrastive: anchor = the window, positive = a shifted / scaled / jittered copy (each
    with probability 0.5, as in the release's ``Augdataset``), NT-Xent on the pooled embeddings."""

    Config = SimCLRConfig
    config: SimCLRConfig

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        c = self.config
        B, _, T = x.shape
        out = x.clone()
        r = self.rng
        for i in range(B):
            if r.random() < c.p:
                shift = int(r.integers(-int(c.max_shift * T), int(c.max_shift * T) + 1))
                out[i] = torch.roll(out[i], shift, dims=1)
        scale = self.tensor(r.uniform(*c.scale, size=(B, 1, 1)).astype("float32"))
        use = self.tensor((r.random(size=(B, 1, 1)) < c.p).astype("float32"))
        out = out * (1 + use * (scale - 1))
        use = self.tensor((r.random(size=(B, 1, 1)) < c.p).astype("float32"))
        noise = self.tensor(r.normal(0.0, c.jitter, size=tuple(out.shape)).astype("float32"))
        return out + use * noise

    def loss(self) -> torch.Tensor:
        x, _ = self.sample_windows(self.config.batch_size)
        z, _ = self.encoder(torch.cat([x, self.augment(x)]))
        B = x.shape[0]
        return nt_xent(z[:B], z[B:], self.config.tau)


def patch_mask(rng: Any, batch: int, length: int, patch: int, ratio: float) -> torch.Tensor:
    """Boolean (batch, length): True on a random ``ratio`` of the ``patch``-long segments."""
    n = -(-length // patch)
    k = max(1, int(round(ratio * n)))
    masked = torch.zeros(batch, n, dtype=torch.bool)
    for i in range(batch):
        masked[i, torch.from_numpy(rng.permutation(n)[:k])] = True
    return masked.repeat_interleave(patch, dim=1)[:, :length]


@dataclass
class MAEConfig(SSLConfig):
    patch: int = 16
    """masked segment length in samples (0.25 s at 64 Hz)"""
    mask_ratio: float = 0.6
    """share of segments masked (TimeMAE's 0.6)"""


class MaskedAutoencoder(RepresentationLearner):
    """Masked autoencoding: zero a random 60% of 16-sample segments (all channels), reconstruct
    them from the encoder's per-time features with a linear (1x1 conv) head; MSE on the masked
    samples only (Zerveas et al. 2021's masked-value objective; TimeMAE's mask ratio)."""

    Config = MAEConfig
    config: MAEConfig

    def build(self, channels: int, length: int, n_classes: int) -> list[Any]:
        self.head = nn.Conv1d(self.config.emb_dim, channels, 1)
        return [self.head]

    def loss(self) -> torch.Tensor:
        c = self.config
        x, _ = self.sample_windows(c.batch_size)
        m = patch_mask(self.rng, x.shape[0], x.shape[2], c.patch, c.mask_ratio)[:, None, :].to(
            x.device
        )
        _, feats = self.encoder(x.masked_fill(m, 0.0))
        err = (self.head(feats) - x) ** 2 * m
        return err.sum() / (m.sum() * x.shape[1])


def gaussian_kl(
    mu: torch.Tensor, logvar: torch.Tensor, mu_p: Any = 0.0, logvar_p: Any = 0.0
) -> torch.Tensor:
    """KL(N(mu, e^logvar) || N(mu_p, e^logvar_p)), elementwise."""
    return 0.5 * (
        logvar_p
        - logvar
        + (logvar.exp() + (mu - mu_p) ** 2) / torch.exp(torch.as_tensor(logvar_p))
        - 1
    )


@dataclass
class SVAEConfig(SSLConfig):
    v_dim: int = 32
    """static latent (DSVAE's v, the sequence-level content)"""
    z_dim: int = 8
    """dynamic latent per step (DSVAE's z_t)"""
    stride: int = 4
    """samples per dynamic step (16 Hz latent dynamics for 64 Hz windows)"""
    rnn_hidden: int = 32
    kl_weight: float = 1e-3
    """weight of the KL terms (per window) against the mean squared error (per sample); the
    release's DSVAE uses 1e-5"""


class SequentialVAE(RepresentationLearner):
    """DSVAE-style sequential VAE (Li & Mandt 2018; the PULSE release's baseline): static
    ``v ~ q(v | x)`` from the pooled encoder output, dynamic ``z_t ~ q(z_t | x, v)`` from a
    bidirectional GRU over the (stride-pooled) encoder features, a learned GRU prior
    ``p(z_t | z_<t)``, decoder ``p(x_t | v, z_t)`` (an MLP emitting ``stride`` samples);
    loss = MSE + kl_weight (KL_v + sum_t KL_z)."""

    Config = SVAEConfig
    config: SVAEConfig

    def build(self, channels: int, length: int, n_classes: int) -> list[Any]:
        c = self.config
        self.q_v = nn.Linear(c.emb_dim, 2 * c.v_dim)
        self.q_rnn = nn.GRU(c.emb_dim + c.v_dim, c.rnn_hidden, batch_first=True, bidirectional=True)
        self.q_z = nn.Linear(2 * c.rnn_hidden, 2 * c.z_dim)
        self.p_rnn = nn.GRU(c.z_dim, c.rnn_hidden, batch_first=True)
        self.p_z = nn.Linear(c.rnn_hidden, 2 * c.z_dim)
        self.dec = nn.Sequential(
            nn.Linear(c.v_dim + c.z_dim, 64),
            nn.Tanh(),
            nn.Linear(64, 64),
            nn.Tanh(),
            nn.Linear(64, channels * c.stride),
        )
        self.channels = channels
        return [self.q_v, self.q_rnn, self.q_z, self.p_rnn, self.p_z, self.dec]

    def loss(self) -> torch.Tensor:
        c = self.config
        x, _ = self.sample_windows(c.batch_size)
        B, C, T = x.shape
        pooled, feats = self.encoder(x)
        mu_v, lv_v = self.q_v(pooled).chunk(2, dim=1)
        v = mu_v + torch.randn_like(mu_v) * (0.5 * lv_v).exp()
        steps = -(-T // c.stride)
        f = nn.functional.adaptive_avg_pool1d(feats, steps).transpose(1, 2)
        h, _ = self.q_rnn(torch.cat([f, v[:, None, :].expand(-1, steps, -1)], dim=2))
        mu_z, lv_z = self.q_z(h).chunk(2, dim=2)
        z = mu_z + torch.randn_like(mu_z) * (0.5 * lv_z).exp()
        hp, _ = self.p_rnn(
            torch.cat([torch.zeros(B, 1, c.z_dim, device=z.device), z[:, :-1]], dim=1)
        )
        mu_p, lv_p = self.p_z(hp).chunk(2, dim=2)
        xhat = self.dec(torch.cat([v[:, None, :].expand(-1, steps, -1), z], dim=2))
        xhat = xhat.reshape(B, steps * c.stride, C)[:, :T].transpose(1, 2)
        kl = gaussian_kl(mu_v, lv_v).sum(1) + gaussian_kl(mu_z, lv_z, mu_p, lv_p).sum((1, 2))
        return nn.functional.mse_loss(xhat, x) + c.kl_weight * kl.mean()


class Supervised(RepresentationLearner):
    """Upper bound: the encoder and a linear head trained with cross-entropy on the class labels
    of the pretraining recordings (labels a self-supervised agent never sees). Reference only."""

    uses_labels = True

    def build(self, channels: int, length: int, n_classes: int) -> list[Any]:
        self.head = nn.Linear(self.config.emb_dim, n_classes)
        return [self.head]

    def loss(self) -> torch.Tensor:
        x, rec = self.sample_windows(self.config.batch_size)
        pooled, _ = self.encoder(x)
        return nn.functional.cross_entropy(self.head(pooled), self._labels[self.tensor(rec)])


@dataclass
class RandomConfig(SSLConfig):
    updates: int | None = 0


class RandomEncoder(RepresentationLearner):
    """Null: the encoder at its random initialization (seeded); learns only the input scaling."""

    Config = RandomConfig
