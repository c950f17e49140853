"""Variational inequality problems with known solutions: operators, constraint boxes, residuals.

A problem is: find ``z*`` in a box ``C = [lower, upper]`` (bounds may be infinite, so R^d and
orthants are boxes too) with ``<F(z*), z - z*> >= 0`` for all ``z`` in ``C``. Min-max problems
``min_x max_y f(x, y)`` give ``F = (grad_x f, -grad_y f)`` on ``z = (x, y)``.

Generators (the method card's names; ``arXiv 2602.05531`` is the paper):

* :func:`bilinear` (M1): ``f = (x - x0)^T A (y - y0)``, ``A = U diag(s) V^T`` with a well or
  ill conditioned spectrum; free or the box ``[-1, 1]^d`` with ``x0 = y0 = 0.9``. Monotone.
* :func:`quadratic_game` (M2): ``f = 0.5 x'Px + x'Ay - 0.5 y'Qy`` shifted to ``z*``, with P, Q
  positive semi-definite and rank deficient (merely monotone).
* :func:`lagrangian_qp` (M3): ``min_x max_{y >= 0} 0.5 |x - c|^2 + y^T (A x - b)``: the dual
  variable lives on an unbounded orthant. Built from a chosen KKT point, so ``z*`` is exact.
* :func:`weak_minty_quadratic` (W1, Pethick et al. 2023): per 2-D block ``F(z) = [[b, a], [-a, b]]
  (z - z*)`` with ``a = sqrt(L^2 - L^4 rho^2)``, ``b = L^2 rho``, so ``|F(z)| = L |z - z*|`` and
  ``<F(z), z - z*> = rho |F(z)|^2`` exactly (weak Minty, Pethick's sign convention: rho < 0 is
  nonmonotone); ``copies`` blocks mixed by a random orthogonal matrix.
* :func:`network_game`: a nonconvex-nonconcave game between two small tanh networks (a 1-D
  Wasserstein-GAN-like generator and critic, 25 parameters), with a stationary point found by
  deterministic extragradient and certified by its exact residual.
* :func:`global_forsaken` (W2, Pethick et al. 2022): ``f = xy + phi(x) - phi(y)``,
  ``phi(t) = 2 t^6 / 21 - t^4 / 3 + t^2 / 3`` on the box ``[-1.5, 1.5]^2`` (not globally Lipschitz);
  L and the weak Minty constant are measured on a grid of the box (stated as such).

Noise (:meth:`VIProblem.sample`; the mean of ``b`` samples is drawn in one step, exactly in
distribution, and costs ``b`` oracle calls):

* ``"additive"``: ``F(z) + (sigma0 + sigma1 |z|) e / sqrt(d)``, ``e ~ N(0, I)``: bounded variance
  (N0) when ``sigma1 = 0``, variance growing like ``|z|^2`` (N1) otherwise.
* ``"operator"`` (N2, linear problems): the coupling matrix is random, ``A_xi = A + sigma1 G /
  sqrt(n)``, plus ``sigma0 e / sqrt(d)``: the variance grows like ``|z - z_a|^2`` and is unbounded
  on an unbounded domain -- the setting where bounded variance fails.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NOISE_MODELS = ("additive", "operator")


@dataclass
class VIProblem:
    """A VI on a box with a known solution.

    ``matrix``/``offset`` define a linear operator ``F(z) = M z + q`` (``None`` for nonlinear
    problems, which override :meth:`operator`). ``coupling`` = ``(n_x, anchor)`` marks a min-max
    problem whose off-diagonal block is random under the ``"operator"`` noise.
    """

    name: str
    lower: np.ndarray
    upper: np.ndarray
    solution: np.ndarray
    z0: np.ndarray
    lipschitz: float
    monotone: bool
    rho: float = 0.0  # weak Minty constant, Pethick convention <F(z), z - z*> >= rho |F(z)|^2
    matrix: np.ndarray | None = None
    offset: np.ndarray | None = None
    coupling: tuple[int, np.ndarray] | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return int(self.solution.shape[0])

    # ------------------------------------------------------------------ exact quantities
    def operator(self, z: np.ndarray) -> np.ndarray:
        """The exact operator ``F(z)`` (``z`` of shape ``(d,)`` or ``(k, d)``)."""
        assert self.matrix is not None and self.offset is not None
        return z @ self.matrix.T + self.offset

    def project(self, z: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the box ``C`` (rows of ``z`` projected independently)."""
        return np.minimum(np.maximum(z, self.lower), self.upper)

    def residuals(self, z: np.ndarray) -> np.ndarray:
        """``dist(0, F(z) + N_C(z))`` for each row of ``z`` (points of ``C``): coordinatewise ``|F_i|``
        inside, ``max(-F_i, 0)`` on a lower bound and ``max(F_i, 0)`` on an upper bound."""
        z = np.asarray(z, dtype=float)
        f = self.operator(z)
        at_lo, at_hi = z <= self.lower, z >= self.upper
        r = np.where(
            at_lo & at_hi,
            0.0,
            np.where(at_lo, np.maximum(-f, 0.0), np.where(at_hi, np.maximum(f, 0.0), f)),
        )
        return np.sqrt(np.sum(r * r, axis=-1))

    def residual(self, z: np.ndarray) -> float:
        """:meth:`residuals` of one point."""
        return float(self.residuals(np.asarray(z, dtype=float).reshape(-1)))

    def natural_residual(self, z: np.ndarray, eta: float) -> float:
        """``|z - P(z - eta F(z))| / eta`` (at most :meth:`residual`)."""
        return float(np.linalg.norm(z - self.project(z - eta * self.operator(z))) / eta)

    # ------------------------------------------------------------------ the stochastic oracle
    def sample(
        self,
        z: np.ndarray,
        rng: np.random.Generator,
        batch: int,
        noise: str,
        sigma0: float,
        sigma1: float,
    ) -> np.ndarray:
        """The mean of ``batch`` oracle samples ``F_hat(z, xi)``, drawn as one exact sample of the
        mean; ``z`` is one point ``(d,)`` or independent replicates ``(k, d)``."""
        z = np.asarray(z, dtype=float)
        return self._apply(self._draw(rng, z.shape[:-1], batch, noise, sigma0, sigma1), z)

    def sample_pair(
        self,
        z: np.ndarray,
        w: np.ndarray,
        rng: np.random.Generator,
        batch: int,
        noise: str,
        sigma0: float,
        sigma1: float,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(mean_i F_hat(z, xi_i), mean_i F_hat(w, xi_i))``: the same ``batch`` samples at two
        points (common random numbers, what variance-reduced methods difference; it costs
        ``2 batch`` oracle calls). Both noise models are affine in the drawn noise, so the pair of
        means is drawn exactly from one draw of the mean noise; ``z`` alone gets the same draws as
        :meth:`sample` with the same generator state."""
        z, w = np.asarray(z, dtype=float), np.asarray(w, dtype=float)
        if z.shape != w.shape:
            raise ValueError(
                f"sample_pair: z and w must have one shape, got {z.shape} and {w.shape}"
            )
        draw = self._draw(rng, z.shape[:-1], batch, noise, sigma0, sigma1)
        return self._apply(draw, z), self._apply(draw, w)

    def _draw(
        self,
        rng: np.random.Generator,
        lead: tuple[int, ...],
        batch: int,
        noise: str,
        sigma0: float,
        sigma1: float,
    ) -> dict[str, Any]:
        """One draw of the mean noise of ``batch`` samples (scaled by ``1/sqrt(batch)``)."""
        d = self.dim
        scale = 1.0 / math.sqrt(batch)
        if noise == "additive":
            return {
                "noise": noise,
                "e": rng.standard_normal(lead + (d,)) * (scale / math.sqrt(d)),
                "sigma0": sigma0,
                "sigma1": sigma1,
            }
        if noise == "operator":
            out: dict[str, Any] = {"noise": noise}
            if self.coupling is None:
                out["g"] = rng.standard_normal(lead + (d, d)) * (sigma1 * scale / math.sqrt(d))
            else:
                nx = self.coupling[0]
                out["delta"] = rng.standard_normal(lead + (d - nx, nx)) * (
                    sigma1 * scale / math.sqrt(max(nx, d - nx))
                )
            if sigma0:
                out["e"] = (sigma0 * scale / math.sqrt(d)) * rng.standard_normal(lead + (d,))
            return out
        raise ValueError(f"noise must be one of {NOISE_MODELS}, got {noise!r}")

    def _apply(self, draw: dict[str, Any], z: np.ndarray) -> np.ndarray:
        """``F(z)`` plus the noise ``draw`` at ``z``."""
        out = self.operator(z)
        if draw["noise"] == "additive":
            norm = np.sqrt(np.sum(z * z, axis=-1, keepdims=True))
            return out + (draw["sigma0"] + draw["sigma1"] * norm) * draw["e"]
        if "g" in draw:
            out = out + np.matmul(draw["g"], (z - self.solution)[..., None])[..., 0]
        else:
            assert self.coupling is not None
            nx, anchor = self.coupling
            u = z - anchor
            delta = draw["delta"]
            # (Delta^T u_y, -Delta u_x): the random part of the coupling block, applied to u = z - anchor
            out[..., :nx] += np.matmul(u[..., None, nx:], delta)[..., 0, :]
            out[..., nx:] -= np.matmul(delta, u[..., :nx, None])[..., 0]
        if "e" in draw:
            out = out + draw["e"]
        return out


def _orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def _box(d: int, radius: float | None) -> tuple[np.ndarray, np.ndarray]:
    if radius is None:
        return np.full(d, -np.inf), np.full(d, np.inf)
    return np.full(d, -float(radius)), np.full(d, float(radius))


def _linear(
    name: str,
    mat: np.ndarray,
    z_star: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    z0: np.ndarray,
    monotone: bool,
    rho: float = 0.0,
    coupling: tuple[int, np.ndarray] | None = None,
    offset: np.ndarray | None = None,
    **params: Any,
) -> VIProblem:
    q = -mat @ z_star if offset is None else offset
    return VIProblem(
        name,
        lower,
        upper,
        z_star,
        z0,
        float(np.linalg.norm(mat, 2)),
        monotone,
        rho,
        mat,
        q,
        coupling,
        dict(params),
    )


def bilinear(n: int = 10, spectrum: str = "well", domain: str = "free", seed: int = 0) -> VIProblem:
    """M1: ``f = (x - x0)^T A (y - y0)``, x, y in R^n; ``spectrum`` "well" ([0.2, 1]) or "ill"
    (geomspace(1e-3, 1)); ``domain`` "free" (z* on the unit sphere of each block) or "box"
    (``[-1, 1]^2n`` with x0 = y0 = 0.9, near the boundary)."""
    _check_int("bilinear: n", n, 1)
    rng = np.random.default_rng(seed)
    if spectrum == "well":
        s = np.linspace(0.2, 1.0, n)
    elif spectrum == "ill":
        s = np.geomspace(1e-3, 1.0, n)
    else:
        raise ValueError(f"bilinear: spectrum must be 'well' or 'ill', got {spectrum!r}")
    a = _orthogonal(rng, n) @ np.diag(s) @ _orthogonal(rng, n).T
    m = np.block([[np.zeros((n, n)), a], [-a.T, np.zeros((n, n))]])
    if domain == "free":
        x0, y0 = rng.standard_normal(n), rng.standard_normal(n)
        z_star = np.concatenate([x0 / np.linalg.norm(x0), y0 / np.linalg.norm(y0)])
        lower, upper = _box(2 * n, None)
    elif domain == "box":
        z_star = np.full(2 * n, 0.9)
        lower, upper = _box(2 * n, 1.0)
    else:
        raise ValueError(f"bilinear: domain must be 'free' or 'box', got {domain!r}")
    return _linear(
        f"bilinear-{spectrum}-{domain}",
        m,
        z_star,
        lower,
        upper,
        np.zeros(2 * n),
        True,
        coupling=(n, z_star.copy()),
        n=n,
        spectrum=spectrum,
        domain=domain,
        seed=seed,
        A=a,
    )


def quadratic_game(n: int = 10, rank: int = 3, seed: int = 0) -> VIProblem:
    """M2: ``f = 0.5 (x-x0)'P(x-x0) + (x-x0)'A(y-y0) - 0.5 (y-y0)'Q(y-y0)`` with P, Q PSD of rank
    ``rank`` < n (merely monotone), A with singular values in [0.2, 1]."""
    _check_int("quadratic_game: n", n, 1)
    _check_int("quadratic_game: rank", rank, 0)
    if rank > n:
        raise ValueError(f"quadratic_game: rank must be <= n = {n}, got {rank}")
    rng = np.random.default_rng(seed)
    bp, bq = rng.standard_normal((n, rank)), rng.standard_normal((n, rank))
    p = bp @ bp.T / max(rank, 1)
    q = bq @ bq.T / max(rank, 1)
    a = _orthogonal(rng, n) @ np.diag(np.linspace(0.2, 1.0, n)) @ _orthogonal(rng, n).T
    m = np.block([[p, a], [-a.T, q]])
    z_star = rng.standard_normal(2 * n) / math.sqrt(n)
    lower, upper = _box(2 * n, None)
    return _linear(
        "quadratic-game",
        m,
        z_star,
        lower,
        upper,
        np.zeros(2 * n),
        True,
        coupling=(n, z_star.copy()),
        n=n,
        rank=rank,
        seed=seed,
    )


def lagrangian_qp(n: int = 10, m: int = 6, active: int = 3, seed: int = 0) -> VIProblem:
    """M3: the Lagrangian of ``min 0.5 |x - c|^2 s.t. A x <= b``: ``z = (x, y)``, ``y >= 0``,
    ``F(z) = (x - c + A^T y, b - A x)``. Built from a KKT point: ``y*`` positive on ``active``
    constraints (tight) and zero on the others (slack in [0.5, 1.5]), ``x* = c - A^T y*``."""
    _check_int("lagrangian_qp: n", n, 1)
    _check_int("lagrangian_qp: m", m, 1)
    _check_int("lagrangian_qp: active", active, 0)
    if active > min(m, n):
        raise ValueError(f"lagrangian_qp: active must be <= min(m, n) = {min(m, n)}, got {active}")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n)) / math.sqrt(n)
    c = rng.standard_normal(n)
    y_star = np.zeros(m)
    y_star[:active] = rng.uniform(0.5, 1.5, active)
    x_star = c - a.T @ y_star
    b = a @ x_star + np.where(np.arange(m) < active, 0.0, rng.uniform(0.5, 1.5, m))
    mat = np.block([[np.eye(n), a.T], [-a, np.zeros((m, m))]])
    q = np.concatenate([-c, b])
    lower = np.concatenate([np.full(n, -np.inf), np.zeros(m)])
    upper = np.full(n + m, np.inf)
    z_star = np.concatenate([x_star, y_star])
    return _linear(
        "lagrangian-qp",
        mat,
        z_star,
        lower,
        upper,
        np.zeros(n + m),
        True,
        coupling=(n, np.zeros(n + m)),
        offset=q,
        n=n,
        m=m,
        active=active,
        seed=seed,
        A=a,
        b=b,
        c=c,
    )


def weak_minty_quadratic(
    copies: int = 1, lipschitz: float = 1.0, rho: float = -0.1, domain: str = "free", seed: int = 0
) -> VIProblem:
    """W1: ``copies`` 2-D blocks ``[[b, a], [-a, b]]`` (``a = sqrt(L^2 - L^4 rho^2)``, ``b = L^2 rho``)
    mixed by a random orthogonal matrix; ``domain`` "free" (z* = 0, start at (1, 1, ...)) or
    "box" (the l_inf ball of radius 1, z* = 0.9, start at 0.8), as in Pethick et al. 2023."""
    _check_int("weak_minty_quadratic: copies", copies, 1)
    lip = float(lipschitz)
    if not lip > 0 or not math.isfinite(lip):
        raise ValueError(f"weak_minty_quadratic: lipschitz must be > 0, got {lipschitz!r}")
    if not abs(rho) * lip <= 1.0:
        raise ValueError(f"weak_minty_quadratic: need |rho| L <= 1, got rho={rho}, L={lip}")
    a, b = math.sqrt(lip**2 - lip**4 * rho**2), lip**2 * rho
    d = 2 * copies
    block = np.kron(np.eye(copies), np.array([[b, a], [-a, b]]))
    q = _orthogonal(np.random.default_rng(seed), d) if copies > 1 else np.eye(d)
    m = q @ block @ q.T
    if domain == "free":
        z_star, z0 = np.zeros(d), np.ones(d)
        lower, upper = _box(d, None)
    elif domain == "box":
        z_star, z0 = np.full(d, 0.9), np.full(d, 0.8)
        lower, upper = _box(d, 1.0)
    else:
        raise ValueError(f"weak_minty_quadratic: domain must be 'free' or 'box', got {domain!r}")
    return _linear(
        f"weak-minty-{domain}",
        m,
        z_star,
        lower,
        upper,
        z0,
        rho >= 0,
        rho=rho,
        copies=copies,
        lipschitz=lip,
        seed=seed,
    )


class GlobalForsaken(VIProblem):
    """W2: ``f = xy + phi(x) - phi(y)``, ``phi(t) = 2 t^6/21 - t^4/3 + t^2/3``; ``z* = 0`` on the box
    ``[-radius, radius]^2`` (default 1.5). L and rho are measured on a 401 x 401 grid of the box."""

    def operator(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        x, y = z[..., 0], z[..., 1]
        return np.stack([y + _dphi(x), -x + _dphi(y)], axis=-1)


def _dphi(t: np.ndarray) -> np.ndarray:
    return 4.0 * t**5 / 7.0 - 4.0 * t**3 / 3.0 + 2.0 * t / 3.0


def _d2phi(t: np.ndarray) -> np.ndarray:
    return 20.0 * t**4 / 7.0 - 4.0 * t**2 + 2.0 / 3.0


def global_forsaken(radius: float = 1.5) -> GlobalForsaken:
    """W2 on ``[-radius, radius]^2`` starting at (1, 1)."""
    r = float(radius)
    if not r > 0:
        raise ValueError(f"global_forsaken: radius must be > 0, got {radius!r}")
    g = np.linspace(-r, r, 401)
    xx, yy = np.meshgrid(g, g)
    # Jacobian [[phi''(x), 1], [-1, phi''(y)]]: its spectral norm, maximized on the grid.
    j = np.zeros(xx.shape + (2, 2))
    j[..., 0, 0], j[..., 0, 1], j[..., 1, 0], j[..., 1, 1] = _d2phi(xx), 1.0, -1.0, _d2phi(yy)
    lip = float(np.linalg.norm(j, 2, axis=(-2, -1)).max())
    prob = GlobalForsaken(
        "global-forsaken",
        np.full(2, -r),
        np.full(2, r),
        np.zeros(2),
        np.ones(2),
        lip,
        False,
        0.0,
        params={"radius": r},
    )
    pts = np.stack([xx.ravel(), yy.ravel()], axis=1)
    f = prob.operator(pts)
    nf = np.sum(f * f, axis=1)
    ok = nf > 1e-12
    prob.rho = float(np.min(np.sum(f[ok] * pts[ok], axis=1) / nf[ok]))
    return prob


class NetworkGame(VIProblem):
    """A nonconvex-nonconcave game between two small networks (a 1-D Wasserstein-GAN-like game).

    Generator ``G_x(s) = a . tanh(w s + b) + c`` (13 parameters ``x``) maps fixed latent draws
    ``s_j`` to samples; critic ``D_y(t) = e . tanh(u t + v)`` (12 parameters ``y``) scores them:

        f(x, y) = mean_i D_y(r_i) - mean_j D_y(G_x(s_j)) - (lam / 2) |y|^2 + (mu / 2) |x|^2,

    with ``r_i`` fixed draws from the mixture ``N(-1, 0.3^2) / 2 + N(2, 0.3^2) / 2``. ``F = (grad_x f, -grad_y f)`` is exact
    (closed-form gradients); no solution is known in closed form, so :func:`network_game` finds
    a stationary point by deterministic extragradient and stores it with its certified residual
    (``params["certified_residual"]``, the exact ``|F(z*)|``)."""

    def operator(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        flat = z.reshape(-1, z.shape[-1])
        out = np.stack([self._grad(row) for row in flat])
        return out.reshape(z.shape)

    def _grad(self, z: np.ndarray) -> np.ndarray:
        h, real, lat = 4, self.params["real"], self.params["latent"]
        lam, mu = self.params["lam"], self.params["mu"]
        w, b, a, c = z[:h], z[h : 2 * h], z[2 * h : 3 * h], z[3 * h]
        u, v, e = z[3 * h + 1 : 4 * h + 1], z[4 * h + 1 : 5 * h + 1], z[5 * h + 1 : 6 * h + 1]
        hg = np.tanh(np.outer(lat, w) + b)  # (J, h)
        g = hg @ a + c  # generated samples (J,)

        def critic(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            hd = np.tanh(np.outer(t, u) + v)  # (n, h)
            return hd, hd @ e

        hr, _ = critic(real)
        hf, _ = critic(g)
        # d f / d y of mean D(real) - mean D(fake)
        d_e = hr.mean(0) - hf.mean(0)
        sr, sf = (1 - hr**2) * e, (1 - hf**2) * e  # dD/d(pre-activation), (n, h)
        d_u = (sr * real[:, None]).mean(0) - (sf * g[:, None]).mean(0)
        d_v = sr.mean(0) - sf.mean(0)
        grad_y = np.concatenate([d_u, d_v, d_e]) - lam * z[3 * h + 1 :]
        # d f / d x = -mean_j D'(g_j) d g_j / d x
        dd = (sf * u).sum(1)  # dD/dt at the fake samples (J,)
        sg = (1 - hg**2) * a  # (J, h)
        d_w = -(dd[:, None] * sg * lat[:, None]).mean(0)
        d_b = -(dd[:, None] * sg).mean(0)
        d_a = -(dd[:, None] * hg).mean(0)
        d_c = -dd.mean(keepdims=True)
        grad_x = np.concatenate([d_w, d_b, d_a, d_c]) + mu * z[: 3 * h + 1]
        return np.concatenate([grad_x, -grad_y])

    def value(self, z: np.ndarray) -> float:
        """``f(x, y)`` (for gradient checks)."""
        h, real, lat = 4, self.params["real"], self.params["latent"]
        w, b, a, c = z[:h], z[h : 2 * h], z[2 * h : 3 * h], z[3 * h]
        u, v, e = z[3 * h + 1 : 4 * h + 1], z[4 * h + 1 : 5 * h + 1], z[5 * h + 1 : 6 * h + 1]
        g = np.tanh(np.outer(self.params["latent"], w) + b) @ a + c
        d_real = np.tanh(np.outer(real, u) + v) @ e
        d_fake = np.tanh(np.outer(g, u) + v) @ e
        del lat
        return float(
            d_real.mean()
            - d_fake.mean()
            - 0.5 * self.params["lam"] * np.sum(z[3 * h + 1 :] ** 2)
            + 0.5 * self.params["mu"] * np.sum(z[: 3 * h + 1] ** 2)
        )


def network_game(**kwargs: Any) -> NetworkGame:
    """The two-network game of :class:`NetworkGame` (see :func:`build_network_game` for the
    arguments); built once per set of arguments (a few seconds) and copied after that."""
    return copy.deepcopy(_network_game_cached(**kwargs))


@functools.lru_cache(maxsize=8)
def _network_game_cached(**kwargs: Any) -> NetworkGame:
    return build_network_game(**kwargs)


def build_network_game(
    samples: int = 64,
    lam: float = 0.1,
    mu: float = 0.01,
    radius: float = 3.0,
    seed: int = 0,
    tol: float = 1e-10,
) -> NetworkGame:
    """The two-network game of :class:`NetworkGame` on the box ``[-radius, radius]^25``; the
    reference stationary point comes from deterministic extragradient run until ``|F| < tol``."""
    _check_int("network_game: samples", samples, 2)
    rng = np.random.default_rng(seed)
    real = np.where(rng.random(samples) < 0.5, -1.0, 2.0) + 0.3 * rng.standard_normal(samples)
    latent = rng.standard_normal(samples)
    d = 25
    params = {
        "real": real,
        "latent": latent,
        "lam": float(lam),
        "mu": float(mu),
        "radius": float(radius),
        "seed": seed,
    }
    z0 = 0.5 * rng.standard_normal(d)
    prob = NetworkGame(
        "network-game",
        np.full(d, -radius),
        np.full(d, radius),
        np.zeros(d),
        z0,
        1.0,
        False,
        0.0,
        params=params,
    )
    # L: the largest local operator norm seen on random points of the box (finite differences)
    pts = rng.uniform(-1.0, 1.0, (40, d))
    dirs = rng.standard_normal((40, d))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    h = 1e-5
    prob.lipschitz = float(
        max(
            np.linalg.norm(prob.operator(p + h * q) - prob.operator(p)) / h
            for p, q in zip(pts, dirs)
        )
    )
    z = z0.copy()
    step = 0.5 / prob.lipschitz
    for _ in range(100_000):  # extragradient into the basin, then Newton on F(z) = 0 to polish
        zb = prob.project(z - step * prob.operator(z))
        z = prob.project(z - step * prob.operator(zb))
        if prob.residual(z) < 1e-4:
            break
    for _ in range(20):
        if prob.residual(z) < tol:
            break
        jac = np.stack(
            [(prob.operator(z + 1e-7 * e) - prob.operator(z - 1e-7 * e)) / 2e-7 for e in np.eye(d)],
            1,
        )
        z = prob.project(z - np.linalg.solve(jac, prob.operator(z)))
    prob.solution = z
    prob.params["certified_residual"] = prob.residual(z)
    return prob


PROBLEMS: dict[str, Callable[..., VIProblem]] = {
    "bilinear": bilinear,
    "quadratic_game": quadratic_game,
    "lagrangian_qp": lagrangian_qp,
    "weak_minty_quadratic": weak_minty_quadratic,
    "global_forsaken": global_forsaken,
    "network_game": network_game,
}


def make_problem(name: str, **kwargs: Any) -> VIProblem:
    """The problem generator ``name`` (one of :data:`PROBLEMS`) called with ``kwargs``."""
    if name not in PROBLEMS:
        from icml26._entry_points import unknown_name_error

        raise unknown_name_error("VI problem", name, PROBLEMS)
    return PROBLEMS[name](**kwargs)


def _check_int(what: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {value!r}")
