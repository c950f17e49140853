"""FAB's prioritized replay buffer (Midgley et al. 2023, "Flow Annealed Importance Sampling Bootstrap").

AIS samples ``x`` are stored with their log AIS weights ``log_w`` (AIS towards ``p^2 / q``) and
the flow's log density when they were stored, ``log_q_old``. A replay step draws a batch with
probability proportional to ``w`` (without replacement), trains on the loss
``-mean(w_adjust * log q_new(x))`` with ``w_adjust = q_old(x) / q_new(x)`` (optionally clipped
from above), which corrects for the flow having moved since the sample was stored, and then folds
the adjustment into the stored weight: ``log_w += log q_old - log q_new``, ``log_q_old = log q_new``
(both evaluated before the gradient step, as in the paper's code). The oldest samples leave first
once ``max_length`` is reached.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["PrioritizedBuffer", "buffer_loss"]


class PrioritizedBuffer:
    """A first-in-first-out store of ``(x, log_w, log_q_old)`` sampled with probability ``∝ w``."""

    def __init__(self, max_length: int) -> None:
        if int(max_length) < 1:
            raise ValueError(f"PrioritizedBuffer: max_length must be >= 1, got {max_length!r}")
        self.max_length = int(max_length)
        self.x: Tensor | None = None
        self.log_w = torch.zeros(0, dtype=torch.float64)
        self.log_q_old = torch.zeros(0, dtype=torch.float64)

    def __len__(self) -> int:
        return int(self.log_w.shape[0])

    def add(self, x: Tensor, log_w: Tensor, log_q: Tensor) -> None:
        """Append samples (finite weights only); drop the oldest beyond ``max_length``."""
        if not (x.shape[0] == log_w.shape[0] == log_q.shape[0]):
            raise ValueError(
                f"PrioritizedBuffer.add: x, log_w, log_q need the same length, got "
                f"{x.shape[0]}, {log_w.shape[0]}, {log_q.shape[0]}"
            )
        ok = torch.isfinite(log_w) & torch.isfinite(log_q)
        x, log_w, log_q = x.detach()[ok], log_w.detach().double()[ok], log_q.detach().double()[ok]
        self.x = x if self.x is None else torch.cat([self.x, x])
        self.log_w = torch.cat([self.log_w, log_w])
        self.log_q_old = torch.cat([self.log_q_old, log_q])
        if len(self) > self.max_length:
            self.x = self.x[-self.max_length :]
            self.log_w = self.log_w[-self.max_length :]
            self.log_q_old = self.log_q_old[-self.max_length :]

    def probabilities(self) -> Tensor:
        """Sampling probabilities ``w_i / sum_j w_j``."""
        return torch.softmax(self.log_w, 0)

    def sample_indices(self, n: int, generator: torch.Generator) -> Tensor:
        """``n`` distinct indices drawn sequentially with probability ``∝ w`` (needs ``n <= len``)."""
        if not 1 <= n <= len(self):
            raise ValueError(f"PrioritizedBuffer: cannot draw {n} of {len(self)} samples")
        return torch.multinomial(self.probabilities(), n, replacement=False, generator=generator)

    def adjust(self, idx: Tensor, log_q_new: Tensor) -> None:
        """Fold ``log q_old - log q_new`` into the stored weights of ``idx``; store ``log q_new``."""
        log_q_new = log_q_new.detach().double()
        self.log_w[idx] = self.log_w[idx] + self.log_q_old[idx] - log_q_new
        self.log_q_old[idx] = log_q_new


def buffer_loss(
    log_q_new: Tensor, log_q_old: Tensor, w_clip: float | None = None
) -> tuple[Tensor, Tensor]:
    """FAB's replay loss ``-mean(w_adjust * log_q_new)``, ``w_adjust = exp(log_q_old - log_q_new)``.

    ``log_q_new`` carries the gradient; ``w_adjust`` does not (clipped at ``w_clip`` when given).
    Returns ``(loss, w_adjust)`` with the unclipped ``w_adjust``.
    """
    w_adjust = torch.exp(log_q_old.double() - log_q_new.detach().double())
    w = w_adjust if w_clip is None else torch.clamp(w_adjust, max=float(w_clip))
    return -(w * log_q_new.double()).mean(), w_adjust
