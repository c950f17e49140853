"""Boltzmann targets p(x) = exp(-u(x)) / Z with a common interface.

``make_target(name)`` returns a :class:`Target` with ``dim``, ``energy(x)`` (reduced energy in kT,
batched torch), ``log_z`` where it is known, ``sample(n, seed)`` where exact sampling exists,
and ``dataset(n, kind, split, seed)`` for labelled data sets (exact samples, or subsets of a
cached MCMC / MD pool where exact sampling does not exist).

Targets (constants from the papers that define them):

* ``gmm40``: 40-component Gaussian mixture in 2-D (FAB, Midgley et al. 2023), log Z = 0.
* ``many_well32``: 16 copies of a 2-D double well (FAB), 2^16 modes, log Z known.
* ``funnel10``: Neal's funnel in 10-D, log Z = 0.
* ``dw4``: 4 particles in 2-D with a double-well pair potential (Köhler et al. 2020); reference
  data by MALA.
* ``lj13``: 13 Lennard-Jones particles in 3-D with a harmonic trap (Köhler et al. 2020);
  reference data by MALA.
* ``aldp`` / ``aldp_implicit``: alanine dipeptide (Amber, openmmtools files) in vacuum or OBC1
  implicit solvent at 300 K, see :mod:`icml26.envs.boltzmann.alanine`.

Data kinds: ``"unbiased"`` (the target) and ``"biased"`` (a documented broader distribution:
a higher temperature for the physical systems), both labelled with the *target* energy.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from icml26.envs.boltzmann.datasets import BoltzmannDataset, cached_arrays, mala_sample
from icml26.protocol import derive_seed

__all__ = [
    "Target",
    "GMM40",
    "ManyWell32",
    "Funnel10",
    "DW4",
    "LJ13",
    "remove_mean",
]

DATA_KINDS = ("unbiased", "biased")
SPLITS = ("train", "test")


class Target:
    """A Boltzmann density ``exp(-u(x)) / Z`` on ``R^dim`` (or a documented sub-manifold).

    Attributes: ``name``, ``dim``, ``log_z`` (None when unknown), ``exact`` (``sample`` exists),
    ``geometry`` (``"euclidean"``, ``"com_free"`` for particle systems whose centre of mass is
    fixed at 0, ``"alanine"`` for configurations modulo rigid motion), ``scale`` (typical
    per-coordinate spread, for samplers that start without data), ``bias`` (what ``"biased"``
    data means).
    """

    name: str = ""
    dim: int = 0
    log_z: float | None = None
    exact: bool = False
    geometry: str = "euclidean"
    scale: float = 1.0
    bias: str = ""
    n_particles: int = 0
    spatial_dim: int = 0

    # ---------------------------------------------------------------- energies
    def energy(self, x: Tensor) -> Tensor:
        """Reduced energy u(x) (kT) of ``x`` with shape ``(..., dim)``; differentiable."""
        raise NotImplementedError

    def energy_and_forces(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``(u(x), -grad u(x))`` for a batch ``(n, dim)`` (float64)."""
        x = x.detach().to(torch.float64).requires_grad_(True)
        u = self.energy(x)
        (g,) = torch.autograd.grad(u.sum(), x)
        return u.detach(), -g.detach()

    def log_prob_unnormalized(self, x: Tensor) -> Tensor:
        return -self.energy(x)

    # ---------------------------------------------------------------- samples
    def sample(self, n: int, seed: int = 0) -> Tensor:
        """``n`` exact samples (float64), deterministic in ``seed``."""
        raise NotImplementedError(f"target {self.name!r} has no exact sampler; use dataset()")

    def sample_biased(self, n: int, seed: int = 0) -> Tensor:
        raise NotImplementedError(
            f"target {self.name!r} has no exact biased sampler; use dataset()"
        )

    def pool(self, kind: str, split: str) -> BoltzmannDataset:
        """The cached reference pool of ``kind`` and ``split`` (MCMC / MD targets)."""
        raise NotImplementedError(f"target {self.name!r} samples exactly; it keeps no pool")

    def dataset(
        self, n: int | None = None, kind: str = "unbiased", split: str = "train", seed: int = 0
    ) -> BoltzmannDataset:
        """``n`` labelled configurations of ``kind`` (``"unbiased"`` / ``"biased"``) from
        ``split`` (``"train"`` / ``"test"``), deterministic in ``seed``.

        Exact targets draw fresh samples (``n`` required); the others take a random subset of
        their cached pool (``n=None``: the whole pool).
        """
        if kind not in DATA_KINDS:
            raise ValueError(f"{self.name}: data kind must be one of {DATA_KINDS}, got {kind!r}")
        if split not in SPLITS:
            raise ValueError(f"{self.name}: split must be one of {SPLITS}, got {split!r}")
        if self.exact:
            if n is None:
                raise ValueError(f"{self.name}: exact targets need an explicit dataset size n")
            s = derive_seed(seed, self.name, kind, split)
            x = (self.sample if kind == "unbiased" else self.sample_biased)(int(n), s).float()
            return BoltzmannDataset(
                x.numpy(),
                self.energy(x.double()).numpy(),
                {"target": self.name, "kind": kind, "split": split},
            )
        pool = self.pool(kind, split)
        if n is None:
            return pool
        if not 0 <= n <= len(pool):
            raise ValueError(
                f"{self.name}: asked for {n} configurations of the {kind}/{split} pool, which "
                f"holds {len(pool)}"
            )
        idx = np.sort(
            np.random.default_rng(derive_seed(seed, "subset")).choice(len(pool), n, replace=False)
        )
        return pool.subset(idx)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim}, log_z={self.log_z})"


