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
        raise ValueError(f"looplm task knob {name!r}: expected an int in [{lo}, {hi}], got {value!r}")
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
        if not isinstance(alphabet, str) or len(alphabet) < 2 or not alphabet.isalpha() \
                or not alphabet.islower() or len(set(alphabet)) != len(alphabet):
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
        if not isinstance(ops, str) or not ops or any(c not in self._TEMPLATES for c in ops) \
                or len(set(ops)) != len(ops):
            raise ValueError(f"looplm task knob 'ops': expected distinct characters of '+-*', got {ops!r}")
        self.ops = ops
        self.reverse = bool(reverse)
        w = len(str(self.max_value))
        longest = max(len(n) for n in _NAMES), max(len(o) for o in _OBJECTS)
        self.max_prompt_len = max(
            len(t.format(n="x" * longest[0], a="9" * w, b="9" * w, o="x" * longest[1]))
            for op, t in self._TEMPLATES.items() if op in ops
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


GENERATORS: dict[str, type[TaskGenerator]] = {
    g.name: g for g in (Addition, ChainedSum, Multiplication, Parity, Counting, WordProblem)
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

    def __init__(self, generator: TaskGenerator, split: str = "train", test_fraction: float = 0.2,
                 max_tries: int = 10_000) -> None:
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
