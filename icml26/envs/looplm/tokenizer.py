"""Character vocabulary shared by the reasoning tasks and the small looped transformer.

Token 0 is padding, token 1 ends an answer (EOS); every other token is one printable character.
The vocabulary covers digits, arithmetic signs, lower-case letters and the punctuation of the
word problems, so every prompt and gold answer of :mod:`icml26.envs.looplm.tasks` encodes exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

PAD_ID = 0
EOS_ID = 1
# Every character a prompt or an answer of the generators can contain.
CHARSET = "0123456789+-*=?., abcdefghijklmnopqrstuvwxyz'"


class CharTokenizer:
    """Maps text to token ids and back: ``[PAD, EOS] + list(CHARSET)``.

    ``decode`` stops at the first EOS and skips padding, so a generated completion decodes to
    the answer text a reward function compares with the gold answer.
    """

    pad_id = PAD_ID
    eos_id = EOS_ID

    def __init__(self, charset: str = CHARSET) -> None:
        if len(set(charset)) != len(charset):
            raise ValueError(f"CharTokenizer: charset has repeated characters: {charset!r}")
        self.charset = charset
        self._to_id = {c: i + 2 for i, c in enumerate(charset)}
        self._to_char = {i + 2: c for i, c in enumerate(charset)}

    @property
    def vocab_size(self) -> int:
        return len(self.charset) + 2

    def encode(self, text: str, add_eos: bool = False) -> list[int]:
        """Token ids of ``text`` (plus EOS); a character outside the charset is a ValueError."""
        try:
            ids = [self._to_id[c] for c in text]
        except KeyError as e:
            raise ValueError(
                f"CharTokenizer: character {e.args[0]!r} in {text!r} is not in the vocabulary "
                f"{self.charset!r}"
            ) from None
        return ids + [EOS_ID] if add_eos else ids

    def can_encode(self, text: str) -> bool:
        return all(c in self._to_id for c in text)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids`` up to the first EOS; padding is skipped, unknown ids raise ValueError."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS_ID:
                break
            if i == PAD_ID:
                continue
            c = self._to_char.get(i)
            if c is None:
                raise ValueError(
                    f"CharTokenizer: token id {i} is outside the vocabulary [0, {self.vocab_size})"
                )
            out.append(c)
        return "".join(out)

    def pad_batch(
        self, seqs: Sequence[Sequence[int]], length: int | None = None, side: str = "left"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Pad id lists to one array: ``(ids (B, length) int64, mask (B, length) bool)``."""
        if side not in ("left", "right"):
            raise ValueError(
                f"CharTokenizer.pad_batch: side must be 'left' or 'right', got {side!r}"
            )
        n = max((len(s) for s in seqs), default=0) if length is None else length
        ids = np.full((len(seqs), n), PAD_ID, dtype=np.int64)
        mask = np.zeros((len(seqs), n), dtype=bool)
        for b, s in enumerate(seqs):
            if len(s) > n:
                raise ValueError(f"CharTokenizer.pad_batch: sequence of length {len(s)} > {n}")
            if not s:
                continue
            if side == "left":
                ids[b, n - len(s) :] = s
                mask[b, n - len(s) :] = True
            else:
                ids[b, : len(s)] = s
                mask[b, : len(s)] = True
        return ids, mask
