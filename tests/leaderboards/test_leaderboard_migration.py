"""Schema versions of the leaderboard store: a store file written by the code before versions
existed (its tables created here with raw SQL, as that code created them) opens, is migrated to
the current version in place, and keeps every submission, entry, event and token."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from leaderboard_helpers import valid_bundle

from icml26._schema import VERSION_TABLE, schema_version
from icml26.leaderboards.store import SECRET_ENV, LeaderboardStore

# The tables as the pre-versioning store created them (SQLAlchemy's SQLite DDL of that code).
OLD_SCHEMA = """
CREATE TABLE icml26_lb_settings ("key" VARCHAR(64) NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"));
CREATE TABLE icml26_lb_stats ("key" VARCHAR(80) NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"));
CREATE TABLE icml26_lb_submissions (
    id INTEGER NOT NULL, content_hash VARCHAR(80) NOT NULL, name VARCHAR(200) NOT NULL,
    description TEXT NOT NULL, authors VARCHAR(400) NOT NULL, url VARCHAR(400) NOT NULL,
    agent_json TEXT NOT NULL, packages_json TEXT NOT NULL, git_commit VARCHAR(100),
    created_at VARCHAR(40) NOT NULL, submitted_at VARCHAR(40) NOT NULL, submitter VARCHAR(100) NOT NULL,
    bundle_json TEXT NOT NULL, PRIMARY KEY (id), UNIQUE (content_hash));
CREATE TABLE icml26_lb_tokens (
    name VARCHAR(64) NOT NULL, token_sha256 VARCHAR(64) NOT NULL, created_at VARCHAR(40) NOT NULL,
    revoked_at VARCHAR(40), PRIMARY KEY (name), UNIQUE (token_sha256));
CREATE TABLE icml26_lb_entries (
    id INTEGER NOT NULL, submission_id INTEGER NOT NULL, task_id VARCHAR(300) NOT NULL,
    task_version INTEGER NOT NULL, fingerprint VARCHAR(80) NOT NULL, status VARCHAR(16) NOT NULL,
    reason TEXT NOT NULL, updated_at VARCHAR(40) NOT NULL, results_json TEXT NOT NULL,
    verification_json TEXT, verification_trials_json TEXT, PRIMARY KEY (id),
    FOREIGN KEY(submission_id) REFERENCES icml26_lb_submissions (id), UNIQUE (fingerprint));
CREATE INDEX ix_icml26_lb_entries_task_id ON icml26_lb_entries (task_id);
CREATE INDEX ix_icml26_lb_entries_submission_id ON icml26_lb_entries (submission_id);
CREATE INDEX ix_icml26_lb_entries_status ON icml26_lb_entries (status);
CREATE TABLE icml26_lb_events (
    id INTEGER NOT NULL, entry_id INTEGER NOT NULL, at VARCHAR(40) NOT NULL, status VARCHAR(16) NOT NULL,
    reason TEXT NOT NULL, actor VARCHAR(100) NOT NULL, PRIMARY KEY (id),
    FOREIGN KEY(entry_id) REFERENCES icml26_lb_entries (id));
CREATE INDEX ix_icml26_lb_events_entry_id ON icml26_lb_events (entry_id);
"""

OLD_SECRET = bytes(range(100, 132))


@pytest.fixture(autouse=True)
def _no_env_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)


# columns added by schema version 3 (at the end of their tables)
V3_COLUMNS = {"icml26_lb_submissions": 3, "icml26_lb_entries": 2}


def _old_rows(rows: dict[str, list[tuple[object, ...]]]) -> dict[str, list[tuple[object, ...]]]:
    """A current store's rows without the columns the old tables did not have."""
    return {
        t: [r[: len(r) - V3_COLUMNS[t]] if t in V3_COLUMNS else r for r in rs]
        for t, rs in rows.items()
    }


def _reference(tmp_path: Path) -> tuple[LeaderboardStore, str]:
    """A current store with a submission, a status change and a token: the rows to carry over."""
    ref = LeaderboardStore(tmp_path / "ref.db", secret_file=tmp_path / "ref.key")
    (eid,) = ref.submit(valid_bundle("point-pd"), submitter="alice").entry_ids
    ref.set_status(eid, "VERIFIED", "re-run agreed", verification={"agrees": True})
    return ref, ref.create_token("bob")


def _old_store(path: Path, rows: dict[str, list[tuple[object, ...]]], secret: bytes | None) -> Path:
    """``rows`` written into a store file with the old tables and no version table."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")  # as the old store's engine set it
    db.executescript(OLD_SCHEMA)
    for table, values in rows.items():
        for r in values:
            db.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(r))})", r)
    if secret is not None:
        db.execute("INSERT INTO icml26_lb_settings VALUES ('heldout_secret', ?)", (secret.hex(),))
    db.commit()
    db.close()
    return path


def test_old_store_is_migrated_with_its_entries_intact(tmp_path: Path) -> None:
    ref, token = _reference(tmp_path)
    rows = _old_rows(ref.dump())
    assert rows["icml26_lb_entries"] and rows["icml26_lb_events"] and rows["icml26_lb_tokens"]
    path = _old_store(tmp_path / "old.db", rows, OLD_SECRET)
    engine = sa.create_engine(f"sqlite:///{path}")
    assert (
        not sa.inspect(engine).has_table(VERSION_TABLE)
        and schema_version(engine, "leaderboard") == 0
    )

    key = tmp_path / "old.key"
    store = LeaderboardStore(path, secret_file=key)
    assert store.schema_version == 3 == schema_version(engine, "leaderboard")
    assert _old_rows(store.dump()) == rows  # every row as it was; the secret row gone
    # the new columns: name keys and code ids filled in, every row signed with the (moved)
    # secret, which was at hand
    assert [e.public_dict() for e in store.entries(with_events=True)] == [
        e.public_dict() for e in ref.entries(with_events=True)
    ]
    assert [e.integrity for e in store.entries()] == ["ok"]
    sub = store.dump()["icml26_lb_submissions"][0]
    assert sub[-3:-1] == ("point-pd", "requirement:icml26-gym==0.1.0")
    assert store.entry(1).status == "VERIFIED" and store.authenticate(token) == "bob"
    assert key.read_text().strip() == OLD_SECRET.hex() and store.heldout_secret() == OLD_SECRET
    # the store works on: a second submission lands next to the migrated one
    store.submit(valid_bundle("point-pd", kwargs={"kp": 2.5}), submitter="carol")
    assert [e.submitter for e in store.entries()] == ["alice", "carol"]
    store.close()

    # idempotent: opening again changes nothing
    before = LeaderboardStore(path, secret_file=key).dump()
    again = LeaderboardStore(path, secret_file=key)
    assert (
        again.schema_version == 3
        and again.dump() == before
        and again.heldout_secret() == OLD_SECRET
    )


def test_old_store_with_a_conflicting_secret_opens_but_refuses_to_verify(tmp_path: Path) -> None:
    key = tmp_path / "organizer.key"
    key.write_text(bytes(32).hex() + "\n")
    key.chmod(0o600)
    path = _old_store(tmp_path / "old.db", {}, OLD_SECRET)
    store = LeaderboardStore(path, secret_file=key)
    assert store.schema_version == 3
    assert store.dump()["icml26_lb_settings"] == [
        ("heldout_secret", OLD_SECRET.hex())
    ]  # kept, not lost
    with pytest.raises(RuntimeError, match="differs"):
        store.heldout_secret()


def test_read_only_old_store_opens_unmigrated_with_a_warning(tmp_path: Path) -> None:
    ref, _ = _reference(tmp_path)
    rows = _old_rows(ref.dump())
    path = _old_store(tmp_path / "old.db", rows, None)
    with pytest.warns(UserWarning, match="read-only: left at schema version 0"):
        ro = LeaderboardStore(f"sqlite:///file:{path}?mode=ro&uri=true", secret_file=tmp_path / "k")
    assert ro.schema_version == 0 and ro.dump() == rows

    def unsigned(d: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in d.items() if k != "integrity"}

    assert [unsigned(e.public_dict()) for e in ro.entries()] == [
        unsigned(e.public_dict()) for e in ref.entries()
    ]
    # its rows carry no signature: shown, but flagged instead of ranked
    assert [e.integrity for e in ro.entries()] == ["unsigned"]


def test_store_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    store = LeaderboardStore(tmp_path / "lb.db", secret_file=tmp_path / "k")
    with store.engine.begin() as conn:
        conn.execute(
            sa.text(f"UPDATE {VERSION_TABLE} SET version = 99 WHERE component = 'leaderboard'")
        )
    store.close()
    with pytest.raises(RuntimeError, match="schema version 99, newer than this code's 3"):
        LeaderboardStore(tmp_path / "lb.db", secret_file=tmp_path / "k")
