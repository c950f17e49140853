"""Tasks of the certified-capability family (docs/methods/capability_eval.md).

A trial plays ``task.eval_episodes`` episodes of ``icml26/CapabilityEval-v0``, each with a fresh
hidden system (``derive_seed(seed, "eval", i)``); the agent is the evaluator. Nothing is learned:
the budget is the test budget of each episode, and the trial is an exact simulation of the
protocol on 100 hidden systems (10 seeds give the 1,000 systems the validity claims are
measured on).

Metrics: ``utility`` (primary: mean episode return, +1 per true claim certified, -1/delta per
false certification, -0.1 per full test budget), ``validity`` (share of episodes whose every
bound holds: the uniform certificate's coverage, >= 1 - delta for a valid protocol),
``false_certification`` (share of episodes certifying a false claim), ``power`` (share of the
episodes with a true claim that were certified), ``certified`` (share certified), ``tests``
(mean tests spent). ``icml26 certify`` reads ``task.extra["success_metric"]`` (``validity``)
and the per-episode flags in ``TrialResult.extra["successes"]``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent, rollout
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

__all__ = ["TASKS", "SUITES", "run_trial"]

_ENV = "icml26/CapabilityEval-v0"
_DELTA = 0.05


def _metrics(budget: int) -> tuple[Metric, ...]:
    return (
        Metric(
            "utility",
            "max",
            -1.0 / _DELTA - 0.1,
            1.0,
            "mean episode return (+1 true claim certified, -1/delta false)",
        ),
        Metric("validity", "max", 0.0, 1.0, "share of certificates whose every bound holds"),
        Metric(
            "false_certification", "min", 0.0, 1.0, "share of episodes certifying a false claim"
        ),
        Metric("power", "max", 0.0, 1.0, "share of true claims certified"),
        Metric("certified", "max", 0.0, 1.0, "share of episodes certifying the claim"),
        Metric("tests", "min", 0.0, float(budget), "mean tests spent per hidden system"),
    )


def _task(name: str, env_kwargs: dict[str, Any], budget: int, description: str) -> Task:
    return Task(
        id=f"capability_eval/{name}",
        version=0,
        family="capability_eval",
        env_id=_ENV,
        run_trial="icml26.benchmarks.tasks.capability_eval:run_trial",
        metrics=_metrics(budget),
        primary_metric="utility",
        env_kwargs={"tau": 0.9, "delta": _DELTA, "test_budget": budget, **env_kwargs},
        budget=Budget(extra={"tests_per_system": budget}),
        seeds=tuple(range(10)),
        eval_episodes=100,
        description=description,
        tolerance=0.25,
        extra={"success_metric": "validity"},
    )


TASKS = [
    _task(
        "bumps",
        {"regime": "stochastic"},
        25_000,
        "Certify success >= 0.9 on 8 overlapping task members (narrow and broad bumps) of a 32-environment "
        "family; chi^2-radius 5.12 at the best design, 12.6 at the uniform one.",
    ),
    _task(
        "every-scenario",
        {"regime": "stochastic", "family": {"kind": "points", "K": 8}},
        35_000,
        "Certify success >= 0.9 on every one of 8 scenarios (point masses: chi^2-radius K - 1 = 7).",
    ),
    _task(
        "no-overlap",
        {"regime": "stochastic", "testable": [0.0, 0.75]},
        25_000,
        "The bumps family with environments above theta = 0.75 untestable: members there lack overlap.",
    ),
    _task(
        "boundary",
        {"regime": "stochastic", "profile": "boundary"},
        25_000,
        "The bumps family on hidden systems whose worst member sits within 0.02 of tau (validity stress test).",
    ),
    _task(
        "circuits-adaptive",
        {"regime": "worst_case", "n_bits": 8, "circuit_class": "general", "adversary": "adaptive"},
        256,
        "Certify that a hidden circuit (<= 40 gates, 8 inputs) agrees with its spec on every input; adaptive adversary.",
    ),
    _task(
        "circuits-random",
        {"regime": "worst_case", "n_bits": 8, "circuit_class": "general", "adversary": "random"},
        256,
        "As circuits-adaptive, with a backdoor on one uniform input drawn at reset with probability 1/2.",
    ),
    _task(
        "circuits-affine",
        {"regime": "worst_case", "n_bits": 8, "circuit_class": "affine", "adversary": "adaptive"},
        256,
        "Control: affine (XOR) circuits, adaptive adversary; n + 1 spanning queries identify the circuit.",
    ),
    _task(
        "circuits-fraction",
        {"regime": "worst_case", "n_bits": 8, "circuit_class": "general", "claim": "fraction"},
        2_500,
        "Control: the average claim 'agrees with the spec on >= 90% of inputs', adaptive adversary.",
    ),
]

_STOCHASTIC = (
    "certify-chi2",
    "certify-iw",
    "certify-uniform",
    "certify-per-env",
    "certify-per-env-hoeffding",
    "certify-pooled",
)
_CIRCUITS = ("circuit-random", "circuit-exhaustive", "circuit-span", "certify-chi2")
SUITES = {
    "smoke": [
        SuiteEntry(
            "capability_eval/bumps", {"certify-chi2": {}, "certify-pooled": {}}, seeds=(0, 1)
        ),
        SuiteEntry("capability_eval/circuits-adaptive", {"circuit-random": {}}, seeds=(0, 1)),
    ],
    "full": [
        SuiteEntry(
            t.id,
            {a: {} for a in (_STOCHASTIC if t.env_kwargs["regime"] == "stochastic" else _CIRCUITS)},
        )
        for t in TASKS
    ],
}


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Evaluate ``task.eval_episodes`` hidden systems with the agent as the evaluator."""
    env = gym.make(task.env_id, **task.env_kwargs)
    bind_agent(agent, env)
    rows: dict[str, list[float]] = {
        k: [] for k in ("valid", "certified", "claim_true", "false", "tests", "return")
    }
    for i in range(task.eval_episodes):
        ep = rollout(agent, env, derive_seed(seed, "eval", i))
        info = ep.info
        rows["valid"].append(float(info["valid"]))
        rows["certified"].append(float(info["certified"]))
        rows["claim_true"].append(float(info["claim_true"]))
        rows["false"].append(float(info["false_certification"]))
        rows["tests"].append(float(info["tests"]))
        rows["return"].append(ep.total_reward)
    env.close()
    true = np.asarray(rows["claim_true"], dtype=bool)
    cert = np.asarray(rows["certified"], dtype=bool)
    metrics = {
        "utility": float(np.mean(rows["return"])),
        "validity": float(np.mean(rows["valid"])),
        "false_certification": float(np.mean(rows["false"])),
        "power": float(cert[true].mean()) if true.any() else 0.0,
        "certified": float(cert.mean()),
        "tests": float(np.mean(rows["tests"])),
    }
    extra = {
        "successes": [int(v) for v in rows["valid"]],
        "certified": [int(v) for v in rows["certified"]],
        "claim_true": [int(v) for v in rows["claim_true"]],
        "tests": rows["tests"],
        "n_claim_true": int(true.sum()),
    }
    return TrialOutcome(metrics=metrics, scores=rows["return"], extra=extra)
