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
* ``RUNNING``  -- a verifier claimed it and is re-running it (the event says which attempt and
  when it started); shown with the PENDING entries.
* ``VERIFIED`` -- the re-run on held-out seeds agreed with the submitted primary metric within
  the task's tolerance; ranked.
* ``REJECTED`` -- the re-run completed but disagreed beyond the tolerance.
* ``FAILED``   -- the re-run could not be completed (entry point refused, agent not importable,
  a trial crashed, the worker died, broke a limit or sent a malformed action).

Each status change is an event with its reason; the entry keeps the latest reason. A public
reason never quotes the agent (its exception text, its output); the organizer's full account is
kept apart (:meth:`LeaderboardStore.private_detail`).

Rows are tamper-evident: every submission row and every entry row carries an HMAC-SHA256 of its
content under a key derived from the held-out secret (:meth:`LeaderboardStore.integrity`). A row
changed outside this class (an edited ``results_json``, a forged verification) no longer
matches, and the ranking flags it instead of ranking it. Events are not signed.

Beyond exact duplicates, a submission is refused when an entry on the same task already has the
same code (its hash, or its exact requirement), entry point and configuration (a copy with
nudged numbers), and when its name looks like another's without being it (NFKC, look-alike
letters: :func:`~icml26.leaderboards.validate.name_key`).

The held-out secret is NOT kept here (a table is something submitted code might reach): it is
``$ICML26_LEADERBOARD_SECRET`` or a 0600 file (``$ICML26_LEADERBOARD_SECRET_FILE``, else one
file per store under the organizer's config directory, :func:`default_secret_file`). A secret
left in the settings table by an older version moves to that file when the store is opened.

The schema is versioned (``icml26_schema_version``, :mod:`icml26._schema`): opening a store
written by older code runs the missing steps of :meth:`LeaderboardStore._migrations` in one
transaction (a read-only store is left as it is, with a warning).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa

from icml26._paths import atomic_write, config_dir
from icml26._schema import Migration, add_column_if_missing, migrate
from icml26.benchmarks.store import open_engine, store_url
from icml26.leaderboards.bundle import canonical_json
from icml26.leaderboards.validate import (
    FieldError,
    SubmissionInvalid,
    ValidatedBundle,
    name_key,
    validate_bundle,
)
from icml26.protocol import TrialResult, config_hash

__all__ = [
    "code_id",
    "public_agent",
    "EntryStatus",
    "STATUSES",
    "Entry",
    "Receipt",
    "LeaderboardStore",
    "open_leaderboard",
    "DEFAULT_LEADERBOARD",
    "SECRET_ENV",
    "SECRET_FILE_ENV",
    "default_secret_file",
]

EntryStatus = Literal["PENDING", "RUNNING", "VERIFIED", "REJECTED", "FAILED"]
STATUSES: tuple[str, ...] = ("PENDING", "RUNNING", "VERIFIED", "REJECTED", "FAILED")
DEFAULT_LEADERBOARD = "results/leaderboard.db"
SECRET_ENV = "ICML26_LEADERBOARD_SECRET"
SECRET_FILE_ENV = "ICML26_LEADERBOARD_SECRET_FILE"


def default_secret_file(url: str) -> Path:
    """Where the held-out secret of the store at ``url`` lives when neither the environment
    variable nor an explicit file is given: one 0600 file per store (keyed by the SHA-256 of
    its URL) under :func:`config_dir`."""
    key = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return config_dir() / "leaderboard-secrets" / f"{key}.key"


_TOKEN_NAME_RE = re.compile(r"[A-Za-z0-9_.@-]{1,64}")

_md = sa.MetaData()

submissions_table = sa.Table(
    "icml26_lb_submissions",
    _md,
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
    # added by schema version 3
    sa.Column("name_key", sa.String(200), nullable=True, index=True),
    sa.Column("code_id", sa.String(200), nullable=True, index=True),
    sa.Column("submission_signature", sa.String(100), nullable=True),
)

entries_table = sa.Table(
    "icml26_lb_entries",
    _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "submission_id",
        sa.Integer,
        sa.ForeignKey("icml26_lb_submissions.id"),
        nullable=False,
        index=True,
    ),
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
    # added by schema version 3: the organizer's full account of a failure; the row's HMAC
    sa.Column("private_json", sa.Text, nullable=True),
    sa.Column("row_signature", sa.String(100), nullable=True),
)

