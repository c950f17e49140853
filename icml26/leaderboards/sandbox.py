"""Run submitted agent code in a separate, limited worker process (the verifier's side).

The verifier never imports a submitted module. :class:`Worker` starts a fresh interpreter of
this very icml26 (``python -I``, an environment reduced to an allow-list, resource limits on
CPU time, address space, open files and file size, in its own session) which, before it
imports anything submitted, confines itself (:mod:`icml26.leaderboards.jail`: new mount, PID,
network, IPC and UTS namespaces; every mount read-only; homes, configuration, caches, ``/run``
and the store hidden; a private tmpfs of ``Limits.disk_mb`` as its only writable place; an
unprivileged uid without capabilities and with ``no_new_privs``), its whole process tree held to
``Limits.memory_mb`` and ``Limits.processes`` by a cgroup where one can be made. Where it cannot
be confined here, :class:`Worker` refuses (:class:`SandboxUnavailable`) unless the caller asks
for an unconfined worker (``namespaces=False``: the organizer's ``--allow-unisolated``). With
``sandbox="docker"`` the same worker runs in a container (``--network none --read-only``, the
same limits). The verifier keeps the environment, the seeds and the scoring;
:class:`RemoteAgent` stands in for the agent in the family's ``run_trial`` and forwards each
call over the worker's pipes.

Wire protocol (one request, one reply): a frame is a 4-byte big-endian length and a body
whose first byte says the encoding. Verifier -> worker: ``P`` + pickle (the worker trusts the
verifier). Worker -> verifier: ``J`` + JSON only (the verifier never unpickles what submitted
code wrote); arrays travel as ``{"__nd__": [dtype, shape, base64]}`` with numeric dtypes only,
tuples as ``{"__tuple__": [...]}``. Anything else is a protocol error: the trial FAILS. An error
the worker reports is published only as what the verifier can vouch for (a built-in exception
type, a refusal in fixed words); its text is the organizer's (:class:`AgentCallError` ``detail``).

The wall clock is enforced here: every reply must arrive before the deadline (the start-up
limit while the agent is constructed, then the trial's), else the worker's whole process tree
is frozen and killed (grandchildren that called ``setsid`` included: this process becomes a
child subreaper, and a confined tree dies with its PID namespace). A process that left the
worker's session (``setsid``, a daemon) fails the trial, and so does a tree that broke its
memory or process limit (the cgroup's counters say which).
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import ctypes
import functools
import json
import os
import pickle
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

__all__ = [
    "Limits",
    "SandboxError",
    "AgentCallError",
    "SandboxUnavailable",
    "Worker",
    "RemoteAgent",
    "entry_point_problem",
    "docker_command",
    "encode",
    "decode",
]

WORKER_MODULE = "icml26.leaderboards.sandbox_worker"
_MAX_FRAME = 64 * 2**20
# modules that are the interpreter itself rather than a package (not all are stdlib names)
_INTERPRETER_MODULES = frozenset(
    {
        "__main__",
        "__future__",
        "builtins",
        "site",
        "sitecustomize",
        "usercustomize",
        "_frozen_importlib",
        "_frozen_importlib_external",
    }
)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_ENTRY_POINT_RE = re.compile(rf"^{_IDENT}(\.{_IDENT})*:{_IDENT}(\.{_IDENT})*$")
_ENV_ALLOW = ("LANG", "LC_ALL", "TZ")


class SandboxError(RuntimeError):
    """The worker died, broke a limit, or spoke outside the protocol. ``kind`` says which
    (``"timeout"``, ``"died"``, ``"limit"``, ``"protocol"``); the message is fit for the public
    (no text of the agent's); ``detail`` is the full story for the organizer."""

    def __init__(self, message: str, kind: str = "died", detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail or message


class AgentCallError(RuntimeError):
    """The submitted code raised inside the worker. The message names only what the verifier
    can vouch for (a built-in exception type, or a refusal of the entry point in fixed words);
    ``detail`` and ``remote_traceback`` are the worker's own text (organizer only)."""

    def __init__(self, message: str, detail: str = "", tb: str = "") -> None:
        super().__init__(message)
        self.detail = detail or message
        self.remote_traceback = tb


class SandboxUnavailable(RuntimeError):
    """The requested sandbox cannot run here (no docker/podman; no isolation without
    ``allow_unisolated``)."""


@dataclass(frozen=True)
class Limits:
    """Limits of a worker. ``wall_s``: wall clock for the whole trial (enforced by the
    verifier); ``cpu_s``: CPU seconds per process (RLIMIT_CPU, default = ``wall_s``);
    ``memory_mb``: memory of the whole worker tree (a cgroup where available; each process's
    address space, RLIMIT_AS, always); ``processes``: processes of the tree (a pids cgroup,
    else RLIMIT_NPROC of the sandbox uid); ``disk_mb``: the private tmpfs, the only writable
    place; ``open_files``: RLIMIT_NOFILE; ``file_mb``: largest file (RLIMIT_FSIZE);
    ``startup_s``: wall clock for starting the worker and constructing the agent."""

    wall_s: float = 1800.0
    cpu_s: float | None = None
    memory_mb: int = 4096
    open_files: int = 256
    file_mb: int = 256
    startup_s: float = 60.0
    processes: int = 64
    disk_mb: int = 512

    def __post_init__(self) -> None:
        for name in (
            "wall_s",
            "memory_mb",
            "open_files",
            "file_mb",
            "startup_s",
            "processes",
            "disk_mb",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"Limits.{name}: expected a positive number, got {v!r}")
        if self.cpu_s is not None and not self.cpu_s > 0:
            raise ValueError(
                f"Limits.cpu_s: expected a positive number or None, got {self.cpu_s!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def cpu_limit_s(self) -> int:
        return int(self.cpu_s or self.wall_s) + int(self.startup_s)


# ---------------------------------------------------------------------------- entry points
def _normalize(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


@functools.cache
def _owners_of_top_level_modules() -> Mapping[str, list[str]]:
    import importlib.metadata

    return importlib.metadata.packages_distributions()


def dist_provides(dist_name: str, top: str) -> bool | None:
    """Whether the installed distribution ``dist_name`` provides the top-level module ``top``
    (None when it is not installed). Reads only that distribution's metadata."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    top_level = dist.read_text("top_level.txt")
    if top_level and top in top_level.split():
        return True
    for f in dist.files or []:
        first = f.parts[0] if f.parts else ""
        if (
            first == top
            or first == f"{top}.py"
            or (first.startswith(f"{top}.") and first.endswith((".so", ".pyd")))
        ):
            return True
    return False


def entry_point_problem(
    entry_point: Any, requirement: str | None = None, path: str | None = None
) -> str | None:
    """Why ``entry_point`` may not be run as a submitted agent, or None.

    Refused: anything not ``package.module:Name``; a top-level module of the standard library
    or the interpreter (``os:system``, ``subprocess:run``, ``builtins:exec``...); with a
    ``requirement``, a top-level module installed here from another distribution. (With a
    ``path``, the worker checks that the module is found in that directory.)
    """
    if not isinstance(entry_point, str) or not _ENTRY_POINT_RE.fullmatch(entry_point):
        return f"{entry_point!r} is not an entry point 'package.module:ClassName'"
    top = entry_point.partition(":")[0].split(".")[0]
    if (
        top in sys.stdlib_module_names
        or top in sys.builtin_module_names
        or top in _INTERPRETER_MODULES
    ):
        return (
            f"{entry_point!r} names the standard-library/interpreter module {top!r}; an agent "
            "entry point must name a class in the submitted package (its requirement or path)"
        )
    if requirement:
        try:
            from packaging.requirements import InvalidRequirement, Requirement

            want = _normalize(Requirement(requirement).name)
        except (ImportError, InvalidRequirement):
            return None  # the requirement's own validation reports it
        owners = _owners_of_top_level_modules().get(top)
        if owners and want not in {_normalize(d) for d in owners}:
            return (
                f"module {top!r} of {entry_point!r} belongs to the installed distribution(s) "
                f"{sorted(set(owners))}, not to the declared requirement {requirement!r}"
            )
    return None


# ---------------------------------------------------------------------------- codec
_ND_KINDS = frozenset("biuf")


def encode(value: Any, _depth: int = 0) -> Any:
    """A JSON-able form of ``value`` (numbers, strings, lists, dicts with string keys, tuples,
    NumPy arrays and scalars of numeric dtypes). Raises ``TypeError`` for anything else."""
    if _depth > 32:
        raise TypeError("value nested deeper than 32 levels")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.kind not in _ND_KINDS:
            raise TypeError(f"arrays of dtype {arr.dtype} cannot be sent (numeric dtypes only)")
        data = np.ascontiguousarray(arr)
        return {
            "__nd__": [
                data.dtype.str,
                list(arr.shape),
                base64.b64encode(data.tobytes()).decode(),
                isinstance(value, np.generic),
            ]
        }
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, _depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode(v, _depth + 1) for v in value]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or k.startswith("__"):
                raise TypeError(f"dict keys must be plain strings, got {k!r}")
            out[k] = encode(v, _depth + 1)
        return out
    raise TypeError(f"a {type(value).__name__} cannot be sent between the agent and the verifier")


def decode(obj: Any, _depth: int = 0) -> Any:
    """Inverse of :func:`encode`; raises ``ValueError`` for anything outside the format."""
    if _depth > 32:
        raise ValueError("value nested deeper than 32 levels")
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [decode(v, _depth + 1) for v in obj]
    if isinstance(obj, dict):
        if set(obj) == {"__tuple__"} and isinstance(obj["__tuple__"], list):
            return tuple(decode(v, _depth + 1) for v in obj["__tuple__"])
        if set(obj) == {"__nd__"}:
            try:
                dtype_s, shape, b64, scalar = obj["__nd__"]
                dtype = np.dtype(dtype_s)
                if dtype.kind not in _ND_KINDS or not all(
                    isinstance(n, int) and n >= 0 for n in shape
                ):
                    raise ValueError
                raw = base64.b64decode(b64, validate=True)
                arr = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
            except Exception:
                raise ValueError("malformed array in the worker's reply") from None
            return arr[()] if scalar and arr.ndim == 0 else arr
        if any(k.startswith("__") for k in obj):
            raise ValueError(f"unexpected keys {sorted(obj)[:5]} in the worker's reply")
        return {k: decode(v, _depth + 1) for k, v in obj.items()}
    raise ValueError(f"unexpected {type(obj).__name__} in the worker's reply")


# ---------------------------------------------------------------------------- framing
def write_frame(fd: int, body: bytes, deadline: float | None = None) -> None:
    data = len(body).to_bytes(4, "big") + body
    view = memoryview(data)
    while view:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SandboxError("timed out sending to the worker", "timeout")
            _, w, _ = select.select([], [fd], [], left)
            if not w:
                continue
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            continue
        except (BrokenPipeError, OSError) as e:
            raise SandboxError(f"the worker closed its input ({e})", "died") from None
        view = view[n:]


def read_frame(fd: int, deadline: float | None = None, limit: int = _MAX_FRAME) -> bytes:
    def read_exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SandboxError("no reply before the deadline", "timeout")
                r, _, _ = select.select([fd], [], [], left)
                if not r:
                    continue
            try:
                chunk = os.read(fd, n - len(buf))
            except BlockingIOError:
                continue
            if not chunk:
                raise SandboxError("the worker exited", "died")
            buf += chunk
        return bytes(buf)

    n = int.from_bytes(read_exact(4), "big")
    if n > limit:
        raise SandboxError(f"the worker sent a {n}-byte message (limit {limit})", "protocol")
    return read_exact(n)


# ---------------------------------------------------------------------------- process tree
_guard_depth = 0


def _prctl(option: int, value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _guard(on: bool) -> None:
    """While a worker lives, this process adopts orphaned descendants (Linux
    PR_SET_CHILD_SUBREAPER, so a grandchild that detached can still be found and killed) and
    keeps same-user processes out of its /proc entries (PR_SET_DUMPABLE 0: no reading its
    environment, memory or open files). Both are undone when the last worker is closed."""
    global _guard_depth
    _guard_depth += 1 if on else -1
    if (on and _guard_depth == 1) or (not on and _guard_depth == 0):
        _prctl(36, int(on))  # PR_SET_CHILD_SUBREAPER
        _prctl(4, int(not on))  # PR_SET_DUMPABLE


def _proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, start time in clock ticks) for every process we can see."""
    out: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2 :].split()
        with contextlib.suppress(ValueError, IndexError):
            out[int(name)] = (int(rest[1]), int(rest[19]))
    return out


def _descendants(roots: set[int], table: dict[int, tuple[int, int]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), list(roots)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _session(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2 :].split()[3])
    except (OSError, ValueError, IndexError):
        return None


def _our_children() -> set[int]:
    me = os.getpid()
    return (
        {pid for pid, (ppid, _) in _proc_table().items() if ppid == me}
        if os.path.isdir("/proc")
        else set()
    )


# ---------------------------------------------------------------------------- docker
def docker_command(
    image: str,
    limits: Limits,
    *,
    name: str,
    agent_path: str | None = None,
    engine: str | None = None,
    site: Sequence[str] = (),
) -> list[str]:
    """The ``docker run`` (or ``podman run``) command line of a containerized worker: no
    network, read-only root, a small writable /tmp, the memory/CPU/pids/open-files limits,
    no capabilities, the agent's code mounted read-only at /agent (a wheel's site directories
    at /site0, /site1...)."""
    engine = engine or shutil.which("docker") or shutil.which("podman")
    if not engine:
        raise SandboxUnavailable(
            "--sandbox docker needs docker or podman on PATH; neither was "
            "found (use the default process sandbox, or install one)"
        )
    cpu = int(limits.cpu_s or limits.wall_s)
    cmd = [
        engine,
        "run",
        "--rm",
        "-i",
        "--name",
        name,
        "--network",
        "none",
        "--read-only",
        "--tmpfs",
        f"/tmp:rw,size={int(limits.disk_mb)}m,mode=1777",
        "--workdir",
        "/tmp",
        "--env",
        "HOME=/tmp",
        "--memory",
        f"{int(limits.memory_mb)}m",
        "--memory-swap",
        f"{int(limits.memory_mb)}m",
        "--cpus",
        "1",
        "--pids-limit",
        str(int(limits.processes)),
        "--ulimit",
        f"nofile={int(limits.open_files)}:{int(limits.open_files)}",
        "--ulimit",
        f"cpu={cpu}:{cpu + 5}",
        "--ulimit",
        f"fsize={int(limits.file_mb) * 2**20}",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
    ]
    if agent_path:
        cmd += ["--volume", f"{os.path.realpath(agent_path)}:/agent:ro"]
    for i, d in enumerate(site):  # the entry's own site directories (a wheel's code)
        cmd += ["--volume", f"{os.path.realpath(d)}:/site{i}:ro"]
    return [*cmd, image, "python", "-I", "-m", WORKER_MODULE]


# ---------------------------------------------------------------------------- confinement
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding icml26/
# The worker imports this very icml26 (not whichever one site-packages would find first).
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from icml26.leaderboards.sandbox_worker import main; sys.exit(main(sys.argv[2:]))"
)
_BUILTIN_EXCEPTIONS = frozenset(
    n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
)


@functools.cache
def interpreter_paths() -> tuple[str, ...]:
    """What a worker's interpreter reads: its prefixes, the ``sys.path`` of ``python -I`` and
    the directory holding this icml26 (kept visible, read-only, in a confined worker)."""
    code = (
        "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, "
        "sys.base_exec_prefix, *sys.path]))"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60
        ).stdout
        paths = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        paths = [sys.prefix, sys.base_prefix, *sys.path]
    paths += [PACKAGE_ROOT, os.path.dirname(os.path.realpath(sys.executable))]
    return tuple(sorted({p for p in paths if os.path.isabs(p) and os.path.exists(p)}))


def hidden_directories(extra: Sequence[str] = ()) -> list[str]:
    """Directories a confined worker sees as empty: homes, the organizer's configuration,
    caches and temporary directories, ``/run``, ``/var`` state, mounts of data, plus
    ``extra`` (the store's directory, its secret's)."""
    env = os.environ
    home = os.path.expanduser("~")
    out = [home, "/root", "/home", "/run", "/var/run", "/var/tmp", "/var/lib", "/var/log"]
    out += ["/var/mail", "/var/spool", "/var/backups", "/mnt", "/media", "/srv"]
    out += [tempfile.gettempdir(), os.path.join(home, ".config"), os.path.join(home, ".cache")]
    for var in (
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR",
        "ICML26_CONFIG_DIR",
        "ICML26_CACHE",
        "PIP_CACHE_DIR",
        "HF_HOME",
        "TORCH_HOME",
    ):
        if env.get(var):
            out.append(env[var])
    from icml26._paths import config_dir

    out.append(str(config_dir()))
    out += list(extra)
    return sorted({os.path.abspath(p) for p in out if p and os.path.isdir(p)})


@functools.cache
def _probe_isolation() -> tuple[bool, str]:
    from icml26.leaderboards import jail

    return jail.probe(interpreter_paths())


def isolation_available() -> tuple[bool, str]:
    """Whether the process sandbox can confine a worker here (namespaces, a read-only root,
    an unprivileged uid; see :mod:`icml26.leaderboards.jail`), and why not."""
    return _probe_isolation()


def namespaces_available() -> bool:
    """Whether the process sandbox can confine a worker here (:func:`isolation_available`)."""
    return isolation_available()[0]


def _public_error(reply: Mapping[str, Any], entry_point: str) -> str:
    """The public words for an error the worker reported: a built-in exception's type, a
    refusal of the entry point in fixed words, never the worker's own text."""
    code = reply.get("refused")
    if isinstance(code, str) and code in REFUSALS:
        return f"entry point {entry_point!r} refused in the worker: {REFUSALS[code]}"
    kind = reply.get("type")
    if isinstance(kind, str) and kind in _BUILTIN_EXCEPTIONS:
        return f"the agent raised {kind}"
    return "the agent raised an exception of its own class"


# Why a worker refused to construct an agent, in the verifier's words (the worker sends the code).
REFUSALS = {
    "entry_point": "not a 'package.module:Class' of the submitted code",
    "no_source": "the entry names neither a requirement nor code",
    "not_in_code": "its module is not in the submitted code",
    "not_installed": "its requirement is not installed for the worker",
    "not_provided": "its module is not part of the declared requirement",
    "not_agent": "not an agent class with reset() and act(), nor a factory function of the "
    "submitted package",
    "no_methods": "the object it made has no reset() or act()",
}


# ---------------------------------------------------------------------------- worker
class Worker:
    """One sandboxed worker process holding one agent for one trial.

    ``Worker(entry_point, kwargs, seed, path=..., limits=...)`` starts it and constructs the
    agent (raising :class:`AgentCallError` when the entry point is refused or the constructor
    raises); :meth:`call` and :meth:`getattr` forward to it; :meth:`close` kills its tree.

    ``namespaces``: True or None (the default) confine the worker (:mod:`~icml26.leaderboards.
    jail`: namespaces, read-only root, private tmpfs, unprivileged uid), raising
    :class:`SandboxUnavailable` where that is impossible; False runs it unconfined (its own
    session and the rlimits only: the organizer's explicit choice). ``hide``: more paths to
    hide; ``keep``: more paths to keep visible (read-only), e.g. the agent's code. In both
    modes the whole tree is held to ``limits.memory_mb`` and ``limits.processes`` by a cgroup
    where one can be made here.
    """

    def __init__(
        self,
        entry_point: str,
        kwargs: Mapping[str, Any],
        seed: int,
        *,
        requirement: str | None = None,
        path: str | None = None,
        site: Sequence[str] = (),
        limits: Limits | None = None,
        sandbox: str = "process",
        image: str = "icml26-gym:latest",
        threads: int = 1,
        namespaces: bool | None = None,
        hide: Sequence[str] = (),
        keep: Sequence[str] = (),
    ) -> None:
        self.limits = limits or Limits()
        self.sandbox = sandbox
        self.entry_point = entry_point
        self._dead: SandboxError | None = None
        self._container: str | None = None
        self._tree: Any = None
        self._counts: tuple[int, int] | None = None
        self._phase = "start-up"
        self.orphans = 0  # processes that left the worker's session (setsid, double fork), killed
        self.namespaces = False
        init_path = path
        self._tmp = tempfile.mkdtemp(prefix="icml26-sandbox-")
        report: dict[str, Any] = {}
        if sandbox == "process":
            confine = namespaces is not False
            if confine:
                ok, why = isolation_available()
                if not ok:
                    shutil.rmtree(self._tmp, ignore_errors=True)
                    raise SandboxUnavailable(
                        f"the process sandbox cannot isolate the agent here: {why}"
                    )
            self._tree = self._make_tree()
            spec = self._jail_spec(hide, keep, [p for p in (path, *site) if p]) if confine else ""
            cmd = [sys.executable, "-I", "-c", _BOOT, PACKAGE_ROOT, spec]
            self.namespaces = confine
            preexec: Any = self._preexec
        elif sandbox == "docker":
            self._container = f"icml26-verify-{uuid.uuid4().hex[:12]}"
            cmd = docker_command(
                image, self.limits, name=self._container, agent_path=path, site=site
            )
            self._engine = cmd[0]
            init_path = "/agent" if path else None
            site = [f"/site{i}" for i in range(len(site))]
            preexec = None
        else:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise ValueError(f"unknown sandbox {sandbox!r}; expected 'process' or 'docker'")
        self._output = _Tail()  # the worker's stderr: its last 8 KiB, kept in memory
        home = "/tmp" if self.namespaces else self._tmp
        env = {k: os.environ[k] for k in _ENV_ALLOW if k in os.environ}
        n = str(int(threads))
        env.update(
            PATH="/usr/local/bin:/usr/bin:/bin",
            HOME=home,
            TMPDIR=home,
            USER="icml26-sandbox",
            LOGNAME="icml26-sandbox",
            OMP_NUM_THREADS=n,
            OPENBLAS_NUM_THREADS=n,
            MKL_NUM_THREADS=n,
            ICML26_TORCH_THREADS=n,
            MPLBACKEND="Agg",
            PYTHONDONTWRITEBYTECODE="1",
        )
        _guard(True)
        self._guarded = True
        self._before = _our_children()
        self._start = time.monotonic()
        self.deadline = self._start + self.limits.wall_s + self.limits.startup_s
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self._tmp,
                env=env,
                close_fds=True,
                start_new_session=True,
                preexec_fn=preexec,
            )
            assert self.proc.stdin is not None and self.proc.stdout is not None
            assert self.proc.stderr is not None
            self._output.follow(self.proc.stderr)
            self._w, self._r = self.proc.stdin.fileno(), self.proc.stdout.fileno()
            os.set_blocking(self._w, False)
            report = self._request(
                {
                    "op": "init",
                    "entry_point": entry_point,
                    "kwargs": dict(kwargs),
                    "seed": int(seed),
                    "requirement": requirement,
                    "path": init_path,
                    "site": list(site),
                    "threads": int(threads),
                },
                self._start + self.limits.startup_s,
            )
        except BaseException as e:
            self.close()
            broken = self.limit_broken() if isinstance(e, (SandboxError, AgentCallError)) else None
            if broken is not None:  # the agent raised or died because it hit an aggregate limit
                raise broken from None
            raise
        self.version = str(report.get("version", "0"))[:64]
        self.isolation = self._isolation(report)
        self._phase = "trial"
        self.deadline = time.monotonic() + self.limits.wall_s

    # -------------------------------------------------------------- set-up
    def _make_tree(self) -> Any:
        from icml26.leaderboards.jail import TreeLimits

        try:
            return TreeLimits.create(self.limits.memory_mb, self.limits.processes)
        except OSError:
            return None

    def _jail_spec(self, hide: Sequence[str], keep: Sequence[str], code: Sequence[str]) -> str:
        from icml26.leaderboards.jail import JailSpec, sandbox_uid

        files = [h for h in hide if os.path.lexists(h) and not os.path.isdir(h)]
        dirs = [h for h in hide if os.path.isdir(h)]
        uid = sandbox_uid()
        return JailSpec(
            uid=uid,
            gid=uid,
            scratch_mb=int(self.limits.disk_mb),
            shm_mb=min(64, int(self.limits.disk_mb)),
            hide_dirs=tuple(hidden_directories(dirs)),
            hide_files=tuple(files),
            keep=tuple(sorted({*interpreter_paths(), *keep, *code})),
            cgroup_procs=self._tree.procs_files if self._tree is not None else (),
            # RLIMIT_NPROC counts every process of the uid, concurrent sandboxes' too: only
            # the fallback where no pids cgroup holds this tree
            nproc=None if "pids" in self._controllers() else int(self.limits.processes),
        ).to_json()

    def _controllers(self) -> list[str]:
        return list(self._tree.controllers) if self._tree is not None else []

    def _preexec(self) -> None:
        lim = self.limits
        mem = int(lim.memory_mb) * 2**20
        cpu = lim.cpu_limit_s
        for res, value in (
            (resource.RLIMIT_AS, (mem, mem)),
            (resource.RLIMIT_CPU, (cpu, cpu + 5)),
            (resource.RLIMIT_NOFILE, (lim.open_files, lim.open_files)),
            (resource.RLIMIT_FSIZE, (lim.file_mb * 2**20, lim.file_mb * 2**20)),
            (resource.RLIMIT_CORE, (0, 0)),
        ):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(res, value)
        if self._tree is not None and not self.namespaces:  # a confined worker joins itself
            for procs in self._tree.procs_files:
                with contextlib.suppress(OSError):
                    fd = os.open(procs, os.O_WRONLY)
                    os.write(fd, str(os.getpid()).encode())
                    os.close(fd)

    def _isolation(self, report: Mapping[str, Any]) -> dict[str, Any]:
        """What the worker got (recorded with the verification)."""
        out: dict[str, Any] = {"sandbox": self.sandbox, "namespaces": self.namespaces}
        if self.sandbox == "docker":
            out["level"] = "container"
        elif not self.namespaces:
            out["level"] = "unisolated"
        else:
            got = report.get("jail")
            jail: dict[str, Any] = got if isinstance(got, dict) else {}
            out["level"] = "isolated"
            for k in (
                "uid",
                "user_namespace",
                "capabilities",
                "no_new_privs",
                "read_only_root",
                "hidden_paths",
                "kept_paths",
                "scratch_mb",
                "network",
            ):
                if k in jail:
                    out[k] = jail[k]
            out["hidden_paths"] = int(out.get("hidden_paths", 0))
            out["capabilities_dropped"] = out.get("capabilities") is False
        if self._tree is not None:
            out.update(self._tree.describe())
        else:
            out["cgroup"] = "none (rlimits only)"
        return out

    # -------------------------------------------------------------- requests
    def _request(self, msg: Mapping[str, Any], deadline: float) -> dict[str, Any]:
        if self._dead is not None:
            raise self._dead
        try:
            body = b"P" + pickle.dumps(dict(msg), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:
            raise SandboxError(
                f"cannot send {msg.get('name') or msg.get('op')!r} arguments to the "
                f"sandboxed agent ({type(e).__name__})",
                "protocol",
                f"{type(e).__name__}: {e}",
            ) from None
        try:
            write_frame(self._w, body, deadline)
            raw = read_frame(self._r, deadline)
            if raw[:1] != b"J":
                raise SandboxError("the worker's reply is not a JSON frame", "protocol")
            try:
                reply = json.loads(raw[1:])
            except (ValueError, RecursionError):
                raise SandboxError("the worker's reply is not valid JSON", "protocol") from None
            if not isinstance(reply, dict):
                raise SandboxError("the worker's reply is not an object", "protocol")
        except SandboxError as e:
            self._fail(e)
        if "error" in reply:
            raise AgentCallError(
                _public_error(reply, self.entry_point),
                str(reply["error"])[:2000],
                str(reply.get("traceback", ""))[-8000:],
            )
        return reply

    def _fail(self, e: SandboxError) -> NoReturn:
        lim = self.limits
        if e.kind == "timeout":
            limit = (
                f"start-up limit of {lim.startup_s:g} s (starting the worker and "
                "constructing the agent)"
                if self._phase == "start-up"
                else f"trial's wall-clock limit of {lim.wall_s:g} s"
            )
            e = SandboxError(f"the agent exceeded the {limit} (worker killed)", "timeout")
        if e.kind == "died":  # let it finish dying, so its exit status is its own
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1.0)
        self.close()
        tail = self._stderr_tail()
        broken = self.limit_broken()
        if broken is not None:
            e = broken
        elif e.kind == "died":
            rc = self.proc.returncode
            signame = (
                signal.Signals(-rc).name
                if rc is not None and rc < 0 and -rc in signal.Signals._value2member_map_
                else None
            )
            how = f"killed by signal {signame}" if signame else f"exit status {rc}"
            hint = {
                "SIGXCPU": f" (the CPU-time limit of {lim.cpu_limit_s} s)",
                "SIGXFSZ": f" (the file-size limit of {lim.file_mb} MiB)",
                "SIGKILL": " (killed)",
            }.get(signame or "", "")
            if rc == 70 and self.namespaces:
                hint = " (the sandbox could not confine it)"
            e = SandboxError(
                f"the agent's worker process died ({how}{hint})",
                "died",
                f"the agent's worker process died ({how}{hint}){tail}",
            )
        else:
            e = SandboxError(str(e), e.kind, f"{e.detail}{tail}")
        self._dead = e
        raise e

    def limit_broken(self) -> SandboxError | None:
        """The aggregate limit the worker's tree broke (per its cgroup), or None."""
        oom, hits = self._tree_counts()
        if oom:
            return SandboxError(
                f"the agent's process tree exceeded its memory limit of "
                f"{self.limits.memory_mb} MiB (cgroup; process killed)",
                "limit",
            )
        if hits:
            return SandboxError(
                f"the agent's process tree reached its limit of {self.limits.processes} "
                "processes (cgroup; further forks refused)",
                "limit",
            )
        return None

    def _tree_counts(self) -> tuple[int, int]:
        """(processes killed for memory, forks refused) in the worker's cgroup so far."""
        if self._counts is not None:
            return self._counts
        if self._tree is None:
            return 0, 0
        return self._tree.oom_kills(), self._tree.process_limit_hits()

    def _stderr_tail(self) -> str:
        text = self._output.text().strip().splitlines()
        return "; worker output: " + " | ".join(text[-5:])[:1500] if text else ""

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        reply = self._request(
            {"op": "call", "name": name, "args": args, "kwargs": kwargs}, self.deadline
        )
        try:
            return decode(reply.get("value"))
        except (ValueError, RecursionError) as e:
            self._fail(
                SandboxError(
                    f"malformed value from the agent's {name}() (protocol error)",
                    "protocol",
                    f"malformed value from the agent's {name}(): {e}",
                )
            )

    def getattr(self, name: str) -> tuple[bool, bool, Any]:
        """(exists, callable, value) of the agent's attribute ``name``."""
        reply = self._request({"op": "getattr", "name": name}, self.deadline)
        try:
            return (
                bool(reply.get("exists")),
                bool(reply.get("callable")),
                decode(reply.get("value")),
            )
        except (ValueError, RecursionError) as e:
            self._fail(
                SandboxError(
                    f"malformed attribute {name!r} from the agent (protocol error)",
                    "protocol",
                    f"malformed attribute {name!r} from the agent: {e}",
                )
            )

    # -------------------------------------------------------------- teardown
    def close(self) -> None:
        """Kill the worker and everything it started; remove its temporary directory and
        cgroup."""
        proc = self.proc if hasattr(self, "proc") else None
        if proc is not None:
            if self._container:
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    subprocess.run(
                        [self._engine, "kill", self._container], capture_output=True, timeout=30
                    )
            self._kill_tree(proc)
            for f in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    f and f.close()
            self._output.join()
        if self._tree is not None and self._counts is None:
            self._counts = (self._tree.oom_kills(), self._tree.process_limit_hits())
            self._tree.remove()
        shutil.rmtree(self._tmp, ignore_errors=True)
        if getattr(self, "_guarded", False):
            self._guarded = False
            _guard(False)

    def _kill_tree(self, proc: subprocess.Popen[bytes]) -> None:
        me = os.getpid()
        if not os.path.isdir("/proc"):
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return
        table = _proc_table()
        t0 = table.get(proc.pid, (0, 0))[1]
        victims: set[int] = set()
        detached: set[int] = set()
        for _ in range(20):  # freeze until nothing new appears, so nothing forks while we kill
            table = _proc_table()
            orphans = {
                pid
                for pid, (ppid, st) in table.items()
                if ppid == me and pid != proc.pid and pid not in self._before and st >= t0
            }
            found = ({proc.pid} if proc.poll() is None else set()) | orphans
            found |= _descendants(found | {proc.pid}, table)
            if self._tree is not None:
                found |= self._tree.pids()
            new = found - victims
            if not new:
                break
            for pid in new:
                if pid in orphans or _session(pid) not in (proc.pid, None):
                    detached.add(pid)
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
            victims |= new
        self.orphans += len(detached)
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in victims:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        for pid in victims - {proc.pid}:  # adopted orphans are our children now: reap them
            if table.get(pid, (0, 0))[0] == me or _is_child(pid):
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, 0)


