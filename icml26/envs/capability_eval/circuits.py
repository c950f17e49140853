"""Bounded-size Boolean circuits and the adversaries of the worst-case regime.

A circuit on ``n`` input bits is a tuple of gates ``(op, a, b)``: ``op`` one of ``"and"``,
``"or"``, ``"xor"``, ``"not"`` (``b`` ignored, -1), inputs ``a, b`` index earlier wires (wires
``0..n-1`` are the input bits, bit ``i`` of the integer input ``x``; wire ``n + g`` is gate
``g``); the output is the last wire; the size is the number of gates. Inputs are the integers
``0..2^n - 1``.

Alternatives to a specification ``g`` are described by their *failure set* (the inputs where
they disagree with ``g``): the general class uses point functions ``g XOR [x = x*]``
(:func:`with_trigger`, at most ``2 n`` extra gates); the affine class uses ``g XOR d`` for a
nonzero affine ``d(x) = c XOR <a, x>`` over GF(2) (:func:`with_affine`, at most ``n + 1``
extra gates). See docs/methods/capability_eval.md ("Worst-case regime").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "Gate",
    "OPS",
    "evaluate",
    "input_bits",
    "random_circuit",
    "random_affine",
    "with_trigger",
    "with_affine",
    "affine_nullspace",
    "affine_values",
    "in_affine_span",
]

Gate = tuple[str, int, int]
OPS = ("and", "or", "xor", "not")


def input_bits(xs: np.ndarray, n: int) -> np.ndarray:
    """``(N, n)`` booleans: bit ``i`` of each input integer."""
    x = np.asarray(xs, dtype=np.int64)
    return ((x[:, None] >> np.arange(n)) & 1).astype(bool)


def evaluate(gates: Sequence[Gate], n: int, xs: np.ndarray) -> np.ndarray:
    """The circuit's output (bool) on each input integer in ``xs``."""
    bits = input_bits(np.atleast_1d(xs), n)
    wires = [bits[:, i] for i in range(n)]
    for op, a, b in gates:
        if not 0 <= a < len(wires) or (op != "not" and not 0 <= b < len(wires)):
            raise ValueError(f"circuit: gate ({op}, {a}, {b}) reads a wire not yet defined")
        if op == "and":
            wires.append(wires[a] & wires[b])
        elif op == "or":
            wires.append(wires[a] | wires[b])
        elif op == "xor":
            wires.append(wires[a] ^ wires[b])
        elif op == "not":
            wires.append(~wires[a])
        else:
            raise ValueError(f"circuit: unknown gate op {op!r}; expected one of {OPS}")
    return wires[-1]


def random_circuit(rng: np.random.Generator, n: int, size: int) -> tuple[Gate, ...]:
    """A random circuit of exactly ``size`` gates; each gate reads one of the latest ``n``
    wires and one uniform earlier wire, so the output depends on many inputs."""
    gates: list[Gate] = []
    for g in range(size):
        w = n + g
        op = OPS[int(rng.integers(len(OPS)))]
        a = int(rng.integers(max(0, w - n), w))
        b = -1 if op == "not" else int(rng.integers(w))
        gates.append((op, a, b))
    return tuple(gates)


def _xor_chain(n: int, first_wire: int, a: np.ndarray, c: int) -> tuple[list[Gate], int]:
    """Gates computing ``c XOR <a, x>`` (``a`` nonzero or ``c`` = 1) as new wires from
    ``first_wire``, and the wire holding the result (an input wire when no gate is needed)."""
    gates: list[Gate] = []
    idx = [int(i) for i in np.flatnonzero(a)]
    if not idx:  # constant 1: x0 XOR NOT x0
        gates += [("not", 0, -1), ("xor", 0, first_wire)]
        return gates, first_wire + 1
    cur = idx[0]
    for i in idx[1:]:
        gates.append(("xor", cur, i))
        cur = first_wire + len(gates) - 1
    if c:
        gates.append(("not", cur, -1))
        cur = first_wire + len(gates) - 1
    return gates, cur


