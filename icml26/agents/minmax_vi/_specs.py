"""Agent registrations of the minmax_vi family (one class, one name per algorithm and setting)."""

from __future__ import annotations

from typing import Any

_EP = "icml26.agents.minmax_vi.algorithms:VIAlgorithmAgent"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "vi-fbf",
        "entry_point": _EP,
        "kwargs": {"algorithm": "fbf", "eta": 0.5, "batch": "linear"},
        "description": "Minibatch FBF (Tseng) with batches b_k = k + 1, eta = 1/(2L): the paper's method (i).",
    },
    {
        "name": "vi-km-fbf",
        "entry_point": _EP,
        "kwargs": {"algorithm": "km_fbf", "eta": 0.5, "batch": "linear"},
        "description": "Inexact Krasnoselskii-Mann on the FBF map, growing batches (paper (ii) without MLMC).",
    },
    {
        "name": "vi-halpern-fbf",
        "entry_point": _EP,
        "kwargs": {"algorithm": "halpern_fbf", "eta": 0.5, "batch": "quadratic"},
        "description": "Halpern-anchored FBF, batches (k + 1)^2 (paper (iii) with batches for variance reduction).",
    },
    {
        "name": "vi-seg",
        "entry_point": _EP,
        "kwargs": {"algorithm": "seg", "eta": 0.5, "batch": "constant"},
        "description": "Stochastic extragradient, one sample per call, eta = 1/(2L).",
    },
    {
        "name": "vi-seg-batched",
        "entry_point": _EP,
        "kwargs": {"algorithm": "seg", "eta": 0.5, "batch": "linear"},
        "description": "Stochastic extragradient with growing batches b_k = k + 1.",
    },
    {
        "name": "vi-ogda",
        "entry_point": _EP,
        "kwargs": {"algorithm": "ogda", "eta": 0.5, "batch": "constant"},
        "description": "Optimistic GDA / Popov past extragradient, one sample per iteration.",
    },
    {
        "name": "vi-seg-plus",
        "entry_point": _EP,
        "kwargs": {"algorithm": "seg_plus", "eta": 0.5, "batch": "constant", "alpha0": 0.5},
        "description": "SEG+ (Pethick et al. 2023): fixed exploration step, diminishing update step.",
    },
    {
        "name": "vi-sgda",
        "entry_point": _EP,
        "kwargs": {"algorithm": "sgda", "eta": 0.5, "batch": "constant"},
        "description": "Stochastic gradient descent-ascent (negative control: diverges on bilinear).",
    },
]
