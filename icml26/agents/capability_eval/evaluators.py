"""Evaluators for ``icml26/CapabilityEval-v0``: plan tests, run them in one batch, certify.

:class:`ProtocolEvaluator` runs one of :data:`icml26.certify.PROTOCOLS` (the chi^2 protocol of
the method card and its baselines); :class:`CircuitTester` is the black-box tester of the
worst-case regime (random, exhaustive or spanning queries, certifying when every query passes).
Both read the family, tau, delta and the budget from reset's ``info`` (the first ``act``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from icml26.certify import PROTOCOLS, certify_counts, draw_iid, plan_tests
from icml26.certify.protocols import Plan
from icml26.envs.capability_eval.families import family_matrix, member_values

__all__ = ["ProtocolEvaluator", "CircuitTester"]


def _action(
    k: int, m: int, tests: np.ndarray | None = None, bounds: np.ndarray | None = None
) -> dict[str, Any]:
    return {
        "tests": np.zeros(k, dtype=np.int64)
        if tests is None
        else np.asarray(tests, dtype=np.int64),
        "stop": int(bounds is not None),
        "bounds": np.zeros(m) if bounds is None else np.asarray(bounds, dtype=np.float64),
    }


class ProtocolEvaluator:
    """Plan with ``protocol`` for margin ``margin`` (the sample-size rule of
    :func:`icml26.certify.plan_tests`, capped by the budget), run the whole allocation in one
    step (``iw`` draws it i.i.d. from its design), then stop with the protocol's bounds."""

    version = "0"

    def __init__(self, protocol: str = "chi2", margin: float = 0.05) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(
                f"ProtocolEvaluator: protocol must be one of {PROTOCOLS}, got {protocol!r}"
            )
        if not isinstance(margin, (int, float)) or not 0 < margin <= 1:
            raise ValueError(f"ProtocolEvaluator: margin must lie in (0, 1], got {margin!r}")
        self.protocol, self.margin = protocol, float(margin)
        self._rng = np.random.default_rng(0)
        self._plan: Plan | None = None
        self._tau = 0.0
        self.last_plan: Plan | None = None

    def bind(self, observation_space: Any, action_space: Any) -> None:
        pass  # the plan needs reset's info, not the spaces

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._plan = None

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> dict[str, Any]:
        if self._plan is None:
            if not info or "family" not in info:
                raise ValueError(
                    "ProtocolEvaluator: the first act() after reset() needs reset's info "
                    "(family, tau, delta, test_budget, testable)"
                )
            members = family_matrix(info["family"])
            self._tau = float(info["tau"])
            plan = plan_tests(
                members,
                self.protocol,
                eps=self.margin,
                delta=float(info["delta"]),
                budget=int(info["test_budget"]),
                testable=np.asarray(info["testable"], dtype=bool),
            )
            self._plan = self.last_plan = plan
            tests = draw_iid(self._rng, plan.design.p, plan.n_tests) if plan.iid else plan.counts
            return _action(members.shape[1], members.shape[0], tests=tests)
        counts = np.asarray(observation, dtype=np.float64)
        cert = certify_counts(self._plan, counts[0], counts[1], self._tau)
        assert not isinstance(cert, list)
        return _action(counts.shape[1], len(cert.bounds), bounds=cert.bounds)


class CircuitTester:
    """Black-box tester of the worst-case regime: query ``queries`` distinct inputs
    (``strategy="random"``), every input (``"exhaustive"``) or 0 and the unit vectors
    (``"span"``, n + 1 queries), then claim success 1 on every queried input that passed and,
    when all passed, on every input (the extrapolation a finite test makes); 0 elsewhere."""

    version = "0"
    STRATEGIES = ("random", "exhaustive", "span")

    def __init__(self, strategy: str = "random", queries: int = 64) -> None:
        if strategy not in self.STRATEGIES:
            raise ValueError(
                f"CircuitTester: strategy must be one of {self.STRATEGIES}, got {strategy!r}"
            )
        if isinstance(queries, bool) or not isinstance(queries, int) or queries < 1:
            raise ValueError(f"CircuitTester: queries must be an int >= 1, got {queries!r}")
        self.strategy, self.queries = strategy, queries
        self._rng = np.random.default_rng(0)
        self._asked = False
        self._family: dict[str, Any] = {}

    def bind(self, observation_space: Any, action_space: Any) -> None:
        pass

    def reset(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._asked = False

    def _inputs(self, k: int, budget: int) -> np.ndarray:
        if self.strategy == "exhaustive":
            xs = np.arange(k)
        elif self.strategy == "span":
            n = int(round(np.log2(k)))
            xs = np.array([0] + [1 << i for i in range(n)])
        else:
            xs = self._rng.choice(k, size=min(self.queries, k), replace=False)
        return xs[: min(len(xs), budget)]

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> dict[str, Any]:
        if not self._asked:
            if not info or info.get("regime") != "worst_case":
                raise ValueError("CircuitTester: needs reset's info of the worst_case regime")
            self._family = dict(info["family"])
            self._asked = True
            k = int(info["K"])
            tests = np.zeros(k, dtype=np.int64)
            tests[self._inputs(k, int(info["test_budget"]))] = 1
            return _action(k, int(info["m"]), tests=tests)
        counts = np.asarray(observation, dtype=np.float64)
        tested, passed = counts[0] > 0, counts[1] >= counts[0]
        ok = np.where(tested, passed, False)
        all_pass = bool(np.all(passed[tested])) and tested.any()
        success = np.where(tested, ok, all_pass).astype(np.float64)  # claimed success per input
        bounds = member_values(self._family, None, success)
        return _action(counts.shape[1], len(bounds), bounds=np.clip(bounds, 0.0, 1.0))
