"""The sandboxed side of verification: ``python -I -m icml26.leaderboards.sandbox_worker``.

Reads requests from the verifier on stdin (pickled by the verifier), answers on stdout (JSON
only, :func:`icml26.leaderboards.sandbox.encode`). The first request constructs the agent after
checking its entry point: not a standard-library or interpreter callable, found in the
declared local path or installed by the declared requirement, and a class whose instances have
``reset`` and ``act`` (or a factory function of the submitted package). The agent's own prints
go to stderr, never into the protocol. Knows nothing but what each request carries: no store,
no database URL, no secret, no seed list.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import pickle
import random
import sys
import traceback
from typing import Any

from icml26.leaderboards.sandbox import (
    dist_provides,
    encode,
    entry_point_problem,
    read_frame,
    write_frame,
)


class Refused(Exception):
    """The entry point may not be constructed."""


def _under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _harden(hide: list[str]) -> tuple[int, bool]:
    """Inside the sandbox's mount namespace: put ``/dev/null`` over each file and an empty
    read-only tmpfs over each directory of ``hide``; then, as root (of the host or of a user
    namespace), drop every capability for good, so the submitted code cannot unmount them.
    Returns (paths hidden, capabilities dropped). Raises when a path cannot be hidden."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    n = 0
    for p in hide:
        if not os.path.lexists(p):
            continue
        if os.path.isdir(p):
            rc = libc.mount(b"tmpfs", p.encode(), b"tmpfs", 1 | 2 | 4 | 8, b"size=4k,mode=000")
        else:
            rc = libc.mount(b"/dev/null", p.encode(), None, 4096, None)  # MS_BIND
        if rc != 0:
            raise OSError(ctypes.get_errno(), f"the sandbox could not hide {p}")
        n += 1
    dropped = False
    if os.geteuid() == 0:
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        for cap in range(64):
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP (EINVAL past the last one)
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
        data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: none
        dropped = libc.capset(header, data) == 0
    return n, dropped


def _check_source(entry_point: str, requirement: str | None, path: str | None) -> None:
    top = entry_point.partition(":")[0].split(".")[0]
    if path:
        if not os.path.isdir(path):
            raise Refused(
                f"the agent's local path {path!r} does not exist on the verifying machine"
            )
        sys.path.insert(0, path)
        importlib.invalidate_caches()
        spec = importlib.util.find_spec(top)  # a top-level lookup imports nothing
        where = (
            []
            if spec is None
            else list(spec.submodule_search_locations or []) + [spec.origin or ""]
        )
        if spec is None or not any(w and _under(w, path) for w in where):
            raise Refused(f"module {top!r} of {entry_point!r} is not in the declared path {path!r}")
    elif requirement:
        from packaging.requirements import Requirement

        provides = dist_provides(Requirement(requirement).name, top)
        if provides is None:
            raise Refused(
                f"cannot import the agent's module {top!r}: the requirement {requirement!r} "
                f"is not installed here; install it with `pip install '{requirement}'` or "
                "run verify with --install"
            )
        if not provides:
            raise Refused(f"module {top!r} is not part of the declared requirement {requirement!r}")
    else:
        raise Refused("the submission names neither a requirement nor a local path")


def _seed(seed: int, threads: int) -> None:
    """What :func:`icml26.benchmarks.runner.seed_everything` does, without importing torch
    unless the agent did (so results match a local run)."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.manual_seed(seed)
        torch.set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)
    except ImportError:  # pragma: no cover
        pass


def _construct(msg: dict[str, Any]) -> Any:
    ep, requirement, path = msg["entry_point"], msg.get("requirement"), msg.get("path")
    problem = entry_point_problem(ep)  # the requirement is checked below, from its own metadata
    if problem:
        raise Refused(problem)
    _check_source(ep, requirement, path)
    from icml26._entry_points import load_entry_point

    obj = load_entry_point(ep)
    top = ep.partition(":")[0].split(".")[0]
    if inspect.isclass(obj):
        missing = [m for m in ("reset", "act") if not callable(getattr(obj, m, None))]
        if missing:
            raise Refused(
                f"{ep!r} is a class without {' and '.join(missing)}(); an agent class "
                "needs reset(seed) and act(observation, info)"
            )
    elif inspect.isfunction(obj) and (obj.__module__ or "").split(".")[0] == top:
        pass  # a factory of the submitted package; its product is checked below
    else:
        raise Refused(
            f"{ep!r} is a {type(obj).__name__}, not an agent class (or a factory "
            "function defined in the submitted package)"
        )
    _seed(int(msg["seed"]), int(msg.get("threads", 1)))
    agent = obj(**msg["kwargs"])
    missing = [m for m in ("reset", "act") if not callable(getattr(agent, m, None))]
    if missing:
        raise Refused(f"the object made by {ep!r} has no {' and '.join(missing)}() method")
    return agent


def _reply(fd: int, obj: dict[str, Any]) -> None:
    write_frame(fd, b"J" + json.dumps(obj, allow_nan=True).encode("utf-8"))


def _error(e: BaseException) -> dict[str, Any]:
    return {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}


def main() -> int:
    # private copies of the pipes; fd 1 then points at stderr, so prints cannot corrupt replies
    rfd, wfd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    agent: Any = None
    while True:
        try:
            raw = read_frame(rfd)
        except Exception:
            return 0  # the verifier went away
        msg = pickle.loads(raw[1:])
        op = msg.get("op")
        try:
            if op == "init":
                hidden, dropped = _harden(list(msg.pop("hide", [])))
                agent = _construct(msg)
                out: dict[str, Any] = {
                    "ok": True,
                    "version": str(getattr(agent, "version", "0")),
                    "hidden": hidden,
                    "caps_dropped": dropped,
                }
            elif op == "getattr":
                name = msg["name"]
                if name.startswith("_") or not hasattr(agent, name):
                    out = {"exists": False}
                else:
                    value = getattr(agent, name)
                    out = {"exists": True, "callable": callable(value)}
                    if not callable(value):
                        out["value"] = encode(value)
            elif op == "call":
                name = msg["name"]
                if name.startswith("_"):
                    raise AttributeError(f"private method {name!r} cannot be called")
                value = getattr(agent, name)(*msg["args"], **msg["kwargs"])
                try:
                    out = {"value": encode(value)}
                except TypeError as e:
                    if name != "learn":
                        raise
                    # as the runner does with extras: training statistics that are not plain
                    # data are dropped with a note, the trial goes on
                    out = {"value": {"note": f"learn statistics dropped: {e}"}}
            else:
                raise ValueError(f"unknown request {op!r}")
        except BaseException as e:  # the agent's SystemExit/KeyboardInterrupt fail the call only
            out = _error(e)
        try:
            _reply(wfd, out)
        except (TypeError, ValueError) as e:
            _reply(wfd, _error(e))


if __name__ == "__main__":
    sys.exit(main())
