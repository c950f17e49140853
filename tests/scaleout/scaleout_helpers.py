"""Helpers shared by the scale-out tests: misbehaving agents and throwaway PostgreSQL databases.

The agents live in an importable module (not a test file) so that spawned processes and Ray
workers, which get this folder on their ``sys.path``, can construct them by entry point.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
PG_ENV = "ICML26_TEST_POSTGRES_URL"


class DieOnceAgent:
    """Kills its process (``os._exit``) on its first action the first time it ever runs (a
    marker file remembers), then acts with zeros: a worker that dies once, then succeeds."""

    version = "1"

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self._shape: tuple[int, ...] = (2,)

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self._shape = action_space.shape

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os._exit(17)
        return np.zeros(self._shape, dtype=np.float32)


class SysExitAgent:
    """Calls ``sys.exit`` on its first action (a SystemExit, not an Exception)."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        sys.exit(3)


DIE_ONCE = "scaleout_helpers:DieOnceAgent"
SYS_EXIT = "scaleout_helpers:SysExitAgent"
KILL = "icml26.testing.faulty_agents:ProcessKillingAgent"
CRASH = "icml26.testing.faulty_agents:CrashingAgent"


@contextmanager
def fresh_postgres_database(base_url: str) -> Iterator[str]:
    """A new, empty database on the server of ``base_url``; dropped afterwards."""
    import sqlalchemy as sa

    name = f"icml26_t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        url = sa.engine.make_url(base_url).set(database=name).render_as_string(hide_password=False)
        yield url
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
