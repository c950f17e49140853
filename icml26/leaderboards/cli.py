"""``icml26 leaderboard ...``: submit, verify, show, render, serve, tokens, bundles.

    icml26 run --task tutorial/point-reach --agent point-pd --out pd.json   # writes a bundle
    icml26 leaderboard submit pd.json                          # into the local store
    icml26 leaderboard submit pd.json --server https://lb.example.org --token $TOKEN
    icml26 leaderboard verify 3            # or --pending: re-run on fresh held-out seeds, sandboxed
    icml26 leaderboard show [--task tutorial/point-reach] [--entry 3] [--json]
    icml26 leaderboard render --out site/  # static site, opens from disk
    icml26 leaderboard serve --port 8026   # pages + JSON API + POST /api/submissions
    icml26 leaderboard token create alice  # prints the token once; stores its hash
    icml26 leaderboard bundle --results results/icml26.db --agent point-pd --out pd.json
    icml26 leaderboard sign                # organizers: sign rows after checking the store

The leaderboard store is ``--store`` (a SQLite path or database URL), else
``$ICML26_LEADERBOARD``, else ``results/leaderboard.db``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from icml26._cli_util import (
    check_task,
    open_results_store,
    parse_kwargs,
    print_rows,
    unknown_name,
)

__all__ = ["add_parser"]


def _store(args: argparse.Namespace) -> Any:
    from icml26.leaderboards.store import LeaderboardStore

    return LeaderboardStore(args.store)


def _print_errors(errors: list[dict[str, str]]) -> None:
    for e in errors:
        print(f"  {e['field']}: {e['message']}", file=sys.stderr)


def cmd_submit(args: argparse.Namespace) -> int:
    from icml26.leaderboards.bundle import load_bundle_bytes
    from icml26.leaderboards.validate import LIMITS, SubmissionInvalid

    try:
        raw = load_bundle_bytes(args.file, LIMITS["bundle_bytes"])
    except OSError as e:
        print(
            f"icml26 leaderboard submit: cannot read {args.file}: {e.strerror or e}",
            file=sys.stderr,
        )
        return 2
    if args.server:
        return _submit_remote(args, raw)
    try:
        receipt = _store(args).submit(raw, submitter=args.submitter)
    except SubmissionInvalid as e:
        print(f"rejected: {args.file} ({e.kind}):", file=sys.stderr)
        _print_errors([x.to_dict() for x in e.errors])
        return 2
    ids = ", ".join(f"#{i}" for i in receipt.entry_ids)
    print(
        f"stored submission #{receipt.submission_id}: entries {ids} for "
        f"{', '.join(receipt.tasks)}, status PENDING (verify with `icml26 leaderboard verify "
        f"{receipt.entry_ids[0]}`)"
    )
    return 0


def _submit_remote(args: argparse.Namespace, raw: bytes) -> int:
    import httpx

    token = args.token or os.environ.get("ICML26_LEADERBOARD_TOKEN")
    if not token:
        print(
            "icml26 leaderboard submit: --server needs --token (or $ICML26_LEADERBOARD_TOKEN)",
            file=sys.stderr,
        )
        return 2
    url = args.server.rstrip("/") + "/api/submissions"
    try:
        r = httpx.post(
            url,
            content=raw,
            timeout=args.timeout,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
    except httpx.HTTPError as e:
        print(f"icml26 leaderboard submit: cannot reach {url}: {e}", file=sys.stderr)
        return 1
    try:
        body = r.json()
    except ValueError:
        body = {"error": r.text[:500]}
    if r.status_code == 201:
        ids = ", ".join(f"#{i}" for i in body["entry_ids"])
        print(
            f"accepted by {args.server}: submission #{body['submission_id']}, entries {ids}, "
            "status PENDING"
        )
        return 0
    print(
        f"rejected by {args.server} (HTTP {r.status_code}): {body.get('error', '')}",
        file=sys.stderr,
    )
    _print_errors(body.get("errors", []))
    return 2 if 400 <= r.status_code < 500 else 1


def cmd_verify(args: argparse.Namespace) -> int:
    """Exit status: 0 when every entry verified, 1 when any was REJECTED or FAILED, 2 for a
    usage problem (unknown or non-PENDING entry, sandbox unavailable). Goes on past failures."""
    from icml26.leaderboards.sandbox import Limits, SandboxUnavailable, docker_command
    from icml26.leaderboards.verify import VerificationError, verify_entry

    st = _store(args)
    ids = list(args.ids)
    if args.pending:
        ids += [e.id for e in st.entries(status="PENDING") if e.id not in ids]
    if not ids:
        print(
            "icml26 leaderboard verify: give entry ids or --pending (no pending entries)",
            file=sys.stderr,
        )
        return 2 if not args.pending else 0
    limits = None
    if args.memory_mb is not None:
        limits = Limits(memory_mb=args.memory_mb)
    if args.sandbox == "docker":
        try:
            docker_command(args.image, limits or Limits(), name="check")
        except SandboxUnavailable as err:
            print(f"icml26 leaderboard verify: {err}", file=sys.stderr)
            return 2
    worst = 0
    for i in ids:
        try:
            e = verify_entry(
                st,
                i,
                install=args.install,
                force=args.force,
                sandbox=args.sandbox,
                image=args.image,
                limits=limits,
                trial_timeout=args.trial_timeout,
                max_attempts=args.max_attempts,
                allow_unisolated=args.allow_unisolated,
                nonce=args.nonce,
            )
        except SandboxUnavailable as err:
            print(f"icml26 leaderboard verify: {err}", file=sys.stderr)
            return 2
        except (VerificationError, KeyError) as err:
            print(f"#{i}: {err.args[0] if err.args else err}", file=sys.stderr)
            worst = max(worst, 2)
            continue
        print(f"#{e.id} {e.name} on {e.task_key}: {e.status}: {e.reason}", flush=True)
        if e.status != "VERIFIED":
            worst = max(worst, 1)
    return worst


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _source(agent: dict[str, Any]) -> str:
    code = agent.get("code")
    if isinstance(code, dict):
        return f"{code.get('format')} carried in the bundle, {code.get('sha256')}"
    return str(agent.get("requirement") or agent.get("path"))


def _show_entry(st: Any, args: argparse.Namespace) -> int:
    """``show --entry N``: one entry's provenance and history (``--detail``: the organizer's
    private detail too)."""
    e = st.entry(args.entry)
    if args.json:
        print(json.dumps(e.public_dict(), indent=1))
        return 0
    print(f"#{e.id} {e.name}  [{e.status}] {e.reason}")
    print(
        f"task {e.task_key}; agent {e.agent['name']} ({e.agent['entry_point']}, kwargs "
        f"{json.dumps(e.agent.get('kwargs', {}))}, version {e.agent.get('version')})"
    )
    print(
        f"source: {_source(e.agent)}; commit {e.git_commit}; "
        f"hash {e.content_hash}; submitted {e.submitted_at} by {e.submitter}"
    )
    for ev in e.events:
        print(f"  {ev['at']}  {ev['status']:<8}  {ev['actor']}: {ev['reason']}")
    if e.integrity in ("mismatch", "unsigned"):
        print(f"  INTEGRITY: {e.integrity} (the stored rows do not match their signatures)")
    if args.detail:
        detail = st.private_detail(e.id)
        print("organizer's detail (not public):")
        print(json.dumps(detail, indent=1) if detail else "  (none)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from icml26.leaderboards.ranking import rank_all

    check_task(args.task)
    st = _store(args)
    _with_reference(st, args)
    if args.entry is not None:
        return _show_entry(st, args)
    rankings = rank_all(
        st.entries() if args.task is None else st.entries(task=args.task),
        reps=args.reps,
        memo=st.memo,
    )
    if args.json:
        print(json.dumps([r.to_dict() for r in rankings], indent=1))
        return 0
    if not rankings:
        print("(no entries)" + (f" for task {args.task!r}" if args.task else ""))
        return 0
    for r in rankings:
        arrow = "higher is better" if r.direction == "max" else "lower is better"
        print(f"{r.task_key}  (primary: {r.primary_metric}, {arrow}; IQM [95% CI] over seeds)")
        for title, rows, what in (
            ("VERIFIED (ranked by the re-run)", r.verified, "re-run IQM"),
            ("PENDING (unverified, not ranked)", r.unverified, "claimed IQM"),
        ):
            if not rows:
                continue
            print(f"  {title}")
            head = ["rank", "entry", "name", "agent", f"{what} [95% CI]"]
            head += ["claimed", "tied", "P(>next)", "seeds"]
            table = [head]
            for i, row in enumerate(rows):
                p = row.p_better_next
                flag = " (unisolated)" if row.entry.isolation == "unisolated" else ""
                table.append(
                    [
                        str(row.rank),
                        f"#{row.entry.id}",
                        row.entry.name + flag,
                        row.entry.agent["name"],
                        f"{_fmt(row.iqm)} [{_fmt(row.low)}, {_fmt(row.high)}]"
                        + ("" if row.measured or row.entry.status != "VERIFIED" else " (claim)"),
                        _fmt(row.claimed) if row.measured else "-",
                        "leader" if i == 0 else ("tied" if row.tied else ""),
                        "-" if p is None else f"{p[0]:.2f} [{p[1]:.2f}, {p[2]:.2f}]",
                        str(row.n),
                    ]
                )
            print_rows([["   "] + x for x in table])
        if r.flagged:
            print("  FLAGGED (stored rows do not match their signatures; not ranked)")
            for e in r.flagged:
                print(f"    #{e.id} {e.name} [{e.status} as stored] integrity: {e.integrity}")
        if r.closed:
            print("  REJECTED / FAILED")
            for e in r.closed:
                print(f"    #{e.id} {e.name} [{e.status}] {e.reason}")
        print()
    return 0


def _with_reference(st: Any, args: argparse.Namespace) -> None:
    """Load the shipped reference entries (icml26/leaderboards/reference/) into the store:
    ``--reference yes``, or ``auto`` with the default store (no --store, no $ICML26_LEADERBOARD)."""
    mode = getattr(args, "reference", "no")
    if mode == "no" or (mode == "auto" and (args.store or os.environ.get("ICML26_LEADERBOARD"))):
        return
    from icml26.leaderboards.reference import load_into

    ids = load_into(st)
    if ids:
        print(
            f"loaded {len(ids)} reference entries (VERIFIED by re-run; --reference no to leave them out)",
            file=sys.stderr,
        )


def cmd_render(args: argparse.Namespace) -> int:
    from icml26.leaderboards.site import render_site

    st = _store(args)
    _with_reference(st, args)
    out = render_site(st, args.out, reps=args.reps, title=args.title, progress=True)
    print(f"wrote {out / 'index.html'}")
    return 0


def _parse_rate(text: str) -> tuple[int, float]:
    try:
        n, _, window = text.partition("/")
        return int(n), float(window or 3600)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N/SECONDS like 30/3600, got {text!r}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    from icml26.leaderboards.server import serve

    serve(
        _store(args),
        host=args.host,
        port=args.port,
        max_body=args.max_body,
        rate_limit=args.rate_limit,
        reps=args.reps,
        title=args.title,
    )
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    st = _store(args)
    if args.action == "create":
        if not args.name:
            raise ValueError("token create needs a NAME")
        token = st.create_token(args.name)
        print(token)
        print(
            f"token for {args.name!r} created; it is shown only now (the store keeps its SHA-256)",
            file=sys.stderr,
        )
    elif args.action == "revoke":
        if not args.name:
            raise ValueError("token revoke needs a NAME")
        st.revoke_token(args.name)
        print(f"revoked {args.name!r}")
    else:
        rows = [["name", "created", "revoked"]]
        rows += [[t["name"], t["created_at"], t["revoked_at"] or "-"] for t in st.tokens()]
        print_rows(rows)
    return 0


def cmd_sign(args: argparse.Namespace) -> int:
    n = _store(args).sign_all()
    print(f"signed {n} entries (and their submissions) with this store's key")
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    from icml26 import agents
    from icml26.leaderboards.bundle import make_bundle, write_bundle
    from icml26.protocol import config_hash

    kwargs = parse_kwargs(args.agent_kwargs)
    for t in args.task or ():
        check_task(t)
    with open_results_store(args.results, create=False) as st:  # read: creates nothing
        stored = st.results()
    results = [
        r
        for r in stored
        if r.agent_name == args.agent
        and config_hash(r.agent_kwargs) == config_hash(kwargs)
        and (not args.task or r.task_id in args.task)
    ]
    names = {r.agent_name for r in stored}
    if args.agent not in names and args.agent not in agents.names():
        raise unknown_name("agent", args.agent, {*agents.names(), *names}, "icml26 agents")
    if not results:
        raise ValueError(
            f"no results of agent {args.agent!r} with kwargs {kwargs} in {args.results}"
        )
    bundle = make_bundle(
        results,
        name=args.name,
        description=args.description,
        authors=args.authors,
        url=args.url,
        requirement=args.requirement,
        path=args.path,
        wheel=args.wheel,
    )
    write_bundle(bundle, args.out)
    print(
        f"wrote {args.out}: {args.agent} on {', '.join(bundle['tasks'])} "
        f"({len(bundle['results'])} trials), {bundle['content_hash']}"
    )
    return 0


def add_parser(sub: Any) -> None:
    """Add ``leaderboard`` and its sub-commands to the ``icml26`` parser."""
    from icml26.leaderboards.validate import LIMITS

    lb = sub.add_parser(
        "leaderboard",
        help="submit, verify, show, render and serve leaderboards",
        description=(__doc__ or "").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lsub = lb.add_subparsers(dest="lb_command", metavar="SUBCOMMAND")
    lsub.required = True

    def store_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--store",
            help="leaderboard store: SQLite path or database URL "
            "(default: $ICML26_LEADERBOARD or results/leaderboard.db)",
        )

    def ranking_opts(p: argparse.ArgumentParser) -> None:
        """Options of the commands that rank entries (show, render)."""
        p.add_argument("--reps", type=int, default=2000, help="bootstrap resamples (default 2000)")
        p.add_argument(
            "--reference",
            choices=["auto", "yes", "no"],
            default="auto",
            help="add the shipped reference entries (the suite's own runs, verified by re-run) "
            "to the store first; auto (default): only for the default store",
        )
        store_opt(p)

    p = lsub.add_parser("submit", help="validate a bundle and store it (locally or on a server)")
    p.add_argument("file", help="submission bundle (JSON) from `icml26 run/bench --out`")
    store_opt(p)
    p.add_argument("--server", help="leaderboard server URL; submits over HTTP instead")
    p.add_argument("--token", help="API token for --server (default: $ICML26_LEADERBOARD_TOKEN)")
    p.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds")
    p.add_argument("--submitter", default="local", help="who submitted (local store only)")
    p.set_defaults(func=cmd_submit)

    p = lsub.add_parser(
        "verify", help="re-run entries on held-out seeds; mark VERIFIED/REJECTED/FAILED"
    )
    p.add_argument("ids", nargs="*", type=int, help="entry ids")
    p.add_argument("--pending", action="store_true", help="verify every PENDING entry")
    p.add_argument("--force", action="store_true", help="verify again entries that are not PENDING")
    p.add_argument(
        "--install",
        action="store_true",
        help="install a requirement missing here (wheels only, inspected) into a throw-away "
        "environment of the entry's own; never into the verifier's environment",
    )
    p.add_argument(
        "--allow-unisolated",
        action="store_true",
        help="where the sandbox cannot isolate the agent (no namespaces), re-run it anyway "
        "with the verifier's user; the entry is marked unisolated",
    )
    p.add_argument(
        "--nonce",
        help="reuse a recorded verification's nonce (its held-out seeds), e.g. to audit it "
        "(default: a fresh random nonce)",
    )
    p.add_argument(
        "--sandbox",
        choices=["process", "docker"],
        default="process",
        help="where the agent runs: a limited worker process (default) or a container "
        "(docker/podman, --network none, read-only root); see docs/leaderboard.md",
    )
    p.add_argument(
        "--image", default="icml26-gym:latest", help="container image for --sandbox docker"
    )
    p.add_argument(
        "--trial-timeout",
        type=float,
        default=None,
        help="wall-clock limit of one held-out trial in seconds (default: derived from the "
        "task: its own, else 4x its slowest reference or claimed trial + 60 s, 120-1800 s)",
    )
    p.add_argument(
        "--memory-mb",
        type=int,
        default=None,
        help="memory limit of the worker's whole process tree (default 4096)",
    )
    p.add_argument(
        "--max-attempts",
        type=int,
        default=2,
        help="attempts before an entry whose worker dies is FAILED (default 2; an agent that "
        "raises, times out or breaks a limit fails at once)",
    )
    store_opt(p)
    p.set_defaults(func=cmd_verify)

    p = lsub.add_parser("show", help="print the rankings (or one entry) in the terminal")
    p.add_argument("--task", help="only this task id (or id@vN)")
    p.add_argument("--entry", type=int, help="show one entry's provenance and history")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument(
        "--detail",
        action="store_true",
        help="with --entry: also the organizer's private detail of its last verification "
        "(the agent's own error text and output; never published)",
    )
    ranking_opts(p)
    p.set_defaults(func=cmd_show)

    p = lsub.add_parser("render", help="write the static site (opens from disk)")
    p.add_argument(
        "--out", required=True, help="output directory (new, empty or a previous render)"
    )
    p.add_argument("--title", default="icml26-gym leaderboard")
    ranking_opts(p)
    p.set_defaults(func=cmd_render)

    p = lsub.add_parser("serve", help="serve the pages and the JSON/submission API (uvicorn)")
    p.add_argument(
        "--host", default="127.0.0.1", help="interface (default 127.0.0.1; 0.0.0.0 for all)"
    )
    p.add_argument("--port", type=int, default=8026)
    p.add_argument(
        "--max-body",
        type=int,
        default=LIMITS["bundle_bytes"],
        help=f"request body limit in bytes (default {LIMITS['bundle_bytes']})",
    )
    p.add_argument(
        "--rate-limit",
        type=_parse_rate,
        default=(30, 3600.0),
        help="submissions per token: N/SECONDS (default 30/3600)",
    )
    p.add_argument("--title", default="icml26-gym leaderboard")
    p.add_argument("--reps", type=int, default=2000, help="bootstrap resamples (default 2000)")
    store_opt(p)
    p.set_defaults(func=cmd_serve)

    p = lsub.add_parser("token", help="create, list or revoke API tokens (stored as hashes)")
    p.add_argument("action", choices=["create", "list", "revoke"])
    p.add_argument("name", nargs="?", help="token name (who submits with it)")
    store_opt(p)
    p.set_defaults(func=cmd_token)

    p = lsub.add_parser(
        "sign", help="sign every row with this store's key (after checking a migrated store)"
    )
    store_opt(p)
    p.set_defaults(func=cmd_sign)

    p = lsub.add_parser("bundle", help="write a submission bundle from a results store")
    p.add_argument("--results", help="results store (default: $ICML26_STORE or results/icml26.db)")
    p.add_argument(
        "--agent", required=True, help="agent name as run (e.g. point-pd or pkg.mod:Class)"
    )
    p.add_argument("--agent-kwargs", help="JSON object of the agent configuration (default {})")
    p.add_argument("--task", action="append", help="task id (repeatable; default: every task run)")
    p.add_argument("--out", required=True, help="bundle file to write")
    p.add_argument("--name", help="entry name (default: the agent name)")
    p.add_argument("--description", default="")
    p.add_argument("--authors", default="")
    p.add_argument("--url", default="", help="http(s) link to a paper or code")
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--requirement", help="exact pip requirement that installs the agent (e.g. 'mypkg==1.2')"
    )
    src.add_argument(
        "--path",
        help="directory holding the agent's top-level package; the package is packed into the "
        "bundle",
    )
    src.add_argument("--wheel", help="a wheel of the agent's distribution, carried in the bundle")
    p.set_defaults(func=cmd_bundle)
