"""Gymnasium registration records of the md_forcefields family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/MDForceField-v0",
        "entry_point": "icml26.envs.md_forcefields.env:MDForceFieldEnv",
        "doc": "A learned force field drives Langevin MD of a molecule; OpenMM scores forces and stability.",
        "test_kwargs": {"max_steps": 20},
        # OpenMM's CPU platform sums in single precision in a CPU-dependent SIMD order: the version
        # guard compares this env's rollout values within 1e-5 (icml26.testing.golden)
        "golden_rtol": 1e-5,
    },
]
