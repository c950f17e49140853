"""Deliberately misbehaving agents for testing harnesses (the runner's failure isolation)."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np


class CrashingAgent:
    """Raises ``RuntimeError`` on its first action."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        raise RuntimeError("CrashingAgent crashed on purpose")


class ProcessKillingAgent:
    """Kills its own process (``os._exit``) on its first action, like a segfault would."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        os._exit(13)


class SlowZeroAgent:
    """Acts with zeros after sleeping ``sleep_s`` at every reset (to interrupt runs midway)."""

    version = "1"

    def __init__(self, sleep_s: float = 0.3) -> None:
        self.sleep_s = sleep_s
        self._shape: tuple[int, ...] = (2,)

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self._shape = action_space.shape

    def reset(self, seed: int | None = None) -> None:
        time.sleep(self.sleep_s)

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        return np.zeros(self._shape, dtype=np.float32)


class HangingAgent:
    """Never returns from its first action (sleeps ``hang_s``, default a day): a trial that only
    a wall-clock limit ends."""

    version = "1"

    def __init__(self, hang_s: float = 86_400.0) -> None:
        self.hang_s = hang_s

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        time.sleep(self.hang_s)
        raise RuntimeError("HangingAgent woke up")


class SegfaultingAgent:
    """Dies of a real segmentation fault (reads address 0 through ctypes) on its first action."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        import ctypes
        import faulthandler

        faulthandler.disable()  # no stack dump from pytest's handler: the crash is the point
        ctypes.string_at(0)  # SIGSEGV
        raise RuntimeError("SegfaultingAgent survived reading address 0")


class InterruptingAgent:
    """Raises ``KeyboardInterrupt`` (as a stray Ctrl-C handler might) on its first action."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        raise KeyboardInterrupt("InterruptingAgent")


class ForkingHangingAgent:
    """Forks a grandchild that sleeps for an hour (its pid written to ``pid_file``), then hangs:
    after the trial is killed, the grandchild must not outlive it."""

    version = "1"

    def __init__(self, pid_file: str) -> None:
        self.pid_file = pid_file

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        import subprocess
        import sys

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        with open(self.pid_file, "w") as f:
            f.write(str(child.pid))
        time.sleep(86_400)
        raise RuntimeError("ForkingHangingAgent woke up")


class ParentKillingAgent:
    """SIGKILLs the process that started its trial's process (a Ray worker, say) on its first
    action: the death of the worker itself, not of the trial's child."""

    version = "1"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        import signal

        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(60)
        raise RuntimeError("ParentKillingAgent's parent survived")


# ---------------------------------------------------------------------------- leaderboard attacks
# Agents that attack the verifier rather than merely failing (tests/leaderboards/test_attacks.py).


