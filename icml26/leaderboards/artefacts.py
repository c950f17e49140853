"""The agent's code as a submission carries it and as the verifier runs it, pinned by hash.

A bundle (schema 2) names its agent's code in one of two ways:

* ``agent.code``: the code itself, ``{"format": "zip" | "wheel", "sha256", "data"}`` with
  ``data`` the base64 of a zip of the entry point's top-level package (:func:`pack_code`) or of
  a wheel, and ``sha256`` its :func:`digest`: the SHA-256 of the sorted list of (member name,
  SHA-256 of its bytes), so it does not depend on how the zip was written;
* ``agent.requirement``: an exact pip requirement ``name==version`` (no URL, no file) of a
  distribution installed on the verifying machine, or installable (wheels only) with
  ``verify --install`` into a throw-away environment of the entry's own.

The verifier never puts submitted code into its own environment: an archive is unpacked, and
wheels are installed, into a fresh directory that only the worker imports from
(:func:`prepared_code`). Every archive and wheel is inspected first (:func:`inspect_archive`):
no absolute or ``..`` member names, no links, bounded size; a wheel may hold no ``.pth`` file, no
``.data`` directory other than ``purelib``/``platlib`` (those install outside site-packages),
and no top-level module of the standard library, ``sitecustomize``/``usercustomize`` or icml26.
The hash of what ran (:func:`installed_digest` for an installed distribution) is recorded with
each verification; verifying again refuses an artefact whose hash changed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CodeProblem",
    "PreparedCode",
    "digest",
    "pack_code",
    "inspect_archive",
    "requirement_problem",
    "installed_digest",
    "prepared_code",
    "CODE_LIMITS",
]

CODE_LIMITS = {
    "bytes": 2_000_000,  # the archive or wheel as submitted
    "members": 2000,
    "unpacked_bytes": 50_000_000,
}
_SKIP = re.compile(r"(^|/)(__pycache__/|\.git/)|\.py[co]$")
_DIST_INFO = re.compile(r"^[A-Za-z0-9_.]+-[^/]+\.dist-info$")
_FORBIDDEN_TOPS = frozenset({"sitecustomize", "usercustomize", "icml26", "site"})


class CodeProblem(ValueError):
    """The agent's code cannot be used; the message says why (it names no server path)."""


@dataclass
class PreparedCode:
    """Where the worker finds the agent's code: ``path`` (put first on ``sys.path``, the
    unpacked archive) or ``site`` (the entry's own environment), ``keep`` (directories the
    confined worker must see), and ``sha256`` (the hash of what runs)."""

    sha256: str
    path: str | None = None
    site: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    requirement: str | None = None
    note: str | None = None


