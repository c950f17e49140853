"""Validation of submission bundles: every rule names the field that broke it and why.

:func:`validate_bundle` checks, before anything is stored: size and nesting limits, JSON
syntax (no ``NaN``/``Infinity`` literals), the schema name and version, every field's type and
length, the agent entry point and its source, that each task exists at the stated version, that
every trial is FINISHED, belongs to this agent and task, and that the seeds are exactly the
task's leaderboard seeds (:attr:`icml26.protocol.Task.seeds`), that every metric is finite and
inside its documented range, and the content hash. All errors are collected; the exception
:class:`SubmissionInvalid` carries them as :class:`FieldError` (field path, message).

Duplicates of stored entries are checked by the store inside its transaction.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icml26.leaderboards.bundle import HASH_PREFIX, SCHEMA, SCHEMA_VERSION, content_hash
from icml26.protocol import Task, TrialResult

__all__ = [
    "name_key",
    "name_problem",
    "FieldError",
    "SubmissionInvalid",
    "ValidatedBundle",
    "validate_bundle",
    "LIMITS",
]

# Limits on what a submission may contain (documented in docs/leaderboard.md).
LIMITS: dict[str, int] = {
    "bundle_bytes": 4_000_000,  # the whole JSON file / request body (code included)
    "depth": 32,  # nesting of JSON objects and arrays
    "name": 80,  # entry name (characters)
    "description": 2000,
    "authors": 200,
    "url": 300,
    "agent_name": 200,
    "entry_point": 200,
    "requirement": 300,
    "version": 64,
    "tasks": 100,  # tasks per bundle
    "results": 2000,  # trials per bundle
    "scores": 10_000,  # per-episode scores per trial
    "packages": 100,  # entries in a packages dict
    "string": 300,  # any other string (package versions, timestamps, ids)
}

_NAME_RE = re.compile(r"^[\w][\w .+\-()/#@:,]*$")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_ENTRY_POINT_RE = re.compile(rf"^{_IDENT}(\.{_IDENT})*:{_IDENT}(\.{_IDENT})*$")
_COMMIT_RE = re.compile(r"^[0-9a-f]{7,64}(\+dirty)?$")
_HASH_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_REQUIRED_TOP = (
    "schema",
    "schema_version",
    "name",
    "agent",
    "tasks",
    "results",
    "packages",
    "git_commit",
    "created_at",
    "content_hash",
)
_OPTIONAL_TOP = ("description", "authors", "url")
_AGENT_FIELDS = ("name", "entry_point", "kwargs", "version", "requirement", "code")
_TRIAL_REQUIRED = (
    "task_id",
    "task_version",
    "agent_name",
    "agent_version",
    "seed",
    "status",
    "metrics",
    "scores",
    "agent_kwargs",
)
_TRIAL_OPTIONAL = (
    "wall_time_s",
    "packages",
    "git_commit",
    "traceback",
    "started_at",
    "extra",
    "task_hash",
    "budget_scale",
)


@dataclass(frozen=True)
class FieldError:
    """One broken rule: ``field`` is a path into the bundle (``results[3].metrics.return``)."""

    field: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class SubmissionInvalid(ValueError):
    """A bundle that cannot be stored; ``errors`` lists every broken rule.

    ``kind`` is ``"invalid"`` (HTTP 422), ``"duplicate"`` (409) or ``"too_large"`` (413).
    """

    def __init__(self, errors: list[FieldError], kind: str = "invalid") -> None:
        self.errors = list(errors)
        self.kind = kind
        lines = "\n".join(f"  {e}" for e in self.errors)
        super().__init__(f"submission rejected ({len(self.errors)} problem(s)):\n{lines}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "error": "submission rejected",
            "kind": self.kind,
            "errors": [e.to_dict() for e in self.errors],
        }


@dataclass
class ValidatedBundle:
    """A bundle that passed every check, with its parsed trials grouped by task key."""

    bundle: dict[str, Any]
    content_hash: str
    tasks: dict[str, Task]  # task key -> Task
    trials: dict[str, list[TrialResult]] = field(default_factory=dict)  # task key -> trials
    raw_size: int = 0


class _Errors(list[FieldError]):
    def add(self, path: str, message: str) -> None:
        self.append(FieldError(path, message))


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _short(v: Any, n: int = 60) -> str:
    text = repr(v)
    return text if len(text) <= n else text[: n - 3] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a submission (every number must be finite)")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(
            f"the number {text[:40]} overflows to infinity (every number must be finite)"
        )
    return x


def _parse(raw: bytes | str, errs: _Errors) -> Any:
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    if size > LIMITS["bundle_bytes"]:
        errs.add("bundle", f"{size} bytes, more than the {LIMITS['bundle_bytes']}-byte limit")
        return None
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            errs.add("bundle", f"not UTF-8 text: {e}")
            return None
    try:
        return json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        errs.add("bundle", f"JSON nested too deeply (limit {LIMITS['depth']} levels)")
    except ValueError as e:  # JSONDecodeError and our NaN/Infinity refusal
        errs.add("bundle", f"not valid JSON: {e}")
    return None


def _walk_strings_and_depth(obj: Any, path: str, errs: _Errors, depth: int = 0) -> None:
    """Reject deep nesting, NUL/control characters in keys and lone surrogates anywhere."""
    if depth > LIMITS["depth"]:
        errs.add(path, f"nested deeper than {LIMITS['depth']} levels")
        return
    if isinstance(obj, str):
        _check_text(obj, path, errs)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            sub = f"{path}.{k}" if path else k
            _check_text(k, sub, errs, key=True)
            _walk_strings_and_depth(v, sub, errs, depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _walk_strings_and_depth(v, f"{path}[{i}]", errs, depth + 1)


def _check_text(s: str, path: str, errs: _Errors, key: bool = False) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        errs.add(path, "contains an unpaired surrogate (\\ud800-\\udfff); not valid Unicode text")
        return
    if "\x00" in s:
        errs.add(path, "contains a NUL character")
    elif key and _CONTROL_RE.search(s):
        errs.add(path, "object key contains a control character")


def _str(
    errs: _Errors,
    path: str,
    v: Any,
    limit: int,
    *,
    empty: bool = True,
    pattern: re.Pattern[str] | None = None,
    pattern_text: str = "",
    multiline: bool = False,
) -> bool:
    if not isinstance(v, str):
        errs.add(path, f"expected a string, got {_type_name(v)} {_short(v)}")
        return False
    if not empty and not v.strip():
        errs.add(path, "must not be empty")
        return False
    if len(v) > limit:
        errs.add(path, f"{len(v)} characters, more than the limit of {limit}")
        return False
    bad = _CONTROL_RE.search(v) if multiline else re.search(r"[\x00-\x1f\x7f]", v)
    if bad:
        errs.add(path, f"contains the control character {bad.group()!r}")
        return False
    if pattern is not None and v and not pattern.fullmatch(v):
        errs.add(path, f"{_short(v)} is not allowed: expected {pattern_text}")
        return False
    return True


def _opt_str(errs: _Errors, path: str, v: Any, limit: int, **kw: Any) -> bool:
    return v is None or _str(errs, path, v, limit, **kw)


def _int(errs: _Errors, path: str, v: Any, minimum: int | None = 0) -> bool:
    if isinstance(v, bool) or not isinstance(v, int):
        errs.add(path, f"expected an integer, got {_type_name(v)} {_short(v)}")
        return False
    if minimum is not None and v < minimum:
        errs.add(path, f"expected an integer >= {minimum}, got {v}")
        return False
    return True


def _number(errs: _Errors, path: str, v: Any) -> float | None:
    if isinstance(v, str) and v.lower() in ("nan", "inf", "-inf", "infinity", "-infinity"):
        errs.add(path, f"{v!r} is not a finite number; every value must be finite")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        errs.add(path, f"expected a number, got {_type_name(v)} {_short(v)}")
        return None
    try:
        x = float(v)
    except OverflowError:  # an integer literal beyond float range, e.g. -10**400
        errs.add(path, f"{_short(v)} is out of the range of a float (|x| < 1.8e308)")
        return None
    if not math.isfinite(x):
        errs.add(path, f"{v!r} is not a finite number")
        return None
    return x


def _object(errs: _Errors, path: str, v: Any) -> bool:
    if not isinstance(v, dict):
        errs.add(path, f"expected an object, got {_type_name(v)} {_short(v)}")
        return False
    return True


def _fields(
    errs: _Errors,
    path: str,
    d: dict[str, Any],
    required: tuple[str, ...],
    optional: tuple[str, ...],
) -> None:
    prefix = f"{path}." if path else ""
    for k in required:
        if k not in d:
            errs.add(f"{prefix}{k}", "required field is missing")
    allowed = set(required) | set(optional)
    for k in d:
        if k not in allowed:
            errs.add(f"{prefix}{k}", f"unknown field; expected only {sorted(allowed)}")


def _string_map(errs: _Errors, path: str, v: Any, max_items: int) -> None:
    if not _object(errs, path, v):
        return
    if len(v) > max_items:
        errs.add(path, f"{len(v)} entries, more than the limit of {max_items}")
        return
    for k, val in v.items():
        _str(errs, f"{path}[{k!r}]", k, 100, empty=False)
        _str(errs, f"{path}[{k!r}]", val, LIMITS["string"])


def _timestamp(errs: _Errors, path: str, v: Any) -> None:
    if not _str(errs, path, v, 40, empty=False):
        return
    try:
        _dt.datetime.fromisoformat(v)
    except ValueError:
        errs.add(path, f"{_short(v)} is not an ISO 8601 timestamp (e.g. 2026-07-01T12:00:00+00:00)")


def _check_agent(errs: _Errors, agent: Any) -> None:
    if not _object(errs, "agent", agent):
        return
    _fields(errs, "agent", agent, _AGENT_FIELDS, ())
    if "name" in agent:
        _str(errs, "agent.name", agent["name"], LIMITS["agent_name"], empty=False)
    ep = agent.get("entry_point")
    if "entry_point" in agent and _str(
        errs,
        "agent.entry_point",
        ep,
        LIMITS["entry_point"],
        empty=False,
        pattern=_ENTRY_POINT_RE,
        pattern_text="'package.module:ClassName'",
    ):
        name = agent.get("name")
        if isinstance(name, str):
            from icml26 import agents

            registered = agents.all_specs().get(name)
            if registered is not None and registered.entry_point != ep:
                errs.add(
                    "agent.entry_point",
                    f"{ep!r} differs from the registered agent {name!r} "
                    f"({registered.entry_point!r})",
                )
            if registered is None and ":" in name and name != ep:
                errs.add("agent.entry_point", f"{ep!r} differs from the agent name {name!r}")
    if isinstance(ep, str) and _ENTRY_POINT_RE.fullmatch(ep):
        from icml26.leaderboards.sandbox import entry_point_problem

        req = agent.get("requirement")
        problem = entry_point_problem(ep, req if isinstance(req, str) else None)
        if problem:
            errs.add("agent.entry_point", problem)
    if "kwargs" in agent:
        _object(errs, "agent.kwargs", agent["kwargs"])
    if "version" in agent:
        _str(errs, "agent.version", agent["version"], LIMITS["version"], empty=False)
    _check_source(errs, agent, ep)


def _check_source(errs: _Errors, agent: dict[str, Any], ep: Any) -> None:
    """``agent.requirement`` (an exact pin) or ``agent.code`` (the code), never a path."""
    if "path" in agent:
        errs.add(
            "agent.path",
            "a bundle cannot name a directory of the verifying machine; it carries the agent's "
            "code (agent.code) or an exact requirement (agent.requirement)",
        )
    req, code = agent.get("requirement"), agent.get("code")
    ok = _opt_str(errs, "agent.requirement", req, LIMITS["requirement"], empty=False)
    if code is not None and not _object(errs, "agent.code", code):
        ok = False
    if ok and "requirement" in agent and "code" in agent and (req is None) == (code is None):
        errs.add(
            "agent",
            "give exactly one of 'requirement' (an exact pip requirement, e.g. 'mypkg==1.2') "
            "and 'code' (the agent's code, packed by make_bundle), got "
            + ("both" if req is not None else "neither"),
        )
    if ok and isinstance(req, str):
        from icml26.leaderboards.artefacts import requirement_problem

        problem = requirement_problem(req)
        if problem:
            errs.add("agent.requirement", problem)
    if ok and isinstance(code, dict) and isinstance(ep, str):
        _check_code(errs, code, ep)


def _check_code(errs: _Errors, code: dict[str, Any], entry_point: str) -> None:
    """``agent.code``: format, base64 data within the size limit, a safe archive (or wheel)
    of the entry point's package, and its declared hash."""
    import base64
    import binascii

    from icml26.leaderboards.artefacts import CodeProblem, digest, inspect_archive

    _fields(errs, "agent.code", code, ("format", "sha256", "data"), ("filename",))
    fmt = code.get("format")
    if fmt not in ("zip", "wheel"):
        errs.add("agent.code.format", f"expected 'zip' or 'wheel', got {_short(fmt)}")
        return
    if fmt == "wheel" and not isinstance(code.get("filename"), str):
        errs.add("agent.code.filename", "a wheel needs its file name")
        return
    data = code.get("data")
    if not isinstance(data, str):
        errs.add("agent.code.data", f"expected a base64 string, got {_type_name(data)}")
        return
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        errs.add("agent.code.data", "is not valid base64")
        return
    try:
        inspect_archive(raw, str(fmt), entry_point=entry_point, filename=code.get("filename"))
    except CodeProblem as e:
        errs.add("agent.code", str(e))
        return
    if code.get("sha256") != digest(raw):
        errs.add(
            "agent.code.sha256",
            f"{_short(code.get('sha256'))} is not the hash of the code ({digest(raw)})",
        )


