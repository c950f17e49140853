"""The ``icml26`` command: list envs, agents and tasks; run trials and suites; show results.

    icml26 envs
    icml26 agents [--family F]
    icml26 tasks [--family F] [--suite S]
    icml26 run --task tutorial/point-reach --agent point-pd --seeds 0,1,2
    icml26 bench --suite smoke [--family F] [--executor process --workers 2]
    icml26 results [--task T]

Exit codes: 0 success, 1 some trial FAILED, 2 bad usage (unknown names, bad arguments).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from icml26._entry_points import load_entry_point

# Sub-commands that live in other modules: "module:function" adding a parser to `subparsers`.
EXTRA_COMMANDS: list[str] = ["icml26.leaderboards.cli:add_parser"]


class UsageError(Exception):
    """A user mistake: printed without a traceback, exit code 2."""


def _print_rows(rows: list[list[str]]) -> None:
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


# ----------------------------------------------------------------------------- commands
def cmd_envs(args: argparse.Namespace) -> int:
    import icml26

    rows = [["id", "family", "description"]]
    for s in icml26.env_specs(args.family):
        rows.append([s["id"], s["family"], s.get("doc", "")])
    for s in icml26.parallel_env_specs(args.family):
        rows.append([f"{s['name']} (PettingZoo)", s["family"], s.get("doc", "")])
    _print_rows(rows)
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    from icml26 import agents

    rows = [["name", "family", "description"]]
    for name in agents.names(args.family):
        s = agents.spec(name)
        rows.append([name, s.family, s.description])
    _print_rows(rows)
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    from icml26 import benchmarks

    if args.suite:
        rows = [["task", "agents", "seeds"]]
        for e in _suite_entries(args.suite, args.family):
            t = benchmarks.get_task(e.task)
            seeds = e.seeds if e.seeds is not None else t.seeds
            rows.append([e.task, ", ".join(e.agents), ",".join(map(str, seeds))])
    else:
        rows = [["task", "version", "env", "primary metric", "budget", "seeds"]]
        for t in benchmarks.list_tasks(args.family):
            budget = ", ".join(f"{k}={v}" for k, v in t.budget.to_dict().items() if v not in (None, {}))
            rows.append([t.id, f"v{t.version}", t.env_id, f"{t.primary_metric} ({t.primary.direction})",
                         budget, ",".join(map(str, t.seeds))])
    _print_rows(rows)
    return 0


def _store_arg(args: argparse.Namespace) -> Any:
    from icml26.benchmarks.store import ResultsStore

    return ResultsStore(args.store)


def _finish(results: list[Any], args: argparse.Namespace) -> int:
    from icml26 import benchmarks

    print(benchmarks.format_tables(benchmarks.aggregate(results)))
    failed = [r for r in results if r.status == "FAILED"]
    for r in failed:
        last = (r.traceback or "").strip().splitlines()[-1:] or [""]
        print(f"FAILED {r.task_id} {r.agent_name} seed={r.seed}: {last[0]}", file=sys.stderr)
    print(f"{len(results) - len(failed)} finished, {len(failed)} failed; store: {args.store or 'default'}")
    if getattr(args, "out", None):
        from icml26.leaderboards.bundle import write_bundles

        write_bundles(results, args.out)
    return 1 if failed else 0


def _parse_kwargs(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        kw = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"--agent-kwargs must be a JSON object, e.g. '{{\"lr\": 0.001}}': {e}") from None
    if not isinstance(kw, dict):
        raise UsageError(f"--agent-kwargs must be a JSON object, got {type(kw).__name__}")
    return kw


def cmd_run(args: argparse.Namespace) -> int:
    from icml26 import agents, benchmarks
    from icml26.protocol import as_seed_list

    task = benchmarks.get_task(args.task)
    agents.spec(args.agent)  # unknown names fail here, before any work
    seeds = as_seed_list(args.seeds) if args.seeds else list(task.seeds)
    specs = benchmarks.trials_for(task, args.agent, seeds, _parse_kwargs(args.agent_kwargs))
    results = benchmarks.run(specs, store=_store_arg(args), executor=args.executor,
                             workers=args.workers, rerun=args.rerun,
                             executor_options=_executor_options(args))
    return _finish(results, args)


def _suite_entries(suite: str, family: str | None) -> list[Any]:
    from icml26 import benchmarks

    entries = benchmarks.get_suite(suite)
    if family:
        entries = [e for e in entries if benchmarks.get_task(e.task).family == family]
        if not entries:
            raise UsageError(f"suite {suite!r} has no task of family {family!r}")
    return entries


def cmd_bench(args: argparse.Namespace) -> int:
    from icml26 import benchmarks
    from icml26.protocol import as_seed_list

    specs = []
    for e in _suite_entries(args.suite, args.family):
        task = benchmarks.get_task(e.task)
        seeds = as_seed_list(args.seeds) if args.seeds else (e.seeds if e.seeds is not None else task.seeds)
        for agent, kw in e.agents.items():
            specs.extend(benchmarks.trials_for(task, agent, seeds, kw))
    print(f"suite {args.suite!r}: {len(specs)} trials", file=sys.stderr)
    results = benchmarks.run(specs, store=_store_arg(args), executor=args.executor,
                             workers=args.workers, rerun=args.rerun,
                             executor_options=_executor_options(args))
    return _finish(results, args)


def cmd_results(args: argparse.Namespace) -> int:
    from icml26 import benchmarks

    store = _store_arg(args)
    results = store.results(task_id=args.task)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1))
        return 0
    print(benchmarks.format_tables(benchmarks.aggregate(results)))
    return 0


_RAY_OPTIONS = {"ray_address": "address", "cpus_per_trial": "cpus_per_trial",
                "gpus_per_trial": "gpus_per_trial"}


def _executor_options(args: argparse.Namespace) -> dict[str, Any]:
    given = {opt: getattr(args, dest) for dest, opt in _RAY_OPTIONS.items()
             if getattr(args, dest, None) is not None}
    if args.executor != "ray":
        if given:
            flags = ", ".join("--" + d.replace("_", "-") for d in _RAY_OPTIONS if getattr(args, d, None) is not None)
            raise UsageError(f"{flags} only apply to --executor ray (got --executor {args.executor})")
        return {}
    from icml26._entry_points import require

    try:
        require("ray", "ray", "--executor ray")
    except ImportError as e:
        raise UsageError(str(e)) from None
    return given


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", help="seeds, e.g. '0,1,2' or '0-4' (default: the task's public seeds)")
    p.add_argument("--store", help="results store: a SQLite path or a database URL "
                   "(default: $ICML26_STORE or results/icml26.db)")
    p.add_argument("--executor", default="local", help="local (default), process or ray")
    p.add_argument("--workers", type=int, default=1, help="parallel trials for the process executor "
                   "(ray: CPUs of the local Ray instance it starts when no --ray-address is given)")
    p.add_argument("--ray-address", help="with --executor ray: the cluster to use, e.g. 'auto' or "
                   "'ray://head:10001' (default: start a local Ray instance)")
    p.add_argument("--cpus-per-trial", type=float, help="with --executor ray: CPUs each trial asks for (default 1)")
    p.add_argument("--gpus-per-trial", type=float, help="with --executor ray: GPUs each trial asks for (default 0)")
    p.add_argument("--rerun", action="store_true", help="run trials again even if already FINISHED")
    p.add_argument("--out", metavar="FILE", help="also write a leaderboard submission bundle (JSON): "
                   "FILE for one agent, FILE's name plus .<agent> per agent otherwise")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icml26", description="icml26-gym: environments, agents, "
                                     "benchmarks and leaderboards for ICML 2026 methods")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("envs", help="list registered environment ids")
    p.add_argument("--family", help="only this family")
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("agents", help="list registered agents")
    p.add_argument("--family", help="only agents usable on this family (plus generic ones)")
    p.set_defaults(func=cmd_agents)

    p = sub.add_parser("tasks", help="list tasks, or the entries of a suite")
    p.add_argument("--family", help="only this family")
    p.add_argument("--suite", help="show this suite's entries (smoke, full)")
    p.set_defaults(func=cmd_tasks)

    p = sub.add_parser("run", help="run one agent on one task over seeds")
    p.add_argument("--task", required=True, help="task id, e.g. tutorial/point-reach (see `icml26 tasks`)")
    p.add_argument("--agent", required=True, help="agent name (see `icml26 agents`) or package.module:Class")
    p.add_argument("--agent-kwargs", help="JSON object of agent constructor kwargs")
    _add_run_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("bench", help="run a named suite (smoke, full) and print the tables")
    p.add_argument("--suite", default="smoke", help="suite name (default: smoke)")
    p.add_argument("--family", help="only this family's tasks")
    _add_run_options(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("results", help="aggregate stored results into per-task tables")
    p.add_argument("--task", help="only this task id")
    p.add_argument("--store", help="results store path or URL")
    p.add_argument("--json", action="store_true", help="print the raw trial results as JSON")
    p.set_defaults(func=cmd_results)

    for ep in EXTRA_COMMANDS:
        add: Callable[[Any], None] = load_entry_point(ep)
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UsageError, KeyError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"icml26 {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
