"""Train a Hugging Face causal LM (for example a local Ouro checkpoint) with GRPO or RLTT.

Nothing is downloaded: :func:`load_hf_checkpoint` reads a local directory only
(``local_files_only=True``) and fails with a clear error if it does not exist. transformers is an
optional dependency (extra ``looplm``), imported when this module's functions run.

:class:`HFLoopedPolicy` turns any such model into a loop policy for
:class:`~icml26.agents.looplm.rl.LoopRLTrainer` and
:func:`~icml26.agents.looplm.evaluation.evaluate_policy`:

* a model whose ``forward`` accepts RLTT's keywords (``return_per_loop_log_probs``,
  ``return_exit_pdf``, ``log_prob_labels``, ``log_prob_temperature``, as RLTT's modified Ouro
  does) is called once per batch;
* any other model is run once per loop count ``t = 1..T`` with ``config.total_ut_steps = t``
  (Ouro's name for the loop count), T times slower, as RLTT's trainer does; it then has no exit
  distribution, so ``omega="exit_pdf"`` is refused and the other weights work. A model without
  ``total_ut_steps`` is a plain LM with T = 1 (RLTT then reduces to GRPO without the clip).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from icml26._entry_points import require
from icml26.agents.looplm.policy import Generation, PerLoop, completion_labels, completion_mask

LOOP_ATTR = "total_ut_steps"


def load_hf_checkpoint(
    path: str | Path, *, trust_remote_code: bool = False, torch_dtype: Any = None
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a local checkpoint directory; never downloads.

    Ouro checkpoints ship their modelling code, so they need ``trust_remote_code=True`` (only
    for a directory you trust)."""
    transformers = require("transformers", "looplm", "loading a Hugging Face checkpoint")
    p = Path(path).expanduser()
    if not p.is_dir():
        raise FileNotFoundError(
            f"load_hf_checkpoint: {str(p)!r} is not a local checkpoint directory "
            "(nothing is downloaded; point to a folder with config.json)"
        )
    kw: dict[str, Any] = {"local_files_only": True, "trust_remote_code": trust_remote_code}
    if torch_dtype is not None:
        kw["dtype"] = torch_dtype
    model = transformers.AutoModelForCausalLM.from_pretrained(str(p), **kw)
    tok = transformers.AutoTokenizer.from_pretrained(
        str(p), local_files_only=True, trust_remote_code=trust_remote_code
    )
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok


