"""The tabular finite-horizon two-player zero-sum Markov game and its policy tables.

A game holds ``rewards`` (H, S, A, B) paid to the max player (the min player receives the
negative), ``transitions`` (H, S, A, B, S) and ``initial`` (S,), plus optional legal-action
masks ``legal_max`` (H, S, A) and ``legal_min`` (H, S, B). Everything is validated on
construction and stored read-only, so a game can be shared between envs, agents and metrics.

Policies are plain arrays: ``mu`` (H, S, A) for the max player and ``nu`` (H, S, B) for the
min player, each row a distribution over that player's legal actions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "TabularMarkovGame",
    "check_policy",
    "uniform_policy",
    "masked_log",
    "sample_categorical",
]

_PROB_ATOL = 1e-8


def _readonly(x: np.ndarray) -> np.ndarray:
    x.flags.writeable = False
    return x


def _as_float_array(name: str, value: Any) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"TabularMarkovGame: {name} must be a numeric array, got {type(value).__name__}"
        ) from None
    return arr


class TabularMarkovGame:
    """A finite-horizon two-player zero-sum Markov game with tabular states and actions.

    Args:
        rewards: (H, S, A, B) rewards to the max player, finite.
        transitions: (H, S, A, B, S) next-state distributions (non-negative, rows sum to 1).
            A time-homogeneous game may pass ``np.broadcast_to(P[None], (H, S, A, B, S))``; the
            stride-0 view is kept as is (one copy in memory, pickled compactly).
        initial: (S,) initial-state distribution.
        legal_max, legal_min: optional (H, S, A) / (H, S, B) boolean masks of legal actions
            (default: every action legal); each (h, s) needs at least one legal action.
        name: a short label; ``spec``: how to rebuild the game (``{"name": ..., "kwargs": ...}``),
            recorded in datasets and results.
        action_names_max, action_names_min: optional labels for rendering.
        features: optional (H, S, A, B, d) feature map under which the game is linear (used by
            the linear-feature agents when asked for ``features="game"``).

    Raises:
        ValueError / TypeError naming the offending array, the expected shape or property and
        the first offending index.
    """

    def __init__(
        self,
        rewards: Any,
        transitions: Any,
        initial: Any,
        legal_max: Any | None = None,
        legal_min: Any | None = None,
        *,
        name: str = "custom",
        spec: Mapping[str, Any] | None = None,
        action_names_max: tuple[str, ...] | None = None,
        action_names_min: tuple[str, ...] | None = None,
        features: Any | None = None,
    ) -> None:
        r = _as_float_array("rewards", rewards)
        if r.ndim != 4:
            raise ValueError(
                f"TabularMarkovGame: rewards must have shape (H, S, A, B), got shape {r.shape}"
            )
        H, S, A, B = r.shape
        if min(r.shape) < 1:
            raise ValueError(
                f"TabularMarkovGame: every dimension of rewards must be >= 1, got {r.shape}"
            )
        if not np.all(np.isfinite(r)):
            idx = tuple(int(i) for i in np.argwhere(~np.isfinite(r))[0])
            raise ValueError(
                f"TabularMarkovGame: rewards must be finite; rewards{list(idx)} = {r[idx]}"
            )

        p_raw = (
            transitions
            if isinstance(transitions, np.ndarray)
            else _as_float_array("transitions", transitions)
        )
        if p_raw.shape != (H, S, A, B, S):
            raise ValueError(
                "TabularMarkovGame: transitions must have shape (H, S, A, B, S) = "
                f"{(H, S, A, B, S)} to match rewards {r.shape}, got {p_raw.shape}"
            )
        self._stationary = p_raw.ndim == 5 and p_raw.strides[0] == 0
        if self._stationary:
            core = np.array(p_raw[0], dtype=np.float64)
            _check_distributions("transitions[h=*]", core, S)
            self._p_core: np.ndarray | None = _readonly(core)
            p = np.broadcast_to(core[None], (H, S, A, B, S))
        else:
            p = np.array(p_raw, dtype=np.float64)
            _check_distributions("transitions", p, S)
            self._p_core = None
            p = _readonly(p)

        rho = _as_float_array("initial", initial).copy()
        if rho.shape != (S,):
            raise ValueError(
                f"TabularMarkovGame: initial must have shape (S,) = ({S},), got {rho.shape}"
            )
        _check_distributions("initial", rho, S)

        self.rewards = _readonly(np.array(r))
        self.transitions = p
        self.initial = _readonly(rho)
        self.legal_max = _readonly(_check_mask("legal_max", legal_max, (H, S, A)))
        self.legal_min = _readonly(_check_mask("legal_min", legal_min, (H, S, B)))
        self.name = str(name)
        self.spec: dict[str, Any] = (
            dict(spec) if spec is not None else {"name": self.name, "kwargs": {}}
        )
        self.action_names_max = tuple(action_names_max) if action_names_max else None
        self.action_names_min = tuple(action_names_min) if action_names_min else None
        for label, names, n in (
            ("action_names_max", self.action_names_max, A),
            ("action_names_min", self.action_names_min, B),
        ):
            if names is not None and len(names) != n:
                raise ValueError(f"TabularMarkovGame: {label} needs {n} names, got {len(names)}")
        self.features: np.ndarray | None = None
        if features is not None:
            f = _as_float_array("features", features)
            if f.ndim != 5 or f.shape[:4] != (H, S, A, B) or not np.all(np.isfinite(f)):
                raise ValueError(
                    f"TabularMarkovGame: features must be a finite (H, S, A, B, d) array with "
                    f"(H, S, A, B) = {(H, S, A, B)}, got shape {f.shape}"
                )
            self.features = _readonly(np.array(f))
        self._sparse: dict[int, Any] = {}
        self._fingerprint: str | None = None
        self._density: float | None = None

    # ------------------------------------------------------------------ sizes
    @property
    def H(self) -> int:
        return int(self.rewards.shape[0])

    @property
    def S(self) -> int:
        return int(self.rewards.shape[1])

    @property
    def A(self) -> int:
        return int(self.rewards.shape[2])

    @property
    def B(self) -> int:
        return int(self.rewards.shape[3])

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(H, S, A, B)."""
        return (self.H, self.S, self.A, self.B)

    @property
    def stationary(self) -> bool:
        """True when the transitions were given as one slice broadcast over the horizon."""
        return self._stationary

    @property
    def has_masks(self) -> bool:
        return not (bool(self.legal_max.all()) and bool(self.legal_min.all()))

    @property
    def reward_range(self) -> tuple[float, float]:
        return float(self.rewards.min()), float(self.rewards.max())

    def __repr__(self) -> str:
        H, S, A, B = self.shape
        return f"TabularMarkovGame({self.name!r}, H={H}, S={S}, A={A}, B={B})"

    # ------------------------------------------------------------------ dynamics
    def next_value(self, h: int, values: np.ndarray) -> np.ndarray:
        """``E[values(s') | s, a, b]`` at step ``h``: values (S,) or (S, k) -> (S, A, B[, k]).

        Uses a cached sparse matrix when the transitions are sparse (e.g. soccer), a dense
        matmul otherwise; both are exact.
        """
        v = np.asarray(values, dtype=np.float64)
        if v.shape[0] != self.S:
            raise ValueError(
                f"{self.name}: next_value expects values with S={self.S} rows, got {v.shape}"
            )
        if self._use_sparse():
            mat = self._sparse_slice(h)
            out = mat @ v
            return np.asarray(out).reshape((self.S, self.A, self.B) + v.shape[1:])
        if v.ndim == 1:
            return self.transitions[h] @ v  # batched GEMV (numpy's own loop: no BLAS threads)
        P = self.transitions[h].reshape(self.S * self.A * self.B, self.S)  # a view: one GEMM
        return (P @ v).reshape((self.S, self.A, self.B) + v.shape[1:])

    def sample_next(
        self, h: int, s: np.ndarray, a: np.ndarray, b: np.ndarray, u: np.ndarray
    ) -> np.ndarray:
        """Next states for index arrays (s, a, b) at step h given uniforms ``u`` in [0, 1)."""
        s, a, b = np.asarray(s), np.asarray(a), np.asarray(b)
        out = np.empty(s.shape, dtype=np.int64)
        chunk = max(1, 2_000_000 // self.S)
        for lo in range(0, s.size, chunk):
            sl = slice(lo, lo + chunk)
            probs = self.transitions[h, s.ravel()[sl], a.ravel()[sl], b.ravel()[sl]]
            out.ravel()[sl] = sample_categorical(probs, u.ravel()[sl])
        return out

    def _use_sparse(self) -> bool:
        if self._density is None:
            if self.S < 64:
                self._density = 1.0
            else:
                core = self._p_core if self._p_core is not None else self.transitions
                self._density = float(np.count_nonzero(core)) / core.size
        return self._density < 0.05

    def _sparse_slice(self, h: int) -> Any:
        key = 0 if self._stationary else int(h)
        if key not in self._sparse:
            from scipy import sparse

            dense = self.transitions[key].reshape(self.S * self.A * self.B, self.S)
            self._sparse[key] = sparse.csr_matrix(dense)
        return self._sparse[key]

    # ------------------------------------------------------------------ identity
    def fingerprint(self) -> str:
        """A SHA-256 of every array (shapes included): two games with equal fingerprints are equal."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            core = self._p_core if self._p_core is not None else self.transitions
            for arr in (self.rewards, core, self.initial, self.legal_max, self.legal_min):
                h.update(str(arr.shape).encode())
                h.update(np.ascontiguousarray(arr).tobytes())
            h.update(str(self.H).encode())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    def describe(self) -> dict[str, Any]:
        """JSON-able summary: name, spec, sizes, fingerprint, reward range."""
        return {
            "name": self.name,
            "spec": json.loads(json.dumps(self.spec, default=str)),
            "H": self.H,
            "S": self.S,
            "A": self.A,
            "B": self.B,
            "fingerprint": self.fingerprint(),
            "reward_range": list(self.reward_range),
        }

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_sparse"] = {}
        if self._stationary:
            state["transitions"] = None  # rebuilt from the single core slice
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._stationary and self.transitions is None:
            core = self._p_core
            assert core is not None
            self.transitions = np.broadcast_to(core[None], (self.rewards.shape[0],) + core.shape)

    # ------------------------------------------------------------------ policies
    def uniform_policy(self, player: str = "max") -> np.ndarray:
        """The uniform distribution over legal actions: (H, S, A) or (H, S, B)."""
        return uniform_policy(self, player)

    def legal(self, player: str) -> np.ndarray:
        if player == "max":
            return self.legal_max
        if player == "min":
            return self.legal_min
        raise ValueError(f"player must be 'max' or 'min', got {player!r}")


def _check_distributions(name: str, p: np.ndarray, S: int) -> None:
    if not np.all(np.isfinite(p)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(p))[0])
        raise ValueError(f"TabularMarkovGame: {name} must be finite; {name}{list(idx)} = {p[idx]}")
    if np.any(p < 0):
        idx = tuple(int(i) for i in np.argwhere(p < 0)[0])
        raise ValueError(
            f"TabularMarkovGame: {name} must be non-negative probabilities; {name}{list(idx)} = {p[idx]}"
        )
    sums = p.sum(axis=-1)
    bad = np.abs(sums - 1.0) > _PROB_ATOL * max(1, S)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(np.atleast_1d(bad))[0]) if sums.ndim else ()
        val = sums[idx] if sums.ndim else float(sums)
        where = f"{name}{list(idx)}" if idx else name
        raise ValueError(
            f"TabularMarkovGame: {where} sums to {float(val):.6g}, expected 1 (a distribution over S)"
        )


def _check_mask(name: str, mask: Any, shape: tuple[int, int, int]) -> np.ndarray:
    if mask is None:
        return np.ones(shape, dtype=bool)
    m = np.asarray(mask)
    if m.shape != shape:
        raise ValueError(f"TabularMarkovGame: {name} must have shape {shape}, got {m.shape}")
    if m.dtype != bool:
        if not np.all(np.isin(m, (0, 1))):
            raise ValueError(
                f"TabularMarkovGame: {name} must be boolean (or 0/1), got dtype {m.dtype}"
            )
        m = m.astype(bool)
    empty = ~m.any(axis=-1)
    if np.any(empty):
        h, s = (int(i) for i in np.argwhere(empty)[0])
        raise ValueError(f"TabularMarkovGame: {name}[h={h}, s={s}] has no legal action")
    return np.array(m, dtype=bool)


def uniform_policy(game: TabularMarkovGame, player: str = "max") -> np.ndarray:
    """Uniform over each (h, s)'s legal actions for ``player`` ("max" or "min")."""
    legal = game.legal(player).astype(np.float64)
    return legal / legal.sum(axis=-1, keepdims=True)


def masked_log(p: np.ndarray) -> np.ndarray:
    """``log p`` with ``-inf`` where p == 0 (no warning)."""
    out = np.full(p.shape, -np.inf)
    pos = p > 0
    out[pos] = np.log(p[pos])
    return out


def check_policy(
    game: TabularMarkovGame, policy: Any, player: str, what: str = "policy"
) -> np.ndarray:
    """Validate a policy table for ``player`` and return it as a float64 copy.

    Accepts (H, S, n_actions) arrays whose rows are distributions (tolerance 1e-6, then
    renormalized) with no mass on illegal actions. Raises ValueError/TypeError naming the
    expected shape and the first offending (h, s).
    """
    n = game.A if player == "max" else game.B
    expected = (game.H, game.S, n)
    try:
        pi = np.array(policy, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{what}: expected a numeric array of shape {expected} for the {player} player, "
            f"got {type(policy).__name__}"
        ) from None
    if pi.shape != expected:
        raise ValueError(
            f"{what}: expected shape (H, S, {'A' if player == 'max' else 'B'}) = "
            f"{expected} for the {player} player of {game.name}, got {pi.shape}"
        )
    if not np.all(np.isfinite(pi)):
        h, s, _ = (int(i) for i in np.argwhere(~np.isfinite(pi))[0])
        raise ValueError(
            f"{what}: probabilities must be finite, row (h={h}, s={s}) is {pi[h, s].tolist()}"
        )
    if np.any(pi < -1e-9):
        h, s, _ = (int(i) for i in np.argwhere(pi < -1e-9)[0])
        raise ValueError(
            f"{what}: probabilities must be >= 0, row (h={h}, s={s}) is {pi[h, s].tolist()}"
        )
    pi = np.clip(pi, 0.0, None)
    legal = game.legal(player)
    illegal_mass = np.where(legal, 0.0, pi).sum(axis=-1)
    if np.any(illegal_mass > 1e-9):
        h, s = (int(i) for i in np.argwhere(illegal_mass > 1e-9)[0])
        raise ValueError(
            f"{what}: row (h={h}, s={s}) puts mass {illegal_mass[h, s]:.3g} on illegal actions "
            f"{np.flatnonzero(~legal[h, s]).tolist()}"
        )
    sums = pi.sum(axis=-1)
    bad = np.abs(sums - 1.0) > 1e-6
    if np.any(bad):
        h, s = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{what}: row (h={h}, s={s}) sums to {float(sums[h, s]):.6g}, expected 1")
    pi = np.where(legal, pi, 0.0)
    return pi / pi.sum(axis=-1, keepdims=True)


def sample_categorical(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling of one index per row of ``probs`` (k, n) with uniforms ``u`` (k,)."""
    cdf = np.cumsum(probs, axis=-1)
    idx = (u[:, None] * cdf[:, -1:] >= cdf).sum(axis=-1)
    # guard: never return an index whose probability is 0 (u * total == cdf at the end)
    return np.minimum(idx, probs.shape[-1] - 1)
