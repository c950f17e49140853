"""The ``icml26`` command: list envs, agents and tasks; run trials and suites; show results.

    icml26 --version
    icml26 envs [--family F]
    icml26 agents [--family F]
    icml26 tasks [--family F] [--suite S]
    icml26 run --task tutorial/point-reach --agent point-pd --seeds 0,1,2
    icml26 run --task tutorial/point-reach --agent mypkg.agents:MyAgent --out mine.json
    icml26 run --task tutorial/point-reach --agent point-pd --budget-scale 0.25,1,4
    icml26 bench --suite smoke [--family F] [--executor local] [--workers N]
    icml26 results [--store S] [--task T] [--agent A] [--family F] [--wide] [--curve]
    icml26 certify --task T --agent A --claim ">= 0.9 on every scenario"

Exit codes: 0 success, 1 some trial FAILED, 2 bad usage (unknown names, bad arguments, a store
that is missing, foreign or damaged: one line naming it and what was expected).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from icml26._cli_util import (
    TABLE_WIDTH,
    UsageError,
    check_agent,
    check_family,
    check_task,
    open_results_store,
    parse_kwargs,
    print_rows,
    seeds_text,
    unknown_name,
    version_line,
)
from icml26._entry_points import accepted_kwargs, load_entry_point

# Sub-commands that live in other modules: "module:function" adding a parser to `subparsers`.
EXTRA_COMMANDS: list[str] = [
    "icml26.leaderboards.cli:add_parser",
    "icml26.benchmarks.study_cli:add_parser",
    "icml26.certify.harness:add_parser",  # icml26 certify --task T --agent A --claim ">= 0.9 ..."
]


# ----------------------------------------------------------------------------- commands
def cmd_envs(args: argparse.Namespace) -> int:
    import icml26

    check_family(args.family)
    rows = [["id", "family", "description"]]
    for s in icml26.env_specs(args.family):
        rows.append([s["id"], s["family"], s.get("doc", "")])
    for s in icml26.parallel_env_specs(args.family):
        rows.append([f"{s['name']} (PettingZoo)", s["family"], s.get("doc", "")])
    print_rows(rows, None if args.wide else TABLE_WIDTH)
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    from icml26 import agents

    check_family(args.family)
    rows = [["name", "family", "description"]]
    for name in agents.names(args.family):
        s = agents.spec(name)
        rows.append([name, s.family, s.description])
    print_rows(rows, None if args.wide else TABLE_WIDTH)
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    from icml26 import benchmarks

    check_family(args.family)
    if args.suite:
        rows = [["task", "agents", "seeds"]]
        for e in _suite_entries(args.suite, args.family):
            t = benchmarks.get_task(e.task)
            seeds = e.seeds if e.seeds is not None else t.seeds
            rows.append([e.task, ", ".join(e.agents), seeds_text(seeds)])
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
                    seeds_text(t.seeds),
                ]
            )
    print_rows(rows, None if args.wide else TABLE_WIDTH)
    return 0


def _store_arg(args: argparse.Namespace) -> Any:
    """The results store the trials go to (created if missing)."""
    return open_results_store(args.store, create=True)


def _finish(results: list[Any], args: argparse.Namespace, store: Any) -> int:
    from icml26 import benchmarks

    tables = benchmarks.format_tables(benchmarks.aggregate(results), width=_width(args))
    if len({r.budget_scale for r in results}) > 1:
        from icml26.benchmarks.tables import curves, format_curves

        tables += "\n" + format_curves(curves(results))
    print(tables)
    failed = [r for r in results if r.status == "FAILED"]
    for r in failed:
        last = (r.traceback or "").strip().splitlines()[-1:] or [""]
        print(f"FAILED {r.task_id} {r.agent_name} seed={r.seed}: {last[0]}", file=sys.stderr)
    if getattr(args, "out", None):
        from icml26.leaderboards.bundle import write_bundles

        write_bundles(results, args.out, **_bundle_source(args))
    if args.command == "bench":
        _bench_summary(results, failed, args, store, tables)
    else:
        print(
            f"{len(results) - len(failed)} finished, {len(failed)} failed; store: {store.location}"
        )
    return 1 if failed else 0


def _width(args: argparse.Namespace) -> int | None:
    """The tables' width: 120 columns, or as wide as they are with ``--wide``."""
    from icml26.benchmarks.tables import TABLE_WIDTH

    return None if getattr(args, "wide", False) else TABLE_WIDTH


