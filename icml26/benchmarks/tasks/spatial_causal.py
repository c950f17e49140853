"""Tasks and suite entries of the spatial_causal family (``icml26/SpaCEInterference-v0``).

A trial fits the agent to ``eval_episodes`` independent simulated data sets (seeds
``derive_seed(seed, "eval", i)``) and averages the errors of its direct and spillover estimates,
each divided by sd(Y) (SpaCE). Agents that read the hidden confounder
(``uses_hidden_confounder``) get the confounder in ``info`` and their trials are marked
``reference_only``; no suite runs them.

Task versions: v0 ranks by ``error`` = (DE error + SE error) / 2. v1 (issue 21) ranks by the
spillover error and scores every episode against the *null estimator* as well (SE = 0, DE from
OLS of Y on A, X, AX: the ``sc-ols`` agent), reporting the paired differences
``spillover_error_vs_null`` / ``direct_error_vs_null`` (agent minus null on the same data set;
negative = better than answering "no spillover"), and scores the exposure-response curve at
``ERF_POINTS`` = 5 shares of treated neighbours (``erf_points=5``; the action must include it).
v1 episodes also record R^2 of the hidden
confounder on the agent's substitute confounder (if it exposes ``latent``) and on smooth proxies
(:func:`icml26.agents.spatial_causal.diagnostics.proxy_r2`). Every episode records the CPU
seconds of the agent's ``act`` (its fit), ``act_cpu_s``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent, learn_if_learner
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

ENV_ID = "icml26/SpaCEInterference-v0"

METRICS = (
    Metric(
        "error",
        "min",
        0.0,
        math.inf,
        "mean of the direct and spillover errors, each |est - truth| / sd(Y)",
    ),
    Metric("direct_error", "min", 0.0, math.inf, "|DE^ - DE| / sd(Y)"),
    Metric("spillover_error", "min", 0.0, math.inf, "|SE^ - SE| / sd(Y)"),
)
METRICS_V1 = (
    Metric("spillover_error", "min", 0.0, math.inf, "|SE^ - SE| / sd(Y) (headline)"),
    Metric("direct_error", "min", 0.0, math.inf, "|DE^ - DE| / sd(Y)"),
    Metric(
        "spillover_error_vs_null",
        "min",
        -math.inf,
        math.inf,
        "spillover error minus the null estimator's (SE = 0) on the same data sets",
    ),
    Metric(
        "direct_error_vs_null",
        "min",
        -math.inf,
        math.inf,
        "direct error minus the null estimator's (OLS on A, X, AX) on the same data sets",
    ),
    Metric(
        "erf_error",
        "min",
        0.0,
        math.inf,
        "mean over the ERF_POINTS neighbour shares 0, 1/4, .., 1 of |ERF^(q) - ERF(q)| / sd(Y)",
    ),
    Metric(
        "error", "min", 0.0, math.inf, "mean of the direct and spillover errors (the v0 headline)"
    ),
)
ERF_POINTS = 5  # v1 scores the exposure-response curve at 5 shares of treated neighbours
NULL_AGENT = "sc-ols"  # the null estimator: SE = 0, DE from OLS of Y on A, X, AX


def _task(
    name: str, description: str, eval_episodes: int = 2, version: int = 1, **env_kwargs: Any
) -> Task:
    return Task(
        id=f"spatial_causal/{name}",
        version=version,
        family="spatial_causal",
        env_id=ENV_ID,
        run_trial="icml26.benchmarks.tasks.spatial_causal:run_trial",
        metrics=METRICS if version == 0 else METRICS_V1,
        primary_metric="error" if version == 0 else "spillover_error",
        env_kwargs=env_kwargs if version == 0 else {**env_kwargs, "erf_points": ERF_POINTS},
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


def _all_tasks(version: int) -> list[Task]:
    return [
        _task(
            "grid-r1",
            "40 x 40 queen grid, GP confounder (length-scale 8), interference radius 1 "
            "(the method card's simulator)",
            version=version,
        ),
        _task(
            "grid-r2",
            "40 x 40 queen grid, interference radius 2",
            version=version,
            variant="radius2",
        ),
        _task(
            "rgg-r1",
            "random geometric graph, 1600 units, mean degree 6",
            version=version,
            graph="rgg",
        ),
        _task(
            "holes-r1",
            "40 x 40 lattice with 4 holes removing 15% of cells",
            version=version,
            graph="holes",
        ),
        *[
            _task(f"stress-{v}", f"stress variant: {d}", version=version, variant=v)
            for v, d in _STRESS.items()
        ],
    ]


# v0 (headline = mean of DE and SE errors) stays registered; v1 (SE headline, null row) is the latest
TASKS: list[Task] = [*_all_tasks(0), *_all_tasks(1)]


def _null_agent() -> Any:
    from icml26.agents.spatial_causal.regression import OLS

    return OLS()


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Fit the agent to ``task.eval_episodes`` data sets; metrics are episode means (v1 also
    scores the null estimator on the same data sets and records R^2 diagnostics)."""
    reveal = bool(getattr(agent, "uses_hidden_confounder", False))
    v1 = task.version >= 1
    # the env always keeps U; only agents that declare uses_hidden_confounder get it in info
    env = gym.make(task.env_id, **{**task.env_kwargs, "reveal_confounder": True})
    bind_agent(agent, env)  # agents with bind() get the spaces before reset(), as in every task
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
        confounder = np.asarray(info["confounder"], dtype=np.float64)
        public = {k: v for k, v in info.items() if k != "confounder"}
        agent.reset(s)
        cpu0 = time.process_time()
        action = agent.act(obs, info if reveal else public)
        act_cpu_s = time.process_time() - cpu0
        if v1 and action.get("erf") is None:
            raise ValueError(
                f"{task.key} scores the exposure-response curve: the action needs 'erf' with "
                f"{len(info['erf_levels'])} values (shares {info['erf_levels']})"
            )
        _, reward, terminated, _, step_info = env.step(action)
        assert terminated, "SpaCEInterference episodes last one step"
        ep: dict[str, Any] = {
            "seed": s,
            "reward": float(reward),
            **{
                k: float(step_info[k])
                for k in (
                    "error",
                    "direct_error",
                    "spillover_error",
                    "direct_bias",
                    "spillover_bias",
                    "sd_y",
                )
            },
            "erf_error": float(step_info["erf_error"]) if "erf_error" in step_info else None,
            "truth_direct": float(step_info["truth"]["direct"]),
            "truth_spillover": float(step_info["truth"]["spillover"]),
            "estimate_direct": float(np.asarray(action["direct"]).reshape(-1)[0]),
            "estimate_spillover": float(np.asarray(action["spillover"]).reshape(-1)[0]),
            "act_cpu_s": act_cpu_s,
            **{k: float(v) for k, v in info.items() if k.startswith(("smoothness", "confounding"))},
            "diagnostics": {
                k: float(v) for k, v in (getattr(agent, "diagnostics", None) or {}).items()
            },
        }
        if v1:
            ep.update(_null_and_diagnostics(obs, public, agent, confounder, s, step_info))
            _add_vs_null(ep)
        episodes.append(ep)
    env.close()
    metrics = {m.name: float(np.mean([ep[m.name] for ep in episodes])) for m in task.metrics}
    extra: dict[str, Any] = {"episodes": episodes, "reference_only": reveal}
    if v1:
        extra["null_agent"] = NULL_AGENT
    if learn_stats:
        extra["learn"] = learn_stats
    return TrialOutcome(
        metrics=metrics, scores=[ep[task.primary_metric] for ep in episodes], extra=extra
    )


