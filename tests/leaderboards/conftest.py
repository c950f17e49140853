"""Leaderboard tests keep held-out secrets in a temporary config directory, never in ~/.config:
tests/conftest.py points $XDG_CONFIG_HOME and $ICML26_CONFIG_DIR at one for the whole session
(fixtures of every scope see the same one); here each test also gets a fresh $HOME."""

from __future__ import annotations

from pathlib import Path

import pytest

from icml26.leaderboards.store import SECRET_ENV, LeaderboardStore


@pytest.fixture(autouse=True)
def _leaderboard_home_in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    assert "icml26-tests-config-" in os.environ.get("ICML26_CONFIG_DIR", "")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ICML26_LEADERBOARD_SECRET_FILE", raising=False)


@pytest.fixture(autouse=True)
def _fixed_verification_nonce(monkeypatch: pytest.MonkeyPatch) -> None:
    """One fixed verification nonce: with the fixed test secret the held-out seeds of every
    re-run are the same on every run of the tests."""
    from leaderboard_helpers import TEST_NONCE

    from icml26.leaderboards import verify

    monkeypatch.setattr(verify, "new_nonce", lambda: TEST_NONCE, raising=False)


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LeaderboardStore:
    """An empty store with the fixed test secret (no secret in the environment)."""
    from leaderboard_helpers import TEST_SECRET

    monkeypatch.delenv(SECRET_ENV, raising=False)
    s = LeaderboardStore(tmp_path / "lb.db")
    s.set_heldout_secret(TEST_SECRET)
    return s
