"""Seeded generators of verifiable reasoning problems, with difficulty knobs and a train/test split.

Each generator draws a :class:`Problem` (prompt text, gold answer text in the output format,
numeric value) from a NumPy generator. Numeric answers are written with their digits reversed by
default (``reverse=True``), the format in which a small causal model can add digit by digit from
the least significant one (as in the RLTT method card's CPU-scale setup).

Train and held-out test problems are disjoint *as problems*, not only as seeds: a problem belongs
to the test split when a stable hash of its prompt falls below ``test_fraction`` (default 0.2),
and each split's sampler rejects the other split's problems.

Generators (``make_generator(name, **knobs)``):

* ``addition``: ``a+b=`` with ``digits``-digit operands (``terms`` operands).
* ``chained_sum``: the same with ``terms=3`` one-digit operands by default.
* ``multiplication``: ``a*b=`` with ``digits_a`` x ``digits_b`` digits.
* ``parity``: ``parity 01101=`` -> ``1`` (number of ones mod 2), ``length`` bits.
* ``counting``: ``count a in abcab=`` -> ``2``, a ``length``-letter string over ``alphabet``.
* ``word_problem``: short sentences with ``+``, ``-`` or ``*`` on numbers up to ``max_value``.
* ``pointer_chain``: ``b=7,q=b,c=q.c=`` -> ``7``, chains of ``length`` variables (one look-up per
  link: a task where loop depth matters).
* ``permutation_power``: ``31402 4 3=`` -> ``p^3(4)``, ``k`` chained look-ups in a permutation.
* ``permutation_hops``: ``dbaec.a`` -> ``p(p(a))``, a permutation of ``size`` letters and a start
  letter placed last, so each look-up is exactly one attention hop (one loop of a one-block model).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

SPLITS = ("train", "test")


@dataclass(frozen=True)
class Problem:
    """One problem: ``prompt`` text, ``answer`` (gold text, in the output format), ``value``."""

    prompt: str
    answer: str
    value: int
    task: str


def prompt_hash(prompt: str) -> float:
    """A stable number in [0, 1) from the prompt text (BLAKE2b), used for the train/test split."""
    h = hashlib.blake2b(prompt.encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") / 2.0**64


def split_of(prompt: str, test_fraction: float) -> str:
    """``"test"`` when the prompt's hash falls below ``test_fraction``, else ``"train"``."""
    return "test" if prompt_hash(prompt) < test_fraction else "train"


def _fmt(value: int, reverse: bool) -> str:
    s = str(value)
    return s[::-1] if reverse else s


def _operand(rng: np.random.Generator, digits: int) -> int:
    lo = 0 if digits == 1 else 10 ** (digits - 1)
    return int(rng.integers(lo, 10**digits))


def _check_int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ValueError(
            f"looplm task knob {name!r}: expected an int in [{lo}, {hi}], got {value!r}"
        )
    return int(value)


class TaskGenerator:
    """Base class: ``sample(rng)`` draws a problem; ``max_prompt_len`` / ``max_answer_len`` bound
    the text lengths (the answer bound excludes EOS); ``score(text, problem)`` is exact match."""

    name = "base"
    max_prompt_len: int
    max_answer_len: int

    def sample(self, rng: np.random.Generator) -> Problem:
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        return {}

    def score(self, completion: str, problem: Problem) -> float:
        """1.0 when the completion (surrounding spaces stripped) equals the gold answer, else 0.0.

        Anything that is not a string, or a string that does not parse, scores 0.0: a malformed
        answer is a wrong answer, never an error.
        """
        if not isinstance(completion, str):
            return 0.0
        return 1.0 if completion.strip() == problem.answer else 0.0

    def parse(self, completion: str) -> int | None:
        """The numeric value a completion states (undoing digit reversal), or None if malformed."""
        if not isinstance(completion, str):
            return None
        s = completion.strip()
        if not s.isdigit() or not s.isascii():
            return None
        return int(s[::-1] if getattr(self, "reverse", False) else s)


