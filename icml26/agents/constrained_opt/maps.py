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
            _mdh_update(opt, sched, logdet.mean() / self.n, weight * surrogate, dist)
            self.history.append(float(pen.mean()))
        self.train_time = time.perf_counter() - t0
        return self

    def quality(self, oracle: Any, samples: int = 2000, seed: int = 1) -> dict[str, float]:
        """Held-out eps_inn estimates (:func:`map_quality`)."""
        return map_quality(self, oracle, samples, seed)


def map_quality(psi: Any, oracle: Any, samples: int = 2000, seed: int = 1) -> dict[str, float]:
    """eps_inn estimates of a map ``psi`` (``forward``, ``inverse``) on held-out samples: share
    of images of latent points uniform in the ball that are infeasible (> 1e-5), their max and
    mean violation, and coverage: the share of points of K (drawn as ``x0 + r^(1/n) rho(u) u``)
    whose preimage lies in the ball."""
    n = int(oracle.n)
    rng = np.random.default_rng([seed, 11])
    X = psi.forward(_ball_samples(rng, samples, n))
    v = oracle.violation_batch(X)
    U = rng.normal(size=(samples, n))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    r = rng.uniform(size=samples) ** (1.0 / n)
    K = np.asarray(oracle.x0) + (r * oracle.radial(U))[:, None] * U
    cover = np.linalg.norm(psi.inverse(K), axis=1) <= 1.0
    return {
        "infeasible_share": float(np.mean(v > 1e-5)),
        "max_violation": float(v.max()),
        "mean_violation": float(v.mean()),
        "coverage": float(np.mean(cover)),
    }


def _mdh_update(opt: Any, sched: Any, logdet_per_dim: Any, violation: Any, dist: Any) -> None:
    """One optimizer step on the training loss of both INNs: minus the volume term (log det per
    dimension), the weighted violation surrogate, and the pull of the anchor distances."""
    loss = -logdet_per_dim + violation + 0.01 * dist.mean() + 0.1 * dist.max()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()


