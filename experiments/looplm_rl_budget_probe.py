"""Does a longer RL run, or a higher lr, move a task's shipped warm start further? (the probe behind
the "RL budget" note of docs/results/looplm.md; nothing written, no store).

    OMP_NUM_THREADS=1 nice -n 10 python experiments/looplm_rl_budget_probe.py --steps 160 --lr 3e-4 --seeds 0,1

From the task's shipped warm start, each arm (GRPO, RLTT progressive, RLTT exit_pdf) trains with
the task's RL settings (16 prompts x 8 completions, 4 PPO minibatches) for ``--steps`` steps and
prints final-loop greedy accuracy on the trial's 256 held-out problems every 40 steps (the same
problems and RL seed as ``experiments/looplm.py run``, so the first value repeats that run's).
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import torch

from icml26.agents.looplm.evaluation import decode_and_score
from icml26.agents.looplm.policy import LoopedPolicy
from icml26.agents.looplm.rl import LoopRLTrainer, RLConfig, problem_source
from icml26.agents.looplm.sft import cached_warm_start
from icml26.benchmarks.tasks.looplm import eval_problems
from icml26.protocol import derive_seed

ARMS = (("grpo", "exit_pdf"), ("rltt", "progressive"), ("rltt", "exit_pdf"))


def main() -> None:
    # experiments/looplm.py: the warm start exactly as the agents build it
    from looplm import _setup

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--task", default="looplm/permutation-hops-8x3")
    ap.add_argument("--steps", type=int, default=160)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--seeds", default="0,1")
    a = ap.parse_args()
    torch.set_num_threads(1)
    s = _setup(a.task)
    t, u, ex = s["task"], s["env"], s["task"].budget.extra
    test_env = gym.make(t.env_id, split="test", **t.env_kwargs)
    for seed in (int(x) for x in a.seeds.split(",")):
        probs = eval_problems(test_env, seed, t.eval_episodes)
        for algo, omega in ARMS:
            model, info = cached_warm_start(
                s["cfg"], u.sampler, s["wcfg"], s["seed"], s["key"], progress=False
            )
            assert info["cached"], "no shipped warm start: run experiments/looplm.py calibrate"
            pol = LoopedPolicy(model)
            cfg = RLConfig(
                algo=algo,
                omega=omega,
                prompts_per_step=int(ex["prompts_per_step"]),
                group_size=int(ex["group_size"]),
                minibatches=int(ex["minibatches"]),
                updates_per_batch=int(ex["updates_per_batch"]),
                lr=a.lr,
                max_new_tokens=u.max_answer_len + 2,
            )
            trainer = LoopRLTrainer(pol, problem_source(u), cfg, seed=derive_seed(seed, "rl"))
            t0, acc = time.time(), []
            for _ in range(a.steps // 40):
                trainer.train(40, progress=False)
                r = decode_and_score(pol, probs, lambda p: p.prompt, u.score, u.max_answer_len + 2)
                acc.append(round(float(r[0].mean()), 3))
            print(
                f"seed {seed} {algo}/{omega} lr {a.lr}: final-loop accuracy every 40 steps {acc} "
                f"{time.time() - t0:.0f}s",
                flush=True,
            )


if __name__ == "__main__":
    main()