# Latin look-alikes of Cyrillic and Greek letters (Unicode's confusables, the letters that
# matter in names); full-width and other compatibility forms are folded by NFKC first.
_CONFUSABLES = str.maketrans(
    "аАвВсСеЕһНіІјЈкКмМоОрРѕЅтТуУхХԁԛԜԝаɑαΑβΒεΕηΗιΙκΚμΜνΝοΟρΡτΤυΥχΧζΖ",
    "aABBcCeEhHiIjJkKmMoOpPsSTTyYxXdqWwaaaABBeEnHiIkKuMvNoOpPtTuYxXzZ",
)


def name_key(name: str) -> str:
    """The skeleton two names are compared by: NFKC, look-alike letters mapped to Latin,
    case and spacing folded. Names with the same key look the same."""
    import unicodedata

    folded = unicodedata.normalize("NFKC", name).translate(_CONFUSABLES).casefold()
    return re.sub(r"\s+", " ", folded).strip()


def _scripts(text: str) -> set[str]:
    import unicodedata

    out = set()
    for ch in text:
        if ch.isalpha():
            out.add(unicodedata.name(ch, "UNKNOWN").split(" ")[0])
    return out


def name_problem(name: str) -> str | None:
    """Why ``name`` may not be an entry name (a form NFKC changes, Latin letters mixed with
    look-alike scripts), or None."""
    import unicodedata

    normal = unicodedata.normalize("NFKC", name)
    if normal != name:
        return (
            f"{_short(name)} is not in Unicode normal form NFKC (full-width or compatibility "
            f"characters); write it as {_short(normal)}"
        )
    # the scripts whose letters pass for each other (UTS #39 allows Latin with Han or Kana)
    scripts = _scripts(name) & {"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"}
    if len(scripts) > 1:
        return (
            f"{_short(name)} mixes letters of several scripts ({', '.join(sorted(scripts))}); "
            "look-alike letters are not allowed in names"
        )
    return None