def _ball_samples(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    U = rng.normal(size=(k, n))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return U * (rng.uniform(size=k) ** (1.0 / n))[:, None]


# ================================================================================ conditional INN
class _CondCoupling:
    """Affine coupling conditioned on an instance embedding ``e``:
    ``y_b = x_b exp(s(x_a, e)) + t(x_a, e)``, ``s = clamp tanh(.)``; starts at the identity."""

    def __init__(
        self, torch: Any, n: int, embed: int, hidden: int, mask: np.ndarray, clamp: float
    ) -> None:
        nn = torch.nn
        self.torch = torch
        self.mask = torch.tensor(mask, dtype=torch.float64)
        self.clamp = clamp
        self.net = nn.Sequential(
            nn.Linear(n + embed, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 2 * n),
        ).double()
        with torch.no_grad():
            self.net[-1].weight.zero_()
            self.net[-1].bias.zero_()

    def _st(self, x: Any, e: Any) -> tuple[Any, Any]:
        m = self.mask
        s, t = self.net(self.torch.cat([x * m, e], dim=-1)).chunk(2, dim=-1)
        return self.clamp * self.torch.tanh(s) * (1 - m), t * (1 - m)

    def forward(self, x: Any, e: Any) -> tuple[Any, Any]:
        s, t = self._st(x, e)
        m = self.mask
        return x * m + (1 - m) * (x * self.torch.exp(s) + t), s

    def inverse(self, y: Any, e: Any) -> Any:
        s, t = self._st(y, e)
        m = self.mask
        return y * m + (1 - m) * (y - t) * self.torch.exp(-s)


class CondINNMap:
    """One INN for a whole parametric family: ``psi(z; c) = x0(c) + T(z; e(c))``, ``c`` an
    instance's parameters (its ``condition``), ``e`` an MLP encoding of ``c`` computed once per
    instance. ``T`` = a per-dimension affine layer whose log-scale and shift are linear in ``e``,
    then affine coupling layers whose scale/shift networks see ``e`` (the homopt release
    conditions its INN the same way, through an encoder of the instance parameters; its
    layers are MADE blocks with ActNorm and LU layers, ours RealNVP-style couplings).

    :meth:`fit` trains on instances drawn from a family (:class:`~icml26.envs.constrained_opt.
    problems.Family`) with the card's minimum-distortion loss, as :meth:`INNMap.fit` does per
    instance; :meth:`bind` returns the map of one instance (``forward``, ``inverse``, ``vjp``),
    which Hom-PGD+ uses without further training. float64 torch throughout."""

    def __init__(
        self,
        n: int,
        cond_dim: int,
        layers: int = 4,
        hidden: int = 64,
        embed: int = 32,
        seed: int = 0,
    ) -> None:
        torch = _torch()
        nn = torch.nn
        self.torch = torch
        self.n, self.cond_dim, self.embed_dim = int(n), int(cond_dim), int(embed)
        self.config = {"layers": layers, "hidden": hidden, "embed": embed, "seed": seed}
        rng = np.random.default_rng([seed, 13])
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(rng.integers(0, 2**31 - 1)))
            self.encoder = nn.Sequential(
                nn.Linear(cond_dim, hidden), nn.Tanh(), nn.Linear(hidden, embed), nn.Tanh()
            ).double()
            self.base = nn.Linear(embed, 2 * n).double()  # per-dimension log-scale and shift
            with torch.no_grad():
                self.base.weight.zero_()
                self.base.bias.zero_()
            self.layers = []
            for k in range(layers):
                if n == 1:
                    mask = np.zeros(1)
                else:
                    mask = np.zeros(n)
                    mask[rng.permutation(n)[: n // 2]] = 1.0
                    if k % 2:
                        mask = 1 - mask
                self.layers.append(_CondCoupling(torch, n, embed, hidden, mask, clamp=2.0))
        self.train_time = 0.0
        self.train_cpu = 0.0
        self.history: list[dict[str, float]] = []

    def params(self) -> list[Any]:
        out = list(self.encoder.parameters()) + list(self.base.parameters())
        for layer in self.layers:
            out += list(layer.net.parameters())
        return out

    def num_params(self) -> int:
        return int(sum(p.numel() for p in self.params()))

    def encode(self, C: Any) -> Any:
        """Embeddings ``(B, embed)`` of conditions ``(B, cond_dim)`` (a torch tensor)."""
        return self.encoder(C)

    def _forward_t(self, Z: Any, E: Any, X0: Any) -> tuple[Any, Any, Any]:
        """Images, log|det J| and the largest per-layer log-scale, per row of ``Z``."""
        torch = self.torch
        log_s, shift = self.base(E).chunk(2, dim=-1)
        x = Z * torch.exp(log_s) + shift
        logdet = log_s.sum(-1)
        dist = log_s.abs().max(-1).values
        for layer in self.layers:
            x, s = layer.forward(x, E)
            logdet = logdet + s.sum(-1)
            dist = dist + s.abs().max(-1).values
        return x + X0, logdet, dist

    def _inverse_t(self, X: Any, E: Any, X0: Any) -> Any:
        torch = self.torch
        y = X - X0
        for layer in reversed(self.layers):
            y = layer.inverse(y, E)
        log_s, shift = self.base(E).chunk(2, dim=-1)
        return (y - shift) * torch.exp(-log_s)

    def bind(self, condition: np.ndarray, x0: np.ndarray) -> BoundCondINN:
        """The map of one instance (its parameters ``condition`` and anchor ``x0``)."""
        return BoundCondINN(self, condition, x0)

    def fit(
        self,
        family: Any,
        steps: int = 2000,
        *,
        seed: int = 0,
        batch_instances: int = 4,
        batch_latent: int = 32,
        lr: float = 2e-3,
        penalty_weight: float = 10.0,
        validation: list[Any] | None = None,
        val_every: int = 0,
        progress: Any = None,
    ) -> CondINNMap:
        """Train on ``steps`` batches of ``batch_instances`` training instances
        (``family.train_instance(rng)``) x ``batch_latent`` latent points uniform in the ball
        (plus the centre, kept inside K). Loss (method card, step 3): ``-mean log|det J| / n
        + w mean total violation + 0.01 mean distortion + 0.1 max distortion`` with the
        release's weights (``w = penalty_weight = 10`` on violations in the problem's units;
        :meth:`INNMap.fit` divides it by the set's median radius). Adam, learning rate halved at 50% and 75%
        of the steps. ``validation`` (problems never trained on) is scored every ``val_every``
        steps (:func:`map_quality`, 256 samples each) into ``history``; ``train_time`` /
        ``train_cpu`` are the wall / CPU seconds of the whole call, validation included."""
        torch = self.torch
        t0, c0 = time.perf_counter(), time.process_time()
        rng = np.random.default_rng([seed, 7])
        U = rng.normal(size=(64, self.n))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        radii = np.concatenate([family.train_instance(rng).radial(U) for _ in range(4)])
        weight = float(penalty_weight)  # the release's w_penalty, on violations in problem units
        with torch.no_grad():  # start inside K: the image of B is a small ball about x0
            self.base.bias[: self.n].fill_(
                math.log(max(0.5 * float(np.quantile(radii, 0.05)), 1e-6))
            )
        opt = torch.optim.Adam(self.params(), lr=lr)
        sched = torch.optim.lr_scheduler.MultiStepLR(
            opt, milestones=[max(1, steps // 2), max(1, (3 * steps) // 4)], gamma=0.5
        )
        k, bz = int(batch_instances), int(batch_latent)
        for step in range(steps):
            probs = [family.train_instance(rng) for _ in range(k)]
            C = torch.tensor(np.stack([p.condition for p in probs]))
            X0 = torch.tensor(np.repeat(np.stack([p.x0 for p in probs]), bz + 1, axis=0))
            Z = np.concatenate(
                [
                    np.concatenate([_ball_samples(rng, bz, self.n), np.zeros((1, self.n))])
                    for _ in probs
                ]
            )
            E = self.encode(C).repeat_interleave(bz + 1, dim=0)
            x, logdet, dist = self._forward_t(torch.tensor(Z), E, X0)
            xs = x.detach().numpy()
            G = np.empty_like(xs)
            pen = 0.0
            for i, p in enumerate(probs):
                sl = slice(i * (bz + 1), (i + 1) * (bz + 1))
                tot, G[sl] = p.penalty_grad_batch(xs[sl])
                pen += float(tot.mean()) / k
            surrogate = (x * torch.tensor(G)).sum() / len(Z)  # gradient of the mean violation
            _mdh_update(opt, sched, logdet.mean() / self.n, weight * surrogate, dist)
            rec: dict[str, float] = {"step": step + 1, "penalty": pen}
            if validation and val_every and ((step + 1) % val_every == 0 or step + 1 == steps):
                rec.update(self.validate(validation))
            self.history.append(rec)
            if progress is not None:
                progress(step + 1, rec)
        self.train_time = time.perf_counter() - t0
        self.train_cpu = time.process_time() - c0
        return self

    def validate(self, problems: list[Any], samples: int = 256) -> dict[str, float]:
        """Mean held-out infeasible share, max violation and coverage over ``problems``."""
        qs = [map_quality(self.bind(p.condition, p.x0), p, samples, seed=3) for p in problems]
        return {
            "val_infeasible_share": float(np.mean([q["infeasible_share"] for q in qs])),
            "val_max_violation": float(np.max([q["max_violation"] for q in qs])),
            "val_coverage": float(np.mean([q["coverage"] for q in qs])),
        }


class BoundCondINN:
    """A :class:`CondINNMap` fixed to one instance: ``forward`` / ``forward_batch`` /
    ``inverse`` / ``vjp`` as :class:`INNMap` (its embedding is computed once here);
    ``train_time`` is 0 (the family's training is amortized, reported by the agent)."""

    def __init__(self, cinn: CondINNMap, condition: np.ndarray, x0: np.ndarray) -> None:
        torch = cinn.torch
        self.torch, self.cinn = torch, cinn
        self.n = cinn.n
        self.x0 = np.asarray(x0, float)
        c = np.asarray(condition, float).reshape(1, -1)
        if c.shape[1] != cinn.cond_dim:
            raise ValueError(
                f"CondINNMap: condition must have {cinn.cond_dim} entries, got {c.shape[1]}"
            )
        with torch.no_grad():
            self.e = cinn.encode(torch.tensor(c))
        self.x0_t = torch.tensor(self.x0[None])
        self.train_time = 0.0

    def _fwd(self, Z: Any) -> Any:
        x, _, _ = self.cinn._forward_t(Z, self.e.expand(Z.shape[0], -1), self.x0_t)
        return x

    def forward(self, z: np.ndarray) -> np.ndarray:
        torch = self.torch
        with torch.no_grad():
            out = self._fwd(torch.tensor(np.atleast_2d(z), dtype=torch.float64)).numpy()
        return out[0] if np.ndim(z) == 1 else out

    def forward_batch(self, Z: np.ndarray) -> np.ndarray:
        return self.forward(np.atleast_2d(Z))

    def inverse(self, x: np.ndarray) -> np.ndarray:
        torch = self.torch
        X = torch.tensor(np.atleast_2d(x), dtype=torch.float64)
        with torch.no_grad():
            out = self.cinn._inverse_t(X, self.e.expand(X.shape[0], -1), self.x0_t).numpy()
        return out[0] if np.ndim(x) == 1 else out

    def vjp(self, z: np.ndarray, v: np.ndarray) -> np.ndarray:
        torch = self.torch
        zt = torch.tensor(np.asarray(z, float)[None], dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(
            self._fwd(zt), zt, grad_outputs=torch.tensor(np.asarray(v, float)[None])
        )
        return g.numpy()[0]

    def quality(self, oracle: Any, samples: int = 2000, seed: int = 1) -> dict[str, float]:
        return map_quality(self, oracle, samples, seed)
