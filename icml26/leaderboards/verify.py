"""Verification by re-run on fresh held-out seeds (CARLA-leaderboard style).

The organizers re-run a submitted agent on seeds that are not published with the task and are
new for every verification: each verification draws a random ``nonce`` (recorded with it), and
for task ``T`` its ``i``-th held-out seed is the first 31 bits of
``HMAC-SHA256(secret, "<task id>@v<version>|heldout|<nonce>|<i>")`` (skipping public seeds and
repeats), where ``secret`` is ``$ICML26_LEADERBOARD_SECRET`` or the store's 0600 secret file
(:meth:`LeaderboardStore.heldout_secret`; never a table). Knowing one verification's seeds says
nothing about the next; with the secret and the recorded nonce an organizer can reproduce a
verification. The agent never sees a held-out seed: its random generators and every seed it is
given by ``reset`` are a one-way function of them (HMAC under a key derived from the secret and
the nonce, :func:`agent_seed_map`).

The submitted code never runs in this process: each held-out trial runs the family's
``run_trial`` HERE (env, seeds, scoring) with the agent in a fresh sandboxed worker
(:mod:`icml26.leaderboards.sandbox`), confined by :mod:`icml26.leaderboards.jail` (read-only
root, private tmpfs, unprivileged uid, no network, cgroup limits). Where it cannot be confined
the verifier refuses unless the organizer passes ``allow_unisolated`` (the entry then records
and shows "unisolated"). The agent's code is what the bundle pinned
(:mod:`icml26.leaderboards.artefacts`), and the hash of what ran is recorded; verifying again
refuses code whose hash changed. States: PENDING -> RUNNING (attempt n, started at) ->
VERIFIED / REJECTED / FAILED.

An entry becomes VERIFIED when the re-run agrees with the claim (:func:`judge`): the IQM of the
primary metric over the held-out seeds is within the task's relative tolerance of the claimed
IQM (``|rerun - claimed| <= Task.tolerance * max(|claimed|, |rerun|)``) AND, per seed, the
claimed seeds the IQM trims (its lowest and highest quarter, at least the lowest and the
highest) re-run on those same public seeds (the agent seeded exactly as in the submitter's run)
agree with their claims within the same relative tolerance, so no seed's claim goes unchecked.
REJECTED when they do not; FAILED when the re-run cannot
complete: code refused, entry point refused, the agent raised or sent a malformed action (at
once), or the worker died (retried up to ``max_attempts`` times) or broke a limit. Public
reasons name what happened in the verifier's words (a time-out and its limit, a built-in
exception type, a crash); the agent's own text goes to the organizer only
(:meth:`LeaderboardStore.private_detail`). The ranking uses the re-run values, not the claim.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import hmac
import json
import secrets
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.leaderboards.artefacts import CodeProblem, PreparedCode, prepared_code
from icml26.leaderboards.sandbox import (
    AgentCallError,
    Limits,
    SandboxError,
    SandboxUnavailable,
    docker_command,
    entry_point_problem,
    isolation_available,
    run_sandboxed_trial,
)
from icml26.leaderboards.store import Entry, LeaderboardStore
from icml26.protocol import Task, TrialResult
from icml26.stats import iqm, iqm_ci

__all__ = [
    "heldout_seeds",
    "agent_seed_map",
    "agreement",
    "judge",
    "checked_seeds",
    "Verdict",
    "false_rejection_rate",
    "trial_time_limit",
    "verify_entry",
    "verify_pending",
    "VerificationError",
    "DEFAULT_MAX_ATTEMPTS",
    "MAX_TRIAL_S",
]

DEFAULT_MAX_ATTEMPTS = 2
# The longest a held-out trial may run unless the task or the organizer says otherwise.
MAX_TRIAL_S = 1800.0
MIN_TRIAL_S = 120.0


class VerificationError(RuntimeError):
    """The entry cannot be verified now (wrong status, unknown task, tampered row, changed
    code)."""


# ---------------------------------------------------------------------------- seeds
def heldout_seeds(
    task: Task, secret: bytes, n: int | None = None, nonce: str | None = None
) -> list[int]:
    """``n`` (default: as many as the public seeds) held-out seeds of ``task`` derived from
    ``secret`` and the verification's ``nonce``; disjoint from ``task.seeds``, distinct, in
    ``[0, 2**31)``. (Without a nonce: the fixed seeds of the first leaderboard version.)"""
    n = len(task.seeds) if n is None else int(n)
    if not secret:
        raise ValueError("heldout_seeds: empty secret")
    tag = f"{task.key}|heldout|" + (f"{nonce}|" if nonce is not None else "")
    out: list[int] = []
    i = 0
    while len(out) < n:
        digest = hmac.new(secret, f"{tag}{i}".encode(), hashlib.sha256).digest()
        seed = int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
        if seed not in task.seeds and seed not in out:
            out.append(seed)
        i += 1
    return out


def new_nonce() -> str:
    """A fresh verification nonce (128 random bits)."""
    return secrets.token_hex(16)


def agent_seed_map(secret: bytes, nonce: str) -> Callable[[int], int]:
    """The one-way map from a trial's seeds to the agent's: ``HMAC-SHA256(k, str(seed))``
    (31 bits) with ``k = HMAC-SHA256(secret, "agent-seeds|<nonce>")``."""
    key = hmac.new(secret, f"agent-seeds|{nonce}".encode(), hashlib.sha256).digest()

    def agent_seed(seed: int) -> int:
        d = hmac.new(key, str(int(seed)).encode(), hashlib.sha256).digest()
        return int.from_bytes(d[:4], "big") & 0x7FFFFFFF

    return agent_seed


# ---------------------------------------------------------------------------- agreement
def agreement(submitted: float, rerun: float, tolerance: float) -> tuple[bool, float, float]:
    """``(agrees, |difference|, allowed)`` for the relative tolerance rule above."""
    diff = abs(rerun - submitted)
    allowed = tolerance * max(abs(submitted), abs(rerun))
    return diff <= allowed, diff, allowed


@dataclass
class Verdict:
    """What :func:`judge` decided: the status, its public reason and the numbers."""

    status: str
    reason: str
    summary: dict[str, Any] = field(default_factory=dict)


def checked_seeds(claimed: Mapping[int, float]) -> list[int]:
    """The claimed seeds the IQM trims (``int(n / 4)`` lowest and highest values, at least
    one of each), checked one by one by a re-run on the same seed."""
    order = sorted(claimed, key=lambda s: (claimed[s], s))
    k = max(1, len(order) // 4)
    return sorted(set(order[:k]) | set(order[-k:]))


def judge(
    task: Task,
    claimed: Sequence[float],
    rerun: Sequence[float],
    seed_checks: Sequence[tuple[int, float, float]] = (),
    reps: int = 2000,
) -> Verdict:
    """VERIFIED or REJECTED on the primary metric: the IQM rule (held-out re-run against the
    claim) and, for each ``(seed, claimed, re-run on that seed)`` of ``seed_checks``, the
    same relative tolerance per seed."""
    c_iqm, r_iqm = iqm(claimed), iqm(rerun)
    ok, diff, allowed = agreement(c_iqm, r_iqm, task.tolerance)
    checks = []
    for seed, c, r in seed_checks:
        agrees, d, a = agreement(c, r, task.tolerance)
        checks.append(
            {"seed": int(seed), "claimed": c, "rerun": r, "difference": d, "agrees": agrees}
        )
    bad = [c for c in checks if not c["agrees"]]
    summary = {
        "submitted": dict(zip(("iqm", "low", "high"), iqm_ci(claimed, reps=reps))),
        "rerun": dict(zip(("iqm", "low", "high"), iqm_ci(rerun, reps=reps))),
        "difference": diff,
        "allowed": allowed,
        "seed_checks": checks,
        "agrees": ok and not bad,
    }
    m = task.primary_metric
    reason = (
        f"{m}: re-run IQM {r_iqm:.6g} on {len(rerun)} fresh held-out seeds vs claimed "
        f"{c_iqm:.6g}; |difference| {diff:.3g} {'<=' if ok else '>'} allowed {allowed:.3g} "
        f"(tolerance {task.tolerance:g})"
    )
    if bad:
        reason += "; per seed, " + "; ".join(
            f"seed {c['seed']} claimed {c['claimed']:.6g} but re-runs at {c['rerun']:.6g}"
            for c in bad[:5]
        )
    elif checks:
        reason += (
            f"; the {len(checks)} claimed seed(s) the IQM trims re-run within the tolerance "
            f"(seeds {', '.join(str(c['seed']) for c in checks)})"
        )
    return Verdict("VERIFIED" if summary["agrees"] else "REJECTED", reason, summary)


def false_rejection_rate(
    values: Sequence[float],
    tolerance: float,
    n_seeds: int = 5,
    draws: int = 20_000,
    seed: int = 0,
) -> float:
    """How often an HONEST entry would be REJECTED by the IQM rule: the probability that the
    IQMs of two disjoint random sets of ``n_seeds`` per-seed values (claimed, held-out), drawn
    from ``values`` (one agent's primary metric on many seeds), break :func:`agreement`. (The
    per-seed rule compares a seed with a re-run of the same seed: an agent that reproduces its
    own runs never breaks it.)

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