# ----------------------------------------------------------------------------- GMM-40
class GMM40(Target):
    """40 equally weighted Gaussians in 2-D: means ``(rand(40, 2) - 0.5) * 80`` after
    ``torch.manual_seed(0)``, per-dimension std ``softplus(1) = 1.3133`` (FAB's GMM, Midgley et
    al. 2023). Normalized: log Z = 0. Biased data: each component at twice the temperature
    (std ``sqrt(2) * 1.3133``)."""

    name, dim, log_z, exact, scale = "gmm40", 2, 0.0, True, 23.0
    bias = "components at temperature 2 (std x sqrt(2))"
    n_modes = 40

    def __init__(self, bias_temperature: float = 2.0, means_seed: int = 0) -> None:
        # means_seed != 0: another mixture of the same kind (a validation target for tuning)
        gen = torch.Generator().manual_seed(int(means_seed))
        if means_seed:
            self.name = f"gmm40_means{int(means_seed)}"
        self.means = ((torch.rand(40, 2, generator=gen) - 0.5) * 2 * 40).double()
        self.std = float(torch.nn.functional.softplus(torch.tensor(1.0, dtype=torch.float64)))
        self.bias_temperature = float(bias_temperature)

    def energy(self, x: Tensor) -> Tensor:
        m = self.means.to(x)
        d2 = ((x[..., None, :] - m) ** 2).sum(-1)
        log_n = (
            -0.5 * d2 / self.std**2
            - self.dim * math.log(self.std)
            - 0.5 * self.dim * math.log(2 * math.pi)
        )
        return -(torch.logsumexp(log_n, -1) - math.log(40))

    def _mixture(self, n: int, seed: int, std: float) -> Tensor:
        gen = torch.Generator().manual_seed(int(seed))
        k = torch.randint(0, 40, (n,), generator=gen)
        return self.means[k] + std * torch.randn(n, 2, generator=gen, dtype=torch.float64)

    def sample(self, n: int, seed: int = 0) -> Tensor:
        return self._mixture(n, seed, self.std)

    def sample_biased(self, n: int, seed: int = 0) -> Tensor:
        return self._mixture(n, seed, self.std * math.sqrt(self.bias_temperature))

    def nearest_mode(self, x: Tensor) -> Tensor:
        return ((x[..., None, :] - self.means.to(x)) ** 2).sum(-1).argmin(-1)


# ----------------------------------------------------------------------------- Many-Well-32
_DW_A, _DW_B, _DW_C = -0.5, -6.0, 1.0  # FAB's double well: a x + b x^2 + c x^4 (+ 0.5 y^2)
# Z of exp(-(x^4 - 6 x^2 - 0.5 x)), FAB (Midgley et al. 2023); checked by quadrature in the tests.
_DW_Z1 = 11784.50927


def _double_well_x_sample(n: int, gen: np.random.Generator, temperature: float) -> np.ndarray:
    """Exact samples of p(x) ∝ exp(-(x^4 - 6 x^2 - 0.5 x) / T) by rejection from a two-Gaussian
    proposal (the envelope constant is the maximum ratio on a fine grid, times 1.05)."""

    def log_f(x: np.ndarray) -> np.ndarray:
        return -(_DW_C * x**4 + _DW_B * x**2 + _DW_A * x) / temperature

    grid = np.linspace(-5, 5, 200_001)
    lf = log_f(grid)
    w = np.exp(lf - lf.max())
    left, right = float(w[grid < 0].sum()), float(w[grid >= 0].sum())
    p_right = right / (left + right)
    mu_l, mu_r = (
        float(grid[grid < 0][np.argmax(lf[grid < 0])]),
        float(grid[grid >= 0][np.argmax(lf[grid >= 0])]),
    )
    sd = 0.5 * math.sqrt(temperature)

    def log_g(x: np.ndarray) -> np.ndarray:
        comp = np.stack(
            [
                np.log1p(-p_right) - 0.5 * ((x - mu_l) / sd) ** 2,
                np.log(p_right) - 0.5 * ((x - mu_r) / sd) ** 2,
            ]
        )
        return np.logaddexp(comp[0], comp[1]) - math.log(sd * math.sqrt(2 * math.pi))

    log_m = float(np.max(lf - log_g(grid))) + math.log(1.05)
    out = np.empty(0)
    while out.size < n:
        m = 2 * (n - out.size) + 64
        right_side = gen.random(m) < p_right
        x = np.where(right_side, mu_r, mu_l) + sd * gen.standard_normal(m)
        keep = np.log(gen.random(m)) < log_f(x) - log_g(x) - log_m
        out = np.concatenate([out, x[keep]])
    return out[:n]


