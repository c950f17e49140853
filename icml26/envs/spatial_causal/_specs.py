"""Gymnasium registration records of the spatial_causal family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/SpaCEInterference-v0",
        "entry_point": "icml26.envs.spatial_causal.env:SpaCEInterferenceEnv",
        "doc": "Spatial confounding with interference: estimate direct and spillover effects "
        "(SpaCE / Spatial Deconfounder); variants by kwargs, SpaCE folders via space_dir.",
        "test_kwargs": {"n_rows": 8, "n_cols": 8, "confounder": "gp", "length_scale": 3.0},
    },
]
