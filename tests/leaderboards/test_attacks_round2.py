"""Attacks of the second red team (issue 33), each with its exact outcome.

The red team used only the documented CLI and HTTP paths: a verified agent that writes a
``.pth`` file and modules into the verifier's environment and package, or rewrites the task's
code while its trial runs; claims inflated within the tolerance (and a perfect score on a seed
the IQM trims); agents that read the global RNG state and their seeds, other stores' secrets,
or put their own text into public failure reasons; verification without namespaces; copies of
another's bundle nudged by 1e-9, look-alike names, code swapped after verification, a store row
rewritten by hand; fork and forked-memory bombs; gigabytes written outside the worker's
directory; a hang at start-up; ``--install`` of a wheel carrying a ``.pth`` and of a URL.
Each test fails on the code before issue 33 and passes now.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa
from leaderboard_helpers import (
    TEST_NONCE,
    TEST_SECRET,
    WHEEL_AGENT,
    agent_report,
    attack_verify,
    build_wheel,
    forged,
    module_dir,
    rehash,
    scaled,
    valid_bundle,
    variant,
)

import icml26
from icml26 import benchmarks
from icml26.leaderboards import sandbox as sandbox_mod
from icml26.leaderboards.ranking import cross_task, rank_all
from icml26.leaderboards.store import LeaderboardStore, entries_table, submissions_table
from icml26.leaderboards.validate import SubmissionInvalid
from icml26.leaderboards.verify import VerificationError, heldout_seeds

TASK = "tutorial/point-reach"

# The tutorial PD controller (kp=2, kd=1.5), for agents that must play well to be verified.
PD = """
    import numpy as np

    def pd(observation):
        o = np.asarray(observation, dtype=np.float64)
        return np.clip(2.0 * o[4:6] - 1.5 * o[2:4], -1, 1).astype(np.float32)
"""

# A PD controller that, when constructed, tries to write ``text`` to each of ``targets``.
WRITER = (
    PD
    + """
    class Writer:
        version = "1"

        def __init__(self, targets, text):
            for t in targets:
                try:
                    with open(t, "w") as f:
                        f.write(text)
                except OSError:
                    pass

        def reset(self, seed=None):
            pass

        def act(self, observation, info=None):
            return pd(observation)
"""
)


def limits(**kw: Any) -> Any:
    """``Limits(**kw)`` without the fields this version lacks (so that, run against the code
    before issue 33, an attack test shows the attack working rather than a TypeError)."""
    import dataclasses

    known = {f.name for f in dataclasses.fields(sandbox_mod.Limits)}
    return sandbox_mod.Limits(**{k: v for k, v in kw.items() if k in known})


def _verified(store: LeaderboardStore, eid: int, **kw: Any) -> Any:
    e = attack_verify(store, eid, **kw)
    assert e.status == "VERIFIED", e.reason
    return e


@pytest.fixture(scope="module")
def verified_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """A store file with two VERIFIED entries of the PD controller: an honest one, then one
    under another configuration name claiming 20% less cost on every seed (inside the task's
    25% tolerance). Built once; tests work on copies (:func:`copy_of`)."""
    path = tmp_path_factory.mktemp("pair") / "lb.db"
    st = LeaderboardStore(path)
    st.set_heldout_secret(TEST_SECRET)
    honest = st.submit(valid_bundle("point-pd", name="PD honest")).entry_ids[0]
    claim = scaled(variant(valid_bundle("point-pd"), 0), 0.8, "PD claims 20 percent better")
    inflated = st.submit(claim).entry_ids[0]
    # (module fixtures run before conftest's nonce fixture)
    from icml26.leaderboards import verify as verify_mod

    saved = getattr(verify_mod, "new_nonce", None)
    verify_mod.new_nonce = lambda: TEST_NONCE  # type: ignore[attr-defined]
    try:
        for eid in (honest, inflated):
            _verified(st, eid)
    finally:
        if saved is not None:
            verify_mod.new_nonce = saved  # type: ignore[attr-defined]
    st.close()
    return path, honest, inflated


def test_jail_user_namespace_variant(tmp_path: Path) -> None:
    """The variant for a verifier that is not root: the namespaces through a user namespace
    that maps the caller's uid (forced here, as root), the same read-only view, hidden
    directories, private tmpfs, no capabilities and no_new_privs."""
    import subprocess

    code = f"""
import json, os, sys
sys.path.insert(0, {sandbox_mod.PACKAGE_ROOT!r})
from icml26.leaderboards.jail import JailSpec, enter, status_report
r = enter(JailSpec(scratch_mb=8, keep={sandbox_mod.interpreter_paths()!r}, user_namespace=True,
                   hide_dirs=({str(tmp_path)!r},)))