def _bench_summary(
    results: list[Any], failed: list[Any], args: argparse.Namespace, store: Any, tables: str
) -> None:
    """The last line of ``icml26 bench``: trials, failures, wall time, the store and the tables
    (written next to an SQLite store as ``<name>-tables.txt``)."""
    wall = time.monotonic() - args.started
    where = f"store {store.location}"
    path = Path(store.location)
    if path.suffix and path.parent.is_dir():
        out = path.with_name(f"{path.stem}-tables.txt")
        out.write_text(tables + "\n")
        where += f"; tables above and in {out}"
    ran = len(results) - args.already_done
    workers = f" on {args.workers} worker{'s' * (args.workers != 1)}" if ran else ""
    print(
        f"bench {args.suite}: {len(results)} trials ({args.already_done} already done, {ran} run "
        f"now), {len(failed)} failed; {_duration(wall)}{workers}; {where}"
    )


def _duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


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

    check_agent(name)  # unknown registered names: suggestions
    spec = agents.spec(name)
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
    check_task(args.task)
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

    with _store_arg(args) as store:
        args.started = time.monotonic()
        args.already_done = 0 if args.rerun else len({s.key for s in specs} & store.finished_keys())
        results = benchmarks.run(
            specs,
            store=store,
            executor=args.executor,
            workers=args.workers,
            rerun=args.rerun,
            executor_options=_executor_options(args),
            trial_timeout=args.trial_timeout,
        )
        return _finish(results, args, store)


def _suite_entries(suite: str, family: str | None) -> list[Any]:
    from icml26 import benchmarks

    check_family(family)
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

    check_family(args.family)
    # a reader creates nothing, and closing removes SQLite's -wal/-shm files it opened
    with open_results_store(args.store, create=False) as store:
        results = store.results(task_id=args.task, agent_name=args.agent)
        if not results and (args.task or args.agent):
            _check_result_names(store, args)
    if args.family:
        results = [r for r in results if _family_of(r.task_id) == args.family]
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
    print(benchmarks.format_tables(benchmarks.aggregate(results), width=_width(args)))
    failed = sum(r.status == "FAILED" for r in results)
    print(f"{len(results)} trials ({failed} failed); store: {store.location}")
    return 0


def _family_of(task_id: str) -> str:
    return task_id.partition("/")[0]


def _check_result_names(store: Any, args: argparse.Namespace) -> None:
    """``results --task/--agent`` matched nothing: a name neither registered nor in the store is
    a usage error with the closest names of both; a known name just has no results here."""
    from icml26 import agents, benchmarks

    stored = store.results()
    for kind, given, registered, found, listing in (
        ("task", args.task, benchmarks.task_ids(), {r.task_id for r in stored}, "icml26 tasks"),
        ("agent", args.agent, agents.names(), {r.agent_name for r in stored}, "icml26 agents"),
    ):
        if given is not None and given not in set(registered) | found:
            raise unknown_name(kind, given, set(registered) | found, listing)


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
    per_worker = getattr(args, "trials_per_worker", None)
    if per_worker is not None:
        if args.executor not in ("process", "ray"):
            raise UsageError(
                "--trials-per-worker only applies to --executor process or ray "
                f"(got {args.executor})"
            )
        if per_worker < 1:
            raise UsageError(f"--trials-per-worker must be >= 1, got {per_worker}")
    given = {
        opt: getattr(args, dest)
        for dest, opt in _RAY_OPTIONS.items()
        if getattr(args, dest, None) is not None
    }
    if args.executor != "ray":
        if args.executor == "process" and per_worker is not None:
            return {"max_tasks_per_child": per_worker}
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
    if per_worker is not None:
        given["trials_per_worker"] = per_worker
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


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _resolve_workers(args: argparse.Namespace) -> None:
    """run/bench ``--workers``: every core unless told (the local executor: one at a time)."""
    if not hasattr(args, "workers"):
        return
    if args.workers is None:
        args.workers = 1 if args.executor == "local" else available_cores()
    elif args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")


