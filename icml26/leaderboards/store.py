"""The leaderboard store: submissions, entries with statuses, their history, tokens, settings.

SQLAlchemy, like :mod:`icml26.benchmarks.store`: a path or ``sqlite:///...`` (default
``$ICML26_LEADERBOARD`` or ``results/leaderboard.db``) or a PostgreSQL URL
(``postgresql+psycopg://user@host/db``). A submission is validated first
(:func:`~icml26.leaderboards.validate.validate_bundle`), then stored in ONE transaction: the
submission row, one entry per task (status PENDING) and their first history events, or nothing
at all. Duplicates are refused by unique constraints (bundle hash; per-entry fingerprint of
task, agent, configuration and per-seed metrics), so two simultaneous identical submissions
store exactly one.

Statuses (CARLA-leaderboard style):

* ``PENDING``  -- validated and stored, not yet re-run; shown apart from the ranking.
* ``VERIFIED`` -- the re-run on held-out seeds agreed with the submitted primary metric within
  the task's tolerance; ranked.
* ``REJECTED`` -- the re-run completed but disagreed beyond the tolerance.
* ``FAILED``   -- the re-run could not be completed (agent not importable, trials crashed).

Each status change is an event with its reason; the entry keeps the latest reason.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlalchemy as sa

from icml26.benchmarks.store import open_engine, store_url
from icml26.leaderboards.bundle import canonical_json
from icml26.leaderboards.validate import (
    FieldError,
    SubmissionInvalid,
    ValidatedBundle,
    validate_bundle,
)
from icml26.protocol import TrialResult, config_hash

__all__ = ["EntryStatus", "STATUSES", "Entry", "Receipt", "LeaderboardStore", "open_leaderboard",
           "DEFAULT_LEADERBOARD", "SECRET_ENV"]

EntryStatus = Literal["PENDING", "VERIFIED", "REJECTED", "FAILED"]
STATUSES: tuple[str, ...] = ("PENDING", "VERIFIED", "REJECTED", "FAILED")
DEFAULT_LEADERBOARD = "results/leaderboard.db"
SECRET_ENV = "ICML26_LEADERBOARD_SECRET"
_TOKEN_NAME_RE = re.compile(r"[A-Za-z0-9_.@-]{1,64}")

_md = sa.MetaData()

submissions_table = sa.Table(
    "icml26_lb_submissions", _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("content_hash", sa.String(80), nullable=False, unique=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("description", sa.Text, nullable=False),
    sa.Column("authors", sa.String(400), nullable=False),
    sa.Column("url", sa.String(400), nullable=False),
    sa.Column("agent_json", sa.Text, nullable=False),
    sa.Column("packages_json", sa.Text, nullable=False),
    sa.Column("git_commit", sa.String(100), nullable=True),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("submitted_at", sa.String(40), nullable=False),
    sa.Column("submitter", sa.String(100), nullable=False),
    sa.Column("bundle_json", sa.Text, nullable=False),
)

entries_table = sa.Table(
    "icml26_lb_entries", _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("submission_id", sa.Integer, sa.ForeignKey("icml26_lb_submissions.id"), nullable=False,
              index=True),
    sa.Column("task_id", sa.String(300), nullable=False, index=True),
    sa.Column("task_version", sa.Integer, nullable=False),
    sa.Column("fingerprint", sa.String(80), nullable=False, unique=True),
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("updated_at", sa.String(40), nullable=False),
    sa.Column("results_json", sa.Text, nullable=False),
    # public summary of the re-run (no held-out seeds) and, kept private, the re-run trials
    sa.Column("verification_json", sa.Text, nullable=True),
    sa.Column("verification_trials_json", sa.Text, nullable=True),
)

events_table = sa.Table(
    "icml26_lb_events", _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("entry_id", sa.Integer, sa.ForeignKey("icml26_lb_entries.id"), nullable=False, index=True),
    sa.Column("at", sa.String(40), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("actor", sa.String(100), nullable=False),
)

tokens_table = sa.Table(
    "icml26_lb_tokens", _md,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("revoked_at", sa.String(40), nullable=True),
)

settings_table = sa.Table(
    "icml26_lb_settings", _md,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# Memoized statistics (bootstrap intervals, probabilities of improvement), keyed by a hash of
# the exact inputs, so re-rendering a large board recomputes only what a new entry changed.
stats_table = sa.Table(
    "icml26_lb_stats", _md,
    sa.Column("key", sa.String(80), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

ALL_TABLES = (submissions_table, entries_table, events_table, tokens_table, settings_table)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@dataclass
class Entry:
    """One submission's result on one task version, with its status and provenance."""

    id: int
    submission_id: int
    task_id: str
    task_version: int
    status: str
    reason: str
    updated_at: str
    name: str
    description: str
    authors: str
    url: str
    agent: dict[str, Any]
    packages: dict[str, str]
    git_commit: str | None
    content_hash: str
    created_at: str
    submitted_at: str
    submitter: str
    trials: list[TrialResult]
    verification: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def task_key(self) -> str:
        return f"{self.task_id}@v{self.task_version}"

    @property
    def agent_key(self) -> str:
        """Identity of the agent configuration: entry point and kwargs hash."""
        return f"{self.agent.get('entry_point')}#{config_hash(self.agent.get('kwargs', {}))}"

    def values(self, metric: str) -> list[float]:
        """Per-seed values of ``metric`` (seed order)."""
        return [float(t.metrics[metric]) for t in sorted(self.trials, key=lambda t: t.seed)]

    @property
    def seeds(self) -> list[int]:
        return sorted(t.seed for t in self.trials)

    def public_dict(self) -> dict[str, Any]:
        """Everything shown publicly (pages, JSON API): no held-out seeds, no secret."""
        return {
            "id": self.id, "submission_id": self.submission_id, "task_id": self.task_id,
            "task_version": self.task_version, "status": self.status, "reason": self.reason,
            "updated_at": self.updated_at, "name": self.name, "description": self.description,
            "authors": self.authors, "url": self.url, "agent": self.agent, "packages": self.packages,
            "git_commit": self.git_commit, "content_hash": self.content_hash,
            "created_at": self.created_at, "submitted_at": self.submitted_at,
            "submitter": self.submitter,
            "trials": [{"seed": t.seed, "metrics": t.metrics, "wall_time_s": t.wall_time_s,
                        "n_scores": len(t.scores)} for t in sorted(self.trials, key=lambda t: t.seed)],
            "verification": self.verification, "events": self.events,
        }


