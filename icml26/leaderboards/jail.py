"""The operating system's part of the process sandbox (Linux): namespaces, a read-only root, a
private size-limited tmpfs, an unprivileged uid without capabilities, and aggregate limits on
the worker's whole process tree.

A worker process calls :func:`enter` with a :class:`JailSpec` before it imports any submitted
code. :func:`enter` joins the worker's cgroups (:class:`TreeLimits`), unshares new mount, PID,
network, IPC and UTS namespaces (as root; otherwise through a user namespace that maps the
caller's uid) and forks. The parent stays outside, waits and exits with the child's status; the
child is PID 1 of the new PID namespace and, before returning:

1. makes every mount private (nothing propagates back to the host) and mounts a fresh ``/proc``
   (only the namespace's processes);
2. remounts every mount read-only (``MS_REMOUNT|MS_BIND|MS_RDONLY``: per mount, in this
   namespace only; the host's mounts are untouched);
3. covers each hidden directory (the organizer's home, configuration, caches, the store's
   directory, ``/run``, ``/var/tmp``...) with an empty read-only tmpfs, and each hidden file with
   ``/dev/null``. Paths the worker needs (the interpreter, its standard library and
   site-packages, the icml26 package, the agent's code) are bound back into place, read-only,
   when they lie under a hidden directory;
4. mounts a tmpfs of ``scratch_mb`` MiB owned by the sandbox uid on ``/tmp`` (the only writable
   place: ``$HOME``, ``$TMPDIR`` and the working directory) and a small one on ``/dev/shm``;
   both vanish with the namespace;
5. drops every capability from the bounding set, changes to the sandbox uid and gid (no
   supplementary groups; in a user namespace it stays the mapped uid), clears the ambient
   capabilities, sets ``no_new_privs`` and asks to be killed when its parent dies.

:func:`probe` checks once per process that all of this works here, so ``verify`` can refuse
to run an agent unisolated unless the organizer allows it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "JailSpec",
    "TreeLimits",
    "enter",
    "probe",
    "status_report",
    "DEFAULT_UID",
    "UID_ENV",
]

# A uid of its own (no account, owns no file) for sandboxed agents; $ICML26_SANDBOX_UID changes it.
DEFAULT_UID = 61026
UID_ENV = "ICML26_SANDBOX_UID"
CGROUP_ENV = "ICML26_SANDBOX_CGROUP"

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 1 << 14, 1 << 18
_MOUNT_OPTION_FLAGS = {
    "nosuid": _MS_NOSUID,
    "nodev": _MS_NODEV,
    "noexec": _MS_NOEXEC,
    "noatime": 1024,
    "nodiratime": 2048,
    "relatime": 1 << 21,
}
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 1, 4, 24
_PR_SET_KEEPCAPS, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT = 8, 38, 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4


@dataclass(frozen=True)
class JailSpec:
    """What :func:`enter` builds. ``hide_dirs``/``hide_files``: paths covered by an empty
    tmpfs / ``/dev/null``; ``keep``: paths that stay visible (read-only) even under a hidden
    directory; ``scratch_mb``: size of the writable tmpfs on /tmp; ``uid``/``gid``: the
    sandbox's ids; ``cgroup_procs``: ``cgroup.procs`` files to join first; ``nproc``:
    RLIMIT_NPROC of the sandbox uid (the process-count fallback without a pids cgroup)."""

    uid: int = DEFAULT_UID
    gid: int = DEFAULT_UID
    scratch_mb: int = 512
    shm_mb: int = 64
    hide_dirs: tuple[str, ...] = ()
    hide_files: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    cgroup_procs: tuple[str, ...] = ()
    nproc: int | None = None
    hostname: str = "icml26-sandbox"
    # None: a user namespace only when not root; True: always (the variant for ordinary users)
    user_namespace: bool | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JailSpec:
        d = json.loads(text)
        for k in ("hide_dirs", "hide_files", "keep", "cgroup_procs"):
            d[k] = tuple(d.get(k, ()))
        return cls(**d)


# ---------------------------------------------------------------------------- syscalls
@functools.cache
def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
    ]
    libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    libc.unshare.argtypes = [ctypes.c_int]
    libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return libc


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _libc().mount(
            src.encode() if src else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _prctl(option: int, arg: int = 0) -> int:
    return int(_libc().prctl(option, arg, 0, 0, 0))


# ---------------------------------------------------------------------------- mounts
def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def _mounts() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) of every mount of this namespace."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            out.append((_unescape(fields[4]), set(fields[5].split(","))))
    return out


def _remount_read_only() -> tuple[int, list[str]]:
    """Remount every mount read-only (keeping nosuid/nodev/noexec/atime flags); returns the
    number remounted and the mount points that could not be (covered ones, mostly). The root
    must succeed."""
    done, failed = 0, []
    for point, opts in _mounts():
        flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID
        for name, bit in _MOUNT_OPTION_FLAGS.items():
            if name in opts:
                flags |= bit
        try:
            _mount(None, point, None, flags)
            done += 1
        except OSError:
            if point == "/":
                raise
            failed.append(point)
    return done, failed


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _strictly_under(path: str, root: str) -> bool:
    return path != root and _under(path, root)


def _outermost(paths: list[str]) -> list[str]:
    """``paths`` without those inside another one of them (sorted)."""
    out: list[str] = []
    for p in sorted(set(paths)):
        if not any(_under(p, q) for q in out):
            out.append(p)
    return out


def _cover(
    target: str, keep_fds: dict[str, int], options: str, read_only: bool, uid: int = 0
) -> int:
    """Mount a tmpfs on ``target`` and bind back (read-only, with their submounts) the kept
    paths under it; returns how many were bound back."""
    inside = sorted(k for k in keep_fds if _strictly_under(k, target))
    mode = "755" if inside or not read_only else "000"
    owner = f",uid={uid},gid={uid}" if uid else ""
    _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, f"{options},mode={mode}{owner}")
    for k in inside:
        spot = os.path.join(target, os.path.relpath(k, target))
        if os.path.isdir(f"/proc/self/fd/{keep_fds[k]}"):
            os.makedirs(spot, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(spot), mode=0o755, exist_ok=True)
            with open(spot, "w"):
                pass
        _mount(f"/proc/self/fd/{keep_fds[k]}", spot, None, _MS_BIND | _MS_REC)
        _mount(None, spot, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID)
    if read_only:
        _mount(None, target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    return len(inside)


def _build_view(spec: JailSpec, in_user_ns: bool) -> dict[str, Any]:
    """Steps 1-4 of the module docstring (in the new mount namespace, as its root)."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    keep = [os.path.realpath(k) for k in spec.keep if os.path.exists(k)]
    keep = _outermost([k for k in keep if k != "/"])
    keep_fds = {k: os.open(k, os.O_PATH | os.O_CLOEXEC) for k in keep}
    try:
        remounted, _ = _remount_read_only()
        hidden = rebound = 0
        hide = [os.path.realpath(d) for d in spec.hide_dirs if os.path.isdir(d)]
        hide = [d for d in sorted(set(hide)) if d not in ("/", "/tmp") and d not in keep_fds]
        for d in hide:
            # already covered by a shallower hidden directory, and not brought back by a keep
            if any(_strictly_under(d, h) for h in hide) and not any(_under(d, k) for k in keep):
                continue
            rebound += _cover(d, keep_fds, "size=64k", read_only=True)
            hidden += 1
        owner = 0 if in_user_ns else spec.uid  # in a user namespace only uid 0 is mapped
        rebound += _cover(
            "/tmp", keep_fds, f"size={int(spec.scratch_mb)}m", read_only=False, uid=owner
        )
        os.chmod("/tmp", 0o700)
        if os.path.isdir("/dev/shm"):
            _mount(
                "tmpfs",
                "/dev/shm",
                "tmpfs",
                _MS_NOSUID | _MS_NODEV,
                f"size={int(spec.shm_mb)}m,mode=1777",
            )
        for f in spec.hide_files:
            real = os.path.realpath(f)
            if os.path.lexists(real) and not os.path.isdir(real):
                _mount("/dev/null", real, None, _MS_BIND)
                hidden += 1
    finally:
        for fd in keep_fds.values():
            os.close(fd)
    return {
        "read_only_mounts": remounted,
        "hidden_paths": hidden,
        "kept_paths": rebound,
        "scratch_mb": int(spec.scratch_mb),
    }