try:
    open({str(tmp_path / "written")!r}, "w")
    wrote = True
except OSError:
    wrote = False
print(json.dumps({{**r, **status_report(), "root_writable": os.access("/", os.W_OK),
                  "tmp_writable": os.access("/tmp", os.W_OK), "wrote": wrote,
                  "visible": os.path.exists({str(tmp_path / "private.txt")!r})}}))
"""
    (tmp_path / "private.txt").write_text("organizer's")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["user_namespace"] is True and r["capabilities"] is False and r["no_new_privs"]
    assert r["CapBnd"] == r["CapEff"] == r["CapPrm"] == 0
    assert not r["root_writable"] and r["tmp_writable"] and not r["wrote"]
    assert not r["visible"] and not (tmp_path / "written").exists()


def copy_of(pair: tuple[Path, int, int], tmp_path: Path) -> LeaderboardStore:
    """A store on a copy of the pair's file, with the same secret (its signatures hold)."""
    import shutil

    shutil.copy(pair[0], tmp_path / "pair.db")
    st = LeaderboardStore(tmp_path / "pair.db")
    st.set_heldout_secret(TEST_SECRET)
    return st


# ---------------------------------------------------------------------------- persistence
@pytest.mark.slow  # two verifications (one shared with other tests)
def test_attack_pth_and_source_writes_land_nowhere(
    store: LeaderboardStore, tmp_path: Path, verified_pair: tuple[Path, int, int]
) -> None:
    """On main a verified agent wrote a .pth file into the verifier's site-packages and a
    module into the icml26 package (and ~/.cache, the temp directory, /var/tmp, /dev/shm, the
    store's directory): every later Python start ran it. Confined, every write fails (the
    root is read-only; its only writable place is a private tmpfs) and a later verification is
    unaffected: the attacker, a PD controller, re-runs exactly as an honest PD."""
    tag = hashlib.sha256(str(tmp_path).encode()).hexdigest()[:10]
    cache = Path(os.environ["HOME"]) / ".cache"
    cache.mkdir()
    targets = [
        Path(sysconfig.get_paths()["purelib"]) / f"lb_attack_{tag}.pth",
        Path(icml26.__file__).parent / f"lb_attack_{tag}.py",
        cache / f"lb_attack_{tag}",
        Path(tempfile.gettempdir()) / f"lb_attack_{tag}",
        Path("/var/tmp") / f"lb_attack_{tag}",
        Path("/dev/shm") / f"lb_attack_{tag}",
        Path(store.engine.url.database).parent / f"lb_attack_{tag}",
    ]
    d = module_dir(tmp_path, "lb_persist", WRITER)
    text = "# icml26 leaderboard attack test: must never land here\n"
    attacker = store.submit(
        forged(
            "lb_persist:Writer", path=d, kwargs={"targets": [str(t) for t in targets], "text": text}
        )
    ).entry_ids[0]
    try:
        e = _verified(store, attacker)
        assert [t for t in targets if t.exists()] == []
        assert e.verification["isolation"]["read_only_root"] is True
        # a later verification is unaffected: an honest PD re-runs as the attacker (a PD) did
        later = copy_of(verified_pair, tmp_path)
        honest = _verified(later, verified_pair[1], force=True)
        assert honest.rerun == e.rerun
    finally:
        for t in targets:
            t.unlink(missing_ok=True)


