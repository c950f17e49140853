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
        "name": "vi-km-mlmc",
        "entry_point": _EP,
        "kwargs": {
            "algorithm": "km_mlmc",
            "batch": "constant",
            "b0": 128,
            "relax": 0.3,
            "relax_decay": 100.0,
            "eta_res": 0.5,
            "levels": 6,
        },
        "description": "The paper's (ii) as derived here: KM on the resolvent (lam = 1/(2L)) with "
        "multilevel Monte Carlo estimates from inner stochastic FBF (batches of 128, a_k = 0.3/sqrt(1 + k/100)).",
    },
    {
        "name": "vi-km-mlmc-wide",
        "entry_point": _EP,
        "kwargs": {
            "algorithm": "km_mlmc",
            "batch": "constant",
            "b0": 128,
            "relax": 0.3,
            "relax_decay": 100.0,
            "eta_res": 0.9,
            "levels": 10,
        },
        "description": "vi-km-mlmc with the resolvent step lam = 0.9/L (tolerates weak Minty |rho| < 0.9/L; 10 levels).",
    },
    {
        "name": "vi-halpern-vr",
        "entry_point": _EP,
        "kwargs": {"algorithm": "halpern_vr", "eta": 0.5, "batch": "linear"},
        "description": "The paper's (iii) as derived here: Halpern-anchored FBF with a same-sample "
        "recursive (SARAH) estimator, refreshed by (k+1)^2 samples at k+1 = 2^e (needs StochasticVI-v1).",
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
