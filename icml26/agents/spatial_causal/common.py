"""Shared pieces of the spatial_causal agents: the parsed observation, designs, the g-formula.

Every agent turns an ``icml26/SpaCEInterference-v0`` observation into a :class:`SpatialData`
(graph, exposure mapping over the radius the env reports, counterfactual exposures), estimates
the direct effect (own treatment 1 vs 0, neighbours observed) and the spillover effect (all
neighbours within the radius treated vs none, own treatment observed), and returns the action
``{"direct": [DE], "spillover": [SE], "erf": [mu(0_N), mu(half_N), mu(1_N)]}``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from icml26.envs.spatial_causal import graphs

__all__ = [
    "SpatialData",
    "EffectEstimate",
    "EffectAgent",
    "flexible_design",
    "lstsq",
    "g_formula",
    "greedy_coloring",
    "per_unit_counterfactuals",
    "torch_single_thread",
]

_KEYS = ("coords", "covariates", "treatment", "outcome", "neighbors", "scored", "radius")


@dataclass
class SpatialData:
    """One observed data set, with the exposure mapping an agent assumes (mean over the ball)."""

    coords: np.ndarray  # (n, 2)
    x: np.ndarray  # (n, p) covariates
    a: np.ndarray  # (n,) float treatment in {0, 1}
    y: np.ndarray  # (n,) outcome
    adj: sp.csr_matrix  # radius-1 adjacency
    scored: np.ndarray  # (n,) bool
    radius: int
    ball: sp.csr_matrix  # hop distances within the radius
    w: sp.csr_matrix  # row-normalized exposure weights over the ball
    e: np.ndarray  # observed exposure W a
    e_all: np.ndarray  # exposure with every neighbour treated (1, or 0 for isolated units)
    e_half: np.ndarray  # exposure with floor(k/2) of the k neighbours treated
    erf_q: np.ndarray  # (m,) shares of treated neighbours at which the ERF is reported
    e_levels: np.ndarray  # (m, n) exposure with floor(q k) of the k neighbours treated, per level q

    @property
    def n(self) -> int:
        return int(self.y.size)

    @classmethod
    def from_observation(
        cls, obs: Mapping[str, Any], radius: int | None = None, erf_levels: Any = None
    ) -> SpatialData:
        """Parse an observation; ``erf_levels`` are the ERF's neighbour shares (the env's
        ``info["erf_levels"]``; default (0, 0.5, 1))."""
        if not isinstance(obs, Mapping):
            raise TypeError(
                f"expected a SpaCEInterference observation dict with keys {_KEYS}, got {type(obs).__name__}"
            )
        missing = [k for k in _KEYS if k not in obs]
        if missing:
            raise ValueError(f"observation lacks key(s) {missing}; expected {_KEYS}")
        y = np.asarray(obs["outcome"], dtype=np.float64).ravel()
        n = y.size
        x = np.asarray(obs["covariates"], dtype=np.float64).reshape(n, -1)
        a = np.asarray(obs["treatment"], dtype=np.float64).ravel()
        coords = np.asarray(obs["coords"], dtype=np.float64).reshape(n, 2)
        scored = np.asarray(obs["scored"]).astype(bool).ravel()
        if a.size != n or scored.size != n:
            raise ValueError(
                f"treatment/scored have {a.size}/{scored.size} entries for {n} outcomes"
            )
        adj = graphs.adjacency_from_table(np.asarray(obs["neighbors"]))
        r = int(obs["radius"]) if radius is None else int(radius)
        ball = graphs.hop_ball(adj, r)
        w = graphs.exposure_weights(ball, "mean")
        k = np.diff(ball.indptr).astype(np.float64)
        e_all = np.asarray(w.sum(axis=1)).ravel()
        e_half = np.divide(np.floor(k / 2), k, out=np.zeros_like(k), where=k > 0)
        q = np.asarray(
            (0.0, 0.5, 1.0) if erf_levels is None else erf_levels, dtype=np.float64
        ).reshape(-1)
        if q.size < 2 or not np.all((q >= 0) & (q <= 1)):
            raise ValueError(f"erf_levels must be >= 2 shares in [0, 1], got {q.tolist()}")
        e_lv = np.stack(
            [np.divide(np.floor(v * k + 1e-9), k, out=np.zeros_like(k), where=k > 0) for v in q]
        )
        return cls(coords, x, a, y, adj, scored, r, ball, w, w @ a, e_all, e_half, q, e_lv)


@dataclass
class EffectEstimate:
    direct: float
    spillover: float
    erf: np.ndarray | None = None

    def action(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "direct": np.array([self.direct], dtype=np.float64),
            "spillover": np.array([self.spillover], dtype=np.float64),
        }
        if self.erf is not None:
            out["erf"] = np.asarray(self.erf, dtype=np.float64).reshape(-1)
        return out


class EffectAgent:
    """Base class: ``act`` parses the observation and calls ``estimate(data, info)``."""

    version = "1"
    #: agents that read the hidden confounder from ``info`` (reference only, never ranked)
    uses_hidden_confounder = False

    def __init__(self, radius: int | None = None) -> None:
        self.radius = radius  # None = trust the radius the env reports
        self.seed: int | None = None
        self.last: EffectEstimate | None = None
        self.diagnostics: dict[str, float] = {}  # per-fit notes (e.g. a clipped parameter)

    def reset(self, seed: int | None = None) -> None:
        self.seed = seed

    def act(
        self, observation: Mapping[str, Any], info: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        self.diagnostics = {}
        # one BLAS thread: these fits are small, and contended BLAS threads only spin (see below)
        with _blas_single_thread():
            levels = (info or {}).get("erf_levels")
            data = SpatialData.from_observation(observation, self.radius, levels)
            est = self.estimate(data, dict(info or {}))
        if not (np.isfinite(est.direct) and np.isfinite(est.spillover)):
            raise FloatingPointError(f"{type(self).__name__} produced non-finite estimates {est}")
        self.last = est
        return est.action()

    def estimate(self, data: SpatialData, info: dict[str, Any]) -> EffectEstimate:
        raise NotImplementedError

    def _rng_seed(self) -> int:
        return 0 if self.seed is None else int(self.seed) % (2**31)


def _blas_single_thread() -> contextlib.AbstractContextManager[Any]:
    try:
        from threadpoolctl import threadpool_limits  # ships with scikit-learn
    except ImportError:  # pragma: no cover - without it BLAS keeps its own thread count
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


@contextlib.contextmanager
def torch_single_thread(seed: int | None = None) -> Iterator[None]:
    """Run torch on one intra-op thread (and, given ``seed``, on a private seeded RNG stream),
    then restore the previous thread count and global RNG state.

    The networks here are small (n x 64 matrices); with several threads on a busy machine torch's
    worker threads contend and the same fit took 100x longer (60 s of CPU instead of 2.5 s).
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            yield
    finally:
        torch.set_num_threads(before)


