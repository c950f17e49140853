"""Tasks of the constrained_opt family (Hom-PGD+, ICML 2026).

A trial plays ``task.eval_episodes`` episodes of ``icml26/ConstrainedOpt-v0``, instance ``i``
drawn by ``derive_seed(seed, "eval", i)``: the agent is the optimizer, proposing iterates until
it stops (or ``max_iterates``). Per episode the env's exact score of the final iterate is read.

Metrics: ``penalized_gap`` (primary: mean over episodes of ``max(rel_gap, 0) + 100 violation``,
the env's final reward negated), ``rel_gap`` (median relative gap to the best known, feasible or
not), ``feasible_rate`` (share of final points with max violation <= 1e-5), ``violation``
(mean max violation), ``wall_time_s`` (mean seconds per instance, training included),
``oracle_calls`` (mean calls to the instance's oracles). Hom-PGD+ also records its INN training
time and held-out eps_inn in ``extra``.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

__all__ = ["TASKS", "SUITES", "run_trial"]

_ENV = "icml26/ConstrainedOpt-v0"
_METRICS = (
    Metric("penalized_gap", "min", 0.0, float("inf"), "mean max(rel_gap, 0) + 100 violation"),
    Metric("rel_gap", "min", -float("inf"), float("inf"), "median relative gap to the best known"),
    Metric("feasible_rate", "max", 0.0, 1.0, "share of final points with violation <= 1e-5"),
    Metric("violation", "min", 0.0, float("inf"), "mean max constraint violation"),
    Metric("wall_time_s", "min", 0.0, float("inf"), "mean seconds per instance"),
    Metric("oracle_calls", "min", 0.0, float("inf"), "mean oracle calls per instance"),
)


def _task(name: str, problem: str, kwargs: dict[str, Any], description: str) -> Task:
    return Task(
        id=f"constrained_opt/{name}",
        version=0,
        family="constrained_opt",
        env_id=_ENV,
        run_trial="icml26.benchmarks.tasks.constrained_opt:run_trial",
        metrics=_METRICS,
        primary_metric="penalized_gap",
        env_kwargs={"problem": problem, "problem_kwargs": kwargs, "max_iterates": 1000},
        budget=Budget(extra={"iterates": 1000}),
        seeds=tuple(range(10)),
        eval_episodes=2,
        description=description,
        tolerance=0.25,
    )


TASKS = [
    _task(
        "qcqp-10x10",
        "qcqp",
        {"n": 10, "m": 10},
        "Non-convex QCQP, n = 10, m = 10 indefinite quadratic constraints, box [-5, 5]^10.",
    ),
    _task("qcqp-10x100", "qcqp", {"n": 10, "m": 100}, "Non-convex QCQP, n = 10, m = 100."),
    _task("qcqp-30x30", "qcqp", {"n": 30, "m": 30}, "Non-convex QCQP, n = 30, m = 30."),
    _task(
        "star-10",
        "star",
        {"n": 10},
        "Star-shaped set with a known radial function in R^10, indefinite quadratic objective.",
    ),
    _task(
        "jcc-opf-case30",
        "jcc_opf",
        {"case": "case30"},
        "Joint chance-constrained DC-OPF on IEEE case30: 18 of 20 demand scenarios must hold.",
    ),
    _task(
        "attack-digits-l2",
        "attack",
        {"p": 2.0, "eps": 0.06},
        "Non-uniform l2 attack (blur x centre-weighted norm) on a digits MLP: minimize the logit margin.",
    ),
]

_SMOKE_AGENTS: dict[str, dict[str, Any]] = {"hom-pgd-gauge": {}, "co-pgd-exact": {}, "co-slsqp": {}}
SUITES = {
    "smoke": [SuiteEntry("constrained_opt/qcqp-10x10", _SMOKE_AGENTS, seeds=(0, 1))],
    "full": [
        SuiteEntry(
            t.id,
            {
                a: {}
                for a in (
                    "hom-pgd-plus",
                    "hom-pgd-gauge",
                    "co-pgd-exact",
                    "co-penalty",
                    "co-alm",
                    "co-slsqp",
                )
            },
        )
        for t in TASKS
    ],
}


def _episode(agent: Any, env: gym.Env[Any, Any], seed: int) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    obs, info = env.reset(seed=seed)
    agent.reset(seed)
    while True:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        if terminated or truncated:
            return info, time.perf_counter() - t0


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Solve ``task.eval_episodes`` instances with the agent as the optimizer (see the module doc)."""
    env = gym.make(task.env_id, **task.env_kwargs)
    bind_agent(agent, env)
    pen, gaps, feas, viol, times, calls, extra = [], [], [], [], [], [], []
    for i in range(task.eval_episodes):
        info, dt = _episode(agent, env, derive_seed(seed, "eval", i))
        gap, v = float(info["rel_gap"]), float(info["violation"])
        pen.append(max(gap, 0.0) + 100.0 * v)
        gaps.append(gap)
        feas.append(float(info["feasible"]))
        viol.append(v)
        times.append(dt)
        calls.append(float(info["oracle_calls"]))
        agent_info = getattr(agent, "info", None)
        if agent_info:
            extra.append({k: v for k, v in agent_info.items() if k != "inn"})
    env.close()
    metrics = {
        "penalized_gap": float(np.mean(pen)),
        "rel_gap": float(np.median(gaps)),
        "feasible_rate": float(np.mean(feas)),
        "violation": float(np.mean(viol)),
        "wall_time_s": float(np.mean(times)),
        "oracle_calls": float(np.mean(calls)),
    }
    return TrialOutcome(metrics=metrics, scores=pen, extra={"agent_info": extra, "rel_gaps": gaps})
