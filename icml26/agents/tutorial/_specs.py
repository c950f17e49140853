"""Agent registrations of the tutorial family."""

from __future__ import annotations

from typing import Any

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "point-pd",
        "entry_point": "icml26.agents.tutorial.pd:PDController",
        "description": "PD controller on the goal offset (scripted; solves PointReach-v0).",
    },
]
