"""Spatial causal inference with interference (Spatial Deconfounder; SpaCE extension).

* :mod:`~icml26.envs.spatial_causal.simulator` -- seeded simulator: graphs, latent confounder,
  treatment, exposure mapping, outcome, counterfactuals sharing noise, difficulty scores.
* :mod:`~icml26.envs.spatial_causal.env` -- ``icml26/SpaCEInterference-v0`` (one-step episodes).
* :mod:`~icml26.envs.spatial_causal.space_folder` -- reader for SpaCE env folders on disk.
* :mod:`~icml26.envs.spatial_causal.graphs`, :mod:`~icml26.envs.spatial_causal.fields` -- graph
  utilities (hop balls, exposure weights, Moran's I) and confounder samplers (GP, SPDE, ICAR).

Importing this package is cheap; submodules load on first attribute access.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "SpaCEInterferenceEnv": "icml26.envs.spatial_causal.env",
    "score_estimates": "icml26.envs.spatial_causal.env",
    "SimulationConfig": "icml26.envs.spatial_causal.simulator",
    "SpatialCausalData": "icml26.envs.spatial_causal.simulator",
    "simulate": "icml26.envs.spatial_causal.simulator",
    "config_for_variant": "icml26.envs.spatial_causal.simulator",
    "VARIANTS": "icml26.envs.spatial_causal.simulator",
    "load_space_folder": "icml26.envs.spatial_causal.space_folder",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'icml26.envs.spatial_causal' has no attribute {name!r}")
