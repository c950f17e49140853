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
    empirical_regularized_gap,
    value_range,
)
from icml26.agents.markov_games.mirror_descent import (
    VARIANTS,
    auto_eta,
    md_step,
    self_play_md,
    stage_value,
)
from icml26.envs.markov_games.datasets import OfflineDataset
from icml26.envs.markov_games.game import masked_log, sample_categorical
from icml26.envs.markov_games.metrics import nash_equilibrium
from icml26.envs.markov_games.solvers import solve_matrix_games, solve_regularized_matrix_games

__all__ = [
    "TabularGameAgent",
    "SOSMD",
    "ROSE",
    "NashVI",
    "PessimisticNashVI",
    "VILCBGame",
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


_REFERENCES = ("bc", "behavior", "uniform")


def _check_reference(reference: str, who: str) -> None:
    if reference not in _REFERENCES:
        raise ValueError(f"{who}: reference must be one of {_REFERENCES}, got {reference!r}")


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

    ``schedule="interleaved"`` (default; the paper's algorithm as described in the abstract):
    starting from the reference, repeat T times: (1) least-squares evaluation of the *current*
    policies, backward from h = H (``Q^t_h`` = ridge regression of ``r + V^t_{h+1}(s')`` with
    ``V^t_h = mu^t_h' Q^t_h nu^t_h - beta KL(mu^t_h || ref) + beta KL(nu^t_h || ref)``); (2) one
    KL-regularized self-play mirror-descent step at every (h, s) on ``Q^t_h``. The last iterate
    is returned. Its fixed point is ROSE's solution on the same data, so the difference to ROSE
    is the optimization error, which vanishes as T grows.
    ``schedule="stagewise"``: T mirror-descent steps per stage, backward in h, on a Q^ that is
    re-estimated only once per stage (the suite's v1 implementation, kept as an ablation; it
    converges to ROSE geometrically stage by stage).

    ``reference``: ``"bc"`` (default: behavior cloning of the data, what a learner has),
    ``"behavior"`` (the data's exact marginal behavior policy: an oracle ablation) or
    ``"uniform"``. ``variant="magnetic"`` uses the implicit MMD update. ``eta="auto"`` takes the
    per-state step ``beta / (beta^2 + (L/2)^2)`` (L: spread of the current Q^_h(s)) that
    maximizes the contraction of the update (L over the references' supports). ``snapshots``: iteration counts t <= T at which
    the policies are kept in ``self.snapshots[t] = (mu, nu)`` (a gap-vs-T curve from one run).
    """

    version = "2"

    def __init__(
        self,
        beta: float = 0.1,
        eta: float | str = "auto",
        T: int = 1000,
        lam: float = 1.0,
        features: Any = "tabular",
        reference: str = "bc",
        variant: str = "explicit",
        clip: bool = True,
        bc_smoothing: float = 0.0,
        schedule: str = "interleaved",
        snapshots: tuple[int, ...] = (),
    ) -> None:
        super().__init__()
        if not beta > 0:
            raise ValueError(f"SOSMD: beta must be > 0 (use SelfPlayMD for beta = 0), got {beta!r}")
        if variant not in VARIANTS:
            raise ValueError(f"SOSMD: variant must be one of {VARIANTS}, got {variant!r}")
        if schedule not in ("interleaved", "stagewise"):
            raise ValueError(
                f"SOSMD: schedule must be 'interleaved' or 'stagewise', got {schedule!r}"
            )
        if isinstance(eta, str):
            if eta != "auto":
                raise ValueError(f"SOSMD: eta must be a number > 0 or 'auto', got {eta!r}")
        elif not eta > 0 or (variant == "explicit" and eta * beta > 1):
            raise ValueError(
                f"SOSMD: need eta > 0 and (explicit update) eta * beta <= 1, got eta={eta}, beta={beta}"
            )
        if not isinstance(T, (int, np.integer)) or T < 0:
            raise ValueError(f"SOSMD: T must be an integer >= 0, got {T!r}")
        _check_reference(reference, "SOSMD")
        self.beta, self.eta, self.T, self.lam = (
            float(beta),
            eta if isinstance(eta, str) else float(eta),
            int(T),
            float(lam),
        )
        self.features, self.reference, self.variant = features, reference, variant
        self.clip, self.bc_smoothing, self.schedule = clip, bc_smoothing, schedule
        self.snapshot_at = tuple(sorted({int(t) for t in snapshots if 0 <= int(t) <= self.T}))
        self.snapshots: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.estimator: QEstimator | None = None
        self.references: tuple[np.ndarray, np.ndarray] | None = None

    def _fit(self, ds: OfflineDataset) -> None:
        est = QEstimator(ds, self.lam, self.features, self.clip)
        p, q = _references(ds, self.reference, self.bc_smoothing)
        self.estimator, self.references = est, (p, q)
        if self.schedule == "stagewise":
            self._fit_stagewise(est, p, q, ds)
        else:
            self._fit_interleaved(est, p, q, ds)

    def _fit_stagewise(
        self, est: QEstimator, p: np.ndarray, q: np.ndarray, ds: OfflineDataset
    ) -> None:
        H, S, A, B = ds.shape
        self.mu, self.nu = np.zeros((H, S, A)), np.zeros((H, S, B))
        v = np.zeros(S)
        for h in reversed(range(H)):
            Q = est.q(h, v)
            self.mu[h], self.nu[h], _, _ = self_play_md(
                Q, self.beta, self.eta, self.T, p[h], q[h], self.variant
            )
            v = stage_value(Q, self.mu[h], self.nu[h], self.beta, p[h], q[h])
        self.stats["value_estimate"] = float(v[ds.states[:, 0]].mean())

    def _fit_interleaved(
        self, est: QEstimator, p: np.ndarray, q: np.ndarray, ds: OfflineDataset
    ) -> None:
        H, S, A, B = ds.shape
        pf, qf = p.reshape(H * S, A), q.reshape(H * S, B)
        sup_p, sup_q = pf > 0, qf > 0
        lp, lq = np.where(sup_p, masked_log(pf), 0.0), np.where(sup_q, masked_log(qf), 0.0)
        lmu, lnu = lp.copy(), lq.copy()  # start at the reference
        self.snapshots = {}
        Q = np.zeros((H, S, A, B))
        v0 = np.zeros(S)
        for t in range(self.T + 1):
            mu, nu = np.exp(lmu) * sup_p, np.exp(lnu) * sup_q
            if t in self.snapshot_at:
                self.snapshots[t] = (mu.reshape(H, S, A).copy(), nu.reshape(H, S, B).copy())
            # least-squares evaluation of the current pair, backward in h
            v = np.zeros(S)
            m3, n3 = mu.reshape(H, S, A), nu.reshape(H, S, B)
            for h in reversed(range(H)):
                Q[h] = est.q(h, v)
                v = stage_value(Q[h], m3[h], n3[h], self.beta, p[h], q[h])
            v0 = v
            if t == self.T:
                break
            Qf = Q.reshape(H * S, A, B)
            step = (
                auto_eta(Qf, self.beta, sup_p, sup_q)[:, None]
                if isinstance(self.eta, str)
                else np.full((H * S, 1), self.eta)
            )
            lmu, lnu = md_step(Qf, lmu, lnu, lp, lq, sup_p, sup_q, step, self.beta, self.variant)
        self.mu = (np.exp(lmu) * sup_p).reshape(H, S, A)
        self.nu = (np.exp(lnu) * sup_q).reshape(H, S, B)
        self.stats["value_estimate"] = float(v0[ds.states[:, 0]].mean())

    def optimization_gap(self) -> float:
        """The regularized NashConv of the learned pair in the estimated game (0 at ROSE's
        solution on the same data): SOS-MD's optimization error after T iterations."""
        if self.estimator is None or self.references is None or self.mu is None:
            raise RuntimeError("SOSMD: call learn(dataset) before optimization_gap()")
        return empirical_regularized_gap(
            self.estimator, self.mu, self.nu, self.beta, *self.references
        )


class ROSE(TabularGameAgent):
    """Regularized Offline Sequential Equilibrium (ROSE): least-squares Q^_h backward in h and
    the *exact* equilibrium of every KL-regularized stage game (no optimization error).
    ``reference`` as in :class:`SOSMD` (default ``"bc"``; ``"behavior"`` is the oracle ablation)."""

    version = "2"

    def __init__(
        self,
        beta: float = 0.1,
        lam: float = 1.0,
        features: Any = "tabular",
        reference: str = "bc",
        clip: bool = True,
        bc_smoothing: float = 0.0,
    ) -> None:
        super().__init__()
        if not beta > 0:
            raise ValueError(f"ROSE: beta must be > 0, got {beta!r}")
        _check_reference(reference, "ROSE")
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
        self.estimator, self.references = est, (p, q)
        H, S, A, B = ds.shape
        self.mu, self.nu = np.zeros((H, S, A)), np.zeros((H, S, B))
        v = np.zeros(S)
        for h in reversed(range(H)):
            Q = est.q(h, v)
            self.mu[h], self.nu[h], v = solve_regularized_matrix_games(Q, self.beta, p[h], q[h])


def _confidence_vi(
    agent: TabularGameAgent, ds: OfflineDataset, bonus: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper confidence Nash VI on the empirical model (lambda = 0).

    ``Q_lo = clip(Q^(V_lo) - b_lo)``, ``Q_hi = clip(Q^(V_hi) + b_hi)`` to the range of returns;
    the max player plays the maximin strategy of ``Q_lo``, the min player the minimax strategy
    of ``Q_hi``. ``bonus(h, N, est, v_lo, v_hi) -> (b_lo, b_hi)``; unvisited cells (N = 0)
    always get the whole range (the pessimistic end for each player).
    """
    est = QEstimator(ds, 0.0, "tabular", clip=False)
    H, S, A, B = ds.shape
    mu, nu = np.zeros((H, S, A)), np.zeros((H, S, B))
    v_lo, v_hi = np.zeros(S), np.zeros(S)
    for h in reversed(range(H)):
        lo, hi = value_range(ds, h)
        N = est.counts[h]
        b_lo, b_hi = bonus(h, N, est, v_lo, v_hi)
        q_lo = np.where(N > 0, np.clip(est.q(h, v_lo) - b_lo, lo, hi), lo)
        q_hi = np.where(N > 0, np.clip(est.q(h, v_hi) + b_hi, lo, hi), hi)
        mu[h], _, v_lo = solve_matrix_games(q_lo, ds.legal_max[h], ds.legal_min[h])
        _, nu[h], _ = solve_matrix_games(q_hi, ds.legal_max[h], ds.legal_min[h])
        v_hi = np.where(ds.legal_max[h], np.einsum("sab,sb->sa", q_hi, nu[h]), -np.inf).max(1)
    # the confidence bounds on V^{mu,dagger}_1 (lower) and V^{dagger,nu}_1 (upper) per state
    agent.stats["bounds"] = (v_lo.tolist(), v_hi.tolist())
    return mu, nu


class NashVI(TabularGameAgent):
    """Plug-in Nash value iteration on the empirical model: Q^_h = empirical mean of
    r + V^_{h+1}(s') per (h, s, a, b), exact Nash per stage (LP).

    ``fill`` is the value of cells the data never visit: ``"pessimistic"`` (default) gives each
    player the worst end of the return range there (the max player's policy is computed with
    unvisited Q = (H - h) r_min, the min player's with (H - h) r_max; no bonus on visited cells),
    a number fills both players' Q with it (``fill=0.0`` was the v1 default, which favours the
    min player when rewards are >= 0).
    """

    version = "2"

    def __init__(self, lam: float = 0.0, fill: float | str = "pessimistic") -> None:
        super().__init__()
        if isinstance(fill, str) and fill != "pessimistic":
            raise ValueError(f"NashVI: fill must be 'pessimistic' or a number, got {fill!r}")
        self.lam = float(lam)
        self.fill = fill if isinstance(fill, str) else float(fill)

    def _fit(self, ds: OfflineDataset) -> None:
        H, S, A, B = ds.shape
        if self.fill == "pessimistic" and self.lam == 0:
            zero = np.zeros((S, A, B))
            self.mu, self.nu = _confidence_vi(self, ds, lambda *_: (zero, zero))
            return
        fill = 0.0 if isinstance(self.fill, str) else self.fill
        est = QEstimator(ds, self.lam, "tabular", clip=True, fill=fill)
        self.mu, self.nu = np.zeros((H, S, A)), np.zeros((H, S, B))
        v = np.zeros(S)
        for h in reversed(range(H)):
            self.mu[h], self.nu[h], v = solve_matrix_games(
                est.q(h, v), ds.legal_max[h], ds.legal_min[h]
            )


class PessimisticNashVI(TabularGameAgent):
    """Pessimistic Nash value iteration with Hoeffding lower/upper confidence bounds (PNVI,
    Cui & Du 2022; the same template as VI-LCB-Game, Yan et al. 2022).

    Bonus ``b_h = c (H - h)(r_max - r_min) sqrt(log(2 H S A B n / delta) / N_h(s, a, b))`` (the
    full range where N = 0); see :func:`_confidence_vi`. ``c = 1`` is the bound as written
    (registered as ``mg-pnvi``); on the S = 10, A = B = 3, H = 5 random game it keeps the policy
    at the pessimistic corner until n ~ 1e5, so the default here is the tuned c = 0.1
    (``mg-pessimistic-vi``), the best of {1, 0.3, 0.1} there.
    """

    def __init__(self, c: float = 0.1, delta: float = 0.1) -> None:
        super().__init__()
        if not c >= 0 or not 0 < delta < 1:
            raise ValueError(
                f"PessimisticNashVI: need c >= 0 and 0 < delta < 1, got c={c}, delta={delta}"
            )
        self.c, self.delta = float(c), float(delta)

    def _fit(self, ds: OfflineDataset) -> None:
        H, S, A, B = ds.shape
        log_term = np.log(2 * H * S * A * B * max(ds.n, 1) / self.delta)

        def bonus(h: int, N: np.ndarray, *_: Any) -> tuple[np.ndarray, np.ndarray]:
            lo, hi = value_range(ds, h)
            b = self.c * (hi - lo) * np.sqrt(log_term / np.maximum(N, 1))
            return b, b

        self.mu, self.nu = _confidence_vi(self, ds, bonus)


class VILCBGame(TabularGameAgent):
    """VI-LCB-Game (Yan, Li, Chen & Fan 2022): pessimistic model-based Nash VI with
    Bernstein-style penalties, finite-horizon form.

    ``b_h = min(max(sqrt(c_b iota Var_{P^_h}(V_{h+1}) / N), c_b (H - h) R iota / N), (H - h) R)``
    with ``iota = log(2 H S A B n / delta)``, R = r_max - r_min, and the empirical next-state
    variance of the lower (upper) value for the max (min) player's bound. The paper's c_b is an
    unspecified universal constant; ``c_b = 1`` is the bound as written, not tuned down.
    """

    def __init__(self, c_b: float = 1.0, delta: float = 0.1) -> None:
        super().__init__()
        if not c_b >= 0 or not 0 < delta < 1:
            raise ValueError(f"VILCBGame: need c_b >= 0 and 0 < delta < 1, got {c_b}, {delta}")
        self.c_b, self.delta = float(c_b), float(delta)

    def _fit(self, ds: OfflineDataset) -> None:
        H, S, A, B = ds.shape
        iota = np.log(2 * H * S * A * B * max(ds.n, 1) / self.delta)

        def bonus(
            h: int, N: np.ndarray, est: QEstimator, v_lo: np.ndarray, v_hi: np.ndarray
        ) -> tuple[np.ndarray, np.ndarray]:
            lo, hi = value_range(ds, h)
            span = hi - lo
            n1 = np.maximum(N, 1).ravel()
            out = []
            for v in (v_lo, v_hi):
                m1 = (est._next[h] @ v) / n1
                m2 = (est._next[h] @ (v * v)) / n1
                var = np.maximum(m2 - m1 * m1, 0.0)
                b = np.maximum(np.sqrt(self.c_b * iota * var / n1), self.c_b * span * iota / n1)
                out.append(np.minimum(b, span).reshape(S, A, B))
            return out[0], out[1]

        self.mu, self.nu = _confidence_vi(self, ds, bonus)


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
