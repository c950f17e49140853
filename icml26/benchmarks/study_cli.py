"""``icml26 study list|run|report|export`` and ``icml26 plot`` (added to the ``icml26`` command).

icml26 study list
icml26 study run tutorial [--agent mypkg.agents:MyController --agent-kwargs '{"gain": 2}']
                          [--executor process --workers 2] [--seeds 0 --task 'tutorial/*']
                          [--scales 0.25,0.5] [--arms 'PPO,point-pd']
icml26 study report tutorial [--agent mypkg.agents:MyController --page mine.md]
icml26 study export tutorial            # docs/results/raw/tutorial.jsonl.gz
icml26 plot --study tutorial --out figs/ [--kind ladder,curves,profile]
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from pathlib import Path
from typing import Any

from icml26._cli_util import UsageError, parse_kwargs, print_rows

__all__ = ["add_parser", "add_plot_parser"]


def _extra_arms(args: argparse.Namespace) -> list[Any]:
    from icml26.benchmarks.study import Arm

    if not getattr(args, "agent", None):
        if getattr(args, "agent_kwargs", None) or getattr(args, "label", None):
            raise UsageError("--agent-kwargs / --label need --agent")
        return []
    from icml26.cli import _check_agent, _cwd_importable

    _cwd_importable()
    kwargs = parse_kwargs(args.agent_kwargs)
    _check_agent(args.agent, kwargs)
    return [Arm(args.label or args.agent, args.agent, kwargs)]


def cmd_list(args: argparse.Namespace) -> int:
    from icml26.benchmarks.studies import list_studies

    rows = [["study", "family", "page", "trials", "title"]]
    for s in list_studies():
        # distinct trials: two blocks may share one (the same arm, task and seed)
        rows.append([s.name, s.family, s.page, str(len({t.key for t in s.trials()})), s.title])
    print_rows(rows)
    return 0


def _subset(
    specs: list[Any], seeds: str | None, task: str | None, scales: str | None = None
) -> list[Any]:
    """The study's trials with one of ``seeds`` on a task id matching the glob ``task`` at one
    of the budget ``scales`` (comma-separated rungs of the ladder)."""
    from icml26.protocol import as_seed_list, check_budget_scale

    if seeds:
        keep = set(as_seed_list(seeds))
        specs = [s for s in specs if s.seed in keep]
    if task:
        specs = [s for s in specs if fnmatch.fnmatchcase(s.task_id, task)]
    if scales:
        try:
            rungs = {check_budget_scale(float(x)) for x in scales.split(",") if x.strip()}
        except ValueError as e:
            raise UsageError(
                f"--scales: expected comma-separated budget scales, got {scales!r} ({e})"
            ) from None
        specs = [s for s in specs if s.budget_scale in rungs]
    if not specs:
        raise UsageError("no trial of the study matches --seeds/--task/--scales")
    return specs


def cmd_run(args: argparse.Namespace) -> int:
    from icml26 import benchmarks
    from icml26.benchmarks.studies import get_study
    from icml26.cli import _executor_options

    study = get_study(args.name)
    arms = _extra_arms(args)
    plan = study.plan(arms)
    n_all = len({p.spec.key for p in plan})
    if args.arms:
        labels = [a.strip() for a in args.arms.split(",") if a.strip()]
        known = sorted({p.arm for p in plan})
        unknown = [a for a in labels if a not in known]
        if unknown:
            raise UsageError(f"--arms: unknown arm(s) {unknown}; the study's arms are {known}")
        plan = [p for p in plan if p.arm in labels]
    specs = list({p.spec.key: p.spec for p in plan}.values())
    specs = _subset(specs, args.seeds, args.task, args.scales)
    store = args.store or study.store_path
    part = f" of {n_all}" if len(specs) < n_all else ""
    print(f"study {study.name!r}: {len(specs)}{part} trials -> {store}", file=sys.stderr)
    results = benchmarks.run(
        specs,
        store=store,
        executor=args.executor,
        workers=args.workers,
        rerun=args.rerun,
        executor_options=_executor_options(args),
        trial_timeout=args.trial_timeout,
    )
    failed = [r for r in results if r.status == "FAILED"]
    print(
        f"{len(results) - len(failed)} finished, {len(failed)} failed; "
        f"next: icml26 study report {study.name}"
        + (f" --agent {args.agent} --page <your page>.md" if arms else "")
    )
    return 1 if failed else 0


def _load_results(study: Any, args: argparse.Namespace) -> tuple[list[Any], str]:
    from icml26.benchmarks.store import ResultsStore
    from icml26.benchmarks.study import read_archive

    archive = args.archive if args.archive not in (None, "") else None
    if args.archive is not None:
        path = Path(archive or study.archive_path)
        if not path.exists():
            raise UsageError(f"no archive at {path}: run `icml26 study export {study.name}` first")
        return read_archive(path), f"the archive {path}"
    store = args.store or study.store_path
    if "://" not in str(store) and not Path(store).exists():
        path = Path(study.archive_path)
        if path.exists():
            return read_archive(path), f"the archive {path}"
        raise UsageError(
            f"no store at {store} and no archive at {path}: run `icml26 study run {study.name}`"
        )
    with ResultsStore(store) as st:
        return st.results(), f"the store {store}"


def cmd_report(args: argparse.Namespace) -> int:
    from icml26.benchmarks import report
    from icml26.benchmarks.studies import get_study

    study = get_study(args.name)
    arms = _extra_arms(args)
    results, source = _load_results(study, args)
    path = report.write_page(study, results, page=args.page, extra_arms=arms, source=source)
    print(f"wrote {path}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from icml26.benchmarks.store import ResultsStore
    from icml26.benchmarks.studies import get_study
    from icml26.benchmarks.study import write_archive

    study = get_study(args.name)
    planned = {s.key for s in study.trials()}
    store = args.store or study.store_path
    if "://" not in str(store) and not Path(store).exists():
        raise UsageError(f"no store at {store}: run `icml26 study run {study.name}` first")
    with ResultsStore(store) as st:
        rows = [r for r in st.results() if r.key in planned]
    out = args.out or study.archive_path
    n = write_archive(rows, out)
    print(f"wrote {n} trial results of {len(planned)} planned to {out}")
    return 0


def _read_run(location: str) -> list[Any]:
    """A run's results: an archive (``*.jsonl.gz``) or a store (a path or a database URL)."""
    from icml26.benchmarks.store import ResultsStore
    from icml26.benchmarks.study import read_archive

    if location.endswith(".jsonl.gz"):
        if not Path(location).exists():
            raise UsageError(f"no archive at {location}")
        return read_archive(location)
    if "://" not in location and not Path(location).exists():
        raise UsageError(f"no store at {location}: expected a store path, a URL or a .jsonl.gz")
    with ResultsStore(location) as st:
        return st.results()


