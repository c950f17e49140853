"""icml26._schema: ordered, transactional, idempotent migrations with a version per component."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from icml26._schema import Migration, add_column_if_missing, migrate, schema_version


def _engine(tmp_path: Path) -> sa.Engine:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 's.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT)"))
        conn.execute(sa.text("INSERT INTO t (id, a) VALUES (1, 'x'), (2, 'y')"))
    return engine


def _columns(engine: sa.Engine) -> list[str]:
    return [c["name"] for c in sa.inspect(engine).get_columns("t")]


def test_migrations_run_in_order_once_per_version(tmp_path: Path) -> None:
    engine, ran = _engine(tmp_path), []

    def add_b(conn: sa.Connection) -> None:
        ran.append(1)
        add_column_if_missing(conn, "t", sa.Column("b", sa.Integer, nullable=True))

    def fill_b(conn: sa.Connection) -> None:
        ran.append(2)
        conn.execute(sa.text("UPDATE t SET b = id * 10 WHERE b IS NULL"))

    steps = [Migration(1, "add b", add_b), Migration(2, "fill b", fill_b)]
    assert schema_version(engine, "demo") == 0
    assert migrate(engine, "demo", steps[:1]) == 1 and ran == [1]
    assert migrate(engine, "demo", steps) == 2 and ran == [1, 2]  # only the new step
    assert migrate(engine, "demo", steps) == 2 and ran == [1, 2]  # nothing left to do
    assert schema_version(engine, "demo") == 2 and schema_version(engine, "other") == 0
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT id, a, b FROM t ORDER BY id")).all() == [
            (1, "x", 10),
            (2, "y", 20),
        ]
    with pytest.raises(RuntimeError, match="schema version 2, newer than this code's 1"):
        migrate(engine, "demo", steps[:1])


def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    engine = _engine(tmp_path)

    def add_then_fail(conn: sa.Connection) -> None:
        add_column_if_missing(conn, "t", sa.Column("b", sa.Integer, nullable=True))
        conn.execute(sa.text("DELETE FROM t"))
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        migrate(engine, "demo", [Migration(1, "bad", add_then_fail)])
    assert schema_version(engine, "demo") == 0 and _columns(engine) == ["id", "a"]
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM t")).scalar_one() == 2


def test_add_column_if_missing_is_idempotent(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    col = sa.Column("c", sa.String(8), nullable=False, server_default="z")
    with engine.begin() as conn:
        assert add_column_if_missing(conn, "t", col) is True
        assert add_column_if_missing(conn, "t", col) is False
    assert _columns(engine) == ["id", "a", "c"]
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT c FROM t")).scalars().all() == ["z", "z"]


@pytest.mark.parametrize("versions", [[2], [1, 3], [1, 1], [0, 1]])
def test_migrations_must_be_numbered_from_one(tmp_path: Path, versions: list[int]) -> None:
    with pytest.raises(ValueError, match="numbered 1, 2"):
        migrate(_engine(tmp_path), "demo", [Migration(v, "x", lambda conn: None) for v in versions])


def test_concurrent_openers_migrate_once(tmp_path: Path) -> None:
    import threading

    _engine(tmp_path).dispose()
    ran: list[int] = []
    lock = threading.Lock()

    def count(conn: sa.Connection) -> None:
        with lock:
            ran.append(1)
        add_column_if_missing(conn, "t", sa.Column("b", sa.Integer, nullable=True))

    steps = [Migration(1, "count", count)]
    barrier = threading.Barrier(4)
    out: list[object] = []

    def opener() -> None:
        engine = sa.create_engine(f"sqlite:///{tmp_path / 's.db'}", connect_args={"timeout": 60})
        barrier.wait()
        try:
            out.append(migrate(engine, "demo", steps))
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            out.append(repr(e))
        engine.dispose()

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [1, 1, 1, 1] and ran == [1]


def test_results_store_records_its_schema_version(tmp_path) -> None:
    from icml26._schema import schema_version
    from icml26.benchmarks.store import MIGRATIONS, ResultsStore

    st = ResultsStore(tmp_path / "r.db")
    assert st.schema_version == len(MIGRATIONS) == schema_version(st.engine, "results")
    st.close()
    again = ResultsStore(tmp_path / "r.db")  # a second open changes nothing
    assert again.schema_version == len(MIGRATIONS)
    again.close()