# ---------------------------------------------------------------------------- limits
@functools.cache
def _reference_trial_seconds() -> dict[str, float]:
    """task key -> the slowest trial of the shipped reference runs (trusted measurements)."""
    from icml26.leaderboards.reference import REFERENCE_DIR, manifest

    out: dict[str, float] = {}
    for b in manifest().get("bundles", []):
        try:
            bundle = json.loads((REFERENCE_DIR / b["file"]).read_text())
        except (OSError, ValueError, KeyError):
            continue
        for t in bundle.get("results", []):
            key = f"{t['task_id']}@v{t['task_version']}"
            out[key] = max(out.get(key, 0.0), float(t.get("wall_time_s") or 0.0))
    return out


def trial_time_limit(task: Task, entry: Entry | None = None) -> tuple[float, str]:
    """The wall-clock limit of one held-out trial of ``task`` and how it was derived.

    The task's own (``extra["trial_timeout_s"]``, or twice ``budget.wall_clock_s`` plus 10
    minutes, as the harness does) when it sets one; otherwise 4 x the slowest of the task's
    reference trials (shipped with the suite) and of the entry's claimed trials, plus 60 s,
    between :data:`MIN_TRIAL_S` and :data:`MAX_TRIAL_S`."""
    from icml26.benchmarks.trial import resolve_trial_timeout

    if task.extra.get("trial_timeout_s") is not None or task.budget.wall_clock_s is not None:
        wall = resolve_trial_timeout(task)
        if wall:
            return float(wall), "the task's trial timeout"
    ref = _reference_trial_seconds().get(task.key, 0.0)
    claimed = max((t.wall_time_s or 0.0 for t in entry.trials), default=0.0) if entry else 0.0
    basis = max(ref, min(claimed, MAX_TRIAL_S))
    limit = min(max(4.0 * basis + 60.0, MIN_TRIAL_S), MAX_TRIAL_S)
    return (
        float(round(limit)),
        f"4 x the slowest reference/claimed trial ({basis:.3g} s) + 60 s, "
        f"within [{MIN_TRIAL_S:g}, {MAX_TRIAL_S:g}] s",
    )


