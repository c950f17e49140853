"""Agent registrations of the md_forcefields family."""

from __future__ import annotations

from typing import Any

_EP = "icml26.agents.md_forcefields.agent:ForceFieldAgent"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "md-dkmp",
        "entry_point": _EP,
        "kwargs": {"model": "dkmp"},
        "description": "DKMP (DKMP^C reading): 4 layers over mutually exclusive soft shells 0-2-4-6-8 A.",
    },
    {
        "name": "md-schnet",
        "entry_point": _EP,
        "kwargs": {"model": "schnet"},
        "description": "SchNet-style cutoff MPNN: 4 layers, every layer over all pairs within 5 A.",
    },
    {
        "name": "md-painn",
        "entry_point": _EP,
        "kwargs": {"model": "painn", "model_kwargs": {"hidden": 48}},
        "description": "PaiNN-style equivariant MPNN: 3 layers, scalar + vector features, 5 A cutoff.",
    },
    {
        "name": "md-dkmp-r",
        "entry_point": _EP,
        "kwargs": {"model": "dkmp-r"},
        "description": "DKMP^R: 4 layers over fixed-K rank-dilated shells (K=8, dilation 1), O(N K) edges.",
    },
    {
        "name": "md-dkmp-eq",
        "entry_point": _EP,
        "kwargs": {"model": "dkmp-eq"},
        "description": "Equivariant DKMP: PaiNN layers over the soft shells 0-2-4-6-8 A (DKMP^C-like).",
    },
    {
        "name": "md-null",
        "entry_point": "icml26.agents.md_forcefields.agent:ConstantEnergyAgent",
        "kwargs": {},
        "description": "Null baseline: per-element constant energy (least squares), zero forces.",
    },
    {
        "name": "md-openmm",
        "entry_point": "icml26.agents.md_forcefields.agent:OpenMMAgent",
        "kwargs": {},
        "description": "The classical force field itself (OpenMM CPU): the zero-error oracle row.",
    },
]