# ---------------------------------------------------------------------------- privileges
# keyctl(2) system call numbers (no libc wrapper): a fresh, empty session keyring
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "ppc64le": 311, "s390x": 280}
_KEYCTL_JOIN_SESSION_KEYRING = 1


def _drop_privileges(spec: JailSpec, in_user_ns: bool) -> None:
    """Step 5 of the module docstring (and a new session keyring, so no key of the verifier's
    session is within reach)."""
    import platform
    import resource

    nr = _SYS_KEYCTL.get(platform.machine())
    if nr is not None:
        _libc().syscall(nr, _KEYCTL_JOIN_SESSION_KEYRING, None)
    if spec.nproc is not None and not in_user_ns:
        resource.setrlimit(resource.RLIMIT_NPROC, (spec.nproc, spec.nproc))
    for cap in range(64):
        _prctl(_PR_CAPBSET_DROP, cap)  # EINVAL past the kernel's last capability
    _prctl(_PR_SET_KEEPCAPS, 0)
    if not in_user_ns:
        os.setgroups([])
        os.setresgid(spec.gid, spec.gid, spec.gid)
        os.setresuid(spec.uid, spec.uid, spec.uid)
    else:
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
        data = (ctypes.c_uint32 * 6)()
        _check(_libc().capset(header, data), "capset")
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    _check(_prctl(_PR_SET_NO_NEW_PRIVS, 1), "PR_SET_NO_NEW_PRIVS")
    _prctl(_PR_SET_DUMPABLE, 1)  # its own /proc/self stays readable to it after setuid
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # set after setuid, which clears it


