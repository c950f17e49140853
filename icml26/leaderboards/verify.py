"""Verification by re-run on held-out seeds (CARLA-leaderboard style).

The organizers re-run a submitted agent on seeds that are not published with the task: for
task ``T`` the ``i``-th held-out seed is the first 31 bits of
``HMAC-SHA256(secret, "<task id>@v<version>|heldout|<i>")`` (skipping public seeds and repeats),
where ``secret`` is ``$ICML26_LEADERBOARD_SECRET`` or the store's 0600 secret file
(:meth:`LeaderboardStore.heldout_secret`; never a table). Without the secret nobody can know
them, yet every verifier sharing the secret derives the same ones.

The submitted code never runs in this process: each held-out trial runs the family's
``run_trial`` HERE (env, seeds, scoring) with the agent in a fresh sandboxed worker
(:mod:`icml26.leaderboards.sandbox`), which sees only the observations and calls of the trial
it plays. States: PENDING -> RUNNING (attempt n, started at) -> VERIFIED / REJECTED / FAILED.

An entry becomes VERIFIED when the IQM of the primary metric over the held-out seeds agrees with
the submitted IQM within the task's relative tolerance
(``|rerun - submitted| <= Task.tolerance * max(|submitted|, |rerun|)``), REJECTED when it does
not, and FAILED when the re-run cannot complete: entry point refused, agent not installed, the
agent raised or sent a malformed action (FAILED at once), or the worker died or broke a limit
(retried up to ``max_attempts`` times, then FAILED). The held-out trials are kept privately in
the store; pages and API show only their summary.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import importlib
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any

import numpy as np

from icml26.leaderboards.sandbox import (
    AgentCallError,
    Limits,
    SandboxError,
    docker_command,
    entry_point_problem,
    run_sandboxed_trial,
)
from icml26.leaderboards.store import Entry, LeaderboardStore
from icml26.protocol import Task, TrialResult
from icml26.stats import iqm, iqm_ci

__all__ = [
    "heldout_seeds",
    "agreement",
    "false_rejection_rate",
    "verify_entry",
    "verify_pending",
    "VerificationError",
    "DEFAULT_MAX_ATTEMPTS",
]

DEFAULT_MAX_ATTEMPTS = 2


class VerificationError(RuntimeError):
    """The entry cannot be verified now (wrong status, unknown task)."""


def heldout_seeds(task: Task, secret: bytes, n: int | None = None) -> list[int]:
    """``n`` (default: as many as the public seeds) held-out seeds of ``task`` derived from
    ``secret``; disjoint from ``task.seeds``, distinct, in ``[0, 2**31)``."""
    n = len(task.seeds) if n is None else int(n)
    if not secret:
        raise ValueError("heldout_seeds: empty secret")
    out: list[int] = []
    i = 0
    while len(out) < n:
        digest = hmac.new(secret, f"{task.key}|heldout|{i}".encode(), hashlib.sha256).digest()
        seed = int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
        if seed not in task.seeds and seed not in out:
            out.append(seed)
        i += 1
    return out


def agreement(submitted: float, rerun: float, tolerance: float) -> tuple[bool, float, float]:
    """``(agrees, |difference|, allowed)`` for the relative tolerance rule above."""
    diff = abs(rerun - submitted)
    allowed = tolerance * max(abs(submitted), abs(rerun))
    return diff <= allowed, diff, allowed


def false_rejection_rate(
    values: Sequence[float], tolerance: float, n_seeds: int = 5, draws: int = 20_000, seed: int = 0
) -> float:
    """How often an HONEST entry would be REJECTED: the probability that the IQMs of two
    disjoint random sets of ``n_seeds`` per-seed values (submitted, held-out), drawn from
    ``values`` (one agent's primary metric on many seeds), break :func:`agreement`.

    Use it to choose ``Task.tolerance`` (docs/leaderboard.md, "Choosing a tolerance").
    """
    from scipy.stats import trim_mean

    v = np.asarray(values, dtype=float).ravel()
    if v.size < 2 * n_seeds:
        raise ValueError(f"false_rejection_rate: need at least {2 * n_seeds} values, got {v.size}")
    rng = np.random.default_rng(seed)
    idx = np.argsort(rng.random((draws, v.size)), axis=1)[:, : 2 * n_seeds]
    a = trim_mean(v[idx[:, :n_seeds]], 0.25, axis=1)  # the IQM of icml26.stats.iqm
    b = trim_mean(v[idx[:, n_seeds:]], 0.25, axis=1)
    allowed = tolerance * np.maximum(np.abs(a), np.abs(b))
    return float(np.mean(np.abs(a - b) > allowed))


def _run_spec(entry: Entry) -> tuple[str, str, dict[str, Any]]:
    """(agent name stored with the re-run trials, entry point, kwargs): a registered name when
    it maps to the submitted entry point (its default kwargs apply, as in the submitter's
    run), otherwise the entry point itself."""
    from icml26 import agents

    name, ep = entry.agent.get("name", ""), entry.agent["entry_point"]
    kwargs = dict(entry.agent.get("kwargs", {}))
    spec = agents.all_specs().get(name)
    if spec is not None and spec.entry_point == ep:
        return name, ep, {**spec.kwargs, **kwargs}
    return ep, ep, kwargs


def _requirement_note(requirement: str | None) -> str | None:
    """A note when the installed distribution does not satisfy the submitted requirement."""
    if not requirement:
        return None
    try:
        from packaging.requirements import Requirement

        req = Requirement(requirement)
        installed = importlib.metadata.version(req.name)
    except Exception:
        return f"requirement {requirement!r} is not installed here"
    if req.specifier and not req.specifier.contains(installed, prereleases=True):
        return f"installed {req.name} {installed} does not satisfy the submitted {requirement!r}"
    return None


def _source_problem(entry: Entry, install: bool) -> str | None:
    """Why the agent's code is not available to a worker (nothing is imported here: a
    top-level ``find_spec`` runs no code), installing the requirement with ``install``."""
    ep = entry.agent["entry_point"]
    top = ep.partition(":")[0].split(".")[0]
    path, req = entry.agent.get("path"), entry.agent.get("requirement")
    if path:
        if not os.path.isdir(path):
            return f"the agent's local path {path!r} does not exist on the verifying machine"
        return None
    if importlib.util.find_spec(top) is not None:
        return None
    if req and install:
        # wheels only: building an sdist would run the submitter's setup code out here
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--only-binary=:all:", req],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            return f"pip install {req!r} failed: {proc.stderr.strip().splitlines()[-1:]}"
        importlib.invalidate_caches()
        if importlib.util.find_spec(top) is not None:
            return None
        return f"installed {req!r} but it provides no module {top!r}"
    hint = f"; install it with `pip install '{req}'` or run verify with --install" if req else ""
    return f"cannot import the agent's module {top!r} (not installed here){hint}"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _trial_limit(task: Task, trial_timeout: float | None) -> float:
    from icml26.benchmarks import runner

    resolve = getattr(runner, "resolve_trial_timeout", None)
    wall = resolve(task, trial_timeout) if resolve is not None else trial_timeout
    return float(wall) if wall else 4 * 3600.0


def _one_trial(
    task: Task, entry: Entry, seed: int, options: dict[str, Any], isolation: dict[str, Any]
) -> TrialResult:
    """One held-out trial with the agent sandboxed; raises on any failure."""
    from icml26.benchmarks.runner import _jsonable_or_note, git_commit, package_versions

    name, ep, kwargs = _run_spec(entry)
    started = _now()
    t0 = time.perf_counter()
    outcome, version = run_sandboxed_trial(
        task,
        ep,
        kwargs,
        seed,
        isolation=isolation,
        requirement=entry.agent.get("requirement"),
        path=entry.agent.get("path"),
        **options,
    )
    return TrialResult(
        task_id=task.id,
        task_version=task.version,
        agent_name=name,
        agent_version=version,
        seed=seed,
        status="FINISHED",
        metrics={k: float(v) for k, v in outcome.metrics.items()},
        scores=[float(x) for x in outcome.scores],
        wall_time_s=time.perf_counter() - t0,
        packages=package_versions(),
        git_commit=git_commit(),
        agent_kwargs=dict(entry.agent.get("kwargs", {})),
        started_at=started,
        extra=_jsonable_or_note(outcome.extra),
        task_hash=getattr(task, "definition_hash", ""),
    )


def verify_entry(
    store: LeaderboardStore,
    entry_id: int,
    *,
    install: bool = False,
    force: bool = False,
    progress: bool = True,
    reps: int = 2000,
    sandbox: str = "process",
    limits: Limits | None = None,
    trial_timeout: float | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    image: str = "icml26-gym:latest",
    actor: str = "verify",
) -> Entry:
    """Re-run entry ``entry_id`` on its task's held-out seeds, the agent sandboxed, and record
    the verdict.

    Only PENDING entries are verified unless ``force`` (any status, e.g. one left RUNNING by
    a verifier that died). ``limits`` are the worker's limits (its ``wall_s`` defaults to the
    task's trial timeout, ``trial_timeout`` overriding it); a worker that dies or breaks a
    limit is retried until ``max_attempts`` attempts, an agent that raises or sends a malformed
    action fails at once. Returns the updated entry.
    """
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
    entry, task = _entry_to_verify(store, entry_id, force)
    limits = _worker_limits(task, limits, trial_timeout, sandbox, image)
    t0 = time.perf_counter()
    summary: dict[str, Any] = {
        "tolerance": task.tolerance,
        "primary_metric": task.primary_metric,
        "rule": "|rerun - submitted| <= tolerance * max(|submitted|, |rerun|)",
        "sandbox": sandbox,
        "limits": limits.to_dict(),
    }
    note = _requirement_note(entry.agent.get("requirement"))
    if note:
        summary["note"] = note
    expected = (entry.status,)

    def finish(status: str, reason: str, trials: list[TrialResult] | None = None) -> Entry:
        summary["wall_time_s"] = time.perf_counter() - t0
        if not store.set_status(
            entry_id,
            status,
            reason,
            actor=actor,
            verification=summary,
            verification_trials=trials,
            expected=expected,
        ):
            raise VerificationError(f"entry #{entry_id} changed status while it was verified")
        return store.entry(entry_id)

    problem = entry_point_problem(
        entry.agent.get("entry_point"), entry.agent.get("requirement"), entry.agent.get("path")
    )
    if problem:
        return finish("FAILED", f"entry point refused: {problem}")
    reason = _source_problem(entry, install)
    if reason is not None:
        return finish("FAILED", reason)

    try:
        secret = store.heldout_secret()
    except (OSError, ValueError, RuntimeError) as e:  # unreadable, world-readable, two differing
        raise VerificationError(f"entry #{entry_id}: {e}") from None
    seeds = heldout_seeds(task, secret)
    del secret
    options = {"limits": limits, "sandbox": sandbox, "image": image, "hide": store.private_paths()}
    results: list[TrialResult] = []
    failure: str | None = None
    for attempt in range(1, max_attempts + 1):
        if not store.set_status(
            entry_id,
            "RUNNING",
            f"attempt {attempt} of {max_attempts} started at {_now()} ({sandbox} sandbox)",
            actor=actor,
            expected=expected,
        ):
            raise VerificationError(f"entry #{entry_id} was claimed by another verifier")
        expected = ("RUNNING",)
        summary["attempts"] = attempt
        isolation: dict[str, Any] = {}
        results, failure, retry = _run_trials(
            task, entry, seeds, options, progress, entry_id, isolation
        )
        if isolation:
            summary["isolation"] = isolation
        if failure is None or not retry:
            break
    summary["n_heldout_seeds"] = len(seeds)
    if failure is not None:
        return finish(
            "FAILED",
            failure
            + (f" (after {summary['attempts']} attempts)" if summary["attempts"] > 1 else ""),
            results,
        )
    verdict, reason = _verdict(task, entry, results, reps, summary)
    if note:
        reason += f"; note: {note}"
    return finish(verdict, reason, results)


def _entry_to_verify(store: LeaderboardStore, entry_id: int, force: bool) -> tuple[Entry, Task]:
    """The entry (PENDING unless ``force``) and its task version; VerificationError otherwise."""
    from icml26 import benchmarks

    entry = store.entry(entry_id)
    if entry.status != "PENDING" and not force:
        hint = (
            " (a verifier claimed it; if that verifier died, use --force)"
            if entry.status == "RUNNING"
            else ""
        )
        raise VerificationError(
            f"entry #{entry_id} is {entry.status}, not PENDING{hint} "
            "(use --force to verify it again)"
        )
    try:
        return entry, benchmarks.get_task(entry.task_id, entry.task_version)
    except KeyError as e:
        raise VerificationError(f"entry #{entry_id}: {e.args[0]}") from None


def _worker_limits(
    task: Task, limits: Limits | None, trial_timeout: float | None, sandbox: str, image: str
) -> Limits:
    """The worker's limits (``trial_timeout`` overriding the wall-clock one), after checking
    that ``sandbox`` is known and, for docker, usable (before anything is claimed)."""
    if limits is None:
        limits = Limits(wall_s=_trial_limit(task, trial_timeout))
    elif trial_timeout is not None:
        limits = Limits(**{**limits.to_dict(), "wall_s": float(trial_timeout)})
    if sandbox == "docker":
        docker_command(image, limits, name="check")  # SandboxUnavailable before claiming anything
    elif sandbox != "process":
        raise ValueError(f"unknown sandbox {sandbox!r}; expected 'process' or 'docker'")
    return limits


def _verdict(
    task: Task, entry: Entry, results: list[TrialResult], reps: int, summary: dict[str, Any]
) -> tuple[str, str]:
    """VERIFIED or REJECTED and why: the re-run's primary-metric IQM against the submitted one
    (the comparison goes into ``summary``)."""
    submitted_vals = entry.values(task.primary_metric)
    rerun_vals = [r.metrics[task.primary_metric] for r in results]
    sub_iqm, rerun_iqm = iqm(submitted_vals), iqm(rerun_vals)
    ok, diff, allowed = agreement(sub_iqm, rerun_iqm, task.tolerance)
    summary["submitted"] = dict(zip(("iqm", "low", "high"), iqm_ci(submitted_vals, reps=reps)))
    summary["rerun"] = dict(zip(("iqm", "low", "high"), iqm_ci(rerun_vals, reps=reps)))
    summary["rerun_metrics_iqm"] = {
        m.name: iqm([r.metrics[m.name] for r in results]) for m in task.metrics
    }
    summary["difference"] = diff
    summary["allowed"] = allowed
    summary["agrees"] = ok
    verdict = "VERIFIED" if ok else "REJECTED"
    reason = (
        f"{task.primary_metric}: re-run IQM {rerun_iqm:.6g} on {summary['n_heldout_seeds']} held-out seeds vs "
        f"submitted {sub_iqm:.6g}; |difference| {diff:.3g} "
        f"{'<=' if ok else '>'} allowed {allowed:.3g} (tolerance {task.tolerance:g})"
    )
    return verdict, reason


def _run_trials(
    task: Task,
    entry: Entry,
    seeds: list[int],
    options: dict[str, Any],
    progress: bool,
    entry_id: int,
    isolation: dict[str, Any],
) -> tuple[list[TrialResult], str | None, bool]:
    """Run the held-out trials one by one, stopping at the first failure.
    Returns (results, failure reason or None, whether the failure may be retried)."""
    bar = None
    if progress:
        from tqdm.auto import tqdm

        # counts only: the runner's usual postfix would print the held-out seeds
        bar = tqdm(
            total=len(seeds),
            desc=f"verifying #{entry_id} on held-out seeds",
            unit="trial",
            file=sys.stderr,
            dynamic_ncols=True,
        )
    results: list[TrialResult] = []
    try:
        for k, seed in enumerate(seeds, 1):
            where = f"re-run failed on held-out seed {k} of {len(seeds)}"
            try:
                results.append(_one_trial(task, entry, seed, options, isolation))
            except SandboxError as e:  # a death or a limit may be the machine's fault: retry
                return results, f"{where}: {e}", e.kind in ("died", "timeout")
            except AgentCallError as e:
                return results, f"{where}: the agent raised {e}", False
            except Exception as e:  # the env or the family's scoring refused what the agent sent
                last = traceback.format_exception_only(type(e), e)[-1].strip()
                return results, f"{where}: {last[:500]}", False
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return results, None, False


def verify_pending(store: LeaderboardStore, **options: Any) -> list[Entry]:
    """Verify every PENDING entry, oldest first, going on past any failure; returns them."""
    out = []
    for e in store.entries(status="PENDING"):
        try:
            out.append(verify_entry(store, e.id, **options))
        except VerificationError:
            continue  # claimed meanwhile by another verifier
    return out
