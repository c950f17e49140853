"""RL hyper-parameters of looplm/permutation-hops-8x3 chosen on a validation split, and the RL
budget ladder of the chosen configuration (issue 35; the "RL configuration" section of
docs/results/looplm.md).

    OMP_NUM_THREADS=1 nice -n 10 python experiments/looplm_rl_sweep.py sweep --seeds 0-2
    OMP_NUM_THREADS=1 nice -n 10 python experiments/looplm_rl_sweep.py ladder --seeds 0-2 \
        --arms grpo --steps 960
    python experiments/looplm_rl_sweep.py table

Why a script and not harness trials: a harness trial of the task scores the held-out TEST
problems, and hyper-parameters must not be chosen on them. Here RL trains only on train-split
problems whose prompt hash lies at or above ``VAL_HI`` (0.3) and is scored on train-split problems
whose hash lies in [test_fraction, VAL_HI) = [0.2, 0.3): a validation split disjoint from both the
RL problems and the test split. Every run starts from the task's shipped warm start.

``sweep`` runs GRPO from one-factor-at-a-time changes to a base configuration (the issue's probe:
64 prompts x G 8 per step, one minibatch, one PPO epoch, lr 1e-3, KL beta 1e-3), every
configuration on the same number of prompts (``--prompts``, default 7,680 = 120 steps of 64), and
records validation accuracy after each quarter of that budget. ``ladder`` runs one configuration
(``--config``, default the chosen one) for ``--steps`` RL steps per arm and seed and records the
validation accuracy and the trial's held-out test accuracy (the 256 problems ``run_trial`` scores,
same RL seed) at every power-of-two multiple of ``--first`` steps: with a constant lr the weights
after s steps do not depend on the total, so this is the budget ladder at s = first, 2 first, ...
(``tests/looplm/test_looplm_ladder.py`` checks that a snapshot equals a run of that length).
Rows go to ``results/looplm-rl-sweep$SWEEP_PART.jsonl`` as they finish (a re-run skips finished
rows; processes running side by side set different ``SWEEP_PART``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from looplm import _setup  # noqa: E402  (the warm start exactly as the agents build it)

from icml26.provenance import add_allow_dirty, provenance  # noqa: E402

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "looplm-rl-sweep.jsonl"
TASK = "looplm/permutation-hops-8x3"
VAL_HI = 0.3  # validation split: train-split prompts with hash in [test_fraction, VAL_HI)
N_VAL = 1024

BASE: dict[str, Any] = {
    "prompts_per_step": 64,
    "minibatches": 1,
    "updates_per_batch": 1,
    "lr": 1e-3,
    "beta_kl": 1e-3,
}
# one factor at a time around BASE, and the v0 task's configuration for reference
SWEEP: dict[str, dict[str, Any]] = {
    "base": {},
    "P16": {"prompts_per_step": 16},
    "P32": {"prompts_per_step": 32},
    "P128": {"prompts_per_step": 128},
    "mb2": {"minibatches": 2},
    "mb4": {"minibatches": 4},
    "lr3e-4": {"lr": 3e-4},
    "lr3e-3": {"lr": 3e-3},
    "ep2": {"updates_per_batch": 2},
    "ep4": {"updates_per_batch": 4},
    "kl0": {"beta_kl": 0.0},
    "kl1e-2": {"beta_kl": 1e-2},
    "v0-task": {"prompts_per_step": 16, "minibatches": 4, "lr": 3e-4},
}
ARMS = {
    "grpo": ("grpo", "exit_pdf"),
    "reinforce": ("reinforce", "exit_pdf"),
    "rltt-uniform": ("rltt", "uniform"),
    "rltt-progressive": ("rltt", "progressive"),
    "rltt-exit-pdf": ("rltt", "exit_pdf"),
    "rltt-learned": ("rltt", "learned"),
}


def _filtered(sampler: Any, keep: Any) -> Any:
    """A ``sample(n, rng)`` drawing train-split problems whose prompt hash passes ``keep``."""
    from icml26.envs.looplm.tasks import prompt_hash

    def sample(n: int, rng: np.random.Generator) -> list[Any]:
        out: list[Any] = []
        while len(out) < n:
            p = sampler.sample(rng)
            if keep(prompt_hash(p.prompt)):
                out.append(p)
        return out

    return sample


def _context(prov: dict[str, Any]) -> dict[str, Any]:
    import gymnasium as gym

    from icml26.agents.looplm.rl import ProblemSource
    from icml26.protocol import derive_seed

    s = _setup(TASK)
    u = s["env"]
    tf = u.sampler.test_fraction
    val = _filtered(u.sampler, lambda h: h < VAL_HI)(
        N_VAL, np.random.default_rng(derive_seed(0, "rl-validation"))
    )
    source = ProblemSource(
        _filtered(u.sampler, lambda h: h >= VAL_HI), lambda p: p.prompt, lambda c, p: u.score(c, p)
    )
    test_env = gym.make(s["task"].env_id, split="test", **s["task"].env_kwargs)
    assert all(tf <= _hash(p.prompt) < VAL_HI for p in val)
    return {**s, "val": val, "source": source, "test_env": test_env, "prov": prov}


def _hash(prompt: str) -> float:
    from icml26.envs.looplm.tasks import prompt_hash

    return prompt_hash(prompt)


def _accuracy(policy: Any, problems: list[Any], u: Any) -> tuple[float, list[float]]:
    """Final-loop greedy accuracy and the per-loop accuracies."""
    from icml26.agents.looplm.evaluation import decode_and_score

    per = [
        float(
            np.mean(
                decode_and_score(policy, problems, lambda p: p.prompt, u.score, 3, loop=t)[0] == 1
            )
        )
        for t in range(1, policy.n_loops + 1)
    ]
    return per[-1], per


def _run(
    ctx: dict[str, Any],
    name: str,
    arm: str,
    cfg_kw: dict[str, Any],
    seed: int,
    steps: int,
    checkpoints: list[int],
    test: bool,
) -> dict[str, Any]:
    import torch

    from icml26.agents.looplm.policy import LoopedPolicy
    from icml26.agents.looplm.rl import LoopRLTrainer, RLConfig
    from icml26.agents.looplm.sft import cached_warm_start
    from icml26.benchmarks.tasks.looplm import eval_problems
    from icml26.protocol import derive_seed

    torch.set_num_threads(1)
    u = ctx["env"]
    model, info = cached_warm_start(
        ctx["cfg"], u.sampler, ctx["wcfg"], ctx["seed"], ctx["key"], progress=False
    )
    assert info["cached"], "no shipped warm start: run experiments/looplm.py calibrate"
    pol = LoopedPolicy(model)
    algo, omega = ARMS[arm]
    kw = dict(cfg_kw)
    if algo == "reinforce":
        kw.update(minibatches=1, updates_per_batch=1)
    cfg = RLConfig(algo=algo, omega=omega, group_size=8, max_new_tokens=3, **kw)
    tr = LoopRLTrainer(pol, ctx["source"], cfg, seed=derive_seed(seed, "rl"))
    test_probs = eval_problems(ctx["test_env"], seed, 256) if test else None
    points: list[dict[str, Any]] = []

    def measure(step: int) -> None:
        acc, per = _accuracy(pol, ctx["val"], u)
        row: dict[str, Any] = {"step": step, "val": acc, "val_per_loop": per}
        if test_probs is not None:
            row["test"], row["test_per_loop"] = _accuracy(pol, test_probs, u)
        points.append(row)

    t0, c0 = time.perf_counter(), time.process_time()
    measure(0)
    done = 0
    for cp in checkpoints:
        tr.train(cp - done, progress=False)
        done = cp
        measure(cp)
    h = tr.history
    return {
        "kind": "sweep" if not test else "ladder",
        "name": name,
        "arm": arm,
        "seed": seed,
        "steps": steps,
        "config": {**kw, "group_size": 8},
        "points": points,
        "reward": [x["reward"] for x in h],
        "kl": [x["kl"] for x in h],
        "clip_frac": [x["clip_frac"] for x in h],
        "zero_spread_frac": [x["zero_spread_frac"] for x in h],
        "cpu_seconds_per_step": float(np.mean([x["cpu_seconds"] for x in h])),
        "wall_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
        "git": ctx["prov"]["commit"],
        "dirty": ctx["prov"]["dirty"],
    }


def rows() -> list[dict[str, Any]]:
    """Every row of every ``results/looplm-rl-sweep*.jsonl`` (one file per writing process)."""
    out: dict[tuple[str, str, str, int, int], dict[str, Any]] = {}
    for path in sorted(OUT.parent.glob(OUT.stem + "*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                out.setdefault((r["kind"], r["name"], r["arm"], r["seed"], r["steps"]), r)
    return list(out.values())


def _done() -> set[tuple[str, str, str, int, int]]:
    return {(r["kind"], r["name"], r["arm"], r["seed"], r["steps"]) for r in rows()}


def _write(row: dict[str, Any]) -> None:
    out = OUT.with_name(f"{OUT.stem}{os.environ.get('SWEEP_PART', '')}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")
    last = row["points"][-1]
    print(
        f"{row['kind']} {row['name']} {row['arm']} seed {row['seed']} {row['steps']} steps: "
        f"val {[round(p['val'], 3) for p in row['points']]}"
        + (f" test {[round(p['test'], 3) for p in row['points']]}" if "test" in last else "")
        + f" {row['cpu_seconds_per_step']:.2f} cpu-s/step {row['wall_s']:.0f}s",
        flush=True,
    )


def sweep(prov: dict[str, Any], seeds: list[int], prompts: int, names: list[str]) -> None:
    ctx = _context(prov)
    for name in names:
        kw = {**BASE, **SWEEP[name]}
        steps = prompts // kw["prompts_per_step"]
        cps = [steps * q // 4 for q in (1, 2, 3, 4)]
        for seed in seeds:
            if ("sweep", name, "grpo", seed, steps) in _done():
                continue
            _write(_run(ctx, name, "grpo", kw, seed, steps, cps, test=False))


def ladder(
    prov: dict[str, Any], seeds: list[int], arms: list[str], config: str, steps: int, first: int
) -> None:
    ctx = _context(prov)
    kw = {**BASE, **SWEEP[config]} if config in SWEEP else {**BASE, **json.loads(config)}
    cps = []
    s = first
    while s < steps:
        cps.append(s)
        s *= 2
    cps.append(steps)
    for seed in seeds:
        for arm in arms:
            if ("ladder", config, arm, seed, steps) in _done():
                continue
            _write(_run(ctx, config, arm, kw, seed, steps, cps, test=True))


def table() -> None:
    all_rows = rows()
    by: dict[str, list[dict[str, Any]]] = {}
    for r in all_rows:
        if r["kind"] == "sweep":
            by.setdefault(r["name"], []).append(r)
    print("| config | steps | seeds | val acc after 1/4, 1/2, 3/4, all | clip | cpu-s/step |")
    for name, rs in by.items():
        v = np.array([[p["val"] for p in r["points"][1:]] for r in rs]).mean(0)
        print(
            f"| {name} | {rs[0]['steps']} | {len(rs)} | {' / '.join(f'{x:.3f}' for x in v)} | "
            f"{np.mean([np.mean(r['clip_frac']) for r in rs]):.4f} | "
            f"{np.mean([r['cpu_seconds_per_step'] for r in rs]):.2f} |"
        )
    lad: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in all_rows:
        if r["kind"] == "ladder":
            lad.setdefault((r["name"], r["arm"]), []).append(r)
    for (name, arm), rs in lad.items():
        steps = [p["step"] for p in rs[0]["points"]]
        t = np.array([[p["test"] for p in r["points"]] for r in rs])
        v = np.array([[p["val"] for p in r["points"]] for r in rs])
        print(f"ladder {name} {arm} seeds {[r['seed'] for r in rs]} steps {steps}")
        print("  test", " / ".join(f"{x:.3f}" for x in t.mean(0)))
        print("  val ", " / ".join(f"{x:.3f}" for x in v.mean(0)))


def main() -> None:
    from icml26.protocol import as_seed_list

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--seeds", default="0-2")
    s.add_argument("--prompts", type=int, default=7680)
    s.add_argument("--configs", default=",".join(SWEEP))
    lad = sub.add_parser("ladder")
    lad.add_argument("--seeds", default="0-2")
    lad.add_argument("--arms", default="grpo")
    lad.add_argument("--config", default="base", help="a SWEEP name or a JSON dict over BASE")
    lad.add_argument("--steps", type=int, default=960)
    lad.add_argument("--first", type=int, default=30)
    sub.add_parser("table")
    add_allow_dirty(ap)
    a = ap.parse_args()
    if a.cmd == "table":
        table()
        return
    prov = provenance(allow_dirty=a.allow_dirty)
    if a.cmd == "sweep":
        sweep(prov, list(as_seed_list(a.seeds)), a.prompts, a.configs.split(","))
    else:
        ladder(prov, list(as_seed_list(a.seeds)), a.arms.split(","), a.config, a.steps, a.first)


if __name__ == "__main__":
    main()
