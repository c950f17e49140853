"""``icml26/StochasticVI-v0``: a stochastic first-order oracle for a variational inequality."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icml26.envs._checks import check_int_at_least, check_render_mode
from icml26.envs.minmax_vi.problems import NOISE_MODELS, VIProblem, make_problem

ENV_NAME = "StochasticVI-v0"


class StochasticVIEnv(gym.Env):
    """
    ## Description
    The agent is a stochastic VI algorithm; the env is the oracle (Alacaoglu and Kim, ICML 2026,
    arXiv 2602.05531: VIs without bounded variance). Each step the agent queries a point ``z``
    with a batch size ``b`` and receives the mean of ``b`` stochastic operator samples
    ``F_hat(z, xi)`` (``b`` oracle calls), and reports its current iterate, which the env scores
    with the exact residual ``dist(0, F(z) + N_C(z))`` of the true operator. Problems and noise
    models are in :mod:`icml26.envs.minmax_vi.problems`; under ``noise="operator"`` (or
    ``"additive"`` with ``sigma1 > 0``) the variance grows like ``|z|^2``, the regime the paper
    covers and where unbatched extragradient diverges.

    ## Action Space
    v0 (``paired=False``): ``Box((2 d + 1,), float64)``: ``[query z (d), iterate (d), batch]``.
    v1 (``paired=True``): ``Box((3 d + 2,), float64)``: ``[query z (d), partner w (d), iterate (d),
    batch, paired]``; with ``paired = 1`` the same ``batch`` samples are also evaluated at ``w``
    (common random numbers, what variance-reduced methods difference) and the step costs
    ``2 batch`` calls; with ``paired = 0`` ``w`` is ignored. Point entries lie in
    ``[-divergence_radius, divergence_radius]`` (an iterate reaching that bound counts as
    diverged); ``batch`` is rounded to an integer in ``[1, max_batch]``; ``paired`` is rounded to 0 or 1.
    The query may lie outside ``C`` (FBF evaluates there); the iterate is projected onto ``C``
    before scoring (``info["infeasibility"]`` says by how much it moved).

    ## Observation Space
    v0: ``Box(-inf, inf, (d,), float64)``: the mean operator sample at the last query (zeros after
    reset). v1: ``Box(-inf, inf, (2 d,), float64)``: ``[mean sample at z, mean of the same samples
    at w]`` (the second half zeros when the step was not paired).

    ## Rewards
    ``-residual(P_C(iterate))`` per step.

    ## Starting State
    The problem's starting point ``z0`` (in ``info["z0"]``); the problem instance is fixed by
    ``problem_kwargs`` (its own ``seed``), the noise by ``reset(seed=...)``. Reset's info also holds
    ``lipschitz``, ``lower``, ``upper`` (the box C, with infinities), ``dim`` and ``oracle_budget``.

    ## Episode End
    Truncated when ``oracle_budget`` oracle calls are spent (the last batch is cut to what is
    left; a paired query with one call left is not served and ends the episode). Terminated, with ``info["diverged"] = True``, when the iterate's norm exceeds
    ``divergence_radius`` or a sample is not finite.

    ## Arguments
    ``gym.make("icml26/StochasticVI-v0", problem="bilinear", problem_kwargs=None, noise="operator",
    sigma0=0.1, sigma1=1.0, oracle_budget=100_000, max_batch=2**20, divergence_radius=1e6,
    paired=False, render_mode=None | "ansi")``; ``problem`` is one of ``bilinear``,
    ``quadratic_game``, ``lagrangian_qp``, ``weak_minty_quadratic``, ``global_forsaken``,
    ``network_game``. ``icml26/StochasticVI-v1`` is this class with ``paired=True``.

    ## Version History
    * v1: the paired oracle (issue 40): same-sample evaluations at two points, for variance-reduced
      methods; action ``[z, w, iterate, batch, paired]``, observation ``[F_hat(z), F_hat(w)]``;
      unpaired steps draw exactly as v0 (reset's info adds ``paired: True``).
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/StochasticVI-v0", problem_kwargs={"n": 3}, oracle_budget=200)
    >>> obs, info = env.reset(seed=0)
    >>> z0 = np.asarray(info["z0"])  # query and report z0 with a batch of 4 samples
    >>> obs, reward, terminated, truncated, info = env.step(np.concatenate([z0, z0, [4.0]]))
    >>> print(obs.round(4), round(float(reward), 4), info["oracle_calls"])
    [-0.7635 -0.4215  0.0363  0.275  -0.4597  0.7484] -0.9344 4
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        problem: str = "bilinear",
        problem_kwargs: dict[str, Any] | None = None,
        noise: str = "operator",
        sigma0: float = 0.1,
        sigma1: float = 1.0,
        oracle_budget: int = 100_000,
        max_batch: int = 2**20,
        divergence_radius: float = 1e6,
        paired: bool = False,
        render_mode: str | None = None,
    ) -> None:
        check_render_mode(ENV_NAME, render_mode, self.metadata["render_modes"])
        if noise not in NOISE_MODELS:
            raise ValueError(f"{ENV_NAME}: noise must be one of {NOISE_MODELS}, got {noise!r}")
        for name, v in (("sigma0", sigma0), ("sigma1", sigma1)):
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v < 0
            ):
                raise ValueError(f"{ENV_NAME}: {name} must be a finite number >= 0, got {v!r}")
        for name, iv in (("oracle_budget", oracle_budget), ("max_batch", max_batch)):
            check_int_at_least(ENV_NAME, name, iv)
        if not (isinstance(divergence_radius, (int, float)) and divergence_radius > 0):
            raise ValueError(
                f"{ENV_NAME}: divergence_radius must be > 0, got {divergence_radius!r}"
            )
        self.problem: VIProblem = make_problem(problem, **dict(problem_kwargs or {}))
        if noise == "operator" and self.problem.matrix is None:
            raise ValueError(
                f"{ENV_NAME}: noise='operator' needs a linear problem; {problem!r} takes 'additive'"
            )
        self.noise, self.sigma0, self.sigma1 = noise, float(sigma0), float(sigma1)
        self.oracle_budget, self.max_batch = int(oracle_budget), int(max_batch)
        self.divergence_radius = float(divergence_radius)
        if not isinstance(paired, (bool, np.bool_)):
            raise ValueError(f"{ENV_NAME}: paired must be a bool, got {paired!r}")
        self.paired = bool(paired)
        self.env_id = "StochasticVI-v1" if self.paired else ENV_NAME  # names the id in errors
        self.render_mode = render_mode
        d = self.problem.dim
        r = self.divergence_radius
        points = 3 if self.paired else 2
        tail_lo, tail_hi = (
            ([1.0, 0.0], [float(self.max_batch), 1.0])
            if self.paired
            else ([1.0], [float(self.max_batch)])
        )
        self._action_dim = points * d + len(tail_lo)
        self.action_space = spaces.Box(
            np.concatenate([np.full(points * d, -r), tail_lo]),
            np.concatenate([np.full(points * d, r), tail_hi]),
            dtype=np.float64,
        )
        self._obs_shape: tuple[int, ...] = ((2 if self.paired else 1) * d,)
        self.observation_space = spaces.Box(-np.inf, np.inf, self._obs_shape, dtype=np.float64)
        self._calls = 0
        self._done = True
        self._started = False
        self._last: dict[str, Any] = {}

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._calls, self._done, self._started = 0, False, True
        p = self.problem
        z0 = p.project(p.z0)
        self._last = {"residual": p.residual(z0), "iterate_norm": float(np.linalg.norm(z0))}
        info = {
            "z0": p.z0.copy(),
            "lipschitz": p.lipschitz,
            "lower": p.lower.copy(),
            "upper": p.upper.copy(),
            "dim": p.dim,
            "oracle_budget": self.oracle_budget,
            "oracle_calls": 0,
            "rho": p.rho,
            "monotone": p.monotone,
            **self._last,
        }
        if self.paired:
            info["paired"] = True
        return np.zeros(self._obs_shape), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise RuntimeError(f"{self.env_id}: call reset() before step()")
        if self._done:
            raise RuntimeError(
                f"{self.env_id}: the episode has ended; call reset() before stepping again"
            )
        query, partner, iterate, batch = self._check_action(action)
        p = self.problem
        left = self.oracle_budget - self._calls
        if partner is None:
            batch = min(batch, left)
            sample = p.sample(query, self.np_random, batch, self.noise, self.sigma0, self.sigma1)
            self._calls += batch
            if self.paired:
                sample = np.concatenate([sample, np.zeros_like(sample)])
        elif left >= 2:
            batch = min(batch, left // 2)
            pair = p.sample_pair(
                query, partner, self.np_random, batch, self.noise, self.sigma0, self.sigma1
            )
            sample = np.concatenate(pair)
            self._calls += 2 * batch
        else:  # one call left cannot buy a same-sample pair: the episode ends unserved
            batch, sample = 0, np.zeros(self._obs_shape)
            self._calls = self.oracle_budget
        z = p.project(iterate)
        res = p.residual(z)
        norm = float(np.linalg.norm(z))
        diverged = not (
            np.all(np.isfinite(sample))
            and norm <= self.divergence_radius
            and float(np.max(np.abs(z))) < self.divergence_radius
        )
        truncated = self._calls >= self.oracle_budget and not diverged
        self._done = diverged or truncated
        self._last = {"residual": res, "iterate_norm": norm}
        info = {
            "oracle_calls": self._calls,
            "batch_served": batch,
            "residual": res,
            "iterate_norm": norm,
            "infeasibility": float(np.linalg.norm(iterate - z)),
            "diverged": diverged,
            "distance_to_solution": float(np.linalg.norm(z - p.solution)),
        }
        obs = np.where(np.isfinite(sample), sample, 0.0) if diverged else sample
        return (
            obs,
            -res if math.isfinite(res) else -self.divergence_radius,
            diverged,
            truncated,
            info,
        )

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return (
            f"{self.problem.name} ({self.noise} noise): oracle calls {self._calls}/{self.oracle_budget}, "
            f"residual {self._last.get('residual', float('nan')):.3e}, "
            f"|z| {self._last.get('iterate_norm', float('nan')):.3e}"
        )

    # ------------------------------------------------------------------ helpers
    def _check_action(self, action: Any) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, int]:
        """``(query, partner or None, iterate, batch)`` of a valid action (else a clear error)."""
        d = self.problem.dim
        n = self._action_dim
        layout = (
            f"[query ({d}), partner ({d}), iterate ({d}), batch, paired]"
            if self.paired
            else f"[query ({d}), iterate ({d}), batch]"
        )
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{self.env_id}: expected an action in {self.action_space}, got {action!r}"
            ) from None
        if a.shape != (n,):
            raise ValueError(
                f"{self.env_id}: expected an action of shape ({n},) = {layout}, got shape {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{self.env_id}: action must be finite, got {a.tolist()}")
        points = a[: n - (2 if self.paired else 1)]
        if np.any(np.abs(points) > self.divergence_radius):
            raise ValueError(
                f"{self.env_id}: query and iterate must lie in [-{self.divergence_radius:g}, "
                f"{self.divergence_radius:g}], got max |entry| {np.abs(points).max():g}"
            )
        raw_b = a[-2] if self.paired else a[-1]
        b = int(round(float(raw_b)))
        if not 1 <= b <= self.max_batch:
            raise ValueError(
                f"{self.env_id}: batch must be an integer in [1, {self.max_batch}], got {raw_b!r}"
            )
        if not self.paired:
            return a[:d], None, a[d : 2 * d], b
        if not 0.0 <= a[-1] <= 1.0:
            raise ValueError(f"{self.env_id}: paired must be in [0, 1] (rounded), got {a[-1]!r}")
        partner = a[d : 2 * d] if round(float(a[-1])) == 1 else None
        return a[:d], partner, a[2 * d : 3 * d], b
