"""Maps from the unit ball ``B`` onto a constraint set ``K``: the exact gauge (radial) map and a
learned invertible network (INN), plus the closed-form ball projection.

* :func:`ball_project`: ``z / max(1, ||z||)`` (the Euclidean projection onto ``B``).
* :class:`GaugeMap`: ``psi(z) = x0 + ||z|| rho(z/||z||) z/||z||`` with the problem's radial
  function ``rho`` (method card, "Exact homeomorphisms"); ``vjp`` is ``J_psi(z)^T v`` from
  ``J = rho I + z (grad_z rho)^T``; ``inverse`` is ``(||x - x0|| / rho(u)) u``.
* :class:`INNMap`: ``psi(z) = x0 + T(z)``, ``T`` = learned per-dimension affine layer followed by
  affine coupling layers (RealNVP-style, bounded log-scales) with fixed permutations, trained
  by the card's minimum-distortion loss: maximize the mean log-volume change, penalize the total
  constraint violation of ``psi(z)`` (weight 10 per median radius of K) and the largest per-layer log-scale (weights
  0.01 mean and 0.1 batch max). Written directly in torch so every layer's scale is at hand.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np


def ball_project(z: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the closed unit ball."""
    z = np.asarray(z, float)
    return z / max(1.0, float(np.linalg.norm(z)))


