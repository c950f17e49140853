"""A small Ouro-style looped transformer in torch (shared blocks applied T times, exit gate).

One stack of ``n_layers`` pre-norm decoder blocks is applied ``n_loops`` (T) times. After every
loop a shared final LayerNorm and a shared LM head give that loop's logits, and an exit gate
``Linear(d, 1)`` gives ``lambda_t = sigmoid(gate(h_t))``. The exit distribution is
``p_t = lambda_t prod_{j<t} (1 - lambda_j)`` with the last loop taking the remaining mass
(Ouro, arXiv 2510.25741). With ``inject_input`` the embedded input is added to the residual
stream again before every loop after the first (input injection, as in looped transformers that
learn iterative algorithms: Fan et al. 2024, Saunshi et al. 2025); off by default. ``forward``
takes the keyword arguments RLTT's trainer uses (``return_per_loop_log_probs``,
``return_per_loop_logits``, ``return_exit_pdf``, ``log_prob_labels``, ``log_prob_temperature``)
and returns a :class:`LoopedOutput`; ``n_loops`` (alias ``total_ut_steps``, Ouro's name)
truncates the loop count. A key/value cache holds one
entry per (loop, layer), since each loop attends over its own hidden states.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

KVCache = list[list[tuple[Tensor, Tensor]]]  # [loop][layer] -> (k, v), each (B, H, S, dh)


@dataclass
class LoopConfig:
    """Shape of a :class:`LoopedTransformer` (defaults: the RLTT card's CPU-scale model)."""

    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    n_loops: int = 4
    max_len: int = 96
    mlp_ratio: int = 4
    pad_id: int = 0
    eos_id: int = 1
    inject_input: bool = False

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "d_model",
            "n_heads",
            "n_layers",
            "n_loops",
            "max_len",
            "mlp_ratio",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"LoopConfig.{name}: expected a positive int, got {v!r}")
        if not isinstance(self.inject_input, bool):
            raise ValueError(f"LoopConfig.inject_input: expected a bool, got {self.inject_input!r}")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"LoopConfig: d_model {self.d_model} is not divisible by n_heads {self.n_heads}"
            )


@dataclass
class LoopedOutput:
    """What :meth:`LoopedTransformer.forward` returns (tensors are None unless asked for).

    ``logits`` (B, L, V) are the last loop's; ``per_loop_logits`` (B, L, T, V);
    ``per_loop_log_probs`` (B, L, T) of ``log_prob_labels`` at ``log_prob_temperature`` (0 where a
    label is negative); ``per_loop_entropies`` (B, L, T); ``exit_pdf`` (B, L, T) sums to 1 over T;
    ``past_key_values`` when ``use_cache``.
    """

    logits: Tensor
    per_loop_logits: Tensor | None = None
    per_loop_log_probs: Tensor | None = None
    per_loop_entropies: Tensor | None = None
    exit_pdf: Tensor | None = None
    past_key_values: KVCache | None = None


