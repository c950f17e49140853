"""Gymnasium registration records of the constrained_opt family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/ConstrainedOpt-v0",
        "entry_point": "icml26.envs.constrained_opt.env:ConstrainedOptEnv",
        "doc": "One non-convex constrained problem per episode (QCQP, chance-constrained DC-OPF, attack); iterates scored exactly.",
        "test_kwargs": {"problem": "qcqp", "problem_kwargs": {"n": 2, "m": 3}, "max_iterates": 20},
    },
]
