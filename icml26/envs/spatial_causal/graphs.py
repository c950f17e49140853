"""Spatial graphs for the spatial_causal family: grids, lattices with holes, random geometric graphs.

Every graph is a symmetric 0/1 ``scipy.sparse.csr_matrix`` adjacency (no self loops) plus an
``(n, 2)`` array of coordinates ``(x, y)``; on grids ``x`` is the column and ``y`` the row, so
queen adjacency makes hop distance the Chebyshev distance (the radius-r "patch" of SpaCE).
Observations carry the adjacency as a padded neighbour table (``-1`` = no neighbour), which has a
fixed shape per env configuration; :func:`adjacency_from_table` turns it back into a matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = [
    "grid_graph",
    "lattice_with_holes",
    "random_geometric_graph",
    "grid_max_degree",
    "neighbor_table",
    "adjacency_from_table",
    "hop_ball",
    "exposure_weights",
    "laplacian",
    "morans_i",
    "full_ball_mask",
]

_OFFSETS = {
    "queen": [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)],
    "rook": [(-1, 0), (0, -1), (0, 1), (1, 0)],
}


def grid_max_degree(adjacency: str) -> int:
    """Largest degree on a lattice with this adjacency (8 for queen, 4 for rook)."""
    if adjacency not in _OFFSETS:
        raise ValueError(f"adjacency must be 'queen' or 'rook', got {adjacency!r}")
    return len(_OFFSETS[adjacency])


def _lattice_edges(rows: np.ndarray, cols: np.ndarray, adjacency: str) -> sp.csr_matrix:
    """Adjacency of the lattice cells at integer positions (rows[i], cols[i])."""
    n = rows.size
    if adjacency not in _OFFSETS:
        raise ValueError(f"adjacency must be 'queen' or 'rook', got {adjacency!r}")
    n_r = int(rows.max()) + 3 if n else 1
    n_c = int(cols.max()) + 3 if n else 1
    index = np.full((n_r, n_c), -1, dtype=np.int64)
    index[rows + 1, cols + 1] = np.arange(n)
    src, dst = [], []
    for dr, dc in _OFFSETS[adjacency]:
        j = index[rows + 1 + dr, cols + 1 + dc]
        keep = j >= 0
        src.append(np.nonzero(keep)[0])
        dst.append(j[keep])
    s, d = np.concatenate(src), np.concatenate(dst)
    return sp.csr_matrix((np.ones(s.size), (s, d)), shape=(n, n))


def grid_graph(
    n_rows: int, n_cols: int, adjacency: str = "queen"
) -> tuple[np.ndarray, sp.csr_matrix]:
    """An ``n_rows x n_cols`` lattice; units in row-major order, coordinates ``(col, row)``."""
    if n_rows < 1 or n_cols < 1:
        raise ValueError(f"grid needs n_rows, n_cols >= 1, got {n_rows} x {n_cols}")
    rows, cols = np.divmod(np.arange(n_rows * n_cols), n_cols)
    coords = np.stack([cols, rows], axis=1).astype(np.float64)
    return coords, _lattice_edges(rows, cols, adjacency)


def lattice_with_holes(
    n_rows: int,
    n_cols: int,
    n_removed: int,
    n_holes: int,
    rng: np.random.Generator,
    adjacency: str = "queen",
) -> tuple[np.ndarray, sp.csr_matrix]:
    """A lattice with ``n_holes`` roughly circular holes removing exactly ``n_removed`` cells.

    Hole centres are uniform over the lattice; the ``n_removed`` cells closest to any centre are
    removed (ties broken at random), so the unit count is fixed for a given configuration.
    """
    total = n_rows * n_cols
    if not 0 <= n_removed < total:
        raise ValueError(f"n_removed must lie in [0, {total}), got {n_removed}")
    rows, cols = np.divmod(np.arange(total), n_cols)
    if n_removed > 0:
        if n_holes < 1:
            raise ValueError(f"n_holes must be >= 1 when cells are removed, got {n_holes}")
        centres = np.stack(
            [rng.uniform(0, n_rows - 1, n_holes), rng.uniform(0, n_cols - 1, n_holes)], 1
        )
        d = np.min(
            np.hypot(rows[:, None] - centres[None, :, 0], cols[:, None] - centres[None, :, 1]), 1
        )
        order = np.lexsort((rng.random(total), d))
        keep = np.ones(total, dtype=bool)
        keep[order[:n_removed]] = False
        rows, cols = rows[keep], cols[keep]
    coords = np.stack([cols, rows], axis=1).astype(np.float64)
    return coords, _lattice_edges(rows, cols, adjacency)


def random_geometric_graph(
    n: int, rng: np.random.Generator, mean_degree: float = 6.0, max_degree: int = 8
) -> tuple[np.ndarray, sp.csr_matrix]:
    """Points uniform in ``[0, sqrt(n)]^2`` (unit density) joined when closer than ``r`` with
    ``pi r^2 = mean_degree``, keeping an edge only when each end is among the other's
    ``max_degree`` nearest points, so no degree exceeds ``max_degree``."""
    from scipy.spatial import cKDTree

    if n < 2:
        raise ValueError(f"a random geometric graph needs n >= 2 units, got {n}")
    if mean_degree <= 0 or max_degree < 1:
        raise ValueError(
            f"need mean_degree > 0 and max_degree >= 1, got {mean_degree}, {max_degree}"
        )
    side = float(np.sqrt(n))
    coords = rng.uniform(0.0, side, size=(n, 2))
    r = float(np.sqrt(mean_degree / np.pi))
    k = min(max_degree + 1, n)
    dist, idx = cKDTree(coords).query(coords, k=k, distance_upper_bound=r)
    src = np.repeat(np.arange(n), k - 1)
    dst = idx[:, 1:].ravel()
    ok = np.isfinite(dist[:, 1:].ravel())
    directed = sp.csr_matrix((np.ones(ok.sum()), (src[ok], dst[ok])), shape=(n, n))
    mutual = directed.multiply(directed.T).tocsr()
    mutual.data[:] = 1.0
    mutual.eliminate_zeros()
    return coords, mutual


def neighbor_table(adj: sp.csr_matrix, width: int) -> np.ndarray:
    """``(n, width)`` int64 table of each unit's neighbours (ascending), padded with ``-1``."""
    adj = sp.csr_matrix(adj)
    deg = np.diff(adj.indptr)
    if deg.size and deg.max() > width:
        raise ValueError(f"a unit has {int(deg.max())} neighbours but the table has width {width}")
    n = adj.shape[0]
    table = np.full((n, width), -1, dtype=np.int64)
    adj.sort_indices()
    rows = np.repeat(np.arange(n), deg)
    pos = np.arange(adj.indices.size) - np.repeat(adj.indptr[:-1], deg)
    table[rows, pos] = adj.indices
    return table


