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

import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

__all__ = ["TASKS", "SUITES", "run_trial", "run_family_trial", "FAMILY_TARGETS"]

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


FAMILY_TARGETS = (0.5, 0.25, 0.1, 0.01)  # relative gaps the family tasks time every method to
_FAMILY_METRICS = (
    Metric("penalized_gap", "min", 0.0, float("inf"), "mean max(rel_gap, 0) + 100 violation"),
    Metric("rel_gap", "min", -float("inf"), float("inf"), "median relative gap to the best known"),
    Metric("feasible_rate", "max", 0.0, 1.0, "share of final points with violation <= 1e-5"),
    Metric("reach_rate", "max", 0.0, 1.0, "share of instances brought to a gap <= 0.1"),
    Metric("online_cpu_s", "min", 0.0, float("inf"), "mean CPU seconds per instance, solve only"),
    Metric("learn_cpu_s", "min", 0.0, float("inf"), "CPU seconds of learn() (0: no learning)"),
)


def _family_task(
    name: str, kwargs: dict[str, Any], updates: int, instances: int, description: str
) -> Task:
    return Task(
        id=f"constrained_opt/{name}",
        version=0,
        family="constrained_opt",
        env_id=_ENV,
        run_trial="icml26.benchmarks.tasks.constrained_opt:run_family_trial",
        metrics=_FAMILY_METRICS,
        primary_metric="penalized_gap",
        env_kwargs={"problem": "qcqp_param", "problem_kwargs": kwargs, "max_iterates": 1000},
        budget=Budget(updates=updates),
        seeds=tuple(range(10)),
        eval_episodes=instances,
        description=description,
        tolerance=0.25,
        extra={
            "targets": list(FAMILY_TARGETS),
            "reference_shards": 10,
            "references": {
                "pgd_exact": {"iters": 60, "rule": "monotone", "skip_feasible": True},
                "slsqp": {"iters": 500, "timed": True},
                "hom_pgd_gauge": {"iters": 200, "rule": "release"},
            },
            "max_seconds": 600.0,
            "references_at_updates": updates,
        },
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

FAMILY_TASKS = [
    _family_task(
        "qcqp-param-40x1500",
        {"n": 40, "m": 1500, "radius": None},
        updates=2000,
        instances=100,
        description=(
            "Parametric non-convex QCQP, n = 40, m = 1,500 shared indefinite quadratic rows, box "
            "[-5, 5]^40; instances differ in their right-hand sides and objective. A learner "
            "trains once on the family (2,000 updates), then solves 100 held-out instances; "
            "exact-projection PGD, SLSQP and the exact gauge map are timed on the same "
            "instances, paired (a tenth per seed)."
        ),
    ),
]
TASKS += FAMILY_TASKS

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


# ============================================================================ family tasks
def _first_times(trace: Any, prob: Any, thresholds: Mapping[str, float]) -> dict[str, Any]:
    """First (CPU, wall) seconds at which a feasible iterate has ``f <= threshold``, per key
    (``None``: never)."""
    feas = [prob.violation(x) <= _FEAS_TOL for x in trace.xs]
    fs = [prob.f(x) for x in trace.xs]
    out: dict[str, Any] = {}
    for key, thr in thresholds.items():
        hit = next((k for k, (ok, f) in enumerate(zip(feas, fs)) if ok and f <= thr), None)
        out[key] = None if hit is None else [trace.cpu[hit], trace.times[hit]]
    return out


_FEAS_TOL = 1e-5


def _score(trace: Any, prob: Any, f_best: float, targets: list[float]) -> dict[str, Any]:
    from icml26.envs.constrained_opt.problems import rel_gap

    x = trace.x
    scale = max(abs(f_best), 1e-8)
    rec: dict[str, Any] = {
        "gap": rel_gap(prob.f(x), f_best),
        "violation": prob.violation(x),
        "iters": len(trace.xs),
        "cpu": trace.cpu[-1],
        "wall": trace.times[-1],
        "f": prob.f(x),
        "to_target": _first_times(trace, prob, {str(g): f_best + g * scale for g in targets}),
    }
    if trace.info.get("bp_calls"):
        rec["bp_rate"] = trace.info["bp_triggered"] / trace.info["bp_calls"]
    if trace.info.get("proj_calls"):
        pc = np.asarray(trace.info["proj_cpu"])
        rec["proj"] = {
            "calls": int(trace.info["proj_calls"]),
            "cpu_median": float(np.median(pc)),
            "cpu_total": float(pc.sum()),
            "wall_median": float(np.median(trace.info["proj_wall"])),
        }
    # the gap of the iterate after k iterations (does the iteration cap bind?)
    rec["gap_at"] = {
        str(k): rel_gap(prob.f(trace.xs[min(k, len(trace.xs)) - 1]), f_best) for k in _GAP_AT
    }
    return rec


_GAP_AT = (25, 50, 100, 200)


def _match_references(traces: dict[str, Any], prob: Any) -> dict[str, Any]:
    """Per reference with a feasible final point: (CPU, wall) seconds at which the reference
    itself and the agent first reach the reference's final objective (+1e-6 relative)."""
    out: dict[str, Any] = {}
    agent = traces["agent"]
    for name, tr in traces.items():
        if name == "agent" or prob.violation(tr.x) > _FEAS_TOL:
            continue
        f = prob.f(tr.x)
        thr = {"t": f + 1e-6 * max(abs(f), 1e-8)}
        out[name] = {
            "ref": _first_times(tr, prob, thr)["t"],
            "agent": _first_times(agent, prob, thr)["t"],
        }
    return out


def _act_iterates(agent: Any, prob: Any) -> Iterator[np.ndarray]:
    """An agent without ``solve``: its ``act`` iterates on the env's view of the instance."""
    from icml26.envs.constrained_opt.env import Oracle

    info = {"oracle": Oracle(prob), "x0": prob.x0.copy(), "n": prob.n}
    obs = np.zeros(3)
    for _ in range(100_000):
        a = np.asarray(agent.act(obs, info), float)
        yield a[:-1]
        if a[-1] > 0.5:
            return


class _RefRun:
    """A reference method's iterate generator with an ``info`` dict it fills (projection
    counts and times of exact-projection PGD)."""

    def __init__(self, method: str, kwargs: Mapping[str, Any], prob: Any) -> None:
        self.method, self.kwargs, self.prob = method, dict(kwargs), prob
        self.info: dict[str, Any] = {}

    def __call__(self) -> Any:
        from icml26.agents.constrained_opt.solvers import start

        kw = dict(self.kwargs)
        if self.method in ("pgd_exact", "hom_pgd_plus"):
            kw["info"] = self.info
        return start(self.method, self.prob, kw)


def _ref_maker(method: str, kwargs: Mapping[str, Any], prob: Any) -> _RefRun:
    return _RefRun(method, kwargs, prob)


def _agent_maker(agent: Any, solve: Any, prob: Any) -> Callable[[], Any]:
    """The agent's iterates: its ``solve`` when it has one, else its ``act`` loop."""
    if callable(solve):
        return lambda: solve(prob)
    return lambda: _act_iterates(agent, prob)


def run_family_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """One trial of a family task: ``agent.learn(family, budget)`` once (timed), then every test
    instance solved from its anchor. On the instances of this seed's shard
    (``i % reference_shards == seed % reference_shards``) the reference methods run too, back to
    back with the agent in one process, the order rotated per instance (paired timing). Every
    iterate is stamped with CPU and wall seconds; per instance and method the record holds the
    final gap, violation, iterations, times and the first time each target gap was reached
    (``extra["instances"]``), plus the load average when the instance started."""
    from icml26.agents.constrained_opt.solvers import Trace, drive
    from icml26.envs.constrained_opt.problems import Family, best_known

    ex = task.extra
    family = Family.make(task.env_kwargs["problem"], task.env_kwargs["problem_kwargs"])
    targets = [float(g) for g in ex.get("targets", FAMILY_TARGETS)]
    refs: dict[str, dict[str, Any]] = dict(ex.get("references", {}))
    shards = int(ex.get("reference_shards", 10))
    max_s = float(ex.get("max_seconds", 600.0))
    # the references have no learning budget: they run in the trials at the task's own budget
    # (rung 1 of a budget ladder), not again at every rung
    own = ex.get("references_at_updates")
    with_refs = own is None or task.budget.updates == own
    agent.reset(seed)
    learn: dict[str, Any] = {"cpu_s": 0.0, "wall_s": 0.0}
    if callable(getattr(agent, "learn", None)):
        t0, c0 = time.perf_counter(), time.process_time()
        agent.learn(family, task.budget)
        learn = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0}
        learn.update({k: v for k, v in getattr(agent, "training", {}).items() if k not in learn})
    solve = getattr(agent, "solve", None)
    records, pen, gaps, feas, reach, cpu = [], [], [], [], [], []
    for i in range(task.eval_episodes):
        prob = family.test_instance(i)
        _, f_best = best_known(prob)
        runs: list[tuple[str, Callable[[], Any]]] = [("agent", _agent_maker(agent, solve, prob))]
        if with_refs and i % shards == seed % shards:
            runs += [(m, _ref_maker(m, kw, prob)) for m, kw in refs.items()]
        k = i % len(runs)
        runs = runs[k:] + runs[:k]  # interleave: each method first, middle or last in turn
        rec: dict[str, Any] = {
            "i": i,
            "f_best": f_best,
            "load": os.getloadavg()[0],
            "order": [r[0] for r in runs],
            "methods": {},
        }
        traces = {}
        for name, make in runs:
            if name == "agent":
                agent.reset(seed)
            tr = drive(make, max_s, Trace())
            if name == "agent":
                tr.info.update(getattr(agent, "info", {}) or {})
            else:
                tr.info.update(getattr(make, "info", {}))
            traces[name] = tr
            rec["methods"][name] = _score(tr, prob, f_best, targets)
        if len(traces) > 1:
            rec["match"] = _match_references(traces, prob)
        a = rec["methods"]["agent"]
        pen.append(max(a["gap"], 0.0) + 100.0 * a["violation"])
        gaps.append(a["gap"])
        feas.append(float(a["violation"] <= _FEAS_TOL))
        reach.append(float(a["to_target"].get("0.1") is not None))
        cpu.append(a["cpu"])
        records.append(rec)
    metrics = {
        "penalized_gap": float(np.mean(pen)),
        "rel_gap": float(np.median(gaps)),
        "feasible_rate": float(np.mean(feas)),
        "reach_rate": float(np.mean(reach)),
        "online_cpu_s": float(np.mean(cpu)),
        "learn_cpu_s": float(learn["cpu_s"]),
    }
    metrics = {k: (v if math.isfinite(v) else 1e9) for k, v in metrics.items()}
    return TrialOutcome(
        metrics=metrics,
        scores=pen,
        extra={"learn": learn, "instances": records, "targets": targets, "shards": shards},
    )
