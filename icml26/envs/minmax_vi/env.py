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
    ``Box((2 d + 1,), float64)``: ``[query z (d), iterate (d), batch]``. The first ``2 d`` entries
    lie in ``[-divergence_radius, divergence_radius]`` (an iterate reaching that bound counts as diverged); ``batch`` is rounded to an integer in
    ``[1, max_batch]``. The query may lie outside ``C`` (FBF evaluates there); the iterate is
    projected onto ``C`` before scoring (``info["infeasibility"]`` says by how much it moved).

    ## Observation Space
    ``Box(-inf, inf, (d,), float64)``: the mean operator sample at the last query (zeros after reset).

    ## Rewards
    ``-residual(P_C(iterate))`` per step.

    ## Starting State
    The problem's starting point ``z0`` (in ``info["z0"]``); the problem instance is fixed by
    ``problem_kwargs`` (its own ``seed``), the noise by ``reset(seed=...)``. Reset's info also holds
    ``lipschitz``, ``lower``, ``upper`` (the box C, with infinities), ``dim`` and ``oracle_budget``.

    ## Episode End
    Truncated when ``oracle_budget`` oracle calls are spent (the last batch is cut to what is
    left). Terminated, with ``info["diverged"] = True``, when the iterate's norm exceeds
    ``divergence_radius`` or a sample is not finite.

    ## Arguments
    ``gym.make("icml26/StochasticVI-v0", problem="bilinear", problem_kwargs=None, noise="operator",
    sigma0=0.1, sigma1=1.0, oracle_budget=100_000, max_batch=2**20, divergence_radius=1e6,
    render_mode=None | "ansi")``; ``problem`` is one of ``bilinear``, ``quadratic_game``,
    ``lagrangian_qp``, ``weak_minty_quadratic``, ``global_forsaken``.

    ## Version History
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
        self.render_mode = render_mode
        d = self.problem.dim
        r = self.divergence_radius
        self.action_space = spaces.Box(
            np.concatenate([np.full(2 * d, -r), [1.0]]),
            np.concatenate([np.full(2 * d, r), [float(self.max_batch)]]),
            dtype=np.float64,
        )
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(d,), dtype=np.float64)
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
        return np.zeros(p.dim), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise RuntimeError(f"{ENV_NAME}: call reset() before step()")
        if self._done:
            raise RuntimeError(
                f"{ENV_NAME}: the episode has ended; call reset() before stepping again"
            )
        query, iterate, batch = self._check_action(action)
        p = self.problem
        batch = min(batch, self.oracle_budget - self._calls)
        sample = p.sample(query, self.np_random, batch, self.noise, self.sigma0, self.sigma1)
        self._calls += batch
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
    def _check_action(self, action: Any) -> tuple[np.ndarray, np.ndarray, int]:
        d = self.problem.dim
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{ENV_NAME}: expected an action in {self.action_space}, got {action!r}"
            ) from None
        if a.shape != (2 * d + 1,):
            raise ValueError(
                f"{ENV_NAME}: expected an action of shape ({2 * d + 1},) = [query ({d}), iterate ({d}), "
                f"batch], got shape {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{ENV_NAME}: action must be finite, got {a.tolist()}")
        if np.any(np.abs(a[:-1]) > self.divergence_radius):
            raise ValueError(
                f"{ENV_NAME}: query and iterate must lie in [-{self.divergence_radius:g}, "
                f"{self.divergence_radius:g}], got max |entry| {np.abs(a[:-1]).max():g}"
            )
        b = int(round(float(a[-1])))
        if not 1 <= b <= self.max_batch:
            raise ValueError(
                f"{ENV_NAME}: batch must be an integer in [1, {self.max_batch}], got {a[-1]!r}"
            )
        return a[:d], a[d : 2 * d], b