class ManyWell32(Target):
    """16 independent copies of ``E(x1, x2) = x1^4 - 6 x1^2 - 0.5 x1 + 0.5 x2^2`` (coordinates
    ``(x[2i], x[2i+1])``), 2^16 modes; log Z = 16 (ln 11784.50927 + 0.5 ln 2 pi) (FAB).
    Exact samples by rejection in x1. Biased data: the exact target at temperature 2."""

    name, dim, exact, scale = "many_well32", 32, True, 1.5
    bias = "the target at temperature 2 (exact)"
    log_z = 16 * (math.log(_DW_Z1) + 0.5 * math.log(2 * math.pi))

    def __init__(self, bias_temperature: float = 2.0) -> None:
        self.bias_temperature = float(bias_temperature)

    def energy(self, x: Tensor) -> Tensor:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return (_DW_C * x1**4 + _DW_B * x1**2 + _DW_A * x1 + 0.5 * x2**2).sum(-1)

    def _sample_t(self, n: int, seed: int, t: float) -> Tensor:
        gen = np.random.default_rng(int(seed))
        x1 = _double_well_x_sample(n * 16, gen, t).reshape(n, 16)
        x2 = math.sqrt(t) * gen.standard_normal((n, 16))
        x = np.empty((n, 32))
        x[:, 0::2], x[:, 1::2] = x1, x2
        return torch.from_numpy(x)

    def sample(self, n: int, seed: int = 0) -> Tensor:
        return self._sample_t(n, seed, 1.0)

    def sample_biased(self, n: int, seed: int = 0) -> Tensor:
        return self._sample_t(n, seed, self.bias_temperature)


# ----------------------------------------------------------------------------- Funnel-10
class Funnel10(Target):
    """Neal's funnel: ``x0 ~ N(0, 3^2)``, ``x_i | x0 ~ N(0, e^{x0})`` for i = 1..9; log Z = 0.
    Biased data: ``x0 ~ N(0, 2 * 3^2)`` (a wider neck distribution), same conditionals."""

    name, dim, log_z, exact, scale = "funnel10", 10, 0.0, True, 3.0
    bias = "x0 with twice the variance"

    def energy(self, x: Tensor) -> Tensor:
        x0, xr = x[..., 0], x[..., 1:]
        lp0 = -0.5 * x0**2 / 9.0 - 0.5 * math.log(2 * math.pi * 9.0)
        lpr = (
            -0.5 * xr**2 * torch.exp(-x0)[..., None]
            - 0.5 * x0[..., None]
            - 0.5 * math.log(2 * math.pi)
        ).sum(-1)
        return -(lp0 + lpr)

    def _sample_v(self, n: int, seed: int, var0: float) -> Tensor:
        gen = torch.Generator().manual_seed(int(seed))
        x0 = math.sqrt(var0) * torch.randn(n, 1, generator=gen, dtype=torch.float64)
        xr = torch.exp(0.5 * x0) * torch.randn(n, 9, generator=gen, dtype=torch.float64)
        return torch.cat([x0, xr], -1)

    def sample(self, n: int, seed: int = 0) -> Tensor:
        return self._sample_v(n, seed, 9.0)

    def sample_biased(self, n: int, seed: int = 0) -> Tensor:
        return self._sample_v(n, seed, 18.0)


# ----------------------------------------------------------------------------- particles
def remove_mean(x: Tensor, n_particles: int, spatial_dim: int) -> Tensor:
    """Subtract each configuration's centre of mass (``(..., n * d)`` layout)."""
    y = x.reshape(*x.shape[:-1], n_particles, spatial_dim)
    return (y - y.mean(-2, keepdim=True)).reshape(x.shape)


def _pair_distances(x: Tensor, n: int, d: int) -> Tensor:
    y = x.reshape(*x.shape[:-1], n, d)
    i, j = torch.triu_indices(n, n, 1)
    return torch.linalg.vector_norm(y[..., i, :] - y[..., j, :], dim=-1)


