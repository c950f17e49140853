"""Lanes: the driving kernel is written once, for one scene and for N scenes.

A *lane* is a Python float (the one-scene step of the single env) or a NumPy array of N scenes
(the batched step of the vector env). The kernel functions (:mod:`.sim`, :mod:`.feasibility`,
:mod:`.realism`, :mod:`.rewards`) use plain arithmetic and the lane operations below; at module
level those are NumPy's. :func:`scalar_twins` binds the same code objects a second time, with
the operations bound to ``math`` and Python builtins, so one definition serves both paths:

* ``where(c, a, b)`` selects per lane (for floats both arguments are evaluated, so a formula
  must be safe in the branch it does not take: ``sqrt(fmax(x, 0.0))``, never ``sqrt(x)``);
* ``any_(c)`` / ``all_(c)`` reduce a condition over the lanes (for floats: the condition itself),
  so work that no lane needs is skipped on both paths;
* ``not_``, ``fmin``, ``fmax``, ``clip`` and the elementary functions.

Both bindings do the same operations in the same order, so the two paths agree to the last bit
except where ``math`` and NumPy's elementary functions round differently (``atan``, ``tan``,
``asin``, ``atan2``, ``hypot``, ``tanh`` and ``x ** 4`` differ by one ulp on some inputs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import FunctionType
from typing import Any

import numpy as np

__all__ = ["NUMPY_OPS", "SCALAR_OPS", "numpy_ops", "scalar_twins"]


def _where(c: Any, a: Any, b: Any) -> Any:
    return a if c else b


def _fmin(a: float, b: float) -> float:  # np.minimum's value for non-NaN floats (min(a, b) too)
    return b if b < a else a


def _fmax(a: float, b: float) -> float:
    return b if b > a else a


def _clip(x: float, lo: float, hi: float) -> float:
    x = lo if lo > x else x
    return hi if hi < x else x


def _clip_np(x: Any, lo: Any, hi: Any) -> Any:
    return np.minimum(np.maximum(x, lo), hi)


def _ident(c: Any) -> Any:
    return c


def _not(c: Any) -> bool:
    return not c


NUMPY_OPS: dict[str, Any] = {
    "where": np.where,
    "fmin": np.minimum,
    "fmax": np.maximum,
    "clip": _clip_np,
    "any_": np.any,
    "all_": np.all,
    "not_": np.logical_not,
    "sqrt": np.sqrt,
    "cos": np.cos,
    "sin": np.sin,
    "tan": np.tan,
    "atan": np.arctan,
    "asin": np.arcsin,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "tanh": np.tanh,
    "floor": np.floor,
    "isfinite": np.isfinite,
}
SCALAR_OPS: dict[str, Any] = {
    "where": _where,
    "fmin": _fmin,
    "fmax": _fmax,
    "clip": _clip,
    "any_": _ident,
    "all_": _ident,
    "not_": _not,
    "sqrt": math.sqrt,
    "cos": math.cos,
    "sin": math.sin,
    "tan": math.tan,
    "atan": math.atan,
    "asin": math.asin,
    "atan2": math.atan2,
    "hypot": math.hypot,
    "tanh": math.tanh,
    "floor": math.floor,
    "isfinite": math.isfinite,
}


def numpy_ops(names: str) -> tuple[Any, ...]:
    """The NumPy binding of the lane operations ``names`` (space-separated), for a kernel module's
    globals: ``where, fmin = numpy_ops("where fmin")``."""
    return tuple(NUMPY_OPS[k] for k in names.split())


def scalar_twins(
    funcs: list[Callable[..., Any]], module_globals: dict[str, Any], **overrides: Any
) -> dict[str, Callable[..., Any]]:
    """The float binding of ``funcs``: the same code objects over ``module_globals`` with the lane
    operations bound to ``math``/builtins (``overrides``: further names, e.g. another module's
    twins). The twins call each other, so a kernel function calls the twin of its callees."""
    g = dict(module_globals)
    g.update(SCALAR_OPS)
    g.update(overrides)
    twins = {}
    for f in funcs:
        twin = FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
        twin.__kwdefaults__ = f.__kwdefaults__
        twins[f.__name__] = twin
    g.update(twins)
    return twins
