"""Claims on stored trials: what a results store certifies, and how many more trials would.

    icml26 certify --task tutorial/point-reach --agent point-pd --claim ">= 0.9 on every scenario"

A *scenario* is a task given with ``--task`` (repeat it for a family of tasks), split further by
per-episode labels when a family stores them (``TrialResult.extra["scenarios"]``). An episode
succeeds by the task's success metric (``task.extra["success_metric"]``, default
``success_rate``; per-episode flags from ``extra["successes"]`` when stored) or by a threshold
on the per-episode scores (``--success "score >= -30"``).

The unit of replication is the episode when the agent does not learn (its episodes are
independent draws of one success probability), else the seed (each seed's success rate is one
bounded draw); ``--unit`` overrides. The stored allocation (tests per scenario) is the design:
the chi^2 certificate of :mod:`icml26.certify` uses its radius (``1/p_s - 1`` for "every
scenario"); per-scenario Clopper-Pearson with a union bound is reported beside it (episodes
only). "More trials" extrapolates the current estimates: a projection, not a guarantee.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.certify.bounds import check_level, per_env_bounds, stratified_bounds
from icml26.certify.chi2 import chi2_divergence

__all__ = [
    "Claim",
    "parse_claim",
    "Scenario",
    "StoredCertificate",
    "certify_stored",
    "certified_claims",
    "agent_learns",
    "add_parser",
]

_CLAIM = re.compile(
    r"^\s*(?:success\s*)?(?:>=|≥|=>)\s*([0-9]*\.?[0-9]+)\s*"
    r"(?:on\s+(every\s+scenario|every\s+task|average))?\s*$",
    re.IGNORECASE,
)
_SUCCESS = re.compile(r"^\s*score\s*(>=|<=|>|<)\s*(-?[0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*$", re.I)


@dataclass(frozen=True)
class Claim:
    """``success >= tau`` on every scenario (``scope="every"``) or on their average."""

    tau: float
    scope: str
    text: str


def parse_claim(text: str) -> Claim:
    """Parse ``">= 0.9 on every scenario"``, ``">= 0.9 on average"`` or ``">= 0.9"`` (average)."""
    m = _CLAIM.match(text or "")
    if not m:
        raise ValueError(
            f"claim: expected e.g. '>= 0.9 on every scenario' or '>= 0.9 on average', got {text!r}"
        )
    tau = float(m.group(1))
    if not 0 < tau <= 1:
        raise ValueError(f"claim: the success level must lie in (0, 1], got {tau}")
    scope = "every" if m.group(2) and m.group(2).lower().startswith("every") else "average"
    return Claim(tau, scope, text.strip())


@dataclass
class Scenario:
    """One scenario's stored sample: ``tests`` units (episodes or seeds), summed ``passes``,
    the number of ``trials`` behind them and the units one more trial adds."""

    name: str
    tests: float = 0.0
    passes: float = 0.0
    trials: int = 0
    per_trial: float = 0.0


@dataclass
class StoredCertificate:
    """What the stored sample certifies: per method, the lower bounds (one per member), whether
    the claim is certified, and the extra trials a projection says would certify it."""

    claim: Claim
    delta: float
    unit: str
    unit_reason: str
    agent: str
    scenarios: list[Scenario]
    radius: float
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def certified(self) -> bool:
        return any(m["certified"] for m in self.methods.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim.text,
            "tau": self.claim.tau,
            "scope": self.claim.scope,
            "delta": self.delta,
            "unit": self.unit,
            "unit_reason": self.unit_reason,
            "agent": self.agent,
            "radius": self.radius,
            "scenarios": [vars(s) for s in self.scenarios],
            "methods": self.methods,
        }

    def lines(self) -> list[str]:
        c = self.claim
        scope = "on every scenario" if c.scope == "every" else "on average over the scenarios"
        out = [
            f"claim: success >= {c.tau:g} {scope} ({len(self.scenarios)} scenario"
            f"{'s' if len(self.scenarios) != 1 else ''}), delta = {self.delta:g}",
            f"agent: {self.agent}; unit of replication: {self.unit} ({self.unit_reason})",
            f"stored design: chi^2-radius of the claim's family relative to it = {self.radius:.4g}",
            "",
            f"{'scenario':40s} {'trials':>6s} {self.unit + 's':>9s} {'passes':>9s} {'rate':>6s}",
        ]
        for s in self.scenarios:
            rate = s.passes / s.tests if s.tests else float("nan")
            out.append(f"{s.name:40s} {s.trials:6d} {s.tests:9.0f} {s.passes:9.2f} {rate:6.3f}")
        out.append("")
        out.append("certificates at the stored sample:")
        for name, m in self.methods.items():
            verdict = "CERTIFIED" if m["certified"] else "not certified"
            out.append(
                f"  {name}: smallest lower bound {m['min_bound']:.4f} -> {verdict} ({m['about']})"
            )
            if not m["certified"]:
                more = m.get("more_trials")
                if more is None:
                    out.append(
                        "    no number of trials certifies it at the current estimates "
                        f"(a scenario's rate is at or below {c.tau:g})"
                    )
                else:
                    out.append(
                        f"    about {more} more trial{'s' if more != 1 else ''} per scenario would "
                        "certify it if the rates stay as estimated (a projection, not a guarantee)"
                    )
        return out


@functools.lru_cache(maxsize=256)
def agent_learns(name: str, entry_point: str | None = None) -> bool | None:
    """Whether a registered agent (same entry point, when given) has ``learn``; None if unknown.

    Only the suite's own registry is consulted: a submitted agent's code is never imported."""
    from icml26 import agents
    from icml26._entry_points import load_entry_point

    specs = agents.all_specs()
    if name not in specs or (entry_point and specs[name].entry_point != entry_point):
        return None
    try:
        cls = load_entry_point(specs[name].entry_point)
    except Exception:  # noqa: BLE001 - an agent needing a missing extra: unknown
        return None
    return callable(getattr(cls, "learn", None))


def _success_rule(text: str | None) -> tuple[str, float] | None:
    if not text:
        return None
    m = _SUCCESS.match(text)
    if not m:
        raise ValueError(f"success: expected e.g. 'score >= -30', got {text!r}")
    return m.group(1), float(m.group(2))


def _episode_successes(r: Any, rule: tuple[str, float] | None) -> list[float] | None:
    """Per-episode 0/1 successes of a trial, or None when only a rate is stored."""
    if rule is not None:
        op, x = rule
        ops = {">=": np.greater_equal, "<=": np.less_equal, ">": np.greater, "<": np.less}
        return [float(v) for v in ops[op](np.asarray(r.scores, dtype=np.float64), x)]
    succ = r.extra.get("successes") if isinstance(r.extra, dict) else None
    if succ is not None:
        return [float(v) for v in succ]
    return None


def _trial_rate(task: Any, r: Any, rule: tuple[str, float] | None) -> tuple[float, float]:
    """(successes, episodes) of one trial, from flags or from the success metric."""
    eps = _episode_successes(r, rule)
    if eps is not None:
        return float(sum(eps)), float(len(eps))
    metric = task.extra.get("success_metric", "success_rate")
    if metric not in r.metrics:
        raise ValueError(
            f"task {task.id!r} has no success metric {metric!r} in its results and stores no "
            "per-episode successes; give a rule on the per-episode scores, e.g. --success 'score >= 0'"
        )
    rate = float(r.metrics[metric])
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"{task.id}: success metric {metric!r} is {rate}, not a rate in [0, 1]")
    return rate * task.eval_episodes, float(task.eval_episodes)


def _scenarios(
    tasks: Sequence[Any], results: Sequence[Any], unit: str, rule: tuple[str, float] | None
) -> list[Scenario]:
    out: dict[str, Scenario] = {}
    for task in tasks:
        mine = [r for r in results if r.task_id == task.id and r.task_version == task.version]
        for r in mine:
            labels = r.extra.get("scenarios") if isinstance(r.extra, dict) else None
            eps = _episode_successes(r, rule)
            if labels is not None and eps is not None and len(labels) == len(eps):
                groups: dict[str, list[float]] = {}
                for lab, v in zip(labels, eps):
                    groups.setdefault(f"{task.key}/{lab}", []).append(v)
                parts = [(k, sum(v), float(len(v))) for k, v in groups.items()]
            else:
                k, n = _trial_rate(task, r, rule)
                parts = [(task.key, k, n)]
            for name, k, n in parts:
                s = out.setdefault(name, Scenario(name))
                s.trials += 1
                if unit == "episode":
                    s.tests += n
                    s.passes += k
                    s.per_trial = max(s.per_trial, n)
                else:
                    s.tests += 1.0
                    s.passes += k / n
                    s.per_trial = 1.0
    return [out[k] for k in sorted(out)]


def _more_trials_stratified(
    members: np.ndarray, scen: list[Scenario], tau: float, delta: float
) -> int | None:
    """Extra trials per scenario after which the stratified bound would reach tau if every
    scenario's rate stayed as estimated (same allocation, scaled)."""
    n = np.array([s.tests for s in scen])
    rate = np.array([s.passes / s.tests for s in scen])
    est = members @ rate
    if np.any(est <= tau):
        return None
    var = members**2 @ (1.0 / n)
    ell = math.log(members.shape[0] / delta)
    scale = float(np.max(var * ell / 2.0 / (est - tau) ** 2))  # n' = n * scale
    extra = [math.ceil(s.trials * max(scale - 1.0, 0.0)) for s in scen]
    return max(max(extra), 1)