class Addition(TaskGenerator):
    """``a+b=`` (or more terms); the answer is the sum, digits reversed by default."""

    name = "addition"

    def __init__(self, digits: int = 2, terms: int = 2, reverse: bool = True) -> None:
        self.digits = _check_int("digits", digits, 1, 12)
        self.terms = _check_int("terms", terms, 2, 8)
        self.reverse = bool(reverse)
        self.max_prompt_len = self.terms * self.digits + self.terms
        self.max_answer_len = len(str(self.terms * (10**self.digits - 1)))

    def config(self) -> dict[str, Any]:
        return {"digits": self.digits, "terms": self.terms, "reverse": self.reverse}

    def sample(self, rng: np.random.Generator) -> Problem:
        xs = [_operand(rng, self.digits) for _ in range(self.terms)]
        total = sum(xs)
        return Problem("+".join(map(str, xs)) + "=", _fmt(total, self.reverse), total, self.name)


class ChainedSum(Addition):
    """Sums of ``terms`` (default 3) one-digit numbers: ``3+9+4=``."""

    name = "chained_sum"

    def __init__(self, digits: int = 1, terms: int = 3, reverse: bool = True) -> None:
        super().__init__(digits=digits, terms=terms, reverse=reverse)


class Multiplication(TaskGenerator):
    """``a*b=`` with ``digits_a`` x ``digits_b`` digits; the product, reversed by default."""

    name = "multiplication"

    def __init__(self, digits_a: int = 2, digits_b: int = 1, reverse: bool = True) -> None:
        self.digits_a = _check_int("digits_a", digits_a, 1, 8)
        self.digits_b = _check_int("digits_b", digits_b, 1, 8)
        self.reverse = bool(reverse)
        self.max_prompt_len = self.digits_a + self.digits_b + 2
        self.max_answer_len = self.digits_a + self.digits_b

    def config(self) -> dict[str, Any]:
        return {"digits_a": self.digits_a, "digits_b": self.digits_b, "reverse": self.reverse}

    def sample(self, rng: np.random.Generator) -> Problem:
        a, b = _operand(rng, self.digits_a), _operand(rng, self.digits_b)
        return Problem(f"{a}*{b}=", _fmt(a * b, self.reverse), a * b, self.name)


class Parity(TaskGenerator):
    """``parity 01101=`` -> ``1``: the number of ones in ``length`` random bits, mod 2."""

    name = "parity"

    def __init__(self, length: int = 8) -> None:
        self.length = _check_int("length", length, 1, 40)
        self.reverse = False
        self.max_prompt_len = len("parity =") + self.length
        self.max_answer_len = 1

    def config(self) -> dict[str, Any]:
        return {"length": self.length}

    def sample(self, rng: np.random.Generator) -> Problem:
        bits = rng.integers(0, 2, size=self.length)
        value = int(bits.sum() % 2)
        return Problem("parity " + "".join(map(str, bits)) + "=", str(value), value, self.name)


class Counting(TaskGenerator):
    """``count a in abcab=`` -> ``2``: occurrences of one letter in a random string."""

    name = "counting"

    def __init__(self, length: int = 8, alphabet: str = "abc", reverse: bool = True) -> None:
        self.length = _check_int("length", length, 1, 40)
        if (
            not isinstance(alphabet, str)
            or len(alphabet) < 2
            or not alphabet.isalpha()
            or not alphabet.islower()
            or len(set(alphabet)) != len(alphabet)
        ):
            raise ValueError(
                f"looplm task knob 'alphabet': expected >= 2 distinct lower-case letters, got {alphabet!r}"
            )
        self.alphabet = alphabet
        self.reverse = bool(reverse)
        self.max_prompt_len = len("count a in =") + self.length
        self.max_answer_len = len(str(self.length))

    def config(self) -> dict[str, Any]:
        return {"length": self.length, "alphabet": self.alphabet, "reverse": self.reverse}

    def sample(self, rng: np.random.Generator) -> Problem:
        letters = list(self.alphabet)
        s = "".join(letters[i] for i in rng.integers(0, len(letters), size=self.length))
        target = letters[int(rng.integers(0, len(letters)))]
        value = s.count(target)
        return Problem(f"count {target} in {s}=", _fmt(value, self.reverse), value, self.name)


