"""Evaluation of a loop policy on held-out problems: the metrics RLTT and Ouro report.

Final-loop greedy accuracy (pass@1), greedy accuracy of the model truncated at each loop
t = 1..T, accuracy against expected depth under exit-threshold decoding, accuracy of the
exit-weighted logit mixture, pass@k from k samples at temperature 1, and the mean exit
distribution over the greedy tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import comb
from typing import Any

import numpy as np
import torch

DEFAULT_THRESHOLDS = (0.1, 0.3, 0.5, 0.7, 0.9)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` correct (Chen et al. 2021):
    ``1 - C(n - c, k) / C(n, k)``."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k: need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def _batched(seq: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [seq[i : i + size] for i in range(0, len(seq), size)]


@torch.no_grad()
def decode_and_score(
    policy: Any,
    problems: Sequence[Any],
    prompt: Callable[[Any], str],
    score: Callable[[list[str], list[Any]], np.ndarray],
    max_new_tokens: int,
    batch_size: int = 256,
    **gen_kw: Any,
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Decode every problem once (``gen_kw`` picks the mode): ``(rewards, completions, mean exit
    loop per completion)``."""
    rewards, texts, depths = [], [], []
    for chunk in _batched(list(problems), batch_size):
        ids, mask = policy.encode([prompt(p) for p in chunk])
        gen = policy.generate(ids, mask, max_new_tokens, **gen_kw)
        comp = policy.decode(gen.tokens)
        rewards.append(np.asarray(score(comp, list(chunk)), dtype=float))
        texts.extend(comp)
        m = gen.mask.float()
        depths.append(((gen.exit_loops * m).sum(1) / m.sum(1).clamp_min(1)).cpu().numpy())
    return np.concatenate(rewards), texts, np.concatenate(depths)


@torch.no_grad()
def loop_accuracy(
    policy: Any,
    problems: Sequence[Any],
    prompt: Callable[[Any], str],
    score: Callable[[list[str], list[Any]], np.ndarray],
    max_new_tokens: int,
    batch_size: int = 256,
) -> dict[str, Any]:
    """Greedy final-loop ``accuracy`` and its per-problem ``scores``, and the
    ``per_loop_accuracy`` of the model truncated at each loop t = 1..T."""
    T = policy.n_loops
    final, _, _ = decode_and_score(policy, problems, prompt, score, max_new_tokens, batch_size)
    per_loop = [
        final
        if t == T
        else decode_and_score(policy, problems, prompt, score, max_new_tokens, batch_size, loop=t)[
            0
        ]
        for t in range(1, T + 1)
    ]
    return {
        "accuracy": float(np.mean(final == 1.0)),
        "scores": [float(x) for x in final],
        "per_loop_accuracy": [float(np.mean(a == 1.0)) for a in per_loop],
    }


@torch.no_grad()
def evaluate_policy(
    policy: Any,
    problems: Sequence[Any],
    prompt: Callable[[Any], str],
    score: Callable[[list[str], list[Any]], np.ndarray],
    max_new_tokens: int,
    *,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    k: int = 8,
    seed: int = 0,
    batch_size: int = 256,
) -> dict[str, Any]:
    """Every metric of the family on ``problems`` (held-out test problems)."""
    out = loop_accuracy(policy, problems, prompt, score, max_new_tokens, batch_size)
    if getattr(policy, "has_exit_gate", False):
        curve = []
        for q in thresholds:
            r, _, d = decode_and_score(
                policy,
                problems,
                prompt,
                score,
                max_new_tokens,
                batch_size,
                mode="threshold",
                threshold=q,
            )
            curve.append(
                {
                    "threshold": float(q),
                    "accuracy": float(np.mean(r == 1.0)),
                    "expected_depth": float(np.mean(d)),
                }
            )
        out["threshold_curve"] = curve
        r, _, d = decode_and_score(
            policy, problems, prompt, score, max_new_tokens, batch_size, mode="mix"
        )
        out["mix_accuracy"] = float(np.mean(r == 1.0))
        out["mix_expected_depth"] = float(np.mean(d))
        out["mean_exit_pdf"] = mean_exit_pdf(policy, problems, prompt, max_new_tokens, batch_size)
    gen = torch.Generator().manual_seed(int(seed))
    correct = np.zeros(len(problems), dtype=int)
    for _ in range(k):
        r, _, _ = decode_and_score(
            policy,
            problems,
            prompt,
            score,
            max_new_tokens,
            batch_size,
            temperature=1.0,
            generator=gen,
        )
        correct += (r == 1.0).astype(int)
    out[f"pass_at_{k}"] = float(np.mean([pass_at_k(k, int(c), k) for c in correct]))
    out["sample_accuracy"] = float(correct.sum() / (k * len(problems)))
    return out


@torch.no_grad()
def mean_exit_pdf(
    policy: Any,
    problems: Sequence[Any],
    prompt: Callable[[Any], str],
    max_new_tokens: int,
    batch_size: int = 256,
) -> list[float]:
    """The exit distribution averaged over the tokens of the greedy final-loop completions."""
    total, count = None, 0.0
    for chunk in _batched(list(problems), batch_size):
        ids, mask = policy.encode([prompt(p) for p in chunk])
        gen = policy.generate(ids, mask, max_new_tokens)
        pl = policy.per_loop(ids, mask, gen, 1.0, with_exit_pdf=True)
        m = gen.mask.float()[..., None]
        s = (pl.exit_pdf * m).sum((0, 1))
        total = s if total is None else total + s
        count += float(m.sum())
    assert total is not None
    return [float(x) for x in total / max(count, 1.0)]
