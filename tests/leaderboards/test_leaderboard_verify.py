"""Verification by re-run on held-out seeds: seeds from a secret, the agreement rule, and the
VERIFIED / REJECTED / FAILED outcomes on real re-runs of the tutorial task."""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import io
import json
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from leaderboard_helpers import TASK_ID, TEST_NONCE, rehash, scaled, valid_bundle

from icml26 import benchmarks
from icml26.leaderboards.bundle import make_bundle
from icml26.leaderboards.store import SECRET_ENV, LeaderboardStore
from icml26.leaderboards.verify import (
    VerificationError,
    agreement,
    false_rejection_rate,
    heldout_seeds,
    verify_entry,
)


def test_leaderboard_heldout_seeds_from_secret() -> None:
    task = benchmarks.get_task(TASK_ID)
    a = heldout_seeds(task, b"secret-a")
    assert a == heldout_seeds(task, b"secret-a")  # reproducible
    assert a != heldout_seeds(task, b"secret-b")  # depends on the secret
    assert len(a) == len(set(a)) == len(task.seeds)
    assert not set(a) & set(task.seeds)
    assert all(0 <= s < 2**31 for s in a)
    # the documented derivation, by hand, for the first seed
    d = hmac.new(b"secret-a", b"tutorial/point-reach@v0|heldout|0", hashlib.sha256).digest()
    assert a[0] == int.from_bytes(d[:4], "big") & 0x7FFFFFFF
    with pytest.raises(ValueError):
        heldout_seeds(task, b"")
    # each verification's nonce gives fresh seeds; the same nonce the same ones
    n1, n2 = (
        heldout_seeds(task, b"secret-a", nonce="n1"),
        heldout_seeds(task, b"secret-a", nonce="n2"),
    )
    assert n1 == heldout_seeds(task, b"secret-a", nonce="n1") and not set(n1) & set(n2)
    d = hmac.new(b"secret-a", b"tutorial/point-reach@v0|heldout|n1|0", hashlib.sha256).digest()
    assert n1[0] == int.from_bytes(d[:4], "big") & 0x7FFFFFFF


def test_leaderboard_secret_kept_outside_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    s1 = LeaderboardStore(tmp_path / "lb.db").heldout_secret()
    assert len(s1) == 32 and s1 == LeaderboardStore(tmp_path / "lb.db").heldout_secret()
    assert LeaderboardStore(tmp_path / "other.db").heldout_secret() != s1
    store = LeaderboardStore(tmp_path / "lb.db")
    # in a 0600 file, not in any table of the store
    f = store.secret_file
    assert f.read_text().strip() == s1.hex() and (f.stat().st_mode & 0o777) == 0o600
    assert s1.hex() not in json.dumps(store.dump(), default=str)
    store.set_heldout_secret(b"0123456789abcdef-organizers")
    assert store.heldout_secret() == b"0123456789abcdef-organizers"
    assert (f.stat().st_mode & 0o777) == 0o600
    with pytest.raises(ValueError, match="16 bytes"):
        store.set_heldout_secret(b"short")
    f.chmod(0o644)
    with pytest.raises(PermissionError, match="chmod 600"):
        store.heldout_secret()
    f.chmod(0o600)
    explicit = LeaderboardStore(tmp_path / "lb.db", secret_file=tmp_path / "organizer.key")
    assert explicit.heldout_secret() != store.heldout_secret()
    monkeypatch.setenv(SECRET_ENV, "from-the-environment")
    assert LeaderboardStore(tmp_path / "lb.db").heldout_secret() == b"from-the-environment"


