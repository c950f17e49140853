"""A graph convolutional network outcome model (Kipf & Welling 2017), Spatial-CI's GCN baseline.

Node features are the unit's treatment, its exposure ``e = W A``, covariates and standardized
coordinates; ``layers`` GCN layers (symmetric-normalized adjacency with self loops) and a linear
readout predict ``Y``. Trained full batch on all units (MSE, AdamW). Direct and spillover
effects are per-unit counterfactual predictions (own treatment, or the whole radius-r
neighbourhood, set to 1 vs 0) computed exactly: units far enough apart are intervened on in the
same forward pass (see :func:`~icml26.agents.spatial_causal.common.per_unit_counterfactuals`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from icml26.agents.spatial_causal.common import (
    EffectAgent,
    EffectEstimate,
    SpatialData,
    per_unit_counterfactuals,
    torch_single_thread,
)

__all__ = ["GCNOutcome"]


class GCNOutcome(EffectAgent):
    """GCN regression of Y on (A, e, X, coordinates); effects by per-unit counterfactuals."""

    def __init__(
        self,
        hidden: int = 32,
        layers: int = 2,
        epochs: int = 500,
        lr: float = 1e-2,
        weight_decay: float = 1e-4,
        radius: int | None = None,
    ) -> None:
        super().__init__(radius)
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        self.hidden, self.layers, self.epochs = int(hidden), int(layers), int(epochs)
        self.lr, self.weight_decay = float(lr), float(weight_decay)

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        with torch_single_thread(self._rng_seed()):
            return self._estimate(data)

    def _estimate(self, data: SpatialData) -> EffectEstimate:
        import torch

        n = data.n
        a_hat = sp.coo_matrix(data.adj + sp.identity(n))
        deg = np.asarray(a_hat.sum(axis=1)).ravel()
        vals = a_hat.data / np.sqrt(deg[a_hat.row] * deg[a_hat.col])
        prop = torch.sparse_coo_tensor(
            np.vstack([a_hat.row, a_hat.col]),
            vals,
            (n, n),
            dtype=torch.float32,
            check_invariants=True,
        ).coalesce()
        xs = (data.x - data.x.mean(0)) / np.where(data.x.std(0) > 0, data.x.std(0), 1.0)
        cs = (data.coords - data.coords.mean(0)) / (data.coords.std() or 1.0)
        static = torch.tensor(np.column_stack([xs, cs]), dtype=torch.float32)
        w = data.w
        y_mu, y_sd = float(data.y.mean()), float(data.y.std()) or 1.0
        y = torch.tensor((data.y - y_mu) / y_sd, dtype=torch.float32)
        dims = [static.shape[1] + 2] + [self.hidden] * self.layers
        convs = torch.nn.ModuleList(torch.nn.Linear(i, o) for i, o in zip(dims[:-1], dims[1:]))
        readout = torch.nn.Linear(self.hidden, 1)
        params = list(convs.parameters()) + list(readout.parameters())
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)

        def forward(a: np.ndarray) -> torch.Tensor:
            feats = torch.tensor(np.column_stack([a, w @ a]), dtype=torch.float32)
            h = torch.cat([feats, static], dim=1)
            for conv in convs:
                h = torch.relu(torch.sparse.mm(prop, conv(h)))
            return readout(h).squeeze(1)

        for _ in range(self.epochs):
            loss = torch.mean((forward(data.a) - y) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()

        def predict(a: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return forward(a).numpy().astype(np.float64) * y_sd + y_mu

        cf = per_unit_counterfactuals(data, predict, receptive_hops=self.layers + data.radius)
        s = data.scored
        de = float(np.mean(cf["own"][s, 1] - cf["own"][s, 0]))
        se = float(np.mean(cf["nbr"][s, 1] - cf["nbr"][s, 0]))
        erf = cf["levels"][s].mean(axis=0)
        return EffectEstimate(de, se, erf)