def _worker_limits(
    task: Task,
    entry: Entry,
    limits: Limits | None,
    trial_timeout: float | None,
    sandbox: str,
    image: str,
) -> tuple[Limits, str]:
    """The worker's limits (``trial_timeout`` overriding the wall-clock one) and how the
    wall clock was chosen, after checking that ``sandbox`` is known and, for docker, usable
    (before anything is claimed)."""
    if trial_timeout is not None:
        wall, basis = float(trial_timeout), "--trial-timeout"
    elif limits is not None and limits.wall_s != Limits().wall_s:
        wall, basis = limits.wall_s, "given"
    else:
        wall, basis = trial_time_limit(task, entry)
    limits = Limits(**{**(limits or Limits()).to_dict(), "wall_s": wall})
    if sandbox == "docker":
        docker_command(image, limits, name="check")  # SandboxUnavailable before claiming anything
    elif sandbox != "process":
        raise ValueError(f"unknown sandbox {sandbox!r}; expected 'process' or 'docker'")
    return limits, basis


def _isolate(sandbox: str, allow_unisolated: bool) -> bool:
    """Whether the process worker is confined; raises SandboxUnavailable where it cannot be
    and the organizer did not allow an unisolated re-run."""
    if sandbox != "process":
        return True
    ok, why = isolation_available()
    if ok:
        return True
    if not allow_unisolated:
        raise SandboxUnavailable(
            f"the process sandbox cannot isolate the agent on this machine: {why}. Verifying "
            "would run submitted code with the verifier's user, files and network; pass "
            "--allow-unisolated (allow_unisolated=True) to do it anyway (the entry is then "
            "marked unisolated), or use --sandbox docker"
        )
    print(
        "warning: verifying WITHOUT isolation (namespaces unavailable: "
        f"{why}); the entry will be marked unisolated",
        file=sys.stderr,
    )
    return False


