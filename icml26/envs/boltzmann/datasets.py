"""Labelled configuration sets (positions and reduced energies), their disk cache, and MCMC.

A :class:`BoltzmannDataset` is what a Boltzmann generator trains on: configurations ``x`` with the
reduced target energy ``u(x)`` of each, as produced by exact sampling, MCMC or OpenMM MD.
Generated pools are cached as ``.npz`` files under ``icml26._paths.cache_dir("boltzmann", ...)``
(``$ICML26_CACHE/boltzmann/``, default ``~/.cache/icml26/boltzmann/``), named by a hash of every
parameter that shapes them and written atomically (temporary file, then rename).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BoltzmannDataset", "cached_arrays", "cache_path", "mala_sample"]


@dataclass
class BoltzmannDataset:
    """Configurations ``x`` (``(n, dim)`` float32) with their reduced energies ``energy``
    (``(n,)`` float64, in kT of the target) and a description of where they came from."""

    x: np.ndarray
    energy: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.x = np.ascontiguousarray(self.x, dtype=np.float32)
        self.energy = np.ascontiguousarray(self.energy, dtype=np.float64)
        if self.x.ndim != 2 or self.energy.shape != (self.x.shape[0],):
            raise ValueError(
                f"BoltzmannDataset: expected x of shape (n, dim) and energy of shape (n,), got "
                f"{self.x.shape} and {self.energy.shape}"
            )

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def subset(self, index: np.ndarray) -> BoltzmannDataset:
        meta = dict(self.meta)
        if "run_id" in meta:  # per-frame run of a decorrelated MD pool
            meta["run_id"] = np.asarray(meta["run_id"])[index]
        return BoltzmannDataset(self.x[index], self.energy[index], meta)

    def as_dict(self) -> dict[str, np.ndarray]:
        return {"x": self.x, "energy": self.energy}


def cache_path(kind: str, params: Mapping[str, Any]) -> Path:
    """``$ICML26_CACHE/boltzmann/<kind>/<kind>-<hash of params>.npz``."""
    from icml26._paths import cache_dir, params_digest

    return cache_dir("boltzmann", kind) / f"{kind}-{params_digest(params)}.npz"


def cached_arrays(
    kind: str, params: Mapping[str, Any], make: Callable[[], dict[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """Load the arrays cached for ``(kind, params)`` or make, save (atomically) and return them."""
    from icml26._paths import cached

    meta = np.array(json.dumps(dict(params), sort_keys=True, default=str))

    def load(path: Path) -> dict[str, np.ndarray]:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files if k != "params"}

    return cached(
        cache_path(kind, params),
        make,
        load,
        lambda arrays, tmp: np.savez(tmp, params=meta, **arrays),
    )


def progress_bar(total: int, desc: str, enabled: bool = True) -> Any:
    """A tqdm bar on stderr (None when disabled)."""
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, dynamic_ncols=True, leave=False)


def mala_sample(
    energy: Callable[[Any], Any],
    x0: np.ndarray,
    n_samples_per_chain: int,
    thin: int,
    burn_in: int,
    seed: int,
    step: float = 1e-3,
    temperature: float = 1.0,
    project: Callable[[Any], Any] | None = None,
    desc: str = "MALA",
    progress: bool = True,
) -> np.ndarray:
    """Metropolis-adjusted Langevin on ``exp(-energy(x) / temperature)``, vectorized over chains.

    ``x0``: ``(chains, dim)`` starting points. ``project`` maps vectors onto the support's tangent
    space (for example removing the centre of mass); proposals stay there and the Metropolis
    ratio is that of the projected chain. The step size is adapted per chain during burn-in
    towards about 60% acceptance and frozen afterwards, so the kept samples come from an exact MCMC.
    Returns ``(chains * n_samples_per_chain, dim)`` float64 samples.
    """
    import torch

    gen = torch.Generator().manual_seed(int(seed))
    proj = project if project is not None else (lambda v: v)
    x = torch.as_tensor(x0, dtype=torch.float64).clone()
    chains = x.shape[0]
    h = torch.full((chains, 1), float(step), dtype=torch.float64)

    def u_and_grad(y: Any) -> tuple[Any, Any]:
        y = y.detach().requires_grad_(True)
        e = energy(y) / temperature
        (g,) = torch.autograd.grad(e.sum(), y)
        return e.detach(), proj(g.detach())

    u, g = u_and_grad(x)
    out = []
    total = burn_in + n_samples_per_chain * thin
    bar = progress_bar(total, desc, progress)
    for it in range(total):
        noise = proj(torch.randn(x.shape, generator=gen, dtype=torch.float64))
        y = x - h * g + torch.sqrt(2 * h) * noise
        uy, gy = u_and_grad(y)
        # log q(x | y) - log q(y | x) for the Langevin proposal
        fwd = ((y - x + h * g) ** 2).sum(-1) / (4 * h[:, 0])
        bwd = ((x - y + h * gy) ** 2).sum(-1) / (4 * h[:, 0])
        log_acc = -(uy - u) - bwd + fwd
        log_acc = torch.nan_to_num(log_acc, nan=-torch.inf)
        accept = torch.log(torch.rand(chains, generator=gen, dtype=torch.float64)) < log_acc
        x = torch.where(accept[:, None], y, x)
        u = torch.where(accept, uy, u)
        g = torch.where(accept[:, None], gy, g)
        if it < burn_in:
            # multiplicative adaptation: equilibrium acceptance ln(1/0.97) / ln(1.02/0.97) = 61%
            h = (h * torch.where(accept, 1.02, 0.97)[:, None]).clamp(1e-7, 1.0)
        elif (it - burn_in) % thin == thin - 1:
            out.append(x.clone())
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return torch.stack(out, 1).reshape(-1, x.shape[-1]).numpy()


class LazyDataset(Mapping[str, np.ndarray]):
    """``info["dataset"]`` of a Boltzmann env: ``{"x", "energy"}`` drawn on first access.

    Reset only records what to draw (target, size, kind, split, seed); the configurations --
    and, for MCMC / MD targets, the generation of the cached reference pool, behind a progress
    bar -- come when ``["x"]`` or ``["energy"]`` is first read. The values are exactly those an
    eager draw with the same seed gives."""

    def __init__(self, target: Any, n: int, kind: str, split: str, seed: int) -> None:
        self._args = (target, int(n), kind, split, int(seed))
        self._data: dict[str, np.ndarray] | None = None

    @property
    def loaded(self) -> bool:
        return self._data is not None

    def _load(self) -> dict[str, np.ndarray]:
        if self._data is None:
            target, n, kind, split, seed = self._args
            ds = target.dataset(n, kind=kind, split=split, seed=seed)
            self._data = {"x": ds.x, "energy": ds.energy}
        return self._data

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in ("x", "energy"):
            raise KeyError(key)
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(("x", "energy"))

    def __len__(self) -> int:
        return 2

    def __repr__(self) -> str:
        target, n, kind, split, _ = self._args
        state = "loaded" if self.loaded else "not drawn yet"
        return f"LazyDataset({target.name}, n={n}, {kind}/{split}, {state})"
