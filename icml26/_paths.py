"""Where generated data lives (``$ICML26_CACHE``, default ``~/.cache/icml26``, one folder per
family), the hash that names a cache file, and atomic writes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def cache_dir(*parts: str) -> Path:
    """``$ICML26_CACHE/<parts...>``, created on first use (e.g. ``cache_dir("boltzmann", "md")``)."""
    root = Path(os.environ.get("ICML26_CACHE", Path.home() / ".cache" / "icml26")).expanduser()
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def params_digest(params: Mapping[str, Any], length: int = 16) -> str:
    """A short stable hash of ``params`` (JSON with sorted keys; non-JSON values by ``str``)."""
    blob = json.dumps(dict(params), sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], Any]) -> Path:
    """Write ``path`` all at once: ``write(tmp)`` fills a temporary file (or folder) next to it with
    the same suffix, which then replaces ``path`` (an existing folder is removed first). A reader
    never sees half a file, and a failed write leaves nothing behind."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}")
    os.close(fd)
    tmp = Path(name)
    tmp.unlink()  # the writer creates it (some writers refuse an existing file or want a folder)
    try:
        write(tmp)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()
    return target
