"""Value estimation from offline Markov-game data: least squares (tabular and linear), counts, BC.

Backward from h = H, ``Q^_h = argmin_w sum_k (phi_k^T w - r_k - V^_{h+1}(s'_k))^2 + lambda |w|^2``
with the samples k of step h. One-hot (tabular) features make it the ridge-shrunk mean per
(h, s, a, b): ``sum_k y_k / (N_h(s, a, b) + lambda)``, computed with ``bincount`` in O(n).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.envs.markov_games.datasets import OfflineDataset, load_dataset

__all__ = [
    "as_dataset",
    "QEstimator",
    "behavior_cloning",
    "value_range",
    "empirical_regularized_gap",
]


def as_dataset(data: Any, who: str) -> OfflineDataset:
    """An :class:`OfflineDataset` from a dataset or a path to a saved .npz (clear TypeError otherwise)."""
    if isinstance(data, OfflineDataset):
        return data
    if isinstance(data, (str,)) or hasattr(data, "__fspath__"):
        return load_dataset(data)
    raise TypeError(
        f"{who}.learn expects an icml26.envs.markov_games.OfflineDataset (or a path to one saved "
        f"with OfflineDataset.save), got {type(data).__name__}"
    )


def value_range(dataset: OfflineDataset, h: int) -> tuple[float, float]:
    """The range of possible returns from step h on: (H - h) * [r_min, r_max] (known reward bounds)."""
    lo, hi = dataset.metadata["game"].get(
        "reward_range", [float(dataset.rewards.min()), float(dataset.rewards.max())]
    )
    steps = dataset.H - h
    return steps * float(lo), steps * float(hi)


class QEstimator:
    """Least-squares Q-estimation per step, tabular or with linear features.

    Args:
        dataset: the offline data.
        lam: ridge parameter lambda (>= 0); with lambda = 0, unvisited (s, a, b) get ``fill``.
        features: ``"tabular"`` (one-hot, bincount fast path), ``"onehot"`` (the same through the
            linear solver; a check), ``"game"`` (the game's known feature map, e.g.
            ``low_rank_game``), or an (H, S, A, B, d) array.
        clip: clip Q^_h to the range of possible returns (H - h) [r_min, r_max].
        fill: the value of unvisited entries when lambda = 0 in the tabular case.
    """

    def __init__(
        self,
        dataset: OfflineDataset,
        lam: float = 1.0,
        features: Any = "tabular",
        clip: bool = True,
        fill: float = 0.0,
    ) -> None:
        if not lam >= 0:
            raise ValueError(f"QEstimator: lam must be >= 0, got {lam!r}")
        self.data = dataset
        self.lam = float(lam)
        self.clip = clip
        self.fill = float(fill)
        H, S, A, B = dataset.shape
        self.shape = (H, S, A, B)
        self.features: np.ndarray | None = None
        if isinstance(features, str):
            if features == "tabular":
                pass
            elif features == "onehot":
                self.features = np.eye(S * A * B).reshape(S, A, B, S * A * B)[None].repeat(H, 0)
            elif features == "game":
                g = dataset.resolve_game()
                if g.features is None:
                    raise ValueError(
                        f"QEstimator(features='game'): game {g.name!r} has no feature map; "
                        "use e.g. make_game('low_rank', ...) or pass an array"
                    )
                self.features = np.asarray(g.features)
            else:
                raise ValueError(
                    f"QEstimator: features must be 'tabular', 'onehot', 'game' or an "
                    f"(H, S, A, B, d) array, got {features!r}"
                )
        else:
            f = np.asarray(features, dtype=np.float64)
            if f.ndim != 5 or f.shape[:4] != (H, S, A, B):
                raise ValueError(
                    f"QEstimator: features must have shape (H, S, A, B, d) with "
                    f"(H, S, A, B) = {(H, S, A, B)}, got {f.shape}"
                )
            self.features = f
        if self.features is not None and self.lam == 0:
            raise ValueError(
                "QEstimator: linear features need lam > 0 (the Gram matrix may be singular)"
            )
        d = dataset
        self._idx = (d.states * A + d.actions_max) * B + d.actions_min  # (n, H) flat (s, a, b)
        self.counts = np.stack(
            [np.bincount(self._idx[:, h], minlength=S * A * B) for h in range(H)]
        ).reshape(H, S, A, B)
        # sufficient statistics, so that q(h, v) costs O(S A B + nnz) instead of O(n):
        # Q^_h = (sum of rewards + C_h v) / (N + lambda), C_h[(s, a, b), s'] next-state counts
        from scipy import sparse

        self._sum_r = np.stack(
            [
                np.bincount(self._idx[:, h], weights=d.rewards[:, h], minlength=S * A * B)
                for h in range(H)
            ]
        )
        ones = np.ones(d.n)
        self._next = [
            sparse.csr_matrix((ones, (self._idx[:, h], d.next_states[:, h])), shape=(S * A * B, S))
            for h in range(H)
        ]
        self._lin: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def q(self, h: int, v_next: np.ndarray) -> np.ndarray:
        """Q^_h (S, A, B) from the step-h samples and the next-step value estimate v_next (S,)."""
        H, S, A, B = self.shape
        v = np.asarray(v_next, dtype=np.float64)
        if self.features is None:
            sums = (self._sum_r[h] + self._next[h] @ v).reshape(S, A, B)
            den = self.counts[h] + self.lam
            Q = np.where(den > 0, sums / np.where(den > 0, den, 1.0), self.fill)
        else:
            if (
                h not in self._lin
            ):  # w = G^-1 phi^T (r + E v): precompute G^-1 phi^T r, G^-1 phi^T E
                phi_all = self.features[h].reshape(S * A * B, -1)
                phi = phi_all[self._idx[:, h]]
                gram = phi.T @ phi + self.lam * np.eye(phi.shape[1])
                rhs_r = phi.T @ self.data.rewards[:, h]
                rhs_e = np.asarray((self._next[h].T @ phi_all).T)  # (d, S) = phi^T E
                sol = np.linalg.solve(gram, np.column_stack([rhs_r, rhs_e]))
                self._lin[h] = (phi_all, sol[:, 0], sol[:, 1:])
            phi_all, w_r, w_e = self._lin[h]
            Q = (phi_all @ (w_r + w_e @ v)).reshape(S, A, B)
        if self.clip:
            lo, hi = value_range(self.data, h)
            Q = np.clip(Q, lo, hi)
        return Q


def empirical_regularized_gap(
    est: QEstimator,
    mu: np.ndarray,
    nu: np.ndarray,
    beta: float,
    p: np.ndarray,
    q: np.ndarray,
    initial: np.ndarray | None = None,
) -> float:
    """The beta-regularized NashConv of (mu, nu) in the *estimated* game: the soft best
    responses of :func:`~icml26.envs.markov_games.metrics.regularized_gap` with ``est.q`` as
    the Bellman operator. ROSE's output has gap 0 here (to rounding), so for SOS-MD this is the
    optimization error alone, on a fixed dataset. ``initial``: weights over states at h = 0
    (default: the empirical initial-state distribution of the data)."""
    from icml26.envs.markov_games.game import masked_log
    from icml26.envs.markov_games.metrics import _logsumexp
    from icml26.envs.markov_games.solvers import kl

    H, S, _, _ = est.shape
    if initial is None:
        initial = np.bincount(est.data.states[:, 0], minlength=S) / est.data.n
    lp, lq = masked_log(p), masked_log(q)
    v_hi, v_lo = np.zeros(S), np.zeros(S)
    for h in reversed(range(H)):
        qa = np.einsum("sab,sb->sa", est.q(h, v_hi), nu[h])
        v_hi = beta * _logsumexp(lp[h] + qa / beta) + beta * kl(nu[h], q[h])
        qb = np.einsum("sa,sab->sb", mu[h], est.q(h, v_lo))
        v_lo = -beta * _logsumexp(lq[h] - qb / beta) - beta * kl(mu[h], p[h])
    return max(float(initial @ (v_hi - v_lo)), 0.0)


def behavior_cloning(
    dataset: OfflineDataset, smoothing: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Empirical action frequencies per (h, s) for both players (add-``smoothing`` counts on
    legal actions), uniform over legal actions where (h, s) was never visited."""
    H, S, A, B = dataset.shape
    out = []
    for acts, n_act, legal in (
        (dataset.actions_max, A, dataset.legal_max),
        (dataset.actions_min, B, dataset.legal_min),
    ):
        flat = (np.arange(H)[None, :] * S + dataset.states) * n_act + acts
        cnt = np.bincount(flat.ravel(), minlength=H * S * n_act).reshape(H, S, n_act).astype(float)
        cnt = (cnt + smoothing) * legal
        tot = cnt.sum(-1, keepdims=True)
        uni = legal / legal.sum(-1, keepdims=True)
        out.append(np.where(tot > 0, cnt / np.where(tot > 0, tot, 1.0), uni))
    return out[0], out[1]
