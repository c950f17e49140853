"""``icml26/ConstrainedOpt-v0``: one constrained problem instance per episode, scored exactly."""

from __future__ import annotations

import math
import time
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icml26.envs._checks import check_int_at_least, check_render_mode
from icml26.envs.constrained_opt.problems import (
    FEAS_TOL,
    PROBLEMS,
    Problem,
    best_known,
    make_problem,
    rel_gap,
)

ENV_NAME = "ConstrainedOpt-v0"
_COUNTED = ("f", "grad", "g", "jac", "g_batch", "radial", "radial_grad", "penalty_grad_batch")


class Oracle:
    """The agent's view of an instance: objective, constraints and radial-function oracles with
    call counters (``calls``), the box ``lb, ub``, the anchor ``x0`` and the dimension ``n``;
    never the best-known solution. Equal when built from the same instance."""

    def __init__(self, problem: Problem) -> None:
        self._p = problem
        self.n, self.lb, self.ub = problem.n, problem.lb.copy(), problem.ub.copy()
        self.x0 = problem.x0.copy()
        self.name = problem.name
        # a parametric family's instance parameters (public problem data), else None
        self.condition = None if problem.condition is None else np.array(problem.condition)
        self.calls = dict.fromkeys(_COUNTED, 0)

    def _call(self, name: str, *args: Any) -> Any:
        self.calls[name] += 1
        return getattr(self._p, name)(*args)

    def f(self, x: np.ndarray) -> float:
        return self._call("f", x)

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self._call("grad", x)

    def g(self, x: np.ndarray) -> np.ndarray:
        return self._call("g", x)

    def jac(self, x: np.ndarray) -> np.ndarray:
        return self._call("jac", x)

    def g_batch(self, X: np.ndarray) -> np.ndarray:
        return self._call("g_batch", X)

    def violation(self, x: np.ndarray) -> float:
        return float(max(0.0, np.max(self.g(x))))

    def violation_batch(self, X: np.ndarray) -> np.ndarray:
        return np.maximum(self.g_batch(X).max(axis=1), 0.0)

    def penalty_grad_batch(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._call("penalty_grad_batch", X)

    def radial(self, U: np.ndarray) -> np.ndarray:
        return self._call("radial", U)

    def radial_grad(self, u: np.ndarray) -> tuple[float, np.ndarray]:
        return self._call("radial_grad", u)

    @property
    def total_calls(self) -> int:
        return int(sum(self.calls.values()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Oracle) and self._p.key() == other._p.key()

    def __hash__(self) -> int:
        return hash(self._p.key())

    def __repr__(self) -> str:
        return f"Oracle({self._p.describe()})"


class ConstrainedOptEnv(gym.Env):
    """
    ## Description
    Optimization over a constraint set homeomorphic to a ball (Hom-PGD+, Liu, Liang and Chen,
    ICML 2026). An episode is one problem instance ``min f(x) s.t. g(x) <= 0`` (box included):
    the agent is the optimizer. Reset's ``info["oracle"]`` gives it the objective, constraint
    and radial-function oracles (:class:`Oracle`, which counts every call); each step the agent
    proposes an iterate and may stop. The env scores the iterate exactly: objective, max
    constraint violation, relative gap to a cached best-known solution (computed by a slow
    multi-start or exact method, :func:`~icml26.envs.constrained_opt.problems.best_known`).
    Problems: ``qcqp`` (non-convex QCQP), ``star`` (known radial function), ``jcc_opf``
    (chance-constrained DC-OPF on IEEE case30), ``attack`` (non-uniform attack on a digits MLP),
    ``qcqp_param`` (a parametric QCQP family; the oracle's ``condition`` holds the instance's
    parameters).

    ## Action Space
    ``Box(-inf, inf, (n + 1,), float64)``: ``[x (n), stop]``; ``stop > 0.5`` ends the episode
    with ``x`` as the answer. ``x`` must be finite.

    ## Observation Space
    ``Box(-inf, inf, (3,), float64)``: ``[f(x), violation(x), rel_gap(x)]`` of the last iterate
    (of the anchor ``x0`` after reset); ``violation = max_i [g_i(x)]_+``,
    ``rel_gap = (f - f_best) / max(|f_best|, 1e-8)``.

    ## Rewards
    0 until the episode ends; then ``-(max(rel_gap, 0) + 100 violation)`` of the final iterate.

    ## Starting State
    The instance is drawn from ``reset(seed=...)`` (its generator seed is ``np_random``'s first
    integer); reset's info holds the ``oracle``, ``n``, ``x0``, ``lb``, ``ub``, ``f_best`` and
    the instance's parameters.

    ## Episode End
    Terminated when the agent sets ``stop``; truncated after ``max_iterates`` iterates.

    ## Arguments
    ``gym.make("icml26/ConstrainedOpt-v0", problem="qcqp", problem_kwargs=None,
    max_iterates=1000, record_time=False, best_known_starts=20)``; ``problem_kwargs`` are the
    generator's (``seed`` is set by reset). ``record_time=True`` adds ``info["wall_time_s"]``
    (seconds since reset; off by default because it is not deterministic).

    ## Ecosystem
    ``icml26.integrations.sb3.wrap(env)`` applies ``NormalizedAction``: ``Box(-1, 1)`` actions
    mapped affinely onto ``env.unwrapped.action_bounds``, the instance's box ``[lb, ub]`` for ``x``
    and ``[0, 1]`` for ``stop``.

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/ConstrainedOpt-v0", problem="qcqp", problem_kwargs={"n": 2, "m": 3})
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.concatenate([info["x0"], [1.0]]))
    >>> print(obs.round(4), info["feasible"], terminated)
    [0. 0. 1.] True True
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        problem: str = "qcqp",
        problem_kwargs: dict[str, Any] | None = None,
        max_iterates: int = 1000,
        record_time: bool = False,
        best_known_starts: int = 20,
        render_mode: str | None = None,
    ) -> None:
        check_render_mode(ENV_NAME, render_mode, self.metadata["render_modes"])
        if problem not in PROBLEMS:
            raise ValueError(f"{ENV_NAME}: problem must be one of {PROBLEMS}, got {problem!r}")
        for name, v in (("max_iterates", max_iterates), ("best_known_starts", best_known_starts)):
            check_int_at_least(ENV_NAME, name, v)
        kw = dict(problem_kwargs or {})
        if "seed" in kw:
            raise ValueError(
                f"{ENV_NAME}: the instance seed comes from reset(seed=...), not problem_kwargs"
            )
        self.problem_name, self.problem_kwargs = problem, kw
        self.max_iterates, self.record_time = int(max_iterates), bool(record_time)
        self.best_known_starts = int(best_known_starts)
        self.render_mode = render_mode
        self.problem: Problem = make_problem(problem, **kw, seed=0)  # fixes the dimension
        self.n = self.problem.n
        self.action_space = spaces.Box(-np.inf, np.inf, shape=(self.n + 1,), dtype=np.float64)
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float64)
        self._started, self._done = False, True
        self._t0 = 0.0
        self._iterates = 0
        self.f_best = math.nan
        self.oracle: Oracle | None = None
        self._last: dict[str, Any] = {}

    def _score(self, x: np.ndarray) -> dict[str, Any]:
        p = self.problem
        f = p.f(x)
        viol = p.violation(x)
        return {
            "objective": f,
            "violation": viol,
            "feasible": bool(viol <= FEAS_TOL),
            "rel_gap": rel_gap(f, self.f_best),
        }

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        inst_seed = int(self.np_random.integers(0, 2**31 - 1))
        self.problem = make_problem(self.problem_name, **self.problem_kwargs, seed=inst_seed)
        _, self.f_best = best_known(self.problem, starts=self.best_known_starts)
        self.oracle = Oracle(self.problem)
        self._started, self._done, self._iterates = True, False, 0
        self._t0 = time.perf_counter()
        self._last = self._score(self.problem.x0)
        info = {
            "oracle": self.oracle,
            "n": self.n,
            "x0": self.problem.x0.copy(),
            "lb": self.problem.lb.copy(),
            "ub": self.problem.ub.copy(),
            "f_best": self.f_best,
            "instance": self.problem.describe(),
            "max_iterates": self.max_iterates,
            **self._last,
        }
        return self._obs(), info

    def _obs(self) -> np.ndarray:
        s = self._last
        return np.array([s["objective"], s["violation"], s["rel_gap"]], dtype=np.float64)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise RuntimeError(f"{ENV_NAME}: call reset() before step()")
        if self._done:
            raise RuntimeError(
                f"{ENV_NAME}: the episode has ended; call reset() before stepping again"
            )
        x, stop = self._check_action(action)
        self._iterates += 1
        self._last = self._score(x)
        terminated = stop
        truncated = self._iterates >= self.max_iterates and not terminated
        self._done = terminated or truncated
        reward = 0.0
        if self._done:
            reward = -(max(self._last["rel_gap"], 0.0) + 100.0 * self._last["violation"])
        info: dict[str, Any] = {
            **self._last,
            "iterates": self._iterates,
            "oracle_calls": self.oracle.total_calls if self.oracle else 0,
            "f_best": self.f_best,
        }
        if self.record_time:
            info["wall_time_s"] = time.perf_counter() - self._t0
        return self._obs(), float(reward), terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        s = self._last
        return (
            f"{self.problem_name} n={self.n}: iterate {self._iterates}, f {s.get('objective', math.nan):.6g}, "
            f"violation {s.get('violation', math.nan):.2e}, gap {s.get('rel_gap', math.nan):.3e}"
        )

    @property
    def action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Finite ``(low, high)`` of the action: the instance's box for ``x``, ``[0, 1]`` for ``stop``."""
        low = np.append(self.problem.lb, 0.0)
        high = np.append(self.problem.ub, 1.0)
        return low, high

    def _check_action(self, action: Any) -> tuple[np.ndarray, bool]:
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{ENV_NAME}: expected an action in {self.action_space}, got {action!r}"
            ) from None
        if a.shape != (self.n + 1,):
            raise ValueError(
                f"{ENV_NAME}: expected an action of shape ({self.n + 1},) = [x ({self.n}), stop], "
                f"got shape {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{ENV_NAME}: action must be finite, got {a.tolist()}")
        return a[:-1].copy(), bool(a[-1] > 0.5)
