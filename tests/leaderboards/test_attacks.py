"""Attacks on leaderboard verification (issue 14), each with its exact outcome.

Every attack is a submitted agent (or bundle) doing what an adversarial submitter would: patch
the verifier at import, walk ``gc`` for the store and the secret, name ``os:system`` as its
entry point, call ``os._exit``, hang, allocate without bound, leave a grandchild behind, send
malformed actions. Each test checks that the entry is not VERIFIED (with the reason), that an
unrelated entry did not change, that the attack found or ran nothing, and that verification
moves on.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from leaderboard_helpers import (
    TEST_NONCE,
    TEST_SECRET,
    forged,
    module_dir,
    processes_of_uid,
    processes_running,
    valid_bundle,
)
from leaderboard_helpers import attack_verify as verify

from icml26 import benchmarks
from icml26.leaderboards import verify as verify_mod
from icml26.leaderboards.jail import sandbox_uid
from icml26.leaderboards.sandbox import (
    Limits,
    SandboxUnavailable,
    docker_command,
    namespaces_available,
)
from icml26.leaderboards.store import SECRET_ENV, LeaderboardStore, submissions_table
from icml26.leaderboards.validate import SubmissionInvalid
from icml26.leaderboards.verify import heldout_seeds

FAULTY = "icml26.testing.faulty_agents"


@pytest.fixture()
def bystander(store: LeaderboardStore) -> Any:
    """An honest PENDING entry submitted before the attack; ``check()`` asserts it is unchanged."""
    eid = store.submit(valid_bundle("point-pd", name="Bystander")).entry_ids[0]
    before = store.entry(eid)

    class Bystander:
        id = eid

        @staticmethod
        def check() -> None:
            after = store.entry(eid)
            assert (after.status, after.reason, after.events, after.verification) == (
                before.status,
                before.reason,
                before.events,
                before.verification,
            )

    return Bystander


def statuses(e: Any) -> list[str]:
    return [ev["status"] for ev in e.events]


def watch(fragment: str) -> tuple[threading.Event, list[int]]:
    """Start recording the host pids of processes whose command line holds ``fragment``
    (until the returned event is set): evidence that an attack really started them."""
    stop, seen = threading.Event(), []

    def loop() -> None:
        while not stop.is_set():
            seen.extend(p for p in processes_running(fragment) if p not in seen)
            time.sleep(0.05)

    threading.Thread(target=loop, daemon=True).start()
    return stop, seen


# ---------------------------------------------------------------------------- in-process tampering
@pytest.mark.slow  # five held-out trials re-run in workers
def test_attack_import_time_patching_of_the_verifier(
    store: LeaderboardStore, bystander: Any, tmp_path: Path
) -> None:
    """On main, a module that replaced ``verify.agreement`` on import got a claim of -1 VERIFIED
    while its re-run scored about -21. Now its import happens in the worker only: the claim is
    judged by the real rule (the PD controller re-runs at about -17)."""
    d = module_dir(
        tmp_path,
        "lb_patch_attack",
        """
        import numpy as np
        import icml26.leaderboards.verify as v

        v.agreement = lambda submitted, rerun, tolerance: (True, 0.0, 1.0)

        class Cheater:
            version = "1"

            def reset(self, seed=None):
                pass

            def act(self, observation, info=None):   # the tutorial PD controller
                o = np.asarray(observation, dtype=np.float64)
                return np.clip(2.0 * o[4:6] - 1.5 * o[2:4], -1, 1).astype(np.float32)
    """,
    )
    original = verify_mod.agreement
    eid = store.submit(forged("lb_patch_attack:Cheater", path=d, claim=-1.0)).entry_ids[0]
    e = verify(store, eid)
    assert e.status == "REJECTED", e.reason
    assert "claimed -1;" in e.reason and "> allowed" in e.reason
    assert e.verification["rerun"]["iqm"] < -10
    assert verify_mod.agreement is original
    assert "lb_patch_attack" not in sys.modules
    bystander.check()


def test_attack_gc_spy_finds_no_store_secret_or_seed_list(
    store: LeaderboardStore, bystander: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On main, an agent walking ``gc`` found the open store, read the secret, derived every
    held-out seed and flipped an honest entry to REJECTED. In the worker it finds nothing but
    the one seed it is playing, and cannot read the verifier's environment (nor, where the
    sandbox has namespaces, the store's file or the secret file, though it knows their paths)."""
    secret = "an-organizer-secret-from-the-environment"
    monkeypatch.setenv(SECRET_ENV, secret)  # the verifier holds it in its environ
    task = benchmarks.get_task("tutorial/point-reach")
    seeds = heldout_seeds(task, secret.encode(), nonce=TEST_NONCE)
    files = [str(Path(store.engine.url.database).absolute()), str(store.secret_file)]
    kwargs = {
        "secret_sha256": hashlib.sha256(secret.encode()).hexdigest(),
        "seed_sha256": [hashlib.sha256(str(s).encode()).hexdigest() for s in seeds],
        "files": files,
    }
    # the spy's search works: run here (as the old verifier did) it sees the secret and the seeds
    from icml26.testing.faulty_agents import SpyAgent

    probe = SpyAgent(**kwargs, flip=False).report
    assert probe["stores"] >= 1 and probe["secret_in_environ"] and probe["secret_from_store"]
    assert set(probe["seeds"]) == set(seeds) and probe["files_read"] == files

    eid = store.submit(forged(f"{FAULTY}:SpyAgent", kwargs=kwargs)).entry_ids[0]
    e = verify(store, eid)
    assert e.status == "FAILED"
    # the public reason names the exception type only; the report is the organizer's
    assert e.reason == "re-run failed on held-out seed 1 of 5: the agent raised RuntimeError"
    detail = store.private_detail(eid)["detail"]
    report = json.loads(detail.partition("spy report: ")[2])
    assert report["calls"] >= 2  # constructed, reset, then act
    assert report["stores"] == report["engines"] == report["flipped"] == 0
    assert not report["secret_in_memory"] and not report["secret_in_environ"]
    assert not report["secret_from_store"]
    assert not report["secret_in_parent_environ"]
    if os.geteuid() != 0 or namespaces_available():
        # a non-dumpable verifier's /proc entries are closed to its own user; in a PID
        # namespace the verifier is not there at all
        assert not report["parent_environ_readable"]
    if namespaces_available():
        assert report["files_read"] == []
        assert e.verification["isolation"]["namespaces"] is True
        assert e.verification["isolation"]["hidden_paths"] >= 2
    # not even the seed it plays: its generators and reset seeds are a one-way function of it
    assert report["seeds"] == []
    bystander.check()


