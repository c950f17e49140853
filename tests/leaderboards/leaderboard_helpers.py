"""Shared helpers for the leaderboard tests: real bundles from the tutorial task, a server on
loopback, bundle surgery (re-hashing, distinct variants)."""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import hashlib
import json
import os
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from icml26 import benchmarks
from icml26.leaderboards.bundle import content_hash, make_bundle
from icml26.protocol import TrialResult

TASK_ID = "tutorial/point-reach"
# A fixed held-out secret keeps the re-runs of the tests deterministic. (With a random secret an
# honest agent can land outside the task's 10% tolerance; docs/leaderboard.md gives the rate.)
TEST_SECRET = b"icml26-leaderboard-tests"
# ... and a fixed verification nonce (conftest.py makes every verify_entry use it)
TEST_NONCE = "icml26-tests"
_TMP = tempfile.mkdtemp(prefix="icml26-lb-tests-")


@functools.cache
def real_results(agent: str = "point-pd", kwargs_json: str = "{}") -> tuple[TrialResult, ...]:
    """Trials of ``agent`` on the tutorial task's leaderboard seeds (run once per process)."""
    task = benchmarks.get_task(TASK_ID)
    specs = benchmarks.trials_for(task, agent, agent_kwargs=json.loads(kwargs_json))
    res = benchmarks.run(specs, store=os.path.join(_TMP, "results.db"), progress=False)
    assert all(r.status == "FINISHED" for r in res), [r.traceback for r in res]
    return tuple(res)


def valid_bundle(
    agent: str = "point-pd", kwargs: dict[str, Any] | None = None, **meta: Any
) -> dict[str, Any]:
    """A fresh (deep-copied) valid bundle of a real run."""
    res = real_results(agent, json.dumps(kwargs or {}, sort_keys=True))
    return copy.deepcopy(make_bundle(res, **meta))


def rehash(b: dict[str, Any]) -> dict[str, Any]:
    b["content_hash"] = content_hash(b)
    return b


def variant(base: dict[str, Any], i: int, name: str | None = None) -> dict[str, Any]:
    """A distinct valid bundle: the same trials under another agent configuration
    (``kwargs = {"kp": 2 + i/1000}``), so its entry fingerprint differs."""
    b = copy.deepcopy(base)
    kw = {"kp": 2.0 + i / 1000}
    b["agent"]["kwargs"] = kw
    for r in b["results"]:
        r["agent_kwargs"] = dict(kw)
    b["name"] = name or f"variant {i}"
    return rehash(b)


def scaled(base: dict[str, Any], factor: float, name: str) -> dict[str, Any]:
    """``base`` with every seed's primary metric (return, <= 0) multiplied by ``factor``."""
    b = copy.deepcopy(base)
    for r in b["results"]:
        r["metrics"]["return"] = r["metrics"]["return"] * factor
    b["name"] = name
    return rehash(b)