def _null_and_diagnostics(
    obs: Any,
    public: dict[str, Any],
    agent: Any,
    confounder: np.ndarray,
    seed: int,
    step_info: dict[str, Any],
) -> dict[str, Any]:
    """The null estimator's errors on the same data set, the paired differences, and R^2(U | .)."""
    from icml26.agents.spatial_causal.common import SpatialData
    from icml26.agents.spatial_causal.diagnostics import proxy_r2

    null = _null_agent()
    null.reset(seed)
    act = null.act(obs, public)
    truth, sd = step_info["truth"], float(step_info["sd_y"])
    out: dict[str, Any] = {
        "null_direct_error": abs(float(act["direct"][0]) - float(truth["direct"])) / sd,
        "null_spillover_error": abs(float(act["spillover"][0]) - float(truth["spillover"])) / sd,
    }
    latent = getattr(agent, "latent", None)
    lat = None
    if latent is not None and np.asarray(latent).shape[0] == confounder.size:
        lat = np.asarray(latent, dtype=np.float64)
    out["r2"] = proxy_r2(SpatialData.from_observation(obs), confounder, lat, seed=seed % (2**31))
    return out


def _add_vs_null(ep: dict[str, Any]) -> None:
    ep["spillover_error_vs_null"] = ep["spillover_error"] - ep["null_spillover_error"]
    ep["direct_error_vs_null"] = ep["direct_error"] - ep["null_direct_error"]


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
    "sc-gm-error": {},
    "sc-ipw": {},
    "sc-aipw": {},
    "sc-ht": {},
}

SUITES: dict[str, list[SuiteEntry]] = {
    # sc-oracle (reference only) is deliberately absent from every suite.
    "smoke": [SuiteEntry("spatial_causal/grid-r1", dict(_RANKED_AGENTS), seeds=(0, 1))],
    # the reference patch deconfounder needs a lattice: every task but the random geometric graph
    "full": [
        SuiteEntry(
            t.id,
            {
                **_RANKED_AGENTS,
                **({} if t.env_kwargs.get("graph") == "rgg" else {"spatial-deconfounder-ref": {}}),
            },
        )
        for t in _all_tasks(1)
    ],
}
