"""The ``icml26`` command: list envs, agents and tasks; run trials and suites; show results.

    icml26 envs
    icml26 agents [--family F]
    icml26 tasks [--family F] [--suite S]
    icml26 run --task tutorial/point-reach --agent point-pd --seeds 0,1,2
    icml26 run --task tutorial/point-reach --agent mypkg.agents:MyAgent --out mine.json
    icml26 run --task tutorial/point-reach --agent point-pd --budget-scale 0.25,1,4
    icml26 bench --suite smoke [--family F] [--executor process --workers 2]
    icml26 results [--task T] [--curve]
    icml26 certify --task T --agent A --claim ">= 0.9 on every scenario"

Exit codes: 0 success, 1 some trial FAILED, 2 bad usage (unknown names, bad arguments).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from icml26._cli_util import UsageError, parse_kwargs, print_rows
from icml26._entry_points import accepted_kwargs, load_entry_point

# Sub-commands that live in other modules: "module:function" adding a parser to `subparsers`.
EXTRA_COMMANDS: list[str] = [
    "icml26.leaderboards.cli:add_parser",
    "icml26.certify.harness:add_parser",  # icml26 certify --task T --agent A --claim ">= 0.9 ..."
]


# ----------------------------------------------------------------------------- commands
def cmd_envs(args: argparse.Namespace) -> int:
    import icml26

    rows = [["id", "family", "description"]]
    for s in icml26.env_specs(args.family):
        rows.append([s["id"], s["family"], s.get("doc", "")])
    for s in icml26.parallel_env_specs(args.family):
        rows.append([f"{s['name']} (PettingZoo)", s["family"], s.get("doc", "")])
    print_rows(rows)
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    from icml26 import agents

    rows = [["name", "family", "description"]]
    for name in agents.names(args.family):
        s = agents.spec(name)
        rows.append([name, s.family, s.description])
    print_rows(rows)
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
            budget = ", ".join(
                f"{k}={v}" for k, v in t.budget.to_dict().items() if v not in (None, {})
            )
            rows.append(
                [
                    t.id,
                    f"v{t.version}",
                    t.env_id,
                    f"{t.primary_metric} ({t.primary.direction})",
                    budget,
                    ",".join(map(str, t.seeds)),
                ]
            )
    print_rows(rows)
    return 0


def _store_arg(args: argparse.Namespace) -> Any:
    from icml26.benchmarks.store import ResultsStore

    return ResultsStore(args.store)


def _finish(results: list[Any], args: argparse.Namespace) -> int:
    from icml26 import benchmarks

    print(benchmarks.format_tables(benchmarks.aggregate(results)))
    if len({r.budget_scale for r in results}) > 1:
        from icml26.benchmarks.tables import curves, format_curves

        print(format_curves(curves(results)))
    failed = [r for r in results if r.status == "FAILED"]
    for r in failed:
        last = (r.traceback or "").strip().splitlines()[-1:] or [""]
        print(f"FAILED {r.task_id} {r.agent_name} seed={r.seed}: {last[0]}", file=sys.stderr)
    print(
        f"{len(results) - len(failed)} finished, {len(failed)} failed; store: {args.store or 'default'}"
    )
    if getattr(args, "out", None):
        from icml26.leaderboards.bundle import write_bundles

        write_bundles(results, args.out, **_bundle_source(args))
    return 1 if failed else 0


def _cwd_importable() -> None:
    """Make the working directory importable, as ``python -m`` does (a console script does not),
    here and in worker processes, so ``--agent mypkg.agents:MyAgent`` finds ``./mypkg``."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if cwd not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([cwd, *parts])


def _check_agent(name: str, kwargs: dict[str, Any]) -> None:
    """Resolve the agent and construct it once with ``kwargs`` before any trial runs; a mistake
    (unknown name or module, missing class, bad kwarg) is a UsageError with a hint."""
    from icml26 import agents

    spec = agents.spec(name)  # unknown registered names: KeyError with suggestions
    try:
        cls = load_entry_point(spec.entry_point)
    except (ImportError, ValueError) as e:
        raise UsageError(f"--agent {name}: {e}") from None
    try:
        agents.make(name, **kwargs)
    except TypeError as e:
        accepted = accepted_kwargs(cls)
        bad = sorted(set(kwargs) - set(accepted)) if accepted is not None else []
        hint = (f"; unknown kwarg(s) {', '.join(bad)}" if bad else "") + (
            f"; {spec.entry_point} accepts: {', '.join(accepted) or '(no kwargs)'}"
            if accepted is not None
            else ""
        )
        raise UsageError(f"--agent {name}: {e}{hint}") from None
    except Exception as e:  # the constructor rejected a value: say so before running anything
        raise UsageError(
            f"--agent {name}: constructing it with {kwargs} raised {type(e).__name__}: {e}"
        ) from None