# ---------------------------------------------------------------------------- hashing
def _digest_members(members: list[tuple[str, bytes]]) -> str:
    listing = sorted((name, hashlib.sha256(data).hexdigest()) for name, data in members)
    body = json.dumps(listing, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(body).hexdigest()


def digest(data: bytes) -> str:
    """The hash of a zip archive or wheel: SHA-256 over its sorted (member, SHA-256) list."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return _digest_members([(i.filename, z.read(i)) for i in z.infolist() if not i.is_dir()])


def _files_digest(root: Path, files: list[Path]) -> str:
    return _digest_members([(f.relative_to(root).as_posix(), f.read_bytes()) for f in files])


# ---------------------------------------------------------------------------- packing
def _top(entry_point: str) -> str:
    return entry_point.partition(":")[0].split(".")[0]


def pack_code(path: str | os.PathLike[str], entry_point: str) -> dict[str, Any]:
    """``agent.code`` for the entry point's top-level package (or module) found in the
    directory ``path``: a deterministic zip of it (no ``__pycache__``, no ``.pyc``)."""
    root = Path(path).resolve()
    top = _top(entry_point)
    pkg, mod = root / top, root / f"{top}.py"
    if pkg.is_dir():
        files = sorted(
            p
            for p in pkg.rglob("*")
            if p.is_file()
            and not p.is_symlink()
            and not _SKIP.search(p.relative_to(root).as_posix())
        )
    elif mod.is_file():
        files = [mod]
    else:
        raise ValueError(
            f"cannot pack the agent's code: neither {top}/ nor {top}.py is in {root} "
            f"(the directory holding the top-level package of {entry_point!r})"
        )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            info = zipfile.ZipInfo(f.relative_to(root).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, f.read_bytes())
    data = buf.getvalue()
    if len(data) > CODE_LIMITS["bytes"]:
        raise ValueError(
            f"the agent's code ({top}, {len(data)} bytes zipped) is larger than the "
            f"{CODE_LIMITS['bytes']}-byte limit for code carried in a bundle; publish it as a "
            "distribution and submit a requirement instead"
        )
    return {"format": "zip", "sha256": digest(data), "data": base64.b64encode(data).decode()}


def pack_wheel(wheel: str | os.PathLike[str]) -> dict[str, Any]:
    """``agent.code`` for a wheel file (checked with :func:`inspect_archive`)."""
    p = Path(wheel)
    data = p.read_bytes()
    inspect_archive(data, "wheel", filename=p.name)
    return {
        "format": "wheel",
        "filename": p.name,
        "sha256": digest(data),
        "data": base64.b64encode(data).decode(),
    }


# ---------------------------------------------------------------------------- inspection
def _is_link(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def inspect_archive(
    data: bytes, fmt: str, entry_point: str | None = None, filename: str | None = None
) -> list[str]:
    """Check an archive or wheel before anything is unpacked; returns its member names.
    Raises :class:`CodeProblem` naming the first offending member."""
    if len(data) > CODE_LIMITS["bytes"]:
        raise CodeProblem(f"{len(data)} bytes, more than the {CODE_LIMITS['bytes']}-byte limit")
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise CodeProblem(f"not a zip {'wheel' if fmt == 'wheel' else 'archive'}") from None
    with z:
        infos = z.infolist()
        if len(infos) > CODE_LIMITS["members"]:
            raise CodeProblem(f"{len(infos)} members, more than {CODE_LIMITS['members']}")
        if sum(i.file_size for i in infos) > CODE_LIMITS["unpacked_bytes"]:
            raise CodeProblem(f"unpacks to more than {CODE_LIMITS['unpacked_bytes']} bytes")
        names = [i.filename for i in infos]
        for i in infos:
            n = i.filename
            parts = n.split("/")
            if n.startswith(("/", "\\")) or ".." in parts or "\\" in n or ":" in parts[0]:
                raise CodeProblem(f"member {n[:100]!r} would land outside its directory")
            if _is_link(i):
                raise CodeProblem(f"member {n[:100]!r} is a symbolic link")
        if fmt == "wheel":
            _inspect_wheel(names, filename)
        elif fmt == "zip":
            top = _top(entry_point) if entry_point else None
            if top in _FORBIDDEN_TOPS or (top and top in sys.stdlib_module_names):
                raise CodeProblem(
                    f"code for the package {top!r} cannot be submitted (the standard library's "
                    "or the suite's own)"
                )
            for n in names:
                first = n.split("/")[0]
                if top is not None and first not in (top, f"{top}.py"):
                    raise CodeProblem(
                        f"member {n[:100]!r} is outside the agent's package {top!r} "
                        "(a code archive holds the entry point's top-level package only)"
                    )
        else:
            raise CodeProblem(f"unknown code format {fmt!r}; expected 'zip' or 'wheel'")
    return names


def _inspect_wheel(names: list[str], filename: str | None) -> None:
    """A wheel installs only its own packages into site-packages (see the module docstring)."""
    if filename is not None and not re.fullmatch(
        r"[A-Za-z0-9_.]+-[^-/]+(-[^-/]+){2,3}\.whl", filename
    ):
        raise CodeProblem(f"{filename[:100]!r} is not a wheel file name")
    tops = set()
    for n in names:
        first = n.split("/")[0]
        if n.endswith(".pth"):
            raise CodeProblem(
                f"member {n[:100]!r} is a .pth file (it would run code in every Python "
                "started with this environment)"
            )
        if first.endswith(".data"):
            sub = n.split("/")[1] if "/" in n else ""
            if sub not in ("purelib", "platlib"):
                raise CodeProblem(
                    f"member {n[:100]!r} installs outside site-packages ({sub or 'data'})"
                )
            inner = n.split("/")[2:] if sub else []
            first = inner[0] if inner else ""
        if not first or _DIST_INFO.match(first):
            continue
        tops.add(first[:-3] if first.endswith(".py") else first.split(".")[0])
    for t in sorted(tops):
        if t in sys.stdlib_module_names or t in _FORBIDDEN_TOPS or t.startswith("_distutils"):
            raise CodeProblem(
                f"the wheel installs a top-level module {t!r}, which would replace "
                "the standard library's or the verifier's own"
            )


# ---------------------------------------------------------------------------- requirements
def requirement_problem(requirement: str) -> str | None:
    """Why ``requirement`` is not an exact pin of a distribution from an index, or None."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # pragma: no cover - packaging ships with pip
        return None
    try:
        req = Requirement(requirement)
    except InvalidRequirement as e:
        return f"{requirement[:100]!r} is not a PEP 508 requirement: {e}"
    if req.url:
        return (
            f"{requirement[:100]!r} is a direct reference ({req.url[:60]}); a requirement must "
            "name a distribution and its exact version ('name==1.2'); to submit code itself, "
            "carry it in the bundle (agent.code)"
        )
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        return (
            f"{requirement[:100]!r} does not pin one exact version; write "
            f"'{req.name}==<version>' so the verified code is the submitted code"
        )
    return None


def _code_root(dist: importlib.metadata.Distribution, entry_point: str) -> Path | None:
    """The directory whose files are hashed as the code of an installed agent: its top-level
    package, or for this suite's own agents the family's agent package."""
    module = entry_point.partition(":")[0]
    parts = module.split(".")
    depth = 3 if parts[0] == "icml26" and len(parts) >= 3 and parts[1] == "agents" else 1
    spec = importlib.util.find_spec(parts[0])
    if spec is None:
        return None
    if spec.submodule_search_locations:
        base = Path(list(spec.submodule_search_locations)[0])
        return base.joinpath(*parts[1:depth]) if depth > 1 else base
    return Path(spec.origin) if spec.origin else None


def installed_digest(requirement: str, entry_point: str) -> str | None:
    """The hash of the installed code of ``entry_point`` (its top-level package's files, for
    this suite's own agents their family's agent package), or None when not installed."""
    from packaging.requirements import Requirement

    try:
        dist = importlib.metadata.distribution(Requirement(requirement).name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    root = _code_root(dist, entry_point)
    if root is None or not root.exists():
        return None
    if root.is_file():
        return _files_digest(root.parent, [root])
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not _SKIP.search(p.relative_to(root).as_posix())
    )
    return _files_digest(root, files)


# ---------------------------------------------------------------------------- preparation
def _bundle_code(bundle: Mapping[str, Any]) -> Mapping[str, Any] | None:
    code = bundle.get("agent", {}).get("code")
    return code if isinstance(code, Mapping) else None


@contextlib.contextmanager
def prepared_code(
    agent: Mapping[str, Any],
    bundle: Mapping[str, Any],
    install: bool = False,
    timeout: float = 1800.0,
) -> Iterator[PreparedCode]:
    """The agent's code ready for a worker, in a temporary directory removed afterwards.
    Raises :class:`CodeProblem` when it cannot be (nothing is installed into the verifier's
    own environment, ever)."""
    ep = agent["entry_point"]
    code = _bundle_code(bundle)
    work = Path(tempfile.mkdtemp(prefix="icml26-verify-code-"))
    os.chmod(work, 0o755)
    try:
        if code is not None:
            yield _unpack(code, ep, work)
        elif agent.get("requirement"):
            yield _requirement(agent["requirement"], ep, work, install, timeout)
        elif agent.get("path"):
            raise CodeProblem(
                "the entry names a directory of the verifying machine (a bundle of schema 1); "
                "it cannot be verified: resubmit it as a schema-2 bundle, which carries the code"
            )
        else:
            raise CodeProblem("the entry names neither a requirement nor code")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _unpack(code: Mapping[str, Any], entry_point: str, work: Path) -> PreparedCode:
    try:
        data = base64.b64decode(str(code.get("data", "")), validate=True)
    except ValueError:
        raise CodeProblem("agent.code.data is not base64") from None
    fmt = str(code.get("format"))
    inspect_archive(data, fmt, entry_point=entry_point, filename=code.get("filename"))
    got = digest(data)
    if got != code.get("sha256"):
        raise CodeProblem(f"the code's hash {got} differs from the declared {code.get('sha256')}")
    target = work / ("code" if fmt == "zip" else "site")
    target.mkdir(mode=0o755)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for info in z.infolist():
            dest = target / info.filename
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True, mode=0o755)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            dest.write_bytes(z.read(info))
            dest.chmod(0o644)
    if fmt == "zip":
        return PreparedCode(got, path=str(target), keep=[str(work)])
    _relocate_wheel_data(target)
    return PreparedCode(got, site=[str(target)], keep=[str(work)])