def _more_trials_cp(scen: list[Scenario], tau: float, delta: float, k_prime: int) -> int | None:
    from icml26.certify.bounds import clopper_pearson_lower

    worst = 0
    for s in scen:
        rate = s.passes / s.tests
        if rate <= tau:
            return None
        trials = s.trials
        while True:  # grow the trials until the projected bound reaches tau
            n = trials * s.per_trial
            if clopper_pearson_lower(np.floor(rate * n), n, delta / k_prime) >= tau:
                break
            trials = math.ceil(trials * 1.25) + 1
            if trials > 10**7:
                return None
        lo, hi = s.trials, trials  # bisect the smallest such trial count
        while lo < hi:
            mid = (lo + hi) // 2
            n = mid * s.per_trial
            if clopper_pearson_lower(np.floor(rate * n), n, delta / k_prime) >= tau:
                hi = mid
            else:
                lo = mid + 1
        worst = max(worst, lo - s.trials)
    return max(worst, 1)


def certify_stored(
    tasks: Sequence[Any],
    results: Sequence[Any],
    claim: Claim,
    *,
    delta: float = 0.05,
    unit: str = "auto",
    success: str | None = None,
    agent_label: str = "",
    entry_point: str | None = None,
) -> StoredCertificate:
    """Certify ``claim`` from stored FINISHED trials of one agent configuration on ``tasks``.

    ``entry_point`` (a leaderboard entry's) makes the unit lookup match the registered agent
    of that name only when it has the same entry point."""
    delta = check_level(delta)
    rule = _success_rule(success)
    if not results:
        raise ValueError("no stored FINISHED trials of this agent on these tasks")
    reason = "given"
    if unit == "auto":
        learns = agent_learns(results[0].agent_name, entry_point)
        any_learn = any(isinstance(r.extra, dict) and r.extra.get("learn") for r in results)
        if learns is False and not any_learn:
            unit, reason = "episode", f"{results[0].agent_name} does not learn"
        else:
            unit = "seed"
            reason = (
                f"{results[0].agent_name} learns: episodes share a trained policy"
                if learns or any_learn
                else f"{results[0].agent_name} is not a registered agent: seeds are the safe unit"
            )
    if unit not in ("episode", "seed"):
        raise ValueError(f"unit: expected 'auto', 'episode' or 'seed', got {unit!r}")
    scen = _scenarios(tasks, results, unit, rule)
    if not scen:
        raise ValueError("no stored trials on the given tasks")
    k = len(scen)
    n = np.array([s.tests for s in scen])
    passes = np.array([s.passes for s in scen])
    design = n / n.sum()
    members = np.eye(k) if claim.scope == "every" else np.full((1, k), 1.0 / k)
    radius = float(chi2_divergence(members, design).max())
    out = StoredCertificate(
        claim, delta, unit, reason, agent_label or results[0].agent_name, scen, radius
    )
    b = stratified_bounds(members, n, passes, delta)
    out.methods["chi2 (stratified Hoeffding, union over the family)"] = {
        "bounds": b.tolist(),
        "min_bound": float(b.min()),
        "certified": bool(b.min() >= claim.tau),
        "about": f"{len(members)} member(s), chi^2-radius {radius:.3g}",
        "more_trials": None
        if b.min() >= claim.tau
        else _more_trials_stratified(members, scen, claim.tau, delta),
    }
    if unit == "episode":
        cp = per_env_bounds(members, n, np.round(passes), delta, "clopper-pearson")
        out.methods["per-scenario Clopper-Pearson (union over the scenarios)"] = {
            "bounds": cp.tolist(),
            "min_bound": float(cp.min()),
            "certified": bool(cp.min() >= claim.tau),
            "about": f"delta / {k} per scenario",
            "more_trials": None
            if cp.min() >= claim.tau
            else _more_trials_cp(scen, claim.tau, delta, k),
        }
    return out


