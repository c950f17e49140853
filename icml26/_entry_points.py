"""Resolve ``"package.module:Name"`` strings and suggest close names for typos."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from typing import Any


def load_entry_point(entry_point: str) -> Any:
    """Import ``package.module:attr.path`` and return the attribute, with a clear error."""
    if ":" not in entry_point:
        raise ValueError(f"expected an entry point 'package.module:Name', got {entry_point!r}")
    module_name, _, attr_path = entry_point.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        raise ImportError(f"cannot import module {module_name!r} of entry point {entry_point!r}: {e}") from e
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(
                f"module {module_name!r} has no attribute {attr_path!r} (entry point {entry_point!r})"
            ) from None
    return obj


def unknown_name_error(kind: str, name: str, known: Iterable[str]) -> KeyError:
    """A KeyError whose message lists the closest valid names."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return KeyError(f"unknown {kind} {name!r}.{hint} Known {kind}s: {', '.join(known) or '(none)'}")


def require(module: str, extra: str, what: str) -> Any:
    """Import an optional heavy dependency or fail naming the pip extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"{what} needs the optional package {module!r}: pip install 'icml26-gym[{extra}]' ({e})"
        ) from e
