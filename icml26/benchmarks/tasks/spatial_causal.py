"""Tasks and suite entries of the spatial_causal family."""

from __future__ import annotations

from icml26.benchmarks import SuiteEntry
from icml26.protocol import Task

TASKS: list[Task] = []
SUITES: dict[str, list[SuiteEntry]] = {}