def cmd_compare(args: argparse.Namespace) -> int:
    from icml26.benchmarks.studies import get_study
    from icml26.benchmarks.study import compare_results

    study = get_study(args.name)
    planned = {s.key for s in study.trials()}
    runs = [[r for r in _read_run(loc) if r.key in planned] for loc in (args.run, args.against)]
    n, only_a, only_b, differ = compare_results(*runs)
    print(
        f"{study.name}: {len(planned)} planned trials; {len(runs[0])} in {args.run}, "
        f"{len(runs[1])} in {args.against}; {n} in both, {len(differ)} of them differ"
    )
    for what, keys in ((args.run, only_a), (args.against, only_b)):
        if keys:
            print(f"  {len(keys)} only in {what}, e.g. {keys[0]}")
    for key, fields in differ[: args.show]:
        print(f"  differs: {key}: {', '.join(fields)}")
    return 1 if differ else 0


def add_parser(sub: Any) -> None:
    """``icml26 study ...`` and ``icml26 plot``."""
    from icml26.cli import _add_run_options

    p = sub.add_parser("study", help="run a results page's study, render its page, export it")
    ssub = p.add_subparsers(dest="study_command", metavar="SUBCOMMAND")
    ssub.required = True

    q = ssub.add_parser("list", help="list the registered studies")
    q.set_defaults(func=cmd_list)

    def agent_options(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--agent", help="your agent (package.module:Class or a registered name): one more arm"
        )
        q.add_argument("--agent-kwargs", help="JSON object of your agent's constructor kwargs")
        q.add_argument("--label", help="your arm's name on the page (default: --agent)")

    q = ssub.add_parser("run", help="run a study's trials into its store (resumes)")
    q.add_argument("name", help="study name (see `icml26 study list`)")
    agent_options(q)
    q.add_argument(
        "--seeds",
        help="only the study's trials with these seeds, e.g. '0' or '0-2' (a first look; "
        "a later run without it adds the rest)",
    )
    q.add_argument(
        "--task", help="only the study's trials on task ids matching this glob, e.g. '*goofspiel*'"
    )
    q.add_argument(
        "--arms",
        help="only these arms (comma-separated labels as on the page, e.g. 'scripted,random')",
    )
    q.add_argument(
        "--scales",
        help="only the study's trials at these rungs of its budget ladder, e.g. '1,4' (the "
        "cheap rungs first; exact arms run at the top rung)",
    )
    _add_run_options(q, trials=False, store_default="results/studies/<name>.db")
    q.set_defaults(func=cmd_run)

    q = ssub.add_parser("report", help="write a study's page from its store or archive")
    q.add_argument("name")
    agent_options(q)
    q.add_argument("--store", help="results store (default: results/studies/<name>.db)")
    q.add_argument(
        "--archive",
        nargs="?",
        const="",
        help="render from the raw archive (default path: docs/results/raw/<name>.jsonl.gz)",
    )
    q.add_argument("--page", help="write the page here (default: the study's page)")
    q.set_defaults(func=cmd_report)

    q = ssub.add_parser("export", help="write the study's raw archive (gzip'd JSON lines)")
    q.add_argument("name")
    q.add_argument("--store", help="results store (default: results/studies/<name>.db)")
    q.add_argument("--out", help="archive path (default: docs/results/raw/<name>.jsonl.gz)")
    q.set_defaults(func=cmd_export)

    q = ssub.add_parser(
        "compare",
        help="compare two runs of a study trial by trial (executors, machines, commits)",
        description="Compare two runs of a study's trials (stores or .jsonl.gz archives): every "
        "stored field must match exactly except where and when a trial ran (wall and start "
        "time, git commit, package versions) and timing entries (*_cpu_s, *_wall_s, *_time_s). "
        "Exit status 1 when a trial in both differs.",
    )
    q.add_argument("name")
    q.add_argument("run", help="a store (path or URL) or an archive (*.jsonl.gz)")
    q.add_argument("against", help="the other run, likewise")
    q.add_argument("--show", type=int, default=20, help="differing trials to list (default 20)")
    q.set_defaults(func=cmd_compare)

    add_plot_parser(sub)


