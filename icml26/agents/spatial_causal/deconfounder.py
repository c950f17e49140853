"""The Spatial Deconfounder (arXiv 2510.08762; code github.com/moprescu/Spatial-CI).

Stage 1, a conditional VAE over each unit's neighbourhood treatment vector:

* encoder ``q(Z_s | A_{N_R(s)}, X_s) = N(mu_s, diag sigma_s^2)``: an MLP over the treatments
  around ``s`` summarised ring by ring (mean treatment and coverage of each hop ring
  ``1..R``; the unit's own treatment is left out by default so that ``Z`` cannot copy it), and
  the unit's covariates;
* decoder ``p(A_s = 1 | X_s, Z_s) = sigmoid(f(X_s, Z_s))`` with ``f`` linear (the paper's one-layer
  logistic decoder);
* prior: a spatial GMRF on each latent dimension, ``p(Z) propto exp(-tau/2 Z'(L + eps I)Z)``
  with the graph Laplacian ``L`` (the paper uses a patch Laplacian with ``tau = 10``), whose KL
  term ``tau/2 (mu'L_eps mu + diag(L_eps)'sigma^2) - 1/2 sum log sigma^2`` (per unit and latent
  dimension) is weighted by ``beta`` annealed linearly from 0 to ``beta_max``.

Stage 2, an outcome model on ``(A, e, X, Z)`` with ``Z = mu`` (the posterior mean, as in the
paper) held at its observed-data value: ``head="linear"`` is least squares on
``[1, A, e, X, AX, eX, Z, Z^2, Z^3, AZ, eZ]``; ``head="mlp"`` a small network;
``head="spatialplus"`` Spatial+ with ``Z, Z^2, Z^3`` as covariates (the paper's best head). Direct and
spillover effects come from setting the own or the neighbours' treatments (g-formula).

This is a graph adaptation, not the reference model: the encoder reads ring summaries (reach
r + 2 hops) instead of a (2r+1)^2 image patch, leaves the own treatment out, keeps one latent per
unit (not a latent field over patch pixels) with the whole graph's Laplacian as prior, anneals
beta to 0.1 (the reference tunes 1e-5..1e-4) and does no predictive-check model selection.
Training is full batch. On lattices the reference model is
:class:`~icml26.agents.spatial_causal.reference.ReferenceDeconfounder`
(``spatial-deconfounder-ref``); this one also runs on irregular graphs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from icml26.agents.spatial_causal.common import (
    EffectAgent,
    EffectEstimate,
    SpatialData,
    flexible_design,
    g_formula,
    lstsq,
    torch_single_thread,
)
from icml26.envs.spatial_causal import graphs

__all__ = ["DeconfounderConfig", "SpatialDeconfounder", "ring_features"]


@dataclass
class DeconfounderConfig:
    """Hyperparameters (paper defaults where the paper has one)."""

    latent_dim: int = 2
    encoder_hops: int | None = None  # rings 1..R read by the encoder; None = radius + 2
    include_own_treatment: bool = False
    hidden: int = 64
    tau: float = 10.0  # GMRF precision (Spatial-CI deconfounder.yaml)
    eps: float = 1e-5  # ridge on the Laplacian (Spatial-CI)
    beta_max: float = 0.1  # KL weight after annealing (Spatial-CI default)
    anneal_fraction: float = 0.5  # share of the epochs over which beta rises to beta_max
    epochs: int = 400
    lr: float = 1e-2
    weight_decay: float = 1e-5
    head: str = "linear"  # linear | mlp | spatialplus
    head_epochs: int = 600
    z_degree: int = 3

    def __post_init__(self) -> None:
        if self.head not in ("linear", "mlp", "spatialplus"):
            raise ValueError(f"head must be 'linear', 'mlp' or 'spatialplus', got {self.head!r}")
        if self.latent_dim < 1 or self.epochs < 1:
            raise ValueError("latent_dim and epochs must be >= 1")


def ring_features(data: SpatialData, hops: int, include_own: bool) -> np.ndarray:
    """Per unit and hop ring h = 1..hops: mean treatment on the ring and the ring's coverage
    (size / largest size of that ring), plus the own treatment if asked."""
    ball = graphs.hop_ball(data.adj, hops)
    cols = [data.a[:, None]] if include_own else []
    for h in range(1, hops + 1):
        ring = (ball == h).astype(np.float64).tocsr()
        size = np.asarray(ring.sum(axis=1)).ravel()
        mean = np.divide(ring @ data.a, size, out=np.zeros(data.n), where=size > 0)
        cols += [mean[:, None], (size / max(size.max(), 1.0))[:, None]]
    return np.column_stack(cols)


def _standardize(x: np.ndarray) -> np.ndarray:
    sd = x.std(0)
    return (x - x.mean(0)) / np.where(sd > 0, sd, 1.0)


class SpatialDeconfounder(EffectAgent):
    """CVAE substitute confounder with a spatial GMRF prior, then an outcome model (see module)."""

    version = "1"

    def __init__(self, radius: int | None = None, **config: Any) -> None:
        super().__init__(radius)
        self.config = DeconfounderConfig(**config)
        self.stats: dict[str, Any] = {}

    # ------------------------------------------------------------------ stage 1
    def fit_latent(self, data: SpatialData) -> np.ndarray:
        """Train the CVAE on the observed treatments; return the posterior means ``mu`` (n, d)."""
        import torch

        cfg = self.config
        hops = cfg.encoder_hops if cfg.encoder_hops is not None else data.radius + 2
        enc_in = np.column_stack(
            [ring_features(data, hops, cfg.include_own_treatment), _standardize(data.x)]
        )
        x_dec = torch.tensor(_standardize(data.x), dtype=torch.float32)
        inp = torch.tensor(enc_in, dtype=torch.float32)
        target = torch.tensor(data.a, dtype=torch.float32)
        lap = sp.coo_matrix(graphs.laplacian(data.adj) + cfg.eps * sp.identity(data.n))
        lap_t = torch.sparse_coo_tensor(
            np.vstack([lap.row, lap.col]),
            lap.data,
            lap.shape,
            dtype=torch.float32,
            check_invariants=True,
        ).coalesce()
        lap_diag = torch.tensor(lap.diagonal(), dtype=torch.float32)
        d = cfg.latent_dim
        encoder = torch.nn.Sequential(
            torch.nn.Linear(inp.shape[1], cfg.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(cfg.hidden, cfg.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(cfg.hidden, 2 * d),
        )
        decoder = torch.nn.Linear(x_dec.shape[1] + d, 1)
        params = list(encoder.parameters()) + list(decoder.parameters())
        opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs)
        bce = torch.nn.BCEWithLogitsLoss()
        n = data.n
        anneal = max(1, int(cfg.anneal_fraction * cfg.epochs))
        losses = []
        for epoch in range(cfg.epochs):
            out = encoder(inp)
            mu, logvar = out[:, :d], out[:, d:].clamp(-12.0, 6.0)
            z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
            logits = decoder(torch.cat([x_dec, z], dim=1)).squeeze(1)
            rec = bce(logits, target)
            quad = (mu * torch.sparse.mm(lap_t, mu)).sum()
            trace = (lap_diag[:, None] * torch.exp(logvar)).sum()
            kl = (cfg.tau / 2 * (quad + trace) - 0.5 * logvar.sum()) / (n * d)
            beta = cfg.beta_max * min(1.0, epoch / anneal)
            loss = rec + beta * kl
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            if epoch % 50 == 0 or epoch == cfg.epochs - 1:
                losses.append([epoch, float(rec.detach()), float(kl.detach()), beta])
        with torch.no_grad():
            mu = encoder(inp)[:, :d].numpy().astype(np.float64)
        self.stats = {"cvae_curve": losses, "encoder_hops": hops}
        return mu

    # ------------------------------------------------------------------ stage 2
    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        with torch_single_thread(self._rng_seed()):
            return self._estimate(data)

    def _estimate(self, data: SpatialData) -> EffectEstimate:
        z = _standardize(self.fit_latent(data))
        self.latent = z
        cfg = self.config
        if cfg.head == "linear":
            coef = lstsq(flexible_design(data.a, data.e, data.x, z, cfg.z_degree), data.y)
            return g_formula(
                data, lambda a, e: flexible_design(a, e, data.x, z, cfg.z_degree) @ coef
            )
        if cfg.head == "spatialplus":
            from icml26.agents.spatial_causal.regression import spatial_regression_effects

            zz = np.column_stack([z**k for k in range(1, cfg.z_degree + 1)])
            return spatial_regression_effects(data, True, 100, self._rng_seed(), extra=zz)
        return g_formula(data, self._mlp_head(data, z))

    def _mlp_head(self, data: SpatialData, z: np.ndarray) -> Any:
        import torch

        cfg = self.config
        side = torch.tensor(np.column_stack([_standardize(data.x), z]), dtype=torch.float32)
        y_mu, y_sd = float(data.y.mean()), float(data.y.std()) or 1.0
        y = torch.tensor((data.y - y_mu) / y_sd, dtype=torch.float32)
        net = torch.nn.Sequential(
            torch.nn.Linear(side.shape[1] + 2, cfg.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(cfg.hidden, cfg.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(cfg.hidden, 1),
        )
        opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-4)

        def forward(a: np.ndarray | torch.Tensor, e: np.ndarray | torch.Tensor) -> torch.Tensor:
            at = torch.as_tensor(a, dtype=torch.float32)[:, None]
            et = torch.as_tensor(e, dtype=torch.float32)[:, None]
            return net(torch.cat([at, et, side], dim=1)).squeeze(1)

        for _ in range(cfg.head_epochs):
            loss = torch.mean((forward(data.a, data.e) - y) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()

        def predict(a: np.ndarray, e: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return forward(a, e).numpy().astype(np.float64) * y_sd + y_mu

        return predict

    def config_dict(self) -> dict[str, Any]:
        return asdict(self.config)