# ---------------------------------------------------------------------------- entry points
@pytest.mark.parametrize(
    "ep",
    [
        "os:system",
        "subprocess:run",
        "builtins:exec",
        "posix:system",
        "shutil:rmtree",
        "importlib:import_module",
        "site:main",
    ],
)
def test_attack_stdlib_entry_point_rejected_at_submission(
    store: LeaderboardStore, ep: str, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    before = store.dump()
    with pytest.raises(SubmissionInvalid) as info:
        store.submit(forged(ep, kwargs={"command": f"touch {marker}"}))
    errs = {e.field: e.message for e in info.value.errors}
    assert "standard-library/interpreter module" in errs["agent.entry_point"]
    assert store.dump() == before and not marker.exists()


def test_attack_foreign_distribution_entry_point_rejected(store: LeaderboardStore) -> None:
    with pytest.raises(SubmissionInvalid) as info:
        store.submit(forged("numpy.random:default_rng"))  # requirement says icml26-gym
    msg = {e.field: e.message for e in info.value.errors}["agent.entry_point"]
    assert "belongs to the installed distribution(s) ['numpy']" in msg and "icml26-gym" in msg


def test_attack_os_system_stored_earlier_never_runs(
    store: LeaderboardStore, bystander: Any, tmp_path: Path
) -> None:
    """An ``os:system`` entry stored before the submission check existed: the verifier refuses
    it before starting anything."""
    marker = tmp_path / "ran"
    eid = store.submit(forged(f"{FAULTY}:CrashingAgent")).entry_ids[0]
    agent = {
        "name": "os:system",
        "entry_point": "os:system",
        "kwargs": {"command": f"touch {marker}"},
        "version": "1",
        "requirement": "icml26-gym==0.1.0",
        "path": None,
    }
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(submissions_table)
            .where(submissions_table.c.id == store.entry(eid).submission_id)
            .values(agent_json=json.dumps(agent))
        )
    store.sign_all()  # as it was stored then (a row changed now would be refused unsigned)
    e = verify(store, eid)
    assert e.status == "FAILED" and e.reason.startswith(
        "entry point refused: 'os:system' names the standard-library/interpreter module 'os'"
    )
    assert statuses(e) == ["PENDING", "FAILED"]  # never RUNNING: no worker started
    assert not marker.exists()
    bystander.check()