class _ParticleTarget(Target):
    """Particles whose energy is translation invariant: the support is the centre-of-mass-free
    subspace (configurations with zero mean), densities are w.r.t. its Lebesgue measure."""

    geometry = "com_free"
    init_step = 1e-3
    bias_temperature = 2.0
    # MALA run lengths: (chains, samples per chain, thinning, burn-in steps)
    PRESETS = {"full": (64, 320, 25, 3000), "tiny": (8, 16, 5, 200)}

    def __init__(self, data_preset: str = "full") -> None:
        if data_preset not in self.PRESETS:
            raise ValueError(
                f"{self.name}: data_preset must be one of {sorted(self.PRESETS)}, got {data_preset!r}"
            )
        self.data_preset = data_preset
        self.n_chains, self.per_chain, self.thin, self.burn_in = self.PRESETS[data_preset]

    def _init_chains(self, gen: torch.Generator) -> Tensor:
        raise NotImplementedError

    def pool(self, kind: str, split: str) -> BoltzmannDataset:
        if kind not in DATA_KINDS or split not in SPLITS:
            raise ValueError(f"{self.name}: unknown pool {kind}/{split}")
        params = {
            "target": self.name,
            "kind": kind,
            "split": split,
            "chains": self.n_chains,
            "per_chain": self.per_chain,
            "thin": self.thin,
            "burn_in": self.burn_in,
            "t": 1.0 if kind == "unbiased" else self.bias_temperature,
            "version": 1,
        }
        seed = derive_seed(0, self.name, kind, split)

        def make() -> dict[str, np.ndarray]:
            x0 = self._init_chains(torch.Generator().manual_seed(seed))
            x = mala_sample(
                self.energy,
                x0.numpy(),
                self.per_chain,
                self.thin,
                self.burn_in,
                seed,
                step=self.init_step,
                temperature=params["t"],
                project=lambda v: remove_mean(v, self.n_particles, self.spatial_dim),
                desc=f"MALA {self.name} {kind}/{split}",
            )
            x = x.astype(np.float32)
            return {"x": x, "energy": self.energy(torch.from_numpy(x).double()).numpy()}

        arrays = cached_arrays("mcmc", params, make)
        return BoltzmannDataset(arrays["x"], arrays["energy"], dict(params))


class DW4(_ParticleTarget):
    """4 particles in 2-D, ``u = sum_{i<j} 0.9 (d_ij - 4)^4 - 4 (d_ij - 4)^2`` (Köhler et al.
    2020: a = 0, b = -4, c = 0.9, d0 = 4, tau = 1); the centre of mass is fixed at 0. Reference
    data: MALA (64 chains); biased data: MALA at temperature 2."""

    name, dim, n_particles, spatial_dim, scale = "dw4", 8, 4, 2, 2.0
    bias = "MALA at temperature 2"

    def energy(self, x: Tensor) -> Tensor:
        d = _pair_distances(x, 4, 2) - 4.0
        return (0.9 * d**4 - 4.0 * d**2).sum(-1)

    def _init_chains(self, gen: torch.Generator) -> Tensor:
        x = 2.0 * torch.randn(self.n_chains, self.dim, generator=gen, dtype=torch.float64)
        return remove_mean(x, 4, 2)


class LJ13(_ParticleTarget):
    """13 Lennard-Jones particles in 3-D in a harmonic trap. Pinned convention (bgflow, Köhler et
    al. 2020, tau = 1): ``u = sum_{i<j} [(1/d)^12 - 2 (1/d)^6] + 0.5 sum_i |x_i - mean|^2`` with
    epsilon = r_m = 1, each pair counted once (pair minimum -1 at d = 1). Codes that sum over
    ordered pairs without the 1/2 have twice the LJ term. Reference data: MALA (64 chains x 320
    samples); biased data: MALA at temperature 1.5."""

    name, dim, n_particles, spatial_dim, scale = "lj13", 39, 13, 3, 0.8
    bias = "MALA at temperature 1.5"
    bias_temperature = 1.5
    init_step = 1e-4

    def energy(self, x: Tensor) -> Tensor:
        inv6 = _pair_distances(x, 13, 3).pow(-6)
        lj = (inv6**2 - 2.0 * inv6).sum(-1)
        return lj + 0.5 * (remove_mean(x, 13, 3) ** 2).sum(-1)

    def _init_chains(self, gen: torch.Generator) -> Tensor:
        # random sequential addition in a ball: no two particles closer than 0.95
        out = torch.empty(self.n_chains, 13, 3, dtype=torch.float64)
        for c in range(self.n_chains):
            pts: list[Tensor] = []
            while len(pts) < 13:
                p = (torch.rand(3, generator=gen, dtype=torch.float64) - 0.5) * 3.0
                if all(float(torch.linalg.vector_norm(p - q)) > 0.95 for q in pts):
                    pts.append(p)
            out[c] = torch.stack(pts)
        return remove_mean(out.reshape(self.n_chains, 39), 13, 3)