def _check_tasks(errs: _Errors, tasks: Any) -> dict[str, Task]:
    from icml26 import benchmarks

    out: dict[str, Task] = {}
    if not _object(errs, "tasks", tasks):
        return out
    if not tasks:
        errs.add("tasks", "must name at least one task")
    if len(tasks) > LIMITS["tasks"]:
        errs.add("tasks", f"{len(tasks)} tasks, more than the limit of {LIMITS['tasks']}")
        return out
    known = set(benchmarks.task_ids())
    for tid, ver in tasks.items():
        path = f"tasks[{tid!r}]"
        if len(tid) > LIMITS["string"]:
            errs.add(
                "tasks", f"a task id of {len(tid)} characters is longer than {LIMITS['string']}"
            )
            continue
        if not _int(errs, path, ver):
            continue
        if tid not in known:
            from icml26._entry_points import unknown_name_error

            errs.add(path, unknown_name_error("task", tid, known).args[0])
            continue
        try:
            out[tid] = benchmarks.get_task(tid, ver)
        except KeyError:
            latest = benchmarks.get_task(tid)
            errs.add(
                path, f"task {tid!r} has no version {ver} (the current version is {latest.version})"
            )
    return out


def _check_trial(
    errs: _Errors, i: int, r: Any, bundle: dict[str, Any], tasks: dict[str, Task]
) -> Task | None:
    path = f"results[{i}]"
    if not _object(errs, path, r):
        return None
    _fields(errs, path, r, _TRIAL_REQUIRED, _TRIAL_OPTIONAL)
    task = _check_trial_task(errs, path, r, bundle, tasks)
    agent = bundle.get("agent")
    _check_trial_agent(errs, path, r, agent if isinstance(agent, dict) else {})
    if "seed" in r:
        _int(errs, f"{path}.seed", r["seed"])
    if "task_hash" in r and _str(errs, f"{path}.task_hash", r["task_hash"], 64) and r["task_hash"]:
        want = getattr(task, "definition_hash", None)
        if task is not None and want is not None and r["task_hash"] != want:
            errs.add(
                f"{path}.task_hash",
                f"{_short(r['task_hash'])}: the trial ran a different definition "
                f"of {task.key} than this leaderboard's ({want}); re-run it with this version",
            )
    if "budget_scale" in r and r["budget_scale"] != 1:
        errs.add(
            f"{path}.budget_scale",
            f"{_short(r['budget_scale'])}: the leaderboard takes runs at the task's own budget "
            "(scale 1) only",
        )
    if "status" in r and r["status"] != "FINISHED":
        errs.add(f"{path}.status", f"{_short(r['status'])}; only FINISHED trials can be submitted")
    if "metrics" in r and _object(errs, f"{path}.metrics", r["metrics"]) and task is not None:
        _check_metrics(errs, f"{path}.metrics", r["metrics"], task)
    if "scores" in r:
        _check_scores(errs, f"{path}.scores", r["scores"])
    _check_trial_record(errs, path, r)
    return task


