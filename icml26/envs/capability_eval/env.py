"""``icml26/CapabilityEval-v0``: the agent is the evaluator of a hidden system over a task family."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icml26.envs._checks import check_int_at_least, check_render_mode
from icml26.envs.capability_eval import circuits
from icml26.envs.capability_eval.families import (
    PROFILE_KINDS,
    bumps_family,
    draw_profiles,
    family_matrix,
    grid,
    member_values,
)

ENV_NAME = "CapabilityEval-v0"
REGIMES = ("stochastic", "worst_case")
CIRCUIT_CLASSES = ("general", "affine")
ADVERSARIES = ("adaptive", "random")
CLAIMS = ("every_input", "fraction")

#: the headline family: 8 members on 32 environments, alternately narrow and broad
DEFAULT_FAMILY = bumps_family(32, (np.arange(8) + 0.5) / 8, [0.02, 0.08] * 4)


class CapabilityEvalEnv(gym.Env):
    """
    ## Description
    The agent is the *evaluator*. A hidden system (drawn at reset) has a success indicator on
    each of ``K`` environments; a task family of ``m`` members (distributions over the
    environments) defines the claim "success >= tau on every member". Each step the agent runs
    a batch of tests (a count per environment) and observes how many passed; when it stops it
    issues a certificate: a lower bound on every member's success rate. The env knows the
    truth and scores the certificate: *valid* when every bound is at most the member's true
    success rate, *certified* when the smallest bound is >= tau, a *false certification* when
    it certifies a claim that is false. (Suite method card: docs/methods/capability_eval.md.)

    Two regimes. ``stochastic``: the system passes a test on environment ``k`` with
    probability ``f(theta_k)``, a hidden profile over the grid ``theta_k = (k + 1/2) / K``
    (``profile="dip"``: a capability failing in a narrow region; ``"boundary"``: dips shifted
    so the worst member sits within 0.02 of tau); the family's chi^2-radius relative to the
    best design is set by its member widths. ``worst_case``: environments are the ``2^n_bits``
    inputs of a hidden Boolean circuit of bounded size; a test passes when its output equals a
    public specification circuit (``info["spec"]``). With ``adversary="adaptive"`` every query
    passes (consistent with the spec itself) and, when the agent stops, the env reveals the
    circuit -- the spec, or the spec with a backdoor on an unqueried input (an affine
    difference vanishing on the queries for ``circuit_class="affine"``) -- that makes the
    certificate invalid if one consistent with every answer exists. With ``"random"`` the
    backdoor (probability 1/2) is drawn at reset.

    ## Action Space
    ``Dict(tests=MultiDiscrete([test_budget + 1] * K), stop=Discrete(2),
    bounds=Box(0, 1, (m,), float64))``. With ``stop = 0`` the env runs ``tests[k]`` tests on
    environment ``k`` (served in index order while the budget lasts; untestable environments
    must get 0); with ``stop = 1`` no test is run and ``bounds`` is the certificate.

    ## Observation Space
    ``Box(0, test_budget, (2, K), float64)``: tests run and tests passed per environment so far.

    ## Rewards
    ``-test_cost`` per test run; on stopping ``+1`` for certifying a true claim and
    ``-invalid_penalty`` for certifying a false one.

    ## Starting State
    A fresh hidden system from ``reset(seed=...)``; all counts zero. Reset's info holds what an
    evaluator may know: ``regime``, ``family`` (a description that
    :func:`icml26.envs.capability_eval.families.family_matrix` turns into the ``(m, K)``
    members), ``m``, ``K``, ``tau``, ``delta``, ``test_budget``, ``testable`` (K booleans),
    ``theta`` (the grid), and for circuits ``n_bits``, ``spec`` (gates), ``circuit_class`` and
    ``size_bound`` (the size every candidate circuit respects).

    ## Episode End
    Terminated when the agent stops. Truncated, without a certificate (all bounds 0), when it
    asks for tests after the budget is spent or after ``max_steps`` steps. The final info holds
    ``truth`` (every member's true success rate), ``valid``, ``certified``, ``claim_true``,
    ``false_certification``, ``tests``; for circuits ``hidden_circuit`` and ``backdoor`` (the
    trigger input, or the affine difference ``[c, a_1..a_n]``; None for the spec) and
    ``queries`` (every input tested, with its answer).

    ## Arguments
    | Parameter | Type | Default | Description |
    |---|---|---|---|
    | `regime` | str | `"stochastic"` | `"stochastic"` or `"worst_case"` |
    | `family` | dict | 8 bumps on 32 envs | stochastic family description (`families.py`) |
    | `profile` | str | `"dip"` | hidden profiles: `"dip"` or `"boundary"` |
    | `testable` | (float, float) | `(0.0, 1.0)` | stochastic: the theta range a test may use |
    | `n_bits` | int | 8 | worst case: circuit inputs (K = 2^n_bits) |
    | `circuit_class` | str | `"general"` | `"general"` (AND/OR/XOR/NOT) or `"affine"` (XOR) |
    | `adversary` | str | `"adaptive"` | `"adaptive"` or `"random"` |
    | `claim` | str | `"every_input"` | worst case: `"every_input"` (point masses) or `"fraction"` (uniform member) |
    | `spec_size` | int | `3 n_bits` | gates of the general-class specification |
    | `tau`, `delta` | float | 0.9, 0.05 | the claim's level and the certificate's error |
    | `test_budget` | int | 25,000 | tests per episode |
    | `test_cost` | float | `0.1 / test_budget` | reward per test |
    | `invalid_penalty` | float | `1 / delta` | penalty for a false certification |
    | `max_steps` | int | 1,000 | steps before truncation |

    ## Ecosystem
    ``icml26.integrations.sb3.wrap(env)`` applies ``FlattenDictSpaces``: the Dict action becomes
    one flat ``Box`` (keys in sorted order: ``bounds``, ``stop``, ``tests``).

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/CapabilityEval-v0", test_budget=2000)
    >>> obs, info = env.reset(seed=0)
    >>> tests = np.full(info["K"], 50)  # 50 tests on each of the 32 environments
    >>> obs, r, term, trunc, info = env.step({"tests": tests, "stop": 0, "bounds": np.zeros(info["m"])})
    >>> print(int(obs[0].sum()), int(obs[1].sum()))
    1600 1543
    >>> obs, r, term, trunc, info = env.step({"tests": 0 * tests, "stop": 1, "bounds": np.full(8, 0.5)})
    >>> print(term, info["valid"], info["certified"], round(min(info["truth"]), 4))
    True True False 0.9214
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        regime: str = "stochastic",
        family: Mapping[str, Any] | None = None,
        profile: str = "dip",
        testable: tuple[float, float] = (0.0, 1.0),
        n_bits: int = 8,
        circuit_class: str = "general",
        adversary: str = "adaptive",
        claim: str = "every_input",
        spec_size: int | None = None,
        tau: float = 0.9,
        delta: float = 0.05,
        test_budget: int = 25_000,
        test_cost: float | None = None,
        invalid_penalty: float | None = None,
        max_steps: int = 1_000,
        render_mode: str | None = None,
    ) -> None:
        check_render_mode(ENV_NAME, render_mode, self.metadata["render_modes"])
        for name, value, allowed in (
            ("regime", regime, REGIMES),
            ("profile", profile, PROFILE_KINDS),
            ("circuit_class", circuit_class, CIRCUIT_CLASSES),
            ("adversary", adversary, ADVERSARIES),
            ("claim", claim, CLAIMS),
        ):
            if value not in allowed:
                raise ValueError(f"{ENV_NAME}: {name} must be one of {allowed}, got {value!r}")
        self.test_budget = check_int_at_least(ENV_NAME, "test_budget", test_budget)
        self.max_steps = check_int_at_least(ENV_NAME, "max_steps", max_steps)
        for name, v, lo, hi in (("tau", tau, 0.0, 1.0), ("delta", delta, 0.0, 1.0)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v <= hi:
                raise ValueError(f"{ENV_NAME}: {name} must be a number in ({lo}, {hi}], got {v!r}")
        if not delta < 1:
            raise ValueError(f"{ENV_NAME}: delta must be < 1, got {delta!r}")
        self.regime, self.profile = regime, profile
        self.tau, self.delta = float(tau), float(delta)
        self.test_cost = 0.1 / self.test_budget if test_cost is None else float(test_cost)
        self.invalid_penalty = (
            1.0 / self.delta if invalid_penalty is None else float(invalid_penalty)
        )
        if not (math.isfinite(self.test_cost) and self.test_cost >= 0):
            raise ValueError(
                f"{ENV_NAME}: test_cost must be a finite number >= 0, got {test_cost!r}"
            )
        if not (math.isfinite(self.invalid_penalty) and self.invalid_penalty >= 0):
            raise ValueError(
                f"{ENV_NAME}: invalid_penalty must be a finite number >= 0, got {invalid_penalty!r}"
            )
        self.render_mode = render_mode
        self.members: np.ndarray | None
        if regime == "stochastic":
            self.family = dict(DEFAULT_FAMILY if family is None else family)
            self.members = family_matrix(self.family)
            k = self.members.shape[1]
            lo, hi = self._check_range(testable)
            self.theta = grid(k)
            self.testable = (self.theta >= lo) & (self.theta <= hi)
            if not self.testable.any():
                raise ValueError(f"{ENV_NAME}: testable range {testable} contains no environment")
            self.n_bits = 0
        else:
            if family is not None:
                raise ValueError(
                    f"{ENV_NAME}: the worst-case regime's family is set by claim=..., not family="
                )
            self.n_bits = check_int_at_least(ENV_NAME, "n_bits", n_bits, 2)
            if self.n_bits > 12:
                raise ValueError(f"{ENV_NAME}: n_bits must be <= 12, got {n_bits}")
            k = 2**self.n_bits
            self.family = {"kind": "points" if claim == "every_input" else "uniform", "K": k}
            self.members = None  # identity or one uniform row: never materialized (member_values)
            self.theta = np.arange(k, dtype=np.float64)
            self.testable = np.ones(k, dtype=bool)
            self.circuit_class, self.adversary = circuit_class, adversary
            self.spec_size = check_int_at_least(
                ENV_NAME, "spec_size", 3 * self.n_bits if spec_size is None else spec_size
            )
            extra = 2 * self.n_bits if circuit_class == "general" else self.n_bits + 2
            base = self.spec_size if circuit_class == "general" else self.n_bits + 2
            self.size_bound = base + extra
        self.k = k
        self.m = (
            self.members.shape[0]
            if self.members is not None
            else (k if claim == "every_input" else 1)
        )
        self.action_space = spaces.Dict(
            {
                "tests": spaces.MultiDiscrete(np.full(k, self.test_budget + 1, dtype=np.int64)),
                "stop": spaces.Discrete(2),
                "bounds": spaces.Box(0.0, 1.0, (self.m,), dtype=np.float64),
            }
        )
        self.observation_space = spaces.Box(0.0, float(self.test_budget), (2, k), dtype=np.float64)
        self._started = False
        self._done = True

    @staticmethod
    def _check_range(testable: Any) -> tuple[float, float]:
        try:
            lo, hi = (float(v) for v in testable)
        except (TypeError, ValueError):
            raise ValueError(
                f"{ENV_NAME}: testable must be a (low, high) pair of numbers, got {testable!r}"
            ) from None
        if not (0.0 <= lo < hi <= 1.0):
            raise ValueError(
                f"{ENV_NAME}: testable must satisfy 0 <= low < high <= 1, got {testable!r}"
            )
        return lo, hi

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        self._counts = np.zeros((2, self.k), dtype=np.float64)
        self._used, self._steps = 0, 0
        self._started, self._done = True, False
        self._queries: dict[int, bool] = {}
        info: dict[str, Any] = {
            "regime": self.regime,
            "family": copy.deepcopy(self.family),
            "m": self.m,
            "K": self.k,
            "tau": self.tau,
            "delta": self.delta,
            "test_budget": self.test_budget,
            "testable": self.testable.tolist(),
            "theta": self.theta.tolist(),
        }
        if self.regime == "stochastic":
            assert self.members is not None
            self._profile = draw_profiles(rng, self.profile, self.members, self.tau)[0]
        else:
            n = self.n_bits
            if self.circuit_class == "general":
                self._spec = circuits.random_circuit(rng, n, self.spec_size)
            else:
                self._spec = circuits.random_affine(rng, n)
            self._backdoor: Any = None
            if self.adversary == "random" and rng.random() < 0.5:
                if self.circuit_class == "general":
                    self._backdoor = int(rng.integers(self.k))
                else:
                    d = rng.integers(0, 2, n + 1)
                    while not d.any():
                        d = rng.integers(0, 2, n + 1)
                    self._backdoor = d
            info.update(
                n_bits=n,
                spec=[list(g) for g in self._spec],
                circuit_class=self.circuit_class,
                adversary=self.adversary,
                size_bound=self.size_bound,
            )
        return self._counts.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise RuntimeError(f"{ENV_NAME}: call reset() before step()")
        if self._done:
            raise RuntimeError(
                f"{ENV_NAME}: the episode has ended; call reset() before stepping again"
            )
        tests, stop, bounds = self._check_action(action)
        self._steps += 1
        if stop:
            return self._finish(bounds, truncated=False)
        want = int(tests.sum())
        left = self.test_budget - self._used
        if want > 0 and left == 0:
            return self._finish(np.zeros(self.m), truncated=True)
        served = np.minimum(tests, np.maximum(left - (np.cumsum(tests) - tests), 0))
        passes = self._run(served)
        self._counts[0] += served
        self._counts[1] += passes
        n = int(served.sum())
        self._used += n
        info = {
            "tests_served": n,
            "passes_served": int(passes.sum()),
            "tests_left": self.test_budget - self._used,
        }
        if self._steps >= self.max_steps:
            obs, r, term, trunc, end = self._finish(np.zeros(self.m), truncated=True)
            return obs, r - self.test_cost * n, term, trunc, {**info, **end}
        return self._counts.copy(), -self.test_cost * n, False, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return (
            f"{self.regime} evaluation: {self._used}/{self.test_budget} tests, "
            f"{int(self._counts[1].sum())} passed, {self._steps} steps"
        )

    # ------------------------------------------------------------------ internals
    def _run(self, served: np.ndarray) -> np.ndarray:
        """Passes of the served tests (the stochastic draw, or the circuit's answers)."""
        if self.regime == "stochastic":
            return self.np_random.binomial(served, self._profile).astype(np.float64)
        xs = np.flatnonzero(served)
        ok = ~self._failures(xs)
        for x, a in zip(xs.tolist(), ok.tolist()):
            self._queries[x] = a
        out = np.zeros(self.k)
        out[xs] = served[xs] * ok
        return out

    def _failures(self, xs: np.ndarray) -> np.ndarray:
        """Where the hidden circuit disagrees with the spec (adaptive: nowhere before the end)."""
        if self._backdoor is None:
            return np.zeros(len(xs), dtype=bool)
        if self.circuit_class == "general":
            return np.asarray(xs) == self._backdoor
        return circuits.affine_values(self._backdoor, xs, self.n_bits)

    def _adversary_reveal(self, bounds: np.ndarray) -> None:
        """Adaptive adversary: pick a circuit consistent with every answer that makes the
        certificate invalid, if one exists; else the spec."""
        queried = np.array(sorted(self._queries), dtype=np.int64)
        if self.circuit_class == "general":
            free = np.flatnonzero(~np.isin(np.arange(self.k), queried))
            # a backdoor at x* leaves member j the value 1 - q_j(x*): "every input" members
            # break where the certificate claims anything at x*, the average where it claims
            # more than 1 - 2^-n
            if self.family["kind"] == "points":
                bad = bounds[free] > 1e-12
            else:
                bad = np.full(free.size, bool(np.any(bounds > 1.0 - 1.0 / self.k + 1e-12)))
            cands = free[bad]
            if cands.size:
                self._backdoor = int(cands[self.np_random.integers(cands.size)])
            return
        basis = circuits.affine_nullspace(queried, self.n_bits)
        order = self.np_random.permutation(len(basis))
        for b in basis[order]:
            fail = circuits.affine_values(b, np.arange(self.k), self.n_bits).astype(np.float64)
            if np.any(bounds > 1.0 - member_values(self.family, self.members, fail) + 1e-12):
                self._backdoor = b
                return

    def _finish(
        self, bounds: np.ndarray, truncated: bool
    ) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._done = True
        info: dict[str, Any] = {}
        if self.regime == "stochastic":
            truth = member_values(self.family, self.members, self._profile)
        else:
            if self.adversary == "adaptive" and not truncated:
                self._adversary_reveal(bounds)
            fail = self._failures(np.arange(self.k)).astype(np.float64)
            truth = 1.0 - member_values(self.family, self.members, fail)
            if self._backdoor is None:
                hidden = self._spec
            elif self.circuit_class == "general":
                hidden = circuits.with_trigger(self._spec, self.n_bits, int(self._backdoor))
            else:
                hidden = circuits.with_affine(self._spec, self.n_bits, self._backdoor)
            backdoor = self._backdoor
            info.update(
                hidden_circuit=[list(g) for g in hidden],
                backdoor=None if backdoor is None else np.asarray(backdoor).tolist(),
                queries=[[x, bool(a)] for x, a in sorted(self._queries.items())],
            )
        valid = bool(np.all(bounds <= truth + 1e-12))
        certified = bool(bounds.min() >= self.tau)
        claim_true = bool(truth.min() >= self.tau - 1e-12)
        false_cert = certified and not claim_true
        reward = float(certified and claim_true) - self.invalid_penalty * float(false_cert)
        info.update(
            truth=truth.tolist(),
            bounds=bounds.tolist(),
            valid=valid,
            certified=certified,
            claim_true=claim_true,
            false_certification=false_cert,
            tests=self._used,
            truncated_without_certificate=truncated,
        )
        return self._counts.copy(), reward, not truncated, truncated, info

    def _check_action(self, action: Any) -> tuple[np.ndarray, int, np.ndarray]:
        if not isinstance(action, Mapping) or not {"tests", "stop", "bounds"} <= set(action):
            raise TypeError(
                f"{ENV_NAME}: expected an action dict with keys tests, stop, bounds in "
                f"{self.action_space}, got {action!r:.200}"
            )
        try:
            tests = np.asarray(action["tests"], dtype=np.float64)
            bounds = np.asarray(action["bounds"], dtype=np.float64)
            stop_f = float(np.asarray(action["stop"]).reshape(()))
        except (TypeError, ValueError):
            raise TypeError(
                f"{ENV_NAME}: action entries must be numeric, got {action!r:.200}"
            ) from None
        if tests.shape != (self.k,) or not np.all(np.isfinite(tests)):
            raise ValueError(
                f"{ENV_NAME}: tests must be {self.k} finite counts, got shape {tests.shape}"
            )
        if (
            np.any(tests < 0)
            or np.any(tests != np.round(tests))
            or np.any(tests > self.test_budget)
        ):
            raise ValueError(
                f"{ENV_NAME}: tests must be whole numbers in [0, {self.test_budget}], "
                f"got min {tests.min():g}, max {tests.max():g}"
            )
        if np.any(tests[~self.testable] > 0):
            bad = np.flatnonzero(~self.testable & (tests > 0))[:5].tolist()
            raise ValueError(
                f"{ENV_NAME}: environments {bad} are not testable (testable: "
                f"{np.flatnonzero(self.testable).min()}..{np.flatnonzero(self.testable).max()})"
            )
        if stop_f not in (0.0, 1.0):
            raise ValueError(f"{ENV_NAME}: stop must be 0 or 1, got {action['stop']!r}")
        if bounds.shape != (self.m,) or not np.all(np.isfinite(bounds)):
            raise ValueError(
                f"{ENV_NAME}: bounds must be {self.m} finite numbers in [0, 1], got shape {bounds.shape}"
            )
        if np.any(bounds < 0) or np.any(bounds > 1):
            raise ValueError(
                f"{ENV_NAME}: bounds must lie in [0, 1], got min {bounds.min():g}, max {bounds.max():g}"
            )
        return tests.astype(np.int64), int(stop_f), bounds