def cmd_plot(args: argparse.Namespace) -> int:
    from icml26.benchmarks import plots
    from icml26.benchmarks.store import ResultsStore

    kinds = [k.strip() for k in args.kind.split(",") if k.strip()]
    if args.study:
        from icml26.benchmarks.studies import get_study

        study = get_study(args.study)
        study.trials()  # registers the study's task variants
        store = args.store or study.store_path
    else:
        store = args.store
    with ResultsStore(store) as st:
        results = st.results(task_id=args.task)
    try:
        written = plots.plot_results(results, args.out, kinds, task=args.task)
    except ValueError as e:
        raise UsageError(str(e)) from None
    for p in written:
        print(f"wrote {p} (+ .svg)")
    if not written:
        print("nothing to plot (no curves, ladders or finished trials)")
    return 0


def add_plot_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plot", help="learning curves, budget ladders and performance profiles (PNG + SVG)"
    )
    p.add_argument("--store", help="results store (default: $ICML26_STORE or results/icml26.db)")
    p.add_argument("--study", help="a study's store (results/studies/<name>.db)")
    p.add_argument("--task", help="only this task id")
    p.add_argument("--out", default="figures", help="output folder (default: figures/)")
    p.add_argument(
        "--kind", default="curves,ladder,profile", help="comma-separated: curves, ladder, profile"
    )
    p.set_defaults(func=cmd_plot)
