"""Verification by re-run on held-out seeds (CARLA-leaderboard style).

The organizers re-run a submitted agent on seeds that are not published with the task: for
task ``T`` the ``i``-th held-out seed is the first 31 bits of
``HMAC-SHA256(secret, "<task id>@v<version>|heldout|<i>")`` (skipping public seeds and repeats),
where ``secret`` is ``$ICML26_LEADERBOARD_SECRET`` or a random value kept in the leaderboard
store (:meth:`LeaderboardStore.heldout_secret`). Without the secret nobody can know them, yet
every verifier sharing the secret derives the same ones.

An entry becomes VERIFIED when the IQM of the primary metric over the held-out seeds agrees with
the submitted IQM within the task's relative tolerance
(``|rerun - submitted| <= Task.tolerance * max(|submitted|, |rerun|)``), REJECTED when it does
not, and FAILED when the re-run cannot complete (entry point not importable, a trial FAILED).
The held-out trials are kept privately in the store; pages and API show only their summary.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from icml26.leaderboards.store import Entry, LeaderboardStore
from icml26.protocol import Task
from icml26.stats import iqm, iqm_ci

__all__ = ["heldout_seeds", "agreement", "false_rejection_rate", "verify_entry", "VerificationError"]


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


def false_rejection_rate(values: Sequence[float], tolerance: float, n_seeds: int = 5,
                         draws: int = 20_000, seed: int = 0) -> float:
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
    a = trim_mean(v[idx[:, :n_seeds]], 0.25, axis=1)      # the IQM of icml26.stats.iqm
    b = trim_mean(v[idx[:, n_seeds:]], 0.25, axis=1)
    allowed = tolerance * np.maximum(np.abs(a), np.abs(b))
    return float(np.mean(np.abs(a - b) > allowed))


def _agent_name_for_run(entry: Entry) -> str:
    """A registered name when it maps to the submitted entry point (so its default kwargs
    apply, as in the submitter's run), otherwise the entry point itself."""
    from icml26 import agents

    name, ep = entry.agent.get("name", ""), entry.agent["entry_point"]
    spec = agents.all_specs().get(name)
    return name if spec is not None and spec.entry_point == ep else ep


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


def _ensure_importable(entry: Entry, install: bool) -> str | None:
    """Make the agent's module importable; return a failure reason or None."""
    ep = entry.agent["entry_point"]
    module = ep.partition(":")[0]
    path = entry.agent.get("path")
    if path:
        if not os.path.isdir(path):
            return f"the agent's local path {path!r} does not exist on the verifying machine"
        if path not in sys.path:
            sys.path.insert(0, path)
        # spawned workers (process executor) find it through the environment
        parts = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if path not in parts:
            os.environ["PYTHONPATH"] = os.pathsep.join([path, *filter(None, parts)])
    try:
        importlib.import_module(module)
        return None
    except Exception as e:
        first_error = f"{type(e).__name__}: {e}"
    req = entry.agent.get("requirement")
    if req and install:
        proc = subprocess.run([sys.executable, "-m", "pip", "install", req], capture_output=True,
                              text=True, timeout=1800)
        if proc.returncode != 0:
            return f"pip install {req!r} failed: {proc.stderr.strip().splitlines()[-1:]}"
        importlib.invalidate_caches()
        try:
            importlib.import_module(module)
            return None
        except Exception as e:
            return f"installed {req!r} but cannot import {module!r}: {type(e).__name__}: {e}"
    hint = f"; install it with `pip install '{req}'` or run verify with --install" if req else ""
    return f"cannot import the agent's module {module!r} ({first_error}){hint}"


class _CountingExecutor:
    """Wraps an executor to advance a progress bar per finished trial."""

    def __init__(self, inner: Any, bar: Any) -> None:
        self.inner, self.bar = inner, bar

    def run(self, specs: Any) -> Iterator[Any]:
        for result in self.inner.run(specs):
            if self.bar is not None:
                self.bar.update(1)
            yield result


def verify_entry(
    store: LeaderboardStore,
    entry_id: int,
    *,
    executor: str = "local",
    workers: int = 1,
    install: bool = False,
    force: bool = False,
    progress: bool = True,
    reps: int = 2000,
) -> Entry:
    """Re-run entry ``entry_id`` on its task's held-out seeds and record the verdict.

    Only PENDING entries are verified unless ``force`` (re-verify any status). Returns the
    updated entry. Runs the submitted agent's code: do it in a sandbox (container) you trust.
    """
    from icml26 import benchmarks
    from icml26.benchmarks.executors import make_executor

    entry = store.entry(entry_id)
    if entry.status != "PENDING" and not force:
        raise VerificationError(f"entry #{entry_id} is {entry.status}, not PENDING "
                                "(use --force to verify it again)")
    try:
        task = benchmarks.get_task(entry.task_id, entry.task_version)
    except KeyError as e:
        raise VerificationError(f"entry #{entry_id}: {e.args[0]}") from None
    t0 = time.perf_counter()
    summary: dict[str, Any] = {"tolerance": task.tolerance, "primary_metric": task.primary_metric,
                               "rule": "|rerun - submitted| <= tolerance * max(|submitted|, |rerun|)"}
    note = _requirement_note(entry.agent.get("requirement"))
    if note:
        summary["note"] = note
    reason = _ensure_importable(entry, install)
    if reason is not None:
        summary["wall_time_s"] = time.perf_counter() - t0
        store.set_status(entry_id, "FAILED", reason, verification=summary)
        return store.entry(entry_id)

    seeds = heldout_seeds(task, store.heldout_secret())
    specs = benchmarks.trials_for(task, _agent_name_for_run(entry), seeds, entry.agent.get("kwargs", {}))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(specs), desc=f"verifying #{entry_id} on held-out seeds", unit="trial",
                   file=sys.stderr, dynamic_ncols=True)
    try:
        with tempfile.TemporaryDirectory(prefix="icml26-verify-") as tmp:
            # the runner's own bar would print the held-out seeds; ours only counts
            results = benchmarks.run(specs, store=os.path.join(tmp, "rerun.db"),
                                     executor=_CountingExecutor(make_executor(executor, workers=workers), bar),
                                     progress=False, rerun=True)
    finally:
        if bar is not None:
            bar.close()
    summary["wall_time_s"] = time.perf_counter() - t0
    summary["n_heldout_seeds"] = len(seeds)
    failed = [r for r in results if r.status != "FINISHED"]
    if failed or len(results) != len(seeds):
        last = (failed[0].traceback or "").strip().splitlines()[-1:] if failed else ["trials missing"]
        reason = (f"re-run failed on {len(failed)} of {len(seeds)} held-out seeds: "
                  f"{last[0] if last else 'no traceback'}")
        store.set_status(entry_id, "FAILED", reason, verification=summary, verification_trials=results)
        return store.entry(entry_id)

    submitted_vals = entry.values(task.primary_metric)
    rerun_vals = [r.metrics[task.primary_metric] for r in results]
    sub_iqm, rerun_iqm = iqm(submitted_vals), iqm(rerun_vals)
    ok, diff, allowed = agreement(sub_iqm, rerun_iqm, task.tolerance)
    summary["submitted"] = dict(zip(("iqm", "low", "high"), iqm_ci(submitted_vals, reps=reps)))
    summary["rerun"] = dict(zip(("iqm", "low", "high"), iqm_ci(rerun_vals, reps=reps)))
    summary["rerun_metrics_iqm"] = {m.name: iqm([r.metrics[m.name] for r in results]) for m in task.metrics}
    summary["difference"] = diff
    summary["allowed"] = allowed
    summary["agrees"] = ok
    verdict = "VERIFIED" if ok else "REJECTED"
    reason = (f"{task.primary_metric}: re-run IQM {rerun_iqm:.6g} on {len(seeds)} held-out seeds vs "
              f"submitted {sub_iqm:.6g}; |difference| {diff:.3g} "
              f"{'<=' if ok else '>'} allowed {allowed:.3g} (tolerance {task.tolerance:g})")
    if note:
        reason += f"; note: {note}"
    store.set_status(entry_id, verdict, reason, verification=summary, verification_trials=results)
    return store.entry(entry_id)