class _Tail:
    """The last ``keep`` bytes a worker wrote to its stderr, read by a thread (nothing of it
    reaches the disk, whatever the agent prints)."""

    def __init__(self, keep: int = 8192) -> None:
        self.keep = keep
        self._buf = bytearray()
        self._thread: threading.Thread | None = None

    def follow(self, stream: Any) -> None:
        def drain() -> None:
            with contextlib.suppress(OSError, ValueError):
                while chunk := stream.read1(65536):
                    self._buf += chunk
                    del self._buf[: max(0, len(self._buf) - self.keep)]
            with contextlib.suppress(OSError):
                stream.close()

        self._thread = threading.Thread(target=drain, daemon=True)
        self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=5)

    def text(self) -> str:
        return bytes(self._buf).decode("utf-8", "replace")


def _is_child(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2 :].split()[1]) == os.getpid()
    except (OSError, ValueError, IndexError):
        return False


# Methods through which a family lets an agent score itself (looplm's batched
# ``evaluate(env, problems) -> {"accuracy": ...}``): a sandboxed agent does not get to offer
# them, so the family falls back to scoring it through ``act``.
SELF_SCORING_METHODS = frozenset({"evaluate"})


class RemoteAgent:
    """Stands in for a sandboxed agent inside the verifier: every public attribute is looked
    up in the worker; methods run there (arguments pickled to it, results JSON back). The
    self-scoring methods of :data:`SELF_SCORING_METHODS` are never offered. With
    ``seed_map``, the seed of every ``reset(seed)`` goes through it first (the agent sees a
    one-way function of the trial's seeds, never the seeds themselves)."""

    def __init__(self, worker: Worker, seed_map: Callable[[int], int] | None = None) -> None:
        object.__setattr__(self, "_worker", worker)
        object.__setattr__(self, "_methods", {})
        object.__setattr__(self, "_seed_map", seed_map)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in SELF_SCORING_METHODS:
            raise AttributeError(name)
        if name in self._methods:  # a method stays a method: one round trip per call, not two
            return self._methods[name]
        exists, is_callable, value = self._worker.getattr(name)
        if not exists:
            raise AttributeError(f"the sandboxed agent has no attribute {name!r}")
        if is_callable:
            worker, seed_map = self._worker, self._seed_map

            def method(*args: Any, **kwargs: Any) -> Any:
                if name == "reset" and seed_map is not None:
                    args, kwargs = _map_seed(seed_map, args, kwargs)
                return worker.call(name, *args, **kwargs)

            method.__name__ = name
            self._methods[name] = method
            return method
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the sandboxed agent's attributes cannot be set from the verifier")

    def __repr__(self) -> str:
        return f"RemoteAgent(pid={self._worker.proc.pid})"