# ---------------------------------------------------------------------------- one entry
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


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _one_trial(
    task: Task,
    entry: Entry,
    seed: int,
    options: dict[str, Any],
    isolation: dict[str, Any],
) -> TrialResult:
    """One held-out trial with the agent sandboxed; raises on any failure."""
    from icml26.benchmarks.runner import _jsonable_or_note, git_commit, package_versions

    name, ep, kwargs = _run_spec(entry)
    started = _now()
    t0 = time.perf_counter()
    outcome, version = run_sandboxed_trial(task, ep, kwargs, seed, isolation=isolation, **options)
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
        task_hash=task.definition_hash,
    )


@dataclass
class _Plan:
    """What one verification re-runs: the held-out seeds, then the claimed seeds checked one
    by one, with the worker options."""

    task: Task
    entry: Entry
    heldout: list[int]
    checked: list[int]
    options: dict[str, Any]
    progress: bool


@dataclass
class _Rerun:
    results: list[TrialResult]  # on the held-out seeds
    checks: list[TrialResult] = field(default_factory=list)  # on claimed seeds, checked per seed
    failure: str | None = None  # public
    detail: dict[str, Any] = field(default_factory=dict)  # organizer only
    retry: bool = False


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
    allow_unisolated: bool = False,
    nonce: str | None = None,
) -> Entry:
    """Re-run entry ``entry_id`` on fresh held-out seeds, the agent sandboxed, and record the
    verdict.

    Only PENDING entries are verified unless ``force`` (any status, e.g. one left RUNNING by a
    verifier that died). ``limits`` are the worker's limits (its ``wall_s`` derived from the
    task, :func:`trial_time_limit`, unless ``trial_timeout`` or ``limits`` give one); a worker
    that dies is retried until ``max_attempts`` attempts; an agent that raises, sends a
    malformed action, times out or breaks a limit fails at once. ``install``: install a
    requirement missing here into the entry's own throw-away environment. ``nonce``: reuse a
    recorded verification's nonce (same held-out seeds), e.g. to audit it. Raises
    :class:`SandboxUnavailable` (before anything changes) where the agent cannot be isolated
    and ``allow_unisolated`` is False. Returns the updated entry.
    """
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise ValueError(f"max_attempts must be an integer >= 1, got {max_attempts!r}")
    entry, task = _entry_to_verify(store, entry_id, force)
    limits, basis = _worker_limits(task, entry, limits, trial_timeout, sandbox, image)
    confined = _isolate(sandbox, allow_unisolated)
    nonce = nonce or new_nonce()
    t0 = time.perf_counter()
    summary: dict[str, Any] = {
        "tolerance": task.tolerance,
        "primary_metric": task.primary_metric,
        "rule": "|rerun IQM - claimed IQM| <= tolerance * max(|claimed|, |rerun|), and every "
        "claimed seed within [min(rerun) - allowed, max(rerun) + allowed]",
        "sandbox": sandbox,
        "limits": {**limits.to_dict(), "wall_s_basis": basis},
        "nonce": nonce,
    }
    state = {"expected": (entry.status,)}

    def finish(
        status: str,
        reason: str,
        trials: list[TrialResult] | None = None,
        private: dict[str, Any] | None = None,
    ) -> Entry:
        summary["wall_time_s"] = time.perf_counter() - t0
        if not store.set_status(
            entry_id,
            status,
            reason,
            actor=actor,
            verification=summary,
            verification_trials=trials,
            expected=state["expected"],
            private=private or {},
        ):
            raise VerificationError(f"entry #{entry_id} changed status while it was verified")
        return store.entry(entry_id)

    problem = entry_point_problem(entry.agent.get("entry_point"), entry.agent.get("requirement"))
    if problem:
        return finish("FAILED", f"entry point refused: {problem}")
    try:
        with prepared_code(entry.agent, store.bundle(entry_id), install) as code:
            _check_same_code(entry, code)
            summary["code_sha256"] = code.sha256
            if code.note:
                summary["note"] = code.note
            try:
                secret = store.heldout_secret()
            except (OSError, ValueError, RuntimeError) as e:  # unreadable, world-readable
                raise VerificationError(f"entry #{entry_id}: {e}") from None
            seeds = heldout_seeds(task, secret, nonce=nonce)
            options = {
                "limits": limits,
                "sandbox": sandbox,
                "image": image,
                "namespaces": confined,
                "hide": store.private_paths(),
                "keep": code.keep,
                "requirement": code.requirement,
                "path": code.path,
                "site": code.site,
                "seed_map": agent_seed_map(secret, nonce),
            }
            del secret
            claimed = {t.seed: float(t.metrics[task.primary_metric]) for t in entry.trials}
            plan = _Plan(task, entry, seeds, checked_seeds(claimed), options, progress)
            rerun = _attempts(store, plan, max_attempts, actor, state, summary)
    except CodeProblem as e:
        return finish("FAILED", f"the agent's code was refused: {e}")
    summary["n_heldout_seeds"] = len(seeds)
    if rerun.failure is not None:
        n = summary.get("attempts", 1)
        suffix = f" (after {n} attempts)" if n > 1 else ""
        return finish("FAILED", rerun.failure + suffix, rerun.results, rerun.detail)
    verdict = judge(
        task,
        entry.values(task.primary_metric),
        [r.metrics[task.primary_metric] for r in rerun.results],
        [(t.seed, claimed[t.seed], t.metrics[task.primary_metric]) for t in rerun.checks],
        reps=reps,
    )
    summary.update(verdict.summary)
    summary["rerun_metrics_iqm"] = {
        m.name: iqm([r.metrics[m.name] for r in rerun.results]) for m in task.metrics
    }
    reason = verdict.reason
    if not confined and sandbox == "process":
        reason += "; UNISOLATED re-run (the organizer allowed it: no namespaces here)"
    return finish(verdict.status, reason, rerun.results)


