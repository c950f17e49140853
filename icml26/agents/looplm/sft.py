"""Supervised warm start of a looped transformer with the Ouro loss, cached on disk by config."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml26.agents.looplm.model import LoopConfig, LoopedTransformer, ouro_loss
from icml26.envs.looplm.tasks import Problem, ProblemSampler
from icml26.envs.looplm.tokenizer import CharTokenizer


@dataclass
class WarmStartConfig:
    """Supervised warm start: ``steps`` AdamW steps on batches of train problems (prompt +
    answer + EOS, loss on the answer tokens), Ouro loss with exit-entropy weight ``beta_entropy``."""

    steps: int = 400
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 20
    weight_decay: float = 0.01
    beta_entropy: float = 0.05
    grad_clip: float = 1.0


def supervised_batch(problems: list[Problem], tok: CharTokenizer) -> tuple[torch.Tensor, ...]:
    """Right-padded ``(ids, mask, labels)`` with labels (next tokens) on answer tokens and EOS only."""
    seqs, starts = [], []
    for p in problems:
        prompt = tok.encode(p.prompt)
        seqs.append(prompt + tok.encode(p.answer, add_eos=True))
        starts.append(len(prompt))
    ids, mask = tok.pad_batch(seqs, side="right")
    ids_t, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
    labels = torch.full_like(ids_t, -100)
    for b, (s, start) in enumerate(zip(seqs, starts)):
        labels[b, start - 1: len(s) - 1] = ids_t[b, start: len(s)]
    return ids_t, mask_t, labels


def warm_start(model: LoopedTransformer, sampler: ProblemSampler, cfg: WarmStartConfig, seed: int,
               progress: bool = True) -> dict[str, Any]:
    """Train ``model`` in place with the Ouro loss on problems drawn from ``sampler`` (seeded)."""
    from tqdm.auto import tqdm

    tok = CharTokenizer()
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, cfg.warmup)))
    losses, t0 = [], time.perf_counter()
    model.train()
    for _ in tqdm(range(cfg.steps), desc="warm start", disable=not progress, leave=False):
        ids, mask, labels = supervised_batch(sampler.batch(cfg.batch_size, rng), tok)
        loss, stats = ouro_loss(model, ids, mask, labels, cfg.beta_entropy)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        losses.append(stats["ce_final"])
    return {"ce_final_curve": losses, "seconds": time.perf_counter() - t0}


def cached_warm_start(model_cfg: LoopConfig, sampler: ProblemSampler, cfg: WarmStartConfig, seed: int,
                      task_key: Mapping[str, Any], cache: Path | None = None,
                      progress: bool = True) -> tuple[LoopedTransformer, dict[str, Any]]:
    """A warm-started model for (model config, task, warm-start config, seed), loaded from the cache
    (``icml26._paths.cache_dir("looplm", "warm_start")``) when present, else trained and saved.

    The same key always gives the same weights, so GRPO and RLTT arms of one seed start from the
    identical checkpoint."""
    from icml26._paths import cache_dir

    key = json.dumps({"model": asdict(model_cfg), "task": dict(task_key), "warm": asdict(cfg), "seed": seed,
                      "torch": torch.__version__.split("+")[0], "v": 1}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    folder = cache or cache_dir("looplm", "warm_start")
    path = Path(folder) / f"{digest}.pt"
    if path.exists():
        return LoopedTransformer.load(path), {"cached": True, "path": str(path)}
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LoopedTransformer(model_cfg)
    stats = warm_start(model, sampler, cfg, seed, progress)
    model.save(path)
    (Path(folder) / f"{digest}.json").write_text(key)
    return model, {"cached": False, "path": str(path), **stats}