def _map_seed(
    seed_map: Callable[[int], int], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    def m(v: Any) -> Any:
        is_int = isinstance(v, (int, np.integer)) and not isinstance(v, bool)
        return seed_map(int(v)) if is_int else v

    if args:
        args = (m(args[0]), *args[1:])
    if "seed" in kwargs:
        kwargs = {**kwargs, "seed": m(kwargs["seed"])}
    return args, kwargs


def run_sandboxed_trial(
    task: Any,
    entry_point: str,
    kwargs: Mapping[str, Any],
    seed: int,
    isolation: dict[str, Any] | None = None,
    seed_map: Callable[[int], int] | None = None,
    **worker_options: Any,
) -> tuple[Any, str]:
    """Run ``task``'s family ``run_trial`` here with the agent in a :class:`Worker`; returns
    ``(TrialOutcome, agent version)`` and fills ``isolation`` with what the worker got as soon
    as it started. The agent's own random generators are seeded with ``seed_map(seed)`` (the
    seed itself without a map), its ``reset`` seeds mapped likewise. Raises what the worker
    or the agent raised, or :class:`SandboxError` when the tree broke an aggregate limit."""
    from icml26._entry_points import load_entry_point
    from icml26.benchmarks.runner import _check_outcome, seed_everything

    seed_everything(seed)
    agent_seed = seed_map(seed) if seed_map is not None else seed
    worker = Worker(entry_point, kwargs, agent_seed, **worker_options)
    if isolation is not None:
        isolation.update(worker.isolation)
    try:
        fn = load_entry_point(task.run_trial)
        outcome = _check_outcome(task, fn(task, RemoteAgent(worker, seed_map), seed))
        if worker._dead is not None:  # run_trial swallowed the error: the trial still failed
            raise worker._dead
    except (SandboxError, AgentCallError):
        worker.close()
        broken = worker.limit_broken()
        if broken is not None:  # the agent raised or died because it hit an aggregate limit
            raise broken from None
        raise
    finally:
        worker.close()
    broken = worker.limit_broken()
    if broken is not None:
        raise broken
    if worker.orphans:
        raise SandboxError(
            f"the agent left {worker.orphans} process(es) running outside its worker "
            "(detached with setsid/double fork); killed",
            "protocol",
        )
    return outcome, worker.version
