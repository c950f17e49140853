"""Lazy package exports: names that load their module on first access, so that importing a
package stays cheap (no torch, OpenMM, SQLAlchemy or FastAPI until a name that needs it is used)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], list[str]]:
    """``(__getattr__, __all__)`` for ``package``: ``exports`` maps each public name to the module
    that defines it, absolute (``"icml26.envs.driving.env"``) or relative to the package (``"env"``).

        __getattr__, __all__ = lazy_exports(__name__, {"ScenePilotEnv": "env", ...})
    """
    table = dict(exports)

    def __getattr__(name: str) -> Any:
        if name in table:
            module = table[name]
            return getattr(
                importlib.import_module(
                    module if module.startswith("icml26.") else f"{package}.{module}"
                ),
                name,
            )
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__, sorted(table)
