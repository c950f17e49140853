"""Where generated data lives: ``$ICML26_CACHE`` (default ``~/.cache/icml26``), one folder per family."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """``$ICML26_CACHE/<parts...>``, created on first use (e.g. ``cache_dir("boltzmann", "md")``)."""
    root = Path(os.environ.get("ICML26_CACHE", Path.home() / ".cache" / "icml26")).expanduser()
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
