"""The leaderboard store on SQLite and, when ``ICML26_TEST_POSTGRES_URL`` is set (``.ci/run``
starts a server), on PostgreSQL: one-transaction submissions, duplicates under concurrency,
statuses with history, tokens kept as hashes, the secret, memoized statistics."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from leaderboard_helpers import PG_ENV, fresh_postgres_database, rehash, valid_bundle, variant

from icml26.leaderboards.store import SECRET_ENV, LeaderboardStore
from icml26.leaderboards.validate import LIMITS, SubmissionInvalid


@pytest.fixture(params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LeaderboardStore]:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    if request.param == "sqlite":
        s = LeaderboardStore(tmp_path / "lb.db")
        yield s
        s.close()
        return
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"{PG_ENV} not set (.ci/run starts a PostgreSQL server and sets it)")
    with fresh_postgres_database(base) as url:
        s = LeaderboardStore(url)
        yield s
        s.close()


def test_leaderboard_store_lifecycle(store: LeaderboardStore) -> None:
    b = valid_bundle(
        "point-pd",
        name="n" * LIMITS["name"],
        authors="a" * LIMITS["authors"],
        url="https://example.org/" + "u" * (LIMITS["url"] - 20),
        description="d\n" * (LIMITS["description"] // 2),
    )
    r = store.submit(b, submitter="alice")
    (eid,) = r.entry_ids
    e = store.entry(eid)
    assert (e.name, e.authors, e.url, e.description) == (
        b["name"],
        b["authors"],
        b["url"],
        b["description"],
    )
    assert e.status == "PENDING" and e.submitter == "alice" and e.content_hash == b["content_hash"]
    assert [t.seed for t in e.trials] == [0, 1, 2, 3, 4]
    rev = store.revision()
    store.set_status(eid, "REJECTED", "re-run disagreed", verification={"agrees": False})
    assert store.revision() > rev
    e = store.entry(eid)
    assert (e.status, e.reason, e.verification) == (
        "REJECTED",
        "re-run disagreed",
        {"agrees": False},
    )
    assert [ev["status"] for ev in e.events] == ["PENDING", "REJECTED"]
    assert [x.id for x in store.entries(task="tutorial/point-reach@v0", status="REJECTED")] == [eid]
    assert store.entries(status="VERIFIED") == []
    with pytest.raises(ValueError, match="unknown status"):
        store.set_status(eid, "DONE", "x")
    with pytest.raises(KeyError):
        store.set_status(9999, "VERIFIED", "x")
    with pytest.raises(KeyError):
        store.entry(9999)


def test_leaderboard_store_rejection_changes_nothing(store: LeaderboardStore) -> None:
    store.submit(valid_bundle("point-pd"))
    before = store.dump()
    for payload in (valid_bundle("point-pd"), b"{", {"schema": "icml26.submission"}):
        with pytest.raises(SubmissionInvalid):
            store.submit(payload)
    assert store.dump() == before


def test_leaderboard_store_concurrent_submits(store: LeaderboardStore) -> None:
    base = valid_bundle("point-pd")
    bundles = [variant(base, i) for i in range(12)]
    jobs = bundles + bundles[:6]  # six sent twice
    outcomes: list[tuple[str, str]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(jobs))

    def submit(b: dict) -> None:
        barrier.wait()
        try:
            store.submit(b)
            res = "ok"
        except SubmissionInvalid as e:
            res = e.kind
        with lock:
            outcomes.append((b["content_hash"], res))

    threads = [threading.Thread(target=submit, args=(b,)) for b in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for b in bundles:
        mine = sorted(res for h, res in outcomes if h == b["content_hash"])
        assert mine.count("ok") == 1 and set(mine) <= {"ok", "duplicate"}, mine
    assert (
        store.counts()["icml26_lb_entries"] == 12 == len({e.content_hash for e in store.entries()})
    )


def test_leaderboard_store_tokens_secret_memo(store: LeaderboardStore) -> None:
    token = store.create_token("bob")
    assert store.authenticate(token) == "bob" and store.authenticate(token + "x") is None
    assert store.authenticate(None) is None and store.authenticate("") is None
    rows = store.dump()["icml26_lb_tokens"]
    assert rows[0][1] == hashlib.sha256(token.encode()).hexdigest() and token not in str(rows)
    with pytest.raises(ValueError, match="active token"):
        store.create_token("bob")
    with pytest.raises(ValueError, match="token name"):
        store.create_token("bad name!")
    store.revoke_token("bob")
    assert store.authenticate(token) is None
    new = store.create_token("bob")  # a revoked name can be reused
    assert store.authenticate(new) == "bob" and store.authenticate(token) is None
    with pytest.raises(KeyError):
        store.revoke_token("nobody")

    secret = store.heldout_secret()
    assert len(secret) == 32 and store.heldout_secret() == secret
    calls = []
    assert store.memo("k", [1, 2], lambda: calls.append(1) or {"v": 3}) == {"v": 3}
    store._memo.clear()  # a new process: read back from the table
    assert store.memo("k", [1, 2], lambda: calls.append(1) or {"v": 4}) == {"v": 3}
    assert calls == [1]


def test_leaderboard_store_description_sql_is_data(store: LeaderboardStore) -> None:
    b = valid_bundle("point-pd")
    b["description"] = "'); DROP TABLE icml26_lb_entries; --"
    eid = store.submit(rehash(b)).entry_ids[0]
    assert store.entry(eid).description == b["description"]
    assert store.counts()["icml26_lb_entries"] == 1


def _two_task_bundle(monkeypatch: pytest.MonkeyPatch) -> dict:
    """A valid bundle on the tutorial task and on a synthetic task registered for this test."""
    from icml26 import benchmarks
    from icml26.protocol import Metric, Task

    benchmarks.get_task("tutorial/point-reach")  # load the registry first
    extra = Task(
        id="lbtest/synthetic",
        version=0,
        family="lbtest",
        env_id="icml26/PointReach-v0",
        run_trial="icml26.benchmarks.generic:run_trial",
        metrics=(Metric("score", "max", 0, 1),),
        primary_metric="score",
        seeds=(0, 1, 2),
    )
    monkeypatch.setitem(benchmarks._tasks, extra.id, extra)
    monkeypatch.setitem(benchmarks._tasks, extra.key, extra)
    b = valid_bundle("point-pd")
    b["tasks"][extra.id] = 0
    template = b["results"][0]
    for s in extra.seeds:
        b["results"].append(
            {
                **template,
                "task_id": extra.id,
                "seed": s,
                "metrics": {"score": 0.5 + s / 10},
                "scores": [],
                "task_hash": getattr(extra, "definition_hash", ""),
            }
        )
    return rehash(b)


def test_leaderboard_store_multi_task_bundle(
    store: LeaderboardStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = store.submit(_two_task_bundle(monkeypatch))
    assert len(r.entry_ids) == 2 and sorted(r.tasks) == [
        "lbtest/synthetic@v0",
        "tutorial/point-reach@v0",
    ]
    syn = store.entries(task="lbtest/synthetic")
    assert len(syn) == 1 and syn[0].values("score") == [0.5, 0.6, 0.7]
    assert {e.submission_id for e in store.entries()} == {r.submission_id}


def test_leaderboard_store_all_or_nothing(
    store: LeaderboardStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure inside the transaction (here: the history table vanishes after the submission
    and the first entry are inserted) leaves no trace of the submission."""
    import sqlalchemy as sa

    import icml26.leaderboards.store as store_mod

    bundle = _two_task_bundle(monkeypatch)
    before = store.dump()
    original = store_mod.events_table
    broken = sa.Table(
        "icml26_lb_no_such_table",
        sa.MetaData(),
        *[sa.Column(c.name, c.type) for c in original.columns],
    )
    monkeypatch.setattr(store_mod, "events_table", broken)
    with pytest.raises(sa.exc.DBAPIError):
        store.submit(bundle)
    monkeypatch.setattr(store_mod, "events_table", original)
    assert store.dump() == before
    store.submit(bundle)  # and it goes through once repaired
    assert store.counts()["icml26_lb_entries"] == 2