def certified_claims(
    task: Any,
    trials: Sequence[Any],
    *,
    entry_point: str | None = None,
    delta: float = 0.05,
    rerun: Sequence[Mapping[str, float]] | None = None,
) -> list[str]:
    """Short statements of what an entry's trials certify on its task ("success >= L"), for
    leaderboard pages; empty when the task has no success notion. Episodes are the unit only
    for the suite's own non-learning agents (same name and ``entry_point``); otherwise seeds.

    ``rerun`` (a VERIFIED entry's re-run metrics, one mapping per held-out trial) replaces the
    submitted trials: a page then certifies what the verifier measured, not what was claimed,
    with the held-out trial as the unit (the re-run keeps no per-episode scores)."""
    if task is None:
        return []
    if rerun:
        from icml26.protocol import TrialResult

        name = trials[0].agent_name if trials else "entry"
        trials = [
            TrialResult(task.id, task.version, name, "0", i, "FINISHED", metrics=dict(m))
            for i, m in enumerate(rerun)
        ]
        entry_point = "<re-run>"  # never matches a registered agent: seeds are the unit
    if not trials:
        return []
    metric = task.extra.get("success_metric", "success_rate")
    if metric not in trials[0].metrics and not trials[0].extra.get("successes"):
        return []
    try:
        cert = certify_stored(
            [task], list(trials), Claim(1.0, "every", ""), delta=delta, entry_point=entry_point
        )
    except ValueError:
        return []
    s = cert.scenarios[0]
    out = []
    for name, m in cert.methods.items():
        if m["min_bound"] <= 0:
            continue  # "success >= 0" certifies nothing
        short = "Clopper-Pearson" if name.startswith("per-scenario") else "Hoeffding"
        out.append(
            f"{metric} >= {m['min_bound']:.3f} with probability >= {1 - delta:g} "
            f"({short}, {s.tests:.0f} {'held-out re-run trials' if rerun else cert.unit + 's'})"
        )
    return out


