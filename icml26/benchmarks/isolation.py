"""Trials in child processes: a wall-clock limit, crash isolation and no orphans.

:class:`TrialProcesses` runs each trial in a child process (``fork``: a copy of this process,
cheap and aware of everything registered here; ``spawn``: a fresh interpreter) with up to
``workers`` children at once, and turns every way a trial can end into a :class:`TrialResult`:

* the trial returns: its result (FINISHED, or FAILED with the traceback when it raised, including
  ``SystemExit`` and ``KeyboardInterrupt`` raised inside the agent);
* the child dies (``os._exit``, a segfault, an OOM kill): run again in a fresh child up to
  ``max_retries`` times, then FAILED with the exit code or signal;
* the trial runs past its wall-clock limit: its whole process group is killed and the trial is
  FAILED with ``TrialTimeout`` and the limit (no retry: it would time out again).

No orphans: every child leads its own process group (so a Ctrl-C in the terminal reaches only
the driver, and the grandchildren an agent forks are killed with it), asks Linux to kill it when
the driver dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, even on ``SIGKILL`` of the driver), and
the driver kills the group of every child when a trial ends, on ``KeyboardInterrupt``/``SIGTERM``
(:func:`sigterm_as_exit`) and at interpreter exit (``atexit``). Not covered: grandchildren that
leave the process group (``setsid``) or whose parent child was killed by ``SIGKILL`` of the driver
(PDEATHSIG kills the child only).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from icml26.benchmarks.trial import (
    TrialSpec,
    driver_registrations,
    ensure_registered,
    execute_trial,
    failed_result,
    git_commit,
    package_versions,
    resolve_trial_timeout,
)
from icml26.protocol import TrialResult

__all__ = ["TrialProcesses", "default_start_method", "sigterm_as_exit", "kill_group"]

_live_groups: set[int] = set()  # process groups of children still running (killed at exit)
_live_lock = threading.Lock()


def default_start_method() -> str:
    """``fork`` where it is safe and available (Linux), else ``spawn``."""
    return (
        "fork"
        if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
        else "spawn"
    )


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (the child and what it forked), best effort."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.kill(pid, signal.SIGKILL)


@atexit.register
def _kill_live_groups() -> None:
    with _live_lock:
        groups = list(_live_groups)
        _live_groups.clear()
    for pid in groups:
        kill_group(pid)


@contextlib.contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """While active (main thread only, default handler only), SIGTERM raises ``SystemExit(143)``
    so that ``finally`` blocks kill the children instead of the process vanishing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        old = signal.getsignal(signal.SIGTERM)
    except (ValueError, OSError):  # pragma: no cover - no signals here
        yield
        return
    if old not in (signal.SIG_DFL, None):
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):  # pragma: no cover - no prctl
            pass
    if os.getppid() != parent_pid:
        os._exit(1)