# ----------------------------------------------------------------------------- designs


def flexible_design(
    a: np.ndarray,
    e: np.ndarray,
    x: np.ndarray,
    z: np.ndarray | None = None,
    z_degree: int = 3,
    interactions: bool = True,
) -> np.ndarray:
    """``[1, a, e, X, aX, eX]`` (+ ``[Z, .., Z^deg, aZ, eZ]`` for an adjustment variable Z)."""
    cols = [np.ones_like(e), a, e, x]
    if interactions:
        cols += [a[:, None] * x, e[:, None] * x]
    if z is not None:
        z2 = z.reshape(z.shape[0], -1)
        cols += [z2**k for k in range(1, z_degree + 1)]
        if interactions:
            cols += [a[:, None] * z2, e[:, None] * z2]
    return np.column_stack(cols)


def lstsq(design: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Minimum-norm least squares (robust to collinear columns)."""
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return coef


def g_formula(
    data: SpatialData, predict: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> EffectEstimate:
    """Plug-in DE, SE and ERF from a per-unit outcome model ``predict(a, e)`` (other inputs fixed)."""
    s = data.scored
    ones, zeros = np.ones(data.n), np.zeros(data.n)
    de = float(np.mean((predict(ones, data.e) - predict(zeros, data.e))[s]))
    y1, y0 = predict(data.a, data.e_all), predict(data.a, zeros)
    se = float(np.mean((y1 - y0)[s]))
    erf = np.array([predict(data.a, lv)[s].mean() for lv in data.e_levels])
    return EffectEstimate(de, se, erf)


# ----------------------------------------------------------------------------- counterfactuals


def greedy_coloring(conflict: sp.csr_matrix) -> np.ndarray:
    """Greedy vertex colouring (largest degree first): no two conflicting units share a colour."""
    c = sp.csr_matrix(conflict)
    n = c.shape[0]
    order = np.argsort(-np.diff(c.indptr), kind="stable")
    colour = np.full(n, -1, dtype=np.int64)
    for i in order:
        used = set(colour[c.indices[c.indptr[i] : c.indptr[i + 1]]].tolist())
        k = 0
        while k in used:
            k += 1
        colour[i] = k
    return colour


def per_unit_counterfactuals(
    data: SpatialData, predict: Callable[[np.ndarray], np.ndarray], receptive_hops: int
) -> dict[str, np.ndarray]:
    """Exact per-unit counterfactual predictions for a model whose prediction at unit i depends
    on treatments within ``receptive_hops`` hops (a GNN with L layers over features that use the
    radius-r exposure has ``receptive_hops = L + r``).

    Units far enough apart are intervened on together (one colour class per forward pass), so
    ``own[:, v] = f_i(A with A_i = v)`` and ``nbr[:, v] = f_i(A with A_{N_r(i)} = v)`` cost a few
    dozen passes instead of 4n.
    """
    n, r = data.n, data.radius
    out = {
        "own": np.zeros((n, 2)),
        "nbr": np.zeros((n, 2)),
        "levels": np.zeros((n, data.erf_q.size)),
    }
    a_obs = data.a
    # own flips: flipping i reaches predictions within receptive_hops of i
    col_own = greedy_coloring(graphs.hop_ball(data.adj, receptive_hops))
    for c in range(col_own.max() + 1):
        members = col_own == c
        for v in (0, 1):
            a = a_obs.copy()
            a[members] = v
            out["own"][members, v] = predict(a)[members]
    # neighbourhood sets: changes within r of i reach predictions within r + receptive_hops of i
    # (receptive_hops >= r, so the balls of two members never overlap either)
    if receptive_hops < r:
        raise ValueError(f"receptive_hops ({receptive_hops}) must be >= the radius ({r})")
    col_nbr = greedy_coloring(graphs.hop_ball(data.adj, r + receptive_hops))
    ball = sp.csr_matrix(data.ball)
    for c in range(col_nbr.max() + 1):
        members = np.nonzero(col_nbr == c)[0]
        cols = np.concatenate([ball.indices[ball.indptr[i] : ball.indptr[i + 1]] for i in members])
        for v in (0, 1):
            a = a_obs.copy()
            a[cols] = v
            out["nbr"][members, v] = predict(a)[members]
        # ERF levels: the first floor(q k) neighbours (by index) treated, the rest untreated
        for j, q in enumerate(data.erf_q):
            a = a_obs.copy()
            for i in members:
                nb = ball.indices[ball.indptr[i] : ball.indptr[i + 1]]
                a[nb] = 0.0
                a[nb[: int(np.floor(q * nb.size + 1e-9))]] = 1.0
            out["levels"][members, j] = predict(a)[members]
    return out
