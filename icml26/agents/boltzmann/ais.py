"""Annealed importance sampling (Neal 2001) with MALA transitions, for FAB-style training.

FAB (Midgley et al. 2023, "Flow Annealed Importance Sampling Bootstrap") runs AIS from the flow
``q`` towards ``q^(1 - alpha) p^alpha`` (``alpha = 2`` minimizes the alpha-2 divergence, whose
optimal AIS target is ``p^2 / q``) and trains ``q`` by the self-normalized, importance-weighted
NLL of the AIS samples (:func:`~icml26.agents.boltzmann.losses.reweighted_nll`). Here the
intermediate densities are ``log pi_b = log q + b * alpha * (-u - log q)`` on a linear ladder
``b_k = k / K`` with one MALA step per level (FAB itself uses HMC); the step size adapts per level
towards an acceptance rate of 0.6. Every energy evaluation goes through the ``energy`` callable,
so a caller can charge them to a budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

__all__ = ["ais", "AISResult"]

EnergyFn = Callable[[Tensor], tuple[Tensor, Tensor]]  # x -> (u(x), -grad u(x)), both detached
LogQFn = Callable[[Tensor], tuple[Tensor, Tensor]]  # x -> (log q(x), grad log q(x)), both detached


class AISResult:
    """``x`` final states, ``log_w`` log AIS weights, ``accept`` mean acceptance per level."""

    def __init__(self, x: Tensor, log_w: Tensor, accept: list[float], step_sizes: Tensor) -> None:
        self.x, self.log_w, self.accept, self.step_sizes = x, log_w, accept, step_sizes


def ais(
    x0: Tensor,
    log_q: LogQFn,
    energy: EnergyFn,
    n_levels: int,
    step_sizes: Tensor,
    generator: torch.Generator,
    alpha: float = 2.0,
    target_accept: float = 0.6,
    adapt: bool = True,
) -> AISResult:
    """AIS from ``q`` (``x0 ~ q``) to ``q^(1 - alpha) p^alpha`` with ``n_levels`` levels.

    ``step_sizes`` ``(n_levels,)`` are the MALA step sizes per level (a new, adapted tensor is
    returned in the result). ``log_w`` is ``sum_k (b_k - b_{k-1}) * alpha * r(x_{k-1})`` with
    ``r = -u - log q``; with ``alpha = 1``, ``logmeanexp(log_w)`` estimates ``log Z``. Chains whose
    energy is not finite get weight ``-inf`` and never move.
    """
    if n_levels < 1:
        raise ValueError(f"ais: n_levels must be >= 1, got {n_levels}")
    if step_sizes.shape != (n_levels,):
        raise ValueError(
            f"ais: step_sizes must have shape ({n_levels},), got {tuple(step_sizes.shape)}"
        )
    x = x0.detach().to(torch.float64)
    lq, glq = log_q(x)
    u, f = energy(x)
    log_w = torch.zeros(x.shape[0], dtype=torch.float64)
    steps = step_sizes.clone().to(torch.float64)
    accept: list[float] = []

    def log_pi(b: float, lq: Tensor, u: Tensor) -> Tensor:
        r = torch.where(torch.isfinite(u), -u - lq, torch.full_like(u, -math.inf))
        return lq + b * alpha * r

    def grad_log_pi(b: float, glq: Tensor, f: Tensor) -> Tensor:
        return (1 - b * alpha) * glq + b * alpha * torch.nan_to_num(
            f, nan=0.0, posinf=0.0, neginf=0.0
        )

    for k in range(1, n_levels + 1):
        b_prev, b = (k - 1) / n_levels, k / n_levels
        log_w = log_w + log_pi(b, lq, u) - log_pi(b_prev, lq, u)
        eps = float(steps[k - 1])
        g = grad_log_pi(b, glq, f)
        noise = torch.randn(x.shape, generator=generator, dtype=torch.float64)
        y = x + eps * g + math.sqrt(2 * eps) * noise
        lq_y, glq_y = log_q(y)
        u_y, f_y = energy(y)
        g_y = grad_log_pi(b, glq_y, f_y)
        fwd = -((y - x - eps * g) ** 2).sum(-1) / (4 * eps)
        bwd = -((x - y - eps * g_y) ** 2).sum(-1) / (4 * eps)
        log_a = log_pi(b, lq_y, u_y) - log_pi(b, lq, u) + bwd - fwd
        log_a = torch.nan_to_num(log_a, nan=-math.inf)
        acc = torch.log(torch.rand(x.shape[0], generator=generator, dtype=torch.float64)) < log_a
        acc = acc & torch.isfinite(u)
        x = torch.where(acc[:, None], y, x)
        lq, u = torch.where(acc, lq_y, lq), torch.where(acc, u_y, u)
        glq, f = torch.where(acc[:, None], glq_y, glq), torch.where(acc[:, None], f_y, f)
        rate = float(acc.double().mean())
        accept.append(rate)
        if adapt:
            steps[k - 1] = eps * math.exp(rate - target_accept)
    return AISResult(x, log_w, accept, steps)
