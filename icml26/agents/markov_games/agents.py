"""SOS-MD, ROSE and the baselines for offline two-player zero-sum Markov games.

Every agent learns from an :class:`~icml26.envs.markov_games.OfflineDataset` with
``learn(dataset, budget)`` and exposes its policy tables with ``policy() -> (mu, nu)``
((H, S, A) and (H, S, B)), so the duality gap is computed exactly. ``act(observation, info)``
samples the max player's action at observation ``[h, s]`` (the Gymnasium view) or, with
``info["player"] == "min"``, the min player's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from icml26.agents.markov_games.estimation import (
    QEstimator,
    as_dataset,
    behavior_cloning,
    value_range,
)
from icml26.agents.markov_games.mirror_descent import VARIANTS, self_play_md, stage_value
from icml26.envs.markov_games.datasets import OfflineDataset
from icml26.envs.markov_games.game import sample_categorical
from icml26.envs.markov_games.metrics import nash_equilibrium
from icml26.envs.markov_games.solvers import solve_matrix_games, solve_regularized_matrix_games

__all__ = [
    "TabularGameAgent",
    "SOSMD",
    "ROSE",
    "NashVI",
    "PessimisticNashVI",
    "BehaviorCloning",
    "SelfPlayMD",
    "NashOracle",
]


class TabularGameAgent:
    """Base class: policy tables, ``act`` by sampling them, ``learn`` on a dataset within budget."""

    version = "1"

    def __init__(self) -> None:
        self.mu: np.ndarray | None = None
        self.nu: np.ndarray | None = None
        self._rng = np.random.default_rng()
        self.stats: dict[str, Any] = {}

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)

    def learn(self, env_or_dataset: Any, budget: Any = None) -> Mapping[str, Any]:
        """Fit on an OfflineDataset (or a saved .npz path); uses at most ``budget.dataset_size``
        trajectories (the first ones). Returns training statistics."""
        ds = as_dataset(env_or_dataset, type(self).__name__)
        limit = getattr(budget, "dataset_size", None) if budget is not None else None
        if limit is not None and ds.n > limit:
            ds = ds.head(int(limit))
        self.stats = {"n": ds.n}
        self._fit(ds)
        return dict(self.stats)

    def _fit(self, dataset: OfflineDataset) -> None:
        raise NotImplementedError

    def policy(self) -> tuple[np.ndarray, np.ndarray]:
        """``(mu (H, S, A), nu (H, S, B))``, copies of the learned tables."""
        if self.mu is None or self.nu is None:
            raise RuntimeError(f"{type(self).__name__}: call learn(dataset) before policy()")
        return self.mu.copy(), self.nu.copy()

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> int:
        if self.mu is None or self.nu is None:
            raise RuntimeError(f"{type(self).__name__}: call learn(dataset) before act()")
        obs = observation["observation"] if isinstance(observation, Mapping) else observation
        h, s = (int(x) for x in np.asarray(obs).ravel()[:2])
        player = (info or {}).get("player", "max")
        table = self.mu if player == "max" else self.nu
        if not 0 <= h < table.shape[0]:
            raise ValueError(
                f"{type(self).__name__}.act: step {h} outside [0, {table.shape[0]}) "
                "(the episode has ended)"
            )
        return int(sample_categorical(table[h, s][None], self._rng.random(1))[0])


def _references(
    ds: OfflineDataset, reference: str, smoothing: float
) -> tuple[np.ndarray, np.ndarray]:
    if reference == "behavior":
        return ds.reference_mu, ds.reference_nu
    if reference == "bc":
        return behavior_cloning(ds, smoothing)
    if reference == "uniform":
        lm, ln = ds.legal_max.astype(float), ds.legal_min.astype(float)
        return lm / lm.sum(-1, keepdims=True), ln / ln.sum(-1, keepdims=True)
    raise ValueError(f"reference must be 'behavior', 'bc' or 'uniform', got {reference!r}")


class SOSMD(TabularGameAgent):
    """Sequential Offline Self-play Mirror Descent (SOS-MD; ICML 2026, arXiv 2605.13025).

    Backward from h = H: least-squares Q^_h from the data (tabular or linear features, ridge
    ``lam``), then T self-play mirror-descent steps on every state's KL-regularized stage game
    (step ``eta``, regularization ``beta`` toward the reference), output the last iterate and
    pass its regularized value back. ``reference``: ``"behavior"`` (the data's exact marginal
    behavior policy, the paper's reference), ``"bc"`` (estimated from the data) or
    ``"uniform"``. ``variant="magnetic"`` uses the implicit MMD update. ``eta="auto"`` takes the
    per-state step ``beta / (beta^2 + (L/2)^2)`` (L: spread of Q^_h(s)) that maximizes the
    contraction of the update; the iteration count needed grows like (L / beta)^2.
    """

    def __init__(
        self,
        beta: float = 0.1,
        eta: float | str = "auto",
        T: int = 1000,
        lam: float = 1.0,
        features: Any = "tabular",
        reference: str = "behavior",
        variant: str = "explicit",
        clip: bool = True,
        bc_smoothing: float = 0.0,
    ) -> None:
        super().__init__()
        if not beta > 0:
            raise ValueError(f"SOSMD: beta must be > 0 (use SelfPlayMD for beta = 0), got {beta!r}")
        if variant not in VARIANTS:
            raise ValueError(f"SOSMD: variant must be one of {VARIANTS}, got {variant!r}")
        if isinstance(eta, str):
            if eta != "auto":
                raise ValueError(f"SOSMD: eta must be a number > 0 or 'auto', got {eta!r}")
        elif not eta > 0 or (variant == "explicit" and eta * beta > 1):
            raise ValueError(
                f"SOSMD: need eta > 0 and (explicit update) eta * beta <= 1, got eta={eta}, beta={beta}"
            )
        if not isinstance(T, (int, np.integer)) or T < 0:
            raise ValueError(f"SOSMD: T must be an integer >= 0, got {T!r}")
        self.beta, self.eta, self.T, self.lam = (
            float(beta),
            eta if isinstance(eta, str) else float(eta),
            int(T),
            float(lam),
        )
        self.features, self.reference, self.variant = features, reference, variant
        self.clip, self.bc_smoothing = clip, bc_smoothing

    def _fit(self, ds: OfflineDataset) -> None:
        est = QEstimator(ds, self.lam, self.features, self.clip)
        p, q = _references(ds, self.reference, self.bc_smoothing)
        H, S, A, B = ds.shape
        self.mu, self.nu = np.zeros((H, S, A)), np.zeros((H, S, B))
        v = np.zeros(S)
        for h in reversed(range(H)):
            Q = est.q(h, v)
            self.mu[h], self.nu[h], _, _ = self_play_md(
                Q, self.beta, self.eta, self.T, p[h], q[h], self.variant
            )
            v = stage_value(Q, self.mu[h], self.nu[h], self.beta, p[h], q[h])
        self.stats["value_estimate"] = float(
            v[ds.states[:, 0]].mean()
        )  # regularized, from the data


class ROSE(TabularGameAgent):
    """Regularized Offline Sequential Equilibrium (ROSE): least-squares Q^_h backward in h and
    the *exact* equilibrium of every KL-regularized stage game (no optimization error)."""

    def __init__(
        self,
        beta: float = 0.1,
        lam: float = 1.0,
        features: Any = "tabular",
        reference: str = "behavior",
        clip: bool = True,
        bc_smoothing: float = 0.0,
    ) -> None:
        super().__init__()
        if not beta > 0:
            raise ValueError(f"ROSE: beta must be > 0, got {beta!r}")
        self.beta, self.lam, self.features, self.reference = (
            float(beta),
            float(lam),
            features,
            reference,
        )
        self.clip, self.bc_smoothing = clip, bc_smoothing

    def _fit(self, ds: OfflineDataset) -> None:
        est = QEstimator(ds, self.lam, self.features, self.clip)
        p, q = _references(ds, self.reference, self.bc_smoothing)
        H, S, A, B = ds.shape
        self.mu, self.nu = np.zeros((H, S, A)), np.zeros((H, S, B))
        v = np.zeros(S)
        for h in reversed(range(H)):
            Q = est.q(h, v)
            self.mu[h], self.nu[h], v = solve_regularized_matrix_games(Q, self.beta, p[h], q[h])


class NashVI(TabularGameAgent):
    """Plug-in Nash value iteration on the empirical model: Q^_h = empirical mean of
    r + V^_{h+1}(s') per (h, s, a, b) (``fill`` where unvisited), exact Nash per stage (LP)."""

    def __init__(self, lam: float = 0.0, fill: float = 0.0) -> None:
        super().__init__()
        self.lam, self.fill = float(lam), float(fill)

    def _fit(self, ds: OfflineDataset) -> None:
        est = QEstimator(ds, self.lam, "tabular", clip=True, fill=self.fill)
        H, S, A, B = ds.shape
        self.mu, self.nu = np.zeros((H, S, A)), np.zeros((H, S, B))
        v = np.zeros(S)
        for h in reversed(range(H)):
            self.mu[h], self.nu[h], v = solve_matrix_games(
                est.q(h, v), ds.legal_max[h], ds.legal_min[h]
            )


class PessimisticNashVI(TabularGameAgent):
    """Pessimistic Nash value iteration with lower/upper confidence bounds (VI-LCB-Game style;
    Cui & Du 2022, Yan et al. 2022).

    ``Q_lo = clip(Q^(V_lo) - b)``, ``Q_hi = clip(Q^(V_hi) + b)`` with the Hoeffding bonus
    ``b_h = c (H - h)(r_max - r_min) sqrt(log(2 H S A B n / delta) / max(N_h(s, a, b), 1))``
    (the full range where N = 0); the max player plays the maximin strategy of ``Q_lo`` and
    the min player the minimax strategy of ``Q_hi``. The theory constant c = 1 is so
    conservative that on the S = 10, A = B = 3, H = 5 random game the policy stays at the
    pessimistic corner until n ~ 1e5 (gap 2.4 at n = 1e4); the default c = 0.1 is the best of
    {1, 0.3, 0.1} there (0.05 at n = 1e4).
    """

    def __init__(self, c: float = 0.1, delta: float = 0.1) -> None:
        super().__init__()
        if not c >= 0 or not 0 < delta < 1:
            raise ValueError(
                f"PessimisticNashVI: need c >= 0 and 0 < delta < 1, got c={c}, delta={delta}"
            )
        self.c, self.delta = float(c), float(delta)

    def _fit(self, ds: OfflineDataset) -> None:
        est = QEstimator(ds, 0.0, "tabular", clip=False)
        H, S, A, B = ds.shape
        log_term = np.log(2 * H * S * A * B * max(ds.n, 1) / self.delta)
        self.mu, self.nu = np.zeros((H, S, A)), np.zeros((H, S, B))
        v_lo, v_hi = np.zeros(S), np.zeros(S)
        for h in reversed(range(H)):
            lo, hi = value_range(ds, h)
            N = est.counts[h]
            bonus = np.where(
                N > 0, self.c * (hi - lo) * np.sqrt(log_term / np.maximum(N, 1)), np.inf
            )
            # Q^ with fill = 0 where N = 0; the infinite bonus then clips to the range
            q_lo = np.clip(est.q(h, v_lo) - bonus, lo, hi)
            q_hi = np.clip(est.q(h, v_hi) + bonus, lo, hi)
            self.mu[h], _, v_lo = solve_matrix_games(q_lo, ds.legal_max[h], ds.legal_min[h])
            _, self.nu[h], _ = solve_matrix_games(q_hi, ds.legal_max[h], ds.legal_min[h])
            v_hi = np.where(
                ds.legal_max[h], np.einsum("sab,sb->sa", q_hi, self.nu[h]), -np.inf
            ).max(1)


class BehaviorCloning(TabularGameAgent):
    """Behavior cloning: empirical action frequencies per (h, s), uniform where unvisited."""

    def __init__(self, smoothing: float = 0.0) -> None:
        super().__init__()
        self.smoothing = float(smoothing)

    def _fit(self, ds: OfflineDataset) -> None:
        self.mu, self.nu = behavior_cloning(ds, self.smoothing)


class SelfPlayMD(TabularGameAgent):
    """Unregularized self-play mirror descent (beta = 0): least-squares Q^ as in SOS-MD, T
    multiplicative-weights self-play steps per stage, output the ``last`` or ``average`` iterate."""

    def __init__(
        self, eta: float | str = 0.5, T: int = 1000, iterate: str = "last", lam: float = 1.0
    ) -> None:
        super().__init__()
        if iterate not in ("last", "average"):
            raise ValueError(f"SelfPlayMD: iterate must be 'last' or 'average', got {iterate!r}")
        self.eta = eta if isinstance(eta, str) else float(eta)
        self.T, self.iterate, self.lam = int(T), iterate, float(lam)

    def _fit(self, ds: OfflineDataset) -> None:
        est = QEstimator(ds, self.lam, "tabular", clip=True)
        H, S, A, B = ds.shape
        p, q = _references(ds, "uniform", 0.0)
        self.mu, self.nu = np.zeros((H, S, A)), np.zeros((H, S, B))
        v = np.zeros(S)
        for h in reversed(range(H)):
            Q = est.q(h, v)
            last_mu, last_nu, avg_mu, avg_nu = self_play_md(Q, 0.0, self.eta, self.T, p[h], q[h])
            self.mu[h], self.nu[h] = (
                (last_mu, last_nu) if self.iterate == "last" else (avg_mu, avg_nu)
            )
            v = stage_value(Q, self.mu[h], self.nu[h], 0.0, p[h], q[h])


class NashOracle(TabularGameAgent):
    """The exact Nash equilibrium of the true game (reads the game; a reference, not a learner)."""

    def _fit(self, ds: OfflineDataset) -> None:
        eq = nash_equilibrium(ds.resolve_game())
        self.mu, self.nu = np.array(eq.mu), np.array(eq.nu)