def test_leaderboard_secret_migrates_out_of_old_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written by the previous version kept its secret in the settings table: the
    first use moves it to the file (same seeds as before) and deletes the row."""
    import sqlalchemy as sa

    from icml26.leaderboards.store import settings_table

    monkeypatch.delenv(SECRET_ENV, raising=False)
    store = LeaderboardStore(tmp_path / "old.db")
    old = bytes(range(32))
    with store.engine.begin() as conn:
        conn.execute(sa.insert(settings_table).values(key="heldout_secret", value=old.hex()))
    assert not store.secret_file.exists()
    assert store.heldout_secret() == old
    assert store.secret_file.read_text().strip() == old.hex()
    assert store.dump()["icml26_lb_settings"] == []
    # a differing row and file: refuse rather than silently change the held-out seeds
    with store.engine.begin() as conn:
        conn.execute(sa.insert(settings_table).values(key="heldout_secret", value=bytes(32).hex()))
    with pytest.raises(RuntimeError, match="differs"):
        store.heldout_secret()


@pytest.mark.parametrize(
    "submitted,rerun,tol,ok",
    [
        (100.0, 109.0, 0.1, True),  # 9 <= 0.1 * 109
        (100.0, 111.2, 0.1, False),  # 11.2 > 11.12
        (-20.0, -21.9, 0.1, True),  # 1.9 <= 2.19
        (-20.0, -10.0, 0.1, False),  # a claimed -10 that re-runs at -20
        (0.0, 0.0, 0.1, True),
        (1.0, 0.5, 0.5, True),
    ],
)
def test_leaderboard_agreement_rule(submitted: float, rerun: float, tol: float, ok: bool) -> None:
    assert agreement(submitted, rerun, tol)[0] is ok


def test_leaderboard_false_rejection_rate() -> None:
    assert false_rejection_rate([-20.0] * 12, 0.1) == 0.0  # no spread, never rejected
    # hand-worked, n_seeds=1 from five 1s and five 100s: two draws without replacement differ
    # with probability 2 * (5/10) * (5/9) = 5/9, and |1 - 100| = 99 > 0.1 * 100 rejects each
    rate = false_rejection_rate([1.0] * 5 + [100.0] * 5, 0.1, n_seeds=1, draws=40_000)
    assert rate == pytest.approx(5 / 9, abs=0.01)
    # against a plain loop with icml26.stats.iqm
    import numpy as np

    from icml26.stats import iqm

    v = np.random.default_rng(3).normal(-20, 3, size=40)
    rng = np.random.default_rng(4)
    loop = np.mean(
        [
            not agreement(iqm(v[i[:5]]), iqm(v[i[5:]]), 0.1)[0]
            for i in (rng.permutation(40)[:10] for _ in range(2000))
        ]
    )
    assert false_rejection_rate(v, 0.1) == pytest.approx(loop, abs=0.03)
    assert false_rejection_rate(v, 0.3) < false_rejection_rate(v, 0.1)
    with pytest.raises(ValueError, match="at least 10"):
        false_rejection_rate([1.0] * 9, 0.1)


def test_leaderboard_honest_entry_verified(store: LeaderboardStore) -> None:
    receipt = store.submit(valid_bundle("point-pd", name="PD honest"))
    eid = receipt.entry_ids[0]
    e = verify_entry(store, eid, progress=False, reps=200)
    assert e.status == "VERIFIED", e.reason
    v = e.verification
    assert v["n_heldout_seeds"] == 5 and v["agrees"] is True and v["nonce"] == TEST_NONCE
    assert abs(v["rerun"]["iqm"] - v["submitted"]["iqm"]) <= 0.1 * abs(v["submitted"]["iqm"])
    assert [ev["status"] for ev in e.events] == ["PENDING", "RUNNING", "VERIFIED"]
    assert e.events[1]["reason"].startswith("attempt 1 of 2 started at ")
    assert v["sandbox"] == "process" and v["attempts"] == 1
    assert v["isolation"]["level"] == "isolated" and v["code_sha256"].startswith("sha256:")
    # the claimed seeds the IQM trims were re-run on those seeds: the same values exactly
    checks = v["seed_checks"]
    claimed = {t.seed: t.metrics["return"] for t in e.trials}
    assert len(checks) == 2 and {c["seed"] for c in checks} == {
        min(claimed, key=claimed.get),
        max(claimed, key=claimed.get),
    }
    assert all(c["rerun"] == c["claimed"] == claimed[c["seed"]] for c in checks)
    # the re-run trials are kept privately, on the held-out seeds of this nonce; the ranking
    # gets their values without the seeds
    trials = store.verification_trials(eid)
    seeds = heldout_seeds(benchmarks.get_task(TASK_ID), store.heldout_secret(), nonce=TEST_NONCE)
    assert sorted(t.seed for t in trials) == sorted(seeds)
    assert e.rerun_values("return") == [t.metrics["return"] for t in trials]
    public = json.dumps(e.public_dict())
    assert not any(str(s) in public for s in seeds)
    assert store.heldout_secret().hex() not in public
    with pytest.raises(VerificationError, match="not PENDING"):
        verify_entry(store, eid, progress=False)
    # the same nonce: the same seeds, and the re-run is deterministic (identical metrics)
    e2 = verify_entry(store, eid, progress=False, force=True, reps=200, nonce=TEST_NONCE)
    assert e2.status == "VERIFIED" and len(e2.events) == 5
    assert [t.metrics for t in store.verification_trials(eid)] == [t.metrics for t in trials]
    # a fresh nonce: fresh seeds, disjoint from the first verification's
    e3 = verify_entry(store, eid, progress=False, force=True, reps=200, nonce="another")
    again = store.verification_trials(eid)
    assert e3.verification["nonce"] == "another" and not {t.seed for t in again} & set(seeds)


def test_leaderboard_inflated_claim_rejected(store: LeaderboardStore) -> None:
    # the real PD trials with every return halved (better than PD achieves), re-hashed: the
    # bundle is valid, only the re-run can tell
    forged = scaled(valid_bundle("point-pd"), 0.5, "PD inflated")
    eid = store.submit(forged).entry_ids[0]
    e = verify_entry(store, eid, progress=False, reps=200)
    assert e.status == "REJECTED"
    assert "> allowed" in e.reason and e.verification["agrees"] is False
    assert e.verification["rerun"]["iqm"] < 1.5 * e.verification["submitted"]["iqm"]


def test_leaderboard_unimportable_agent_failed(store: LeaderboardStore) -> None:
    b = copy.deepcopy(valid_bundle("point-pd"))
    ep = "icml26_missing_agent.mod:Agent"
    b["agent"].update(name=ep, entry_point=ep, requirement="icml26-missing-agent==1.0")
    for r in b["results"]:
        r["agent_name"] = ep
    eid = store.submit(rehash(b)).entry_ids[0]
    e = verify_entry(store, eid, progress=False)
    assert e.status == "FAILED", e.reason
    assert e.reason == (
        "the agent's code was refused: the requirement 'icml26-missing-agent==1.0' is not "
        "installed here; run verify with --install (it installs into a throw-away environment "
        "of this entry's, wheels only)"
    )
    assert [ev["status"] for ev in e.events] == ["PENDING", "FAILED"]  # no worker started


def test_leaderboard_crashing_agent_failed(store: LeaderboardStore) -> None:
    b = copy.deepcopy(valid_bundle("point-pd"))
    ep = "icml26.testing.faulty_agents:CrashingAgent"
    b["agent"].update(name=ep, entry_point=ep)
    for r in b["results"]:
        r["agent_name"] = ep
    eid = store.submit(rehash(b)).entry_ids[0]
    e = verify_entry(store, eid, progress=False)
    assert e.status == "FAILED"
    # the agent raised: FAILED at the first held-out seed, no second attempt; the public
    # reason names the type, the organizer's detail has the agent's text and traceback
    assert e.reason == "re-run failed on held-out seed 1 of 5: the agent raised RuntimeError"
    detail = store.private_detail(eid)
    assert "RuntimeError: CrashingAgent crashed on purpose" in detail["detail"]
    assert "faulty_agents.py" in detail["traceback"]
    assert [ev["status"] for ev in e.events] == ["PENDING", "RUNNING", "FAILED"]


def test_leaderboard_user_agent_from_local_path(
    store: LeaderboardStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's own agent class in a local directory: bundled with its path, re-run from it."""
    pkg = tmp_path / "userpkg"
    pkg.mkdir()
    (pkg / "lb_user_agent_mod.py").write_text(
        textwrap.dedent("""
        import numpy as np

        class GentlePD:
            version = "7"

            def __init__(self, gain=1.0):
                self.gain = gain

            def reset(self, seed=None):
                pass

            def act(self, observation, info=None):
                o = np.asarray(observation, dtype=np.float64)
                return np.clip(self.gain * o[4:6] - 1.2 * o[2:4], -1, 1).astype(np.float32)
    """)
    )
    monkeypatch.syspath_prepend(str(pkg))
    ep = "lb_user_agent_mod:GentlePD"
    task = benchmarks.get_task(TASK_ID)
    results = benchmarks.run(
        benchmarks.trials_for(task, ep, agent_kwargs={"gain": 1.5}),
        store=tmp_path / "res.db",
        progress=False,
    )
    bundle = make_bundle(results, name="Gentle PD (user class)")
    code = bundle["agent"].pop("code")
    assert bundle["agent"] == {
        "name": ep,
        "entry_point": ep,
        "kwargs": {"gain": 1.5},
        "version": "7",
        "requirement": None,
    }
    # the bundle carries the code (pinned by its hash), not a directory of this machine
    from icml26.leaderboards.artefacts import digest

    data = base64.b64decode(code["data"])
    assert code["format"] == "zip" and code["sha256"] == digest(data)
    assert zipfile.ZipFile(io.BytesIO(data)).namelist() == ["lb_user_agent_mod.py"]
    bundle["agent"]["code"] = code
    eid = store.submit(bundle).entry_ids[0]
    # the directory goes away: the verifier uses only the code in the bundle, and never
    # imports it itself
    (pkg / "lb_user_agent_mod.py").unlink()
    monkeypatch.delitem(sys.modules, "lb_user_agent_mod")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(pkg)])
    e = verify_entry(store, eid, progress=False, reps=200)
    assert e.status == "VERIFIED", e.reason
    assert e.verification["code_sha256"] == code["sha256"]
    assert "lb_user_agent_mod" not in sys.modules and str(pkg) not in sys.path
    assert [t.agent_version for t in store.verification_trials(eid)] == ["7"] * 5


