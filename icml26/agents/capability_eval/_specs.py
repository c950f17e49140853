"""Agent registrations of the capability_eval family (evaluators of a hidden system)."""

from __future__ import annotations

from typing import Any

_EV = "icml26.agents.capability_eval.evaluators:ProtocolEvaluator"
_CT = "icml26.agents.capability_eval.evaluators:CircuitTester"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "certify-chi2",
        "entry_point": _EV,
        "kwargs": {"protocol": "chi2", "margin": 0.05},
        "description": "The paper's protocol (as derived): min chi^2-radius design, n = 2(1+R)log(m/delta)/eps^2, stratified uniform certificate.",
    },
    {
        "name": "certify-iw",
        "entry_point": _EV,
        "kwargs": {"protocol": "iw", "margin": 0.05},
        "description": "The same design drawn i.i.d., importance-weighted estimate, Bernstein uniform certificate.",
    },
    {
        "name": "certify-uniform",
        "entry_point": _EV,
        "kwargs": {"protocol": "uniform", "margin": 0.05},
        "description": "Baseline: the stratified chi^2 certificate on the uniform design.",
    },
    {
        "name": "certify-per-env",
        "entry_point": _EV,
        "kwargs": {"protocol": "per-env", "margin": 0.05},
        "description": "Baseline: equal tests per environment, Clopper-Pearson at delta/K' (union bound).",
    },
    {
        "name": "certify-per-env-hoeffding",
        "entry_point": _EV,
        "kwargs": {"protocol": "per-env-hoeffding", "margin": 0.05},
        "description": "Baseline: equal tests per environment, Hoeffding at delta/K' (union bound).",
    },
    {
        "name": "certify-pooled",
        "entry_point": _EV,
        "kwargs": {"protocol": "pooled", "margin": 0.05},
        "description": "Baseline (invalid): one pooled Clopper-Pearson bound claimed for every member.",
    },
    {
        "name": "circuit-random",
        "entry_point": _CT,
        "kwargs": {"strategy": "random", "queries": 64},
        "description": "Worst case: 64 distinct random inputs; certify 'agrees on every input' if all pass.",
    },
    {
        "name": "circuit-exhaustive",
        "entry_point": _CT,
        "kwargs": {"strategy": "exhaustive"},
        "description": "Worst case: query all 2^n inputs (valid, exponential cost).",
    },
    {
        "name": "circuit-span",
        "entry_point": _CT,
        "kwargs": {"strategy": "span"},
        "description": "Worst case: query 0 and the unit vectors (n + 1); exact for affine circuits only.",
    },
]