def test_rows_signed_when_the_secret_is_at_hand(store: LeaderboardStore) -> None:
    """A submission stored by a process without the held-out secret (a server that does not
    hold it) stays unsigned, and is shown as unverified, until a process with the secret (the
    verifier) changes its status and signs it; a decided entry whose signatures are stripped
    is flagged until the organizer signs the rows again."""
    import sqlalchemy as sa

    from icml26.leaderboards.ranking import rank_all
    from icml26.leaderboards.store import entries_table

    assert not store.secret_file.exists()
    eid = store.submit(valid_bundle("point-pd")).entry_ids[0]
    assert store.entry(eid).integrity == "unsigned" and not store.secret_file.exists()
    (ranking,) = rank_all(store, reps=100)
    assert [r.entry.id for r in ranking.unverified] == [eid] and ranking.flagged == []
    store.set_status(eid, "VERIFIED", "re-run agreed", verification={"agrees": True})
    assert store.secret_file.exists() and store.entry(eid).integrity == "ok"
    with store.engine.begin() as conn:
        conn.execute(sa.update(entries_table).values(row_signature=None))
    (ranking,) = rank_all(store, reps=100)
    assert ranking.verified == [] and [(e.id, e.integrity) for e in ranking.flagged] == [
        (eid, "unsigned")
    ]
    assert store.sign_all() == 1 and store.entry(eid).integrity == "ok"


def test_tests_never_use_the_real_config_directory(tmp_path: Path) -> None:
    """The suite once wrote real secret files into ~/.config/icml26: tests/conftest.py now
    points $XDG_CONFIG_HOME and $ICML26_CONFIG_DIR (inherited by every process a test starts)
    at a temporary directory for the session, and a store's secret lands there."""
    import pwd

    from icml26.leaderboards.store import config_dir

    real = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".config" / "icml26"
    assert "icml26-tests-config-" in str(config_dir()) and real not in config_dir().parents
    assert not str(config_dir()).startswith(str(real))
    store = LeaderboardStore(tmp_path / "lb.db")
    store.heldout_secret()
    assert config_dir() in store.secret_file.parents
