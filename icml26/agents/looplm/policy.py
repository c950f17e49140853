"""Decoding for looped models and the policy interface the trainers and evaluators use.

:func:`generate` decodes a :class:`~icml26.agents.looplm.model.LoopedTransformer` in one of
three ways (Ouro): at a fixed loop ``t`` (the model truncated to ``t`` loops), at an exit
threshold (each token leaves at the first loop whose cumulative exit probability reaches ``q``)
or from the exit-weighted mixture of the per-loop logits; with or without the per-loop key/value
cache (the two give the same tokens).

A *loop policy* is anything with the methods of :class:`LoopedPolicy`: ``encode``/``decode``
between text and ids, ``generate`` and ``per_loop`` (per-loop log-probabilities of given
completions). :class:`LoopedPolicy` wraps the torch model here;
:class:`icml26.agents.looplm.hf.HFLoopedPolicy` wraps a local Hugging Face checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from icml26.agents.looplm.model import LoopedTransformer
from icml26.envs.looplm.tokenizer import CharTokenizer

DECODE_MODES = ("fixed", "threshold", "mix")


@dataclass
class Generation:
    """Decoded completions: ``tokens`` (B, N) (PAD after EOS), ``mask`` (B, N) True on generated
    tokens up to and including EOS, ``exit_loops`` (B, N) the 1-based loop each token left at."""

    tokens: Tensor
    mask: Tensor
    exit_loops: Tensor


@torch.no_grad()
def generate(
    model: LoopedTransformer,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    max_new_tokens: int,
    *,
    mode: str = "fixed",
    loop: int | None = None,
    threshold: float = 0.5,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> Generation:
    """Decode up to ``max_new_tokens`` after left-padded prompts (greedy when temperature is 0)."""
    if mode not in DECODE_MODES:
        raise ValueError(f"generate: mode must be one of {DECODE_MODES}, got {mode!r}")
    T = model.config.n_loops
    n_loops = T if loop is None else int(loop)
    if mode != "fixed" and loop is not None:
        raise ValueError(
            f"generate: loop is only for mode='fixed', got loop={loop} with mode={mode!r}"
        )
    if not 1 <= n_loops <= T:
        raise ValueError(f"generate: loop must lie in [1, {T}], got {loop}")
    if mode == "threshold" and not 0.0 < threshold <= 1.0:
        raise ValueError(f"generate: threshold must lie in (0, 1], got {threshold}")
    pad, eos = model.config.pad_id, model.config.eos_id
    b, dev = prompt_ids.shape[0], prompt_ids.device
    full_ids, full_mask = prompt_ids, prompt_mask.bool()
    cur, cache = prompt_ids, None
    finished = torch.zeros(b, dtype=torch.bool, device=dev)
    toks, exits = [], []
    for _ in range(int(max_new_tokens)):
        out = model(
            cur if use_cache else full_ids,
            full_mask,
            past_key_values=cache,
            use_cache=use_cache,
            n_loops=n_loops,
            return_per_loop_logits=mode != "fixed",
            return_exit_pdf=mode != "fixed",
        )
        if mode == "fixed":
            logits = out.logits[:, -1]
            exit_loop = torch.full((b,), float(n_loops), device=dev)
        else:
            per = out.per_loop_logits[:, -1]  # (B, T, V)
            pdf = out.exit_pdf[:, -1]  # (B, T)
            if mode == "mix":
                logits = (pdf[..., None] * per).sum(1)
                exit_loop = (pdf * torch.arange(1, T + 1, device=dev)).sum(-1)
            else:
                cdf = pdf.cumsum(-1)
                cdf[:, -1] = 1.0
                idx = (cdf >= threshold).float().argmax(-1)
                logits = per[torch.arange(b, device=dev), idx]
                exit_loop = idx.float() + 1
        if temperature > 0:
            probs = torch.softmax(logits.float() / temperature, dim=-1)
            if generator is not None and generator.device != probs.device:
                # a CPU generator drives the sampling of a model on another device
                tok = torch.multinomial(probs.cpu(), 1, generator=generator).to(dev).squeeze(-1)
            else:
                tok = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        else:
            tok = logits.argmax(-1)
        tok = torch.where(finished, torch.full_like(tok, pad), tok)
        toks.append(tok)
        exits.append(torch.where(finished, torch.zeros_like(exit_loop), exit_loop))
        newly_valid = ~finished
        finished = finished | (tok == eos)
        if bool(finished.all()):
            break
        full_ids = torch.cat([full_ids, tok[:, None]], dim=1)
        full_mask = torch.cat([full_mask, newly_valid[:, None]], dim=1)
        if use_cache:
            cache, cur = out.past_key_values, tok[:, None]
    tokens = torch.stack(toks, 1) if toks else torch.zeros(b, 0, dtype=torch.long, device=dev)
    mask = completion_mask(tokens, eos)
    return Generation(
        tokens, mask, torch.stack(exits, 1) if exits else torch.zeros(b, 0, device=dev)
    )


def completion_mask(tokens: Tensor, eos_id: int) -> Tensor:
    """True on tokens up to and including the first EOS of each row (padding only follows EOS)."""
    is_eos = (tokens == eos_id).long()
    return (is_eos.cumsum(1) - is_eos) == 0  # no EOS strictly before


def completion_labels(
    prompt_ids: Tensor, prompt_mask: Tensor, tokens: Tensor, mask: Tensor
) -> tuple[Tensor, Tensor, Tensor, slice]:
    """Teacher-forcing inputs for scoring completions: ``(ids, attn, labels, span)``; the log-prob
    of completion token ``j`` sits at position ``span.start + j`` of the per-position outputs."""
    ids = torch.cat([prompt_ids, tokens], dim=1)
    attn = torch.cat([prompt_mask.bool(), mask], dim=1)
    labels = torch.full_like(ids, -100)
    p, n = prompt_ids.shape[1], tokens.shape[1]
    labels[:, p - 1 : p - 1 + n] = torch.where(mask, tokens, torch.full_like(tokens, -100))
    return ids, attn, labels, slice(p - 1, p - 1 + n)


@dataclass
class PerLoop:
    """Per-loop quantities of completions (B, N, T): log-probs of the taken tokens, entropies,
    and the exit distribution (None for a model without an exit gate)."""

    log_probs: Tensor
    entropies: Tensor
    exit_pdf: Tensor | None


class LoopedPolicy:
    """Wraps a :class:`LoopedTransformer` and its :class:`CharTokenizer` as a loop policy; ids
    come back from :meth:`encode` on the model's device."""

    def __init__(
        self,
        model: LoopedTransformer,
        tokenizer: CharTokenizer | None = None,
        use_cache: bool = True,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer or CharTokenizer()
        self.use_cache = use_cache
        if self.tokenizer.vocab_size != model.config.vocab_size:
            raise ValueError(
                f"LoopedPolicy: tokenizer has {self.tokenizer.vocab_size} tokens, the model "
                f"{model.config.vocab_size}"
            )

    @property
    def n_loops(self) -> int:
        return self.model.config.n_loops

    @property
    def has_exit_gate(self) -> bool:
        return True

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def parameters(self) -> Any:
        return self.model.parameters()

    def encode(self, prompts: Sequence[str]) -> tuple[Tensor, Tensor]:
        """Left-padded prompt ids and mask."""
        ids, mask = self.tokenizer.pad_batch(
            [self.tokenizer.encode(p) for p in prompts], side="left"
        )
        dev = self.device
        return torch.from_numpy(ids).to(dev), torch.from_numpy(mask).to(dev)

    def decode(self, tokens: Tensor) -> list[str]:
        return [self.tokenizer.decode(row) for row in tokens.tolist()]

    def generate(
        self, prompt_ids: Tensor, prompt_mask: Tensor, max_new_tokens: int, **kw: Any
    ) -> Generation:
        kw.setdefault("use_cache", self.use_cache)
        return generate(self.model, prompt_ids, prompt_mask, max_new_tokens, **kw)

    def per_loop(
        self,
        prompt_ids: Tensor,
        prompt_mask: Tensor,
        gen: Generation,
        temperature: float = 1.0,
        with_exit_pdf: bool = True,
    ) -> PerLoop:
        ids, attn, labels, span = completion_labels(prompt_ids, prompt_mask, gen.tokens, gen.mask)
        out = self.model(
            ids,
            attn,
            return_per_loop_log_probs=True,
            return_exit_pdf=with_exit_pdf,
            log_prob_labels=labels,
            log_prob_temperature=temperature,
        )
        return PerLoop(
            out.per_loop_log_probs[:, span],
            out.per_loop_entropies[:, span],
            out.exit_pdf[:, span] if with_exit_pdf else None,
        )