_NAMES = ("ann", "bob", "cal", "dee", "eve", "fay", "gus", "hal")
_OBJECTS = ("apple", "pen", "cup", "book", "coin", "egg")


class WordProblem(TaskGenerator):
    """One-sentence story problems: ``ann has 7 pens and gets 5 more. how many pens?`` -> ``21``
    (12 reversed). ``ops`` picks among ``+`` (gets more), ``-`` (gives away) and ``*`` (bags of)."""

    name = "word_problem"
    _TEMPLATES = {
        "+": "{n} has {a} {o}s and gets {b} more. how many {o}s?",
        "-": "{n} has {a} {o}s and gives away {b}. how many {o}s are left?",
        "*": "{n} buys {a} bags of {b} {o}s. how many {o}s?",
    }

    def __init__(self, max_value: int = 20, ops: str = "+-", reverse: bool = True) -> None:
        self.max_value = _check_int("max_value", max_value, 2, 10**6)
        if (
            not isinstance(ops, str)
            or not ops
            or any(c not in self._TEMPLATES for c in ops)
            or len(set(ops)) != len(ops)
        ):
            raise ValueError(
                f"looplm task knob 'ops': expected distinct characters of '+-*', got {ops!r}"
            )
        self.ops = ops
        self.reverse = bool(reverse)
        w = len(str(self.max_value))
        longest = max(len(n) for n in _NAMES), max(len(o) for o in _OBJECTS)
        self.max_prompt_len = max(
            len(t.format(n="x" * longest[0], a="9" * w, b="9" * w, o="x" * longest[1]))
            for op, t in self._TEMPLATES.items()
            if op in ops
        )
        self.max_answer_len = len(str(self.max_value**2 if "*" in ops else 2 * self.max_value))

    def config(self) -> dict[str, Any]:
        return {"max_value": self.max_value, "ops": self.ops, "reverse": self.reverse}

    def sample(self, rng: np.random.Generator) -> Problem:
        op = self.ops[int(rng.integers(0, len(self.ops)))]
        a = int(rng.integers(1, self.max_value + 1))
        b = int(rng.integers(1, self.max_value + 1))
        if op == "-" and b > a:
            a, b = b, a
        value = {"+": a + b, "-": a - b, "*": a * b}[op]
        n = _NAMES[int(rng.integers(0, len(_NAMES)))]
        o = _OBJECTS[int(rng.integers(0, len(_OBJECTS)))]
        prompt = self._TEMPLATES[op].format(n=n, a=a, b=b, o=o)
        return Problem(prompt, _fmt(value, self.reverse), value, self.name)


_VARS = "abcdefghijklmnopqrstuvwxyz"