def test_leaderboard_sandboxed_trial_equals_local_trial() -> None:
    """The verifier's re-run (env and scoring here, the agent in a worker) is the computation a
    local run does: identical metrics and scores for the same seed."""
    from icml26.benchmarks.runner import TrialSpec, execute_trial
    from icml26.leaderboards.sandbox import Limits, run_sandboxed_trial

    task = benchmarks.get_task(TASK_ID)
    ep = "icml26.agents.tutorial.pd:PDController"
    isolation: dict = {}
    outcome, version = run_sandboxed_trial(
        task,
        ep,
        {"kp": 1.5},
        123456,
        isolation=isolation,
        requirement="icml26-gym==0.1.0",
        limits=Limits(wall_s=120),
    )
    local = execute_trial(TrialSpec(task.id, task.version, ep, {"kp": 1.5}, 123456))
    assert local.status == "FINISHED"
    assert outcome.metrics == local.metrics and outcome.scores == local.scores
    assert version == local.agent_version == "1" and isolation["sandbox"] == "process"


def test_leaderboard_wheel_carried_in_the_bundle_verified(
    store: LeaderboardStore, tmp_path: Path
) -> None:
    """A wheel carried in the bundle (``icml26 leaderboard bundle --wheel``) is inspected,
    unpacked as the worker's own site directory, and run; its hash is what the entry records."""
    from leaderboard_helpers import WHEEL_AGENT, build_wheel, forged

    from icml26.leaderboards.artefacts import pack_wheel

    whl = build_wheel(
        tmp_path, "lbcarried", "1.0", {"lbcarried/__init__.py": "GAIN = 2.0\n" + WHEEL_AGENT}
    )
    b = forged("lbcarried:Agent", name="carried wheel")
    code = pack_wheel(whl)
    b["agent"].update(requirement=None, code=code)
    eid = store.submit(rehash(b)).entry_ids[0]
    e = verify_entry(store, eid, progress=False, reps=200)
    assert e.status == "VERIFIED", e.reason
    assert e.verification["code_sha256"] == code["sha256"]
    assert "lbcarried" not in sys.modules
