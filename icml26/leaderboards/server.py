"""The leaderboard web app (FastAPI on uvicorn): the static site's pages plus a JSON API.

    icml26 leaderboard serve --port 8026 [--store results/leaderboard.db]

Pages are exactly those of ``icml26 leaderboard render`` (re-rendered when the store changes).
API:

* ``GET /api/tasks`` -- every task version with entries: leader, counts.
* ``GET /api/tasks/{task}`` -- a task's ranking (``tutorial/point-reach`` or ``...@v0``).
* ``GET /api/entries[?task=T&status=S]``, ``GET /api/entries/{id}`` -- entries with provenance.
* ``POST /api/submissions`` -- body: a submission bundle; header ``Authorization: Bearer
  <token>`` (``icml26 leaderboard token create NAME``). 201 with the entry ids; 401 without a
  valid token; 413 when the body exceeds the size limit; 429 (with ``Retry-After``) beyond the
  per-token rate limit; 422 with ``{"errors": [{"field", "message"}]}`` for an invalid bundle;
  409 for a duplicate.

Robustness: a bad query (``?task=x@vbad``) is a 400 and an id beyond any entry a 404, never a
500; a number no float can hold (``-10**400``) is a 422 naming its field; when the database is
locked by a writer, a request waits at most ``lock_timeout`` seconds (default 5) and then gets a
503 with ``Retry-After``; on a read-only store every page and GET still works (the statistics
memo is kept in memory when the store refuses the write). The task and agent registries are
filled before the app serves its first request.

Every response carries a strict Content-Security-Policy (scripts and styles from this origin
only); every user-supplied string in a page is HTML-escaped by the templates.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import math
import mimetypes
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from icml26.leaderboards.store import STATUSES, LeaderboardStore, open_leaderboard
from icml26.leaderboards.validate import LIMITS, SubmissionInvalid

__all__ = ["create_app", "serve", "RateLimiter", "SiteCache"]

CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class RateLimiter:
    """At most ``limit`` requests per ``window`` seconds per key (sliding window, in memory,
    per server process)."""

    def __init__(self, limit: int, window: float) -> None:
        if limit < 1 or window <= 0:
            raise ValueError(
                f"rate limit: expected limit >= 1 and window > 0, got {limit}/{window}"
            )
        self.limit, self.window = int(limit), float(window)
        self._hits: dict[str, collections.deque[float]] = collections.defaultdict(collections.deque)
        self._lock = threading.Lock()

    def hit(self, key: str) -> float | None:
        """Record a request; return None if allowed, else seconds until one is allowed."""
        now = time.monotonic()
        with self._lock:
            q = self._hits[key]
            while q and q[0] <= now - self.window:
                q.popleft()
            if len(q) >= self.limit:
                return max(self.window - (now - q[0]), 0.0)
            q.append(now)
            return None


class SiteCache:
    """The rendered site of the store's current revision, re-rendered when it changes."""

    def __init__(self, store: LeaderboardStore, **render_options: Any) -> None:
        self.store = store
        self.options = render_options
        self._lock = threading.Lock()
        self._rev: int | None = None
        self._dirs: collections.deque[Path] = collections.deque()
        self._figures = Path(tempfile.mkdtemp(prefix="icml26-leaderboard-figures-"))

    def current(self) -> Path:
        rev = self.store.revision()
        if rev == self._rev and self._dirs:
            return self._dirs[-1] / "site"
        from icml26.leaderboards.site import render_site

        with self._lock:
            rev = self.store.revision()
            if rev != self._rev or not self._dirs:
                base = Path(tempfile.mkdtemp(prefix="icml26-leaderboard-"))
                render_site(self.store, base / "site", figure_cache=self._figures, **self.options)
                self._dirs.append(base)
                self._rev = rev
                while len(self._dirs) > 2:  # keep the previous one for requests in flight
                    shutil.rmtree(self._dirs.popleft(), ignore_errors=True)
            return self._dirs[-1] / "site"

    def close(self) -> None:
        while self._dirs:
            shutil.rmtree(self._dirs.popleft(), ignore_errors=True)
        shutil.rmtree(self._figures, ignore_errors=True)


_MAX_ID = 2**63 - 1  # SQL BIGINT: an id beyond it cannot exist


def _check_task_query(task: str | None) -> None:
    """``id`` or ``id@vN`` with N a non-negative integer; anything else is a 400."""
    if task is None or "@v" not in task:
        return
    _, _, ver = task.rpartition("@v")
    if not ver.isascii() or not ver.isdigit() or int(ver) > _MAX_ID:
        raise HTTPException(
            400,
            f"task must be '<family>/<name>' or '<family>/<name>@v<N>' with N a "
            f"non-negative integer, got {task[:200]!r}",
        )


