"""Stochastic VI algorithms, each written once as a generator and driven two ways.

An algorithm is a generator that yields :class:`Query` (point, current iterate, batch size)
and receives the mean operator sample at the point. :class:`VIAlgorithmAgent` drives it through
``icml26/StochasticVI-v0`` (the agent protocol); :func:`run_direct` drives the same generator
against the problem's oracle without the env (the experiments' fast path; the same seed gives the
same iterates as the env, tested).

P is the projection onto the box C, eta a step size in units of 1/L, b_k the batch at iteration k.

* ``sgda``: ``z+ = P(z - eta g(z))`` (diverges on bilinear even without noise: a negative control).
* ``seg``: stochastic extragradient with independent samples:
  ``zb = P(z - eta g(z))``, ``z+ = P(z - eta g(zb))``.
* ``ogda``: optimistic / Popov past extragradient, one new sample per iteration:
  ``zb_k = P(z_k - eta g(zb_{k-1}))``, ``z_{k+1} = P(z_k - eta g(zb_k))``.
* ``seg_plus``: SEG+ (Pethick et al. 2023): exploration ``gamma``, update ``alpha_k gamma`` with
  ``alpha_k = alpha0 / sqrt(k / 100 + 1)``.
* ``fbf``: the paper's minibatch forward-backward-forward (Tseng) method [paper (i)]:
  ``zb = P(z - eta g(z; B1))``, ``z+ = zb - eta (g(zb; B2) - g(z; B1))``, eta = 1/(2L) and growing
  batches ``b_k = ceil(b0 (k + 1))``; the iterate is ``zb`` (feasible).
* ``km_fbf``: inexact Krasnoselskii-Mann on the FBF map [paper (ii), with growing batches in place
  of the paper's multilevel Monte Carlo estimator, whose details we could not verify]:
  ``z+ = (1 - a) z + a T_hat(z)``.
* ``halpern_fbf``: Halpern-anchored FBF [paper (iii), with growing batches in place of its
  variance reduction]: ``z_{k+1} = beta_k z_0 + (1 - beta_k) T_hat(z_k)``, ``beta_k = 1/(k + 2)``.

Batch rules: ``"constant"`` (b0), ``"linear"`` (``ceil(b0 (k + 1))``), ``"quadratic"``
(``ceil(b0 (k + 1)^2)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from gymnasium.utils import seeding

from icml26.envs.minmax_vi.problems import VIProblem

BATCH_RULES = ("constant", "linear", "quadratic")


class Query(NamedTuple):
    point: np.ndarray
    iterate: np.ndarray
    batch: int


@dataclass(frozen=True)
class Context:
    """What an algorithm knows of the problem: start, Lipschitz constant, the box C."""

    z0: np.ndarray
    lipschitz: float
    lower: np.ndarray
    upper: np.ndarray

    def project(self, z: np.ndarray) -> np.ndarray:
        return np.clip(z, self.lower, self.upper)


AlgorithmGen = Generator[Query, np.ndarray, None]


def batch_size(rule: str, b0: float, k: int) -> int:
    """The batch of iteration ``k`` under ``rule``."""
    if rule == "constant":
        return max(1, math.ceil(b0))
    if rule == "linear":
        return max(1, math.ceil(b0 * (k + 1)))
    if rule == "quadratic":
        return max(1, math.ceil(b0 * (k + 1) ** 2))
    raise ValueError(f"batch rule must be one of {BATCH_RULES}, got {rule!r}")


def sgda(ctx: Context, eta: float, batch: str, b0: float, **_: Any) -> AlgorithmGen:
    step, z = eta / ctx.lipschitz, ctx.project(ctx.z0)
    k = 0
    while True:
        g = yield Query(z, z, batch_size(batch, b0, k))
        z = ctx.project(z - step * g)
        k += 1


def seg(ctx: Context, eta: float, batch: str, b0: float, **_: Any) -> AlgorithmGen:
    step, z = eta / ctx.lipschitz, ctx.project(ctx.z0)
    k = 0
    while True:
        b = batch_size(batch, b0, k)
        g = yield Query(z, z, b)
        zb = ctx.project(z - step * g)
        g = yield Query(zb, z, b)
        z = ctx.project(z - step * g)
        k += 1


def ogda(ctx: Context, eta: float, batch: str, b0: float, **_: Any) -> AlgorithmGen:
    step, z = eta / ctx.lipschitz, ctx.project(ctx.z0)
    g_prev = yield Query(z, z, batch_size(batch, b0, 0))
    k = 0
    while True:
        zb = ctx.project(z - step * g_prev)
        g_prev = yield Query(zb, z, batch_size(batch, b0, k))
        z = ctx.project(z - step * g_prev)
        k += 1


def seg_plus(
    ctx: Context, eta: float, batch: str, b0: float, alpha0: float = 0.5, **_: Any
) -> AlgorithmGen:
    gamma, z = eta / ctx.lipschitz, ctx.project(ctx.z0)
    k = 0
    while True:
        b = batch_size(batch, b0, k)
        g = yield Query(z, z, b)
        zb = ctx.project(z - gamma * g)
        g = yield Query(zb, z, b)
        alpha = alpha0 / math.sqrt(k / 100.0 + 1.0)
        z = ctx.project(z - alpha * gamma * g)
        k += 1


def _fbf_map(
    ctx: Context, z: np.ndarray, step: float, b: int, iterate: np.ndarray
) -> Generator[Query, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """One stochastic FBF step from ``z``: returns ``(z+, zb)``."""
    g1 = yield Query(z, iterate, b)
    zb = ctx.project(z - step * g1)
    g2 = yield Query(zb, iterate, b)
    return zb - step * (g2 - g1), zb


def fbf(ctx: Context, eta: float, batch: str, b0: float, **_: Any) -> AlgorithmGen:
    step, z = eta / ctx.lipschitz, ctx.project(ctx.z0)
    zb = z
    k = 0
    while True:
        z, zb = yield from _fbf_map(ctx, z, step, batch_size(batch, b0, k), zb)
        k += 1


def km_fbf(
    ctx: Context, eta: float, batch: str, b0: float, relax: float = 0.5, **_: Any
) -> AlgorithmGen:
    step, z = eta / ctx.lipschitz, ctx.project(ctx.z0)
    zb = z
    k = 0
    while True:
        t, zb = yield from _fbf_map(ctx, z, step, batch_size(batch, b0, k), zb)
        z = (1.0 - relax) * z + relax * t
        k += 1


def halpern_fbf(ctx: Context, eta: float, batch: str, b0: float, **_: Any) -> AlgorithmGen:
    step, anchor = eta / ctx.lipschitz, ctx.project(ctx.z0)
    z, zb = anchor, anchor
    k = 0
    while True:
        t, zb = yield from _fbf_map(ctx, z, step, batch_size(batch, b0, k), zb)
        beta = 1.0 / (k + 2.0)
        z = beta * anchor + (1.0 - beta) * t
        k += 1


ALGORITHMS: dict[str, Callable[..., AlgorithmGen]] = {
    "sgda": sgda,
    "seg": seg,
    "ogda": ogda,
    "seg_plus": seg_plus,
    "fbf": fbf,
    "km_fbf": km_fbf,
    "halpern_fbf": halpern_fbf,
}


def start(algorithm: str, ctx: Context, params: dict[str, Any]) -> AlgorithmGen:
    if algorithm not in ALGORITHMS:
        from icml26._entry_points import unknown_name_error

        raise unknown_name_error("VI algorithm", algorithm, ALGORITHMS)
    return ALGORITHMS[algorithm](ctx, **params)


def _fix(v: np.ndarray, radius: float) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    if float(np.max(np.abs(v))) < radius:  # also False for nan: the slow path below
        return v
    return np.clip(np.nan_to_num(v, nan=radius, posinf=radius, neginf=-radius), -radius, radius)


def clip_query(q: Query, radius: float, max_batch: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The query as the env accepts it: finite, inside ``[-radius, radius]``, batch in range."""
    return _fix(q.point, radius), _fix(q.iterate, radius), int(min(max(q.batch, 1), max_batch))