events_table = sa.Table(
    "icml26_lb_events",
    _md,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "entry_id", sa.Integer, sa.ForeignKey("icml26_lb_entries.id"), nullable=False, index=True
    ),
    sa.Column("at", sa.String(40), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("actor", sa.String(100), nullable=False),
)

tokens_table = sa.Table(
    "icml26_lb_tokens",
    _md,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.String(40), nullable=False),
    sa.Column("revoked_at", sa.String(40), nullable=True),
)

settings_table = sa.Table(
    "icml26_lb_settings",
    _md,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# Memoized statistics (bootstrap intervals, probabilities of improvement), keyed by a hash of
# the exact inputs, so re-rendering a large board recomputes only what a new entry changed.
stats_table = sa.Table(
    "icml26_lb_stats",
    _md,
    sa.Column("key", sa.String(80), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

ALL_TABLES = (submissions_table, entries_table, events_table, tokens_table, settings_table)
# The columns each row signature covers (the id is signed too, and an entry's signature covers
# its submission's).
_SUBMISSION_SIGNED = (
    "content_hash",
    "name",
    "description",
    "authors",
    "url",
    "agent_json",
    "packages_json",
    "git_commit",
    "created_at",
    "submitted_at",
    "submitter",
    "bundle_json",
    "code_id",
)
_ENTRY_SIGNED = (
    "submission_id",
    "task_id",
    "task_version",
    "fingerprint",
    "status",
    "reason",
    "updated_at",
    "results_json",
    "verification_json",
    "verification_trials_json",
    "private_json",
)
_V3_COLUMNS = {
    "icml26_lb_submissions": ("name_key", "code_id", "submission_signature"),
    "icml26_lb_entries": ("private_json", "row_signature"),
}


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
    # the metrics of each re-run trial (no seeds), in the order they ran
    rerun: list[dict[str, float]] = field(default_factory=list)
    # the row signatures: "ok", "mismatch" (changed outside the store), "unsigned", "unchecked"
    integrity: str = "unchecked"
    code_id: str | None = None

    @property
    def task_key(self) -> str:
        return f"{self.task_id}@v{self.task_version}"

    @property
    def agent_key(self) -> str:
        """Identity of the agent configuration: entry point and kwargs hash."""
        return f"{self.agent.get('entry_point')}#{config_hash(self.agent.get('kwargs', {}))}"

    def values(self, metric: str) -> list[float]:
        """Per-seed values of ``metric`` as submitted (the claim; seed order)."""
        return [float(t.metrics[metric]) for t in sorted(self.trials, key=lambda t: t.seed)]

    def rerun_values(self, metric: str) -> list[float]:
        """Values of ``metric`` in the verifier's re-run (held-out seeds), [] without one."""
        return [float(m[metric]) for m in self.rerun if metric in m]

    @property
    def measured(self) -> bool:
        """Whether the entry is ranked by re-run values (VERIFIED, with its re-run kept)."""
        return self.status == "VERIFIED" and bool(self.rerun)

    def ranked_values(self, metric: str) -> list[float]:
        """What the ranking uses: the re-run values of a VERIFIED entry, otherwise the claim."""
        return self.rerun_values(metric) if self.measured else self.values(metric)

    @property
    def isolation(self) -> str | None:
        """How the agent was isolated in its verification ("isolated", "unisolated", ...)."""
        iso = (self.verification or {}).get("isolation") or {}
        return iso.get("level") if isinstance(iso, dict) else None

    @property
    def seeds(self) -> list[int]:
        return sorted(t.seed for t in self.trials)

    def public_dict(self) -> dict[str, Any]:
        """Everything shown publicly (pages, JSON API): no held-out seeds, no secret."""
        return {
            "id": self.id,
            "submission_id": self.submission_id,
            "task_id": self.task_id,
            "task_version": self.task_version,
            "status": self.status,
            "reason": self.reason,
            "updated_at": self.updated_at,
            "name": self.name,
            "description": self.description,
            "authors": self.authors,
            "url": self.url,
            "agent": self.agent,
            "packages": self.packages,
            "git_commit": self.git_commit,
            "content_hash": self.content_hash,
            "created_at": self.created_at,
            "submitted_at": self.submitted_at,
            "submitter": self.submitter,
            "trials": [
                {
                    "seed": t.seed,
                    "metrics": t.metrics,
                    "wall_time_s": t.wall_time_s,
                    "n_scores": len(t.scores),
                }
                for t in sorted(self.trials, key=lambda t: t.seed)
            ],
            "verification": self.verification,
            "rerun": [{"metrics": m} for m in self.rerun],
            "integrity": self.integrity,
            "events": self.events,
        }


@dataclass(frozen=True)
class Receipt:
    """What a stored submission got: its id, one entry id per task, the bundle hash."""

    submission_id: int
    entry_ids: tuple[int, ...]
    content_hash: str
    tasks: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "submission_id": self.submission_id,
            "entry_ids": list(self.entry_ids),
            "content_hash": self.content_hash,
            "tasks": list(self.tasks),
            "status": "PENDING",
        }


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


def code_id(agent: Mapping[str, Any]) -> str:
    """Identity of the agent's code: the hash of the code carried in the bundle, else its
    exact requirement (normalized)."""
    code = agent.get("code")
    if isinstance(code, Mapping) and code.get("sha256"):
        return str(code["sha256"])
    req = str(agent.get("requirement") or agent.get("path") or "")
    return "requirement:" + re.sub(r"\s+", "", req).lower()


def effective_kwargs(agent: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration the agent runs with: a registered agent's default kwargs (when its
    name maps to the submitted entry point) updated by the submitted ones."""
    from icml26 import agents

    kwargs = dict(agent.get("kwargs") or {})
    spec = agents.all_specs().get(str(agent.get("name", "")))
    if spec is not None and spec.entry_point == agent.get("entry_point"):
        return {**spec.kwargs, **kwargs}
    return kwargs


def public_agent(agent: Mapping[str, Any]) -> dict[str, Any]:
    """The agent as stored and shown: the code's format, hash and size, not its bytes."""
    out = dict(agent)
    code = out.get("code")
    if isinstance(code, Mapping):
        out["code"] = {k: v for k, v in code.items() if k != "data"} | {
            "bytes": len(str(code.get("data", ""))) * 3 // 4
        }
    return out


def _signature(
    key: bytes, kind: str, ident: int, fields: Mapping[str, Any], chain: str = ""
) -> str:
    body = canonical_json([kind, int(ident), {k: fields.get(k) for k in sorted(fields)}, chain])
    return "hmac-sha256:" + hmac.new(key, body, hashlib.sha256).hexdigest()


class LeaderboardStore:
    """Submissions and entries in a SQL database (SQLite path or any SQLAlchemy URL)."""

    def __init__(
        self,
        location: str | os.PathLike[str] | None = None,
        secret_file: str | os.PathLike[str] | None = None,
    ) -> None:
        loc = (
            location
            if location is not None
            else os.environ.get("ICML26_LEADERBOARD", DEFAULT_LEADERBOARD)
        )
        self.url = store_url(loc)
        self._secret_file = None if secret_file is None else Path(secret_file)
        self.engine = open_engine(self.url, _md, foreign_keys=True, threads=True)
        self.schema_version = migrate(self.engine, "leaderboard", self._migrations())
        self._memo: dict[str, Any] = {}
        # an unmigrated (read-only, older) store lacks the newer columns: read what it has
        self._columns = {
            t: {c["name"] for c in sa.inspect(self.engine).get_columns(t)} for t in _V3_COLUMNS
        }

    def _migrations(self) -> list[Migration]:
        """This store's schema history (see :mod:`icml26._schema`); append, never edit."""
        return [
            Migration(
                1,
                "the first release's tables (created from the definitions above)",
                lambda conn: None,
            ),
            Migration(
                2,
                "the held-out secret leaves the settings table for the 0600 secret file",
                self._move_secret_out,
            ),
            Migration(
                3,
                "name keys and code identities (near-duplicates), private failure details, "
                "row signatures (existing rows signed when the secret is at hand)",
                self._add_signatures,
            ),
        ]

    def _add_signatures(self, conn: sa.Connection) -> None:
        for table, names in _V3_COLUMNS.items():
            t = submissions_table if table == submissions_table.name else entries_table
            for name in names:
                col = t.c[name]
                add_column_if_missing(conn, table, sa.Column(name, col.type, nullable=True))
        s = submissions_table
        for r in conn.execute(sa.select(s.c.id, s.c.name, s.c.agent_json)).mappings().all():
            conn.execute(
                sa.update(s)
                .where(s.c.id == r["id"])
                .values(name_key=name_key(r["name"]), code_id=code_id(json.loads(r["agent_json"])))
            )
        key = self._signing_key(create=False)
        if key is not None:
            for sid in conn.execute(sa.select(s.c.id)).scalars().all():
                self._sign_submission(conn, int(sid), key)
            for eid in conn.execute(sa.select(entries_table.c.id)).scalars().all():
                self._sign_entry(conn, int(eid), key)

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
        self._raise_if_near_duplicate(vb)
        # signed here when this process has the secret (else by the verifier, when it claims it)
        sign_key = self._signing_key(create=False)
        now = _now()
        try:
            with self.engine.begin() as conn:
                # The first statement writes, so SQLite takes the write lock before reading
                # anything (no snapshot-upgrade deadlocks between concurrent submitters).
                sid = conn.execute(
                    sa.insert(submissions_table).values(
                        content_hash=vb.content_hash,
                        name=b["name"],
                        description=b.get("description", ""),
                        authors=b.get("authors", ""),
                        url=b.get("url", ""),
                        agent_json=json.dumps(public_agent(b["agent"]), sort_keys=True),
                        packages_json=json.dumps(b["packages"], sort_keys=True),
                        git_commit=b["git_commit"],
                        created_at=b["created_at"],
                        submitted_at=now,
                        submitter=submitter,
                        bundle_json=canonical_json(b).decode("utf-8"),
                        name_key=name_key(b["name"]),
                        code_id=code_id(b["agent"]),
                    )
                ).inserted_primary_key[0]  # type: ignore[index]  # an INSERT has a key
                self._sign_submission(conn, int(sid), sign_key)
                ids = []
                for key, trials in vb.trials.items():
                    task = vb.tasks[key]
                    eid = conn.execute(
                        sa.insert(entries_table).values(
                            submission_id=sid,
                            task_id=task.id,
                            task_version=task.version,
                            fingerprint=fps[key],
                            status="PENDING",
                            reason="validated; waiting for verification on held-out seeds",
                            updated_at=now,
                            results_json=json.dumps([t.to_dict() for t in trials], sort_keys=True),
                        )
                    ).inserted_primary_key[0]  # type: ignore[index]  # an INSERT has a key
                    conn.execute(
                        sa.insert(events_table).values(
                            entry_id=eid,
                            at=now,
                            status="PENDING",
                            actor=submitter,
                            reason=f"submitted ({vb.raw_size} bytes, {vb.content_hash[:19]}...)",
                        )
                    )
                    self._sign_entry(conn, int(eid), sign_key)
                    ids.append(int(eid))
        except sa.exc.IntegrityError:
            # Lost a race against an identical submission committed meanwhile.
            self._raise_if_duplicate(vb.content_hash, fps)
            raise SubmissionInvalid(
                [FieldError("bundle", "an identical submission was stored at the same time")],
                "duplicate",
            ) from None
        return Receipt(int(sid), tuple(ids), vb.content_hash, tuple(vb.trials))

    def _raise_if_duplicate(self, chash: str, fps: Mapping[str, str]) -> None:
        errs = []
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(submissions_table.c.id).where(submissions_table.c.content_hash == chash)
            ).first()
            if row is not None:
                errs.append(
                    FieldError(
                        "content_hash", f"this bundle was already submitted (submission #{row[0]})"
                    )
                )
            for key, fp in fps.items():
                row = conn.execute(
                    sa.select(entries_table.c.id).where(entries_table.c.fingerprint == fp)
                ).first()
                if row is not None:
                    errs.append(
                        FieldError(
                            f"results (task {key})",
                            f"duplicate of entry #{row[0]}: "
                            "same agent, configuration and per-seed metrics",
                        )
                    )
        if errs:
            raise SubmissionInvalid(errs, "duplicate")

    def _raise_if_near_duplicate(self, vb: ValidatedBundle) -> None:
        """Refuse a name that looks like another entry's without being it, and an entry
        whose task, code, entry point and configuration an entry already has."""
        b = vb.bundle
        s, e = submissions_table, entries_table
        if "name_key" not in self._columns[s.name]:
            return
        ident = code_id(b["agent"])
        config = config_hash(effective_kwargs(b["agent"]))
        errs = []
        with self.engine.connect() as conn:
            for sid, name in conn.execute(
                sa.select(s.c.id, s.c.name).where(s.c.name_key == name_key(b["name"]))
            ):
                if name != b["name"]:
                    errs.append(
                        FieldError(
                            "name",
                            f"{b['name']!r} looks like the name {name!r} of submission #{sid} "
                            "(the same after NFKC and mapping look-alike letters); choose "
                            "another name",
                        )
                    )
                    break
            for key, task in vb.tasks.items():
                rows = conn.execute(
                    sa.select(e.c.id, s.c.agent_json, s.c.submitted_at)
                    .join(s, s.c.id == e.c.submission_id)
                    .where(
                        s.c.code_id == ident,
                        e.c.task_id == task.id,
                        e.c.task_version == task.version,
                    )
                ).all()
                for eid, agent_json, when in rows:
                    agent = json.loads(agent_json)
                    if (
                        agent.get("entry_point") == b["agent"]["entry_point"]
                        and config_hash(effective_kwargs(agent)) == config
                    ):
                        errs.append(
                            FieldError(
                                f"results (task {key})",
                                f"near-duplicate of entry #{eid} (submitted {when}): the same "
                                "code, entry point and configuration on this task; the "
                                "leaderboard ranks re-runs, so a second copy adds nothing",
                            )
                        )
                        break
        if errs:
            raise SubmissionInvalid(errs, "duplicate")

    # ------------------------------------------------------------------ signatures
    def _existing_secret(self) -> bytes | None:
        """The held-out secret when there is one (never creates it)."""
        env = os.environ.get(SECRET_ENV)
        if env:
            return env.encode("utf-8")
        try:
            return self._read_secret_file()
        except (OSError, ValueError):
            return None

    def _signing_key(self, create: bool) -> bytes | None:
        """The key rows are signed with (derived from the held-out secret, which ``create``
        makes on first use); None when there is no secret and ``create`` is False."""
        secret = self.heldout_secret() if create else self._existing_secret()
        if secret is None:
            return None
        return hmac.new(secret, b"icml26 leaderboard row signatures v1", hashlib.sha256).digest()

    def _sign_submission(self, conn: sa.Connection, sid: int, key: bytes | None) -> None:
        if key is None:
            return
        s = submissions_table
        row = conn.execute(sa.select(s).where(s.c.id == sid)).mappings().one()
        sig = _signature(key, "submission", sid, {k: row[k] for k in _SUBMISSION_SIGNED})
        conn.execute(sa.update(s).where(s.c.id == sid).values(submission_signature=sig))

    def _sign_entry(self, conn: sa.Connection, eid: int, key: bytes | None) -> None:
        if key is None:
            return
        e, s = entries_table, submissions_table
        row = conn.execute(sa.select(e).where(e.c.id == eid)).mappings().one()
        chain = conn.execute(
            sa.select(s.c.submission_signature).where(s.c.id == row["submission_id"])
        ).scalar_one()
        if not chain:  # stored by a process without the secret (a server): signed now
            self._sign_submission(conn, int(row["submission_id"]), key)
            chain = conn.execute(
                sa.select(s.c.submission_signature).where(s.c.id == row["submission_id"])
            ).scalar_one()
        sig = _signature(key, "entry", eid, {k: row[k] for k in _ENTRY_SIGNED}, chain or "")
        conn.execute(sa.update(e).where(e.c.id == eid).values(row_signature=sig))

    def _integrity(self, r: Mapping[str, Any], key: bytes | None) -> str:
        """ "ok", "mismatch", "unsigned" or "unchecked" (no secret here) for a joined row."""
        sub_sig, row_sig = r.get("submission_signature"), r.get("row_signature")
        if not sub_sig or not row_sig:
            return "unsigned"
        if key is None:
            return "unchecked"
        want_sub = _signature(
            key, "submission", int(r["submission_id"]), {k: r[k] for k in _SUBMISSION_SIGNED}
        )
        want_row = _signature(key, "entry", int(r["id"]), {k: r[k] for k in _ENTRY_SIGNED}, sub_sig)
        ok = hmac.compare_digest(want_sub, sub_sig) and hmac.compare_digest(want_row, row_sig)
        return "ok" if ok else "mismatch"

    def sign_all(self) -> int:
        """Sign every row with the current key (after the organizer has checked the store,
        e.g. one migrated without its secret at hand); returns the number of entries."""
        key = self._signing_key(create=True)
        with self.engine.begin() as conn:
            for sid in conn.execute(sa.select(submissions_table.c.id)).scalars().all():
                self._sign_submission(conn, int(sid), key)
            eids = conn.execute(sa.select(entries_table.c.id)).scalars().all()
            for eid in eids:
                self._sign_entry(conn, int(eid), key)
        return len(eids)

    # ------------------------------------------------------------------ entries
    def _joined(self) -> Any:
        """SELECT of entries joined with their submissions (the columns this store has)."""
        e, s = entries_table, submissions_table
        cols = self._present(e) + [c for c in self._present(s) if c.name != "id"]
        return sa.select(*cols).join(s, s.c.id == e.c.submission_id)

    def entries(
        self, task: str | None = None, status: str | None = None, with_events: bool = False
    ) -> list[Entry]:
        """Entries, oldest first; ``task`` is a task id or ``id@vN`` key."""
        e = entries_table
        q = self._joined().order_by(e.c.id)
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
                        {
                            "at": r["at"],
                            "status": r["status"],
                            "reason": r["reason"],
                            "actor": r["actor"],
                        }
                    )
        key = self._signing_key(create=False)
        return [self._entry(r, events.get(int(r["id"]), []), key) for r in rows]

    def _entry(
        self, r: Mapping[Any, Any], events: list[dict[str, Any]], key: bytes | None
    ) -> Entry:
        rerun = [
            {k: float(v) for k, v in t.get("metrics", {}).items()}
            for t in json.loads(r["verification_trials_json"] or "[]")
            if t.get("status", "FINISHED") == "FINISHED"
        ]
        return Entry(
            id=int(r["id"]),
            submission_id=int(r["submission_id"]),
            task_id=r["task_id"],
            task_version=int(r["task_version"]),
            status=r["status"],
            reason=r["reason"],
            updated_at=r["updated_at"],
            name=r["name"],
            description=r["description"],
            authors=r["authors"],
            url=r["url"],
            agent=json.loads(r["agent_json"]),
            packages=json.loads(r["packages_json"]),
            git_commit=r["git_commit"],
            content_hash=r["content_hash"],
            created_at=r["created_at"],
            submitted_at=r["submitted_at"],
            submitter=r["submitter"],
            trials=[TrialResult.from_dict(t) for t in json.loads(r["results_json"])],
            verification=json.loads(r["verification_json"]) if r["verification_json"] else None,
            events=events,
            rerun=rerun,
            integrity=self._integrity(r, key),
            code_id=r.get("code_id"),
        )

    def entry(self, entry_id: int) -> Entry:
        e = entries_table
        q = self._joined().where(e.c.id == int(entry_id))
        with self.engine.connect() as conn:
            r = conn.execute(q).mappings().first()
            if r is None:
                raise KeyError(f"no leaderboard entry #{entry_id}")
            ev = events_table
            events = [
                {"at": x["at"], "status": x["status"], "reason": x["reason"], "actor": x["actor"]}
                for x in conn.execute(
                    sa.select(ev).where(ev.c.entry_id == int(entry_id)).order_by(ev.c.id)
                ).mappings()
            ]
        return self._entry(r, events, self._signing_key(create=False))

    def private_detail(self, entry_id: int) -> dict[str, Any]:
        """The organizer's full account of the entry's last verification (the agent's own
        exception text and traceback, the worker's output); never shown publicly."""
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(entries_table.c.private_json).where(entries_table.c.id == int(entry_id))
            ).first()
        if row is None:
            raise KeyError(f"no leaderboard entry #{entry_id}")
        return dict(json.loads(row[0] or "{}"))

    def bundle(self, entry_id: int) -> dict[str, Any]:
        """The submitted bundle of an entry (with its code)."""
        e, s = entries_table, submissions_table
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(s.c.bundle_json)
                .join(e, e.c.submission_id == s.c.id)
                .where(e.c.id == int(entry_id))
            ).first()
        if row is None:
            raise KeyError(f"no leaderboard entry #{entry_id}")
        return dict(json.loads(row[0]))

    def set_status(
        self,
        entry_id: int,
        status: str,
        reason: str,
        actor: str = "verify",
        verification: Mapping[str, Any] | None = None,
        verification_trials: list[TrialResult] | None = None,
        expected: tuple[str, ...] | None = None,
        private: Mapping[str, Any] | None = None,
    ) -> bool:
        """Change an entry's status (with its public reason and, after a re-run, the
        verification summary and trials, and the organizer's ``private`` detail) and record
        the event, in one transaction; the row is signed again.

        With ``expected``, only when the entry's current status is one of them (a verifier
        claiming a PENDING entry as RUNNING); returns whether it changed."""
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}; expected one of {list(STATUSES)}")
        now = _now()
        values: dict[str, Any] = {"status": status, "reason": reason, "updated_at": now}
        if verification is not None:
            values["verification_json"] = json.dumps(verification, sort_keys=True, allow_nan=False)
        if verification_trials is not None:
            values["verification_trials_json"] = json.dumps(
                [t.to_dict() for t in verification_trials]
            )
        if private is not None:
            values["private_json"] = json.dumps(private, sort_keys=True, allow_nan=False)
        key = self._signing_key(create=True)
        where = [entries_table.c.id == int(entry_id)]
        if expected is not None:
            where.append(entries_table.c.status.in_(list(expected)))
        with self.engine.begin() as conn:
            n = conn.execute(sa.update(entries_table).where(*where).values(**values)).rowcount
            if n != 1:
                if (
                    expected is not None
                    and conn.execute(
                        sa.select(entries_table.c.id).where(entries_table.c.id == int(entry_id))
                    ).first()
                    is not None
                ):
                    return False
                raise KeyError(f"no leaderboard entry #{entry_id}")
            conn.execute(
                sa.insert(events_table).values(
                    entry_id=int(entry_id), at=now, status=status, reason=reason, actor=actor
                )
            )
            self._sign_entry(conn, int(entry_id), key)
        return True

    def integrity(self, entry_id: int) -> str:
        """Whether entry ``entry_id``'s rows match their signatures: "ok", "mismatch",
        "unsigned" or "unchecked" (no secret on this machine)."""
        return self.entry(entry_id).integrity

    def verification_trials(self, entry_id: int) -> list[TrialResult]:
        """The re-run trials of an entry (private: they carry the held-out seeds)."""
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(entries_table.c.verification_trials_json).where(
                    entries_table.c.id == int(entry_id)
                )
            ).first()
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
            return {
                t.name: int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one())
                for t in ALL_TABLES
            }

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every leaderboard table, in key order (for equality checks in tests)."""
        with self.engine.connect() as conn:
            return {
                t.name: [
                    tuple(r)
                    for r in conn.execute(
                        sa.select(*self._present(t)).order_by(*t.primary_key.columns)
                    )
                ]
                for t in ALL_TABLES
            }

    def _present(self, t: sa.Table) -> list[sa.Column[Any]]:
        """``t``'s columns that exist in this store (an unmigrated one lacks the newer)."""
        have = self._columns.get(t.name)
        new = _V3_COLUMNS.get(t.name, ())
        return [c for c in t.c if have is None or c.name in have or c.name not in new]

    # ------------------------------------------------------------------ memo
    def memo(self, kind: str, args: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per distinct ``(kind, args)`` (JSON-able), kept in the store."""
        key = "sha256:" + hashlib.sha256(canonical_json([kind, args])).hexdigest()
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(stats_table.c.value).where(stats_table.c.key == key)
            ).first()
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
                conn.execute(
                    sa.insert(t).values(
                        name=name, token_sha256=self._hash_token(token), created_at=_now()
                    )
                )
        except sa.exc.IntegrityError:
            raise ValueError(
                f"an active token named {name!r} exists; revoke it first "
                f"(icml26 leaderboard token revoke {name})"
            ) from None
        return token

    def authenticate(self, token: str | None) -> str | None:
        """The name of the active token ``token``, or None."""
        if not token:
            return None
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(tokens_table.c.name).where(
                    tokens_table.c.token_sha256 == self._hash_token(token),
                    tokens_table.c.revoked_at.is_(None),
                )
            ).first()
        return None if row is None else str(row[0])

    def tokens(self) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            return [
                {"name": r["name"], "created_at": r["created_at"], "revoked_at": r["revoked_at"]}
                for r in conn.execute(
                    sa.select(tokens_table).order_by(tokens_table.c.name)
                ).mappings()
            ]

    def revoke_token(self, name: str) -> None:
        """Revoke the token ``name`` (its requests get 401 from then on)."""
        t = tokens_table
        with self.engine.begin() as conn:
            conn.execute(
                sa.update(t)
                .where(t.c.name == name, t.c.revoked_at.is_(None))
                .values(revoked_at=_now())
            )
            exists = conn.execute(sa.select(t.c.name).where(t.c.name == name)).first()
        if exists is None:
            raise KeyError(f"no token named {name!r}")

    # ------------------------------------------------------------------ secret
    @property
    def secret_file(self) -> Path:
        """The file holding this store's held-out secret (see the module docstring)."""
        if self._secret_file is not None:
            return self._secret_file
        env = os.environ.get(SECRET_FILE_ENV)
        return Path(env) if env else default_secret_file(self.url)

    def _write_secret_file(self, secret: bytes, exclusive: bool) -> None:
        path = self.secret_file
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if exclusive:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secret.hex() + "\n")
            return

        def write(tmp: Path) -> None:
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                f.write(secret.hex() + "\n")

        atomic_write(path, write)

    def _read_secret_file(self) -> bytes | None:
        path = self.secret_file
        try:
            st = path.stat()
        except FileNotFoundError:
            return None
        if st.st_mode & 0o077:
            raise PermissionError(
                f"the held-out secret file {path} is readable by other users "
                f"(mode {st.st_mode & 0o777:o}); run `chmod 600 {path}`"
            )
        text = path.read_text().strip()
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise ValueError(f"the held-out secret file {path} does not hold hex digits") from None

    def _stored_secret_row(self) -> str | None:
        s = settings_table
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(s.c.value).where(s.c.key == "heldout_secret")).first()
        return None if row is None else str(row[0])

    def _move_secret_out(self, conn: sa.Connection) -> bool:
        """Move a secret kept in the settings table by an older version into the secret file
        (created if absent) and delete the row; False (row kept) when the file holds another
        secret or cannot be read, which :meth:`heldout_secret` then refuses."""
        s = settings_table
        row = conn.execute(sa.select(s.c.value).where(s.c.key == "heldout_secret")).first()
        if row is None:
            return True
        old = bytes.fromhex(str(row[0]))
        try:
            current = self._read_secret_file()
            if current is None:
                with contextlib.suppress(FileExistsError):
                    self._write_secret_file(old, exclusive=True)
                current = self._read_secret_file()
        except (OSError, ValueError):  # e.g. a group-readable file: heldout_secret() says so
            return False
        if current != old:
            return False
        conn.execute(sa.delete(s).where(s.c.key == "heldout_secret"))
        return True

    def _migrate_secret(self) -> None:
        """The secret-moving migration again, for a row written after the store was opened."""
        if self._stored_secret_row() is None:
            return
        self._read_secret_file()  # a badly protected file: its own, clearer error
        with self.engine.begin() as conn:
            moved = self._move_secret_out(conn)
        if not moved:
            raise RuntimeError(
                f"this store's settings table holds a held-out secret that differs "
                f"from {self.secret_file}; keep the one its entries were verified with "
                "(delete the other) before verifying"
            )

    def private_paths(self) -> list[str]:
        """Files a sandboxed agent must not read: this store's SQLite files, its secret file,
        the default secrets directory, PostgreSQL's local socket directories."""
        out = []
        if self.engine.url.get_backend_name() == "sqlite" and self.engine.url.database not in (
            None,
            "",
            ":memory:",
        ):
            db = os.path.abspath(self.engine.url.database)
            out += [db + suffix for suffix in ("", "-wal", "-shm", "-journal")]
        out.append(str(self.secret_file.absolute()))
        out.append(str((config_dir() / "leaderboard-secrets").absolute()))
        out += ["/run/postgresql", "/var/run/postgresql"]
        return [p for p in out if os.path.lexists(p)]

    def set_heldout_secret(self, secret: bytes) -> None:
        """Replace the secret in this store's secret file (0600). Held-out seeds change with it,
        so do it before verifying anything."""
        if len(secret) < 16:
            raise ValueError("a held-out secret needs at least 16 bytes")
        self._write_secret_file(bytes(secret), exclusive=False)
        with self.engine.begin() as conn:
            conn.execute(sa.delete(settings_table).where(settings_table.c.key == "heldout_secret"))

    def heldout_secret(self) -> bytes:
        """The server-side secret the held-out seeds are derived from.

        ``$ICML26_LEADERBOARD_SECRET`` when set; otherwise the content of :attr:`secret_file`,
        a random 256-bit value created (0600) on first use. Never in a table of the store
        (an older store's secret moves to the file here), never exported by pages or API.
        """
        env = os.environ.get(SECRET_ENV)
        if env:
            return env.encode("utf-8")
        self._migrate_secret()
        secret = self._read_secret_file()
        if secret is None:
            with contextlib.suppress(FileExistsError):  # created concurrently: read theirs
                self._write_secret_file(secrets.token_bytes(32), exclusive=True)
            secret = self._read_secret_file()
        assert secret is not None
        return secret


def open_leaderboard(store: LeaderboardStore | str | os.PathLike[str] | None) -> LeaderboardStore:
    return store if isinstance(store, LeaderboardStore) else LeaderboardStore(store)
