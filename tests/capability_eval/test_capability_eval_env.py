"""CapabilityEval-v0: arguments, bad actions (rejected before any state changes), the budget."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401  (registers the env ids)
from icml26.envs.capability_eval.env import CapabilityEvalEnv


def _act(
    env: CapabilityEvalEnv, tests: object = None, stop: int = 0, bounds: object = None
) -> dict:
    return {
        "tests": np.zeros(env.k, dtype=np.int64) if tests is None else tests,
        "stop": stop,
        "bounds": np.zeros(env.m) if bounds is None else bounds,
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"regime": "adversarial"}, "regime must be one of"),
        ({"test_budget": 0}, "test_budget must be an int >= 1"),
        ({"tau": 1.5}, "tau must be a number"),
        ({"delta": 1.0}, "delta must be < 1"),
        ({"testable": (0.8, 0.2)}, "testable must satisfy"),
        ({"testable": (0.0, 0.001)}, "contains no environment"),
        ({"regime": "worst_case", "family": {"kind": "points", "K": 4}}, "set by claim"),
        ({"regime": "worst_case", "n_bits": 13}, "n_bits must be <= 12"),
        ({"family": {"kind": "ring", "K": 3}}, "kind in"),
    ],
)
def test_bad_arguments_name_the_env(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match) as e:
        CapabilityEvalEnv(**kwargs)
    assert "CapabilityEval-v0" in str(e.value) or "family" in str(e.value)


def test_bad_actions_change_nothing() -> None:
    env = CapabilityEvalEnv(test_budget=100, testable=(0.0, 0.5))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(_act(env))
    obs0, _ = env.reset(seed=1)
    bad = [
        ({"tests": np.zeros(env.k)}, TypeError, "keys tests, stop, bounds"),
        (_act(env, tests=np.zeros(3)), ValueError, "tests must be 32 finite counts"),
        (_act(env, tests=-np.ones(env.k)), ValueError, "whole numbers"),
        (_act(env, tests=np.full(env.k, 0.5)), ValueError, "whole numbers"),
        (_act(env, tests=np.eye(env.k)[-1]), ValueError, "not testable"),
        (_act(env, stop=2), ValueError, "stop must be 0 or 1"),
        (_act(env, bounds=np.full(env.m, 1.5)), ValueError, "bounds must lie in"),
        (_act(env, bounds=np.zeros(3)), ValueError, "bounds must be 8"),
    ]
    for action, exc, match in bad:
        with pytest.raises(exc, match=match):
            env.step(action)
    obs, *_ = env.step(_act(env, tests=np.eye(env.k, dtype=np.int64)[0] * 10))
    assert obs[0].sum() == 10 and np.array_equal(obs0, np.zeros_like(obs0))


def test_budget_is_served_in_order_then_truncates_without_certificate() -> None:
    env = CapabilityEvalEnv(test_budget=100)
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step(_act(env, tests=np.full(env.k, 10)))
    assert info["tests_served"] == 100 and info["tests_left"] == 0
    assert obs[0, :10].tolist() == [10.0] * 10 and obs[0, 10:].sum() == 0
    assert r == pytest.approx(-0.1)  # test_cost = 0.1 / budget per test
    obs, r, term, trunc, info = env.step(_act(env, tests=np.ones(env.k, dtype=np.int64)))
    assert trunc and not term and info["truncated_without_certificate"] and not info["certified"]
    with pytest.raises(RuntimeError, match="ended"):
        env.step(_act(env))


def test_truth_and_rewards_at_the_certificate() -> None:
    env = gym.make("icml26/CapabilityEval-v0", test_budget=10)
    _, info = env.reset(seed=3)
    assert "truth" not in info  # the hidden system stays hidden until the end
    truth = None
    for bounds, expect_valid in ((np.zeros(8), True), (np.ones(8), False)):
        env.reset(seed=3)
        _, r, term, _, end = env.step(
            {"tests": np.zeros(32, np.int64), "stop": 1, "bounds": bounds}
        )
        truth = end["truth"] if truth is None else truth
        assert term and end["truth"] == truth and end["valid"] is expect_valid
        if expect_valid:
            assert r == 0.0 and not end["certified"]
        else:  # claiming 1 everywhere certifies; it is false unless every member is >= 0.9
            assert end["certified"]
            assert r == (1.0 if end["claim_true"] else -20.0)