def _relocate_wheel_data(site: Path) -> None:
    """A wheel's ``<name>.data/purelib`` and ``platlib`` belong in site-packages itself."""
    for data_dir in site.glob("*.data"):
        for sub in ("purelib", "platlib"):
            src = data_dir / sub
            if src.is_dir():
                for item in src.iterdir():
                    shutil.move(str(item), str(site / item.name))
        shutil.rmtree(data_dir, ignore_errors=True)


def _requirement(
    requirement: str, entry_point: str, work: Path, install: bool, timeout: float
) -> PreparedCode:
    problem = requirement_problem(requirement)
    if problem:
        raise CodeProblem(problem)
    from packaging.requirements import Requirement

    req = Requirement(requirement)
    top = _top(entry_point)
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        installed = importlib.metadata.version(req.name)
        if req.specifier.contains(installed, prereleases=True) and importlib.util.find_spec(top):
            sha = installed_digest(requirement, entry_point)
            if sha is None:
                raise CodeProblem(f"cannot read the installed code of {requirement!r}")
            return PreparedCode(sha, requirement=requirement)
    if not install:
        raise CodeProblem(
            f"the requirement {requirement!r} is not installed here; run verify with --install "
            "(it installs into a throw-away environment of this entry's, wheels only)"
        )
    return _install_isolated(requirement, work, timeout)


