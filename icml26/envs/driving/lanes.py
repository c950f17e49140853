"""Lanes: the driving kernel is written once, for one scene and for N scenes.

A *lane* is a Python float (the one-scene step of the single env) or a NumPy array of N scenes
(the batched step of the vector env). The kernel functions (:mod:`.sim`, :mod:`.feasibility`,
:mod:`.realism`, :mod:`.rewards`) use plain arithmetic and the lane operations below; at module
level those are NumPy's. :func:`scalar_twins` compiles the same source a second time with the
lane operations written out as Python expressions and the elementary functions bound to
``math``, so one definition serves both paths:

* ``where(c, a, b)`` selects per lane (NumPy evaluates both arguments, so a formula must be
  safe in the branch it does not take: ``sqrt(fmax(x, 0.0))``, never ``sqrt(x)``);
* ``any_(c)`` / ``all_(c)`` reduce a condition over the lanes (for floats: the condition itself),
  so work that no lane needs is skipped on both paths;
* ``not_``, ``fmin``, ``fmax``, ``clip`` and the elementary functions.

Both bindings do the same operations in the same order, so the two paths agree to the last bit
except where ``math`` and NumPy's elementary functions round differently (``atan``, ``tan``,
``asin``, ``atan2``, ``hypot``, ``tanh`` and ``x ** 4`` differ by one ulp on some inputs).
"""

from __future__ import annotations
import __future__

import ast
import inspect
import math
import textwrap
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


class _Inline(ast.NodeTransformer):
    """Writes the lane operations of a kernel function out as Python expressions (its float
    binding): ``where(c, a, b)`` -> ``a if c else b``, ``fmin(a, b)`` -> ``b if b < a else a``
    (``fmax`` alike; ``clip(x, lo, hi)`` = ``fmin(fmax(x, lo), hi)``), ``not_(c)`` -> ``not c``,
    ``any_(c)``/``all_(c)`` -> ``c``: the values of :data:`SCALAR_OPS` without a call each.
    Arguments read twice are bound to a temporary first unless they are names or constants;
    inside a lambda or a comprehension such calls stay calls."""

    def __init__(self, names: set[str]) -> None:
        self.names, self.tmp, self.nested = names, 0, 0

    def _scoped(self, node: ast.AST) -> ast.AST:
        self.nested += 1
        self.generic_visit(node)
        self.nested -= 1
        return node

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _scoped

    @staticmethod
    def _simple(e: ast.expr) -> bool:
        """A name or a constant: read twice at no cost."""
        c = e.operand if isinstance(e, ast.UnaryOp) else e
        return isinstance(c, ast.Name | ast.Constant)

    def _twice(self, e: ast.expr) -> tuple[ast.expr, ast.expr]:
        """(first use, second use) of ``e``."""
        if self._simple(e):
            return e, e
        self.tmp += 1
        name = f"_lane{self.tmp}"
        return ast.NamedExpr(ast.Name(name, ast.Store()), e), ast.Name(name, ast.Load())

    def _pick(self, op: str, a: ast.expr, b: ast.expr) -> ast.expr:
        b1, b2 = self._twice(b)
        a1, a2 = self._twice(a)
        cmp = ast.Compare(b1, [ast.Lt() if op == "fmin" else ast.Gt()], [a1])
        return ast.IfExp(cmp, b2, a2)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f, a = node.func, node.args
        if not isinstance(f, ast.Name) or f.id not in self.names or node.keywords:
            return node
        twice = f.id in ("fmin", "fmax", "clip") and not all(map(self._simple, a))
        if any(isinstance(x, ast.Starred) for x in a) or (self.nested and twice):
            return node
        if f.id in ("any_", "all_"):
            return a[0]
        if f.id == "not_":
            return ast.UnaryOp(ast.Not(), a[0])
        if f.id == "where":
            return ast.IfExp(a[0], a[1], a[2])
        if f.id == "clip":
            return self._pick("fmin", self._pick("fmax", a[0], a[1]), a[2])
        return self._pick(f.id, a[0], a[1])


def _twin(f: Callable[..., Any], g: dict[str, Any]) -> Callable[..., Any]:
    """``f`` compiled again from its source over the globals ``g``, lane operations inlined (the
    same code object rebound to ``g`` when its source cannot be read, e.g. typed at a prompt)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
    except (OSError, TypeError, SyntaxError):
        tree = None
    names = {k for k in _INLINE if g.get(k) is SCALAR_OPS[k]}
    if tree is None or not isinstance(tree.body[0], ast.FunctionDef) or f.__closure__:
        twin = FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    else:
        tree = ast.fix_missing_locations(_Inline(names).visit(tree))
        ast.increment_lineno(tree, f.__code__.co_firstlineno - 1)
        flags = __future__.annotations.compiler_flag  # annotations stay strings
        ns: dict[str, Any] = {}
        exec(compile(tree, f.__code__.co_filename, "exec", flags, dont_inherit=True), g, ns)
        twin = ns[tree.body[0].name]
        twin.__defaults__ = f.__defaults__
    twin.__kwdefaults__ = f.__kwdefaults__
    return twin


_INLINE = ("where", "fmin", "fmax", "clip", "any_", "all_", "not_")


def scalar_twins(funcs: list[Callable[..., Any]], module_globals: dict[str, Any],
                 **overrides: Any) -> dict[str, Callable[..., Any]]:  # fmt: skip
    """The float binding of ``funcs``: each compiled from its own source over ``module_globals``
    with the lane operations written out as Python expressions (:class:`_Inline`) and the rest
    bound to ``math`` (``overrides``: further names, e.g. another module's twins). The twins call
    each other, so a kernel function calls the twin of its callees."""
    g = {**module_globals, **SCALAR_OPS, **overrides}
    twins = {f.__name__: _twin(f, g) for f in funcs}
    g.update(twins)
    return twins
