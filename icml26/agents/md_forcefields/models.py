"""Energy models in plain torch: DKMP (dilated shell message passing), a SchNet-style cutoff
MPNN and a PaiNN-style equivariant MPNN. Forces are ``-dE/dx`` by autograd (conservative).

DKMP here is our reading of the paper's DKMP^C (see ``shared/methods/md_forcefields.md``; the
authors' code could not be read): radii ``0 = r_0 < r_1 < ... < r_L = C`` split every atom
pair within ``C`` into ``L`` mutually exclusive shells; layer ``l`` passes messages only over
shell ``l`` (a star around each atom: centre <- its shell-``l`` leaves), so no edge is used by
two layers. Shell membership is smooth: edge weight ``w_l(d) = s(d; r_l) - s(d; r_{l-1})`` with
``s`` a cosine switch that falls from 1 to 0 over ``[r - width, r]`` (``s(d; r_0) = 0``), so the
weights add up to one global envelope and the energy is C^1 in the positions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

__all__ = [
    "switch",
    "shell_weights",
    "dilated_regions",
    "pairs_within",
    "EnergyModel",
    "DKMP",
    "SchNet",
    "PaiNN",
    "rank_dilated_neighbours",
    "DKMPRank",
    "EquivariantDKMP",
    "build_model",
]

DENSE_MAX = 1500  # above this many atoms per frame, pairs come from a k-d tree


def switch(d: torch.Tensor, r: float, width: float) -> torch.Tensor:
    """1 for ``d <= r - width``, 0 for ``d >= r``, a cosine step in between (hard if width 0)."""
    if width <= 0:
        return (d < r).to(d.dtype)
    t = ((d - (r - width)) / width).clamp(0.0, 1.0)
    return 0.5 * (1.0 + torch.cos(math.pi * t))


def shell_weights(d: torch.Tensor, radii: Sequence[float], width: float) -> torch.Tensor:
    """``(E, L)`` soft shell memberships ``w_l(d) = s(d; r_l) - s(d; r_{l-1})``."""
    s = [torch.zeros_like(d)] + [switch(d, r, width) for r in radii]
    return torch.stack([s[i + 1] - s[i] for i in range(len(radii))], dim=-1)


def dilated_regions(positions: np.ndarray, radii: Sequence[float]) -> list[list[list[int]]]:
    """Hard dilated regions: ``regions[l][i]`` = sorted ``j != i`` with ``r_{l-1} <= d_ij < r_l``
    (``r_0 = 0``). This is the neighbour structure each DKMP layer uses (before smoothing)."""
    x = np.asarray(positions, dtype=np.float64)
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    lo = [0.0, *radii[:-1]]
    n = len(x)
    return [
        [[j for j in range(n) if j != i and lo[k] <= d[i, j] < radii[k]] for i in range(n)]
        for k in range(len(radii))
    ]


def pairs_within(pos: torch.Tensor, cutoff: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Directed pairs ``(i, j)``, ``i != j``, closer than ``cutoff`` in a batch ``(B, N, 3)``;
    indices into the flattened ``(B * N)`` atoms. Dense for small frames, k-d tree above
    :data:`DENSE_MAX` atoms (O(N log N))."""
    b, n, _ = pos.shape
    with torch.no_grad():
        if n <= DENSE_MAX:
            d = torch.cdist(pos, pos)
            mask = d < cutoff
            mask &= ~torch.eye(n, dtype=torch.bool).unsqueeze(0)
            k, i, j = mask.nonzero(as_tuple=True)
            return k * n + i, k * n + j
        from scipy.spatial import cKDTree

        ii, jj = [], []
        for k in range(b):
            p = cKDTree(pos[k].detach().numpy()).query_pairs(cutoff, output_type="ndarray")
            p = torch.from_numpy(p.astype(np.int64)) + k * n
            ii += [p[:, 0], p[:, 1]]
            jj += [p[:, 1], p[:, 0]]
        return torch.cat(ii), torch.cat(jj)