@pytest.mark.parametrize(
    "source,ep,needle",
    [
        (
            "from os import system\n",
            "lb_reexport:system",
            "is a builtin_function_or_method, not an agent class",
        ),
        (
            "from subprocess import run as make_agent\n",
            "lb_reexport:make_agent",
            "is a function, not an agent class (or a factory function defined in the submitted package)",
        ),
        (
            "class NotAnAgent:\n    def __init__(self, command):\n        open(command, 'w')\n",
            "lb_reexport:NotAnAgent",
            "is a class without reset and act()",
        ),
    ],
)
def test_attack_reexported_callable_refused_in_worker(
    store: LeaderboardStore, bystander: Any, tmp_path: Path, source: str, ep: str, needle: str
) -> None:
    """A package of the submitter's that re-exports a dangerous callable passes the submission
    check (its top-level module is the submitter's) but the worker refuses to call it."""
    marker = tmp_path / "ran"
    d = module_dir(tmp_path, "lb_reexport", source)
    eid = store.submit(forged(ep, path=d, kwargs={"command": str(marker)})).entry_ids[0]
    e = verify(store, eid)
    assert e.status == "FAILED", e.reason
    assert e.reason == (
        f"re-run failed on held-out seed 1 of 5: entry point {ep!r} refused in the worker: not "
        "an agent class with reset() and act(), nor a factory function of the submitted package"
    )
    assert needle in store.private_detail(eid)["detail"]  # the worker's own words: private
    assert not marker.exists()
    bystander.check()