def _quiet_progress_bars() -> None:
    """Turn off the tqdm bars a trial draws itself (training loops, data generation): in a child
    they would interleave with the runner's bar, which already names the running trials. Every
    bar of the child is off, whatever ``disable`` its code computed."""
    os.environ["TQDM_DISABLE"] = "1"  # tqdm reads it when first imported (a spawned child)
    with contextlib.suppress(ImportError):
        import tqdm.std  # a forked child has it already: change the class itself

        init = tqdm.std.tqdm.__init__

        @functools.wraps(init)
        def quiet_init(self: Any, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            init(self, *args, **kwargs)

        tqdm.std.tqdm.__init__ = quiet_init


def _child_main(conn: Connection, parent_pid: int, max_trials: int | None) -> None:
    """The child: lead a process group, die with the driver, run trials sent over ``conn``."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    _die_with_parent(parent_pid)
    _quiet_progress_bars()
    from icml26.benchmarks import trial as trial_module

    trial_module._IN_CHILD = True
    done = 0
    while max_trials is None or done < max_trials:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        spec, task, agent = msg
        try:
            ensure_registered(task, agent)
            result = execute_trial(spec)
        except BaseException:  # noqa: BLE001 - anything the trial raises fails the trial only
            result = failed_result(spec, traceback.format_exc())
        try:
            conn.send(result)
        except (OSError, ValueError):
            return
        done += 1


@dataclass
class _Slot:
    proc: Any
    conn: Connection
    spec: TrialSpec | None = None
    started: float = 0.0
    deadline: float | None = None
    limit: float | None = None
    trials: int = 0


def _death_reason(exitcode: int | None) -> str:
    if exitcode is None:
        return "no exit status"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        what = {
            "SIGSEGV": " (segmentation fault)",
            "SIGKILL": " (killed, e.g. by the OOM killer)",
            "SIGABRT": " (abort)",
            "SIGBUS": " (bus error)",
        }.get(name, "")
        return f"killed by {name}{what}"
    return f"exited with status {exitcode} before returning a result (os._exit or a crash)"


def timeout_result(spec: TrialSpec, limit: float, elapsed: float, overridden: bool) -> TrialResult:
    """The FAILED result of a trial killed at its wall-clock limit."""
    source = (
        "set by --trial-timeout / trial_timeout"
        if overridden
        else "the task's default; change it with --trial-timeout"
    )
    return failed_result(
        spec,
        f"TrialTimeout: the trial ran longer than its wall-clock limit of {limit:g} s ({source}) "
        f"and was killed after {elapsed:.1f} s",
        wall_time_s=elapsed,
    )


class TrialProcesses:
    """Run trials in child processes, ``workers`` at a time (see the module docstring).

    Args:
        workers: children running at once.
        start_method: ``"fork"`` or ``"spawn"`` (``"forkserver"`` works too).
        trial_timeout: wall-clock limit per trial in seconds (``None``: the task's default,
            :func:`icml26.benchmarks.runner.resolve_trial_timeout`; ``math.inf``: none).
        max_retries: times a trial whose child died is run again in a fresh child (each child
            runs one trial at a time, so a death is always that trial's own).
        trials_per_child: trials a child runs before it is replaced (``1``: a fresh process
            per trial; ``None``: children are reused until one dies or times out).
    """

    def __init__(
        self,
        workers: int = 1,
        start_method: str | None = None,
        trial_timeout: float | None = None,
        max_retries: int = 1,
        trials_per_child: int | None = 1,
    ) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"TrialProcesses: workers must be an int >= 1, got {workers!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(
                f"TrialProcesses: max_retries must be an int >= 0, got {max_retries!r}"
            )
        if trials_per_child is not None and (
            not isinstance(trials_per_child, int) or trials_per_child < 1
        ):
            raise ValueError(
                f"TrialProcesses: trials_per_child must be None or an int >= 1, "
                f"got {trials_per_child!r}"
            )
        self.workers = workers
        self.start_method = start_method or default_start_method()
        self.ctx: Any = multiprocessing.get_context(self.start_method)
        self.trial_timeout = trial_timeout
        self.max_retries = max_retries
        self.trials_per_child = trials_per_child
        self._warmed: set[tuple[str, str | None]] = set()

    # ------------------------------------------------------------------ children
    def _start(self) -> _Slot:
        parent, child = self.ctx.Pipe(duplex=True)
        proc = self.ctx.Process(
            target=_child_main,
            args=(child, os.getpid(), self.trials_per_child),
            daemon=True,
            name="icml26-trial",
        )
        proc.start()
        child.close()
        with _live_lock:
            _live_groups.add(proc.pid)
        return _Slot(proc, parent)

    def _stop(self, slot: _Slot, kill: bool) -> None:
        if not kill:
            with contextlib.suppress(OSError, ValueError):
                slot.conn.send(None)
            slot.proc.join(timeout=5)
        kill_group(slot.proc.pid)  # also reaps what the trial forked into its group
        slot.proc.join(timeout=5)
        slot.conn.close()
        with _live_lock:
            _live_groups.discard(slot.proc.pid)

    def _warm(self, task: Any, agent: Any) -> None:
        """Import the trusted code a forked child would import (the task's ``run_trial``, its env
        and a registered agent's module) once here, so that each child does not redo it. A
        user's own ``module:Class`` agent is imported only in the child, where it cannot harm
        the driver."""
        if self.start_method != "fork" or task is None:
            return
        key = (task.key, None if agent is None else agent.entry_point)
        if key in self._warmed:
            return
        self._warmed.add(key)
        import importlib

        names = [
            "torch",
            "threadpoolctl",
            task.run_trial.partition(":")[0],
        ]  # torch: seed_everything
        if agent is not None:
            names.append(agent.entry_point.partition(":")[0])
        try:
            import gymnasium as gym

            ep = gym.spec(task.env_id).entry_point
            if isinstance(ep, str):
                names.append(ep.partition(":")[0])
        except Exception:  # noqa: BLE001 - not a Gymnasium id (a data set, a PettingZoo env)
            pass
        for name in names:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    def _assign(self, slot: _Slot, spec: TrialSpec, task: Any, agent: Any) -> bool:
        limit = resolve_trial_timeout(task, self.trial_timeout, spec.budget_scale)
        try:
            slot.conn.send((spec, task, agent))
        except (OSError, ValueError):
            return False
        slot.spec, slot.started, slot.limit = spec, time.monotonic(), limit
        slot.deadline = None if limit is None else slot.started + limit
        slot.trials += 1
        return True

    # ------------------------------------------------------------------ run
    def run(self, specs: Sequence[TrialSpec]) -> Iterator[TrialResult]:  # noqa: C901
        queue: deque[TrialSpec] = deque(specs)
        if not queue:
            return
        if self.start_method == "fork":  # compute the provenance once here, not in every child
            package_versions()
            git_commit()
        deaths: dict[str, list[str]] = {}
        idle: list[_Slot] = []
        busy: list[_Slot] = []
        try:
            with sigterm_as_exit():
                while queue or busy:
                    while queue and len(busy) < self.workers:
                        spec = queue.popleft()
                        task, agent = driver_registrations(spec)
                        self._warm(task, agent)  # before the fork, so that the child has it
                        slot = idle.pop() if idle else self._start()
                        if not self._assign(
                            slot, spec, task, agent
                        ):  # the idle child died meanwhile
                            self._stop(slot, kill=True)
                            slot = self._start()
                            if not self._assign(slot, spec, task, agent):
                                self._stop(slot, kill=True)
                                yield failed_result(
                                    spec, "could not start a child process for the trial"
                                )
                                continue
                        busy.append(slot)
                    now = time.monotonic()
                    deadlines = [s.deadline for s in busy if s.deadline is not None]
                    timeout = None if not deadlines else max(0.0, min(deadlines) - now)
                    handles: list[Any] = [s.conn for s in busy] + [s.proc.sentinel for s in busy]
                    ready = set(wait(handles, timeout=timeout))
                    for slot in list(busy):
                        assert slot.spec is not None
                        spec = slot.spec
                        elapsed = time.monotonic() - slot.started
                        if slot.conn in ready or slot.proc.sentinel in ready:
                            result: TrialResult | None = None
                            try:
                                if slot.conn.poll():
                                    result = slot.conn.recv()
                            except (EOFError, OSError):
                                result = None
                            busy.remove(slot)
                            if result is not None:
                                if spec.key in deaths:
                                    result.extra = {
                                        **result.extra,
                                        "executor_retries": list(deaths[spec.key]),
                                    }
                                yield result
                                reuse = (
                                    self.trials_per_child is None
                                    or slot.trials < self.trials_per_child
                                )
                                if reuse and slot.proc.is_alive():
                                    idle.append(slot)
                                else:
                                    self._stop(slot, kill=False)
                                continue
                            slot.proc.join(timeout=5)
                            reason = _death_reason(slot.proc.exitcode)
                            self._stop(slot, kill=True)
                            tries = deaths.setdefault(spec.key, [])
                            tries.append(reason)
                            if len(tries) <= self.max_retries:
                                queue.appendleft(spec)
                            else:
                                yield failed_result(
                                    spec,
                                    f"worker process died during the trial ({len(tries)} attempts, each "
                                    "alone in a fresh process of its own, so this trial itself kills "
                                    "its process: segfault, OOM kill or os._exit): "
                                    + "; ".join(tries),
                                    wall_time_s=elapsed,
                                )
                        elif slot.deadline is not None and time.monotonic() >= slot.deadline:
                            busy.remove(slot)
                            self._stop(slot, kill=True)
                            assert slot.limit is not None
                            yield timeout_result(
                                spec, slot.limit, elapsed, self.trial_timeout is not None
                            )
        finally:
            for slot in busy + idle:
                self._stop(slot, kill=slot in busy)
