"""Cost of verifying in a sandbox: one held-out trial with the agent in a worker process versus
the same trial in-process (the runner's ``execute_trial``), per agent, median of repeats.

    python perf/leaderboard_sandbox.py                 # point-pd and random, 5 repeats
    python perf/leaderboard_sandbox.py --agents point-pd --repeats 9

The sandbox adds a fixed start-up (a fresh ``python -I`` worker importing the package and the
agent; confined, also its namespaces, read-only view, hidden directories, tmpfs, uid change and
cgroup: :mod:`icml26.leaderboards.jail`) and one pipe round trip per agent call. Both are
printed as milliseconds per trial and as the ratio sandboxed / in-process; the metrics of every
variant must be identical (the script stops otherwise). The machine's load average is printed:
on a shared machine compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from icml26 import agents, benchmarks
from icml26.benchmarks.runner import TrialSpec, execute_trial
from icml26.leaderboards.sandbox import Limits, namespaces_available, run_sandboxed_trial


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--task", default="tutorial/point-reach")
    ap.add_argument("--agents", default="point-pd,random")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    task = benchmarks.get_task(args.task)
    variants = ["in-process", "sandbox, unisolated"] + (
        ["sandbox, isolated"] if namespaces_available() else []
    )
    print(f"load average before: {os.getloadavg()}")
    for name in args.agents.split(","):
        spec = agents.spec(name)
        times: dict[str, list[float]] = {v: [] for v in variants}
        reference = None
        for r in range(args.repeats + 1):  # the first pass warms caches and is dropped
            for v in variants if r % 2 else variants[::-1]:
                t0 = time.perf_counter()
                if v == "in-process":
                    res = execute_trial(TrialSpec(task.id, task.version, name, {}, 1000 + r))
                    metrics = res.metrics
                else:
                    out, _ = run_sandboxed_trial(
                        task,
                        spec.entry_point,
                        dict(spec.kwargs),
                        1000 + r,
                        requirement="icml26-gym==0.1.0",
                        limits=Limits(wall_s=600),
                        namespaces=v.endswith(", isolated"),
                    )
                    metrics = out.metrics
                if r:
                    times[v].append(time.perf_counter() - t0)
                if reference is None or reference[0] != r:
                    reference = (r, metrics)
                elif reference[1] != metrics:
                    raise SystemExit(
                        f"{name} seed {1000 + r}: {v} gave {metrics}, expected {reference[1]}"
                    )
        base = statistics.median(times["in-process"])
        for v in variants:
            m = statistics.median(times[v])
            print(
                f"{args.task} {name:10s} {v:20s} {1000 * m:9.1f} ms/trial  x{m / base:6.2f}  "
                f"(+{1000 * (m - base):8.1f} ms)"
            )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