class HFLoopedPolicy:
    """A loop policy over a Hugging Face causal LM and its tokenizer (see the module docstring)."""

    def __init__(self, model: Any, tokenizer: Any, n_loops: int | None = None) -> None:
        self.model, self.tokenizer = model, tokenizer
        params = inspect.signature(model.forward).parameters
        self.native = "return_per_loop_log_probs" in params
        self.native_exit = self.native and "return_exit_pdf" in params
        self.takes_positions = "position_ids" in params
        cfg_loops = getattr(model.config, LOOP_ATTR, None)
        self.n_loops = int(n_loops if n_loops is not None else cfg_loops or 1)
        if self.n_loops > 1 and not self.native and cfg_loops is None:
            raise ValueError(
                f"HFLoopedPolicy: n_loops={self.n_loops} but the model has no config.{LOOP_ATTR} "
                "and no per-loop outputs; it cannot be truncated at a loop"
            )
        self.eos_id = tokenizer.eos_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        if self.eos_id is None:
            raise ValueError("HFLoopedPolicy: the tokenizer has no eos_token_id")

    @property
    def has_exit_gate(self) -> bool:
        return self.native_exit

    def parameters(self) -> Any:
        return self.model.parameters()

    def encode(self, prompts: Sequence[str]) -> tuple[Tensor, Tensor]:
        enc = self.tokenizer(
            list(prompts),
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
        )
        return enc["input_ids"], enc["attention_mask"].bool()

    def decode(self, tokens: Tensor) -> list[str]:
        mask = completion_mask(tokens, self.eos_id)
        rows = [
            [t for t, m in zip(r, mr) if m and t != self.eos_id]
            for r, mr in zip(tokens.tolist(), mask.tolist())
        ]
        return self.tokenizer.batch_decode(rows, skip_special_tokens=True)

    def _call(self, ids: Tensor, attn: Tensor, **kw: Any) -> Any:
        """The model on a left-padded batch; positions count real tokens when the model takes them."""
        if self.takes_positions:
            kw["position_ids"] = (attn.long().cumsum(-1) - 1).clamp(min=0)
        return self.model(input_ids=ids, attention_mask=attn.long(), **kw)

    @contextlib.contextmanager
    def loops(self, t: int | None) -> Iterator[None]:
        """Temporarily run the model with ``config.total_ut_steps = t`` (no-op for None)."""
        if t is None or not hasattr(self.model.config, LOOP_ATTR):
            yield
            return
        old = getattr(self.model.config, LOOP_ATTR)
        setattr(self.model.config, LOOP_ATTR, int(t))
        try:
            yield
        finally:
            setattr(self.model.config, LOOP_ATTR, old)

    @torch.no_grad()
    def generate(
        self,
        prompt_ids: Tensor,
        prompt_mask: Tensor,
        max_new_tokens: int,
        *,
        mode: str = "fixed",
        loop: int | None = None,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
        **_: Any,
    ) -> Generation:
        """Decode at the last loop (or ``loop``); sampling is seeded by ``generator``. No cache: each
        token re-reads the whole sequence (general, slow on long outputs)."""
        if mode != "fixed":
            raise ValueError(
                f"HFLoopedPolicy.generate: only mode='fixed' is supported, got {mode!r}"
            )
        b = prompt_ids.shape[0]
        ids, attn = prompt_ids, prompt_mask.long()
        finished = torch.zeros(b, dtype=torch.bool)
        toks = []
        with self.loops(loop):
            for _ in range(int(max_new_tokens)):
                logits = self._call(ids, attn).logits[:, -1].float()
                if temperature > 0:
                    tok = torch.multinomial(
                        torch.softmax(logits / temperature, -1), 1, generator=generator
                    )[:, 0]
                else:
                    tok = logits.argmax(-1)
                tok = torch.where(finished, torch.full_like(tok, self.pad_id), tok)
                toks.append(tok)
                valid = ~finished
                finished = finished | (tok == self.eos_id)
                if bool(finished.all()):
                    break
                ids = torch.cat([ids, tok[:, None]], 1)
                attn = torch.cat([attn, valid[:, None].long()], 1)
        tokens = torch.stack(toks, 1) if toks else torch.zeros(b, 0, dtype=torch.long)
        mask = completion_mask(tokens, self.eos_id)
        depth = float(loop if loop is not None else self.n_loops)
        return Generation(tokens, mask, torch.full(tokens.shape, depth) * mask)

    def per_loop(
        self,
        prompt_ids: Tensor,
        prompt_mask: Tensor,
        gen: Generation,
        temperature: float = 1.0,
        with_exit_pdf: bool = True,
    ) -> PerLoop:
        ids, attn, labels, span = completion_labels(prompt_ids, prompt_mask, gen.tokens, gen.mask)
        if self.native:
            kw: dict[str, Any] = {
                "return_per_loop_log_probs": True,
                "log_prob_labels": labels,
                "log_prob_temperature": temperature,
            }
            if self.native_exit:
                kw["return_exit_pdf"] = with_exit_pdf
            out = self._call(ids, attn, **kw)
            pdf = getattr(out, "exit_pdf", None) if with_exit_pdf else None
            return PerLoop(
                out.per_loop_log_probs[:, span],
                out.per_loop_entropies[:, span],
                None if pdf is None else pdf[:, span],
            )
        lps, ents = [], []
        valid = labels >= 0
        for t in range(1, self.n_loops + 1):
            with self.loops(t if self.n_loops > 1 else None):
                logits = self._call(ids, attn).logits.float()
            lp = torch.log_softmax(logits / temperature, -1)
            lps.append(lp.gather(-1, labels.clamp(min=0)[..., None])[..., 0] * valid)
            ents.append(-(lp.exp() * lp).sum(-1))
        return PerLoop(torch.stack(lps, -1)[:, span], torch.stack(ents, -1)[:, span], None)
