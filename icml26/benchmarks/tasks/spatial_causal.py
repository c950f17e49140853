"""Tasks and suite entries of the spatial_causal family (``icml26/SpaCEInterference-v0``).

A trial fits the agent to ``eval_episodes`` independent simulated data sets (seeds
``derive_seed(seed, "eval", i)``) and averages the errors of its direct and spillover estimates,
each divided by sd(Y) (SpaCE). Agents that read the hidden confounder
(``uses_hidden_confounder``) get ``reveal_confounder=True`` and their trials are marked
``reference_only``; no suite runs them.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import learn_if_learner
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

ENV_ID = "icml26/SpaCEInterference-v0"

METRICS = (
    Metric("error", "min", 0.0, math.inf, "mean of the direct and spillover errors, each |est - truth| / sd(Y)"),
    Metric("direct_error", "min", 0.0, math.inf, "|DE^ - DE| / sd(Y)"),
    Metric("spillover_error", "min", 0.0, math.inf, "|SE^ - SE| / sd(Y)"),
)


def _task(name: str, description: str, eval_episodes: int = 2, **env_kwargs: Any) -> Task:
    return Task(
        id=f"spatial_causal/{name}",
        version=0,
        family="spatial_causal",
        env_id=ENV_ID,
        run_trial="icml26.benchmarks.tasks.spatial_causal:run_trial",
        metrics=METRICS,
        primary_metric="error",
        env_kwargs=env_kwargs,
        budget=Budget(episodes=eval_episodes),
        seeds=tuple(range(10)),
        eval_episodes=eval_episodes,
        description=description,
        tolerance=0.15,
    )


_STRESS = {
    "nonlocal": "the outcome responds to U of the surrounding units (radius 2), not its own",
    "confmod": "confounder-modulated spillover: + alpha U s(e) with sd 0.5 sd(Y)",
    "asym": "the DGP exposure uses only neighbours with x_j >= x_i (agents assume symmetry)",
    "sparse10": "10% of units treated",
    "sparse30": "30% of units treated",
    "sparse70": "70% of units treated",
    "singlecause10": "clustered single-cause confounder (10% of units are cluster centres)",
    "singlecause30": "clustered single-cause confounder (30% of units are cluster centres)",
    "misspec_radius": "data use radius 2, agents are told radius 1",
    "nonlinear": "nonlinear confounding and exposure response",
}

TASKS: list[Task] = [
    _task("grid-r1", "40 x 40 queen grid, GP confounder (length-scale 8), interference radius 1 "
          "(the method card's simulator)"),
    _task("grid-r2", "40 x 40 queen grid, interference radius 2", variant="radius2"),
    _task("rgg-r1", "random geometric graph, 1600 units, mean degree 6", graph="rgg"),
    _task("holes-r1", "40 x 40 lattice with 4 holes removing 15% of cells", graph="holes"),
    *[_task(f"stress-{v}", f"stress variant: {d}", variant=v) for v, d in _STRESS.items()],
]


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Fit the agent to ``task.eval_episodes`` data sets; metrics are episode means."""
    reveal = bool(getattr(agent, "uses_hidden_confounder", False))
    env = gym.make(task.env_id, **{**task.env_kwargs, "reveal_confounder": reveal})
    learn_stats: dict[str, Any] = {}
    if callable(getattr(agent, "learn", None)):  # user agents may learn on separate data sets
        train_env = gym.make(task.env_id, **task.env_kwargs)
        train_env.reset(seed=derive_seed(seed, "train"))
        learn_stats = learn_if_learner(agent, train_env, task)
        train_env.close()
    episodes = []
    for i in range(task.eval_episodes):
        s = derive_seed(seed, "eval", i)
        obs, info = env.reset(seed=s)
        agent.reset(s)
        action = agent.act(obs, info)
        _, reward, terminated, _, step_info = env.step(action)
        assert terminated, "SpaCEInterference episodes last one step"
        episodes.append({
            "seed": s,
            "reward": float(reward),
            **{k: float(step_info[k]) for k in ("error", "direct_error", "spillover_error",
                                                "direct_bias", "spillover_bias", "sd_y")},
            "erf_error": float(step_info["erf_error"]) if "erf_error" in step_info else None,
            "truth_direct": float(step_info["truth"]["direct"]),
            "truth_spillover": float(step_info["truth"]["spillover"]),
            "estimate_direct": float(np.asarray(action["direct"]).reshape(-1)[0]),
            "estimate_spillover": float(np.asarray(action["spillover"]).reshape(-1)[0]),
            **{k: float(v) for k, v in info.items() if k.startswith(("smoothness", "confounding"))},
            "diagnostics": {k: float(v) for k, v in (getattr(agent, "diagnostics", None) or {}).items()},
        })
    env.close()
    metrics = {m.name: float(np.mean([ep[m.name] for ep in episodes])) for m in task.metrics}
    extra: dict[str, Any] = {"episodes": episodes, "reference_only": reveal}
    if learn_stats:
        extra["learn"] = learn_stats
    return TrialOutcome(metrics=metrics, scores=[ep["error"] for ep in episodes], extra=extra)


_RANKED_AGENTS: dict[str, dict[str, Any]] = {
    "spatial-deconfounder": {},
    "spatial-deconfounder-splus": {},
    "sc-diff-means": {},
    "sc-ols": {},
    "sc-ols-exposure": {},
    "sc-spatial": {},
    "sc-spatialplus": {},
    "sc-s2sls": {},
    "sc-durbin": {},
    "sc-gcn": {},
}

SUITES: dict[str, list[SuiteEntry]] = {
    # sc-oracle (reference only) is deliberately absent from every suite.
    "smoke": [SuiteEntry("spatial_causal/grid-r1", dict(_RANKED_AGENTS), seeds=(0, 1))],
    "full": [SuiteEntry(t.id, dict(_RANKED_AGENTS)) for t in TASKS],
}
