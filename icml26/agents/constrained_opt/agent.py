"""The suite agent: any method of :mod:`icml26.agents.constrained_opt.solvers` behind ``act``."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.agents.constrained_opt.solvers import METHODS, SolverGen, start


class ConstrainedOptAgent:
    """Runs ``method`` on reset's ``info["oracle"]``, one iterate per ``act``.

    Args:
        method: a name in :data:`~icml26.agents.constrained_opt.solvers.METHODS`.
        iters: the method's iteration limit (SLSQP: its ``maxiter``).
        extra kwargs go to the method (``train_iters``, ``layers``, ``hidden`` for Hom-PGD+;
        ``inner``, ``mu0``, ``rho0`` for penalty / ALM).
    """

    version = "0"

    def __init__(self, method: str = "hom_pgd_plus", iters: int = 500, **params: Any) -> None:
        if method not in METHODS:
            from icml26._entry_points import unknown_name_error

            raise unknown_name_error("constrained_opt method", method, METHODS)
        if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
            raise ValueError(f"ConstrainedOptAgent: iters must be an int >= 1, got {iters!r}")
        self.method = method
        self.params = {"iters": iters, **params}
        self._gen: SolverGen | None = None
        self._last: np.ndarray | None = None
        self._seed = 0
        self.info: dict[str, Any] = {}

    def reset(self, seed: int | None = None) -> None:
        self._gen, self._last = None, None
        self._seed = 0 if seed is None else int(seed)
        self.info = {}

    def solve(self, oracle: Any) -> SolverGen:
        """The method's iterates on ``oracle`` (a problem or the env's oracle), without the env."""
        params = dict(self.params)
        if self.method == "hom_pgd_plus":
            params.setdefault("seed", self._seed)
            params["info"] = self.info
        return start(self.method, oracle, params)

    def act(self, observation: Any, info: dict[str, Any] | None = None) -> np.ndarray:
        if self._gen is None:
            if not info or "oracle" not in info:
                raise ValueError(
                    "ConstrainedOptAgent: the first act() after reset needs reset's info with 'oracle'"
                )
            self._gen = self.solve(info["oracle"])
            self._last = np.asarray(info["oracle"].x0, float)
        try:
            x = next(self._gen)
        except StopIteration:
            return np.concatenate([self._last, [1.0]])
        self._last = np.asarray(x, float)
        return np.concatenate([self._last, [0.0]])