class PointerChain(TaskGenerator):
    """Variable chains: ``b=7,q=b,d=4,x=d,c=q.c=`` -> ``7`` (c = q = b = 7: three look-ups).

    ``chains`` chains of ``length`` single-letter variables each, over distinct letters: the first
    variable of a chain is bound to a digit (distinct digits across chains), each later one to the
    previous variable. All bindings are shuffled; the query names one variable, and answering it
    takes as many look-ups as its position in its chain (``depth``). ``query="end"`` always asks
    for a chain's last variable (depth = ``length``); ``query="any"`` draws the depth uniformly from
    1..``length``. Each look-up is one attention hop, so the task needs depth (more loops).
    """

    name = "pointer_chain"

    def __init__(self, length: int = 3, chains: int = 2, query: str = "any") -> None:
        self.length = _check_int("length", length, 1, 12)
        self.chains = _check_int("chains", chains, 1, 10)
        if self.length * self.chains > len(_VARS):
            raise ValueError(
                f"looplm task pointer_chain: length x chains = {self.length * self.chains} "
                f"variables, more than the {len(_VARS)} letters"
            )
        if query not in ("any", "end"):
            raise ValueError(f"looplm task knob 'query': expected 'any' or 'end', got {query!r}")
        self.query = query
        self.reverse = False
        n = self.length * self.chains
        self.max_prompt_len = 4 * n - 1 + 3  # "x=y" bindings joined by "," then ".q="
        self.max_answer_len = 1

    def config(self) -> dict[str, Any]:
        return {"length": self.length, "chains": self.chains, "query": self.query}

    def sample(self, rng: np.random.Generator) -> Problem:
        names = [_VARS[i] for i in rng.permutation(len(_VARS))[: self.length * self.chains]]
        digits = [int(d) for d in rng.permutation(10)[: self.chains]]
        bindings, chains = [], []
        for c in range(self.chains):
            chain = names[c * self.length : (c + 1) * self.length]
            chains.append(chain)
            bindings.append(f"{chain[0]}={digits[c]}")
            bindings += [f"{chain[i]}={chain[i - 1]}" for i in range(1, self.length)]
        order = rng.permutation(len(bindings))
        c = int(rng.integers(0, self.chains))
        depth = self.length if self.query == "end" else int(rng.integers(1, self.length + 1))
        q = chains[c][depth - 1]
        prompt = ",".join(bindings[i] for i in order) + f".{q}="
        return Problem(prompt, str(digits[c]), digits[c], self.name)

    @staticmethod
    def depth(problem: Problem) -> int:
        """How many look-ups the problem's query takes (read back from its prompt)."""
        body, q = problem.prompt[:-1].split(".")
        binding = dict(b.split("=") for b in body.split(","))
        v, d = q, 0
        while not v.isdigit():
            v, d = binding[v], d + 1
        return d


class PermutationPower(TaskGenerator):
    """``31402 4 3=`` -> ``0``: a permutation ``p`` of 0..size-1 (``p[i]`` is the i-th digit), a start
    ``x`` and a power ``k``; the answer is ``p^k(x) = p(p(...p(x)))``. Each application is one
    look-up (an attention hop), so ``k`` look-ups must happen in sequence: the task needs depth.
    ``power="any"`` draws ``k`` uniformly from 1..``max_power``, ``"max"`` always uses ``max_power``.
    """

    name = "permutation_power"

    def __init__(self, size: int = 8, max_power: int = 4, power: str = "any") -> None:
        self.size = _check_int("size", size, 2, 10)
        self.max_power = _check_int("max_power", max_power, 1, 9)
        if power not in ("any", "max"):
            raise ValueError(f"looplm task knob 'power': expected 'any' or 'max', got {power!r}")
        self.power = power
        self.reverse = False
        self.max_prompt_len = self.size + 5
        self.max_answer_len = 1

    def config(self) -> dict[str, Any]:
        return {"size": self.size, "max_power": self.max_power, "power": self.power}

    def sample(self, rng: np.random.Generator) -> Problem:
        perm = [int(v) for v in rng.permutation(self.size)]
        x = int(rng.integers(0, self.size))
        k = self.max_power if self.power == "max" else int(rng.integers(1, self.max_power + 1))
        v = x
        for _ in range(k):
            v = perm[v]
        return Problem(f"{''.join(map(str, perm))} {x} {k}=", str(v), v, self.name)

    @staticmethod
    def depth(problem: Problem) -> int:
        """The power ``k`` of the problem (its number of look-ups), read back from the prompt."""
        return int(problem.prompt[:-1].split(" ")[2])