class Block(nn.Module):
    """Pre-norm decoder block: causal multi-head self-attention and a GELU MLP."""

    def __init__(self, cfg: LoopConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model),
            nn.GELU(),
            nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model),
        )

    def forward(
        self, x: Tensor, attn_mask: Tensor, past: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, n, self.n_heads, d // self.n_heads).transpose(1, 2) for t in (q, k, v))
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        x = x + self.mlp(self.ln2(x))
        return x, (k, v)


class LoopedTransformer(nn.Module):
    """Ouro-style looped decoder: ``n_layers`` shared blocks applied ``n_loops`` times."""

    def __init__(self, cfg: LoopConfig) -> None:
        super().__init__()
        self.config = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.exit_gate = nn.Linear(cfg.d_model, 1)
        self.apply(self._init)
        for blk in self.blocks:  # GPT-2 scaling of residual projections (by depth = loops x layers)
            for lin in (blk.proj, blk.mlp[2]):
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * cfg.n_layers * cfg.n_loops))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    @property
    def n_loops(self) -> int:
        return self.config.n_loops

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        *,
        past_key_values: KVCache | None = None,
        use_cache: bool = False,
        n_loops: int | None = None,
        total_ut_steps: int | None = None,
        return_per_loop_log_probs: bool = False,
        return_per_loop_logits: bool = False,
        return_exit_pdf: bool = False,
        log_prob_labels: Tensor | None = None,
        log_prob_temperature: float = 1.0,
    ) -> LoopedOutput:
        """Run ``n_loops`` (default T) loops over ``input_ids`` (B, L).

        ``attention_mask`` (B, past + L), True/1 for real tokens, handles left padding (positions
        count real tokens only). With ``past_key_values`` the new tokens attend over the cache.
        """
        if input_ids.dim() != 2:
            raise ValueError(
                f"LoopedTransformer: input_ids must be (B, L), got shape {tuple(input_ids.shape)}"
            )
        t_run = (
            n_loops
            if n_loops is not None
            else total_ut_steps
            if total_ut_steps is not None
            else self.config.n_loops
        )
        if not 1 <= t_run <= self.config.n_loops:
            raise ValueError(
                f"LoopedTransformer: n_loops must lie in [1, {self.config.n_loops}], got {t_run}"
            )
        if return_per_loop_log_probs and log_prob_labels is None:
            raise ValueError(
                "LoopedTransformer: return_per_loop_log_probs needs log_prob_labels (B, L)"
            )
        b, n = input_ids.shape
        past_len = 0 if past_key_values is None else past_key_values[0][0][0].shape[2]
        if attention_mask is None:
            attention_mask = torch.ones(b, past_len + n, dtype=torch.bool, device=input_ids.device)
        attention_mask = attention_mask.bool()
        if attention_mask.shape != (b, past_len + n):
            raise ValueError(
                f"LoopedTransformer: attention_mask must be (B, past + L) = {(b, past_len + n)}, "
                f"got {tuple(attention_mask.shape)}"
            )
        pos = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, past_len:]
        if int(pos.max()) >= self.config.max_len:
            raise ValueError(
                f"LoopedTransformer: sequence longer than max_len {self.config.max_len}"
            )
        q_idx = torch.arange(n, device=input_ids.device)[:, None] + past_len
        k_idx = torch.arange(past_len + n, device=input_ids.device)[None, :]
        mask = (k_idx <= q_idx)[None, None] & attention_mask[:, None, None, :]
        mask = (
            mask | (k_idx == q_idx)[None, None]
        )  # a padding query attends to itself (no empty row)

        e = self.embed(input_ids) + self.pos(pos)
        h = e
        new_cache: KVCache = []
        loop_logits, gates = [], []
        for t in range(t_run):
            if t and self.config.inject_input:  # input injection: the embedded prompt again
                h = h + e
            layer_cache = []
            for i, blk in enumerate(self.blocks):
                past = None if past_key_values is None else past_key_values[t][i]
                h, kv = blk(h, mask, past)
                layer_cache.append(kv)
            new_cache.append(layer_cache)
            hn = self.norm(h)
            loop_logits.append(self.head(hn))
            gates.append(self.exit_gate(hn).squeeze(-1))
        per_loop_logits = torch.stack(loop_logits, dim=2)  # (B, L, T, V)
        out = LoopedOutput(logits=loop_logits[-1], past_key_values=new_cache if use_cache else None)
        if return_per_loop_logits:
            out.per_loop_logits = per_loop_logits
        if return_exit_pdf:
            out.exit_pdf = exit_distribution(torch.stack(gates, dim=-1))
        if return_per_loop_log_probs:
            assert log_prob_labels is not None
            lp = torch.log_softmax(per_loop_logits.float() / log_prob_temperature, dim=-1)
            labels = log_prob_labels.clamp(min=0)[:, :, None, None].expand(-1, -1, t_run, 1)
            valid = (log_prob_labels >= 0)[:, :, None]
            out.per_loop_log_probs = lp.gather(-1, labels).squeeze(-1) * valid
            out.per_loop_entropies = -(lp.exp() * lp).sum(-1)
        return out

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> None:
        """Write config and weights to ``path`` (a ``torch.save`` file), atomically."""
        from icml26._paths import atomic_write

        state = {"config": dataclasses.asdict(self.config), "state_dict": self.state_dict()}
        atomic_write(path, lambda tmp: torch.save(state, tmp))

    @classmethod
    def load(cls, path: str | Path, map_location: str = "cpu") -> LoopedTransformer:
        """A model from a file written by :meth:`save`."""
        blob = torch.load(path, map_location=map_location, weights_only=True)
        model = cls(LoopConfig(**blob["config"]))
        model.load_state_dict(blob["state_dict"])
        return model


def exit_distribution(gate_logits: Tensor) -> Tensor:
    """Ouro's exit distribution from per-loop gate logits (..., T): ``p_t = lambda_t
    prod_{j<t}(1 - lambda_j)`` for t < T and the remaining mass ``prod_{j<T}(1 - lambda_j)`` at T."""
    lam = torch.sigmoid(gate_logits)
    t = lam.shape[-1]
    log_survive = torch.cumsum(F.logsigmoid(-gate_logits), dim=-1)  # log prod_{j<=t}(1 - lambda_j)
    prev = torch.cat([torch.zeros_like(log_survive[..., :1]), log_survive[..., :-1]], dim=-1)
    pdf = lam * prev.exp()
    if t > 1:
        pdf = torch.cat([pdf[..., :-1], prev[..., -1:].exp()], dim=-1)
    else:
        pdf = torch.ones_like(lam)
    return pdf


def ouro_loss(
    model: Any,
    input_ids: Tensor,
    attention_mask: Tensor,
    labels: Tensor,
    beta_entropy: float = 0.05,
) -> tuple[Tensor, dict[str, float]]:
    """Ouro's pretraining loss on labelled tokens: ``sum_t p_t CE_t - beta_H H(p)``, averaged over
    tokens whose label is >= 0 (``labels`` are the next tokens, -100 elsewhere)."""
    out = model(
        input_ids,
        attention_mask,
        return_per_loop_log_probs=True,
        return_exit_pdf=True,
        log_prob_labels=labels,
    )
    valid = (labels >= 0).float()
    ce = -out.per_loop_log_probs  # (B, L, T)
    p = out.exit_pdf
    ent = -(p * torch.log(p.clamp_min(1e-12))).sum(-1)
    per_tok = (p * ce).sum(-1) - beta_entropy * ent
    n = valid.sum().clamp_min(1.0)
    loss = (per_tok * valid).sum() / n
    with torch.no_grad():
        stats = {
            "loss": float(loss),
            "ce_final": float((ce[..., -1] * valid).sum() / n),
            "exit_entropy": float((ent * valid).sum() / n),
        }
    return loss, stats
