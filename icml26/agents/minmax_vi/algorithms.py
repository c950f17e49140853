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
* ``km_mlmc``: the paper's (ii) as we derive it (arXiv 2602.05531's summary and the stochastic KM
  of Alacaoglu, Kim and Wright, ICML 2024): Krasnoselskii-Mann on the resolvent
  ``J(z) = (I + lam (F + N_C))^-1 z`` (``lam = eta_res / L``), ``z+ = (1 - a_k) z + a_k J_hat(z)``,
  where ``J_hat`` is a multilevel Monte Carlo (Blanchet-Glynn) estimate of ``J(z)``: draw a level
  ``J`` with ``P(J = j) = 2^-j`` (j = 1..levels, renormalized), run ``2^J`` single-sample steps of
  stochastic FBF on the strongly monotone inner problem ``0 in w - z + lam (F(w) + N_C(w))``
  (step ``min(1/(2 (1 + eta_res)), 2/((1 - eta_res)(t + 1)))``), and return
  ``w_0 + (w_J - w_{J-1}) / P(J)`` with ``w_j`` the inner point after the first ``2^j`` steps
  (one sample path, so the levels are coupled). Expected cost ``2 levels`` calls per outer step;
  ``a_k = relax / sqrt(1 + k / relax_decay)`` with ``relax`` capped at ``1 - |rho| / lam`` on weak
  Minty problems (the resolvent is then only conically nonexpansive; ``rho`` from reset's info;
  no cap where ``|rho| >= lam``, outside the method's range). The level is drawn by the algorithm's own seeded
  generator (one level for all replicate rows of :func:`run_direct`). Reports ``P(z)``.
* ``halpern_vr``: the paper's (iii) as we derive it: Halpern-anchored FBF whose operator
  estimate is variance reduced with same-sample differences (needs the paired oracle,
  ``icml26/StochasticVI-v1``): ``g_k`` estimates ``F(z_k)`` by a fresh batch of
  ``ceil(b0 (k + 1)^2)`` samples when ``k + 1`` is a power of two (epochs that double) and
  otherwise recursively (SARAH/PAGE), ``g_k = g_{k-1} + mean_S [F_hat(z_k) - F_hat(z_{k-1})]``;
  ``zb = P(z_k - eta g_k)``; the FBF correction uses ``mean_S' [F_hat(zb) - F_hat(z_k)]``;
  ``|S| = |S'| = b_k`` (the batch rule, linear by default; a same-sample difference of ``b``
  samples costs ``2 b``). Reports ``zb``.

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
    """One oracle request: the mean of ``batch`` samples at ``point`` (and, with ``partner``, the
    same samples at ``partner``: the algorithm is then sent the pair of means)."""

    point: np.ndarray
    iterate: np.ndarray
    batch: int
    partner: np.ndarray | None = None


@dataclass(frozen=True)
class Context:
    """What an algorithm knows of the problem: start, Lipschitz constant, the box C."""

    z0: np.ndarray
    lipschitz: float
    lower: np.ndarray
    upper: np.ndarray
    rng: np.random.Generator | None = None  # the algorithm's own randomness (MLMC levels)
    rho: float = 0.0  # weak Minty constant (Pethick convention; <= 0), from reset's info

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


def mlmc_level_probabilities(levels: int) -> np.ndarray:
    """``P(J = j)`` for ``j = 1..levels``: proportional to ``2^-j``."""
    p = 2.0 ** -np.arange(1, levels + 1)
    return p / p.sum()