def test_attack_code_for_the_suites_own_package_refused(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """Code carried in a bundle for the package ``icml26`` would shadow the verifier's own in
    the worker: refused at submission."""
    d = tmp_path / "shadow"
    (d / "icml26" / "testing").mkdir(parents=True)
    (d / "icml26" / "testing" / "faulty_agents.py").write_text("class CrashingAgent: pass\n")
    with pytest.raises(SubmissionInvalid) as info:
        store.submit(forged(f"{FAULTY}:CrashingAgent", path=d))
    assert "code for the package 'icml26' cannot be submitted" in str(info.value)


# ---------------------------------------------------------------------------- killing, hanging, limits
@pytest.mark.slow  # a real verify process, two attempts, then five honest trials
def test_attack_os_exit_fails_the_entry_and_the_queue_moves_on(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """On main ``verify --pending`` ended with exit 0 and no output at an agent's ``os._exit``,
    the entry stayed PENDING and blocked the queue. Now: FAILED after 2 attempts, the next
    entry VERIFIED, exit status 1 (a real ``icml26 leaderboard verify`` process)."""
    killer = store.submit(forged(f"{FAULTY}:ProcessKillingAgent")).entry_ids[0]
    honest = store.submit(valid_bundle("point-pd", name="Honest after the killer")).entry_ids[0]
    env = {**os.environ, SECRET_ENV: TEST_SECRET.decode(), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "icml26.cli",
            "leaderboard",
            "verify",
            "--pending",
            "--store",
            str(tmp_path / "lb.db"),
            "--max-attempts",
            "2",
            "--trial-timeout",
            "60",
            "--nonce",
            TEST_NONCE,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith(
        f"#{killer} attack on tutorial/point-reach@v0: FAILED: re-run failed on "
        "held-out seed 1 of 5: the agent's worker process died (exit status 13)"
    )
    assert lines[0].endswith("(after 2 attempts)")
    assert lines[1].startswith(
        f"#{honest} Honest after the killer on tutorial/point-reach@v0: VERIFIED"
    )
    e = store.entry(killer)
    assert statuses(e) == ["PENDING", "RUNNING", "RUNNING", "FAILED"]
    assert [ev["reason"][:18] for ev in e.events[1:3]] == [
        "attempt 1 of 2 sta",
        "attempt 2 of 2 sta",
    ]
    assert e.verification["attempts"] == 2
    assert store.entry(honest).status == "VERIFIED"


def test_attack_hang_with_a_child_is_killed_at_the_time_limit(
    store: LeaderboardStore, bystander: Any, tmp_path: Path
) -> None:
    """A hanging agent (with a child process of its own) no longer hangs ``verify`` forever.
    (Its pid file goes to its private scratch space: nothing else is writable to it.)"""
    eid = store.submit(
        forged(f"{FAULTY}:ForkingHangingAgent", kwargs={"pid_file": "child.pid"})
    ).entry_ids[0]
    stop, seen = watch("time.sleep(3600)")
    t0 = time.monotonic()
    e = verify(store, eid, trial_timeout=3)
    elapsed = time.monotonic() - t0
    stop.set()
    assert e.status == "FAILED"
    assert e.reason == (
        "re-run failed on held-out seed 1 of 5: the agent exceeded the trial's wall-clock "
        "limit of 3 s (worker killed)"
    )
    assert elapsed < 40  # the limit, the start-up, the bookkeeping
    assert seen  # the child was started...
    assert processes_running("time.sleep(3600)") == []  # ...and is gone
    assert not (tmp_path / "child.pid").exists()
    bystander.check()


def test_attack_memory_bomb_stopped_by_the_limit(store: LeaderboardStore, bystander: Any) -> None:
    import resource

    eid = store.submit(forged(f"{FAULTY}:MemoryBombAgent", kwargs={"gib": 3.0})).entry_ids[0]
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    e = verify(store, eid, limits=Limits(memory_mb=1536, wall_s=60))
    assert e.status == "FAILED"
    assert "the agent raised MemoryError" in e.reason
    assert e.verification["limits"]["memory_mb"] == 1536
    # the verifier itself did not grow by the bomb (ru_maxrss is in KiB)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before < 512 * 1024
    bystander.check()


def test_attack_orphaned_grandchild_dies_with_the_trial(
    store: LeaderboardStore, bystander: Any, tmp_path: Path
) -> None:
    """A grandchild that left the agent's session (``setsid`` + double fork) is still killed
    when its trial ends (it never writes its marker), and the entry FAILS for it."""
    kwargs = {"pid_file": "grandchild.pid", "marker": "outlived", "delay_s": 2.0}
    eid = store.submit(forged(f"{FAULTY}:OrphanForkingAgent", kwargs=kwargs)).entry_ids[0]
    e = verify(store, eid)
    assert e.status == "FAILED", e.reason
    assert e.reason.endswith(
        "re-run failed on held-out seed 1 of 5: the agent left 1 process(es) "
        "running outside its worker (detached with setsid/double fork); killed"
    )
    assert statuses(e) == ["PENDING", "RUNNING", "FAILED"]
    assert processes_of_uid(sandbox_uid()) == []  # nothing of the sandbox's is left
    bystander.check()


@pytest.mark.parametrize(
    "kind,public,needle",
    [
        ("object", "the agent raised TypeError", "a object cannot be sent between the agent"),
        ("object_array", "the agent raised TypeError", "arrays of dtype object cannot be sent"),
        ("nested", "the agent raised TypeError", "nested deeper than 32 levels"),
        ("string", "the task's run_trial refused what the agent returned", "seed 1 of 5"),
    ],
)
def test_attack_malformed_actions_fail_at_once(
    store: LeaderboardStore, bystander: Any, kind: str, public: str, needle: str
) -> None:
    eid = store.submit(forged(f"{FAULTY}:MalformedActionAgent", kwargs={"kind": kind})).entry_ids[0]
    e = verify(store, eid, max_attempts=3)
    assert e.status == "FAILED" and public in e.reason, e.reason
    assert needle in store.private_detail(eid)["detail"]
    assert statuses(e) == ["PENDING", "RUNNING", "FAILED"]  # deterministic: no second attempt
    bystander.check()


# ---------------------------------------------------------------------------- states
def test_verification_claim_is_exclusive(store: LeaderboardStore) -> None:
    """RUNNING is a claim: a second verifier cannot take the entry, nor can a late verdict
    overwrite a status changed meanwhile."""
    eid = store.submit(valid_bundle("point-pd", name="claimed")).entry_ids[0]
    assert store.set_status(eid, "RUNNING", "attempt 1 of 2", expected=("PENDING",))
    assert not store.set_status(eid, "RUNNING", "attempt 1 of 2", expected=("PENDING",))
    with pytest.raises(
        verify_mod.VerificationError, match="RUNNING, not PENDING.*if that verifier died"
    ):
        verify(store, eid)
    assert statuses(store.entry(eid)) == ["PENDING", "RUNNING"]


# ---------------------------------------------------------------------------- docker
def test_docker_sandbox_command_line() -> None:
    lim = Limits(wall_s=100, memory_mb=2048, open_files=128, file_mb=64, processes=32, disk_mb=96)
    cmd = docker_command(
        "icml26-gym:test",
        lim,
        name="icml26-verify-x",
        agent_path="/srv/agent",
        engine="/usr/bin/docker",
        site=["/srv/env/site-packages"],
    )
    text = " ".join(cmd)
    assert cmd[:4] == ["/usr/bin/docker", "run", "--rm", "-i"]
    for flag in (
        "--network none",
        "--read-only",
        "--memory 2048m",
        "--memory-swap 2048m",
        "--pids-limit 32",
        "--tmpfs /tmp:rw,size=96m,mode=1777",
        "--ulimit nofile=128:128",
        "--ulimit cpu=100:105",
        f"--ulimit fsize={64 * 2**20}",
        "--cap-drop ALL",
        "--security-opt no-new-privileges",
        "--volume /srv/agent:/agent:ro",
        "--volume /srv/env/site-packages:/site0:ro",
        "--name icml26-verify-x",
        "--env HOME=/tmp",
    ):
        assert flag in text, flag
    assert cmd[-6:] == [
        "icml26-gym:test",
        "python",
        "-I",
        "-m",
        "icml26.leaderboards.sandbox_worker",
    ][-6:] or cmd[-5:] == [
        "icml26-gym:test",
        "python",
        "-I",
        "-m",
        "icml26.leaderboards.sandbox_worker",
    ]
    assert not any(SECRET_ENV in c or "ICML26_LEADERBOARD" in c for c in cmd)


def test_docker_sandbox_unavailable_is_a_clear_error(
    store: LeaderboardStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import shutil

    from icml26.cli import main

    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match="needs docker or podman on PATH"):
        docker_command("img", Limits(), name="x")
    eid = store.submit(valid_bundle("point-pd", name="docker wanted")).entry_ids[0]
    assert (
        main(
            [
                "leaderboard",
                "verify",
                str(eid),
                "--sandbox",
                "docker",
                "--store",
                str(tmp_path / "lb.db"),
            ]
        )
        == 2
    )
    assert "needs docker or podman on PATH" in capsys.readouterr().err
    assert store.entry(eid).status == "PENDING"


# ---------------------------------------------------------------------------- without namespaces
@pytest.mark.parametrize("namespaces", [False, True])
def test_sandbox_kills_detached_grandchild_with_and_without_namespaces(
    tmp_path: Path, namespaces: bool
) -> None:
    """The plain process sandbox (no namespaces: this process adopts orphans as a child
    subreaper) and the namespaced one both kill a grandchild that ran ``setsid`` and fail the
    trial for it."""
    from icml26.leaderboards.sandbox import SandboxError, run_sandboxed_trial

    if namespaces and not namespaces_available():
        pytest.skip("the sandbox cannot isolate a worker here")
    # confined, the agent can write only to its scratch space (relative paths land there)
    where = "" if namespaces else f"{tmp_path}/"
    pid_file, marker = f"{where}grandchild.pid", f"{where}outlived"
    task = benchmarks.get_task("tutorial/point-reach")
    isolation: dict[str, Any] = {}
    with pytest.raises(SandboxError, match=r"left 1 process\(es\) running outside its worker"):
        run_sandboxed_trial(
            task,
            f"{FAULTY}:OrphanForkingAgent",
            {"pid_file": pid_file, "marker": marker, "delay_s": 1.5},
            7,
            isolation=isolation,
            requirement="icml26-gym==0.1.0",
            limits=Limits(wall_s=60),
            namespaces=namespaces,
        )
    assert isolation["namespaces"] is namespaces
    if namespaces:
        assert processes_of_uid(sandbox_uid()) == []
    else:
        assert int(Path(pid_file).read_text()) > 0
        time.sleep(2.0)
        assert not Path(marker).exists()


def test_sandbox_time_limit_without_namespaces() -> None:
    from icml26.leaderboards.sandbox import SandboxError, run_sandboxed_trial

    task = benchmarks.get_task("tutorial/point-reach")
    t0 = time.monotonic()
    with pytest.raises(SandboxError, match="exceeded the trial's wall-clock limit of 2 s") as info:
        run_sandboxed_trial(
            task,
            f"{FAULTY}:HangingAgent",
            {},
            7,
            requirement="icml26-gym==0.1.0",
            limits=Limits(wall_s=2),
            namespaces=False,
        )
    assert info.value.kind == "timeout" and time.monotonic() - t0 < 30


def test_sandboxed_agent_cannot_offer_a_self_scoring_method(tmp_path: Path) -> None:
    """looplm's ``run_trial`` lets an agent with ``evaluate(env, problems)`` report its own
    accuracy; a sandboxed agent is never offered that, so it is scored through ``act``. Plain
    attributes and methods pass through; learn statistics that are not plain data are dropped
    with a note, as the runner does."""
    from icml26.leaderboards.sandbox import RemoteAgent, Worker

    d = module_dir(
        tmp_path,
        "lb_self_scorer",
        """
        class SelfScorer:
            version = "3"
            threshold = 0.25

            def reset(self, seed=None):
                pass

            def act(self, observation, info=None):
                return (observation * 2, {"k": [1, 2]})

            def evaluate(self, env, problems, **kw):
                return {"accuracy": 1.0, "pass_at_8": 1.0, "scores": [1.0] * len(problems)}

            def learn(self, env, budget=None):
                return {"model": object()}
    """,
    )
    w = Worker("lb_self_scorer:SelfScorer", {}, 3, path=str(d), limits=Limits(wall_s=60))
    try:
        agent = RemoteAgent(w)
        assert getattr(agent, "evaluate", None) is None
        assert w.call("evaluate", None, [1, 2])["accuracy"] == 1.0  # it exists in the worker
        assert agent.threshold == 0.25 and agent.version == "3" and w.version == "3"
        assert agent.act(21, None) == (42, {"k": [1, 2]})
        assert agent.learn(None)["note"].startswith(
            "learn statistics dropped: a object cannot be sent"
        )
        with pytest.raises(AttributeError):
            _ = agent.no_such_method
    finally:
        w.close()
