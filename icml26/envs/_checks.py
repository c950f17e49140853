"""Argument checks shared by the envs' constructors.

Every env validates its arguments before building anything, and its errors name the env, the
argument, what was expected and what arrived. These helpers keep that wording in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def check_render_mode(owner: str, render_mode: Any, modes: Sequence[str]) -> None:
    """Raise ``ValueError`` unless ``render_mode`` is None or one of ``modes``."""
    if render_mode is not None and render_mode not in modes:
        raise ValueError(
            f"{owner}: render_mode must be one of {list(modes)} or None, got {render_mode!r}"
        )


def check_int_at_least(owner: str, name: str, value: Any, minimum: int = 1) -> int:
    """Return ``value`` as an int if it is an integer (not a bool) >= ``minimum``, else raise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{owner}: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)
