"""Training objectives of Boltzmann generators: NLL, log-dispersions, LDR, reverse KL.

``r = log p~(x) - log q(x) = -u(x) - log q(x)`` is the log-ratio. A log-dispersion measures how
far ``r`` is from constant over samples of a reference distribution R; every measure here is
shift invariant, so the unknown log Z drops out (LDR paper, arXiv 2602.03729; the log-variance
divergence of Richter et al. 2020 / Nüsken and Richter 2021 is the variance case).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["DISPERSIONS", "dispersion", "ldr_loss", "reverse_kl_surrogate"]


def _variance(r: Tensor) -> Tensor:
    return ((r - r.mean()) ** 2).mean()


def _mad(r: Tensor) -> Tensor:
    """Mean absolute deviation around the median."""
    return (r - r.median()).abs().mean()


def _huber(r: Tensor, delta: float = 1.0) -> Tensor:
    """Huber loss of the deviations from the median (quadratic within ``delta``)."""
    a = (r - r.median()).abs()
    return torch.where(a <= delta, 0.5 * a**2, delta * (a - 0.5 * delta)).mean()


def _iqr(r: Tensor) -> Tensor:
    """Interquartile range."""
    q = torch.quantile(r, torch.tensor([0.25, 0.75], dtype=r.dtype))
    return q[1] - q[0]


DISPERSIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "variance": _variance, "mad": _mad, "huber": _huber, "iqr": _iqr,
}


def dispersion(r: Tensor, kind: str = "variance") -> Tensor:
    """The dispersion ``kind`` (one of :data:`DISPERSIONS`) of a 1-D tensor of log-ratios."""
    if kind not in DISPERSIONS:
        raise ValueError(f"unknown dispersion {kind!r}; expected one of {sorted(DISPERSIONS)}")
    finite = torch.isfinite(r)
    return DISPERSIONS[kind](r[finite] if not bool(finite.all()) else r)


def ldr_loss(log_q: Tensor, u: Tensor, lam: float, kind: str = "variance") -> tuple[Tensor, Tensor, Tensor]:
    """LDR on one data batch: ``NLL + lam * Dispersion(-u - log q)`` (same batch, stored ``u``).

    Returns ``(loss, nll, dispersion)``.
    """
    nll = -log_q.mean()
    disp = dispersion(-u - log_q, kind)
    return nll + lam * disp, nll, disp


def reverse_kl_surrogate(x: Tensor, log_q: Tensor, u: Tensor, forces: Tensor) -> Tensor:
    """A loss whose value is KL(q || p) + log Z = E_q[log q + u] and whose gradient is the
    reparametrized reverse-KL gradient, using the forces ``-grad u`` returned by the env
    (``x`` must be the reparametrized samples, ``u`` and ``forces`` constants)."""
    u_link = u.detach() + ((x - x.detach()) * (-forces.detach())).sum(-1)
    return (log_q + u_link).mean()
