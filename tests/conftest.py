"""Shared pytest setup: registered ids, fast torch on 2 cores, no stray network."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault(
    "ICML26_CACHE", os.path.join(os.path.dirname(__file__), "..", "results", "test-cache")
)

# Never the real configuration directory (~/.config/icml26: leaderboard secrets): every test,
# and every process a test starts, gets a private one for the session.
import tempfile  # noqa: E402

import icml26  # noqa: E402,F401  (registers the env ids)

_CONFIG_HOME = tempfile.mkdtemp(prefix="icml26-tests-config-")
os.environ["XDG_CONFIG_HOME"] = _CONFIG_HOME
os.environ["ICML26_CONFIG_DIR"] = os.path.join(_CONFIG_HOME, "icml26")


def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    # pytest exits 5 when it collected nothing; make that loud, never a silent pass.
    if session.testscollected == 0:
        session.exitstatus = 5
        print("\nERROR: no tests were collected")
