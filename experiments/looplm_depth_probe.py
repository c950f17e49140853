"""Does a task need loop depth? Train a looped model and its 1-loop twin (same parameters) and print
per-loop greedy accuracy on 512 validation problems every 250 steps (the probe behind the "depth
tasks tried" section of docs/results/looplm.md; no RL, nothing written).

    OMP_NUM_THREADS=1 nice -n 10 python experiments/looplm_depth_probe.py hops --size 8 --k 2 --loops 4
    OMP_NUM_THREADS=1 nice -n 10 python experiments/looplm_depth_probe.py roots --size 20 --k 4 --loops 1

``hops``: the ``permutation_hops`` generator (``size`` letters, ``k`` hops). ``roots``: ``k`` chains
of ``size / k`` letters written as a parent array (a chain's head is its own parent) and a query
letter placed last; the answer is the head of the query's chain, reached in 1 .. size/k - 1 hops
(extra loops are harmless: the head is a fixed point), accuracy is also printed by hop count.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from icml26.agents.looplm.evaluation import decode_and_score
from icml26.agents.looplm.model import LoopConfig, LoopedTransformer, ouro_loss
from icml26.agents.looplm.policy import LoopedPolicy
from icml26.agents.looplm.sft import supervised_batch
from icml26.envs.looplm.tasks import PointerChain, Problem, make_generator
from icml26.envs.looplm.tokenizer import CharTokenizer

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def roots_problem(rng: np.random.Generator, size: int, chains: int) -> Problem:
    """A parent array of ``chains`` chains over ``size`` letters; value = hops to the head."""
    n = size // chains
    letters = [int(v) for v in rng.permutation(size)]
    parent = list(range(size))
    heads = [letters[c * n : (c + 1) * n] for c in range(chains)]
    for ch in heads:
        for i in range(1, n):
            parent[ch[i]] = ch[i - 1]
    c, d = int(rng.integers(chains)), int(rng.integers(1, n))
    prompt = "".join(LETTERS[i] for i in parent) + "." + LETTERS[heads[c][d]]
    return Problem(prompt, LETTERS[heads[c][0]], d, "roots")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("task", choices=("hops", "roots", "chain", "gen"))
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--k", type=int, default=2, help="hops (hops) or chains (roots)")
    ap.add_argument("--loops", type=int, default=4)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--inject", action="store_true", help="input injection at every loop")
    ap.add_argument("--query", default="any", help="chain: 'any' or 'end'")
    ap.add_argument("--name", default="addition", help="gen: a generator of tasks.py")
    ap.add_argument("--knob", action="append", default=[], help="gen: knob=int, repeatable")
    ap.add_argument("--every", type=int, default=250, help="evaluate every this many steps")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.task == "hops":
        gen = make_generator("permutation_hops", size=a.size, hops=a.k)
        sample = gen.sample
    elif a.task == "gen":
        gen = make_generator(a.name, **{k: int(v) for k, v in (x.split("=") for x in a.knob)})
        sample = gen.sample
    elif a.task == "chain":
        gen = make_generator("pointer_chain", length=a.size, chains=a.k, query=a.query)
        sample = gen.sample
    else:

        def sample(rng: np.random.Generator) -> Problem:
            return roots_problem(rng, a.size, a.k)

    tok = CharTokenizer()
    torch.manual_seed(0)
    cfg = LoopConfig(
        vocab_size=tok.vocab_size, n_layers=a.layers, n_loops=a.loops, inject_input=a.inject
    )
    model = LoopedTransformer(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
    rng, vrng = np.random.default_rng(0), np.random.default_rng(123)
    val = [sample(vrng) for _ in range(512)]
    vi, vm, vl = supervised_batch(val, tok)
    pos = (vl >= 0).float().argmax(1)  # where the (one-token) answer is predicted
    tgt = vl[torch.arange(len(val)), pos]
    if a.task == "chain":
        hops = torch.tensor([PointerChain.depth(p) for p in val])
    else:
        hops = torch.tensor([p.value for p in val])
    n_new = getattr(gen, "max_answer_len", 1) + 2 if a.task != "roots" else 3

    def score(comps: list[str], probs: list[Problem]) -> np.ndarray:
        return np.array([gen.score(c, p) for c, p in zip(comps, probs, strict=True)])

    t0 = time.time()
    for step in range(1, a.steps + 1):
        ids, mask, labels = supervised_batch([sample(rng) for _ in range(64)], tok)
        loss, st = ouro_loss(model, ids, mask, labels, 0.05)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % a.every:
            continue
        if a.task == "gen":  # multi-token answers: greedy decoding truncated at each loop
            pol = LoopedPolicy(model, tok)
            hit = torch.tensor(
                np.stack(
                    [
                        decode_and_score(pol, val, lambda p: p.prompt, score, n_new, loop=t)[0]
                        for t in range(1, a.loops + 1)
                    ],
                    axis=1,
                )
            )
        else:
            with torch.no_grad():
                logits = model(vi, vm, return_per_loop_logits=True).per_loop_logits
                hit = (logits[torch.arange(len(val)), pos].argmax(-1) == tgt[:, None]).float()
        by = ""
        if a.task in ("roots", "chain"):
            by = " by hops " + str(
                {
                    int(h): [round(float(x), 2) for x in hit[hops == h].mean(0)]
                    for h in hops.unique()
                }
            )
        acc = [round(float(x), 3) for x in hit.mean(0)]
        print(f"step {step} ce {st['ce_final']:.3f} per-loop {acc}{by} {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
