"""Resolve ``"package.module:Name"`` strings and suggest close names for typos."""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import inspect
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def load_entry_point(entry_point: str) -> Any:
    """Import ``package.module:attr.path`` and return the attribute, with a clear error.

    A missing module says which import failed and where Python looked for it (the working
    directory counts only for ``python -m`` and the ``icml26 run``/``bench`` commands); a
    missing attribute lists the module's closest names.
    """
    if not isinstance(entry_point, str) or ":" not in entry_point:
        raise ValueError(f"expected an entry point 'package.module:Name', got {entry_point!r}")
    module_name, _, attr_path = entry_point.partition(":")
    if not module_name or not attr_path:
        raise ValueError(f"expected an entry point 'package.module:Name', got {entry_point!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name != e.name and not module_name.startswith(e.name + "."):
            hint = f"module {module_name!r} imports {e.name!r}, which is not installed"
        else:
            hint = (
                f"no module {e.name or module_name!r} on sys.path; run from the directory that "
                "holds the package, add that directory to PYTHONPATH, or pip install the package"
            )
        raise ImportError(
            f"cannot import module {module_name!r} of entry point {entry_point!r}: {hint}"
        ) from e
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise ImportError(
                f"module {module_name!r} has no attribute {attr_path!r} (entry point {entry_point!r}).{hint}"
            ) from None
    return obj


def accepted_kwargs(cls: Any) -> list[str] | None:
    """Keyword arguments ``cls(...)`` accepts, or None when it takes any (``**kwargs``) or its
    signature cannot be read."""
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    names = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            return None
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.append(p.name)
    return names


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def code_location(entry_point: str) -> dict[str, str | None]:
    """Where another machine gets the code of ``entry_point``: ``{"requirement": "dist==version",
    "path": None}`` when its top-level package belongs to an installed distribution, otherwise
    ``{"requirement": None, "path": DIR}`` with DIR the directory to put on ``sys.path`` (the
    one holding the top-level package or module). Works for namespace packages (no
    ``__init__.py``): the directory is found from the entry point's own module file.
    Raises ``ValueError`` when neither can be found (a module with no file)."""
    module_name = entry_point.partition(":")[0]
    parts = module_name.split(".")
    dists = _packages_distributions().get(parts[0], [])
    if dists:
        dist = dists[0]
        return {"requirement": f"{dist}=={importlib.metadata.version(dist)}", "path": None}
    mod = importlib.import_module(module_name)
    origin = getattr(mod, "__file__", None)
    if origin is None:
        raise ValueError(
            f"cannot locate the code of agent entry point {entry_point!r}: module {module_name!r} "
            "has no file (a namespace package itself, or built in); give --agent-path DIR (the "
            "directory to put on sys.path) or --agent-requirement 'dist==version'"
        )
    p = Path(origin).resolve()
    # a.b.c -> .../a/b/c.py or .../a/b/c/__init__.py: climb one level per dotted part
    depth = len(parts) if p.name == "__init__.py" else len(parts) - 1
    return {"requirement": None, "path": str(p.parents[depth])}


def check_code_path(entry_point: str, path: str | os.PathLike[str]) -> Path:
    """``path`` resolved, after checking it holds the entry point's module (``ValueError`` if not)."""
    root = Path(path).expanduser().resolve()
    rel = Path(*entry_point.partition(":")[0].split("."))
    if not root.is_dir():
        raise ValueError(f"agent path {str(root)!r} is not a directory")
    if not ((root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()):
        raise ValueError(
            f"agent path {str(root)!r} does not hold the module of entry point "
            f"{entry_point!r} (looked for {rel}.py and {rel}/__init__.py)"
        )
    return root


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