class PermutationHops(TaskGenerator):
    """``dbaec.a`` -> ``e``: a permutation ``p`` of the first ``size`` letters (the i-th letter of the
    prompt is ``p`` of the i-th letter of the alphabet), a dot, and a start letter ``x``; the answer
    is ``p^hops(x)``, one letter.

    The start letter comes last, so the position that predicts the answer holds ``x`` itself and
    each application of ``p`` is one attention hop (read the letter at the position ``x`` names).
    Problems are drawn so that ``x, p(x), ..., p^hops(x)`` are distinct: answering ``x`` or an
    intermediate letter is never right (no short cycle gives the answer away), and with many
    letters one attention layer cannot compose two look-ups, so ``hops`` look-ups need ``hops``
    layers (loops of a one-block looped model).
    """

    name = "permutation_hops"
    _LETTERS = "abcdefghijklmnopqrstuvwxyz"

    def __init__(self, size: int = 16, hops: int = 2) -> None:
        self.size = _check_int("size", size, 3, 26)
        self.hops = _check_int("hops", hops, 1, self.size - 1)
        self.reverse = False
        self.max_prompt_len = self.size + 2
        self.max_answer_len = 1

    def config(self) -> dict[str, Any]:
        return {"size": self.size, "hops": self.hops}

    def sample(self, rng: np.random.Generator) -> Problem:
        while True:  # rejection: the orbit of x has hops + 1 distinct letters
            perm = [int(v) for v in rng.permutation(self.size)]
            x = int(rng.integers(0, self.size))
            orbit = [x]
            for _ in range(self.hops):
                orbit.append(perm[orbit[-1]])
            if len(set(orbit)) == self.hops + 1:
                break
        a = self._LETTERS
        prompt = "".join(a[i] for i in perm) + "." + a[x]
        return Problem(prompt, a[orbit[-1]], orbit[-1], self.name)

    def parse(self, completion: str) -> int | None:
        """The letter's index in the alphabet, or None unless the completion is one known letter."""
        if not isinstance(completion, str):
            return None
        s = completion.strip()
        return self._LETTERS.index(s) if len(s) == 1 and s in self._LETTERS[: self.size] else None


GENERATORS: dict[str, type[TaskGenerator]] = {
    g.name: g
    for g in (
        Addition,
        ChainedSum,
        Multiplication,
        Parity,
        Counting,
        WordProblem,
        PointerChain,
        PermutationPower,
        PermutationHops,
    )
}


def make_generator(name: str, **knobs: Any) -> TaskGenerator:
    """A generator by name with its difficulty knobs, e.g. ``make_generator("addition", digits=3)``."""
    if name not in GENERATORS:
        raise ValueError(f"looplm: unknown task {name!r}; expected one of {sorted(GENERATORS)}")
    try:
        return GENERATORS[name](**knobs)
    except TypeError as e:
        raise TypeError(f"looplm task {name!r}: bad knobs {knobs}: {e}") from None


class ProblemSampler:
    """Draws problems of one generator from one split (train or held-out test), seeded.

    ``sample(rng)`` rejects problems of the other split; ``batch(n, seed)`` draws ``n`` problems
    from a fresh generator seeded with ``seed`` (the batched entry point trainers use).
    """

    def __init__(
        self,
        generator: TaskGenerator,
        split: str = "train",
        test_fraction: float = 0.2,
        max_tries: int = 10_000,
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"looplm: split must be one of {SPLITS}, got {split!r}")
        if not 0.0 < float(test_fraction) < 1.0:
            raise ValueError(f"looplm: test_fraction must lie in (0, 1), got {test_fraction!r}")
        self.generator, self.split = generator, split
        self.test_fraction, self.max_tries = float(test_fraction), int(max_tries)

    def sample(self, rng: np.random.Generator) -> Problem:
        for _ in range(self.max_tries):
            p = self.generator.sample(rng)
            if split_of(p.prompt, self.test_fraction) == self.split:
                return p
        raise RuntimeError(
            f"looplm: no {self.split!r} problem of {self.generator.name} {self.generator.config()} in "
            f"{self.max_tries} draws; the problem space is too small for test_fraction={self.test_fraction}"
        )

    def batch(self, n: int, seed: int | np.random.Generator) -> list[Problem]:
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        return [self.sample(rng) for _ in range(int(n))]


def describe(generator: TaskGenerator) -> Mapping[str, Any]:
    return {"task": generator.name, **generator.config()}
