"""Leaderboard tests keep held-out secrets in a temporary config directory, never in ~/.config."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _leaderboard_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("icml26-config")


@pytest.fixture(autouse=True)
def _leaderboard_secrets_in_tmp(
    _leaderboard_config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICML26_CONFIG_DIR", str(_leaderboard_config_dir))
    monkeypatch.delenv("ICML26_LEADERBOARD_SECRET_FILE", raising=False)
