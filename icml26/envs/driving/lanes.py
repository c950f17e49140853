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


def _clip(x: float, lo: float, hi: float) -> float:
    x = lo if lo > x else x
    return hi if hi < x else x


# name: (NumPy's operation, the float one); fmin/fmax give np.minimum/np.maximum's value for
# non-NaN floats
_OPS: dict[str, tuple[Any, Any]] = {
    "where": (np.where, lambda c, a, b: a if c else b),
    "fmin": (np.minimum, lambda a, b: b if b < a else a),
    "fmax": (np.maximum, lambda a, b: b if b > a else a),
    "clip": (lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), _clip),
    "any_": (np.any, lambda c: c),
    "all_": (np.all, lambda c: c),
    "not_": (np.logical_not, lambda c: not c),
    "atan": (np.arctan, math.atan),
    "asin": (np.arcsin, math.asin),
    **{k: (getattr(np, k), getattr(math, k))
       for k in ("sqrt", "cos", "sin", "tan", "atan2", "hypot", "tanh", "floor", "isfinite")},
}  # fmt: skip
NUMPY_OPS: dict[str, Any] = {k: v[0] for k, v in _OPS.items()}
SCALAR_OPS: dict[str, Any] = {k: v[1] for k, v in _OPS.items()}


def numpy_ops(names: str) -> tuple[Any, ...]:
    """The NumPy binding of the lane operations ``names`` (space-separated), for a kernel module's
    globals: ``where, fmin = numpy_ops("where fmin")``."""
    return tuple(NUMPY_OPS[k] for k in names.split())


def scalar_twins(funcs: list[Callable[..., Any]], module_globals: dict[str, Any],
                 **overrides: Any) -> dict[str, Callable[..., Any]]:  # fmt: skip
    """The float binding of ``funcs``: the same code objects over ``module_globals`` with the lane
    operations bound to ``math``/builtins (``overrides``: further names, e.g. another module's
    twins). The twins call each other, so a kernel function calls the twin of its callees."""
    g = {**module_globals, **SCALAR_OPS, **overrides}
    twins = {}
    for f in funcs:
        twin = FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
        twin.__kwdefaults__ = f.__kwdefaults__
        twins[f.__name__] = twin
    g.update(twins)
    return twins
