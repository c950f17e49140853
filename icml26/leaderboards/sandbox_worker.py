"""The sandboxed side of verification, started by :class:`icml26.leaderboards.sandbox.Worker`.

With a confinement spec as its argument the process first confines itself
(:func:`icml26.leaderboards.jail.enter`: namespaces, read-only root, private tmpfs,
unprivileged uid, no capabilities), before any submitted code is imported. Then it reads
requests from the verifier on stdin (pickled by the verifier) and answers on stdout (JSON only,
:func:`icml26.leaderboards.sandbox.encode`). The first request constructs the agent after
checking its entry point: not a standard-library or interpreter callable, found in the
submitted code or installed by the declared requirement, and a class whose instances have
``reset`` and ``act`` (or a factory function of the submitted package). A refusal is sent as a
code the verifier turns into its own words; an exception as its type plus, for the organizer
only, its text. The agent's own prints go to stderr, never into the protocol. Knows nothing but
what each request carries: no store, no database URL, no secret, no seed list; its random
generators are seeded with the seed it is sent (a one-way function of the trial's seed).
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
    """The entry point may not be constructed; ``code`` is a key of
    :data:`icml26.leaderboards.sandbox.REFUSALS`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _check_source(
    entry_point: str, requirement: str | None, path: str | None, site: list[str]
) -> None:
    """The entry point's top-level module is found in the submitted code (``path``, or the
    ``site`` directories a carried wheel was unpacked to) or belongs to ``requirement``."""
    top = entry_point.partition(":")[0].split(".")[0]
    code = [path] if path else list(site) if not requirement else []
    if code:
        if not all(os.path.isdir(d) for d in code):
            raise Refused("not_in_code", f"the agent's code directory {code} does not exist here")
        if path:
            sys.path.insert(0, path)
        importlib.invalidate_caches()
        spec = importlib.util.find_spec(top)  # a top-level lookup imports nothing
        where = (
            []
            if spec is None
            else list(spec.submodule_search_locations or []) + [spec.origin or ""]
        )
        if spec is None or not any(w and _under(w, d) for w in where for d in code):
            raise Refused(
                "not_in_code", f"module {top!r} of {entry_point!r} is not in the code at {code}"
            )
    elif requirement:
        from packaging.requirements import Requirement

        provides = dist_provides(Requirement(requirement).name, top)
        if provides is None:
            raise Refused(
                "not_installed",
                f"cannot import the agent's module {top!r}: the requirement {requirement!r} "
                "is not installed for the worker",
            )
        if not provides:
            raise Refused(
                "not_provided", f"module {top!r} is not part of the requirement {requirement!r}"
            )
    else:
        raise Refused("no_source", "the submission names neither a requirement nor code")


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
        raise Refused("entry_point", problem)
    _check_source(ep, requirement, path, list(msg.get("site") or []))
    from icml26._entry_points import load_entry_point

    obj = load_entry_point(ep)
    top = ep.partition(":")[0].split(".")[0]
    if inspect.isclass(obj):
        missing = [m for m in ("reset", "act") if not callable(getattr(obj, m, None))]
        if missing:
            raise Refused(
                "not_agent",
                f"{ep!r} is a class without {' and '.join(missing)}(); an agent class "
                "needs reset(seed) and act(observation, info)",
            )
    elif inspect.isfunction(obj) and (obj.__module__ or "").split(".")[0] == top:
        pass  # a factory of the submitted package; its product is checked below
    else:
        raise Refused(
            "not_agent",
            f"{ep!r} is a {type(obj).__name__}, not an agent class (or a factory "
            "function defined in the submitted package)",
        )
    _seed(int(msg["seed"]), int(msg.get("threads", 1)))
    agent = obj(**msg["kwargs"])
    missing = [m for m in ("reset", "act") if not callable(getattr(agent, m, None))]
    if missing:
        raise Refused(
            "no_methods", f"the object made by {ep!r} has no {' and '.join(missing)}() method"
        )
    return agent


def _reply(fd: int, obj: dict[str, Any]) -> None:
    write_frame(fd, b"J" + json.dumps(obj, allow_nan=True).encode("utf-8"))


def _error(e: BaseException) -> dict[str, Any]:
    builtin = next((c for c in type(e).__mro__ if c.__module__ == "builtins"), BaseException)
    out = {
        "error": f"{type(e).__name__}: {e}",
        "type": builtin.__name__,  # the nearest built-in class: its name is the public part
        "traceback": traceback.format_exc(),
    }
    if isinstance(e, Refused):
        out["refused"] = e.code
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    jail: dict[str, Any] | None = None
    if argv and argv[0]:
        from icml26.leaderboards.jail import JailSpec, enter

        jail = enter(JailSpec.from_json(argv[0]))  # only the confined child returns
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
                for d in reversed(msg.get("site") or []):  # the entry's own environment
                    sys.path.insert(0, d)
                agent = _construct(msg)
                out: dict[str, Any] = {
                    "ok": True,
                    "version": str(getattr(agent, "version", "0")),
                    "jail": jail or {},
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
