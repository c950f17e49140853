"""Training objectives of Boltzmann generators: NLL, log-dispersions, LDR, reverse KL,
ML + reverse KL, importance-reweighted NLL, and the log-weights that undo a data set's bias.

``r = log p~(x) - log q(x) = -u(x) - log q(x)`` is the log-ratio. A log-dispersion measures how
far ``r`` is from constant over samples of a reference distribution R; every measure here is
shift invariant, so the unknown log Z drops out (LDR paper, arXiv 2602.03729; the log-variance
divergence of Richter et al. 2020 / Nüsken and Richter 2021 is the variance case).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "DISPERSIONS",
    "dispersion",
    "ldr_loss",
    "reverse_kl_surrogate",
    "ml_rkl_loss",
    "reweighted_nll",
    "bias_log_weights",
]


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
    "variance": _variance,
    "mad": _mad,
    "huber": _huber,
    "iqr": _iqr,
}


def dispersion(r: Tensor, kind: str = "variance") -> Tensor:
    """The dispersion ``kind`` (one of :data:`DISPERSIONS`) of a 1-D tensor of log-ratios."""
    if kind not in DISPERSIONS:
        raise ValueError(f"unknown dispersion {kind!r}; expected one of {sorted(DISPERSIONS)}")
    finite = torch.isfinite(r)
    return DISPERSIONS[kind](r[finite] if not bool(finite.all()) else r)


def ldr_loss(
    log_q: Tensor, u: Tensor, lam: float, kind: str = "variance"
) -> tuple[Tensor, Tensor, Tensor]:
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


def ml_rkl_loss(
    log_q_data: Tensor,
    x_model: Tensor,
    log_q_model: Tensor,
    u_model: Tensor,
    forces: Tensor,
    lam: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """ML + reverse KL (Noé et al. 2019): ``-mean log q(data) + lam * mean_q(log q + u)``, the
    second term on reparametrized model samples with their energies and forces bought from the env.

    Returns ``(loss, nll, rkl)`` with ``rkl`` = KL(q || p) - log Z (the value of the surrogate).
    """
    nll = -log_q_data.mean()
    rkl = reverse_kl_surrogate(x_model, log_q_model, u_model, forces)
    return nll + lam * rkl, nll, rkl


def reweighted_nll(log_q: Tensor, log_w: Tensor) -> Tensor:
    """Self-normalized importance-weighted NLL ``-sum_i w_i log q(x_i) / sum_i w_i`` with
    ``w_i = exp(log_w_i)`` (the normalization of the weights drops out)."""
    if log_q.shape != log_w.shape:
        raise ValueError(
            f"reweighted_nll: log_q and log_w must have the same shape, got "
            f"{tuple(log_q.shape)} and {tuple(log_w.shape)}"
        )
    wn = torch.softmax(log_w.to(log_q.dtype), 0)
    return -(wn * log_q).sum()


def bias_log_weights(target: Any, x: Tensor, u: Tensor, kind: str) -> Tensor:
    """``log p(x) - log p_bias(x)`` up to a constant, for data of ``kind`` drawn from ``target``'s
    ``"biased"`` distribution (zeros for ``"unbiased"`` data), ``u`` the stored target energies.

    The biased distributions are those the targets generate (``icml26.envs.boltzmann``):
    tempered targets (Many-Well-32 exact at ``T_b``, DW4 / LJ13 MALA at ``T_b``, alanine
    dipeptide MD at ``bias_temperature`` vs ``temperature``) have ``p_bias ∝ exp(-u T / T_b)``,
    so ``log w = -(1 - T / T_b) u``; GMM-40's components are widened to ``std * sqrt(T_b)``
    (the exact mixture density is used); Funnel-10's ``x0`` has variance 18 instead of 9.
    """
    if kind == "unbiased":
        return torch.zeros_like(u, dtype=torch.float64)
    if kind != "biased":
        raise ValueError(f"bias_log_weights: kind must be 'unbiased' or 'biased', got {kind!r}")
    from icml26.envs.boltzmann.targets import GMM40, Funnel10

    u = u.to(torch.float64)
    x = x.to(torch.float64)
    if isinstance(target, GMM40):
        std_b = target.std * math.sqrt(target.bias_temperature)
        d2 = ((x[..., None, :] - target.means.to(x)) ** 2).sum(-1)
        log_pb = torch.logsumexp(-0.5 * d2 / std_b**2, -1) - target.dim * math.log(std_b)
        return -u - log_pb
    if isinstance(target, Funnel10):
        return -(x[..., 0] ** 2) / 18.0 + x[..., 0] ** 2 / 36.0
    t_b = getattr(target, "bias_temperature", None)
    if t_b is None:
        raise ValueError(
            f"bias_log_weights: no known biased density for target {getattr(target, 'name', target)!r}"
        )
    ratio = float(getattr(target, "temperature", 1.0)) / float(t_b)  # T / T_b
    return -(1.0 - ratio) * u