def adjacency_from_table(table: np.ndarray) -> sp.csr_matrix:
    """Symmetric 0/1 adjacency from a neighbour table (``-1`` entries ignored)."""
    t = np.asarray(table)
    if t.ndim != 2:
        raise ValueError(f"neighbour table must be 2-D (n, width), got shape {t.shape}")
    n = t.shape[0]
    rows = np.repeat(np.arange(n), t.shape[1])
    cols = t.ravel()
    keep = cols >= 0
    if np.any(cols[keep] >= n):
        raise ValueError(
            f"neighbour table refers to unit {int(cols.max())} but there are {n} units"
        )
    a = sp.csr_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n))
    a = ((a + a.T) > 0).astype(np.float64).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    return a


def hop_ball(adj: sp.csr_matrix, radius: int) -> sp.csr_matrix:
    """Units within ``radius`` hops (self excluded); entries hold the hop distance 1..radius."""
    if radius < 1:
        raise ValueError(f"radius must be >= 1, got {radius}")
    n = adj.shape[0]
    a = (sp.csr_matrix(adj) > 0).astype(np.float64)
    eye = sp.identity(n, format="csr")
    reach = eye.copy()
    dist = sp.csr_matrix((n, n))
    for h in range(1, radius + 1):
        new = ((reach @ (a + eye)) > 0).astype(np.float64).tocsr()
        ring = (new - reach).tocsr()
        ring.eliminate_zeros()
        dist = dist + h * ring
        reach = new
    dist = sp.csr_matrix(dist)
    dist.eliminate_zeros()
    dist.sort_indices()
    return dist


def exposure_weights(ball: sp.csr_matrix, kernel: str = "mean") -> sp.csr_matrix:
    """Row-normalized exposure mapping over a hop ball: ``e_i = sum_j W_ij a_j``.

    ``kernel="mean"``: equal weights (share of treated neighbours, SpaCE/Spatial-CI default);
    ``"inverse_hop"``: weights proportional to 1 / hop distance. Rows without neighbours are 0.
    """
    b = sp.csr_matrix(ball, dtype=np.float64, copy=True)
    if kernel == "mean":
        b.data = np.ones_like(b.data)
    elif kernel == "inverse_hop":
        b.data = 1.0 / b.data
    else:
        raise ValueError(f"exposure kernel must be 'mean' or 'inverse_hop', got {kernel!r}")
    s = np.asarray(b.sum(axis=1)).ravel()
    inv = np.divide(1.0, s, out=np.zeros_like(s), where=s > 0)
    return sp.csr_matrix(sp.diags(inv) @ b)


def laplacian(adj: sp.csr_matrix) -> sp.csr_matrix:
    """Combinatorial graph Laplacian ``D - A``."""
    a = sp.csr_matrix(adj, dtype=np.float64)
    return sp.csr_matrix(sp.diags(np.asarray(a.sum(axis=1)).ravel()) - a)


def morans_i(x: np.ndarray, adj: sp.csr_matrix) -> float:
    """Moran's I of ``x`` with binary weights ``adj``: ``(n / S0) z'Wz / z'z``."""
    z = np.asarray(x, dtype=np.float64).ravel()
    z = z - z.mean()
    a = sp.csr_matrix(adj, dtype=np.float64)
    s0 = float(a.sum())
    denom = float(z @ z)
    if s0 == 0 or denom == 0:
        return 0.0
    return float(z.size / s0 * (z @ (a @ z)) / denom)


def full_ball_mask(ball: sp.csr_matrix) -> np.ndarray:
    """Units whose ball has the largest size seen (interior units with full neighbourhoods)."""
    size = np.diff(sp.csr_matrix(ball).indptr)
    return size == size.max() if size.size else np.zeros(0, dtype=bool)
