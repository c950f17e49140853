"""Harness performance: the runner's per-trial overhead, suite throughput and concurrency per executor.

    python perf/harness.py                      # all three parts (about 15 min on 2 idle cores)
    python perf/harness.py --part overhead
    python perf/harness.py --part aggregation   # `icml26 results` on a smoke-shaped store and 10x (seconds)
    python perf/harness.py --part throughput --seeds 0-1 --repeats 2 --configs local:1,process:1,process:2,ray:1,ray:2

1. Overhead: the same (task, agent, seed) run four ways, interleaved, median of repeats:
   a bare loop written here (gym.make, agent.reset/learn/act, the same evaluation seeds),
   the family's ``run_trial`` called directly, and the full runner (``benchmarks.run`` with the
   local executor and a SQLite store: seeding, agent construction, checks, provenance, commit).
   The runner's cost is a fixed amount per trial; it is printed in milliseconds and as a share
   of the trial for a tiny trial (point-pd), a cheap one (random) and a real one (the smoke
   suite's sb3-ppo, 20k env steps). The runner also runs once in-process (``isolation="none"``):
   the difference is the cost of the child process the local executor gives each trial (fork,
   pipe, wait; target < 5% of a smoke trial), printed on its own line.
2. Throughput: the tutorial entry of the smoke suite (random, point-pd and sb3-ppo with
   n_steps=512 on tutorial/point-reach) over ``--seeds`` (default 0-1: six trials, the two long
   PPO trials split evenly over two workers) with each executor configuration in one run:
   local (1 worker), process pool (1 and 2 workers), Ray (a local instance of 1 and 2 CPUs,
   started and stopped inside the timing as a user would), ``--repeats`` passes (default 2,
   forward then backward, medians). Printed as trials/minute and ratios; every configuration
   must give the same metrics for the same trial.
3. Concurrency: trials that wait rather than compute (an agent that sleeps 0.5 s at each reset,
   about 5.5 s per trial), 8 of them, with each parallel configuration: the executors' own
   parallelism and per-trial start-up cost, which free cores do not change.

The machine's load average is printed before and after each part: on a shared machine other
processes take CPU from the workers, so compare the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

import icml26  # noqa: E402,F401
from icml26 import agents, benchmarks  # noqa: E402
from icml26.benchmarks.generic import bind_agent, run_trial  # noqa: E402
from icml26.benchmarks.runner import TrialSpec, seed_everything  # noqa: E402
from icml26.benchmarks.store import ResultsStore  # noqa: E402
from icml26.protocol import as_seed_list, derive_seed  # noqa: E402

TASK_ID = "tutorial/point-reach"
PPO_SMOKE = {"n_steps": 512, "batch_size": 64}
OVERHEAD_CASES = [("point-pd", {}, 15), ("random", {}, 9), ("sb3-ppo", PPO_SMOKE, 2)]


def load() -> str:
    try:
        return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "load average n/a"


# ----------------------------------------------------------------------------- part 1
def bare_trial(agent_name: str, agent_kwargs: dict[str, Any], seed: int) -> dict[str, float]:
    """The trial as a user would write it by hand: no runner, no store, no checks."""
    task = benchmarks.get_task(TASK_ID)
    seed_everything(seed)  # the same global seeding, so both paths compute the same numbers
    agent = agents.make(agent_name, **agent_kwargs)
    env = gym.make(task.env_id)
    env.reset(seed=derive_seed(seed, "train"))
    env.action_space.seed(derive_seed(seed, "train-actions"))
    bind_agent(agent, env)
    agent.reset(seed)
    if callable(getattr(agent, "learn", None)):
        agent.learn(env, task.budget)
    env.close()
    env = gym.make(task.env_id)
    bind_agent(agent, env)
    returns = []
    for i in range(task.eval_episodes):
        s = derive_seed(seed, "eval", i)
        obs, info = env.reset(seed=s)
        agent.reset(s)
        total = 0.0
        while True:
            obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
            total += float(reward)
            if terminated or truncated:
                break
        returns.append(total)
    env.close()
    return {"return": float(np.mean(returns))}


def family_trial(agent_name: str, agent_kwargs: dict[str, Any], seed: int) -> dict[str, float]:
    seed_everything(seed)
    agent = agents.make(agent_name, **agent_kwargs)
    return dict(run_trial(benchmarks.get_task(TASK_ID), agent, seed).metrics)


def runner_trial(
    store: ResultsStore, isolation: str | None = None
) -> Callable[[str, dict[str, Any], int], dict[str, float]]:
    """The full runner with the local executor: each trial in a forked child (the default), or
    with ``isolation="none"`` in this process (no time limit, no crash isolation)."""
    from icml26.benchmarks.executors import LocalExecutor

    def go(agent_name: str, agent_kwargs: dict[str, Any], seed: int) -> dict[str, float]:
        spec = TrialSpec(TASK_ID, 0, agent_name, dict(agent_kwargs), seed)
        (result,) = benchmarks.run(
            [spec],
            store=store,
            executor=LocalExecutor(isolation=isolation),
            progress=False,
            rerun=True,
        )
        assert result.status == "FINISHED", result.traceback
        return dict(result.metrics)

    return go


def measure_overhead(
    tmp: Path, cases: list[tuple[str, dict[str, Any], int]]
) -> list[dict[str, Any]]:
    print(f"\n== Per-trial overhead of the runner ({load()})")
    store = ResultsStore(tmp / "overhead.db")
    ways = {
        "bare loop": bare_trial,
        "family run_trial": family_trial,
        "runner in-process": runner_trial(store, "none"),
        "runner (local + store)": runner_trial(store),
    }
    rows = []
    total = sum(reps for *_, reps in cases) * len(ways)
    bar = tqdm(total=total, desc="overhead trials", unit="trial", file=sys.stderr)
    for agent_name, kwargs, reps in cases:
        times: dict[str, list[float]] = {w: [] for w in ways}
        values: dict[str, dict[str, float]] = {}
        for rep in range(reps):
            order = list(ways) if rep % 2 == 0 else list(reversed(ways))  # ABC CBA ...
            for way in order:
                t0 = time.perf_counter()
                metrics = ways[way](agent_name, kwargs, rep)
                times[way].append(time.perf_counter() - t0)
                if rep == 0:
                    values[way] = metrics
                bar.update(1)
        # the three ways computed the same thing
        assert len({v["return"] for v in values.values()}) == 1, values
        bare = statistics.median(times["bare loop"])
        row = {"agent": agent_name, "reps": reps, "bare_s": bare}
        for way in ways:
            row[way] = statistics.median(times[way])
        row["overhead_ms"] = 1e3 * (row["runner (local + store)"] - bare)
        row["overhead_pct"] = 100 * (row["runner (local + store)"] - bare) / bare
        # the child process of each trial (fork, pipe, wait): isolated runner minus in-process runner
        row["isolation_ms"] = 1e3 * (row["runner (local + store)"] - row["runner in-process"])
        rows.append(row)
    bar.close()
    fixed = statistics.median([r["overhead_ms"] for r in rows[:2]])
    print(
        f"{'agent':<10} {'reps':>4} {'bare loop':>11} {'run_trial':>11} {'in-process':>11} {'runner':>11} "
        f"{'overhead':>12} {'share':>8} {'child proc':>11}"
    )
    for r in rows:
        print(
            f"{r['agent']:<10} {r['reps']:>4} {r['bare_s']:>10.3f}s {r['family run_trial']:>10.3f}s "
            f"{r['runner in-process']:>10.3f}s {r['runner (local + store)']:>10.3f}s "
            f"{r['overhead_ms']:>+10.1f}ms {r['overhead_pct']:>+7.2f}% {r['isolation_ms']:>+9.1f}ms"
        )
    iso = statistics.median([r["isolation_ms"] for r in rows[:2]])
    ppo = rows[-1]
    if ppo["agent"] == "sb3-ppo":
        print(
            f"per-trial child process (fork) of the local executor: {iso:.1f} ms (median of the two short "
            f"trials) = {100 * iso / 1e3 / ppo['bare_s']:.3f}% of a {ppo['bare_s']:.1f} s smoke-suite PPO "
            f"trial (target < 5%); {ppo['isolation_ms']:+.1f} ms measured on the PPO trial itself"
        )
    else:
        print(
            f"per-trial child process (fork) of the local executor: {iso:.1f} ms (median of the two short trials)"
        )
    if ppo["agent"] != "sb3-ppo":
        print(
            f"fixed runner cost (median of the two short trials): {fixed:.1f} ms per trial; {load()}"
        )
        store.close()
        return rows
    print(
        f"fixed runner cost (median of the two short trials): {fixed:.1f} ms per trial = "
        f"{100 * fixed / 1e3 / ppo['bare_s']:.3f}% of a {ppo['bare_s']:.1f} s smoke-suite PPO trial "
        f"(target < 5%); {load()}"
    )
    store.close()
    return rows


# ----------------------------------------------------------------------------- part 2
def smoke_subset(seeds: list[int]) -> list[TrialSpec]:
    (entry,) = [e for e in benchmarks.get_suite("smoke") if e.task == TASK_ID]
    task = benchmarks.get_task(TASK_ID)
    specs: list[TrialSpec] = []
    for agent_name, kw in entry.agents.items():
        specs.extend(benchmarks.trials_for(task, agent_name, seeds, kw))
    return specs


def measure_throughput(
    tmp: Path, seeds: list[int], configs: list[tuple[str, int]], repeats: int = 1
) -> list[dict[str, Any]]:
    specs = smoke_subset(seeds)
    print(
        f"\n== Throughput: tutorial entry of the smoke suite, seeds {seeds}: {len(specs)} trials "
        f"({', '.join(sorted({s.agent for s in specs}))}); {repeats} pass(es), order "
        "forward then backward so that a drifting machine load evens out"
    )
    order = [c for r in range(repeats) for c in (configs if r % 2 == 0 else configs[::-1])]
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {c: [] for c in configs}
    reference: dict[str, dict[str, float]] | None = None
    for i, (executor, workers) in enumerate(tqdm(order, desc="executor runs", file=sys.stderr)):
        before = load()
        t0 = time.perf_counter()
        results = benchmarks.run(
            specs,
            store=tmp / f"tp-{executor}-{workers}-{i}.db",
            executor=make_executor(executor, workers),
            workers=workers,
            progress=False,
        )
        wall = time.perf_counter() - t0
        bad = [r for r in results if r.status != "FINISHED"]
        assert not bad, bad[0].traceback
        metrics = {r.key: r.metrics for r in results}
        if reference is None:
            reference = metrics
        same = metrics == reference
        busy = sum(r.wall_time_s for r in results)
        runs[(executor, workers)].append(
            {
                "wall_s": wall,
                "sum_trial_s": busy,
                "same": same,
                "load_before": before,
                "load_after": load(),
            }
        )
        tqdm.write(
            f"  {executor}:{workers}  {wall:7.1f} s wall, {60 * len(results) / wall:6.2f} trials/min, "
            f"sum of trial times {busy:7.1f} s, same metrics as the first run: {same}  ({before})",
            file=sys.stdout,
        )
    rows = []
    for (executor, workers), rs in runs.items():
        wall = statistics.median(r["wall_s"] for r in rs)
        rows.append(
            {
                "executor": executor,
                "workers": workers,
                "wall_s": wall,
                "trials": len(specs),
                "trials_per_min": 60 * len(specs) / wall,
                "sum_trial_s": statistics.median(r["sum_trial_s"] for r in rs),
                "same_metrics_as_first": all(r["same"] for r in rs),
                "runs": rs,
            }
        )
    print(f"{'config':<10} {'wall (median)':>14} {'trials/min':>11} {'sum of trial times':>19}")
    for r in rows:
        print(
            f"{r['executor'] + ':' + str(r['workers']):<10} {r['wall_s']:>13.1f}s {r['trials_per_min']:>11.2f} "
            f"{r['sum_trial_s']:>18.1f}s"
        )
    by = {(r["executor"], r["workers"]): r for r in rows}

    def ratio(a: tuple[str, int], b: tuple[str, int]) -> str:
        if a in by and b in by:
            return f"{by[b]['wall_s'] / by[a]['wall_s']:.2f}x"
        return "n/a"

    print("Ratios (speed-up = wall time of the second / wall time of the first):")
    for label, a, b in [
        ("process 2 workers vs process 1", ("process", 2), ("process", 1)),
        ("ray 2 CPUs vs ray 1 CPU", ("ray", 2), ("ray", 1)),
        ("process 1 vs local (in-process)", ("process", 1), ("local", 1)),
        ("ray 1 vs local (in-process)", ("ray", 1), ("local", 1)),
        ("ray 2 vs process 2", ("ray", 2), ("process", 2)),
        ("process 2 vs local", ("process", 2), ("local", 1)),
    ]:
        print(f"  {label:<34} {ratio(a, b)}")
    return rows


SLEEPER = "icml26.testing.faulty_agents:SlowZeroAgent"


def make_executor(name: str, workers: int) -> Any:
    """``local``, ``process``, ``ray``, or ``process-reuse`` / ``ray-reuse``: the same executors
    with worker processes kept across trials (no per-trial process start-up)."""
    if name == "process-reuse":
        from icml26.benchmarks.executors import ProcessExecutor

        return ProcessExecutor(workers=workers, max_tasks_per_child=None)
    if name == "ray-reuse":
        from icml26.benchmarks.ray_executor import RayExecutor

        return RayExecutor(workers=workers, fresh_worker_per_trial=False)
    return name


def measure_concurrency(
    tmp: Path, n_trials: int, sleep_s: float, configs: list[tuple[str, int]]
) -> list[dict[str, Any]]:
    """Trials that wait instead of compute (SlowZeroAgent sleeps at each of its 11 resets): the
    executors' own parallelism and per-trial cost, independent of how many cores are free."""
    specs = [TrialSpec(TASK_ID, 0, SLEEPER, {"sleep_s": sleep_s}, s) for s in range(n_trials)]
    ideal = 11 * sleep_s
    print(
        f"\n== Concurrency: {n_trials} trials of SlowZeroAgent(sleep_s={sleep_s}) on {TASK_ID}, "
        f"about {ideal:.1f} s of waiting each ({load()})"
    )
    rows = []
    for executor, workers in tqdm(configs, desc="executor runs", file=sys.stderr):
        t0 = time.perf_counter()
        results = benchmarks.run(
            specs,
            store=tmp / f"cc-{executor}-{workers}.db",
            executor=make_executor(executor, workers),
            workers=workers,
            progress=False,
        )
        wall = time.perf_counter() - t0
        assert all(r.status == "FINISHED" for r in results), [r.traceback for r in results][:1]
        bound = n_trials * ideal / workers
        rows.append(
            {
                "executor": executor,
                "workers": workers,
                "wall_s": wall,
                "ideal_s": bound,
                "per_trial_cost_s": (wall - bound) * workers / n_trials,
            }
        )
        tqdm.write(
            f"  {executor}:{workers}  {wall:6.1f} s wall vs {bound:5.1f} s if the workers only waited: "
            f"{rows[-1]['per_trial_cost_s']:.2f} s per trial on top",
            file=sys.stdout,
        )
    by = {(r["executor"], r["workers"]): r["wall_s"] for r in rows}
    for name in ("process", "ray", "process-reuse", "ray-reuse"):
        if (name, 1) in by and (name, 2) in by:
            print(
                f"  {name}: 1 -> 2 workers speed-up {by[(name, 1)] / by[(name, 2)]:.2f}x (ideal 2.00x)"
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--part",
        choices=["all", "overhead", "throughput", "concurrency", "aggregation"],
        default="all",
    )
    p.add_argument(
        "--store",
        type=Path,
        default=None,
        help="aggregation part: a real results store (e.g. results/smoke.db) to time as well",
    )
    p.add_argument("--seeds", default="0-1", help="seeds of the throughput subset (default 0-1)")
    p.add_argument(
        "--configs",
        default="local:1,process:1,process:2,ray:1,ray:2",
        help="executor:workers list (executors: local, process, ray, process-reuse, ray-reuse)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=2,
        help="passes over the executor configs (forward, backward, ...); medians reported",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a check of the script itself: no PPO in part 1, seed 0 only in part 2",
    )
    p.add_argument(
        "--json",
        type=Path,
        default=Path("results/perf_harness.json"),
        help="where to write the measurements (default results/perf_harness.json)",
    )
    args = p.parse_args(argv)
    configs = [(c.split(":")[0], int(c.split(":")[1])) for c in args.configs.split(",")]
    print(
        f"icml26 perf/harness.py: {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, {load()}"
    )
    out: dict[str, Any] = {"cpus": os.cpu_count(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    with tempfile.TemporaryDirectory() as d:
        if args.part in ("all", "overhead"):
            cases = OVERHEAD_CASES[:2] if args.quick else OVERHEAD_CASES
            out["overhead"] = measure_overhead(Path(d), cases)
        if args.part in ("all", "concurrency"):
            n = 4 if args.quick else 8
            cc = [c for c in configs if c[0] != "local"]
            cc += [(f"{name}-reuse", w) for name, w in cc if name in ("process", "ray")]
            out["concurrency"] = measure_concurrency(Path(d), n, 0.5, cc)
        if args.part in ("all", "throughput"):
            seeds = [0] if args.quick else as_seed_list(args.seeds)
            out["throughput"] = measure_throughput(Path(d), seeds, configs, args.repeats)
        if args.part in ("all", "aggregation"):
            # 4. aggregation: `icml26 results` on a smoke-shaped store and a 10x one (perf/aggregation.py)
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from aggregation import measure_aggregation

            store = args.store or (
                Path("results/smoke.db") if Path("results/smoke.db").exists() else None
            )
            out["aggregation"] = measure_aggregation(Path(d), store)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1))
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
