"""Agent registrations of the spatial_causal family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

_M = "icml26.agents.spatial_causal"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "spatial-deconfounder",
        "entry_point": f"{_M}.deconfounder:SpatialDeconfounder",
        "description": "Spatial Deconfounder (paper): CVAE substitute confounder from neighbourhood "
        "treatments with a graph-GMRF prior, then a flexible least-squares outcome model.",
    },
    {
        "name": "spatial-deconfounder-splus",
        "entry_point": f"{_M}.deconfounder:SpatialDeconfounder",
        "description": "Spatial Deconfounder (paper) with the Spatial+ outcome head (the paper's best head).",
        "kwargs": {"head": "spatialplus"},
    },
    {
        "name": "spatial-deconfounder-ref",
        "entry_point": f"{_M}.reference:ReferenceDeconfounder",
        "description": "Reference Spatial Deconfounder on lattices (Spatial-CI deconfounder.py): per-pixel "
        "latent over the patch, patch-Laplacian prior, own treatment in the encoder, beta by predictive checks, Spatial+ head.",
    },
    {
        "name": "sc-diff-means",
        "entry_point": f"{_M}.regression:DifferenceInMeans",
        "description": "Difference in means (DE) and unadjusted exposure slope (SE); no adjustment.",
    },
    {
        "name": "sc-ols",
        "entry_point": f"{_M}.regression:OLS",
        "description": "OLS of Y on A, X, AX; ignores interference (SE = 0).",
    },
    {
        "name": "sc-ols-exposure",
        "entry_point": f"{_M}.regression:OLSExposure",
        "description": "OLS with the exposure mapping (share of treated neighbours) and interactions.",
    },
    {
        "name": "sc-spatial",
        "entry_point": f"{_M}.regression:SpatialRegression",
        "description": "Spatial regression: thin-plate spline of coordinates + exposure mapping.",
        "kwargs": {"plus": False},
    },
    {
        "name": "sc-spatialplus",
        "entry_point": f"{_M}.regression:SpatialRegression",
        "description": "Spatial+ (Dupont et al. 2022) with exposure mapping: spatially residualized A and e.",
        "kwargs": {"plus": True},
    },
    {
        "name": "sc-s2sls",
        "entry_point": f"{_M}.regression:SpatialLag2SLS",
        "description": "Spatial two-stage least squares lag model (GM_Lag); effects from (I - rho W)^-1.",
    },
    {
        "name": "sc-durbin",
        "entry_point": f"{_M}.regression:SpatialLag2SLS",
        "description": "Spatial Durbin model (lag model + WA, WX) by 2SLS; effects from (I - rho W)^-1 (b + t W).",
        "kwargs": {"slx": True},
    },
    {
        "name": "sc-gcn",
        "entry_point": f"{_M}.gcn:GCNOutcome",
        "description": "Two-layer GCN outcome model on (A, e, X, coords); exact per-unit counterfactuals.",
    },
    {
        "name": "sc-gm-error",
        "entry_point": f"{_M}.regression:GMError",
        "description": "Spatial error model (GM_Error): Kelejian-Prucha lambda, then FGLS on [1, A, e, X].",
    },
    {
        "name": "sc-ipw",
        "entry_point": f"{_M}.weighting:IPW",
        "description": "IPW marginal structural model in (A, e) with a joint propensity for own treatment "
        "and neighbour count (logistic x Poisson-binomial; Forastiere et al. 2021).",
    },
    {
        "name": "sc-aipw",
        "entry_point": f"{_M}.weighting:AIPW",
        "description": "Doubly robust (AIPW) MSM in (A, e): exposure-OLS outcome model + joint-propensity weights.",
    },
    {
        "name": "sc-ht",
        "entry_point": f"{_M}.weighting:HorvitzThompson",
        "description": "Horvitz-Thompson estimates of DE, SE and ERF with the joint propensity (Aronow & Samii 2017).",
    },
    {
        "name": "sc-oracle",
        "entry_point": f"{_M}.regression:OracleRegression",
        "description": "REFERENCE ONLY, never ranked: regression that sees the hidden confounder U.",
    },
]