class GaugeMap:
    """The exact radial homeomorphism ``B -> K`` of a star-shaped set about ``oracle.x0``."""

    def __init__(self, oracle: Any) -> None:
        self.o = oracle
        self.x0 = np.asarray(oracle.x0, float)
        self.n = int(oracle.n)

    def forward(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, float)
        r = float(np.linalg.norm(z))
        if r == 0.0:
            return self.x0.copy()
        u = z / r
        return self.x0 + r * float(self.o.radial(u[None])[0]) * u

    def forward_batch(self, Z: np.ndarray) -> np.ndarray:
        r = np.linalg.norm(Z, axis=1)
        safe = np.where(r > 0, r, 1.0)
        U = Z / safe[:, None]
        U[r == 0] = np.eye(self.n)[0]
        rho = self.o.radial(U)
        return self.x0 + (r * rho)[:, None] * U

    def inverse(self, x: np.ndarray) -> np.ndarray:
        d = np.asarray(x, float) - self.x0
        r = float(np.linalg.norm(d))
        if r == 0.0:
            return np.zeros(self.n)
        u = d / r
        return (r / float(self.o.radial(u[None])[0])) * u

    def vjp(self, z: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``J_psi(z)^T v``; ``psi(z) = x0 + rho(u) z`` so ``J = rho I + z (grad_z rho)^T``."""
        z = np.asarray(z, float)
        r = float(np.linalg.norm(z))
        if r < 1e-12:
            u = v / max(np.linalg.norm(v), 1e-300)
            return float(self.o.radial(u[None])[0]) * v
        u = z / r
        rho, g_u = self.o.radial_grad(u)
        g_z = (g_u - (g_u @ u) * u) / r  # d rho / dz through u = z / |z|
        return rho * v + g_z * float(z @ v)


# ================================================================================ INN
def _torch() -> Any:
    import torch

    return torch


class _Coupling:
    """Affine coupling: ``y_b = x_b * exp(s(x_a)) + t(x_a)``, ``s = clamp * tanh(.)``."""

    def __init__(self, torch: Any, n: int, hidden: int, mask: np.ndarray, clamp: float) -> None:
        nn = torch.nn
        self.torch = torch
        self.mask = torch.tensor(mask, dtype=torch.float64)
        self.clamp = clamp
        self.net = nn.Sequential(
            nn.Linear(n, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 2 * n),
        ).double()
        with torch.no_grad():  # start at the identity
            self.net[-1].weight.zero_()
            self.net[-1].bias.zero_()

    def params(self) -> list[Any]:
        return list(self.net.parameters())

    def forward(self, x: Any) -> tuple[Any, Any]:
        m = self.mask
        st = self.net(x * m)
        s, t = st.chunk(2, dim=-1)
        s = self.clamp * self.torch.tanh(s) * (1 - m)
        t = t * (1 - m)
        return x * m + (1 - m) * (x * self.torch.exp(s) + t), s

    def inverse(self, y: Any) -> Any:
        m = self.mask
        st = self.net(y * m)
        s, t = st.chunk(2, dim=-1)
        s = self.clamp * self.torch.tanh(s) * (1 - m)
        t = t * (1 - m)
        return y * m + (1 - m) * (y - t) * self.torch.exp(-s)


class INNMap:
    """A learned homeomorphism ``psi(z) = x0 + T(z)`` (see the module doc); float64 torch."""

    def __init__(
        self, n: int, x0: np.ndarray, layers: int = 4, hidden: int = 64, seed: int = 0
    ) -> None:
        torch = _torch()
        self.torch = torch
        self.n = n
        self.x0 = np.asarray(x0, float)
        gen = torch.Generator().manual_seed(seed)
        rng = np.random.default_rng(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
            self.layers = []
            for k in range(layers):
                if n == 1:
                    mask = np.zeros(1)
                else:
                    perm = rng.permutation(n)
                    mask = np.zeros(n)
                    mask[perm[: n // 2]] = 1.0
                    if k % 2:
                        mask = 1 - mask
                self.layers.append(_Coupling(torch, n, hidden, mask, clamp=2.0))
        self.log_scale = torch.zeros(n, dtype=torch.float64, requires_grad=True)
        self.shift = torch.zeros(n, dtype=torch.float64, requires_grad=True)
        self.train_time = 0.0
        self.history: list[float] = []

    def params(self) -> list[Any]:
        out = [self.log_scale, self.shift]
        for layer in self.layers:
            out += layer.params()
        return out

    def _forward_t(self, Z: Any) -> tuple[Any, Any, Any]:
        """Torch forward: image ``x``, log|det J| and the largest per-layer log-scale per sample."""
        torch = self.torch
        x = Z * torch.exp(self.log_scale) + self.shift
        logdet = self.log_scale.sum().expand(Z.shape[0])
        dist = self.log_scale.abs().max().expand(Z.shape[0])
        for layer in self.layers:
            x, s = layer.forward(x)
            logdet = logdet + s.sum(-1)
            dist = dist + s.abs().max(-1).values
        return x + torch.tensor(self.x0), logdet, dist

    def forward(self, z: np.ndarray) -> np.ndarray:
        torch = self.torch
        with torch.no_grad():
            x, _, _ = self._forward_t(torch.tensor(np.atleast_2d(z), dtype=torch.float64))
        out = x.numpy()
        return out[0] if np.ndim(z) == 1 else out

    def forward_batch(self, Z: np.ndarray) -> np.ndarray:
        return self.forward(np.atleast_2d(Z))

    def inverse(self, x: np.ndarray) -> np.ndarray:
        torch = self.torch
        with torch.no_grad():
            y = torch.tensor(np.atleast_2d(x) - self.x0, dtype=torch.float64)
            for layer in reversed(self.layers):
                y = layer.inverse(y)
            z = (y - self.shift) * torch.exp(-self.log_scale)
        out = z.numpy()
        return out[0] if np.ndim(x) == 1 else out

    def vjp(self, z: np.ndarray, v: np.ndarray) -> np.ndarray:
        torch = self.torch
        zt = torch.tensor(np.asarray(z, float)[None], dtype=torch.float64, requires_grad=True)
        x, _, _ = self._forward_t(zt)
        (g,) = torch.autograd.grad(x, zt, grad_outputs=torch.tensor(np.asarray(v, float)[None]))
        return g.numpy()[0]

    def fit(
        self,
        oracle: Any,
        iters: int = 600,
        batch: int = 128,
        lr: float = 1e-2,
        seed: int = 0,
        init_scale: float | None = None,
        penalty_weight: float = 10.0,
    ) -> INNMap:
        """Train on the card's minimum-distortion loss with latent samples uniform in the ball."""
        torch = self.torch
        t0 = time.perf_counter()
        rng = np.random.default_rng([seed, 7])
        U = rng.normal(size=(256, self.n))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        radii = oracle.radial(U)
        if init_scale is None:  # start inside K: the image of B is a small ball about x0
            init_scale = 0.5 * float(np.quantile(radii, 0.05))
        # violations are measured in units of the set's median radius, so the card's weight 10
        # means the same on a digits attack (radius ~0.05) as on a QCQP (radius ~3)
        weight = penalty_weight / float(np.median(radii))
        with torch.no_grad():
            self.log_scale.fill_(math.log(max(init_scale, 1e-6)))
        opt = torch.optim.Adam(self.params(), lr=lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, iters // 4), gamma=0.5)
        for _ in range(iters):
            Z = _ball_samples(rng, batch, self.n)
            Z = np.concatenate([Z, np.zeros((1, self.n))])  # keep psi(0) inside K
            Zt = torch.tensor(Z)
            x, logdet, dist = self._forward_t(Zt)
            pen, G = oracle.penalty_grad_batch(x.detach().numpy())
            Gt = torch.tensor(G) / len(Z)
            surrogate = (x * Gt).sum()  # its gradient is that of mean total violation
            loss = (
                -logdet.mean() / self.n + weight * surrogate + 0.01 * dist.mean() + 0.1 * dist.max()
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            self.history.append(float(pen.mean()))
        self.train_time = time.perf_counter() - t0
        return self

    def quality(self, oracle: Any, samples: int = 2000, seed: int = 1) -> dict[str, float]:
        """eps_inn estimates on held-out samples: share of images of latent points that are
        infeasible (> 1e-5), their max and mean violation, and coverage: the share of points of K
        (drawn as ``x0 + r^(1/n) rho(u) u``) whose preimage lies in the ball."""
        rng = np.random.default_rng([seed, 11])
        X = self.forward(_ball_samples(rng, samples, self.n))
        v = oracle.violation_batch(X)
        U = rng.normal(size=(samples, self.n))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        r = rng.uniform(size=samples) ** (1.0 / self.n)
        K = np.asarray(oracle.x0) + (r * oracle.radial(U))[:, None] * U
        cover = np.linalg.norm(self.inverse(K), axis=1) <= 1.0
        return {
            "infeasible_share": float(np.mean(v > 1e-5)),
            "max_violation": float(v.max()),
            "mean_violation": float(v.mean()),
            "coverage": float(np.mean(cover)),
        }


def _ball_samples(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    U = rng.normal(size=(k, n))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return U * (rng.uniform(size=k) ** (1.0 / n))[:, None]
