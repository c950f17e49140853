"""Agent registrations of the looplm family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

AGENT_SPECS: list[dict[str, Any]] = []