def _bundle_source(args: argparse.Namespace) -> dict[str, Any]:
    """``--agent-path`` / ``--agent-requirement`` for the submission bundle (default: found)."""
    path, req = getattr(args, "agent_path", None), getattr(args, "agent_requirement", None)
    if path and req:
        raise UsageError("give --agent-path or --agent-requirement, not both")
    if req:
        return {"requirement": req}
    if path:
        return {"path": str(path)}
    return {}


def _check_bundle_source(args: argparse.Namespace) -> None:
    """Before any trial: with ``--out``, the agent's code must be locatable (or given)."""
    from icml26 import agents
    from icml26._entry_points import check_code_path, code_location

    if (args.agent_path or args.agent_requirement) and not args.out:
        raise UsageError("--agent-path / --agent-requirement only apply with --out")
    if not args.out:
        return
    src = _bundle_source(args)
    entry_point = agents.spec(args.agent).entry_point
    if args.agent_path:
        try:
            check_code_path(entry_point, args.agent_path)
        except ValueError as e:
            raise UsageError(f"--agent-path: {e}") from None
    elif not src:
        try:
            code_location(entry_point)
        except ValueError as e:
            raise UsageError(str(e)) from None


def cmd_run(args: argparse.Namespace) -> int:
    from icml26 import benchmarks
    from icml26.protocol import as_seed_list

    _cwd_importable()
    task = benchmarks.get_task(args.task)
    seeds = as_seed_list(args.seeds) if args.seeds else list(task.seeds)
    kwargs = parse_kwargs(args.agent_kwargs)
    _check_agent(args.agent, kwargs)  # every usage mistake fails here, before any trial
    _check_bundle_source(args)
    specs = benchmarks.trials_for(task, args.agent, seeds, kwargs, args.budget_scale)
    return _run_specs(specs, args)


def _run_specs(specs: list[Any], args: argparse.Namespace) -> int:
    """Run the trials with the executor options of ``run``/``bench`` and report them."""
    from icml26 import benchmarks

    if getattr(args, "out", None) and any(s.budget_scale != 1.0 for s in specs):
        raise UsageError(
            "--out writes a leaderboard submission, which is scored at the task's own budget: "
            "drop --out or run --budget-scale 1"
        )

    results = benchmarks.run(
        specs,
        store=_store_arg(args),
        executor=args.executor,
        workers=args.workers,
        rerun=args.rerun,
        executor_options=_executor_options(args),
        trial_timeout=args.trial_timeout,
    )
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
        seeds = (
            as_seed_list(args.seeds)
            if args.seeds
            else (e.seeds if e.seeds is not None else task.seeds)
        )
        for agent, kw in e.agents.items():
            specs.extend(benchmarks.trials_for(task, agent, seeds, kw, args.budget_scale))
    print(f"suite {args.suite!r}: {len(specs)} trials", file=sys.stderr)
    _cwd_importable()
    return _run_specs(specs, args)


def cmd_results(args: argparse.Namespace) -> int:
    from icml26 import benchmarks

    store = _store_arg(args)
    results = store.results(task_id=args.task)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=1))
        return 0
    if args.curve:
        from icml26.benchmarks.tables import curves, format_curves

        print(
            format_curves(
                curves(
                    results,
                    metric=args.metric,
                    tolerance=args.tolerance,
                    relative=not args.absolute,
                )
            )
        )
        return 0
    print(benchmarks.format_tables(benchmarks.aggregate(results)))
    return 0


def _budget_scales(text: str) -> list[float]:
    """``--budget-scale``: comma-separated numbers > 0, e.g. ``0.25,1,4``."""
    from icml26.protocol import check_budget_scale

    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(check_budget_scale(float(part)))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected budget scales > 0 like '0.25,1,4', got {part!r} in {text!r}"
            ) from None
    if not out:
        raise argparse.ArgumentTypeError(f"no budget scale in {text!r}; expected e.g. '0.25,1,4'")
    return sorted(set(out))