class MemoryBombAgent:
    """Allocates ``gib`` GiB (touching every page) on its first action."""

    version = "1"

    def __init__(self, gib: float = 3.0) -> None:
        self.gib = gib

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        hog = np.ones(int(self.gib * 2**30) // 8)
        return hog[:2].astype(np.float32)


class OrphanForkingAgent:
    """On its first reset, double-forks (``setsid`` in between, so the grandchild leaves the
    agent's session and process group) a grandchild that writes its pid to ``pid_file`` at once
    and ``marker`` after ``delay_s``; then plays like the tutorial PD controller (kp=2, kd=1.5).
    The grandchild must die with the trial."""

    version = "1"

    def __init__(self, pid_file: str, marker: str, delay_s: float = 2.0) -> None:
        self.pid_file, self.marker, self.delay_s = pid_file, marker, delay_s
        self._forked = False

    def reset(self, seed: int | None = None) -> None:
        if self._forked:
            return
        self._forked = True
        if os.fork() == 0:  # child: new session, fork the grandchild, exit
            os.setsid()
            if os.fork() == 0:
                with open(self.pid_file, "w") as f:
                    f.write(str(os.getpid()))
                time.sleep(self.delay_s)
                with open(self.marker, "w") as f:
                    f.write("the grandchild outlived the trial")
                os._exit(0)
            os._exit(0)
        os.wait()

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        o = np.asarray(observation, dtype=np.float64)
        return np.clip(2.0 * o[4:6] - 1.5 * o[2:4], -1, 1).astype(np.float32)


class MalformedActionAgent:
    """Returns something that is not an action: ``kind`` = ``"object"`` (an arbitrary object),
    ``"string"``, ``"nested"`` (lists nested 200 deep) or ``"object_array"`` (dtype object)."""

    version = "1"

    def __init__(self, kind: str = "object") -> None:
        self.kind = kind

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        if self.kind == "string":
            return "rm -rf /"
        if self.kind == "nested":
            out: Any = [0.0, 0.0]
            for _ in range(200):
                out = [out]
            return out
        if self.kind == "object_array":
            return np.array([object(), object()], dtype=object)
        return object()


class SpyAgent:
    """Looks for what a submitted agent must never reach, then reports it by raising.

    In every call it walks ``gc`` for leaderboard stores and SQLAlchemy engines (and, finding
    one, tries to flip every other entry to REJECTED, the attack of issue 14), for the secret
    (recognised by its SHA-256 ``secret_sha256``) in any bytes/str object, in ``os.environ`` and
    in the parent's ``/proc/<ppid>/environ``, and for held-out seeds (recognised by the SHA-256
    of their decimal text, ``seed_sha256``) in any int or list of ints, and reads ``files``
    (paths it guessed: the store, the secret file). On its first action it
    raises ``RuntimeError("spy report: <JSON>")`` with what it found. ``flip=False`` only looks."""

    version = "1"

    def __init__(
        self,
        secret_sha256: str,
        seed_sha256: list[str],
        flip: bool = True,
        files: list[str] | None = None,
    ) -> None:
        self.secret_sha256, self.seed_sha256, self.flip = secret_sha256, set(seed_sha256), flip
        self.files = list(files or [])
        self.report: dict[str, Any] = {
            "stores": 0,
            "engines": 0,
            "flipped": 0,
            "secret_in_memory": False,
            "secret_from_store": False,
            "secret_in_environ": False,
            "parent_environ_readable": False,
            "secret_in_parent_environ": False,
            "seeds": [],
            "calls": 0,
            "files_read": [],
        }
        self._search()

    def _is_secret(self, v: Any) -> bool:
        import hashlib

        if isinstance(v, str):
            v = v.encode("utf-8", "replace")
        return (
            isinstance(v, bytes)
            and 8 <= len(v) <= 256
            and hashlib.sha256(v).hexdigest() == self.secret_sha256
        )

    def _is_seed(self, v: Any) -> bool:
        import hashlib

        return (
            isinstance(v, int)
            and not isinstance(v, bool)
            and 0 <= v < 2**31
            and hashlib.sha256(str(v).encode()).hexdigest() in self.seed_sha256
        )

    def _search(self) -> None:  # noqa: C901
        import gc

        r = self.report
        r["calls"] += 1
        seeds = set(r["seeds"])
        with warnings.catch_warnings():  # touching every object trips deprecation shims
            warnings.simplefilter("ignore")
            for obj in gc.get_objects():
                name = type(obj).__name__
                if name == "LeaderboardStore":
                    r["stores"] += 1
                    try:
                        r["secret_from_store"] |= self._is_secret(obj.heldout_secret())
                    except Exception:
                        pass
                    try:  # the original attack: flip every other entry
                        for e in obj.entries() if self.flip else []:
                            obj.set_status(e.id, "REJECTED", "spy", actor="verify")
                            r["flipped"] += 1
                    except Exception:
                        pass
                elif name == "Engine" and type(obj).__module__.startswith("sqlalchemy"):
                    r["engines"] += 1
                elif isinstance(obj, (list, tuple)) and len(obj) < 100_000:
                    seeds.update(v for v in obj if self._is_seed(v))
                    r["secret_in_memory"] |= any(
                        self._is_secret(v) for v in obj if isinstance(v, (bytes, str))
                    )
                elif isinstance(obj, dict):
                    for v in list(obj.values()):
                        if self._is_seed(v):
                            seeds.add(v)
                        elif self._is_secret(v):
                            r["secret_in_memory"] = True
        r["secret_in_environ"] |= any(self._is_secret(v) for v in os.environ.values())
        try:
            with open(f"/proc/{os.getppid()}/environ", "rb") as f:
                env = f.read()
            r["parent_environ_readable"] = True
            r["secret_in_parent_environ"] |= any(
                self._is_secret(kv.partition(b"=")[2]) for kv in env.split(b"\0")
            )
        except OSError:
            pass
        r["seeds"] = sorted(seeds)
        for path in self.files:  # files whose paths it guessed: the store, the secret file
            try:
                with open(path, "rb") as f:
                    if f.read(64) and path not in r["files_read"]:
                        r["files_read"].append(path)
            except OSError:
                pass

    def reset(self, seed: int | None = None) -> None:
        self._search()

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        import json

        self._search()
        raise RuntimeError("spy report: " + json.dumps(self.report, sort_keys=True))


class ProgressBarAgent:
    """Draws its own tqdm bar (``label``) at every reset, as training loops do, and acts with zeros."""

    version = "1"

    def __init__(self, label: str = "agent-own-bar") -> None:
        self.label = label

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self.shape = action_space.shape

    def reset(self, seed: int | None = None) -> None:
        import sys

        from tqdm.auto import tqdm

        # disable=False, as family code computes it (e.g. ``disable=n_updates < 20``)
        for _ in tqdm(range(3), desc=self.label, file=sys.stderr, mininterval=0, disable=False):
            pass

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any:
        return np.zeros(self.shape, dtype=np.float32)
