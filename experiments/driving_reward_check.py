"""Does ScenePilot-v2's reward point where the paper's objective points? (issue 36, scenario 6)

The driving study finds every PPO arm losing its collisions on scenario 6 as its budget grows,
while LC (learning-to-collide, REINFORCE over episode-level trigger distance and speed) reaches
valid collisions. Before reading that as "the shielded objective does not find valid contacts",
this script scores trained adversaries by the *environment's own reward* at the release's final
k (``reward="collision"``, ``feasibility_threshold=0.35``, TTC risk at evaluation): the return
PPO maximizes. If LC's policy earns more of it than PPO's, the reward points at valid collisions
and the PPO arms fail to optimize it (exploration/optimization), which more budget of the same
algorithm need not fix; if PPO's policy earns as much, the reward does not discriminate.

    python experiments/driving_reward_check.py --scenario 6 --scale 16 --seeds 0 1 2 \\
        --arms driving-lc scenepilot driving-ppo-risk driving-scripted random

Prints one row per (arm, seed, evaluation mode) and a JSON line per row to ``--out``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from icml26 import agents, benchmarks
from icml26.benchmarks.generic import train_phase
from icml26.benchmarks.studies.driving import PPO_KWARGS
from icml26.benchmarks.tasks.driving import VALID_K, evaluate_adversary
from icml26.protocol import Budget, Task

PPO_ARMS = ("scenepilot", "scenepilot-released", "driving-ppo-risk")


def score(agent: object, task: Task, seed: int) -> dict[str, float]:
    """The evaluation episodes of the task, scored by the env's reward at k = VALID_K."""
    kw = {**task.env_kwargs, "reward": "collision", "feasibility_threshold": VALID_K}
    eps = evaluate_adversary(agent, kw, seed, task.eval_episodes, task.env_id)
    col = np.array([e["collision"] for e in eps], float)
    jr = np.array([e["J_reward"] for e in eps], float)
    return {
        "collision": float(col.mean()),
        "valid": float(np.mean([e["avoidable_collision"] for e in eps])),
        "J_reward": float(jr.mean()),
        "J_reward_collision": float(jr[col > 0].mean()) if col.any() else float("nan"),
        "J_risk": float(np.mean([e["J_risk"] for e in eps])),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", type=int, default=6)
    p.add_argument("--scale", type=float, default=16.0, help="x the task's 16,384 env steps")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--arms", nargs="+", default=["driving-lc", "scenepilot", "driving-ppo-risk"])
    p.add_argument("--phi", default="online", help="training risk: online (the study's) or ttc")
    p.add_argument(
        "--ppo-kwargs",
        default="{}",
        help='JSON merged over the study\'s PPO_KWARGS, e.g. \'{"ent_coef": 0.03, "max_std": null}\'',
    )
    p.add_argument("--out", default="results/driving_reward_check.jsonl")
    a = p.parse_args()
    ppo_kw = json.loads(a.ppo_kwargs)
    base = benchmarks.get_task(f"driving/attack-v2-human-s{a.scenario}")
    task = dataclasses.replace(
        base,
        budget=Budget(env_steps=int(base.budget.env_steps * a.scale)),
        env_kwargs={**base.env_kwargs, "phi": a.phi},
    )
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    print("| arm | seed | evaluation | collision | valid | J_reward (k=0.35) | J_risk |")
    print("|---|---|---|---|---|---|---|")
    for arm in a.arms:
        for seed in a.seeds:
            agent = agents.make(arm, **({**PPO_KWARGS, **ppo_kw} if arm in PPO_ARMS else {}))
            t0 = time.time()
            train_phase(task, agent, seed)
            modes = [("mean", True), ("sampled", False)] if arm in PPO_ARMS else [("-", None)]
            for mode, det in modes:
                ag = agent
                if det is not None:
                    ag = copy.deepcopy(agent)
                    ag.args.deterministic = det
                s = score(ag, task, seed)
                row = {"scenario": a.scenario, "scale": a.scale, "phi": a.phi, "arm": arm}
                row["ppo_kwargs"] = ppo_kw if arm in PPO_ARMS else {}
                row.update({"seed": seed, "evaluation": mode, **s})
                row["seconds"] = round(time.time() - t0, 1)
                print(
                    f"| {arm} | {seed} | {mode} | {s['collision']:.2f} | {s['valid']:.2f} | "
                    f"{s['J_reward']:.2f} | {s['J_risk']:.1f} |",
                    flush=True,
                )
                with open(a.out, "a") as fh:
                    fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