_RAY_OPTIONS = {
    "ray_address": "address",
    "cpus_per_trial": "cpus_per_trial",
    "gpus_per_trial": "gpus_per_trial",
}


def _executor_options(args: argparse.Namespace) -> dict[str, Any]:
    given = {
        opt: getattr(args, dest)
        for dest, opt in _RAY_OPTIONS.items()
        if getattr(args, dest, None) is not None
    }
    if args.executor != "ray":
        if given:
            flags = ", ".join(
                "--" + d.replace("_", "-")
                for d in _RAY_OPTIONS
                if getattr(args, d, None) is not None
            )
            raise UsageError(
                f"{flags} only apply to --executor ray (got --executor {args.executor})"
            )
        return {}
    from icml26._entry_points import require

    try:
        require("ray", "ray", "--executor ray")
    except ImportError as e:
        raise UsageError(str(e)) from None
    return given


def _trial_timeout(text: str) -> float:
    """``--trial-timeout``: seconds > 0, or ``inf``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected seconds (a number > 0, or 'inf'), got {text!r}"
        ) from None
    if not value > 0:
        raise argparse.ArgumentTypeError(
            f"expected seconds > 0 (or 'inf' for no limit), got {text!r}"
        )
    return value


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--seeds", help="seeds, e.g. '0,1,2' or '0-4' (default: the task's public seeds)"
    )
    p.add_argument(
        "--store",
        help="results store: a SQLite path or a database URL "
        "(default: $ICML26_STORE or results/icml26.db)",
    )
    p.add_argument("--executor", default="local", help="local (default), process or ray")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="parallel trials for the process executor "
        "(ray: CPUs of the local Ray instance it starts when no --ray-address is given)",
    )
    p.add_argument(
        "--ray-address",
        help="with --executor ray: the cluster to use, e.g. 'auto' or "
        "'ray://head:10001' (default: start a local Ray instance)",
    )
    p.add_argument(
        "--cpus-per-trial",
        type=float,
        help="with --executor ray: CPUs each trial asks for (default 1)",
    )
    p.add_argument(
        "--gpus-per-trial",
        type=float,
        help="with --executor ray: GPUs each trial asks for (default 0)",
    )
    p.add_argument(
        "--budget-scale",
        type=_budget_scales,
        default=[1.0],
        metavar="SCALES",
        help="run at these multiples of the task's learning budget, e.g. '0.25,1,4' "
        "(a ladder; finished scales are skipped; default 1)",
    )
    p.add_argument("--rerun", action="store_true", help="run trials again even if already FINISHED")
    p.add_argument(
        "--trial-timeout",
        type=_trial_timeout,
        metavar="SECONDS",
        help="wall-clock limit of each trial ('inf' for none); a trial past it is killed "
        "and stored FAILED (default: the task's, see docs/scaling.md)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="also write a leaderboard submission bundle (JSON): "
        "FILE for one agent, FILE's name plus .<agent> per agent otherwise",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="icml26",
        description="icml26-gym: environments, agents, "
        "benchmarks and leaderboards for ICML 2026 methods",
    )
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
    p.add_argument(
        "--task", required=True, help="task id, e.g. tutorial/point-reach (see `icml26 tasks`)"
    )
    p.add_argument(
        "--agent", required=True, help="agent name (see `icml26 agents`) or package.module:Class"
    )
    p.add_argument("--agent-kwargs", help="JSON object of agent constructor kwargs")
    _add_run_options(p)
    p.add_argument(
        "--agent-path",
        metavar="DIR",
        help="with --out: the directory a verifier puts on "
        "sys.path to import your agent (default: found from the entry point)",
    )
    p.add_argument(
        "--agent-requirement",
        metavar="REQ",
        help="with --out: the pip requirement that "
        "provides your agent, e.g. 'mypkg==1.0' (default: its installed distribution)",
    )
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
    p.add_argument(
        "--curve",
        action="store_true",
        help="score vs budget scale per agent, with the plateau test of the last step",
    )
    p.add_argument("--metric", help="with --curve: this metric (default: the task's primary)")
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.05,
        help="with --curve: the plateau band, a fraction of the lower rung's mean (default 0.05)",
    )
    p.add_argument(
        "--absolute",
        action="store_true",
        help="with --curve: --tolerance is in the metric's units, not a fraction",
    )
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