def _add_run_options(
    p: argparse.ArgumentParser,
    executor: str = "local",
    trials: bool = True,
    store_default: str = "$ICML26_STORE or results/icml26.db",
) -> None:
    """The executor and store options; with ``trials`` also --seeds, --budget-scale, --out."""
    if trials:
        p.add_argument(
            "--seeds", help="seeds, e.g. '0,1,2' or '0-4' (default: the task's public seeds)"
        )
    p.add_argument(
        "--store",
        help=f"results store: a SQLite path or a database URL (default: {store_default})",
    )
    p.add_argument(
        "--executor",
        default=executor,
        help=f"local (one trial at a time), process (--workers at a time) or ray "
        f"(default: {executor})",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="parallel trials for the process executor (default: every core, "
        f"{available_cores()} here); ray: CPUs of the local Ray instance it starts when no "
        "--ray-address is given (default: every core)",
    )
    p.add_argument(
        "--wide", action="store_true", help="print the tables at full width (default: 120 columns)"
    )
    p.add_argument(
        "--trials-per-worker",
        type=int,
        metavar="N",
        help="with --executor process or ray: trials a worker process runs before it is "
        "replaced (default 1: a fresh process per trial; more saves the start-up of each)",
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
    if trials:
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
    if not trials:
        return
    p.add_argument(
        "--out",
        metavar="FILE",
        help="also write a leaderboard submission bundle (JSON): "
        "FILE for one agent, FILE's name plus .<agent> per agent otherwise",
    )


class _VersionAction(argparse.Action):
    """``--version``: computed only when asked (it runs git)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="icml26",
        description="icml26-gym: environments, agents, "
        "benchmarks and leaderboards for ICML 2026 methods",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print the package version and git commit, exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("envs", help="list registered environment ids")
    p.add_argument("--family", help="only this family")
    p.add_argument("--wide", action="store_true", help="full width (default: 120 columns)")
    p.set_defaults(func=cmd_envs)

    p = sub.add_parser("agents", help="list registered agents")
    p.add_argument("--family", help="only agents usable on this family (plus generic ones)")
    p.add_argument("--wide", action="store_true", help="full width (default: 120 columns)")
    p.set_defaults(func=cmd_agents)

    p = sub.add_parser("tasks", help="list tasks, or the entries of a suite")
    p.add_argument("--family", help="only this family")
    p.add_argument("--suite", help="show this suite's entries (smoke, full)")
    p.add_argument("--wide", action="store_true", help="full width (default: 120 columns)")
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
    _add_run_options(p, executor="process")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("results", help="aggregate stored results into per-task tables")
    p.add_argument("--task", help="only this task id")
    p.add_argument("--agent", help="only this agent name")
    p.add_argument("--family", help="only this family's tasks")
    p.add_argument(
        "--store",
        help="results store path or URL, read only (default: $ICML26_STORE or results/icml26.db)",
    )
    p.add_argument("--json", action="store_true", help="print the raw trial results as JSON")
    p.add_argument(
        "--wide", action="store_true", help="print the tables at full width (default: 120 columns)"
    )
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
        _resolve_workers(args)
        return int(args.func(args) or 0)
    except (UsageError, KeyError, ValueError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"icml26 {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader stopped reading (`icml26 agents | head`): no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor at exit's flush
        return 128 + 13  # as the shell reports a process killed by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
