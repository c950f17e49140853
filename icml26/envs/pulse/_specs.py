"""Gymnasium registration records of the pulse family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/PhysioProbe-v0",
        "entry_point": "icml26.envs.pulse.env:PhysioProbeEnv",
        "doc": "Representations of ECG + PPG windows from a dynamical-systems simulator (or WFDB "
        "records) scored by the evaluator's linear probe or per-factor R^2 (PULSE).",
        # Cheap settings for the conformance checks: 2 + 1 recordings per class, 2 windows each.
        "test_kwargs": {
            "recordings_per_class": 2,
            "test_recordings_per_class": 1,
            "windows_per_recording": 2,
            "embedding_dim": 4,
        },
    },
]