def _check_trial_task(
    errs: _Errors, path: str, r: dict[str, Any], bundle: dict[str, Any], tasks: dict[str, Task]
) -> Task | None:
    """``task_id`` and ``task_version`` agree with the bundle's ``tasks``; the trial's task."""
    task: Task | None = None
    listed_tasks = bundle.get("tasks")
    tid = r.get("task_id")
    if "task_id" in r and _str(errs, f"{path}.task_id", tid, LIMITS["string"], empty=False):
        if isinstance(listed_tasks, dict) and tid not in listed_tasks:
            errs.add(f"{path}.task_id", f"{tid!r} is not listed in 'tasks'")
        task = tasks.get(tid) if isinstance(tid, str) else None  # _str passed: it is a str
    if "task_version" in r and _int(errs, f"{path}.task_version", r["task_version"]):
        listed = (
            listed_tasks.get(tid)
            if isinstance(listed_tasks, dict) and isinstance(tid, str)
            else None
        )
        if isinstance(listed, int) and r["task_version"] != listed:
            errs.add(
                f"{path}.task_version", f"{r['task_version']} but 'tasks' says version {listed}"
            )
    return task


def _check_trial_agent(errs: _Errors, path: str, r: dict[str, Any], agent: dict[str, Any]) -> None:
    """The trial's agent name, version and kwargs are the bundle's ``agent``'s."""
    for key, akey in (("agent_name", "name"), ("agent_version", "version")):
        if key in r and _str(errs, f"{path}.{key}", r[key], LIMITS["agent_name"], empty=False):
            if akey in agent and r[key] != agent[akey]:
                errs.add(
                    f"{path}.{key}",
                    f"{_short(r[key])} differs from agent.{akey} {_short(agent[akey])}",
                )
    if "agent_kwargs" in r and _object(errs, f"{path}.agent_kwargs", r["agent_kwargs"]):
        if isinstance(agent.get("kwargs"), dict) and r["agent_kwargs"] != agent["kwargs"]:
            errs.add(
                f"{path}.agent_kwargs",
                "differs from agent.kwargs (a bundle holds one agent configuration)",
            )


