"""Problem instances over sets homeomorphic to a ball, their radial functions and best-known solutions.

A :class:`Problem` is ``min f(x) s.t. g(x) <= 0`` where ``g`` stacks the problem's own
constraints and the box ``lb <= x <= ub`` (last ``2 n`` rows), with a strictly feasible anchor
``x0``. ``radial(U)`` is the first-exit distance ``rho(u) = sup{t : x0 + s u in K for s <= t}``
along unit directions (closed form or bisection): it defines the exact gauge homeomorphism of the
method card. Where ``K`` is star-shaped about ``x0`` (star, jcc_opf, attack) the map covers
``K``; for indefinite QCQPs it covers the star-shaped part of ``K`` seen from ``x0``.

Generators (method card, "Problem generators"):

* :func:`qcqp`: non-convex QCQP (the homopt repo's generator): indefinite ``Q_i = U diag(lam) U'/n``.
* :func:`star`: a star-shaped set with a known radial function ``r0 (1 + a mean_k cos(w_k.u + c_k))``.
* :func:`jcc_opf`: joint chance-constrained DC-OPF on IEEE case30 (pypower data), scenario demands.
* :func:`attack`: non-uniform adversarial attack (``||W d||_p <= eps`` and the image box) on an
  MLP trained on sklearn's bundled digits.

:func:`best_known` computes (and caches) a reference solution by a slow method: multi-start
SLSQP (qcqp, star, attack) or exact enumeration of the admissible scenario subsets, each a
convex QP (jcc_opf).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

from icml26._paths import cache_dir, cached, params_digest

PROBLEMS = ("qcqp", "star", "jcc_opf", "attack", "qcqp_param")
ANCHOR_FRAC = 0.05  # attack anchor: this fraction of the norm budget, towards the image box centre
FEAS_TOL = 1e-5  # feasibility tolerance of the homopt repo (method card, step 6)


def _unit(U: np.ndarray) -> np.ndarray:
    return U / np.linalg.norm(U, axis=-1, keepdims=True)


def box_exit(x0: np.ndarray, lb: np.ndarray, ub: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Distance along each row of ``U`` from ``x0`` to the boundary of the box."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(U > 0, (ub - x0) / U, np.where(U < 0, (lb - x0) / U, np.inf))
    return t.min(axis=-1)


@dataclass
class Problem:
    """One instance; subclasses define ``_obj``, ``_cons`` (problem rows) and ``_radial``."""

    name: str
    n: int
    lb: np.ndarray
    ub: np.ndarray
    x0: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    condition: np.ndarray | None = None  # a parametric family's instance parameters

    # ---- objective -------------------------------------------------------------------------
    def f(self, x: np.ndarray) -> float:
        return float(self._obj(np.asarray(x, float))[0])

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self._obj(np.asarray(x, float))[1]

    def _obj(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        raise NotImplementedError

    # ---- constraints (problem rows, then x - ub, lb - x) ------------------------------------
    def g(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        return np.concatenate([self._cons(x[None])[0][0], x - self.ub, self.lb - x])

    def jac(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, float)
        eye = np.eye(self.n)
        return np.concatenate([self._cons(x[None])[1][0], eye, -eye])

    def g_batch(self, X: np.ndarray) -> np.ndarray:
        """``(B, m)`` problem rows and box rows for a batch of points."""
        return np.concatenate([self._cons(X)[0], X - self.ub, self.lb - X], axis=1)

    def violation(self, x: np.ndarray) -> float:
        """Max-residual certificate ``max_i [g_i(x)]_+`` (method card, Metrics)."""
        return float(max(0.0, np.max(self.g(x))))

    def violation_batch(self, X: np.ndarray) -> np.ndarray:
        return np.maximum(self.g_batch(X).max(axis=1), 0.0)

    def penalty_grad_batch(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Total violation ``sum_i [g_i]_+`` per point and its gradient (for INN training)."""
        gp, jp = self._cons(X)
        box = np.concatenate([X - self.ub, self.lb - X], axis=1)
        tot = np.maximum(gp, 0).sum(1) + np.maximum(box, 0).sum(1)
        grad = np.einsum("bm,bmn->bn", (gp > 0).astype(float), jp)
        grad += (X > self.ub).astype(float) - (X < self.lb).astype(float)
        return tot, grad

    def _cons(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Problem rows for a batch: values ``(B, m)`` and Jacobians ``(B, m, n)``."""
        raise NotImplementedError

    # ---- the radial function about x0 -------------------------------------------------------
    def radial(self, U: np.ndarray) -> np.ndarray:
        """First-exit distance from ``x0`` along each unit row of ``U`` (box included)."""
        U = _unit(np.atleast_2d(np.asarray(U, float)))
        return np.minimum(self._radial(U), box_exit(self.x0, self.lb, self.ub, U))

    def _radial(self, U: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def radial_grad(self, u: np.ndarray) -> tuple[float, np.ndarray]:
        """``rho(u)`` and its gradient in ``u`` (implicit function on the active constraint:
        ``g_j(x0 + rho u) = 0`` gives ``d rho / du = -rho grad g_j / (grad g_j . u)``)."""
        u = np.asarray(u, float) / np.linalg.norm(u)
        rho = float(self.radial(u[None])[0])
        xb = self.x0 + rho * u
        j = int(np.argmax(self.g(xb)))
        a = self.jac(xb)[j]
        au = float(a @ u)
        if au <= 1e-12:
            return rho, np.zeros(self.n)
        return rho, -rho * a / au

    # ---- helpers ----------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "n": self.n, **self.params}

    def key(self) -> str:
        return params_digest(self.describe())


# ============================================================================ QCQP
class QCQP(Problem):
    """``min 0.5 x'Q0 x + p0'x`` s.t. ``0.5 x'Q_i x + p_i'x <= b_i``, box ``[-5, 5]^n``."""

    Q0: np.ndarray
    p0: np.ndarray
    Qs: np.ndarray  # (m, n, n)
    ps: np.ndarray  # (m, n)
    bs: np.ndarray  # (m,)

    def _obj(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        Qx = self.Q0 @ x
        return 0.5 * x @ Qx + self.p0 @ x, Qx + self.p0

    def _cons(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m, n = self.ps.shape
        QX = (X @ self.Qs.reshape(m * n, n).T).reshape(len(X), m, n)  # one GEMM: (B, m, n)
        vals = 0.5 * np.einsum("bmi,bi->bm", QX, X) + X @ self.ps.T - self.bs
        return vals, QX + self.ps[None]

    def _radial(self, U: np.ndarray) -> np.ndarray:
        x0 = self.x0
        m, n = self.ps.shape
        a = 0.5 * np.einsum("bmi,bi->bm", (U @ self.Qs.reshape(m * n, n).T).reshape(-1, m, n), U)
        b = U @ (self.Qs @ x0 + self.ps).T
        c = (0.5 * np.einsum("i,mij,j->m", x0, self.Qs, x0) + self.ps @ x0 - self.bs)[None]
        disc = b * b - 4 * a * c
        den = -b - np.sqrt(np.maximum(disc, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            # smallest positive root of a t^2 + b t + c (c < 0): 2c / (-b - sqrt(disc)) when < 0
            t = np.where((disc >= 0) & (den < 0), 2 * c / den, np.inf)
        return t.min(axis=1)


def qcqp(n: int = 10, m: int = 10, seed: int = 0) -> QCQP:
    """Non-convex QCQP (homopt repo generator, method card Q1); ``x0 = 0`` strictly feasible."""
    _check_int("qcqp", n=n, m=m)
    rng = np.random.default_rng([seed, n, m, 26])
    r = max(1, n // 2)
    Qs, ps, bs = np.empty((m, n, n)), np.empty((m, n)), np.empty(m)
    for i in range(m):
        U = rng.normal(size=(n, r))
        U /= np.linalg.norm(U, axis=0, keepdims=True)
        lam = rng.normal(size=r)
        Qs[i] = U @ np.diag(lam) @ U.T / n
        ps[i] = rng.normal(size=n) / n
        bs[i] = np.linalg.norm(ps[i]) + np.max(np.abs(lam)) ** 2  # x = 0 strictly feasible
    V, _ = np.linalg.qr(rng.normal(size=(n, n)))
    Q0 = V @ np.diag(rng.uniform(-1, 1, n)) @ V.T
    p0 = rng.normal(size=n) / n
    prob = QCQP("qcqp", n, np.full(n, -5.0), np.full(n, 5.0), np.zeros(n), {"m": m, "seed": seed})
    prob.Q0, prob.p0, prob.Qs, prob.ps, prob.bs = Q0, p0, Qs, ps, bs
    return prob


@functools.lru_cache(maxsize=8)
def _qcqp_family(
    n: int, m: int, family_seed: int, radius: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The constraint rows shared by a parametric family: those of :func:`qcqp` at
    ``family_seed``, then the ball ``0.5 x'(2I)x <= radius^2`` when ``radius`` is set."""
    fam = qcqp(n, m, seed=family_seed)
    Qs, ps, bs = fam.Qs, fam.ps, fam.bs
    if radius is not None:
        Qs = np.concatenate([Qs, 2.0 * np.eye(n)[None]])
        ps = np.concatenate([ps, np.zeros((1, n))])
        bs = np.concatenate([bs, [float(radius) ** 2]])
    for a in (Qs, ps, bs):
        a.flags.writeable = False
    return Qs, ps, bs


def qcqp_param(
    n: int = 10,
    m: int = 5000,
    seed: int = 0,
    family_seed: int = 0,
    spread: float = 0.5,
    radius: float | None = 5.0,
) -> QCQP:
    """One instance of a parametric non-convex QCQP family, the setting the paper's conditional
    INN amortizes over (the homopt release's parametric QCQP ``NonConvexQCProblem`` and its
    QCQP script config, read at the stored commit). Shared by the family (``family_seed``): the
    ``m`` indefinite quadratic rows ``Q_i, p_i`` of :func:`qcqp`, the box ``[-5, 5]^n`` and the
    release's ball ``||x|| <= radius`` (``R = 5``; ``radius=None``: the box alone, as
    :func:`qcqp`). Drawn per instance from ``seed``: the right-hand sides
    ``b_i = b0_i (1 + spread u_i)``, ``u_i ~ U(-1, 1)`` (``b0`` as :func:`qcqp`; ``x0 = 0``
    stays strictly feasible), and the release's random objective ``0.5 x'Q0 x + p0'x`` with
    ``Q0 = U diag(lam) U' / n`` (rank ``n // 2``, unit columns, ``lam ~ N(0, 1)``),
    ``p0 ~ N(0, I) / n``. The instance parameters a conditional map sees are ``u``
    (``prob.condition``). Deviation: the release redraws ``Q_i, p_i`` per instance too (a set
    encoder over the constraints); here they are the family's, so the right-hand sides alone
    condition the map. Note: with the ball, every quadratic row is redundant once ``n >= 40``
    (``0.5 ||Q_i|| R^2 + R ||p_i|| <= b_i``) and the set is the ball itself."""
    _check_int("qcqp_param", n=n, m=m)
    if not 0 <= spread < 1:
        raise ValueError(f"qcqp_param: spread must be in [0, 1), got {spread!r}")
    if radius is not None and not radius > 0:
        raise ValueError(f"qcqp_param: radius must be > 0 or None, got {radius!r}")
    Qs, ps, b0 = _qcqp_family(n, m, int(family_seed), None if radius is None else float(radius))
    rng = np.random.default_rng([seed, n, m, family_seed, 29])
    u = rng.uniform(-1.0, 1.0, m)
    r = max(1, n // 2)
    U = rng.normal(size=(n, r))
    U /= np.linalg.norm(U, axis=0, keepdims=True)
    prob = QCQP(
        "qcqp_param",
        n,
        np.full(n, -5.0),
        np.full(n, 5.0),
        np.zeros(n),
        {"m": m, "seed": seed, "family_seed": family_seed, "spread": spread, "radius": radius},
    )
    prob.Q0 = (U * rng.normal(size=r)) @ U.T / n
    prob.p0 = rng.normal(size=n) / n
    prob.Qs, prob.ps = Qs, ps
    prob.bs = np.concatenate([b0[:m] * (1.0 + spread * u), b0[m:]])
    prob.condition = u
    return prob


# ============================================================================ star
class Star(Problem):
    """``||x - x0|| <= R(u)``, ``R(u) = r0 (1 + a mean_k cos(w_k . u + c_k))``; quadratic objective."""

    Q0: np.ndarray
    p0: np.ndarray
    r0: float
    amp: float
    W: np.ndarray  # (K, n)
    c: np.ndarray  # (K,)

    def R(self, U: np.ndarray) -> np.ndarray:
        return self.r0 * (1 + self.amp * np.cos(U @ self.W.T + self.c).mean(axis=1))

    def _obj(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        Qx = self.Q0 @ x
        return 0.5 * x @ Qx + self.p0 @ x, Qx + self.p0

    def _cons(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        D = X - self.x0
        r = np.maximum(np.linalg.norm(D, axis=1), 1e-12)
        U = D / r[:, None]
        s = -np.sin(U @ self.W.T + self.c)  # (B, K)
        dR_du = self.r0 * self.amp * (s @ self.W) / self.W.shape[0]  # (B, n)
        proj = dR_du - (dR_du * U).sum(1, keepdims=True) * U
        grad = U - proj / r[:, None]
        return (r - self.R(U))[:, None], grad[:, None, :]

    def _radial(self, U: np.ndarray) -> np.ndarray:
        return self.R(U)

    def radial_grad(self, u: np.ndarray) -> tuple[float, np.ndarray]:
        u = np.asarray(u, float) / np.linalg.norm(u)
        s = -np.sin(self.W @ u + self.c)
        return float(self.R(u[None])[0]), self.r0 * self.amp * (s @ self.W) / self.W.shape[0]


def star(n: int = 10, seed: int = 0, amp: float = 0.6, waves: int = 4) -> Star:
    """Star-shaped set about ``x0 = 0`` with a known radial function (method card Q1, last item)."""
    _check_int("star", n=n, waves=waves)
    if not 0 < amp < 1:
        raise ValueError(f"star: amp must be in (0, 1), got {amp!r}")
    rng = np.random.default_rng([seed, n, 27])
    r0 = 2.0
    V, _ = np.linalg.qr(rng.normal(size=(n, n)))
    big = r0 * (1 + amp) * 1.01  # the box never binds
    prob = Star(
        "star",
        n,
        np.full(n, -big),
        np.full(n, big),
        np.zeros(n),
        {"seed": seed, "amp": amp, "waves": waves},
    )
    prob.Q0 = V @ np.diag(rng.uniform(-1, 1, n)) @ V.T
    prob.p0 = rng.normal(size=n)
    prob.r0, prob.amp = r0, amp
    prob.W = rng.normal(size=(waves, n)) * 2.0
    prob.c = rng.uniform(0, 2 * np.pi, waves)
    return prob


# ============================================================================ JCC DC-OPF
class JccOpf(Problem):
    """Joint chance-constrained DC-OPF: at least ``S - K`` of ``S`` demand scenarios satisfy every
    slack and line limit. Constraint row: the ``(S - K)``-th smallest per-scenario violation."""

    A: np.ndarray  # (R, n) rows shared by all scenarios
    bsc: np.ndarray  # (S, R) right-hand sides per scenario
    keep: int  # S - K scenarios must hold
    c2: np.ndarray
    c1: np.ndarray
    c2s: float
    c1s: float
    dtot: np.ndarray  # (S,) total demand per scenario
    scale: float

    def _obj(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        ps = self.dtot - x.sum()
        val = (
            self.c2 @ x**2 + self.c1 @ x + np.mean(self.c2s * ps**2 + self.c1s * ps)
        ) * self.scale
        grad = (2 * self.c2 * x + self.c1 - np.mean(2 * self.c2s * ps + self.c1s)) * self.scale
        return val, grad

    def scenario_violation(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(B, S)`` max violation per scenario and the index of the row attaining it."""
        V = (X @ self.A.T)[:, None, :] - self.bsc[None]  # (B, S, R)
        return V.max(axis=2), V.argmax(axis=2)

    def _cons(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v, arg = self.scenario_violation(X)
        order = np.argsort(v, axis=1, kind="stable")
        s = order[:, self.keep - 1]  # the (S-K)-th smallest violation
        rows = np.arange(len(X))
        return v[rows, s][:, None], self.A[arg[rows, s]][:, None, :]

    def _radial(self, U: np.ndarray) -> np.ndarray:
        au = U @ self.A.T  # (B, R)
        slack = self.bsc - self.A @ self.x0  # (S, R) > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(au[:, None, :] > 0, slack[None] / au[:, None, :], np.inf)
        ts = -np.sort(-t.min(axis=2), axis=1)  # per-scenario exit, descending
        return ts[:, self.keep - 1]  # feasible while >= keep scenarios hold


def _dc_model(case: str) -> dict[str, Any]:
    try:
        from pypower import api as ppapi
    except ImportError as e:  # pragma: no cover - depends on the extra
        raise ImportError("jcc_opf needs pypower: pip install 'icml26-gym[constrained_opt]'") from e
    if case not in ("case30", "case57", "case118"):
        raise ValueError(f"jcc_opf: case must be case30, case57 or case118, got {case!r}")
    ppc = getattr(ppapi, case)()
    base = float(ppc["baseMVA"])
    bus, gen, br, cost = ppc["bus"], ppc["gen"], ppc["branch"], ppc["gencost"]
    nb = bus.shape[0]
    idx = {int(b): i for i, b in enumerate(bus[:, 0])}
    br = br[br[:, 10] > 0]
    f = np.array([idx[int(b)] for b in br[:, 0]])
    t = np.array([idx[int(b)] for b in br[:, 1]])
    nl = len(br)
    Af = np.zeros((nl, nb))
    Af[np.arange(nl), f], Af[np.arange(nl), t] = 1.0, -1.0
    bl = 1.0 / br[:, 3]
    Bbus = Af.T @ (bl[:, None] * Af)
    slack = int(np.flatnonzero(bus[:, 1] == 3)[0])
    keep = np.array([i for i in range(nb) if i != slack])
    # PTDF with the slack bus as reference: flows = PTDF @ injections
    ptdf = np.zeros((nl, nb))
    ptdf[:, keep] = (bl[:, None] * Af[:, keep]) @ np.linalg.inv(Bbus[np.ix_(keep, keep)])
    gbus = np.array([idx[int(b)] for b in gen[:, 0]])
    return {
        "base": base,
        "demand": bus[:, 2] / base,
        "ptdf": ptdf,
        "rate": np.where(br[:, 5] > 0, br[:, 5] / base, 2.0),  # RATE_A / base (0 -> 2.0, card)
        "gbus": gbus,
        "slack": slack,
        "pmin": gen[:, 9] / base,
        "pmax": gen[:, 8] / base,
        # polynomial cost c2 P^2 + c1 P + c0 in MW -> per unit
        "c2": np.maximum(cost[:, 4] * base**2, 0.1),
        "c1": cost[:, 5] * base,
    }


def jcc_opf(
    case: str = "case30",
    scenarios: int = 20,
    eps: float = 0.1,
    sigma: float = 0.05,
    seed: int = 0,
) -> JccOpf:
    """Joint chance-constrained DC-OPF (method card Q2) on pypower's IEEE ``case``."""
    _check_int("jcc_opf", scenarios=scenarios)
    if not 0 <= eps < 1:
        raise ValueError(f"jcc_opf: eps must be in [0, 1), got {eps!r}")
    mdl = _dc_model(case)
    rng = np.random.default_rng([seed, scenarios, 28])
    S, K = scenarios, int(math.floor(eps * scenarios))
    d = mdl["demand"][None] * rng.normal(1.0, sigma, size=(S, len(mdl["demand"])))
    gens = [i for i, b in enumerate(mdl["gbus"]) if b != mdl["slack"] and mdl["pmax"][i] > 0]
    sg = next(i for i, b in enumerate(mdl["gbus"]) if b == mdl["slack"])
    n = len(gens)
    ptdf_g = mdl["ptdf"][:, mdl["gbus"][gens]]  # flow sensitivity to each decision
    base_flow = -(d @ mdl["ptdf"].T)  # (S, nl) flows from the demand alone
    rate = mdl["rate"]
    dtot = d.sum(1)
    ones = np.ones((1, n))
    A = np.concatenate([ptdf_g, -ptdf_g, ones, -ones])  # flow <= rate, -flow <= rate, slack limits
    bsc = np.concatenate(
        [
            rate[None] - base_flow,
            rate[None] + base_flow,
            (dtot - mdl["pmin"][sg])[:, None],  # P_slack >= pmin  <=>  sum P <= dtot - pmin
            (mdl["pmax"][sg] - dtot)[:, None],  # P_slack <= pmax  <=>  -sum P <= pmax - dtot
        ],
        axis=1,
    )
    lb, ub = mdl["pmin"][gens], mdl["pmax"][gens]
    x0 = _max_margin_point(A, bsc, lb, ub)
    prob = JccOpf(
        "jcc_opf",
        n,
        lb,
        ub,
        x0,
        {"case": case, "scenarios": S, "eps": eps, "sigma": sigma, "seed": seed},
    )
    prob.A, prob.bsc, prob.keep = A, bsc, S - K
    prob.c2, prob.c1 = mdl["c2"][gens], mdl["c1"][gens]
    prob.c2s, prob.c1s = float(mdl["c2"][sg]), float(mdl["c1"][sg])
    prob.dtot, prob.scale = dtot, 1.0 / len(mdl["demand"]) / 100.0
    return prob


def _max_margin_point(A: np.ndarray, bsc: np.ndarray, lb: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """A point feasible for every scenario with the largest common margin (an LP, HiGHS)."""
    from scipy.optimize import linprog

    S, R = bsc.shape
    n = A.shape[1]
    rows = np.concatenate([np.tile(A, (S, 1)), np.ones((S * R, 1))], axis=1)
    eye = np.eye(n)
    box = np.concatenate([np.concatenate([eye, -eye]), np.ones((2 * n, 1))], axis=1)
    res = linprog(
        np.concatenate([np.zeros(n), [-1.0]]),
        A_ub=np.concatenate([rows, box]),
        b_ub=np.concatenate([bsc.reshape(-1), ub, -lb]),
        bounds=[(None, None)] * n + [(None, 1.0)],
        method="highs",
    )
    if res.status != 0 or res.x[-1] <= 1e-6:
        raise ValueError(
            "jcc_opf: no point satisfies every scenario with a positive margin; the chance-"
            "constrained set is not star-shaped about a common point (lower sigma or raise limits)"
        )
    return np.asarray(res.x[:n], float)


# ============================================================================ attack
def _digits_classifier() -> dict[str, np.ndarray]:
    """A tanh MLP (64-32-10) trained on sklearn's bundled digits (first 1,200 images), cached."""

    def make() -> dict[str, np.ndarray]:
        try:
            from sklearn.datasets import load_digits
            from sklearn.neural_network import MLPClassifier
        except ImportError as e:  # pragma: no cover
            raise ImportError(
                "attack needs scikit-learn: pip install 'icml26-gym[constrained_opt]'"
            ) from e
        X, y = load_digits(return_X_y=True)
        X = X / 16.0
        clf = MLPClassifier(
            hidden_layer_sizes=(32,), activation="tanh", max_iter=400, random_state=0, alpha=1e-3
        )
        import warnings

        with warnings.catch_warnings():  # 400 Adam epochs: converged enough (test accuracy > 0.9)
            warnings.simplefilter("ignore")
            clf.fit(X[:1200], y[:1200])
        return {
            "W1": clf.coefs_[0],
            "b1": clf.intercepts_[0],
            "W2": clf.coefs_[1],
            "b2": clf.intercepts_[1],
            "X": X[1200:],
            "y": y[1200:].astype(np.int64),
            "test_acc": np.array(clf.score(X[1200:], y[1200:])),
        }

    path = cache_dir("constrained_opt") / "digits_mlp_v0.npz"
    return cached(
        path,
        make,
        lambda p: dict(np.load(p)),
        lambda v, p: np.savez(open(p, "wb"), **v),
    )


def _blur_matrix(side: int = 8, sigma: float = 1.0) -> np.ndarray:
    """3x3 Gaussian blur (zero padding) as a ``side^2 x side^2`` matrix."""
    k = np.exp(-np.array([1.0, 0.0, 1.0]) / (2 * sigma**2))
    k2 = np.outer(k, k)
    k2 /= k2.sum()
    B = np.zeros((side * side, side * side))
    for i, j in itertools.product(range(side), range(side)):
        for di, dj in itertools.product((-1, 0, 1), (-1, 0, 1)):
            a, b = i + di, j + dj
            if 0 <= a < side and 0 <= b < side:
                B[i * side + j, a * side + b] = k2[di + 1, dj + 1]
    return B


class Attack(Problem):
    """Minimize the logit margin ``z_y - logsumexp_{j != y} z_j`` of ``x + d`` over
    ``{||W d||_p <= eps} intersect {-x <= d <= 1 - x}``."""

    img: np.ndarray
    label: int
    Wn: np.ndarray
    p: float
    eps: float
    net: dict[str, np.ndarray]

    def logits(self, d: np.ndarray) -> np.ndarray:
        h = np.tanh((self.img + d) @ self.net["W1"] + self.net["b1"])
        return h @ self.net["W2"] + self.net["b2"]

    def _obj(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        h = np.tanh((self.img + x) @ self.net["W1"] + self.net["b1"])
        z = h @ self.net["W2"] + self.net["b2"]
        other = np.delete(np.arange(len(z)), self.label)
        zo = z[other]
        mx = zo.max()
        w = np.exp(zo - mx)
        lse = mx + math.log(w.sum())
        dz = np.zeros_like(z)
        dz[self.label] = 1.0
        dz[other] = -w / w.sum()
        dh = self.net["W2"] @ dz
        return float(z[self.label] - lse), self.net["W1"] @ (dh * (1 - h**2))

    def norm(self, D: np.ndarray) -> np.ndarray:
        return np.linalg.norm(D @ self.Wn.T, ord=self.p, axis=-1)

    def _cons(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Y = X @ self.Wn.T
        nrm = np.maximum(np.linalg.norm(Y, ord=self.p, axis=1), 1e-12)
        # d ||y||_p / dy = sign(y) |y|^(p-1) / ||y||^(p-1)
        dy = np.sign(Y) * np.abs(Y) ** (self.p - 1) / nrm[:, None] ** (self.p - 1)
        return (nrm - self.eps)[:, None], (dy @ self.Wn)[:, None, :]

    def _radial(self, U: np.ndarray) -> np.ndarray:
        # convex norm ball (p >= 1): the exit along x0 + t u is unique; bisection to 1e-12
        n0 = float(self.norm(self.x0[None])[0])
        hi = (self.eps + n0) / self.norm(U)
        lo = np.zeros(len(U))
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            inside = self.norm(self.x0[None] + mid[:, None] * U) <= self.eps
            lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
        return lo


def attack(index: int = 0, p: float = 2.0, eps: float = 0.06, seed: int = 0) -> Attack:
    """Non-uniform attack (method card Q3, digits version) on held-out image ``index + seed``.

    ``W = B diag(w)``: a 3x3 Gaussian blur (sigma 1) after per-pixel weights ``w`` larger in the
    centre (0.5 at the corners up to 2 in the middle): perturbations are cheaper at the rim.
    """
    if p < 1:
        raise ValueError(f"attack: p must be >= 1 (convex norm ball), got {p!r}")
    if not eps > 0:
        raise ValueError(f"attack: eps must be > 0, got {eps!r}")
    net = _digits_classifier()
    X, y = net["X"], net["y"]
    ok = np.flatnonzero(_predict(net, X) == y)
    i = int(ok[(index + seed * 7919) % len(ok)])
    img = X[i]
    ii, jj = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    r2 = (ii - 3.5) ** 2 + (jj - 3.5) ** 2
    w = 0.5 + 1.5 * np.exp(-r2 / (2 * 2.0**2))
    Wn = _blur_matrix() @ np.diag(w.reshape(-1))
    lb, ub = -img, 1.0 - img
    # anchor: strictly inside the box, at 5% of the norm budget
    dir0 = 0.5 - img
    nrm0 = float(np.linalg.norm(Wn @ dir0, ord=p))
    x0 = dir0 * (ANCHOR_FRAC * eps / nrm0)
    prob = Attack(
        "attack", 64, lb, ub, x0, {"index": index, "p": p, "eps": eps, "seed": seed, "image": i}
    )
    prob.img, prob.label, prob.Wn, prob.p, prob.eps, prob.net = (
        img,
        int(y[i]),
        Wn,
        float(p),
        eps,
        net,
    )
    return prob


def _predict(net: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    h = np.tanh(X @ net["W1"] + net["b1"])
    return np.argmax(h @ net["W2"] + net["b2"], axis=1)


# ============================================================================ registry
GENERATORS: dict[str, Callable[..., Problem]] = {
    "qcqp": qcqp,
    "qcqp_param": qcqp_param,
    "star": star,
    "jcc_opf": jcc_opf,
    "attack": attack,
}


def make_problem(name: str, **kwargs: Any) -> Problem:
    """Build a problem by generator name (``qcqp``, ``star``, ``jcc_opf``, ``attack``)."""
    if name not in GENERATORS:
        raise ValueError(f"constrained_opt: problem must be one of {PROBLEMS}, got {name!r}")
    return GENERATORS[name](**kwargs)


TRAIN_SEEDS = 1_000_000  # a family's training instances: seeds [0, TRAIN_SEEDS)
VALIDATION_OFFSET = 1_000_000  # an agent's own held-out instances: [1e6, 2e6)
TEST_OFFSET = 2_000_000  # a task's test instances: 2e6 + i (never trained or validated on)


@dataclass(frozen=True)
class Family:
    """A parametric family: a generator whose instances differ only by ``seed`` and expose their
    parameters as ``condition`` (``qcqp_param``). Seeds are split three ways so that what an
    amortized method trains on never overlaps what it is tested on: training draws
    (:meth:`train_instance`) from ``[0, 1e6)``, validation (:meth:`validation_instances`) from
    ``[1e6, 2e6)``, tests (:meth:`test_instance`) from ``2e6``."""

    problem: str
    kwargs: tuple[tuple[str, Any], ...]

    @classmethod
    def make(cls, problem: str, kwargs: dict[str, Any] | None = None) -> Family:
        kw = dict(kwargs or {})
        if "seed" in kw:
            raise ValueError("Family: instance seeds are drawn by the family, not given in kwargs")
        fam = cls(problem, tuple(sorted(kw.items())))
        if fam.instance(0).condition is None:
            raise ValueError(f"Family: {problem!r} instances have no condition (not parametric)")
        return fam

    def instance(self, seed: int) -> Problem:
        return make_problem(self.problem, **dict(self.kwargs), seed=int(seed))

    def train_instance(self, rng: np.random.Generator) -> Problem:
        return self.instance(int(rng.integers(0, TRAIN_SEEDS)))

    def validation_instances(self, k: int, start: int = 0) -> list[Problem]:
        return [self.instance(VALIDATION_OFFSET + start + j) for j in range(k)]

    def test_instance(self, i: int) -> Problem:
        return self.instance(TEST_OFFSET + int(i))

    @property
    def n(self) -> int:
        return self.instance(0).n

    @property
    def condition_dim(self) -> int:
        c = self.instance(0).condition
        assert c is not None
        return int(np.size(c))


def _check_int(where: str, **vals: Any) -> None:
    for k, v in vals.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{where}: {k} must be an int >= 1, got {v!r}")


# ============================================================================ best known
def sample_feasible(prob: Problem, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` points uniform in the star-shaped ball image: ``x0 + r^(1/n) rho(u) u``."""
    U = _unit(rng.normal(size=(k, prob.n)))
    r = rng.uniform(size=k) ** (1.0 / prob.n)
    return prob.x0 + (r * prob.radial(U))[:, None] * U


def slsqp(
    prob: Problem, start: np.ndarray, maxiter: int = 500, tol: float = 1e-10
) -> tuple[np.ndarray, int]:
    """Local SLSQP from ``start`` with analytic Jacobians; returns ``(x, iterations)``."""
    res = minimize(
        prob.f,
        start,
        jac=prob.grad,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda x: -prob.g(x), "jac": lambda x: -prob.jac(x)}],
        options={"maxiter": maxiter, "ftol": tol},
    )
    return np.asarray(res.x, float), int(res.nit)


def _multistart(prob: Problem, starts: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 99])
    pts = np.concatenate([prob.x0[None], sample_feasible(prob, starts - 1, rng)])
    best, fbest = prob.x0.copy(), prob.f(prob.x0)
    for s in pts:
        x, _ = slsqp(prob, s)
        if prob.violation(x) <= 1e-7 and prob.f(x) < fbest:
            best, fbest = x, prob.f(x)
    return best


def _jcc_enumerate(prob: JccOpf) -> np.ndarray:
    """Exact: the set is the union over kept-scenario subsets of polytopes and the objective is
    convex, so the optimum is the best of the convex QPs, one per subset of dropped scenarios."""
    S = prob.bsc.shape[0]
    best, fbest = prob.x0.copy(), prob.f(prob.x0)
    for drop in itertools.combinations(range(S), S - prob.keep):
        keep = [s for s in range(S) if s not in drop]
        b = prob.bsc[keep].min(axis=0)  # shared rows: the tightest right-hand side binds
        res = minimize(
            prob.f,
            prob.x0,
            jac=prob.grad,
            method="SLSQP",
            bounds=list(zip(prob.lb, prob.ub)),
            constraints=[
                {"type": "ineq", "fun": lambda x, b=b: b - prob.A @ x, "jac": lambda x: -prob.A}
            ],
            options={"maxiter": 300, "ftol": 1e-12},
        )
        x = np.clip(res.x, prob.lb, prob.ub)
        if prob.violation(x) <= 1e-7 and prob.f(x) < fbest:
            best, fbest = x, prob.f(x)
    return best


def best_known(prob: Problem, starts: int = 20) -> tuple[np.ndarray, float]:
    """The cached reference solution ``(x_best, f_best)`` (see the module doc); verified feasible."""
    meta = {**prob.describe(), "starts": starts, "method_version": 1}
    path = cache_dir("constrained_opt", "best") / f"{prob.name}_{params_digest(meta)}.json"

    def make() -> dict[str, Any]:
        if isinstance(prob, JccOpf):
            x = _jcc_enumerate(prob)
            method = "enumeration of scenario subsets (convex QPs, SLSQP)"
        else:
            x = _multistart(prob, starts, int(prob.params.get("seed", 0)))
            method = f"multi-start SLSQP ({starts} starts)"
        return {"x": x.tolist(), "f": prob.f(x), "method": method, "meta": meta}

    rec = cached(
        path,
        make,
        lambda p: json.loads(Path(p).read_text()),
        lambda v, p: Path(p).write_text(json.dumps(v)),
    )
    return np.asarray(rec["x"], float), float(rec["f"])


def rel_gap(f: float, f_best: float) -> float:
    """``(f - f_best) / max(|f_best|, 1e-8)`` (method card, Metrics)."""
    return (f - f_best) / max(abs(f_best), 1e-8)