@contextlib.contextmanager
def running_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yield its base URL."""
    import uvicorn

    # log_config=None: uvicorn leaves logging alone (its handlers would otherwise hold on to
    # pytest's captured stderr after the test that opened them has closed it)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@functools.cache
def demo_store() -> tuple[str, dict[str, int]]:
    """A store with one entry of every status on the tutorial task (real runs and re-runs),
    built once per process. Returns (store path, {role: entry id})."""
    from icml26.leaderboards.store import LeaderboardStore
    from icml26.leaderboards.verify import verify_entry

    path = os.path.join(tempfile.mkdtemp(prefix="icml26-lb-demo-"), "leaderboard.db")
    store = LeaderboardStore(path)
    store.set_heldout_secret(TEST_SECRET)
    ids: dict[str, int] = {}

    def add(role: str, bundle: dict[str, Any], verify: bool) -> None:
        eid = store.submit(bundle, submitter="demo").entry_ids[0]
        if verify:
            verify_entry(store, eid, progress=False, reps=300)
        ids[role] = eid

    add(
        "pd",
        valid_bundle(
            "point-pd",
            name="PD controller",
            authors="icml26-gym",
            description="Proportional-derivative controller on the goal offset "
            "(kp=2, kd=1.5); scripted, no learning.",
        ),
        True,
    )
    add(
        "random",
        valid_bundle(
            "random",
            name="Uniform random",
            description="Uniform random actions: the floor of the task.",
        ),
        True,
    )
    add(
        "soft",
        valid_bundle(
            "point-pd",
            {"kp": 0.5, "kd": 0.5},
            name="PD, soft gains",
            description="The PD controller with kp=0.5, kd=0.5 <script>alert('x')</script>",
        ),
        False,
    )
    # another configuration (kp=2.001) claiming half the PD's cost: the re-run rejects it
    add("inflated", scaled(variant(valid_bundle("point-pd"), 1), 0.5, "PD (inflated claim)"), True)
    crash = copy.deepcopy(valid_bundle("point-pd", name="Crashing agent"))
    ep = "icml26.testing.faulty_agents:CrashingAgent"
    crash["agent"].update(name=ep, entry_point=ep)
    for r in crash["results"]:
        r["agent_name"] = ep
        r["metrics"]["return"] -= 1.0
    add("crash", rehash(crash), True)
    store.close()
    return path, ids


PG_ENV = "ICML26_TEST_POSTGRES_URL"


@contextlib.contextmanager
def fresh_postgres_database(base_url: str) -> Iterator[str]:
    """A new, empty database on the server of ``base_url`` (dropped afterwards)."""
    import uuid

    import sqlalchemy as sa

    name = f"icml26_lb_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield sa.make_url(base_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# ---------------------------------------------------------------------------- attacks
def forged(
    ep: str,
    *,
    kwargs: dict[str, Any] | None = None,
    path: Any = None,
    requirement: str | None = None,
    claim: float | None = None,
    name: str = "attack",
) -> dict[str, Any]:
    """A valid bundle of the real PD trials, re-labelled as agent ``ep`` (its code packed
    from the directory ``path``, or from ``requirement``), claiming ``claim`` on every seed
    when given."""
    b = copy.deepcopy(valid_bundle("point-pd"))
    kwargs = kwargs or {}
    b["name"] = name
    b["agent"].update(name=ep, entry_point=ep, kwargs=kwargs, version="1")
    if path is not None:
        try:
            from icml26.leaderboards.artefacts import pack_code
        except ImportError:  # the code before schema 2 (to show that an attack worked there)
            b["agent"].update(requirement=None, path=str(path))
        else:
            b["agent"].update(requirement=None, code=pack_code(path, ep))
    elif requirement is not None:
        b["agent"].update(requirement=requirement)
    for r in b["results"]:
        r.update(agent_name=ep, agent_kwargs=dict(kwargs), agent_version="1")
        if claim is not None:
            r["metrics"]["return"] = claim
    return rehash(b)


def module_dir(tmp_path: Any, name: str, source: str) -> Any:
    """A directory holding the module ``name`` with ``source`` (dedented)."""
    import textwrap

    d = tmp_path / f"pkg_{name}"
    d.mkdir()
    (d / f"{name}.py").write_text(textwrap.dedent(source))
    return d


def attack_verify(store: Any, eid: int, **kw: Any) -> Any:
    """``verify_entry`` as the attack tests call it: one attempt, a 60 s trial limit."""
    from icml26.leaderboards.verify import verify_entry

    kw.setdefault("max_attempts", 1)
    kw.setdefault("trial_timeout", 60)
    return verify_entry(store, eid, progress=False, reps=200, **kw)


def processes_running(fragment: str) -> list[int]:
    """Host pids of live processes whose command line contains ``fragment`` (a pid written by
    a sandboxed agent is a pid of its PID namespace, so tests look processes up this way)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
                with open(f"/proc/{name}/stat", "rb") as f:
                    state = f.read().rpartition(b")")[2].split()[0]
            except OSError:
                continue
            if fragment in cmd and state != b"Z":
                out.append(int(name))
    return out


def processes_of_uid(uid: int) -> list[int]:
    """Host pids of live processes running as ``uid`` (the sandbox's)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/status") as f:
                    text = f.read()
            except OSError:
                continue
            line = next((x for x in text.splitlines() if x.startswith("Uid:")), "")
            state = next((x for x in text.splitlines() if x.startswith("State:")), "")
            if line.split()[1:2] == [str(uid)] and " Z " not in state + " ":
                out.append(int(name))
    return out


def agent_report(store: Any, eid: int) -> dict[str, Any]:
    """What an attack agent reported by raising ``RuntimeError("report: " + JSON)``: read
    from the organizer's private detail of the failed verification."""
    if hasattr(store, "private_detail"):
        detail = store.private_detail(eid).get("detail", "")
    else:  # the code before issue 33 published it in the reason
        detail = store.entry(eid).reason
    return dict(json.loads(detail.partition("report: ")[2]))


def build_wheel(where: Path, dist: str, version: str, files: dict[str, str]) -> Path:
    """A minimal pure-Python wheel holding ``files`` (name -> text)."""
    info = f"{dist}-{version}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
    members[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: icml26-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for name, text in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    members[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,", ""])
    path = where / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return path


# An agent module for wheels (``GAIN`` is set by the wheel): the PD controller with that gain.
WHEEL_AGENT = """
import numpy as np


class Agent:
    version = "1"

    def reset(self, seed=None):
        pass

    def act(self, observation, info=None):
        o = np.asarray(observation, dtype=np.float64)
        return np.clip(GAIN * o[4:6] - 1.5 * o[2:4], -1, 1).astype(np.float32)
"""