def _check_metrics(errs: _Errors, path: str, metrics: dict[str, Any], task: Task) -> None:
    """Every metric of ``task`` present, finite and in its documented range; no others."""
    for m in task.metrics:
        mp = f"{path}.{m.name}"
        if m.name not in metrics:
            errs.add(mp, f"required metric of task {task.id!r} is missing")
            continue
        x = _number(errs, mp, metrics[m.name])
        if x is not None and not m.in_range(x):
            errs.add(mp, f"{x!r} is outside the metric's documented range [{m.lower}, {m.upper}]")
    for k in metrics:
        if k not in {m.name for m in task.metrics}:
            errs.add(
                f"{path}.{k}",
                f"not a metric of task {task.id!r} (its metrics: {[m.name for m in task.metrics]})",
            )


def _check_scores(errs: _Errors, path: str, sc: Any) -> None:
    """An array of finite numbers within the size limit (at most 3 bad values reported)."""
    if not isinstance(sc, list):
        errs.add(path, f"expected an array of numbers, got {_type_name(sc)}")
    elif len(sc) > LIMITS["scores"]:
        errs.add(path, f"{len(sc)} values, more than the limit of {LIMITS['scores']}")
    else:
        n_before = len(errs)
        for j, v in enumerate(sc):
            _number(errs, f"{path}[{j}]", v)
            if len(errs) - n_before >= 3:  # enough to say what is wrong
                break


