"""The results store: one row per trial, written in its own transaction (SQLAlchemy).

SQLite is the embedded default (a path or ``sqlite:///...``); a PostgreSQL URL
(``postgresql+psycopg://user@host/db``) works the same way. Each finished or failed trial is
committed as soon as it exists, so an interrupted run loses at most the trials in flight, and a
re-run skips every trial already FINISHED.

A row's key is :attr:`TrialResult.key`: ``task@vN~<Task.definition_hash>|agent#<config>|seed=S``.
Rows stored before definition hashes existed keep their old keys (no ``~hash``) and their
results carry ``task_hash == ""``: nothing needs rewriting, they simply never match a trial of
the current code, so a resumed run re-runs them and :func:`icml26.benchmarks.aggregate` leaves
them out (with a count) instead of mixing them with new trials. :meth:`ResultsStore.stale`
lists them.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from icml26._schema import Migration, add_column_if_missing, migrate
from icml26.protocol import TrialResult

DEFAULT_STORE = "results/icml26.db"
_metadata = sa.MetaData()

trials_table = sa.Table(
    "icml26_trials",
    _metadata,
    sa.Column("key", sa.String(512), primary_key=True),
    sa.Column("task_id", sa.String(200), nullable=False, index=True),
    sa.Column("task_version", sa.Integer, nullable=False),
    sa.Column("agent_name", sa.String(300), nullable=False, index=True),
    sa.Column("agent_version", sa.String(100), nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("result_json", sa.Text, nullable=False),
    sa.Column("stored_at", sa.String(40), nullable=False),
    # TrialResult.budget_scale (schema 3); rows stored before it ran at scale 1
    sa.Column("budget_scale", sa.Float, nullable=False, server_default=sa.text("1.0")),
)


def store_url(location: str | os.PathLike[str] | None = None) -> str:
    """Turn a path or URL (or ``$ICML26_STORE``, or the default) into a SQLAlchemy URL."""
    loc = str(location) if location is not None else os.environ.get("ICML26_STORE", DEFAULT_STORE)
    if "://" in loc:
        return loc
    path = Path(loc).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def open_engine(
    url: str, metadata: sa.MetaData, *, foreign_keys: bool = False, threads: bool = False
) -> sa.engine.Engine:
    """A SQLAlchemy engine on ``url`` with ``metadata``'s tables created.

    SQLite gets WAL journaling (readers do not block the writer), a 60 s lock timeout, optional
    foreign-key enforcement, and with ``threads`` a connection usable from any thread (the
    leaderboard server). Creating the tables is retried: on PostgreSQL two processes can race
    between the existence check and CREATE TABLE, and the loser then finds the table.
    """
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {
            "timeout": 60,
            **({"check_same_thread": False} if threads else {}),
        }
    engine = sa.create_engine(url, **kwargs)
    if url.startswith("sqlite"):

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            if foreign_keys:
                cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

    for attempt in range(3):
        try:
            metadata.create_all(engine)
            break
        except sa.exc.DBAPIError:
            if attempt == 2:
                raise
    return engine


def _no_rewrite(conn: sa.Connection) -> None:
    """Nothing to change in the stored rows (the migration records the schema version only)."""


def _add_budget_scale(conn: sa.Connection) -> None:
    """Add the ``budget_scale`` column (1.0 for every existing row: they ran at scale 1)."""
    column = sa.Column("budget_scale", sa.Float, nullable=False, server_default=sa.text("1.0"))
    add_column_if_missing(conn, trials_table.name, column)


# The results store's schema history (icml26._schema): every open brings a store up to the last.
MIGRATIONS = [
    Migration(1, "the first release's trials table", _no_rewrite),
    Migration(
        2,
        "trial keys carry the task's definition hash; rows stored before have none and "
        "are never reused by a resumed run (kept for the record)",
        _no_rewrite,
    ),
    Migration(
        3,
        "a budget_scale column (TrialResult.budget_scale; keys of trials at a scale other "
        "than 1 end in |x<scale>); existing rows ran at scale 1",
        _add_budget_scale,
    ),
]


class ResultsStore:
    """Trial results keyed by :attr:`TrialResult.key` (task@version | agent#config | seed)."""

    def __init__(self, location: str | os.PathLike[str] | None = None) -> None:
        self.url = store_url(location)
        self.engine = open_engine(self.url, _metadata)
        self.schema_version = migrate(self.engine, "results", MIGRATIONS)

    def __repr__(self) -> str:
        return f"ResultsStore({self.engine.url.render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ writes
    def put(self, result: TrialResult) -> None:
        """Store (or replace) one trial atomically."""
        row = {
            "key": result.key,
            "task_id": result.task_id,
            "task_version": result.task_version,
            "agent_name": result.agent_name,
            "agent_version": result.agent_version,
            "seed": int(result.seed),
            "status": result.status,
            "result_json": result.to_json(),
            "stored_at": _dt.datetime.now(_dt.UTC).isoformat(),
            "budget_scale": float(result.budget_scale),
        }
        dialect = {"postgresql": postgresql, "sqlite": sqlite}.get(self.engine.dialect.name)
        with self.engine.begin() as conn:
            if dialect is not None:
                # one atomic upsert: concurrent writers of the same key (two drivers on one
                # PostgreSQL store) cannot collide, as delete-then-insert can under READ COMMITTED
                stmt = dialect.insert(trials_table).values(**row)
                conn.execute(
                    stmt.on_conflict_do_update(
                        index_elements=[trials_table.c.key],
                        set_={k: stmt.excluded[k] for k in row if k != "key"},
                    )
                )
            else:
                conn.execute(sa.delete(trials_table).where(trials_table.c.key == row["key"]))
                conn.execute(sa.insert(trials_table).values(**row))

    def delete(self, keys: Iterable[str]) -> int:
        keys = list(keys)
        if not keys:
            return 0
        with self.engine.begin() as conn:
            return int(
                conn.execute(sa.delete(trials_table).where(trials_table.c.key.in_(keys))).rowcount
            )

    # ------------------------------------------------------------------ reads
    def finished_keys(self) -> set[str]:
        with self.engine.connect() as conn:
            q = sa.select(trials_table.c.key).where(trials_table.c.status == "FINISHED")
            return {r[0] for r in conn.execute(q)}

    def get(self, key: str) -> TrialResult | None:
        with self.engine.connect() as conn:
            q = sa.select(trials_table.c.result_json).where(trials_table.c.key == key)
            row = conn.execute(q).first()
        return None if row is None else TrialResult.from_json(row[0])

    def results(
        self,
        task_id: str | None = None,
        agent_name: str | None = None,
        status: str | None = None,
        budget_scale: float | None = None,
    ) -> list[TrialResult]:
        """Stored trials (optionally of one task, agent, status or budget scale), ordered by
        task, agent, budget scale and seed."""
        q = sa.select(trials_table.c.result_json).order_by(
            trials_table.c.task_id,
            trials_table.c.agent_name,
            trials_table.c.budget_scale,
            trials_table.c.seed,
        )
        if budget_scale is not None:
            q = q.where(trials_table.c.budget_scale == float(budget_scale))
        if task_id is not None:
            q = q.where(trials_table.c.task_id == task_id)
        if agent_name is not None:
            q = q.where(trials_table.c.agent_name == agent_name)
        if status is not None:
            q = q.where(trials_table.c.status == status)
        with self.engine.connect() as conn:
            return [TrialResult.from_json(r[0]) for r in conn.execute(q)]

    def stale(self, current_hash: Any) -> list[TrialResult]:
        """Stored trials whose definition hash is not ``current_hash(task_id, task_version)``
        (legacy rows without a hash included); ``current_hash`` returns "" for unknown tasks."""
        return [
            r
            for r in self.results()
            if not r.task_hash or r.task_hash != current_hash(r.task_id, r.task_version)
        ]

    def count(self, status: str | None = None) -> int:
        q = sa.select(sa.func.count()).select_from(trials_table)
        if status is not None:
            q = q.where(trials_table.c.status == status)
        with self.engine.connect() as conn:
            return int(conn.execute(q).scalar_one())


def open_store(store: ResultsStore | str | os.PathLike[str] | None) -> ResultsStore:
    return store if isinstance(store, ResultsStore) else ResultsStore(store)
