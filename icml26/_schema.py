"""Schema versions and migrations for the SQL stores (SQLAlchemy Core, no Alembic).

Each store (a ``component``: ``"leaderboard"``, ``"results"``) keeps its schema version in one
shared table, ``icml26_schema_version`` (one row per component, so two stores can share a
PostgreSQL database). :func:`migrate` runs, on open and in ONE transaction, every
:class:`Migration` newer than the recorded version, in order, then records the newest; a
failure leaves the database as it was. A store that predates versioning has no row: it is
version 0, and every migration runs, so each must be idempotent (a no-op when its change is
already there, as on a store just created from the current table definitions).
"""

from __future__ import annotations

import datetime as _dt
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

__all__ = ["Migration", "VERSION_TABLE", "migrate", "schema_version", "add_column_if_missing"]

VERSION_TABLE = "icml26_schema_version"

_md = sa.MetaData()
version_table = sa.Table(
    VERSION_TABLE,
    _md,
    sa.Column("component", sa.String(64), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
)


@dataclass(frozen=True)
class Migration:
    """Upgrade from ``version - 1`` to ``version``; ``upgrade(conn)`` runs inside the transaction."""

    version: int
    description: str
    upgrade: Callable[[sa.Connection], object]


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _check(migrations: Sequence[Migration]) -> int:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migrations must be numbered 1, 2, ... in order, got versions {versions}")
    return len(versions)


def schema_version(engine: sa.Engine, component: str) -> int:
    """The recorded schema version of ``component`` (0: none recorded, a store from before versions)."""
    if not sa.inspect(engine).has_table(VERSION_TABLE):
        return 0
    with engine.connect() as conn:
        row = conn.execute(
            sa.select(version_table.c.version).where(version_table.c.component == component)
        ).first()
    return 0 if row is None else int(row[0])


def migrate(engine: sa.Engine, component: str, migrations: Sequence[Migration]) -> int:
    """Bring ``component``'s schema up to the last of ``migrations`` (numbered 1, 2, ...) and
    return that version. Raises RuntimeError for a database newer than ``migrations``."""
    latest = _check(migrations)
    current = schema_version(engine, component)
    if current == latest:  # the usual case: no write lock taken
        return latest
    if current > latest:
        raise _newer(component, current, latest)
    for attempt in range(3):  # PostgreSQL: two openers may race to create the table or the row
        try:
            _md.create_all(engine)
            with engine.begin() as conn:
                return _migrate_in(conn, component, migrations, latest)
        except sa.exc.DBAPIError as e:
            if _read_only(e):
                warnings.warn(
                    f"the {component} store at {engine.url.render_as_string(hide_password=True)} "
                    f"is read-only: left at schema version {current} (this code's is {latest}); "
                    "open it writable once to migrate it",
                    stacklevel=2,
                )
                return current
            if attempt == 2 or not _lost_race(e):
                raise
    raise AssertionError("unreachable")


def _newer(component: str, current: int, latest: int) -> RuntimeError:
    return RuntimeError(
        f"the {component} store has schema version {current}, newer than this "
        f"code's {latest}: upgrade icml26 to open it"
    )


def _lost_race(e: sa.exc.DBAPIError) -> bool:
    """Another opener created the version table or row first (retrying then finds it)."""
    return isinstance(e, sa.exc.IntegrityError) or "already exists" in str(e.orig).lower()


def _read_only(e: sa.exc.DBAPIError) -> bool:
    """A write refused because the database is read-only (SQLite ``mode=ro``, a read-only file,
    a PostgreSQL read-only transaction or hot standby)."""
    text = str(e.orig).lower()
    return "readonly" in text or "read-only" in text


def _migrate_in(
    conn: sa.Connection, component: str, migrations: Sequence[Migration], latest: int
) -> int:
    t = version_table
    # Write first: SQLite takes its write lock and PostgreSQL a row lock before anything is
    # read, so concurrent openers migrate one after the other (the second finds nothing to do).
    found = conn.execute(
        sa.update(t).where(t.c.component == component).values(version=t.c.version)
    ).rowcount
    if not found:
        conn.execute(sa.insert(t).values(component=component, version=0, updated_at=_now()))
    current = int(
        conn.execute(sa.select(t.c.version).where(t.c.component == component)).scalar_one()
    )
    if current > latest:  # upgraded meanwhile by newer code
        raise _newer(component, current, latest)
    if current == latest:
        return current
    for m in migrations[current:]:
        m.upgrade(conn)
    conn.execute(
        sa.update(t).where(t.c.component == component).values(version=latest, updated_at=_now())
    )
    return latest


def add_column_if_missing(conn: sa.Connection, table: str, column: sa.Column) -> bool:
    """``ALTER TABLE table ADD COLUMN column`` unless it is there (for idempotent migrations);
    the column must be nullable or have a server default. True when it was added."""
    if column.name in {c["name"] for c in sa.inspect(conn).get_columns(table)}:
        return False
    ddl = sa.schema.CreateColumn(column).compile(dialect=conn.dialect)
    conn.execute(
        sa.text(f"ALTER TABLE {conn.dialect.identifier_preparer.quote(table)} ADD COLUMN {ddl}")
    )
    return True