def status_report() -> dict[str, Any]:
    """This process's ids, capability sets and no_new_privs, from /proc/self/status."""
    out: dict[str, Any] = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Uid", "Gid"):
                out[key.lower()] = [int(x) for x in value.split()]
            elif key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
                out[key] = int(value.strip(), 16)
            elif key == "NoNewPrivs":
                out["no_new_privs"] = value.strip() == "1"
    out["capabilities"] = any(
        out.get(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
    )
    return out


# ---------------------------------------------------------------------------- entering
def _write_map(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def enter(spec: JailSpec) -> dict[str, Any]:
    """Confine this process as the module docstring says. Returns, in the confined child, a
    report of what was set up; the parent never returns (it exits with the child's status).
    Raises OSError (in the unconfined process) when a namespace cannot be created."""
    try:
        for procs in spec.cgroup_procs:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
    except OSError as e:  # never run submitted code outside the limits it was given
        os.write(2, f"icml26 sandbox: cannot join the worker's cgroup: {e}\n".encode())
        os._exit(70)
    in_user_ns = os.geteuid() != 0 if spec.user_namespace is None else spec.user_namespace
    flags = _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc().unshare(flags | (_CLONE_NEWUSER if in_user_ns else 0)), "unshare")
    if in_user_ns:
        _write_map("/proc/self/setgroups", "deny")
        _write_map("/proc/self/uid_map", f"0 {uid} 1")
        _write_map("/proc/self/gid_map", f"0 {gid} 1")
    pid = os.fork()
    if pid:
        _wait_and_exit(pid)
    try:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        report = _build_view(spec, in_user_ns)
        with contextlib.suppress(OSError):
            name = spec.hostname.encode()
            _check(_libc().sethostname(name, len(name)), "sethostname")
        os.chdir("/tmp")
        _drop_privileges(spec, in_user_ns)
        st = status_report()
        if st["capabilities"] or not st["no_new_privs"]:
            raise OSError(f"the sandbox kept capabilities or lacks no_new_privs: {st}")
        if not in_user_ns and st["uid"] != [spec.uid] * 4:
            raise OSError(f"the sandbox did not change to uid {spec.uid}: {st['uid']}")
    except BaseException as e:  # never run submitted code half-confined
        os.write(2, f"icml26 sandbox: cannot confine the worker: {e}\n".encode())
        os._exit(70)
    report.update(
        uid=st["uid"][0],
        user_namespace=in_user_ns,
        capabilities=False,
        no_new_privs=True,
        network="none",
        pid_namespace=True,
        read_only_root=True,
    )
    return report


def _wait_and_exit(pid: int) -> None:
    """The outer half of :func:`enter`: hand the pipes over to the child (so the verifier
    sees end-of-file when the child dies), wait for it, leave as it left."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            os._exit(70)
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.WEXITSTATUS(status))


# ---------------------------------------------------------------------------- probe
_PROBE = (
    "import json, os, sys; sys.path.insert(0, sys.argv[1]); "
    "from icml26.leaderboards.jail import JailSpec, enter; "
    "r = enter(JailSpec.from_json(sys.argv[2])); "
    "ok = not os.access('/', os.W_OK) and os.access('/tmp', os.W_OK); "
    "print(json.dumps({**r, 'ok': ok}))"
)


@functools.cache
def probe(keep: tuple[str, ...] = ()) -> tuple[bool, str]:
    """Whether :func:`enter` works on this machine (run once in a throw-away process), and why
    not when it does not."""
    if not sys.platform.startswith("linux"):
        return False, f"the process sandbox's isolation needs Linux (this is {sys.platform})"
    root = str(Path(__file__).resolve().parents[2])
    spec = JailSpec(uid=sandbox_uid(), gid=sandbox_uid(), scratch_mb=8, keep=keep)
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", _PROBE, root, spec.to_json()],
            capture_output=True,
            text=True,
            timeout=60,
            # one thread: a user namespace cannot be entered by a multi-threaded process
            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
        )
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"the isolation probe could not run: {e}"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        return False, f"namespaces or mounts are not available here ({last[:300]})"
    try:
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return False, "the isolation probe gave no report"
    if not report.get("ok"):
        return False, "the probe's root was writable or its scratch space was not"
    return True, "ok"


def sandbox_uid() -> int:
    """The sandbox's uid (and gid): ``$ICML26_SANDBOX_UID`` or :data:`DEFAULT_UID`."""
    text = os.environ.get(UID_ENV)
    if not text:
        return DEFAULT_UID
    try:
        uid = int(text)
    except ValueError:
        raise ValueError(f"${UID_ENV} must be a numeric uid, got {text!r}") from None
    if not 0 < uid < 2**32 - 1:
        raise ValueError(f"${UID_ENV} must be a uid other than 0 (root), got {uid}")
    return uid


# ---------------------------------------------------------------------------- cgroups
def _cgroup_mounts() -> dict[str, str]:
    """{"v2": mount point, "memory": ..., "pids": ...} of the mounted cgroup hierarchies."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in open("/proc/self/mountinfo"):
            left, _, right = line.partition(" - ")
            fstype, _, super_opts = (right.split() + ["", "", ""])[:3]
            point = _unescape(left.split()[4])
            if fstype == "cgroup2":
                out.setdefault("v2", point)
            elif fstype == "cgroup":
                for c in ("memory", "pids"):
                    if c in super_opts.split(","):
                        out.setdefault(c, point)
    return out


def _own_cgroups() -> dict[str, str]:
    """{"v2" or controller: this process's cgroup path} from /proc/self/cgroup."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in open("/proc/self/cgroup"):
            num, ctrls, path = line.rstrip("\n").split(":", 2)
            if num == "0" and ctrls == "":
                out["v2"] = path
            for c in ctrls.split(","):
                if c in ("memory", "pids"):
                    out[c] = path
    return out


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if k == key:
            with contextlib.suppress(ValueError):
                return int(v)
    return 0


@dataclass
class TreeLimits:
    """The cgroup(s) that hold one worker's whole process tree: memory (no swap) and a process
    count, cgroup v2 where its memory and pids controllers can be used here (a delegated
    ``$ICML26_SANDBOX_CGROUP``, or this process's own cgroup), else the v1 memory and pids
    hierarchies (children of this process's cgroups there)."""

    version: int
    dirs: dict[str, str]  # "memory"/"pids" (v1) or "v2" -> directory
    memory_mb: int
    processes: int
    notes: list[str] = field(default_factory=list)

    @property
    def procs_files(self) -> tuple[str, ...]:
        return tuple(sorted({os.path.join(d, "cgroup.procs") for d in self.dirs.values()}))

    @property
    def controllers(self) -> list[str]:
        return ["memory", "pids"] if self.version == 2 else sorted(self.dirs)

    @classmethod
    def create(cls, memory_mb: int, processes: int) -> TreeLimits | None:
        """A fresh cgroup with these limits, or None where none can be made (then the
        rlimits are all there is)."""
        if not sys.platform.startswith("linux"):
            return None
        name = f"icml26-sandbox-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        return cls._v2(name, memory_mb, processes) or cls._v1(name, memory_mb, processes)

    @classmethod
    def _v2(cls, name: str, memory_mb: int, processes: int) -> TreeLimits | None:
        mounts, own = _cgroup_mounts(), _own_cgroups()
        parents = [os.environ.get(CGROUP_ENV, "")]
        if "v2" in mounts and "v2" in own:
            parents.append(os.path.join(mounts["v2"], own["v2"].lstrip("/")))
        for parent in filter(None, parents):
            if not {"memory", "pids"} <= set(
                _read(os.path.join(parent, "cgroup.controllers")).split()
            ):
                continue
            d = os.path.join(parent, name)
            try:
                if not {"memory", "pids"} <= set(
                    _read(os.path.join(parent, "cgroup.subtree_control")).split()
                ):
                    _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids")
                os.mkdir(d)
                _write(os.path.join(d, "memory.max"), str(memory_mb * 2**20))
                with contextlib.suppress(OSError):
                    _write(os.path.join(d, "memory.swap.max"), "0")
                _write(os.path.join(d, "pids.max"), str(processes))
            except OSError:
                with contextlib.suppress(OSError):
                    os.rmdir(d)
                continue
            return cls(2, {"v2": d}, memory_mb, processes)
        return None

    @classmethod
    def _v1(cls, name: str, memory_mb: int, processes: int) -> TreeLimits | None:
        mounts, own = _cgroup_mounts(), _own_cgroups()
        dirs: dict[str, str] = {}
        notes = []
        for c in ("memory", "pids"):
            if c not in mounts:
                notes.append(f"no cgroup v1 {c} hierarchy")
                continue
            d = os.path.join(mounts[c], own.get(c, "/").lstrip("/"), name)
            try:
                os.mkdir(d)
                if c == "memory":
                    _write(os.path.join(d, "memory.limit_in_bytes"), str(memory_mb * 2**20))
                    with contextlib.suppress(OSError):  # no swap accounting: nothing to limit
                        _write(
                            os.path.join(d, "memory.memsw.limit_in_bytes"), str(memory_mb * 2**20)
                        )
                else:
                    _write(os.path.join(d, "pids.max"), str(processes))
            except OSError as e:
                notes.append(f"cgroup v1 {c}: {e.strerror or e}")
                with contextlib.suppress(OSError):
                    os.rmdir(d)
                continue
            dirs[c] = d
        return cls(1, dirs, memory_mb, processes, notes) if dirs else None

    def oom_kills(self) -> int:
        """Processes of the tree killed for breaking the memory limit."""
        if self.version == 2:
            return _counter(_read(os.path.join(self.dirs["v2"], "memory.events")), "oom_kill")
        if "memory" not in self.dirs:
            return 0
        return _counter(_read(os.path.join(self.dirs["memory"], "memory.oom_control")), "oom_kill")

    def process_limit_hits(self) -> int:
        """Forks refused because the tree had ``processes`` processes."""
        key = "v2" if self.version == 2 else "pids"
        if key not in self.dirs:
            return 0
        return _counter(_read(os.path.join(self.dirs[key], "pids.events")), "max")

    def pids(self) -> set[int]:
        out: set[int] = set()
        for f in self.procs_files:
            out |= {int(x) for x in _read(f).split() if x.isdigit()}
        return out

    def kill(self) -> None:
        """SIGKILL every process in the cgroup(s) until none is left (bounded effort)."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                _write(os.path.join(self.dirs["v2"], "cgroup.kill"), "1")
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left and remove the cgroup directories."""
        import time

        self.kill()
        for d in self.dirs.values():
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill()
                    time.sleep(0.02)

    def describe(self) -> dict[str, Any]:
        return {
            "cgroup": f"v{self.version}",
            "controllers": self.controllers,
            "memory_mb": self.memory_mb,
            "processes": self.processes,
        }
