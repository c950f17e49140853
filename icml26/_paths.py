"""Where generated data lives (``$ICML26_CACHE``, default ``~/.cache/icml26``, one folder per
family), the hash that names a cache file, atomic writes, and generation once per entry."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def cache_dir(*parts: str) -> Path:
    """``$ICML26_CACHE/<parts...>``, created on first use (e.g. ``cache_dir("boltzmann", "md")``)."""
    root = Path(os.environ.get("ICML26_CACHE", Path.home() / ".cache" / "icml26")).expanduser()
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_dir() -> Path:
    """``$ICML26_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/icml26``, else ``~/.config/icml26``."""
    if os.environ.get("ICML26_CONFIG_DIR"):
        return Path(os.environ["ICML26_CONFIG_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "icml26"


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
    fd, name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}"
    )
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


_MISSING: Any = object()


def _load_entry(target: Path, load: Callable[[Path], T]) -> T:
    """``load(target)``, or ``_MISSING`` when there is no entry (a corrupt one is removed)."""
    if not target.exists():
        return _MISSING
    try:
        return load(target)
    except (ValueError, OSError, KeyError, EOFError):
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)
        return _MISSING


@contextlib.contextmanager
def _generation_lock(target: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``.<name>.lock`` next to ``target``: one process at a time
    generates an entry (the kernel releases the lock when its holder dies, a killed trial
    included). Where ``fcntl`` is missing (Windows) there is no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX everywhere we run
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached(
    path: str | os.PathLike[str],
    make: Callable[[], T],
    load: Callable[[Path], T],
    save: Callable[[T, Path], Any],
) -> T:
    """The value cached at ``path``: ``load(path)`` when the file is there and readable, else
    ``make()``, written with ``save(value, tmp)`` through :func:`atomic_write` (a corrupt or
    unreadable entry is regenerated). Every family's generated data go through this.

    Processes that miss the same entry at once (parallel trials on a cold cache) make it once:
    the first holds a lock while it generates, the others wait and load what it wrote."""
    target = Path(path)
    found = _load_entry(target, load)
    if found is not _MISSING:
        return found
    with _generation_lock(target):
        found = _load_entry(target, load)  # made by another process while we waited
        if found is not _MISSING:
            return found
        value = make()
        atomic_write(target, lambda tmp: save(value, tmp))
    return value
