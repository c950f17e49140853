"""Bounded-size circuits and the worst-case adversaries: consistency with every answer given."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401  (registers the env ids)
from icml26 import agents
from icml26.envs.capability_eval import circuits
from icml26.testing import check_env_conformance

N = 5
X = np.arange(2**N)


def test_evaluate_a_hand_written_circuit() -> None:
    # (x0 AND x1) XOR (NOT x2): truth table over the 8 inputs of 3 bits
    gates = [("and", 0, 1), ("not", 2, -1), ("xor", 3, 4)]
    out = circuits.evaluate(gates, 3, np.arange(8))
    expect = [((x & 1) & (x >> 1 & 1)) ^ (1 - (x >> 2 & 1)) for x in range(8)]
    assert out.astype(int).tolist() == expect


@pytest.mark.parametrize("x_star", [0, 7, 2**N - 1])
def test_trigger_differs_exactly_at_one_input_within_2n_gates(x_star: int) -> None:
    spec = circuits.random_circuit(np.random.default_rng(1), N, 3 * N)
    alt = circuits.with_trigger(spec, N, x_star)
    diff = circuits.evaluate(alt, N, X) ^ circuits.evaluate(spec, N, X)
    assert np.flatnonzero(diff).tolist() == [x_star]
    assert len(alt) - len(spec) <= 2 * N


def test_affine_alternatives_vanish_on_the_queries() -> None:
    rng = np.random.default_rng(2)
    spec = circuits.random_affine(rng, N)
    queries = np.array([0, 3, 5, 16])
    basis = circuits.affine_nullspace(queries, N)
    assert basis.shape == (N + 1 - 4, N + 1)  # 4 affinely independent queries
    for d in basis:
        alt = circuits.with_affine(spec, N, d)
        diff = circuits.evaluate(alt, N, X) ^ circuits.evaluate(spec, N, X)
        assert not diff[queries].any() and diff.any()
        assert np.array_equal(diff, circuits.affine_values(d, X, N))
    # 0 and the unit vectors span GF(2)^n affinely: no alternative is left
    assert circuits.affine_nullspace(np.array([0] + [1 << i for i in range(N)]), N).shape[0] == 0


def _episode(env: gym.Env, agent_name: str, seed: int, **kw: object) -> dict:
    agent = agents.make(agent_name, **kw)
    obs, info = env.reset(seed=seed)
    agent.reset(seed)
    spec, n, bound = info["spec"], info["n_bits"], info["size_bound"]
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            return {**info, "spec": spec, "n_bits": n, "size_bound": bound}


@pytest.mark.parametrize("klass", ["general", "affine"])
@pytest.mark.parametrize("adversary", ["adaptive", "random"])
def test_adversary_stays_consistent_with_every_answer(klass: str, adversary: str) -> None:
    env = gym.make(
        "icml26/CapabilityEval-v0",
        regime="worst_case",
        n_bits=N,
        circuit_class=klass,
        adversary=adversary,
        test_budget=2**N,
    )
    backdoors = 0
    for seed in range(40):
        info = _episode(env, "circuit-random", seed, queries=1 + seed % 20)
        spec = [tuple(g) for g in info["spec"]]
        hidden = [tuple(g) for g in info["hidden_circuit"]]
        assert len(spec) <= info["size_bound"] and len(hidden) <= info["size_bound"]
        xs = np.array([x for x, _ in info["queries"]])
        answers = np.array([a for _, a in info["queries"]])
        # every answer the env gave is what the revealed circuit and the spec say
        same = circuits.evaluate(hidden, N, xs) == circuits.evaluate(spec, N, xs)
        assert np.array_equal(same, answers)
        if adversary == "adaptive":
            assert answers.all()  # consistent with the spec too
        truth_fail = circuits.evaluate(hidden, N, X) != circuits.evaluate(spec, N, X)
        np.testing.assert_allclose(info["truth"], 1.0 - truth_fail.astype(float))
        backdoors += info["backdoor"] is not None
        if adversary == "adaptive" and klass == "general":
            # a certificate from fewer than 2^n queries is always broken
            assert info["certified"] and not info["valid"] and info["false_certification"]
    assert backdoors > 0
    env.close()


def test_exhaustive_and_span_testers_are_valid_where_theory_says() -> None:
    general = gym.make("icml26/CapabilityEval-v0", regime="worst_case", n_bits=N, test_budget=2**N)
    affine = gym.make(
        "icml26/CapabilityEval-v0",
        regime="worst_case",
        n_bits=N,
        circuit_class="affine",
        test_budget=2**N,
    )
    for seed in range(10):
        info = _episode(general, "circuit-exhaustive", seed)
        assert info["certified"] and info["valid"] and info["tests"] == 2**N
        info = _episode(affine, "circuit-span", seed)
        assert info["certified"] and info["valid"] and info["tests"] == N + 1
        info = _episode(general, "circuit-span", seed)
        assert info["certified"] and not info["valid"]  # the same n + 1 queries on general circuits


def test_random_backdoors_fail_at_rate_half_of_the_unqueried_share() -> None:
    env = gym.make(
        "icml26/CapabilityEval-v0",
        regime="worst_case",
        n_bits=N,
        adversary="random",
        test_budget=2**N,
    )
    q = 8
    fails = [
        _episode(env, "circuit-random", s, queries=q)["false_certification"] for s in range(600)
    ]
    expect = (1 - q / 2**N) / 2  # 0.375
    assert abs(np.mean(fails) - expect) < 3 * np.sqrt(expect * (1 - expect) / 600)


def test_average_claim_is_certified_by_the_chi2_protocol() -> None:
    env = gym.make(
        "icml26/CapabilityEval-v0",
        regime="worst_case",
        n_bits=N,
        claim="fraction",
        test_budget=2500,
    )
    for seed in range(5):
        info = _episode(env, "certify-chi2", seed)
        assert info["certified"] and info["valid"]


def test_worst_case_conformance() -> None:
    check_env_conformance(
        "icml26/CapabilityEval-v0",
        {
            "regime": "worst_case",
            "n_bits": 4,
            "circuit_class": "affine",
            "test_budget": 40,
            "max_steps": 20,
        },
        vector=False,
    )