def test_attack_env_source_rewrite_during_verification_has_no_effect(
    store: LeaderboardStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On main an agent rewrote the task's own code on disk while it was being constructed;
    the verifier imported the rewritten code in the same trial and VERIFIED a claim of -1
    (the PD re-runs at about -19). Here the task's scoring reads a module the verifier imports
    from disk during the trial; the agent's rewrite of it fails, and the claim is rejected."""
    envdir = tmp_path / "lbenv"
    envdir.mkdir()
    scoring = envdir / "lb_env_scoring.py"
    scoring.write_text("def score(value):\n    return value\n")
    monkeypatch.syspath_prepend(str(envdir))
    import importlib

    import icml26.benchmarks.generic as generic

    real = generic.run_trial

    def run_trial(task: Any, agent: Any, seed: int) -> Any:
        out = real(task, agent, seed)
        sys.modules.pop("lb_env_scoring", None)
        importlib.invalidate_caches()
        mod = importlib.import_module("lb_env_scoring")  # read from disk, after the agent ran
        out.metrics["return"] = float(mod.score(out.metrics["return"]))
        return out

    monkeypatch.setattr(generic, "run_trial", run_trial)
    d = module_dir(tmp_path, "lb_rewrite", WRITER)
    cheat = {"targets": [str(scoring)], "text": "def score(value):\n    return -1.0\n"}
    eid = store.submit(forged("lb_rewrite:Writer", path=d, kwargs=cheat, claim=-1.0)).entry_ids[0]
    e = attack_verify(store, eid)
    assert scoring.read_text() == "def score(value):\n    return value\n"
    assert e.status == "REJECTED", e.reason
    assert e.verification["rerun"]["iqm"] < -10


# ---------------------------------------------------------------------------- ranking
def test_attack_inflated_claim_within_tolerance_ranks_by_its_rerun(
    verified_pair: tuple[Path, int, int], tmp_path: Path
) -> None:
    """On main the stock PD controller claiming 20% less cost (inside the task's 25%
    tolerance) was VERIFIED and ranked first, P(better) = 1, over the honest PD with the very
    same re-run. Now the ranking uses the re-run values: the two tie, the earlier submission
    first, and the inflated claim is shown beside its re-run."""
    _, honest, inflated = verified_pair
    store = copy_of(verified_pair, tmp_path)
    (ranking,) = rank_all(store, reps=200)
    rows = {r.entry.id: r for r in ranking.verified}
    assert [r.entry.id for r in ranking.verified] == [honest, inflated]
    assert rows[honest].iqm == rows[inflated].iqm  # the same controller, the same re-run
    assert rows[inflated].claimed == pytest.approx(0.8 * rows[honest].claimed)
    assert rows[honest].p_better_next is not None and rows[honest].p_better_next[0] == 0.5
    # the performance profiles and aggregate scores too: the same re-run, the same scores
    (view,) = cross_task([ranking], reps=200)
    by_entry = {next(iter(a.entries.values())).id: a for a in view.agents}
    assert np.array_equal(by_entry[honest].normalized, by_entry[inflated].normalized)
    assert by_entry[honest].iqm == by_entry[inflated].iqm


def test_attack_perfect_score_on_a_trimmed_seed_is_rejected(store: LeaderboardStore) -> None:
    """On main a claim of 0.0 (a perfect score) on one seed, which the IQM of five seeds
    trims, was never checked. The seeds the IQM trims are now re-run one by one."""
    b = scaled(variant(valid_bundle("point-pd"), 0), 0.8, "PD with a perfect seed")
    best = max(b["results"], key=lambda r: r["metrics"]["return"])
    best["metrics"]["return"] = 0.0
    e = attack_verify(store, store.submit(rehash(b)).entry_ids[0])
    assert e.status == "REJECTED", e.reason
    assert f"seed {best['seed']} claimed 0 but re-runs at -" in e.reason
    bad = [c for c in e.verification["seed_checks"] if not c["agrees"]]
    assert [c["seed"] for c in bad] == [best["seed"]]


# ---------------------------------------------------------------------------- seeds and text
SEED_SPY = """
    import json, random
    import numpy as np

    class SeedSpy:
        version = "1"

        def __init__(self):
            self.report = {
                "np_state": [int(x) for x in np.random.get_state()[1][:4]],
                "py_state": [int(x) for x in random.getstate()[1][:4]],
                "resets": [],
            }

        def reset(self, seed=None):
            self.report["resets"].append(seed)

        def act(self, observation, info=None):
            raise RuntimeError("report: " + json.dumps(self.report))
"""


def test_attack_rng_state_and_seeds_carry_no_heldout_seed(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """On main the worker seeded numpy's and Python's global generators with the held-out
    seed, and ``reset`` received seeds derived from it the documented way: an agent read them
    back. Now both are a one-way function (HMAC under a key of the secret and the nonce)."""
    import random

    from icml26.protocol import derive_seed

    d = module_dir(tmp_path, "lb_seedspy", SEED_SPY)
    eid = store.submit(forged("lb_seedspy:SeedSpy", path=d)).entry_ids[0]
    e = attack_verify(store, eid)
    assert e.status == "FAILED"
    report = agent_report(store, eid)
    task = benchmarks.get_task(TASK)
    try:
        seeds = heldout_seeds(task, TEST_SECRET, nonce=TEST_NONCE)
    except TypeError:  # the code before issue 33: the same seeds for every verification
        seeds = heldout_seeds(task, TEST_SECRET)
    derived = {derive_seed(s, "eval", i) for s in seeds for i in range(task.eval_episodes)}
    for s in seeds:
        np.random.seed(s % 2**32)
        random.seed(s)
        assert report["np_state"] != [int(x) for x in np.random.get_state()[1][:4]]
        assert report["py_state"] != [int(x) for x in random.getstate()[1][:4]]
    assert report["resets"] and not set(report["resets"]) & (set(seeds) | derived)


SECRET_READER = """
    import json

    class SecretReader:
        version = "1"

        def __init__(self, files):
            self.found = {}
            for f in files:
                try:
                    with open(f) as fh:
                        self.found[f] = fh.read()
                except OSError as e:
                    self.found[f] = type(e).__name__

        def reset(self, seed=None):
            pass

        def act(self, observation, info=None):
            raise RuntimeError("report: " + json.dumps(self.found))
"""


def test_attack_other_secret_files_unreadable(store: LeaderboardStore, tmp_path: Path) -> None:
    """On main only the current store's secret file was hidden: another store's secret under
    ~/.config/icml26 (the test suite wrote real ones there) and the organizer's other files
    were read in full. Now homes and configuration directories are empty to the agent."""
    home = Path(os.environ["HOME"])
    files = {
        home / ".config" / "icml26" / "leaderboard-secrets" / "0123456789abcdef.key": "a" * 64,
        home / ".ssh" / "id_ed25519": "an organizer's private key",
        home / "notes.txt": "organizer notes",
    }
    for f, text in files.items():
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
        f.chmod(0o644)  # even world-readable
    d = module_dir(tmp_path, "lb_secrets", SECRET_READER)
    eid = store.submit(
        forged("lb_secrets:SecretReader", path=d, kwargs={"files": [str(f) for f in files]})
    ).entry_ids[0]
    assert attack_verify(store, eid).status == "FAILED"
    found = agent_report(store, eid)
    assert set(found) == {str(f) for f in files}
    assert not any(text in found.values() for text in files.values()), found


LEAKER = """
    import sys

    class Leak_8675309(Exception):
        pass

    class Leaker:
        version = "1"

        def __init__(self, how):
            self.how = how

        def reset(self, seed=None):
            print("STDERR-LEAK-8675309", file=sys.stderr, flush=True)

        def act(self, observation, info=None):
            if self.how == "builtin":
                raise ValueError("TEXT-LEAK-8675309")
            if self.how == "own-class":
                raise Leak_8675309("TEXT-LEAK-8675309")
            import os
            os._exit(3)
"""


@pytest.mark.parametrize(
    "how,public",
    [
        ("builtin", "the agent raised ValueError"),
        ("own-class", "the agent raised Exception"),
        ("exit", "the agent's worker process died (exit status 3)"),
    ],
)
def test_attack_failure_reason_carries_no_agent_text(
    store: LeaderboardStore, tmp_path: Path, how: str, public: str
) -> None:
    """On main the public FAILED reason quoted the agent's exception (and the worker's last
    output line): an agent published whatever it liked, the held-out seed included. Now the
    public reason is the verifier's: a built-in exception type (for an exception of its own
    class, the nearest built-in one), a crash and its exit status; the organizer keeps the
    agent's text."""
    d = module_dir(tmp_path, "lb_leaker", LEAKER)
    eid = store.submit(forged("lb_leaker:Leaker", path=d, kwargs={"how": how})).entry_ids[0]
    e = attack_verify(store, eid)
    assert e.status == "FAILED"
    assert e.reason == f"re-run failed on held-out seed 1 of 5: {public}"
    public_text = json.dumps(e.public_dict())
    assert "8675309" not in public_text
    assert "8675309" in json.dumps(store.private_detail(eid))


# ---------------------------------------------------------------------------- isolation
def test_attack_forced_no_namespace_verify_refused_without_the_flag(
    store: LeaderboardStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main, where namespaces could not be made, ``verify`` ran the agent as the verifier's
    user, with the network and the store in reach, and said nothing. Now it refuses (nothing
    changes) unless the organizer passes --allow-unisolated; the entry then records and shows
    "unisolated"."""
    monkeypatch.setattr(
        sandbox_mod, "_probe_isolation", lambda: (False, "forced off by the test"), raising=False
    )
    monkeypatch.setattr(sandbox_mod, "_unshare_prefix", lambda: None, raising=False)
    eid = store.submit(valid_bundle("point-pd", name="needs isolation")).entry_ids[0]
    before = store.entry(eid)
    with pytest.raises(sandbox_mod.SandboxUnavailable, match="cannot isolate the agent"):
        attack_verify(store, eid)
    after = store.entry(eid)
    assert after.status == "PENDING" and after.events == before.events

    from icml26.cli import main

    path = str(store.engine.url.database)
    assert main(["leaderboard", "verify", str(eid), "--store", path]) == 2
    assert "--allow-unisolated" in capsys.readouterr().err
    assert main(["leaderboard", "verify", str(eid), "--store", path, "--allow-unisolated"]) == 0
    out = capsys.readouterr()
    assert "VERIFIED" in out.out and "UNISOLATED re-run" in out.out
    assert "verifying WITHOUT isolation" in out.err
    e = store.entry(eid)
    assert e.isolation == "unisolated" and e.verification["isolation"]["namespaces"] is False
    assert main(["leaderboard", "show", "--store", path, "--reps", "200"]) == 0
    assert "needs isolation (unisolated)" in capsys.readouterr().out


# ---------------------------------------------------------------------------- identity
def test_attack_plagiarism_nudged_by_1e9_refused(store: LeaderboardStore) -> None:
    """On main a copy of another's bundle with one metric changed by 1e-9 (a new fingerprint)
    was stored and ranked above the original. Now the same code, entry point and
    configuration on a task is a near-duplicate."""
    original = valid_bundle("point-pd", name="Original")
    store.submit(original)
    before = store.dump()
    copy_ = copy.deepcopy(original)
    copy_["name"] = "Totally new"
    copy_["results"][0]["metrics"]["return"] += 1e-9
    with pytest.raises(SubmissionInvalid) as info:
        store.submit(rehash(copy_))
    assert info.value.kind == "duplicate"
    assert "near-duplicate of entry #1" in str(info.value)
    assert store.dump() == before


@pytest.mark.parametrize(
    "name,needle",
    [
        ("Оrigіnal", "mixes letters of several scripts"),  # Cyrillic O and i
        ("Ｏｒｉｇｉｎａｌ", "not in Unicode normal form NFKC"),  # full-width
        ("АВС", "looks like the name 'ABC'"),  # all Cyrillic, against an all-Latin name
    ],
)
def test_attack_look_alike_names_refused(store: LeaderboardStore, name: str, needle: str) -> None:
    """On main names with Cyrillic or full-width look-alike letters were accepted."""
    store.submit(valid_bundle("point-pd", name="ABC" if "looks" in needle else "Original"))
    b = variant(valid_bundle("point-pd"), 7, name=name)
    with pytest.raises(SubmissionInvalid, match=needle):
        store.submit(b)


def test_attack_remote_submission_cannot_name_a_server_path(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """On main ``agent.path`` named a directory on the verifying machine chosen by the remote
    submitter (and the public FAILED reasons told which directories exist). A bundle now
    carries its code; a path is refused at submission, and an entry stored with one before is
    refused by the verifier without looking at the path."""
    b = valid_bundle("point-pd", name="path please")
    b["agent"].update(requirement=None, path="/etc")
    b.pop("schema_version")
    b["schema_version"] = 1
    with pytest.raises(SubmissionInvalid) as info:
        store.submit(rehash(b))
    assert {e.field for e in info.value.errors} >= {"schema_version"}
    # an entry of the old schema, stored before
    eid = store.submit(valid_bundle("point-pd", name="old entry")).entry_ids[0]
    agent = {**store.entry(eid).agent, "requirement": None, "path": "/etc"}
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(submissions_table)
            .where(submissions_table.c.id == store.entry(eid).submission_id)
            .values(agent_json=json.dumps(agent))
        )
    store.sign_all()
    e = attack_verify(store, eid)
    assert e.status == "FAILED" and "names a directory of the verifying machine" in e.reason
    assert "/etc" not in e.reason


def test_attack_code_swap_detected(store: LeaderboardStore, tmp_path: Path) -> None:
    """On main the code of a verified path agent could be swapped afterwards: the entry stayed
    VERIFIED, nothing recorded what had run. Now the bundle carries the code and its hash, the
    verification records the hash of what ran, and code changed in the store breaks the row's
    signature: the ranking flags it and the verifier refuses it."""
    d = module_dir(
        tmp_path,
        "lb_swap",
        PD
        + """
    class Agent:
        version = "1"

        def reset(self, seed=None):
            pass

        def act(self, observation, info=None):
            return pd(observation)
    """,
    )
    eid = store.submit(forged("lb_swap:Agent", path=d, name="swap me")).entry_ids[0]
    e = _verified(store, eid)
    assert e.verification["code_sha256"] == store.bundle(eid)["agent"]["code"]["sha256"]
    # swap the stored code for a cheater's (hash and all consistent inside the bundle)
    from icml26.leaderboards.artefacts import pack_code

    (d / "lb_swap.py").write_text("class Agent:\n    version = '1'\n")
    evil = pack_code(d, "lb_swap:Agent")
    bundle = store.bundle(eid)
    bundle["agent"]["code"] = evil
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(submissions_table).values(bundle_json=json.dumps(bundle, sort_keys=True))
        )
    assert store.entry(eid).integrity == "mismatch"
    (ranking,) = rank_all(store, reps=200)
    assert ranking.verified == [] and [x.id for x in ranking.flagged] == [eid]
    with pytest.raises(VerificationError, match="do not match their signatures"):
        attack_verify(store, eid, force=True)


def test_attack_tampered_store_row_flagged(
    verified_pair: tuple[Path, int, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main rewriting an entry's stored results changed the ranking with no integrity check.
    Rows are now signed with a key derived from the held-out secret: the ranking flags the
    rewritten entry instead of ranking it, ``show`` says so, the verifier refuses it."""
    _, a, b = verified_pair
    store = copy_of(verified_pair, tmp_path)
    with store.engine.begin() as conn:
        row = conn.execute(
            sa.select(entries_table.c.verification_trials_json).where(entries_table.c.id == b)
        ).scalar_one()
        trials = json.loads(row)
        for t in trials:
            t["metrics"]["return"] = -1.0
        conn.execute(
            sa.update(entries_table)
            .where(entries_table.c.id == b)
            .values(verification_trials_json=json.dumps(trials))
        )
    (ranking,) = rank_all(store, reps=200)
    assert [r.entry.id for r in ranking.verified] == [a]
    assert [(x.id, x.integrity) for x in ranking.flagged] == [(b, "mismatch")]
    from icml26.cli import main

    path = str(store.engine.url.database)
    assert main(["leaderboard", "show", "--store", path, "--reps", "200"]) == 0
    assert "FLAGGED (stored rows do not match their signatures" in capsys.readouterr().out
    with pytest.raises(VerificationError, match="do not match their signatures"):
        attack_verify(store, b, force=True)


# ---------------------------------------------------------------------------- resources
FORK_BOMB = (
    PD
    + """
    import os, time

    class ForkBomb:
        version = "1"

        def __init__(self, n):
            self.n, self.done = n, False

        def reset(self, seed=None):
            if self.done:
                return
            self.done = True
            for _ in range(self.n):
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)

        def act(self, observation, info=None):
            return pd(observation)
"""
)

MEMORY_FORKS = (
    PD
    + """
    import os
    import numpy as np

    class ForkedMemory:
        version = "1"

        def __init__(self, children, mib):
            self.children, self.mib = children, mib

        def reset(self, seed=None):
            import time
            pids = []
            for _ in range(self.children):
                pid = os.fork()
                if pid == 0:
                    try:
                        hog = np.ones(self.mib * 2**20 // 8)  # touches every page
                        time.sleep(3 + float(hog[0]))  # until all of them hold their share
                    finally:
                        os._exit(0)
                pids.append(pid)
            for pid in pids:
                os.waitpid(pid, 0)
            raise RuntimeError("the children finished")

        def act(self, observation, info=None):
            return pd(observation)
"""
)


def test_attack_fork_bomb_stopped_with_the_process_limit(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """On main the worker had no process-count limit: 300 forks succeeded (here: 120). The worker tree is
    held to ``Limits.processes`` (a pids cgroup; RLIMIT_NPROC of the sandbox uid without one):
    the 65th fork fails, and the entry FAILS naming that limit."""
    d = module_dir(tmp_path, "lb_forkbomb", FORK_BOMB)
    eid = store.submit(forged("lb_forkbomb:ForkBomb", path=d, kwargs={"n": 120})).entry_ids[0]
    e = attack_verify(store, eid, limits=limits(processes=64))
    assert e.status == "FAILED", e.reason
    assert e.reason.endswith(
        "the agent's process tree reached its limit of 64 processes (cgroup; further forks refused)"
    )


@pytest.mark.slow  # children fill 1.2 GiB until the kernel kills one
def test_attack_forked_memory_bomb_stopped_with_the_memory_limit(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """On main memory was limited per process: four children of 300 MiB each (1.2 GiB) ran
    under a 768 MiB limit. The whole tree is held to the limit (a memory cgroup): the kernel
    kills a child, and the entry FAILS naming the memory limit."""
    d = module_dir(tmp_path, "lb_memforks", MEMORY_FORKS)
    kwargs = {"children": 4, "mib": 300}
    eid = store.submit(forged("lb_memforks:ForkedMemory", path=d, kwargs=kwargs)).entry_ids[0]
    e = attack_verify(store, eid, limits=limits(memory_mb=768))
    assert e.status == "FAILED", e.reason
    assert e.reason.endswith(
        "the agent's process tree exceeded its memory limit of 768 MiB (cgroup; process killed)"
    )


DISK_FILLER = """
    import json, os

    class DiskFiller:
        version = "1"

        def __init__(self, targets, mib):
            self.written = {}
            chunk = b"x" * 2**20
            for t in targets:
                n = 0
                try:
                    with open(t, "wb") as f:
                        for _ in range(mib):
                            f.write(chunk)
                            f.flush()
                            n += 1
                except OSError as e:
                    pass
                self.written[t] = n

        def reset(self, seed=None):
            pass

        def act(self, observation, info=None):
            raise RuntimeError("report: " + json.dumps(self.written))
"""


def test_attack_disk_writes_bounded_and_gone_after_the_trial(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """On main an agent wrote 2 GB outside the worker's temporary directory and left it there.
    Now its only writable place is a private tmpfs of ``Limits.disk_mb`` (here 48 MiB): writes
    stop there, and nothing is left on the host when the trial ends."""
    tag = hashlib.sha256(str(tmp_path).encode()).hexdigest()[:10]
    host = [Path("/var/tmp") / f"lb_fill_{tag}", Path(tempfile.gettempdir()) / f"lb_fill_{tag}"]
    targets = [*map(str, host), f"/tmp/lb_fill_{tag}", f"lb_fill_{tag}_cwd"]
    d = module_dir(tmp_path, "lb_diskfill", DISK_FILLER)
    eid = store.submit(
        forged("lb_diskfill:DiskFiller", path=d, kwargs={"targets": targets, "mib": 200})
    ).entry_ids[0]
    try:
        e = attack_verify(store, eid, limits=limits(disk_mb=48))
        assert e.status == "FAILED"
        written = agent_report(store, eid)
        assert written[str(host[0])] == 0  # /var/tmp: not writable at all
        assert 0 < sum(written.values()) <= 48  # the scratch tmpfs, shared by the rest
        assert [p for p in host if p.exists()] == []
    finally:
        for p in host:
            p.unlink(missing_ok=True)


def test_time_limits_derived_from_the_task_and_named_correctly(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """On main every trial of a task without its own limit got 4 hours (a hanging agent held
    the sequential queue for ~8 h) and a hang at start-up was reported with the trial's limit.
    The limit now derives from the task (its reference runs and the claimed trial times, at
    most 30 minutes), and each time-out names the limit it broke."""
    # a hang while the agent is constructed breaks the start-up limit, and says so
    d = module_dir(
        tmp_path,
        "lb_slowstart",
        """
        import time

        class SlowStart:
            version = "1"

            def __init__(self):
                time.sleep(3600)

            def reset(self, seed=None):
                pass

            def act(self, observation, info=None):
                return None
        """,
    )
    eid = store.submit(forged("lb_slowstart:SlowStart", path=d)).entry_ids[0]
    e = attack_verify(store, eid, limits=limits(startup_s=4))
    assert e.status == "FAILED"
    assert e.reason.endswith(
        "the agent exceeded the start-up limit of 4 s (starting the worker and constructing "
        "the agent) (worker killed)"
    )
    assert e.verification["limits"]["wall_s"] == 60  # attack_verify's --trial-timeout
    from icml26.leaderboards.verify import MAX_TRIAL_S, trial_time_limit

    task = benchmarks.get_task(TASK)
    eid = store.submit(valid_bundle("point-pd")).entry_ids[0]
    entry = store.entry(eid)
    limit, basis = trial_time_limit(task, entry)
    assert limit == 120.0 and "reference/claimed trial" in basis  # PD trials take ~0.5 s
    slow = copy.deepcopy(entry)
    for t in slow.trials:
        t.wall_time_s = 100.0
    assert trial_time_limit(task, slow)[0] == 4 * 100.0 + 60
    for t in slow.trials:
        t.wall_time_s = 86_400.0
    assert trial_time_limit(task, slow)[0] == MAX_TRIAL_S


# ---------------------------------------------------------------------------- --install


@pytest.fixture()
def wheel_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local wheel directory pip reads instead of any index."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    return wheels


def _site_listing() -> set[str]:
    return set(os.listdir(sysconfig.get_paths()["purelib"]))


@pytest.mark.slow  # pip resolves and downloads into a throw-away environment
def test_attack_install_of_a_wheel_with_a_pth_refused(
    store: LeaderboardStore, wheel_index: Path
) -> None:
    """On main ``verify --install`` installed the submitter's requirement into the verifier's
    own environment; a wheel carrying a .pth file then ran in every later organizer command.
    Now every wheel is inspected first and installed, if at all, only into a throw-away
    environment of the entry's: this one is refused, and the verifier's environment is as it
    was. Carried in a bundle, the same wheel is refused at submission."""
    whl = build_wheel(
        wheel_index,
        "lbpthagent",
        "1.0",
        {
            "lbpthagent/__init__.py": "GAIN = 2.0\n" + WHEEL_AGENT,
            "lbpthagent_startup.pth": "import os\n",
        },
    )
    before = _site_listing()
    eid = store.submit(
        forged("lbpthagent:Agent", requirement="lbpthagent==1.0", name="pth wheel")
    ).entry_ids[0]
    e = attack_verify(store, eid, install=True)
    assert e.status == "FAILED"
    assert e.reason == (
        "the agent's code was refused: wheel lbpthagent-1.0-py3-none-any.whl refused: member "
        "'lbpthagent_startup.pth' is a .pth file (it would run code in every Python started "
        "with this environment)"
    )
    assert _site_listing() == before
    code = {
        "format": "wheel",
        "filename": whl.name,
        "sha256": "sha256:" + "0" * 64,
        "data": base64.b64encode(whl.read_bytes()).decode(),
    }
    b = forged("lbpthagent:Agent", name="pth wheel carried")
    b["agent"].update(requirement=None, code=code)
    with pytest.raises(SubmissionInvalid, match="is a .pth file"):
        store.submit(rehash(b))


def test_attack_url_requirement_refused(store: LeaderboardStore, tmp_path: Path) -> None:
    """On main a requirement ``name @ file:///...whl`` (or any URL) was accepted and installed
    by ``verify --install``. A requirement must now pin a distribution's exact version: a URL
    is refused at submission, and by the verifier for an entry stored before."""
    url = f"lbanything @ file://{tmp_path}/lbanything-1.0-py3-none-any.whl"
    with pytest.raises(SubmissionInvalid, match="is a direct reference"):
        store.submit(forged("lbanything:Agent", requirement=url))
    eid = store.submit(forged("lbanything:Agent", requirement="lbanything==1.0")).entry_ids[0]
    agent = {**store.entry(eid).agent, "requirement": url}
    with store.engine.begin() as conn:
        conn.execute(sa.update(submissions_table).values(agent_json=json.dumps(agent)))
        bundle = store.bundle(eid)
        bundle["agent"]["requirement"] = url
        conn.execute(sa.update(submissions_table).values(bundle_json=json.dumps(bundle)))
    store.sign_all()
    e = attack_verify(store, eid, install=True)
    assert e.status == "FAILED" and "is a direct reference" in e.reason


@pytest.mark.slow  # pip, twice, and a verification
def test_install_into_a_throwaway_environment_and_a_swapped_wheel_refused(
    store: LeaderboardStore, wheel_index: Path
) -> None:
    """A clean wheel installs into the entry's own environment (never the verifier's) and the
    entry records the hash of what ran; verifying again after the wheel behind the same
    ``name==version`` changed is refused."""
    whl = build_wheel(
        wheel_index,
        "lbwheelagent",
        "1.0",
        {"lbwheelagent/__init__.py": "GAIN = 2.0\n" + WHEEL_AGENT},
    )
    before = _site_listing()
    eid = store.submit(
        forged("lbwheelagent:Agent", requirement="lbwheelagent==1.0", name="wheel agent")
    ).entry_ids[0]
    e = _verified(store, eid, install=True)
    assert _site_listing() == before and "lbwheelagent" not in sys.modules
    ran = e.verification["code_sha256"]
    assert ran.startswith("sha256:") and "lbwheelagent==1.0" in e.verification["note"]
    whl.unlink()
    build_wheel(
        wheel_index,
        "lbwheelagent",
        "1.0",
        {"lbwheelagent/__init__.py": "GAIN = 9.0\n" + WHEEL_AGENT},
    )
    with pytest.raises(VerificationError, match="the agent's code changed since it was verified"):
        attack_verify(store, eid, install=True, force=True)
    assert (
        store.entry(eid).status == "VERIFIED"
        and store.entry(eid).verification["code_sha256"] == ran
    )