def _pip(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _install_isolated(requirement: str, work: Path, timeout: float) -> PreparedCode:
    """Install ``requirement`` (and whatever it needs that the verifier's environment lacks)
    into a new environment under ``work``, after inspecting every wheel; the verifier's own
    environment is only read."""
    env = work / "env"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(env)],
        check=True,
        capture_output=True,
        timeout=timeout,
    )
    py = str(env / "bin" / "python")
    report = work / "report.json"
    plan = _pip(
        [
            "--python",
            py,
            "install",
            "--dry-run",
            "--only-binary=:all:",
            "--quiet",
            "--report",
            str(report),
            requirement,
        ],
        timeout,
    )
    if plan.returncode != 0:
        raise CodeProblem(f"pip cannot resolve {requirement!r} to wheels: {_last_line(plan)}")
    items = json.loads(report.read_text()).get("install", [])
    wheels = work / "wheels"
    wheels.mkdir()
    pins = [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in items]
    for item, pin in zip(items, pins):
        url = str(item.get("download_info", {}).get("url", ""))
        if not url.endswith(".whl"):
            raise CodeProblem(f"{pin} is not available as a wheel")
    if pins:
        got = _pip(
            ["download", "--no-deps", "--only-binary=:all:", "-d", str(wheels), *pins], timeout
        )
        if got.returncode != 0:
            raise CodeProblem(f"pip download failed: {_last_line(got)}")
    files = sorted(wheels.glob("*.whl"))
    for f in files:
        try:
            inspect_archive(f.read_bytes(), "wheel", filename=f.name)
        except CodeProblem as e:
            raise CodeProblem(f"wheel {f.name} refused: {e}") from None
    if files:
        done = _pip(
            ["--python", py, "install", "--no-deps", "--no-index", "--only-binary=:all:"]
            + [str(f) for f in files],
            timeout,
        )
        if done.returncode != 0:
            raise CodeProblem(
                f"pip install into the entry's environment failed: {_last_line(done)}"
            )
    site = subprocess.run(
        [py, "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    sha = _digest_members([(f.name, f.read_bytes()) for f in files])
    return PreparedCode(
        sha,
        site=[site],
        keep=[str(work)],
        requirement=requirement,
        note=f"installed into the entry's own environment: {', '.join(pins) or 'nothing new'}",
    )


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout or "").strip().splitlines()
    return lines[-1][:300] if lines else f"exit status {proc.returncode}"
