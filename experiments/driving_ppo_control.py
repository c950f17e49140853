"""A positive control for the driving study's PPO arms (issue 36; experiments/driving_notes.md).

On scenario 6 with k fixed at 0 (no curriculum), every collision whose sigma stayed >= 0 until
1 s before contact pays the bonus of 10, about six times what an episode without one earns, so a
PPO that optimizes its reward must raise its training collision rate. Each configuration trains
the risk-only PPO (the ScenePilot learner without the shield) for 4x the task's budget (32
updates) and prints the training collision rate and the mean episode return (the env's reward
summed over the episode, ``J_reward``) over the first and the last 8 updates.

    python experiments/driving_ppo_control.py --seeds 0 1 2 3 4 5

Configurations (merged over the study's CPU-budget PPO settings, lr 1e-3, 4 epochs of 512):
``release`` (no std cap, the log-probability of the clamped action, entropy 0.03: the release's),
``study`` (the study's: std capped at 1, the log-probability of the drawn action), and the two
single changes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np

from icml26 import agents, benchmarks
from icml26.benchmarks.generic import train_phase
from icml26.benchmarks.studies.driving import PPO_KWARGS
from icml26.protocol import Budget

CONFIGS: dict[str, dict[str, object]] = {
    "release": {"max_std": None, "logprob_of": "clamped"},
    "std cap only": {"max_std": 1.0, "logprob_of": "clamped"},
    "drawn-action log-prob only": {"max_std": None, "logprob_of": "sample"},
    "study": {"max_std": 1.0, "logprob_of": "sample"},
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--scale", type=float, default=4.0, help="x the task's 16,384 env steps")
    p.add_argument("--out", default="results/driving_ppo_control.jsonl")
    a = p.parse_args()
    base = benchmarks.get_task("driving/attack-v2-human-s6")
    task = dataclasses.replace(base, budget=Budget(env_steps=int(base.budget.env_steps * a.scale)))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    print(
        "| configuration | seed | collision rate, first 8 -> last 8 | J_reward, first 8 -> last 8 |"
    )
    print("|---|---|---|---|")
    for name in a.configs:
        for seed in a.seeds:
            kw = {**PPO_KWARGS, **CONFIGS[name], "k_values": (0.0,)}
            agent = agents.make("driving-ppo-risk", **kw)
            train_phase(task, agent, seed)
            c = np.array([h["collision_rate"] for h in agent.history])
            j = np.array([h["J_reward"] for h in agent.history])
            row = {
                "configuration": name,
                "seed": seed,
                "scale": a.scale,
                "collision_first8": float(c[:8].mean()),
                "collision_last8": float(c[-8:].mean()),
                "J_reward_first8": float(np.nanmean(j[:8])),
                "J_reward_last8": float(np.nanmean(j[-8:])),
            }
            print(
                f"| {name} | {seed} | {row['collision_first8']:.2f} -> "
                f"{row['collision_last8']:.2f} | {row['J_reward_first8']:.2f} -> "
                f"{row['J_reward_last8']:.2f} |",
                flush=True,
            )
            with open(a.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
