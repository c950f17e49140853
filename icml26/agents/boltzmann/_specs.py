"""Agent registrations of the boltzmann family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

_FLOW = "icml26.agents.boltzmann.flow_agent:FlowSampler"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "flow-ldr",
        "entry_point": _FLOW,
        # the dispersion the tuning of docs/results/boltzmann.md chose (variance, lambda 1; issue 40)
        "kwargs": {"objective": "ldr", "dispersion": "variance", "lam": 1.0},
        "description": "LDR (paper): spline flow, NLL + lambda * log-variance on data with stored energies (the tuned dispersion).",
    },
    {
        "name": "flow-ml",
        "entry_point": _FLOW,
        "kwargs": {"objective": "ml"},
        "description": "Spline flow trained by maximum likelihood on the data set.",
    },
    {
        "name": "flow-lv",
        "entry_point": _FLOW,
        "kwargs": {"objective": "lv"},
        "description": "Spline flow trained by the log-variance loss with R = data (Richter et al. 2020).",
    },
    {
        "name": "flow-rkl",
        "entry_point": _FLOW,
        "kwargs": {"objective": "rkl"},
        "description": "Spline flow trained by reverse KL with forces from the env (energy budget).",
    },
    {
        "name": "flow-lv-onpolicy",
        "entry_point": _FLOW,
        "kwargs": {"objective": "lv_onpolicy"},
        "description": "Spline flow trained by the on-policy log-variance loss (energy budget).",
    },
    {
        "name": "flow-ldr-var",
        "entry_point": _FLOW,
        "kwargs": {"objective": "ldr_var", "dispersion": "mad", "lam": 1.0},
        "description": "Purely variational LDR (paper): reverse KL + dispersion over a replay buffer.",
    },
    {
        "name": "flow-ml-rkl",
        "entry_point": _FLOW,
        "kwargs": {"objective": "ml_rkl", "lam": 1.0},
        "description": "Spline flow trained by NLL on data + lambda * reverse KL on model samples (energy budget; Noé et al. 2019).",
    },
    {
        "name": "flow-ml-reweighted",
        "entry_point": _FLOW,
        "kwargs": {"objective": "ml_reweighted"},
        "description": "Spline flow trained by self-normalized importance-weighted NLL undoing the data's known bias (p / p_bias).",
    },
    {
        "name": "flow-fab",
        "entry_point": _FLOW,
        "kwargs": {"objective": "fab", "alpha": 2.0},
        "description": "FAB without replay buffer (Midgley et al. 2023): AIS (MALA) towards p^2/q, AIS-weighted NLL (energy budget).",
    },
    {
        "name": "boltzmann-oracle",
        "entry_point": "icml26.agents.boltzmann.oracle:ExactSampler",
        "description": "The target's exact sampler and density (upper bound; exact targets only).",
    },
]