def km_mlmc(
    ctx: Context,
    eta: float,
    batch: str,
    b0: float,
    eta_res: float = 0.5,
    levels: int = 6,
    relax: float = 0.5,
    relax_decay: float = 100.0,
    **_: Any,
) -> AlgorithmGen:
    if not 0.0 < eta_res < 1.0:
        raise ValueError(f"km_mlmc: eta_res must be in (0, 1) (lam L < 1), got {eta_res!r}")
    if ctx.rng is None:
        raise ValueError("km_mlmc: needs the algorithm's generator (Context.rng) for its levels")
    lam = eta_res / ctx.lipschitz
    mu, lip_inner = 1.0 - eta_res, 1.0 + eta_res  # inner operator w - z + lam F(w)
    s_max = 0.5 / lip_inner
    # KM on a (|rho| / lam)-conically nonexpansive resolvent needs a < 1 - |rho| / lam (AKW 2024)
    cap = 1.0 - max(-ctx.rho, 0.0) / lam
    if cap > 0.0:
        relax = min(relax, cap)
    probs = mlmc_level_probabilities(int(levels))
    z = ctx.project(ctx.z0)
    k = 0
    while True:
        level = int(ctx.rng.choice(len(probs), p=probs)) + 1
        b = batch_size(batch, b0, k)
        report = ctx.project(z)
        w, outs = report, []
        for t in range(2**level):
            s = min(s_max, 2.0 / (mu * (t + 1)))
            f1 = yield Query(w, report, b)
            g1 = w - z + lam * f1
            wb = ctx.project(w - s * g1)
            f2 = yield Query(wb, report, b)
            w = wb - s * (wb - z + lam * f2 - g1)
            if (t + 1) & t == 0:  # t + 1 = 2^j: the level-j output
                outs.append(wb)
        estimate = outs[0] + (outs[level] - outs[level - 1]) / probs[level - 1]
        a = relax / math.sqrt(1.0 + k / relax_decay)
        z = (1.0 - a) * z + a * estimate
        k += 1


def halpern_vr(ctx: Context, eta: float, batch: str, b0: float, **_: Any) -> AlgorithmGen:
    step, anchor = eta / ctx.lipschitz, ctx.project(ctx.z0)
    z, zb, z_prev = anchor, anchor, anchor
    g = np.zeros_like(anchor)
    k = 0
    while True:
        b = batch_size(batch, b0, k)
        if (k + 1) & k == 0:  # k + 1 a power of two: a fresh estimate of F(z_k)
            g = yield Query(z, zb, batch_size("quadratic", b0, k))
        else:
            g_new, g_old = yield Query(z, zb, b, partner=z_prev)
            g = g + g_new - g_old
        zb = ctx.project(z - step * g)
        f_zb, f_z = yield Query(zb, zb, b, partner=z)
        t = zb - step * (f_zb - f_z)
        beta = 1.0 / (k + 2.0)
        z_prev, z = z, beta * anchor + (1.0 - beta) * t
        k += 1


ALGORITHMS: dict[str, Callable[..., AlgorithmGen]] = {
    "sgda": sgda,
    "seg": seg,
    "ogda": ogda,
    "seg_plus": seg_plus,
    "fbf": fbf,
    "km_fbf": km_fbf,
    "halpern_fbf": halpern_fbf,
    "km_mlmc": km_mlmc,
    "halpern_vr": halpern_vr,
}
PAIRED = frozenset({"halpern_vr"})  # algorithms that need same-sample pairs (StochasticVI-v1)
RANDOMIZED = frozenset({"km_mlmc"})  # algorithms that draw their own random numbers


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


def clip_query(
    q: Query, radius: float, max_batch: int
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray | None]:
    """The query as the env accepts it: finite, inside ``[-radius, radius]``, batch in range."""
    partner = None if q.partner is None else _fix(q.partner, radius)
    return (
        _fix(q.point, radius),
        _fix(q.iterate, radius),
        int(min(max(q.batch, 1), max_batch)),
        partner,
    )