def _check_trial_record(errs: _Errors, path: str, r: dict[str, Any]) -> None:
    """The trial's bookkeeping: wall time, packages, commit, traceback, start time, extra."""
    if "wall_time_s" in r:
        x = _number(errs, f"{path}.wall_time_s", r["wall_time_s"])
        if x is not None and x < 0:
            errs.add(f"{path}.wall_time_s", f"{x} is negative")
    if "packages" in r:
        _string_map(errs, f"{path}.packages", r["packages"], LIMITS["packages"])
    if "git_commit" in r:
        _opt_str(
            errs,
            f"{path}.git_commit",
            r["git_commit"],
            80,
            pattern=_COMMIT_RE,
            pattern_text="a hex commit id, optionally with '+dirty'",
        )
    if "traceback" in r and r["traceback"] is not None:
        errs.add(f"{path}.traceback", "must be null (only FINISHED trials can be submitted)")
    if "started_at" in r and r["started_at"] != "":
        _timestamp(errs, f"{path}.started_at", r["started_at"])
    if "extra" in r:
        _object(errs, f"{path}.extra", r["extra"])


def _check_seeds(errs: _Errors, results: list[Any], tasks: dict[str, Task]) -> None:
    by_task: dict[str, list[int]] = {tid: [] for tid in tasks}
    for r in results:
        if (
            isinstance(r, dict)
            and isinstance(r.get("task_id"), str)
            and r["task_id"] in by_task
            and _is_int(r.get("seed"))
        ):
            by_task[r["task_id"]].append(r["seed"])
    for tid, seeds in by_task.items():
        task = tasks[tid]
        dup = sorted(s for s, c in Counter(seeds).items() if c > 1)
        if dup:
            errs.add(f"results (task {tid!r})", f"seed(s) {dup} appear more than once")
        want = set(task.seeds)
        missing, extra = sorted(want - set(seeds)), sorted(set(seeds) - want)
        if missing or extra:
            errs.add(
                f"results (task {tid!r})",
                f"seeds {sorted(set(seeds))} are not the task's leaderboard seeds {sorted(want)}"
                + (f"; missing {missing}" if missing else "")
                + (f"; not leaderboard seeds: {extra}" if extra else ""),
            )


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def validate_bundle(raw: bytes | str | Mapping[str, Any]) -> ValidatedBundle:
    """Check a bundle (raw JSON bytes/text, or an already parsed object) against every rule.

    Returns the :class:`ValidatedBundle`; raises :class:`SubmissionInvalid` listing every
    problem found (``kind="too_large"`` when the size limit alone stopped the check).
    """
    errs = _Errors()
    b, size = _load(raw, errs)
    _check_schema(errs, b)
    _check_description(errs, b)
    if "agent" in b:
        _check_agent(errs, b["agent"])
    tasks = _check_tasks(errs, b["tasks"]) if "tasks" in b else {}
    trials_ok = _check_results(errs, b["results"], b, tasks) if "results" in b else False
    if "packages" in b:
        _string_map(errs, "packages", b["packages"], LIMITS["packages"])
    if "git_commit" in b:
        _opt_str(
            errs,
            "git_commit",
            b["git_commit"],
            80,
            pattern=_COMMIT_RE,
            pattern_text="a hex commit id, optionally with '+dirty'",
        )
    if "created_at" in b:
        _timestamp(errs, "created_at", b["created_at"])
    computed = content_hash(b)
    if "content_hash" in b:
        _check_content_hash(errs, b["content_hash"], computed)
    if errs:
        raise SubmissionInvalid(errs)
    assert trials_ok
    grouped: dict[str, list[TrialResult]] = {}
    for r in b["results"]:
        t = tasks[r["task_id"]]
        grouped.setdefault(t.key, []).append(TrialResult.from_dict(r))
    return ValidatedBundle(
        bundle=b,
        content_hash=computed,
        tasks={t.key: t for t in tasks.values()},
        trials={k: sorted(v, key=lambda r: r.seed) for k, v in grouped.items()},
        raw_size=size,
    )