def _check_same_code(entry: Entry, code: PreparedCode) -> None:
    """Verifying again refuses code whose hash differs from the one that was verified."""
    before = (entry.verification or {}).get("code_sha256")
    if before and before != code.sha256:
        raise VerificationError(
            f"entry #{entry.id}: the agent's code changed since it was verified "
            f"({before} then, {code.sha256} now); it is not verified again (submit the new "
            "code as a new entry)"
        )


def _attempts(
    store: LeaderboardStore,
    plan: _Plan,
    max_attempts: int,
    actor: str,
    state: dict[str, Any],
    summary: dict[str, Any],
) -> _Rerun:
    """Claim the entry (RUNNING) and run the trials, again after a death of the worker."""
    rerun = _Rerun([])
    entry_id = plan.entry.id
    for attempt in range(1, max_attempts + 1):
        if not store.set_status(
            entry_id,
            "RUNNING",
            f"attempt {attempt} of {max_attempts} started at {_now()} "
            f"({plan.options['sandbox']} sandbox)",
            actor=actor,
            expected=state["expected"],
        ):
            raise VerificationError(f"entry #{entry_id} was claimed by another verifier")
        state["expected"] = ("RUNNING",)
        summary["attempts"] = attempt
        isolation: dict[str, Any] = {}
        rerun = _run_trials(plan, isolation)
        if isolation:
            summary["isolation"] = isolation
        if rerun.failure is None or not rerun.retry:
            break
    return rerun


