"""Speed of the looped transformer: generation and RL training step, with vs without the per-loop KV cache.

    OMP_NUM_THREADS=1 python perf/looplm.py [--batch 64] [--new-tokens 24] [--repeats 3]

Side by side in one run (ratios are robust to a shared machine; absolute numbers are not):

* generation tokens/s: greedy decoding of ``batch`` word-problem prompts, ``new_tokens`` tokens, with
  the per-(loop, layer) KV cache vs recomputing the whole sequence every token (identical tokens);
* RL training step tokens/s (rollout + per-loop log-probs + backward, RLTT exit_pdf), rollouts with
  vs without the cache;
* per-loop log-probs from one forward pass (our model's ``return_per_loop_log_probs``) vs ``T``
  truncated passes (what RLTT's trainer does for a model without per-loop outputs);
* a peer: Hugging Face ``generate`` (KV cache) on a plain GPT-2 with the same width and the same
  number of layer applications (``n_layers x T``), when transformers is installed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from icml26.agents.looplm.model import LoopConfig, LoopedTransformer  # noqa: E402
from icml26.agents.looplm.policy import LoopedPolicy, completion_labels  # noqa: E402
from icml26.agents.looplm.rl import LoopRLTrainer, ProblemSource, RLConfig  # noqa: E402
from icml26.envs.looplm.env import LoopReasoningEnv  # noqa: E402
from icml26.envs.looplm.tokenizer import EOS_ID, CharTokenizer  # noqa: E402


def _time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--loops", type=int, default=4)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    tok = CharTokenizer()
    cfg = LoopConfig(
        vocab_size=tok.vocab_size, d_model=args.d_model, n_loops=args.loops, max_len=128
    )
    model = LoopedTransformer(cfg).eval()
    with torch.no_grad():  # keep EOS unlikely so every row decodes all new tokens
        model.head.weight[EOS_ID].fill_(0.0)
    env = LoopReasoningEnv(task="word_problem", ops="+-*", max_value=99)
    problems = env.sample_group(args.batch, seed=0)
    pol = LoopedPolicy(model, tok)
    ids, mask = pol.encode([p.prompt for p in problems])
    n_new = args.new_tokens
    rows: list[tuple[str, float, float]] = []

    with torch.no_grad():
        g_c = pol.generate(ids, mask, n_new, use_cache=True)
        g_n = pol.generate(ids, mask, n_new, use_cache=False)
    assert torch.equal(g_c.tokens, g_n.tokens), "cached and uncached decoding disagree"
    n_tok = int(g_c.mask.sum())
    t_c = _time(lambda: pol.generate(ids, mask, n_new, use_cache=True), args.repeats)
    t_n = _time(lambda: pol.generate(ids, mask, n_new, use_cache=False), args.repeats)
    rows += [
        ("generate, per-loop KV cache", n_tok / t_c, t_c),
        ("generate, no cache", n_tok / t_n, t_n),
    ]

    # one RL step (RLTT exit_pdf): rollout of 16 prompts x 8, per-loop log-probs, backward
    def rl_step(use_cache: bool) -> tuple[float, int]:
        torch.manual_seed(0)
        p = LoopedPolicy(LoopedTransformer(cfg), tok, use_cache=use_cache)
        src = ProblemSource(
            lambda n, rng: env.sampler.batch(n, rng),
            lambda q: q.prompt,
            lambda c, q: np.array([float(len(x) % 2 == 0) for x in c]),
        )
        tr = LoopRLTrainer(
            p,
            src,
            RLConfig(
                algo="rltt",
                omega="exit_pdf",
                prompts_per_step=16,
                group_size=8,
                max_new_tokens=n_new,
            ),
            seed=0,
        )
        tr.step()  # warm-up
        t0 = time.perf_counter()
        stats = [tr.step() for _ in range(args.repeats)]
        dt = (time.perf_counter() - t0) / args.repeats
        return dt, int(np.mean([s["completion_len"] for s in stats]) * 16 * 8)

    dt_c, tok_c = rl_step(True)
    dt_n, tok_n = rl_step(False)
    rows += [
        ("RL step (RLTT), rollout with cache", tok_c / dt_c, dt_c),
        ("RL step (RLTT), rollout without cache", tok_n / dt_n, dt_n),
    ]

    # per-loop log-probs: one pass vs T truncated passes (teacher forcing over prompt + completion)
    full, attn, labels, _ = completion_labels(ids, mask, g_c.tokens, g_c.mask)
    n_lab = int((labels >= 0).sum())

    def t_passes() -> None:
        for t in range(1, cfg.n_loops + 1):
            lp = torch.log_softmax(model(full, attn, n_loops=t).logits, -1)
            lp.gather(-1, labels.clamp(min=0)[..., None])

    with torch.no_grad():
        t_one = _time(
            lambda: model(full, attn, return_per_loop_log_probs=True, log_prob_labels=labels),
            args.repeats,
        )
        t_T = _time(t_passes, args.repeats)
    rows += [
        ("per-loop log-probs, one pass", n_lab / t_one, t_one),
        (f"per-loop log-probs, {cfg.n_loops} truncated passes", n_lab / t_T, t_T),
    ]

    peer = None
    try:
        import transformers

        gcfg = transformers.GPT2Config(
            vocab_size=tok.vocab_size,
            n_positions=128,
            n_embd=args.d_model,
            n_layer=cfg.n_layers * cfg.n_loops,
            n_head=cfg.n_heads,
            bos_token_id=EOS_ID,
            eos_token_id=EOS_ID,
            pad_token_id=0,
        )
        gpt = transformers.GPT2LMHeadModel(gcfg).eval()
        with torch.no_grad():
            gpt.lm_head.weight[EOS_ID].fill_(0.0)

        def hf_gen() -> None:
            with torch.no_grad():
                gpt.generate(
                    input_ids=ids,
                    attention_mask=mask.long(),
                    max_new_tokens=n_new,
                    min_new_tokens=n_new,
                    do_sample=False,
                    pad_token_id=0,
                )

        t_hf = _time(hf_gen, args.repeats)
        peer = ("HF generate, GPT-2 same compute (peer)", args.batch * n_new / t_hf, t_hf)
        rows.append(peer)
    except ImportError:
        pass

    print(
        f"looped transformer d={cfg.d_model}, {cfg.n_layers} blocks x {cfg.n_loops} loops, "
        f"{sum(p.numel() for p in model.parameters())} parameters; batch {args.batch}, {n_new} new tokens; "
        f"median of {args.repeats}; torch threads 1"
    )
    print(f"{'measurement':48s} {'tokens/s':>12s} {'seconds':>10s}")
    for name, tps, sec in rows:
        print(f"{name:48s} {tps:12.0f} {sec:10.4f}")
    print()
    print(f"generation speed-up from the per-loop KV cache: {t_n / t_c:.2f}x")
    print(f"RL step speed-up from the per-loop KV cache (rollout only changes): {dt_n / dt_c:.2f}x")
    print(
        f"one-pass per-loop log-probs vs {cfg.n_loops} truncated passes: {t_T / t_one:.2f}x faster"
    )
    if peer is not None:
        print(
            f"our cached looped generation vs HF GPT-2 generate (same compute): {peer[2] / t_c:.2f}x "
            "(>1: ours faster)"
        )


if __name__ == "__main__":
    main()