class VIAlgorithmAgent:
    """Any of :data:`ALGORITHMS` as a suite agent for ``icml26/StochasticVI-v0``.

    Args:
        algorithm: a name in :data:`ALGORITHMS`.
        eta: step size in units of 1/L (FBF: 0.5; the card's grid is 0.25, 0.5, 0.9).
        batch: batch rule (``"constant"``, ``"linear"``, ``"quadratic"``) and ``b0`` its scale.
        extra kwargs go to the algorithm (``alpha0`` for SEG+, ``relax`` for KM).
    """

    version = "1"

    def __init__(
        self,
        algorithm: str = "fbf",
        eta: float = 0.5,
        batch: str = "linear",
        b0: float = 1.0,
        **algorithm_kwargs: Any,
    ) -> None:
        if algorithm not in ALGORITHMS:
            from icml26._entry_points import unknown_name_error

            raise unknown_name_error("VI algorithm", algorithm, ALGORITHMS)
        if batch not in BATCH_RULES:
            raise ValueError(f"VIAlgorithmAgent: batch must be one of {BATCH_RULES}, got {batch!r}")
        if not (isinstance(eta, (int, float)) and eta > 0) or not (
            isinstance(b0, (int, float)) and b0 > 0
        ):
            raise ValueError(
                f"VIAlgorithmAgent: eta and b0 must be > 0, got eta={eta!r}, b0={b0!r}"
            )
        self.algorithm = algorithm
        self.params = {"eta": float(eta), "batch": batch, "b0": float(b0), **algorithm_kwargs}
        self._gen: AlgorithmGen | None = None
        self._radius, self._max_batch = 1e6, 2**20

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self._radius = float(action_space.high[0])
        self._max_batch = int(action_space.high[-1])

    def reset(self, seed: int | None = None) -> None:
        self._gen = None

    def act(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        if self._gen is None:
            missing = [k for k in ("z0", "lipschitz", "lower", "upper") if k not in info]
            if missing:
                raise ValueError(
                    f"VIAlgorithmAgent: the first act() after reset needs reset's info; missing {missing}"
                )
            ctx = Context(
                np.asarray(info["z0"], float),
                float(info["lipschitz"]),
                np.asarray(info["lower"], float),
                np.asarray(info["upper"], float),
            )
            self._gen = start(self.algorithm, ctx, self.params)
            q = next(self._gen)
        else:
            q = self._gen.send(np.asarray(observation, dtype=float))
        point, iterate, b = clip_query(q, self._radius, self._max_batch)
        return np.concatenate([point, iterate, [float(b)]])


@dataclass
class DirectRun:
    """One :func:`run_direct` call: per replicate, the residual of the iterate at each checkpoint
    of oracle calls (nan once it has diverged), its norm, and whether it diverged."""

    checkpoints: np.ndarray  # (C,)
    residual: np.ndarray  # (R, C)
    iterate_norm: np.ndarray  # (R, C)
    final_residual: np.ndarray  # (R,)
    diverged: np.ndarray  # (R,) bool
    oracle_calls: int


def run_direct(
    problem: VIProblem,
    algorithm: str,
    params: dict[str, Any],
    *,
    noise: str,
    sigma0: float,
    sigma1: float,
    oracle_budget: int,
    seed: int,
    checkpoints: Sequence[int] | np.ndarray | None = None,
    replicates: int = 1,
    radius: float = 1e6,
    max_batch: int = 2**20,
) -> DirectRun:
    """Drive ``algorithm`` against ``problem``'s oracle for ``oracle_budget`` calls per replicate.

    With ``replicates=1`` this is exactly the env path with ``reset(seed=seed)`` (same generator,
    same draws). With ``replicates=R`` the algorithm runs on R independent copies at once (rows
    of one array; one seeded generator draws every copy's noise), which is what makes 1e6-call
    experiments take seconds."""
    rng, _ = seeding.np_random(seed)
    cps = np.unique(
        np.asarray(checkpoints if checkpoints is not None else [oracle_budget], dtype=np.int64)
    )
    n_rep = int(replicates)
    res = np.full((n_rep, len(cps)), np.nan)
    norms = np.full((n_rep, len(cps)), np.nan)
    z0 = problem.z0.copy() if n_rep == 1 else np.tile(problem.z0, (n_rep, 1))
    ctx = Context(z0, problem.lipschitz, problem.lower, problem.upper)
    gen = start(algorithm, ctx, dict(params))
    q = next(gen)
    calls, i = 0, 0
    sqrt_d = math.sqrt(problem.dim)  # |z| <= sqrt(d) max|z_i|: far below the radius, skip the norm
    diverged = np.zeros(n_rep, dtype=bool)
    final = np.full(n_rep, np.nan)
    while True:
        point, iterate, b = clip_query(q, radius, max_batch)
        b = min(b, oracle_budget - calls)
        g = problem.sample(point, rng, b, noise, sigma0, sigma1)
        calls += b
        z = problem.project(iterate).reshape(n_rep, -1)
        zmax = np.max(np.abs(z), axis=1)
        if not (
            math.isfinite(float(g.sum())) and float(zmax.max()) < radius / sqrt_d
        ):  # else all are safe
            norm = np.sqrt(np.sum(z * z, axis=1))
            diverged |= ~(
                np.all(np.isfinite(g.reshape(n_rep, -1)), axis=1)
                & (norm <= radius)
                & (zmax < radius)
            )
        done = calls >= oracle_budget or bool(diverged.all())
        if done or (i < len(cps) and calls >= cps[i]):
            norm = np.sqrt(np.sum(z * z, axis=1))
            r = problem.residuals(z)
            r = np.where(diverged, np.nan, r)
            while i < len(cps) and calls >= cps[i]:
                res[:, i], norms[:, i] = r, norm
                i += 1
            if done:
                final = r
                break
        q = gen.send(g)
    return DirectRun(cps, res, norms, final, diverged, calls)