@dataclass(frozen=True)
class Receipt:
    """What a stored submission got: its id, one entry id per task, the bundle hash."""

    submission_id: int
    entry_ids: tuple[int, ...]
    content_hash: str
    tasks: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"submission_id": self.submission_id, "entry_ids": list(self.entry_ids),
                "content_hash": self.content_hash, "tasks": list(self.tasks), "status": "PENDING"}


def entry_fingerprint(vb: ValidatedBundle, task_key: str) -> str:
    """Identity of an entry for duplicate detection: task version, agent entry point and
    configuration, and every seed's metrics (names, descriptions and timestamps excluded)."""
    agent = vb.bundle["agent"]
    body = {
        "task": task_key,
        "entry_point": agent["entry_point"],
        "kwargs": agent["kwargs"],
        "trials": [[t.seed, t.to_dict()["metrics"]] for t in vb.trials[task_key]],
    }
    return "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()


class LeaderboardStore:
    """Submissions and entries in a SQL database (SQLite path or any SQLAlchemy URL)."""

    def __init__(self, location: str | os.PathLike[str] | None = None) -> None:
        loc = location if location is not None else os.environ.get("ICML26_LEADERBOARD", DEFAULT_LEADERBOARD)
        self.url = store_url(loc)
        self.engine = open_engine(self.url, _md, foreign_keys=True, threads=True)
        self._memo: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"LeaderboardStore({self.engine.url.render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> LeaderboardStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ submissions
    def submit(self, raw: bytes | str | Mapping[str, Any], submitter: str = "local") -> Receipt:
        """Validate ``raw`` and store it in one transaction; raise :class:`SubmissionInvalid`
        (nothing stored) when any rule fails or it duplicates a stored submission or entry."""
        vb = validate_bundle(raw)
        b = vb.bundle
        fps = {key: entry_fingerprint(vb, key) for key in vb.trials}
        self._raise_if_duplicate(vb.content_hash, fps)
        now = _now()
        try:
            with self.engine.begin() as conn:
                # The first statement writes, so SQLite takes the write lock before reading
                # anything (no snapshot-upgrade deadlocks between concurrent submitters).
                sid = conn.execute(sa.insert(submissions_table).values(
                    content_hash=vb.content_hash, name=b["name"], description=b.get("description", ""),
                    authors=b.get("authors", ""), url=b.get("url", ""),
                    agent_json=json.dumps(b["agent"], sort_keys=True),
                    packages_json=json.dumps(b["packages"], sort_keys=True),
                    git_commit=b["git_commit"], created_at=b["created_at"], submitted_at=now,
                    submitter=submitter, bundle_json=canonical_json(b).decode("utf-8"),
                )).inserted_primary_key[0]
                ids = []
                for key, trials in vb.trials.items():
                    task = vb.tasks[key]
                    eid = conn.execute(sa.insert(entries_table).values(
                        submission_id=sid, task_id=task.id, task_version=task.version,
                        fingerprint=fps[key], status="PENDING",
                        reason="validated; waiting for verification on held-out seeds",
                        updated_at=now,
                        results_json=json.dumps([t.to_dict() for t in trials], sort_keys=True),
                    )).inserted_primary_key[0]
                    conn.execute(sa.insert(events_table).values(
                        entry_id=eid, at=now, status="PENDING", actor=submitter,
                        reason=f"submitted ({vb.raw_size} bytes, {vb.content_hash[:19]}...)"))
                    ids.append(int(eid))
        except sa.exc.IntegrityError:
            # Lost a race against an identical submission committed meanwhile.
            self._raise_if_duplicate(vb.content_hash, fps)
            raise SubmissionInvalid([FieldError("bundle", "an identical submission was stored at "
                                                "the same time")], "duplicate") from None
        return Receipt(int(sid), tuple(ids), vb.content_hash, tuple(vb.trials))

    def _raise_if_duplicate(self, chash: str, fps: Mapping[str, str]) -> None:
        errs = []
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(submissions_table.c.id).where(
                submissions_table.c.content_hash == chash)).first()
            if row is not None:
                errs.append(FieldError("content_hash", f"this bundle was already submitted "
                                       f"(submission #{row[0]})"))
            for key, fp in fps.items():
                row = conn.execute(sa.select(entries_table.c.id).where(
                    entries_table.c.fingerprint == fp)).first()
                if row is not None:
                    errs.append(FieldError(f"results (task {key})", f"duplicate of entry #{row[0]}: "
                                           "same agent, configuration and per-seed metrics"))
        if errs:
            raise SubmissionInvalid(errs, "duplicate")

    # ------------------------------------------------------------------ entries
    def entries(self, task: str | None = None, status: str | None = None,
                with_events: bool = False) -> list[Entry]:
        """Entries, oldest first; ``task`` is a task id or ``id@vN`` key."""
        e, s = entries_table, submissions_table
        q = sa.select(e, s).join(s, s.c.id == e.c.submission_id).order_by(e.c.id)
        if task is not None:
            if "@v" in task:
                tid, _, ver = task.rpartition("@v")
                q = q.where(e.c.task_id == tid, e.c.task_version == int(ver))
            else:
                q = q.where(e.c.task_id == task)
        if status is not None:
            if status not in STATUSES:
                raise ValueError(f"unknown status {status!r}; expected one of {list(STATUSES)}")
            q = q.where(e.c.status == status)
        with self.engine.connect() as conn:
            rows = conn.execute(q).mappings().all()
            events: dict[int, list[dict[str, Any]]] = {}
            if with_events and rows:
                ev = events_table
                for r in conn.execute(sa.select(ev).order_by(ev.c.id)).mappings():
                    events.setdefault(int(r["entry_id"]), []).append(
                        {"at": r["at"], "status": r["status"], "reason": r["reason"], "actor": r["actor"]})
        return [self._entry(r, events.get(int(r["id"]), [])) for r in rows]

    @staticmethod
    def _entry(r: Mapping[str, Any], events: list[dict[str, Any]]) -> Entry:
        return Entry(
            id=int(r["id"]), submission_id=int(r["submission_id"]), task_id=r["task_id"],
            task_version=int(r["task_version"]), status=r["status"], reason=r["reason"],
            updated_at=r["updated_at"], name=r["name"], description=r["description"],
            authors=r["authors"], url=r["url"], agent=json.loads(r["agent_json"]),
            packages=json.loads(r["packages_json"]), git_commit=r["git_commit"],
            content_hash=r["content_hash"], created_at=r["created_at"],
            submitted_at=r["submitted_at"], submitter=r["submitter"],
            trials=[TrialResult.from_dict(t) for t in json.loads(r["results_json"])],
            verification=json.loads(r["verification_json"]) if r["verification_json"] else None,
            events=events,
        )

    def entry(self, entry_id: int) -> Entry:
        e, s = entries_table, submissions_table
        q = sa.select(e, s).join(s, s.c.id == e.c.submission_id).where(e.c.id == int(entry_id))
        with self.engine.connect() as conn:
            r = conn.execute(q).mappings().first()
            if r is None:
                raise KeyError(f"no leaderboard entry #{entry_id}")
            ev = events_table
            events = [{"at": x["at"], "status": x["status"], "reason": x["reason"], "actor": x["actor"]}
                      for x in conn.execute(sa.select(ev).where(ev.c.entry_id == int(entry_id))
                                            .order_by(ev.c.id)).mappings()]
        return self._entry(r, events)

    def set_status(self, entry_id: int, status: str, reason: str, actor: str = "verify",
                   verification: Mapping[str, Any] | None = None,
                   verification_trials: list[TrialResult] | None = None) -> None:
        """Change an entry's status (with its reason and, after a re-run, the verification
        summary and trials) and record the event, in one transaction."""
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}; expected one of {list(STATUSES)}")
        now = _now()
        values: dict[str, Any] = {"status": status, "reason": reason, "updated_at": now}
        if verification is not None:
            values["verification_json"] = json.dumps(verification, sort_keys=True, allow_nan=False)
        if verification_trials is not None:
            values["verification_trials_json"] = json.dumps([t.to_dict() for t in verification_trials])
        with self.engine.begin() as conn:
            n = conn.execute(sa.update(entries_table).where(entries_table.c.id == int(entry_id))
                             .values(**values)).rowcount
            if n != 1:
                raise KeyError(f"no leaderboard entry #{entry_id}")
            conn.execute(sa.insert(events_table).values(entry_id=int(entry_id), at=now, status=status,
                                                        reason=reason, actor=actor))

    def verification_trials(self, entry_id: int) -> list[TrialResult]:
        """The re-run trials of an entry (private: they carry the held-out seeds)."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(entries_table.c.verification_trials_json)
                               .where(entries_table.c.id == int(entry_id))).first()
        if row is None:
            raise KeyError(f"no leaderboard entry #{entry_id}")
        return [TrialResult.from_dict(d) for d in json.loads(row[0] or "[]")]

    def revision(self) -> int:
        """Changes whenever anything shown changes (the id of the latest event)."""
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.max(events_table.c.id))).scalar() or 0)

    def counts(self) -> dict[str, int]:
        """Rows per table (used by tests to show that a rejected submission changed nothing)."""
        with self.engine.connect() as conn:
            return {t.name: int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one())
                    for t in ALL_TABLES}

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every leaderboard table, in key order (for equality checks in tests)."""
        with self.engine.connect() as conn:
            return {t.name: [tuple(r) for r in conn.execute(sa.select(t).order_by(*t.primary_key.columns))]
                    for t in ALL_TABLES}

    # ------------------------------------------------------------------ memo
    def memo(self, kind: str, args: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per distinct ``(kind, args)`` (JSON-able), kept in the store."""
        key = "sha256:" + hashlib.sha256(canonical_json([kind, args])).hexdigest()
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(stats_table.c.value).where(stats_table.c.key == key)).first()
        if row is not None:
            value = json.loads(row[0])
        else:
            value = compute()
            try:
                with self.engine.begin() as conn:
                    conn.execute(sa.insert(stats_table).values(key=key, value=json.dumps(value)))
            except sa.exc.IntegrityError:
                pass  # computed concurrently; same inputs give the same value
        self._memo[key] = value
        return value

    # ------------------------------------------------------------------ tokens
    @staticmethod
    def _hash_token(token: str) -> str:
        # Tokens are 256-bit random strings, so a plain SHA-256 is enough (no password hashing).
        return hashlib.sha256(token.encode("utf-8")).hexdigest()

    def create_token(self, name: str) -> str:
        """A new API token for ``name``: returned once, stored only as its SHA-256."""
        if not isinstance(name, str) or not _TOKEN_NAME_RE.fullmatch(name):
            raise ValueError(f"token name {name!r}: expected 1-64 letters, digits or . _ @ -")
        token = "icml26_" + secrets.token_urlsafe(32)
        t = tokens_table
        try:
            with self.engine.begin() as conn:
                # a revoked name may be reused; an active one may not
                conn.execute(sa.delete(t).where(t.c.name == name, t.c.revoked_at.is_not(None)))
                conn.execute(sa.insert(t).values(
                    name=name, token_sha256=self._hash_token(token), created_at=_now()))
        except sa.exc.IntegrityError:
            raise ValueError(f"an active token named {name!r} exists; revoke it first "
                             f"(icml26 leaderboard token revoke {name})") from None
        return token

    def authenticate(self, token: str | None) -> str | None:
        """The name of the active token ``token``, or None."""
        if not token:
            return None
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(tokens_table.c.name).where(
                tokens_table.c.token_sha256 == self._hash_token(token),
                tokens_table.c.revoked_at.is_(None))).first()
        return None if row is None else str(row[0])

    def tokens(self) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [{"name": r["name"], "created_at": r["created_at"], "revoked_at": r["revoked_at"]}
                    for r in conn.execute(sa.select(tokens_table).order_by(tokens_table.c.name)).mappings()]

    def revoke_token(self, name: str) -> None:
        """Revoke the token ``name`` (its requests get 401 from then on)."""
        t = tokens_table
        with self.engine.begin() as conn:
            conn.execute(sa.update(t).where(t.c.name == name, t.c.revoked_at.is_(None))
                         .values(revoked_at=_now()))
            exists = conn.execute(sa.select(t.c.name).where(t.c.name == name)).first()
        if exists is None:
            raise KeyError(f"no token named {name!r}")

    # ------------------------------------------------------------------ secret
    def set_heldout_secret(self, secret: bytes) -> None:
        """Replace the stored secret (e.g. one kept by the organizers elsewhere). Held-out seeds
        change with it, so do it before verifying anything."""
        if len(secret) < 16:
            raise ValueError("a held-out secret needs at least 16 bytes")
        s = settings_table
        with self.engine.begin() as conn:
            conn.execute(sa.delete(s).where(s.c.key == "heldout_secret"))
            conn.execute(sa.insert(s).values(key="heldout_secret", value=secret.hex()))

    def heldout_secret(self) -> bytes:
        """The server-side secret the held-out seeds are derived from.

        ``$ICML26_LEADERBOARD_SECRET`` when set; otherwise a random 256-bit value created on
        first use and kept in this store's settings table (never exported by pages or API).
        """
        env = os.environ.get(SECRET_ENV)
        if env:
            return env.encode("utf-8")
        s = settings_table
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(s.c.value).where(s.c.key == "heldout_secret")).first()
        if row is None:
            try:
                with self.engine.begin() as conn:
                    conn.execute(sa.insert(s).values(key="heldout_secret", value=secrets.token_hex(32)))
            except sa.exc.IntegrityError:
                pass  # created concurrently
            with self.engine.connect() as conn:
                row = conn.execute(sa.select(s.c.value).where(s.c.key == "heldout_secret")).first()
        assert row is not None
        return bytes.fromhex(row[0])


def open_leaderboard(store: LeaderboardStore | str | os.PathLike[str] | None) -> LeaderboardStore:
    return store if isinstance(store, LeaderboardStore) else LeaderboardStore(store)