def _entry_to_verify(store: LeaderboardStore, entry_id: int, force: bool) -> tuple[Entry, Task]:
    """The entry (PENDING unless ``force``, its rows matching their signatures) and its task
    version; VerificationError otherwise."""
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
    if entry.integrity == "mismatch":
        raise VerificationError(
            f"entry #{entry_id}: its stored rows do not match their signatures (changed "
            "outside the leaderboard); not verified"
        )
    try:
        return entry, benchmarks.get_task(entry.task_id, entry.task_version)
    except KeyError as e:
        raise VerificationError(f"entry #{entry_id}: {e.args[0]}") from None


def _run_trials(plan: _Plan, isolation: dict[str, Any]) -> _Rerun:
    """Run the held-out trials, then the per-seed checks on claimed seeds (the agent seeded
    as in the submitter's run: no seed map), one by one, stopping at the first failure. A
    failure's public reason is in the verifier's words; the agent's text goes into
    ``detail``. Only a death of the worker is retried (a time-out or a broken limit would
    recur)."""
    heldout, options = plan.heldout, plan.options
    steps = [(s, options, f"held-out seed {k} of {len(heldout)}") for k, s in enumerate(heldout, 1)]
    same = {**options, "seed_map": None}
    steps += [(s, same, f"claimed seed {s}") for s in plan.checked]
    bar = None
    if plan.progress:
        from tqdm.auto import tqdm

        # counts only: the runner's usual postfix would print the held-out seeds
        bar = tqdm(
            total=len(steps),
            desc=f"verifying #{plan.entry.id} on held-out seeds",
            unit="trial",
            file=sys.stderr,
            dynamic_ncols=True,
        )
    done: list[TrialResult] = []

    def stop(public: str, detail: dict[str, Any], retry: bool = False) -> _Rerun:
        return _Rerun(done[: len(heldout)], done[len(heldout) :], public, detail, retry)

    try:
        for seed, opts, label in steps:
            where = f"re-run failed on {label}"
            try:
                done.append(_one_trial(plan.task, plan.entry, seed, opts, isolation))
            except SandboxError as e:
                return stop(f"{where}: {e}", {"detail": f"{where}: {e.detail}"}, e.kind == "died")
            except AgentCallError as e:
                detail = {"detail": f"{where}: {e.detail}", "traceback": e.remote_traceback}
                return stop(f"{where}: {e}", detail)
            except Exception as e:  # the env or the family's scoring refused what the agent sent
                last = traceback.format_exception_only(type(e), e)[-1].strip()
                public = (
                    f"{where}: the task's run_trial refused what the agent returned "
                    f"({type(e).__name__})"
                )
                return stop(public, {"detail": f"{where}: {last[:2000]}"})
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return _Rerun(done[: len(heldout)], done[len(heldout) :])


def verify_pending(store: LeaderboardStore, **options: Any) -> list[Entry]:
    """Verify every PENDING entry, oldest first, going on past any failure; returns them."""
    out = []
    for e in store.entries(status="PENDING"):
        try:
            out.append(verify_entry(store, e.id, **options))
        except VerificationError:
            continue  # claimed meanwhile by another verifier
    return out
