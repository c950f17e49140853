"""Tasks of the stochastic min-max / VI family (arXiv 2602.05531).

A trial plays ``task.eval_episodes`` episodes of ``icml26/StochasticVI-v0`` (the problem instance
fixed by the task, the oracle's noise seeded by ``derive_seed(seed, "eval", i)``): the agent is
the algorithm, the budget is oracle calls. Per episode the env's exact residual of the agent's
last reported iterate is read off; a diverged episode scores the divergence radius.

Versions: v0 plays ``icml26/StochasticVI-v0``; v1 (issue 40) the paired oracle
``icml26/StochasticVI-v1`` (same problems, noise and budgets; unpaired queries draw exactly as
v0), so that variance-reduced agents (``vi-halpern-vr``) can run. The oracle budget is read from
``task.budget.extra["oracle_calls"]`` (declared a learning extra: budget ladders scale it).

Metrics: ``log10_residual`` (primary: mean over episodes of log10 of the final residual, 6 for a
diverged episode), ``residual`` (median final residual), ``diverged`` (share of episodes whose
iterate left the divergence radius), ``oracle_calls`` (mean calls used).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent, rollout
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

__all__ = ["TASKS", "SUITES", "run_trial"]

_ENVS = {0: "icml26/StochasticVI-v0", 1: "icml26/StochasticVI-v1"}
_RADIUS = 1e6
_METRICS = (
    Metric(
        "log10_residual",
        "min",
        -16.0,
        math.log10(_RADIUS) + 1,
        "mean log10 final residual (6 if diverged)",
    ),
    Metric("residual", "min", 0.0, float("inf"), "median final residual dist(0, F(z) + N_C(z))"),
    Metric(
        "diverged", "min", 0.0, 1.0, "share of episodes whose iterate left the divergence radius"
    ),
    Metric("oracle_calls", "min", 0.0, float("inf"), "mean oracle calls used"),
)


def _task(
    name: str,
    problem: str,
    problem_kwargs: dict[str, Any],
    noise: str,
    sigma1: float,
    calls: int,
    description: str,
    sigma0: float = 0.1,
    version: int = 0,
) -> Task:
    return Task(
        id=f"minmax_vi/{name}",
        version=version,
        family="minmax_vi",
        env_id=_ENVS[version],
        run_trial="icml26.benchmarks.tasks.minmax_vi:run_trial",
        metrics=_METRICS,
        primary_metric="log10_residual",
        env_kwargs={
            "problem": problem,
            "problem_kwargs": problem_kwargs,
            "noise": noise,
            "sigma0": sigma0,
            "sigma1": sigma1,
            "oracle_budget": calls,
            "divergence_radius": _RADIUS,
        },
        budget=Budget(extra={"oracle_calls": calls}, learning_extra=("oracle_calls",)),
        seeds=tuple(range(10)),
        eval_episodes=3,
        description=description,
        tolerance=0.25,
    )


def _all_tasks(version: int) -> list[Task]:
    return [_with_version(t, version) for t in _TASKS_V0]


def _with_version(task: Task, version: int) -> Task:
    if version == 0:
        return task
    return dataclasses.replace(
        task,
        version=version,
        env_id=_ENVS[version],
        description=task.description + " Paired oracle (StochasticVI-v1).",
    )


_TASKS_V0 = [
    _task(
        "bilinear-growing",
        "bilinear",
        {"n": 10, "spectrum": "well", "domain": "free", "seed": 0},
        "operator",
        1.0,
        100_000,
        "Bilinear game on R^20, random coupling matrix (variance grows like |z - z*|^2), 1e5 calls.",
    ),
    _task(
        "bilinear-box",
        "bilinear",
        {"n": 10, "spectrum": "well", "domain": "box", "seed": 0},
        "operator",
        1.0,
        100_000,
        "Bilinear game on the box [-1, 1]^20 (solution 0.9 near the boundary), random coupling.",
    ),
    _task(
        "bilinear-bounded",
        "bilinear",
        {"n": 10, "spectrum": "well", "domain": "free", "seed": 0},
        "additive",
        0.0,
        100_000,
        "Control: the same bilinear game with bounded-variance additive noise (sigma0 = 0.1).",
    ),
    _task(
        "lagrangian-qp",
        "lagrangian_qp",
        {"n": 10, "m": 6, "active": 3, "seed": 0},
        "operator",
        1.0,
        100_000,
        "Lagrangian of a QP with 6 inequality constraints: dual on the unbounded orthant, random A.",
    ),
    # each oracle call evaluates both networks on 64 samples (~0.3 ms): a smaller budget
    _task(
        "network-game",
        "network_game",
        {"samples": 64, "seed": 0},
        "additive",
        0.5,
        20_000,
        "Nonconvex-nonconcave game of two small tanh networks (25 parameters) on a box, noise growing with |z|.",
    ),
    _task(
        "weak-minty",
        "weak_minty_quadratic",
        {"copies": 5, "rho": -0.1, "lipschitz": 1.0, "seed": 0},
        "operator",
        1.0,
        100_000,
        "Nonmonotone quadratic game (weak Minty, rho = -0.1 L = 1) in R^10, random operator.",
    ),
]

TASKS = _all_tasks(0) + _all_tasks(1)

_SMOKE_AGENTS: dict[str, dict[str, Any]] = {"vi-fbf": {}, "vi-seg": {}, "vi-seg-batched": {}}
SUITES = {
    "smoke": [SuiteEntry("minmax_vi/bilinear-growing", _SMOKE_AGENTS, seeds=(0, 1))],
    "full": [
        SuiteEntry(
            t.id,
            {
                a: {}
                for a in (
                    "vi-fbf",
                    "vi-km-fbf",
                    "vi-halpern-fbf",
                    "vi-seg",
                    "vi-seg-batched",
                    "vi-ogda",
                    "vi-seg-plus",
                    "vi-sgda",
                    "vi-km-mlmc",
                    "vi-km-mlmc-wide",
                    "vi-halpern-vr",
                )
            },
        )
        for t in _all_tasks(1)
    ],
}


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Play ``task.eval_episodes`` oracle episodes with the agent as the algorithm (see the module doc)."""
    calls = int(task.budget.extra.get("oracle_calls", task.env_kwargs["oracle_budget"]))
    env = gym.make(task.env_id, **{**task.env_kwargs, "oracle_budget": calls})
    bind_agent(agent, env)
    logs, finals, diverged, used = [], [], [], []
    for i in range(task.eval_episodes):
        info = rollout(agent, env, derive_seed(seed, "eval", i)).info
        div = bool(info.get("diverged", False))
        res = float(info["residual"])
        finals.append(_RADIUS if div else res)
        logs.append(math.log10(_RADIUS) if div else math.log10(max(res, 1e-16)))
        diverged.append(float(div))
        used.append(float(info["oracle_calls"]))
    env.close()
    metrics = {
        "log10_residual": float(np.mean(logs)),
        "residual": float(np.median(finals)),
        "diverged": float(np.mean(diverged)),
        "oracle_calls": float(np.mean(used)),
    }
    return TrialOutcome(metrics=metrics, scores=logs, extra={"final_residuals": finals})