def _overflowing_numbers(body: bytes) -> list[str]:
    """The fields of a JSON body holding an integer literal too large for a float."""
    import json

    try:
        doc = json.loads(body)
    except ValueError:
        return []
    found: list[str] = []

    def walk(x: Any, path: str) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif isinstance(x, int) and not isinstance(x, bool):
            try:
                float(x)
            except OverflowError:
                found.append(path or "bundle")

    walk(doc, "")
    return found


def _db_trouble(exc: BaseException) -> str:
    """What a database error means for the client, in words."""
    text = str(getattr(exc, "orig", exc)).lower()
    if "locked" in text or "busy" in text:
        return "the database is locked by another writer"
    if "readonly" in text or "read-only" in text:
        return "the database is read-only (submissions are closed; pages and GETs work)"
    return f"the database is unavailable ({type(getattr(exc, 'orig', exc)).__name__})"


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


def create_app(  # noqa: C901
    store: LeaderboardStore | str | os.PathLike[str] | None = None,
    *,
    max_body: int = LIMITS["bundle_bytes"],
    rate_limit: tuple[int, float] = (30, 3600.0),
    reps: int = 2000,
    seed: int = 0,
    title: str = "icml26-gym leaderboard",
    lock_timeout: float = 5.0,
    retry_after: int = 5,
) -> Any:
    """The ASGI app for ``store``: pages, JSON API and authenticated submissions.

    ``max_body``: request body limit in bytes (413 beyond); ``rate_limit``: ``(n, seconds)``
    submissions per token (429 beyond); ``lock_timeout``: seconds a request waits for a SQLite
    lock before it gets a 503 with ``Retry-After: retry_after``.
    """
    from icml26 import agents, benchmarks
    from icml26.leaderboards.ranking import local_memo, rank_all

    if not (
        isinstance(lock_timeout, (int, float)) and math.isfinite(lock_timeout) and lock_timeout >= 0
    ):
        raise ValueError(f"lock_timeout must be a number of seconds >= 0, got {lock_timeout!r}")
    # Fill the registries now: validating a bundle needs all of them, and a cold registry
    # filled by racing request threads must never be seen half-filled.
    benchmarks.list_tasks()
    agents.all_specs()
    st = open_leaderboard(store)
    _short_lock_wait(st, lock_timeout)
    # The server's view of the store: same database, but a statistics memo that tolerates a
    # store that refuses writes (read-only file, locked database): GETs never fail on it.
    view = copy.copy(st)
    view.memo = _tolerant_memo(st, local_memo)  # type: ignore[method-assign]
    limiter = RateLimiter(*rate_limit)
    site = SiteCache(view, reps=reps, seed=seed, title=title)

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> Any:
        yield
        site.close()

    app = FastAPI(
        title=title,
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/api/openapi.json",
        lifespan=lifespan,
    )
    app.state.store, app.state.site, app.state.limiter = st, site, limiter

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Response:
        response = await call_next(request)
        if not request.url.path.startswith("/api/docs"):
            response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    def error(status: int, message: str, **extra: Any) -> JSONResponse:
        headers = extra.pop("headers", None)
        return JSONResponse({"error": message, **extra}, status_code=status, headers=headers)

    @app.exception_handler(sa.exc.OperationalError)
    async def database_unavailable(request: Request, exc: sa.exc.OperationalError) -> JSONResponse:
        why = _db_trouble(exc)
        return error(
            503, f"{why}; retry in {retry_after} s", headers={"Retry-After": str(retry_after)}
        )

    # ------------------------------------------------------------------ API
    @app.get("/api/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "revision": st.revision()}

    @app.get("/api/tasks")
    def api_tasks() -> list[dict[str, Any]]:
        out = []
        for r in rank_all(view, reps=reps, seed=seed):
            lead = r.leader
            out.append(
                {
                    "task_key": r.task_key,
                    "task_id": r.task_id,
                    "task_version": r.task_version,
                    "primary_metric": r.primary_metric,
                    "direction": r.direction,
                    "leader": None if lead is None else lead.to_dict(),
                    "n_verified": len(r.verified),
                    "n_pending": len(r.unverified),
                    "n_rejected_or_failed": len(r.closed),
                }
            )
        return out

    @app.get("/api/tasks/{task:path}")
    def api_task(task: str) -> dict[str, Any]:
        _check_task_query(task)
        rankings = [
            r for r in rank_all(view, reps=reps, seed=seed) if task in (r.task_key, r.task_id)
        ]
        if not rankings:
            raise HTTPException(404, f"no entries for task {task!r}")
        return max(rankings, key=lambda r: r.task_version).to_dict()

    @app.get("/api/entries")
    def api_entries(task: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        if status is not None and status not in STATUSES:
            raise HTTPException(422, f"status must be one of {list(STATUSES)}, got {status!r}")
        _check_task_query(task)
        return [e.public_dict() for e in st.entries(task=task, status=status, with_events=True)]

    @app.get("/api/entries/{entry_id}")
    def api_entry(entry_id: int) -> dict[str, Any]:
        if not 0 <= entry_id <= _MAX_ID:
            raise HTTPException(404, f"no entry #{entry_id}")
        try:
            return st.entry(entry_id).public_dict()
        except KeyError:
            raise HTTPException(404, f"no entry #{entry_id}") from None

    @app.post("/api/submissions", status_code=201)
    async def api_submit(request: Request) -> Response:
        token = _bearer(request.headers.get("authorization"))
        who = await run_in_threadpool(st.authenticate, token) if token else None
        if who is None:
            return error(
                401,
                "a valid bearer token is required (Authorization: Bearer <token>; "
                "ask the organizers, who create one with `icml26 leaderboard token create`)",
                headers={"WWW-Authenticate": 'Bearer realm="icml26-leaderboard"'},
            )
        wait = limiter.hit(who)
        if wait is not None:
            return error(
                429,
                f"rate limit: at most {limiter.limit} submissions per "
                f"{limiter.window:g} s per token; retry in {wait:.0f} s",
                headers={"Retry-After": str(max(1, int(wait + 0.999)))},
            )
        too_large = error(
            413,
            f"request body larger than the {max_body}-byte limit for a submission",
            kind="too_large",
        )
        declared = request.headers.get("content-length")
        if declared is not None:
            try:
                n = int(declared)
            except ValueError:
                return error(400, f"bad Content-Length header {declared!r}")
            if n > 4 * max_body:
                return too_large  # not worth draining; the connection is closed
        body = bytearray()
        received = 0
        async for chunk in request.stream():
            received += len(chunk)
            if received <= max_body:
                body.extend(chunk)
            elif received > 4 * max_body:
                break  # stop draining; the 413 goes out and the connection is closed
            # between the two: keep draining so that the client can read the 413
        if received > max_body:
            return too_large
        try:
            receipt = await run_in_threadpool(st.submit, bytes(body), who)
        except SubmissionInvalid as e:
            status = {"duplicate": 409, "too_large": 413}.get(e.kind, 422)
            return JSONResponse(e.to_dict(), status_code=status)
        except OverflowError:
            fields = _overflowing_numbers(bytes(body)) or ["bundle"]
            return JSONResponse(
                {
                    "error": "submission rejected",
                    "kind": "invalid",
                    "errors": [
                        {
                            "field": f,
                            "message": "integer too large for a float (every number must be finite)",
                        }
                        for f in fields
                    ],
                },
                status_code=422,
            )
        return JSONResponse(receipt.to_dict(), status_code=201)

    # ------------------------------------------------------------------ pages
    @app.get("/", include_in_schema=False)
    def root() -> Response:
        return RedirectResponse("/index.html", status_code=307)

    @app.get("/{path:path}", include_in_schema=False)
    def page(path: str) -> Response:
        base = site.current().resolve()
        target = (base / path).resolve()
        if not target.is_relative_to(base) or not target.is_file() or target.name.startswith("."):
            raise HTTPException(404, f"no page {path!r}")
        media = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if target.suffix in (".html", ".css", ".js", ".svg", ".json"):
            media += "; charset=utf-8"
        return FileResponse(target, media_type=media)

    return app


def _short_lock_wait(st: LeaderboardStore, seconds: float) -> None:
    """Make the server's SQLite connections wait at most ``seconds`` for a lock (the store's
    default is 60 s): a locked database then answers 503 quickly instead of hanging."""
    engine = st.engine
    if engine.dialect.name != "sqlite":
        return
    ms = int(seconds * 1000)

    @sa.event.listens_for(engine, "connect")
    def _busy_timeout(dbapi_conn: Any, _: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {ms}")
        cur.close()

    engine.dispose()  # pooled connections were opened with the long timeout


def _tolerant_memo(st: LeaderboardStore, fallback: Any) -> Any:
    """``st.memo``, except that a store that cannot be written (or read) for the memo falls
    back to an in-process memo: statistics are the same numbers, only not shared."""

    def memo(kind: str, args: Any, compute: Any) -> Any:
        box: list[Any] = []

        def once() -> Any:
            box.append(compute())
            return box[0]

        try:
            return st.memo(kind, args, once)
        except sa.exc.DBAPIError:
            if box:
                return box[0]
            return fallback(kind, args, compute)

    return memo


def serve(
    store: LeaderboardStore | str | os.PathLike[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8026,
    **options: Any,
) -> None:
    """Run the app with uvicorn until interrupted."""
    import uvicorn

    app = create_app(store, **options)
    print(f"icml26 leaderboard: http://{host}:{port}/ (store {app.state.store.url})")
    uvicorn.run(app, host=host, port=port, log_level="info")