class VIAlgorithmAgent:
    """Any of :data:`ALGORITHMS` as a suite agent for ``icml26/StochasticVI-v0`` and ``-v1``.

    Args:
        algorithm: a name in :data:`ALGORITHMS` (``halpern_vr`` needs the paired oracle of
            ``icml26/StochasticVI-v1``; every algorithm runs on v1).
        eta: step size in units of 1/L (FBF: 0.5; the card's grid is 0.25, 0.5, 0.9).
        batch: batch rule (``"constant"``, ``"linear"``, ``"quadratic"``) and ``b0`` its scale.
        extra kwargs go to the algorithm (``alpha0`` for SEG+, ``relax`` for KM, ``eta_res``,
            ``levels``, ``relax_decay`` for KM-MLMC).

    Randomized algorithms (``km_mlmc``) draw from a generator seeded by ``reset(seed)`` through
    ``derive_seed(seed, "vi-algorithm")``, as :func:`run_direct` does.
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
        self._seed: int | None = None
        self._paired_env = False
        self._asked_pair = False

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self._radius = float(action_space.high[0])
        # v0: action [z, iterate, batch]; v1: [z, partner, iterate, batch, paired in {0, 1}]
        paired = float(action_space.low[-1]) == 0.0
        self._max_batch = int(action_space.high[-2 if paired else -1])

    def reset(self, seed: int | None = None) -> None:
        self._gen = None
        self._seed = seed

    def act(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        if self._gen is None:
            missing = [k for k in ("z0", "lipschitz", "lower", "upper") if k not in info]
            if missing:
                raise ValueError(
                    f"VIAlgorithmAgent: the first act() after reset needs reset's info; missing {missing}"
                )
            self._paired_env = bool(info.get("paired", False))
            if self.algorithm in PAIRED and not self._paired_env:
                raise ValueError(
                    f"VIAlgorithmAgent: {self.algorithm!r} needs same-sample pairs; use "
                    "icml26/StochasticVI-v1 (the paired oracle), not v0"
                )
            ctx = Context(
                np.asarray(info["z0"], float),
                float(info["lipschitz"]),
                np.asarray(info["lower"], float),
                np.asarray(info["upper"], float),
                algorithm_rng(self._seed),
                float(info.get("rho", 0.0)),
            )
            self._gen = start(self.algorithm, ctx, self.params)
            q = next(self._gen)
        else:
            obs = np.asarray(observation, dtype=float)
            if self._paired_env:
                d = obs.shape[0] // 2
                q = self._gen.send((obs[:d], obs[d:]) if self._asked_pair else obs[:d])  # type: ignore[arg-type]
            else:
                q = self._gen.send(obs)
        point, iterate, b, partner = clip_query(q, self._radius, self._max_batch)
        self._asked_pair = partner is not None
        if not self._paired_env:
            return np.concatenate([point, iterate, [float(b)]])
        return np.concatenate(
            [
                point,
                point if partner is None else partner,
                iterate,
                [float(b), float(self._asked_pair)],
            ]
        )


def algorithm_rng(seed: int | None) -> np.random.Generator:
    """The generator of a randomized algorithm run with ``seed`` (fresh entropy for ``None``)."""
    from icml26.protocol import derive_seed

    return np.random.default_rng(None if seed is None else derive_seed(seed, "vi-algorithm"))


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
    ctx = Context(
        z0, problem.lipschitz, problem.lower, problem.upper, algorithm_rng(seed), problem.rho
    )
    gen = start(algorithm, ctx, dict(params))
    q = next(gen)
    calls, i = 0, 0
    sqrt_d = math.sqrt(problem.dim)  # |z| <= sqrt(d) max|z_i|: far below the radius, skip the norm
    diverged = np.zeros(n_rep, dtype=bool)
    final = np.full(n_rep, np.nan)
    while True:
        point, iterate, b, partner = clip_query(q, radius, max_batch)
        left = oracle_budget - calls
        g: Any
        if partner is None:
            b = min(b, left)
            g = problem.sample(point, rng, b, noise, sigma0, sigma1)
            calls += b
            total = float(g.sum())
        elif left >= 2:  # a same-sample pair costs 2 b calls
            b = min(b, left // 2)
            g = problem.sample_pair(point, partner, rng, b, noise, sigma0, sigma1)
            calls += 2 * b
            total = float(g[0].sum() + g[1].sum())
        else:  # one call left cannot buy a pair: the run ends here
            g, total, calls = None, 0.0, oracle_budget
        z = problem.project(iterate).reshape(n_rep, -1)
        zmax = np.max(np.abs(z), axis=1)
        if not (math.isfinite(total) and float(zmax.max()) < radius / sqrt_d):  # else all are safe
            norm = np.sqrt(np.sum(z * z, axis=1))
            finite = np.ones(n_rep, dtype=bool)
            for part in () if g is None else (g,) if partner is None else g:
                finite &= np.all(np.isfinite(np.asarray(part).reshape(n_rep, -1)), axis=1)
            diverged |= ~(finite & (norm <= radius) & (zmax < radius))
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
