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
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from icml26._schema import Migration, add_column_if_missing, migrate, schema_version
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


class StoreError(ValueError):
    """A store that cannot be opened as asked: missing (when only reading), a directory, a file
    that is not an SQLite database or is damaged, a database without the expected tables, or a
    URL whose driver is not installed. The message is one line naming the location and what was
    expected (the ``icml26`` command prints it and exits with status 2)."""


_SQLITE_MAGIC = b"SQLite format 3\x00"
# database URL dialect -> the extra of this package that installs its driver
_DRIVER_EXTRAS = {"postgresql": "postgres"}


def store_url(location: str | os.PathLike[str] | None = None, *, create: bool = True) -> str:
    """Turn a path or URL (or ``$ICML26_STORE``, or the default) into a SQLAlchemy URL.

    A path's parent directories are created only with ``create`` (a reader creates nothing)."""
    loc = str(location) if location is not None else os.environ.get("ICML26_STORE", DEFAULT_STORE)
    if "://" in loc:
        return loc
    path = Path(loc).expanduser().resolve()
    if create and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def describe_url(url: str) -> str:
    """How messages name a store: the file path for SQLite, the URL without its password."""
    try:
        u = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return url
    if u.get_backend_name() == "sqlite" and u.database not in (None, "", ":memory:"):
        return str(u.database)
    return u.render_as_string(hide_password=True)


def _sqlite_path(url: str) -> Path | None:
    u = sa.engine.make_url(url)
    if u.get_backend_name() != "sqlite" or u.database in (None, "", ":memory:"):
        return None
    db = str(u.database)
    return None if db.startswith("file:") else Path(db)


def _check_sqlite_file(path: Path, what: str, create: bool) -> None:
    """Refuse a path that cannot be an SQLite store before SQLite sees it (it would create a
    missing file, and report a text file or a truncated database only on the first query)."""
    hint = f"expected an SQLite file of an icml26 {what} (or a database URL)"
    if path.is_dir():
        raise StoreError(f"{what} {path} is a directory; {hint}, e.g. {path / 'icml26.db'}")
    if not path.exists():
        if create:
            return
        raise StoreError(f"no {what} at {path} (no such file); {hint}, as `icml26 run` writes")
    try:
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as e:
        raise StoreError(f"cannot read {what} {path}: {e.strerror or e}; {hint}") from None
    size = path.stat().st_size
    if not head:
        if create:
            return  # SQLite treats an empty file as an empty database
        raise StoreError(f"{what} {path} is an empty file; {hint}")
    if not head.startswith(_SQLITE_MAGIC):
        kind = "a text file" if _looks_like_text(head) else "not an SQLite database"
        raise StoreError(f"{what} {path} is {kind} ({size} bytes); {hint}")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    # the header's page count is valid when its "version-valid-for" equals the change counter
    pages = int.from_bytes(head[28:32], "big") if head[92:96] == head[24:28] else 0
    if len(head) < 100 or (pages and size < page_size * pages):
        raise StoreError(
            f"{what} {path} is a truncated SQLite database ({size} bytes, its header says "
            f"{page_size * pages}); {hint}"
        )


def _looks_like_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\n\r\t" for c in text)


def _create_engine(url: str, what: str, **kwargs: Any) -> sa.engine.Engine:
    """``sqlalchemy.create_engine`` with one-line errors for a bad URL or a missing driver."""
    shown = describe_url(url)
    try:
        return sa.create_engine(url, **kwargs)
    except sa.exc.NoSuchModuleError:
        scheme = url.partition("://")[0]
        raise StoreError(
            f"{what} {shown}: no database driver for {scheme!r}; expected a path to an SQLite "
            "file, sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        ) from None
    except sa.exc.ArgumentError as e:
        raise StoreError(f"{what} {shown}: not a database URL ({e})") from None
    except ImportError as e:
        backend = url.partition("://")[0].partition("+")[0]
        extra = _DRIVER_EXTRAS.get(backend)
        fix = f"pip install 'icml26-gym[{extra}]'" if extra else f"install {e.name or 'it'}"
        raise StoreError(
            f"{what} {shown} needs the database driver {e.name!r}, which is not installed: {fix}"
        ) from None


def open_engine(
    url: str,
    metadata: sa.MetaData,
    *,
    foreign_keys: bool = False,
    threads: bool = False,
    create: bool = True,
    what: str = "store",
) -> sa.engine.Engine:
    """A SQLAlchemy engine on ``url`` with ``metadata``'s tables created.

    SQLite gets WAL journaling (readers do not block the writer), a 60 s lock timeout, optional
    foreign-key enforcement, and with ``threads`` a connection usable from any thread (the
    leaderboard server). Creating the tables is retried: on PostgreSQL two processes can race
    between the existence check and CREATE TABLE, and the loser then finds the table.

    With ``create=False`` (a reader) nothing is written: a missing SQLite file is a
    :class:`StoreError` instead of a new database, and neither tables nor WAL mode are set up.
    Any file that is not an SQLite database, a damaged one, an unknown URL scheme or a missing
    driver is a :class:`StoreError` naming ``what`` and the location.
    """
    kwargs: dict[str, Any] = {}
    path = _sqlite_path(url) if url.startswith("sqlite") else None
    if path is not None:
        _check_sqlite_file(path, what, create)
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {
            "timeout": 60,
            **({"check_same_thread": False} if threads else {}),
        }
    engine = _create_engine(url, what, **kwargs)
    if url.startswith("sqlite"):

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _: Any) -> None:
            cur = dbapi_conn.cursor()
            if create:  # WAL mode is a write; a reader leaves the file as it is
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
            if foreign_keys:
                cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

    if not create:
        return engine
    attempt, deadline = 0, time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            metadata.create_all(engine)
            break
        except sa.exc.DBAPIError as e:
            lost_race = "already exists" in str(e.orig).lower()  # another opener created it
            if locked(e) and time.monotonic() < deadline:
                time.sleep(min(0.05 * 2**attempt, 1.0))
                attempt += 1
                continue
            if _damaged(e) or (isinstance(e, sa.exc.OperationalError) and not lost_race):
                engine.dispose()
                raise open_error(e, what, url) from None
            attempt += 1
            if attempt >= 3:
                raise
    return engine