# ----------------------------------------------------------------------------- the command
def cmd_certify(args: argparse.Namespace) -> int:
    from icml26 import agents, benchmarks
    from icml26._cli_util import (
        UsageError,
        check_task,
        open_results_store,
        parse_kwargs,
        unknown_name,
    )
    from icml26.protocol import config_hash

    try:
        claim = parse_claim(args.claim)
    except ValueError as e:
        raise UsageError(str(e)) from None
    task_ids = [t for item in args.task for t in item.split(",") if t]
    for t in task_ids:
        check_task(t)
    tasks = [benchmarks.get_task(t) for t in task_ids]
    # a reader: a missing or foreign store is one line (exit 2), and nothing is created
    with open_results_store(args.store, create=False) as st:
        results = [
            r
            for t in tasks
            for r in st.results(task_id=t.id, agent_name=args.agent, status="FINISHED")
            if r.task_version == t.version and r.task_hash == t.definition_hash
        ]
        where = st.location
        if not results and args.agent not in agents.names():
            stored = {r.agent_name for t in tasks for r in st.results(task_id=t.id)}
            if args.agent not in stored:
                raise unknown_name("agent", args.agent, {*agents.names(), *stored}, "icml26 agents")
    if args.agent_kwargs is not None:
        want = config_hash(parse_kwargs(args.agent_kwargs))
        results = [r for r in results if config_hash(r.agent_kwargs) == want]
    configs = sorted({json.dumps(r.agent_kwargs, sort_keys=True) for r in results})
    if len(configs) > 1:
        raise UsageError(
            f"{args.agent} has {len(configs)} stored configurations on these tasks; pick one with "
            f"--agent-kwargs: {', '.join(configs)}"
        )
    if not results:
        raise UsageError(
            f"no FINISHED trials of {args.agent} on {', '.join(t.key for t in tasks)} (current "
            f"definitions) in {where}; run `icml26 run` first"
        )
    cert = certify_stored(
        tasks,
        results,
        claim,
        delta=args.delta,
        unit=args.unit,
        success=args.success,
        agent_label=f"{args.agent} {configs[0]}",
    )
    if args.json:
        print(json.dumps(cert.to_dict(), indent=1))
    else:
        print("\n".join(cert.lines()))
    return 0


def add_parser(sub: Any) -> None:
    """Add ``icml26 certify`` to the ``icml26`` command's sub-parsers."""
    p = sub.add_parser(
        "certify",
        help="what stored trials certify about a claim, and how many more trials would",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("--task", action="append", required=True, help="task id (repeat for a family)")
    p.add_argument("--agent", required=True, help="agent name as stored")
    p.add_argument("--agent-kwargs", help="JSON object selecting one stored configuration")
    p.add_argument(
        "--claim", required=True, help="e.g. '>= 0.9 on every scenario' or '>= 0.9 on average'"
    )
    p.add_argument("--delta", type=float, default=0.05, help="error probability (default 0.05)")
    p.add_argument(
        "--unit",
        default="auto",
        choices=("auto", "episode", "seed"),
        help="unit of replication (default: episodes for non-learning agents, else seeds)",
    )
    p.add_argument("--success", help="per-episode success rule on the scores, e.g. 'score >= -30'")
    p.add_argument("--store", help="results store path or URL (default: the harness's)")
    p.add_argument("--json", action="store_true", help="print the certificate as JSON")
    p.set_defaults(func=cmd_certify)
