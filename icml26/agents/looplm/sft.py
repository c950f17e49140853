"""Supervised warm start of a looped transformer with the Ouro loss, cached on disk by config.

:func:`calibrate_warm_start` picks the number of steps from a validation curve so the warm start
lands in a target accuracy band (RL then has groups with reward spread) and caches that checkpoint;
calibrated checkpoints of the registered tasks ship in ``icml26/agents/looplm/checkpoints`` and
:func:`cached_warm_start` finds them there before the user cache.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
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
        labels[b, start - 1 : len(s) - 1] = ids_t[b, start : len(s)]
    return ids_t, mask_t, labels


SHIPPED = Path(__file__).resolve().parent / "checkpoints"


def warm_start(
    model: LoopedTransformer,
    sampler: ProblemSampler,
    cfg: WarmStartConfig,
    seed: int,
    progress: bool = True,
    on_step: Callable[[int], bool] | None = None,
) -> dict[str, Any]:
    """Train ``model`` in place with the Ouro loss on problems drawn from ``sampler`` (seeded).

    ``on_step(s)`` is called after step ``s`` (1-based); returning True stops training there. The
    weights after ``s`` steps do not depend on ``cfg.steps`` (constant lr after the warm-up)."""
    from tqdm.auto import tqdm

    tok = CharTokenizer()
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, cfg.warmup)))
    losses, t0 = [], time.perf_counter()
    model.train()
    for step in tqdm(range(1, cfg.steps + 1), desc="warm start", disable=not progress, leave=False):
        ids, mask, labels = supervised_batch(sampler.batch(cfg.batch_size, rng), tok)
        loss, stats = ouro_loss(model, ids, mask, labels, cfg.beta_entropy)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        losses.append(stats["ce_final"])
        if on_step is not None and on_step(step):
            break
    return {"ce_final_curve": losses, "seconds": time.perf_counter() - t0}


def cached_warm_start(
    model_cfg: LoopConfig,
    sampler: ProblemSampler,
    cfg: WarmStartConfig,
    seed: int,
    task_key: Mapping[str, Any],
    cache: Path | None = None,
    progress: bool = True,
) -> tuple[LoopedTransformer, dict[str, Any]]:
    """A warm-started model for (model config, task, warm-start config, seed), loaded from the cache
    (``icml26._paths.cache_dir("looplm", "warm_start")``) when present, else trained and saved.

    The same key always gives the same weights, so GRPO and RLTT arms of one seed start from the
    identical checkpoint."""
    from icml26._paths import cache_dir

    key, digest = warm_start_key(model_cfg, task_key, cfg, seed)
    folder = Path(cache or cache_dir("looplm", "warm_start"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}.pt"
    shipped = [] if cache is not None else [SHIPPED / f"{digest}.pt", shipped_checkpoint(key)]
    for candidate in [*shipped, path]:
        if candidate is not None and candidate.exists():
            return LoopedTransformer.load(candidate), {"cached": True, "path": str(candidate)}
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LoopedTransformer(model_cfg)
    stats = warm_start(model, sampler, cfg, seed, progress)
    model.save(path)
    (Path(folder) / f"{digest}.json").write_text(key)
    return model, {"cached": False, "path": str(path), **stats}


def shipped_checkpoint(key: str) -> Path | None:
    """The shipped checkpoint whose key equals ``key`` up to the torch version, if any: a task's
    warm start is data once shipped, so a machine with another torch loads the same weights."""

    def strip(k: str) -> dict[str, Any]:
        return {n: v for n, v in json.loads(k).items() if n != "torch"}

    want = strip(key)
    for meta in sorted(SHIPPED.glob("*.json")):
        if strip(meta.read_text()) == want and meta.with_suffix(".pt").exists():
            return meta.with_suffix(".pt")
    return None


def warm_start_key(
    model_cfg: LoopConfig, task_key: Mapping[str, Any], cfg: WarmStartConfig, seed: int
) -> tuple[str, str]:
    """The cache key (JSON) of a warm start and its 16-hex-digit digest (the file name)."""
    model = asdict(model_cfg)
    if not model.get("inject_input"):  # keys written before the option existed stay valid
        model.pop("inject_input", None)
    key = json.dumps(
        {
            "model": model,
            "task": dict(task_key),
            "warm": asdict(cfg),
            "seed": seed,
            "torch": torch.__version__.split("+")[0],
            "v": 1,
        },
        sort_keys=True,
    )
    return key, hashlib.sha256(key.encode()).hexdigest()[:16]


def calibrate_warm_start(
    model_cfg: LoopConfig,
    sampler: ProblemSampler,
    val_problems: Sequence[Problem],
    cfg: WarmStartConfig,
    seed: int,
    task_key: Mapping[str, Any],
    *,
    band: tuple[float, float] = (0.3, 0.7),
    eval_every: int = 100,
    pick: str = "middle",
    cache: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train up to ``cfg.steps`` steps, measuring final-loop greedy accuracy on ``val_problems``
    every ``eval_every`` steps; stop once it passes the band's top. The chosen step count is the
    evaluated one whose accuracy lies in ``band`` closest to its middle (``pick="middle"``) or the
    last one in the band (``pick="last"``: the longest warm start that still leaves RL reward
    spread, so the model has learned the most, the use of its loops included); it is saved
    under the key :func:`cached_warm_start` uses for ``steps = chosen`` (so later calls load it).

    Returns ``{"curve": [(step, accuracy, per-loop accuracies)], "steps": chosen or None,
    "accuracy", "path"}``; ``steps`` is None when no evaluated point fell in the band."""
    from icml26._paths import cache_dir
    from icml26.agents.looplm.evaluation import decode_and_score
    from icml26.agents.looplm.policy import LoopedPolicy

    lo, hi = band
    if not 0.0 <= lo < hi <= 1.0:
        raise ValueError(
            f"calibrate_warm_start: band must satisfy 0 <= low < high <= 1, got {band!r}"
        )
    if pick not in ("middle", "last"):
        raise ValueError(f"calibrate_warm_start: pick must be 'middle' or 'last', got {pick!r}")
    if eval_every < 1:
        raise ValueError(f"calibrate_warm_start: eval_every must be >= 1, got {eval_every!r}")
    folder = Path(cache or cache_dir("looplm", "warm_start"))
    folder.mkdir(parents=True, exist_ok=True)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LoopedTransformer(model_cfg)
    pol = LoopedPolicy(model)
    gen = sampler.generator
    n_new = gen.max_answer_len + 2

    def score(c: list[str], p: list[Problem]) -> np.ndarray:
        return np.array([gen.score(a, b) for a, b in zip(c, p)])

    curve: list[tuple[int, float, list[float]]] = []
    snapshots: dict[int, dict[str, torch.Tensor]] = {}

    def on_step(step: int) -> bool:
        if step % eval_every:
            return False
        model.eval()
        per_loop = [
            float(
                np.mean(
                    decode_and_score(pol, val_problems, lambda q: q.prompt, score, n_new, loop=t)[0]
                    == 1.0
                )
            )
            for t in range(1, model.n_loops + 1)
        ]
        model.train()
        curve.append((step, per_loop[-1], per_loop))
        if lo <= per_loop[-1] <= hi:
            snapshots[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return per_loop[-1] > hi

    warm_start(model, sampler, cfg, seed, progress, on_step)
    inside = [(abs(a - (lo + hi) / 2), s) for s, a, _ in curve if lo <= a <= hi]
    if not inside:
        return {"curve": curve, "steps": None, "accuracy": None, "path": None}
    chosen = min(inside)[1] if pick == "middle" else max(s for _, s in inside)
    model.load_state_dict(snapshots[chosen])
    key, digest = warm_start_key(
        model_cfg, task_key, WarmStartConfig(**{**asdict(cfg), "steps": chosen}), seed
    )
    path = folder / f"{digest}.pt"
    model.save(path)
    (folder / f"{digest}.json").write_text(key)
    acc = next(a for s, a, _ in curve if s == chosen)
    return {"curve": curve, "steps": chosen, "accuracy": acc, "path": str(path)}