def random_affine(rng: np.random.Generator, n: int) -> tuple[Gate, ...]:
    """A random affine circuit ``c XOR <a, x>`` with ``a`` nonzero (XOR gates, NOT for c)."""
    a = rng.integers(0, 2, n)
    while not a.any():
        a = rng.integers(0, 2, n)
    gates, out = _xor_chain(n, n, a, int(rng.integers(2)))
    if out < n:  # a single bit: copy it through two NOTs so the output is the last wire
        gates += [("not", out, -1), ("not", n + len(gates), -1)]
    return tuple(gates)


def with_trigger(spec: Sequence[Gate], n: int, x_star: int) -> tuple[Gate, ...]:
    """``spec XOR [x = x_star]``: the spec with a backdoor on one input (<= 2 n extra gates)."""
    gates = list(spec)
    out = n + len(gates) - 1
    lits = []
    for i in range(n):
        if (x_star >> i) & 1:
            lits.append(i)
        else:
            gates.append(("not", i, -1))
            lits.append(n + len(gates) - 1)
    cur = lits[0]
    for w in lits[1:]:
        gates.append(("and", cur, w))
        cur = n + len(gates) - 1
    gates.append(("xor", out, cur))
    return tuple(gates)


def with_affine(spec: Sequence[Gate], n: int, d: np.ndarray) -> tuple[Gate, ...]:
    """``spec XOR d`` for the affine ``d = (c, a_1..a_n)`` (nonzero): <= n + 2 extra gates."""
    d = np.asarray(d, dtype=np.int64)
    gates = list(spec)
    out = n + len(gates) - 1
    chain, res = _xor_chain(n, n + len(gates), d[1:], int(d[0]))
    gates.extend(chain)
    gates.append(("xor", out, res))
    return tuple(gates)


def affine_values(d: np.ndarray, xs: np.ndarray, n: int) -> np.ndarray:
    """``d(x) = c XOR <a, x>`` (bool) for ``d = (c, a_1..a_n)``."""
    d = np.asarray(d, dtype=np.int64)
    bits = input_bits(np.atleast_1d(xs), n).astype(np.int64)
    return ((d[0] + bits @ d[1:]) % 2).astype(bool)


def _rref_gf2(rows: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Reduced row echelon form over GF(2) and the pivot columns."""
    a = (np.asarray(rows, dtype=np.int64) % 2).copy()
    pivots: list[int] = []
    r = 0
    for col in range(a.shape[1]):
        hit = np.flatnonzero(a[r:, col]) if r < a.shape[0] else np.zeros(0, dtype=np.int64)
        if len(hit) == 0:
            continue
        p = r + int(hit[0])
        a[[r, p]] = a[[p, r]]
        others = np.flatnonzero(a[:, col])
        others = others[others != r]
        a[others] ^= a[r]
        pivots.append(col)
        r += 1
        if r == a.shape[0]:
            break
    return a[:r], pivots


def _affine_rows(queries: np.ndarray, n: int) -> np.ndarray:
    q = np.atleast_1d(np.asarray(queries, dtype=np.int64))
    return np.concatenate([np.ones((q.size, 1), np.int64), input_bits(q, n).astype(np.int64)], 1)


def affine_nullspace(queries: np.ndarray, n: int) -> np.ndarray:
    """A basis ``(r, n + 1)`` of the affine functions ``d`` that vanish on every query (the
    differences an affine adversary can hide); empty when the queries span GF(2)^n affinely."""
    dim = n + 1
    if np.size(queries) == 0:
        return np.eye(dim, dtype=np.int64)
    red, piv = _rref_gf2(_affine_rows(queries, n))
    free = [c for c in range(dim) if c not in piv]
    basis = []
    for f in free:
        v = np.zeros(dim, dtype=np.int64)
        v[f] = 1
        for row, pc in zip(red, piv):
            v[pc] = row[f]
        basis.append(v)
    return np.array(basis, dtype=np.int64).reshape(len(basis), dim)


def in_affine_span(queries: np.ndarray, n: int, xs: np.ndarray) -> np.ndarray:
    """Whether each ``x`` lies in the affine span of the queries (where no affine
    alternative consistent with them can differ from the spec)."""
    basis = affine_nullspace(queries, n)
    rows = _affine_rows(np.atleast_1d(xs), n)
    return ~((rows @ basis.T) % 2).astype(bool).any(axis=1)