def _load(raw: bytes | str | Mapping[str, Any], errs: _Errors) -> tuple[dict[str, Any], int]:
    """The parsed bundle and its size in bytes; raises when it is not a sane JSON object
    (too large, not JSON, too deep, bad strings): nothing else can be checked then."""
    if isinstance(raw, Mapping):
        try:
            text = json.dumps(raw, allow_nan=False)
        except (ValueError, TypeError) as e:
            raise SubmissionInvalid([FieldError("bundle", f"not JSON-serializable: {e}")]) from None
        raw = text
    size = len(raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass"))
    b = _parse(raw, errs)
    if errs:
        kind = "too_large" if size > LIMITS["bundle_bytes"] else "invalid"
        raise SubmissionInvalid(errs, kind)
    if not isinstance(b, dict):
        raise SubmissionInvalid(
            [FieldError("bundle", f"expected a JSON object, got {_type_name(b)}")]
        )
    _walk_strings_and_depth(b, "", errs)
    if errs:
        raise SubmissionInvalid(errs)
    return b, size


def _check_schema(errs: _Errors, b: dict[str, Any]) -> None:
    """The top-level fields and this leaderboard's schema; raises for another schema (its
    other fields mean something else, so checking them would only mislead)."""
    _fields(errs, "", b, _REQUIRED_TOP, _OPTIONAL_TOP)
    if "schema" in b and b["schema"] != SCHEMA:
        errs.add("schema", f"expected {SCHEMA!r}, got {_short(b['schema'])}")
    if "schema_version" in b and (
        not _is_int(b["schema_version"]) or b["schema_version"] != SCHEMA_VERSION
    ):
        old = b["schema_version"] == 1 and _is_int(b["schema_version"])
        errs.add(
            "schema_version",
            f"this leaderboard reads version {SCHEMA_VERSION}, got {_short(b['schema_version'])}"
            + (
                " (a version-1 bundle names the agent's code by a directory; version 2 carries "
                "the code or an exact requirement: write the bundle again with this icml26, "
                "`icml26 run ... --out FILE` or `icml26 leaderboard bundle`)"
                if old
                else ""
            ),
        )
    if any(e.field in ("schema", "schema_version") and "missing" not in e.message for e in errs):
        raise SubmissionInvalid(errs)


def _check_description(errs: _Errors, b: dict[str, Any]) -> None:
    """The entry's name, description, authors and link."""
    if "name" in b:
        _str(
            errs,
            "name",
            b["name"],
            LIMITS["name"],
            empty=False,
            pattern=_NAME_RE,
            pattern_text="letters, digits, spaces and . + - _ ( ) / # @ : , (starting with a "
            "letter or digit)",
        )
        if isinstance(b["name"], str) and b["name"] != b["name"].strip():
            errs.add("name", "has leading or trailing whitespace")
        if isinstance(b["name"], str):
            problem = name_problem(b["name"])
            if problem:
                errs.add("name", problem)
    if "description" in b:
        _str(errs, "description", b["description"], LIMITS["description"], multiline=True)
    if "authors" in b:
        _str(errs, "authors", b["authors"], LIMITS["authors"])
    if "url" in b and _str(errs, "url", b["url"], LIMITS["url"]):
        if b["url"] and not re.fullmatch(r"https?://[^\s<>\"'`]+", b["url"]):
            errs.add("url", f"{_short(b['url'])} is not an http(s) URL")


def _check_results(errs: _Errors, res: Any, b: dict[str, Any], tasks: dict[str, Task]) -> bool:
    """Every trial and the seeds per task; True when they raised no error."""
    if not isinstance(res, list):
        errs.add("results", f"expected an array of trial results, got {_type_name(res)}")
    elif not res:
        errs.add("results", "must hold at least one trial result")
    elif len(res) > LIMITS["results"]:
        errs.add("results", f"{len(res)} trials, more than the limit of {LIMITS['results']}")
    else:
        n_before = len(errs)
        for i, r in enumerate(res):
            _check_trial(errs, i, r, b, tasks)
        _check_seeds(errs, res, tasks)
        return len(errs) == n_before
    return False


def _check_content_hash(errs: _Errors, h: Any, computed: str) -> None:
    if not isinstance(h, str) or not _HASH_RE.match(h):
        errs.add("content_hash", f"expected '{HASH_PREFIX}' and 64 hex digits, got {_short(h)}")
    elif h != computed:
        errs.add(
            "content_hash",
            "does not match the bundle's content (the SHA-256 of its "
            "canonical JSON without content_hash): the file was altered after it was written",
        )