LOCK_WAIT_S = 60.0  # how long an opener waits out another's lock (SQLite's busy timeout too)


def locked(e: sa.exc.DBAPIError) -> bool:
    """SQLite's SQLITE_BUSY: another connection holds the lock. Its busy handler does not wait in
    every case (a read transaction that must become a write one, WAL set-up on a new file), so
    openers of a brand-new store retry instead of failing at once."""
    return "database is locked" in str(e.orig).lower()


def _damaged(e: sa.exc.DBAPIError) -> bool:
    """SQLite's words for a file that is not (or no longer) a database."""
    text = str(e.orig).lower()
    return "malformed" in text or "not a database" in text or "file is encrypted" in text


def open_error(e: sa.exc.DBAPIError, what: str, url: str) -> StoreError:
    """The one-line StoreError for a database error while opening a store: a damaged file, or
    a server that cannot be reached, a database that does not exist, a lock never released."""
    reason = " ".join(str(e.orig).split()) or type(e.orig).__name__
    if _damaged(e):
        return StoreError(
            f"{what} {describe_url(url)} is a damaged database ({reason}); expected an icml26 {what}"
        )
    return StoreError(f"cannot open {what} {describe_url(url)}: {reason}")


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

    def __init__(
        self, location: str | os.PathLike[str] | None = None, *, create: bool = True
    ) -> None:
        """Open (with ``create``: create if missing, and migrate) the store at ``location``.

        ``create=False`` is for readers (``icml26 results``): it writes nothing, and a store that
        is missing, not an SQLite database, damaged, or lacks the results table raises
        :class:`StoreError` (one line naming the location and what was expected)."""
        self.url = store_url(location, create=create)
        self.location = describe_url(self.url)
        self.engine = open_engine(self.url, _metadata, create=create, what="results store")
        try:
            self.schema_version = self._open_checks(create)
        except sa.exc.DBAPIError as e:
            self.engine.dispose()
            if not (_damaged(e) or isinstance(e, sa.exc.OperationalError)):
                raise
            raise open_error(e, "results store", self.url) from None
        except StoreError:
            self.engine.dispose()
            raise

    def _open_checks(self, create: bool) -> int:
        """The integrity check and migration (a writer) or the readability check (a reader);
        a lock held by another opener of a new store is waited out (up to LOCK_WAIT_S)."""
        attempt, deadline = 0, time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                if create:
                    self._quick_check()
                    return migrate(self.engine, "results", MIGRATIONS)
                return self._check_readable()
            except sa.exc.OperationalError as e:
                if not locked(e) or time.monotonic() >= deadline:
                    raise
                time.sleep(min(0.05 * 2**attempt, 1.0))
                attempt += 1

    def _quick_check(self) -> None:
        """SQLite: StoreError for a damaged page, which would otherwise surface as a traceback
        on the first query that reads it (the check reads every page once: about as costly as
        reading the results)."""
        if self.engine.dialect.name != "sqlite":
            return
        with self.engine.connect() as conn:
            problems = [r[0] for r in conn.exec_driver_sql("PRAGMA quick_check(1)")]
        if problems != ["ok"]:
            detail = " ".join(" ".join(problems).split())
            raise StoreError(
                f"results store {self.location} is a damaged SQLite database ({detail}); "
                "expected an intact icml26 results store"
            )

    def _check_readable(self) -> int:
        """The schema version of a store opened for reading; StoreError unless it holds the
        results table at a version this code reads."""
        tables = sa.inspect(self.engine).get_table_names()
        if trials_table.name not in tables:
            found = f"its tables: {', '.join(sorted(tables))}" if tables else "it has no tables"
            raise StoreError(
                f"{self.location} is not an icml26 results store (no {trials_table.name} table; "
                f"{found}); expected a store written by `icml26 run` or `icml26 bench`"
            )
        self._quick_check()
        version = schema_version(self.engine, "results")
        if version > len(MIGRATIONS):
            raise StoreError(
                f"results store {self.location} has schema version {version}, newer than this "
                f"code's {len(MIGRATIONS)}: upgrade icml26 to read it"
            )
        return version

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


def open_store(
    store: ResultsStore | str | os.PathLike[str] | None, *, create: bool = True
) -> ResultsStore:
    """``store`` itself, or the store at that location (see :class:`ResultsStore`)."""
    return store if isinstance(store, ResultsStore) else ResultsStore(store, create=create)