class GaussianRBF(nn.Module):
    def __init__(self, n: int, cutoff: float) -> None:
        super().__init__()
        self.register_buffer("mu", torch.linspace(0.0, cutoff, n))
        self.gamma = 0.5 / (cutoff / (n - 1)) ** 2

    def forward(self, d: torch.Tensor) -> torch.Tensor:
        return torch.exp(-self.gamma * (d[:, None] - self.mu) ** 2)


def _mlp(a: int, b: int, c: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(a, b), nn.SiLU(), nn.Linear(b, c))


class CFConv(nn.Module):
    """Continuous-filter convolution + atom-wise update (SchNet interaction block)."""

    def __init__(self, hidden: int, n_rbf: int) -> None:
        super().__init__()
        self.filt = _mlp(n_rbf, hidden, hidden)
        self.lin = nn.Linear(hidden, hidden, bias=False)
        self.upd = _mlp(hidden, hidden, hidden)

    def forward(self, h, i, j, rbf, w):  # type: ignore[no-untyped-def]
        msg = self.filt(rbf) * w[:, None] * self.lin(h)[j]
        agg = torch.zeros_like(h).index_add_(0, i, msg)
        return h + self.upd(agg)


class EnergyModel(nn.Module):
    """Common part: element embedding, per-element energy shift, output head, autograd forces."""

    max_z = 100

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(self.max_z, hidden)
        self.out = _mlp(hidden, hidden, 1)
        self.register_buffer("scale", torch.tensor(1.0, dtype=torch.float64))
        self.register_buffer("shift", torch.zeros(self.max_z, dtype=torch.float64))
        self.cutoff = 5.0

    def atom_features(self, pos: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def energy(self, pos: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Energies ``(B,)`` in the data's units for positions ``(B, N, 3)``, numbers ``(N,)``."""
        b, n, _ = pos.shape
        h = self.atom_features(pos, z)  # (B*N, F)
        e = self.out(h).view(b, n).sum(1)
        return e.double() * self.scale + self.shift[z].sum()

    def energy_forces(
        self, pos: torch.Tensor, z: torch.Tensor, create_graph: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        pos = pos.detach().requires_grad_(True)
        e = self.energy(pos, z)
        (g,) = torch.autograd.grad(e.sum(), pos, create_graph=create_graph)
        return e, -g


def _shell_radii(who: str, radii: Sequence[float]) -> list[float]:
    """The shells' outer radii as floats, checked to increase from > 0."""
    out = [float(r) for r in radii]
    if any(b <= a for a, b in zip([0.0, *out], out)):
        raise ValueError(f"{who}: radii must increase from > 0, got {out}")
    return out


class DKMP(EnergyModel):
    """Dilated K-star message passing (DKMP^C reading): layer ``l`` over shell ``l`` only."""

    def __init__(
        self,
        hidden: int = 64,
        radii: Sequence[float] = (2.0, 4.0, 6.0, 8.0),
        width: float = 0.4,
        n_rbf: int = 24,
    ) -> None:
        super().__init__(hidden)
        self.radii = _shell_radii("DKMP", radii)
        self.width, self.cutoff = float(width), self.radii[-1]
        self.rbf = GaussianRBF(n_rbf, self.cutoff)
        self.layers = nn.ModuleList(CFConv(hidden, n_rbf) for _ in radii)

    def atom_features(self, pos: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        b, n, _ = pos.shape
        i, j = pairs_within(pos, self.cutoff)
        x = pos.reshape(b * n, 3)
        d = (x[i] - x[j]).norm(dim=-1)
        w = shell_weights(d, self.radii, self.width)
        rbf = self.rbf(d)
        h = self.embed(z).repeat(b, 1)
        lo = [0.0, *self.radii[:-1]]
        for k, layer in enumerate(self.layers):
            # the layer's star: pairs where its soft membership is non-zero
            sel = ((d >= lo[k] - self.width) & (d < self.radii[k])).nonzero(as_tuple=True)[0]
            h = layer(h, i[sel], j[sel], rbf[sel], w[sel, k])
        return h


class SchNet(EnergyModel):
    """SchNet-style cutoff MPNN: every layer over all pairs within ``cutoff`` (cosine envelope)."""

    def __init__(
        self, hidden: int = 64, layers: int = 4, cutoff: float = 5.0, n_rbf: int = 24
    ) -> None:
        super().__init__(hidden)
        self.cutoff = float(cutoff)
        self.rbf = GaussianRBF(n_rbf, self.cutoff)
        self.layers = nn.ModuleList(CFConv(hidden, n_rbf) for _ in range(layers))

    def atom_features(self, pos: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        b, n, _ = pos.shape
        i, j = pairs_within(pos, self.cutoff)
        x = pos.reshape(b * n, 3)
        d = (x[i] - x[j]).norm(dim=-1)
        w = switch(d, self.cutoff, self.cutoff)  # cosine envelope over the whole range
        rbf = self.rbf(d)
        h = self.embed(z).repeat(b, 1)
        for layer in self.layers:
            h = layer(h, i, j, rbf, w)
        return h


class PaiNNLayer(nn.Module):
    """PaiNN message + update blocks (Schuett et al. 2021), scalar (E, F) and vector (E, 3, F)."""

    def __init__(self, hidden: int, n_rbf: int) -> None:
        super().__init__()
        self.phi = _mlp(hidden, hidden, 3 * hidden)
        self.filt = nn.Linear(n_rbf, 3 * hidden)
        self.U = nn.Linear(hidden, hidden, bias=False)
        self.V = nn.Linear(hidden, hidden, bias=False)
        self.a = _mlp(2 * hidden, hidden, 3 * hidden)
        self.f = hidden

    def forward(self, s, v, i, j, rbf, w, unit):  # type: ignore[no-untyped-def]
        f = self.f
        x = self.phi(s)[j] * self.filt(rbf) * w[:, None]
        xs, xvv, xvs = x.split(f, dim=-1)
        s = s + torch.zeros_like(s).index_add_(0, i, xs)
        dv = v[j] * xvv[:, None, :] + xvs[:, None, :] * unit[:, :, None]
        v = v + torch.zeros_like(v).index_add_(0, i, dv)
        uv, vv = self.U(v), self.V(v)
        vn = torch.sqrt((vv**2).sum(1) + 1e-8)
        avv, asv, ass = self.a(torch.cat([s, vn], -1)).split(f, dim=-1)
        return s + asv * (uv * vv).sum(1) + ass, v + avv[:, None, :] * uv


class PaiNN(EnergyModel):
    """PaiNN-style rotation-equivariant MPNN with a cutoff (vector features rotate with x)."""

    def __init__(
        self, hidden: int = 64, layers: int = 3, cutoff: float = 5.0, n_rbf: int = 20
    ) -> None:
        super().__init__(hidden)
        self.cutoff = float(cutoff)
        self.rbf = GaussianRBF(n_rbf, self.cutoff)
        self.layers = nn.ModuleList(PaiNNLayer(hidden, n_rbf) for _ in range(layers))

    def atom_features(self, pos: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        b, n, _ = pos.shape
        i, j = pairs_within(pos, self.cutoff)
        x = pos.reshape(b * n, 3)
        r = x[j] - x[i]
        d = r.norm(dim=-1)
        unit = r / d[:, None]
        w = switch(d, self.cutoff, self.cutoff)
        rbf = self.rbf(d)
        s = self.embed(z).repeat(b, 1)
        v = torch.zeros(b * n, 3, s.shape[1], dtype=s.dtype)
        for layer in self.layers:
            s, v = layer(s, v, i, j, rbf, w, unit)
        return s


def _sorted_neighbours(x: np.ndarray, need: int) -> np.ndarray:
    """``(N, min(need, N-1))`` indices of each atom's nearest ``need`` other atoms, nearest
    first, ties by index, from a k-d tree (O(N log N)). Distances are recomputed as
    ``|x_i - x_j|`` so that ties are exact; a row whose ``need``-th and next candidate are not
    clearly apart is redone over every atom within its boundary radius."""
    from scipy.spatial import cKDTree

    n = len(x)
    m = min(need, n - 1)
    if m <= 0:
        return np.zeros((n, 0), dtype=np.int64)
    tree = cKDTree(x)
    kq = min(n, need + 2)  # self, the ``need`` neighbours and one more to check the boundary
    _, cand = tree.query(x, k=kq)
    cand = np.asarray(cand, dtype=np.int64).reshape(n, kq)

    def order(i: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = np.linalg.norm(x[i][:, None] - x[c], axis=-1)
        d[c == i[:, None]] = np.inf  # self goes last, never chosen
        o = np.lexsort((c, d), axis=-1)
        return np.take_along_axis(c, o, -1), np.take_along_axis(d, o, -1)

    rows = np.arange(n)
    idx, dist = order(rows, cand)
    out = idx[:, :m].copy()
    if kq < n:  # some atoms were not candidates: check that none of them ties the boundary
        edge = dist[:, m - 1]
        unsure = np.nonzero(~(dist[:, m] > edge * (1 + 1e-9) + 1e-12))[0]
        for i in unsure:
            c = np.array(tree.query_ball_point(x[i], edge[i] * (1 + 1e-6) + 1e-9), dtype=np.int64)
            ci, _ = order(np.array([i]), c[None])
            out[i] = ci[0, :m]
    return out


def rank_dilated_neighbours(
    positions: np.ndarray, k: int, dilation: int, shells: int
) -> list[list[list[int]]]:
    """Fixed-K rank-dilated neighbours (DKMP^R): sort ``j != i`` by distance (ties by index),
    rank 1 = nearest; shell ``l`` (0-based) takes ranks ``l*K*d + d*m`` for ``m = 1..K``, i.e.
    every ``d``-th neighbour of its block of ``K*d`` ranks. ``out[l][i]`` lists them nearest
    first (fewer than ``K`` when the cluster runs out of atoms). Neighbour search by k-d tree
    (the ``K*d*shells`` nearest), so O(N log N)."""
    return [
        [[int(j) for j in row if j >= 0] for row in sh]
        for sh in _rank_table(positions, k, dilation, shells)
    ]


def _rank_table(positions: np.ndarray, k: int, dilation: int, shells: int) -> np.ndarray:
    """:func:`rank_dilated_neighbours` as an ``(shells, N, K)`` array, ``-1`` where a shell runs out."""
    if k < 1 or dilation < 1 or shells < 1:
        raise ValueError(
            f"rank_dilated_neighbours: expected k, dilation, shells >= 1, got {k}, {dilation}, {shells}"
        )
    x = np.asarray(positions, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"rank_dilated_neighbours: expected positions (N, 3), got {x.shape}")
    order = _sorted_neighbours(x, shells * k * dilation)  # order[:, r-1] = rank r
    ranks = np.array(
        [[sh * k * dilation + dilation * m for m in range(1, k + 1)] for sh in range(shells)]
    )  # (shells, K), 1-based
    out = np.full((shells, len(x), k), -1, dtype=np.int64)
    ok = ranks <= order.shape[1]
    for sh in range(shells):
        cols = ranks[sh][ok[sh]] - 1
        out[sh][:, : len(cols)] = order[:, cols]
    return out


def _rank_pairs(pos: torch.Tensor, k: int, dilation: int, shells: int) -> list[torch.Tensor]:
    """Per shell, ``(2, E)`` flattened directed pairs ``(i <- j)`` of :func:`rank_dilated_neighbours`."""
    b, n, _ = pos.shape
    out: list[list[np.ndarray]] = [[] for _ in range(shells)]
    for f in range(b):
        tab = _rank_table(pos[f].detach().cpu().numpy(), k, dilation, shells)
        for sh in range(shells):
            i, c = np.nonzero(tab[sh] >= 0)
            out[sh].append(np.stack([i, tab[sh][i, c]]) + f * n)
    return [torch.from_numpy(np.concatenate(p, axis=1)) for p in out]


class DKMPRank(EnergyModel):
    """DKMP^R: layer ``l`` passes messages over the fixed-K rank-dilated shell ``l`` (O(N K L)
    edges). Neighbour sets are chosen by rank, so the energy jumps where two ranks swap; edges
    keep a cosine envelope over ``cutoff`` so far leaves fade out."""

    def __init__(
        self,
        hidden: int = 64,
        k: int = 8,
        dilation: int = 1,
        shells: int = 4,
        cutoff: float = 10.0,
        n_rbf: int = 24,
    ) -> None:
        super().__init__(hidden)
        self.k, self.dilation, self.shells, self.cutoff = (
            int(k),
            int(dilation),
            int(shells),
            float(cutoff),
        )
        self.rbf = GaussianRBF(n_rbf, self.cutoff)
        self.layers = nn.ModuleList(CFConv(hidden, n_rbf) for _ in range(self.shells))

    def atom_features(self, pos: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        b, n, _ = pos.shape
        x = pos.reshape(b * n, 3)
        h = self.embed(z).repeat(b, 1)
        for layer, (i, j) in zip(self.layers, _rank_pairs(pos, self.k, self.dilation, self.shells)):
            d = (x[i] - x[j]).norm(dim=-1)
            h = layer(h, i, j, self.rbf(d), switch(d, self.cutoff, self.cutoff))
        return h


class EquivariantDKMP(EnergyModel):
    """Equivariant DKMP: the shell dilation of :class:`DKMP` on PaiNN layers (scalar + vector
    features; layer ``l`` passes radial-filtered messages and directions over shell ``l`` only)."""

    def __init__(
        self,
        hidden: int = 48,
        radii: Sequence[float] = (2.0, 4.0, 6.0, 8.0),
        width: float = 0.4,
        n_rbf: int = 20,
    ) -> None:
        super().__init__(hidden)
        self.radii = _shell_radii("EquivariantDKMP", radii)
        self.width, self.cutoff = float(width), self.radii[-1]
        self.rbf = GaussianRBF(n_rbf, self.cutoff)
        self.layers = nn.ModuleList(PaiNNLayer(hidden, n_rbf) for _ in radii)

    def atom_features(self, pos: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        b, n, _ = pos.shape
        i, j = pairs_within(pos, self.cutoff)
        x = pos.reshape(b * n, 3)
        r = x[j] - x[i]
        d = r.norm(dim=-1)
        unit = r / d[:, None]
        w = shell_weights(d, self.radii, self.width)
        rbf = self.rbf(d)
        s = self.embed(z).repeat(b, 1)
        v = torch.zeros(b * n, 3, s.shape[1], dtype=s.dtype)
        lo = [0.0, *self.radii[:-1]]
        for k, layer in enumerate(self.layers):
            sel = ((d >= lo[k] - self.width) & (d < self.radii[k])).nonzero(as_tuple=True)[0]
            s, v = layer(s, v, i[sel], j[sel], rbf[sel], w[sel, k], unit[sel])
        return s


MODELS = {
    "dkmp": DKMP,
    "schnet": SchNet,
    "painn": PaiNN,
    "dkmp-r": DKMPRank,
    "dkmp-eq": EquivariantDKMP,
}


def build_model(name: str, **kwargs: object) -> EnergyModel:
    if name not in MODELS:
        raise ValueError(f"md_forcefields: model must be one of {sorted(MODELS)}, got {name!r}")
    return MODELS[name](**kwargs)  # type: ignore[arg-type]
