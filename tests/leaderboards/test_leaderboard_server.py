"""The web app on a real loopback socket: many simultaneous authorized submissions stored once
each, 401 / 413 / 429 / 422 / 409, the JSON API, pages with escaping and a strict CSP."""

from __future__ import annotations

import asyncio
import copy
import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from leaderboard_helpers import rehash, running_server, valid_bundle, variant

from icml26.leaderboards.server import create_app
from icml26.leaderboards.store import LeaderboardStore

MAX_BODY = 300_000


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, LeaderboardStore, dict[str, str]]]:
    store = LeaderboardStore(tmp_path_factory.mktemp("lbs") / "lb.db")
    tokens = {n: store.create_token(n) for n in ("alice", "bob", "carol", "dave", "eve")}
    store.revoke_token("eve")
    app = create_app(store, max_body=MAX_BODY, rate_limit=(1000, 60), reps=100)
    with running_server(app) as url:
        yield url, store, tokens


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def test_leaderboard_concurrent_submissions_stored_exactly_once(served: Any) -> None:
    url, store, tokens = served
    before = store.counts()
    base = valid_bundle("point-pd")
    distinct = [variant(base, i, f"concurrent {i}") for i in range(32)]
    users = ["alice", "bob", "carol", "dave"]
    jobs: list[tuple[str, dict[str, str], bytes]] = []
    for i, b in enumerate(distinct):
        jobs.append((f"b{i}", _auth(tokens[users[i % 4]]), json.dumps(b).encode()))
    for i, b in enumerate(distinct[:8]):  # the same bundle again, at the same time
        jobs.append((f"b{i}", _auth(tokens[users[(i + 1) % 4]]), json.dumps(b).encode()))
    body = json.dumps(distinct[0]).encode()
    for hdr in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic YWxpY2U6cHc="},
        {"Authorization": f"Bearer {tokens['eve']}"},
        {"Authorization": tokens["alice"]},
    ):
        jobs.append(("unauthorized", hdr, body))
    for _ in range(4):
        jobs.append(("oversized", _auth(tokens["alice"]), b" " * (MAX_BODY + 5000)))

    async def fire() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=len(jobs), max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
            return await asyncio.gather(
                *(client.post("/api/submissions", content=c, headers=h) for _, h, c in jobs)
            )

    responses = asyncio.run(fire())
    by_kind: dict[str, list[httpx.Response]] = defaultdict(list)
    for (kind, _, _), r in zip(jobs, responses):
        by_kind[kind].append(r)
    assert [r.status_code for r in by_kind.pop("unauthorized")] == [401] * 5
    oversized = by_kind.pop("oversized")
    assert [r.status_code for r in oversized] == [413] * 4
    assert "byte limit" in oversized[0].json()["error"]
    accepted_ids = []
    for key, rs in by_kind.items():
        codes = sorted(r.status_code for r in rs)
        assert codes == [201] + [409] * (len(rs) - 1), (key, [r.text for r in rs])
        ok = next(r for r in rs if r.status_code == 201).json()
        accepted_ids += ok["entry_ids"]
        for r in rs:
            if r.status_code == 409:
                assert r.json()["kind"] == "duplicate" and r.json()["errors"]
    assert len(accepted_ids) == len(set(accepted_ids)) == 32
    after = store.counts()
    assert after["icml26_lb_entries"] - before["icml26_lb_entries"] == 32
    assert after["icml26_lb_submissions"] - before["icml26_lb_submissions"] == 32
    entries = store.entries()
    hashes = Counter(e.content_hash for e in entries)
    assert all(hashes[b["content_hash"]] == 1 for b in distinct)
    assert {e.submitter for e in entries if e.id in accepted_ids} <= set(users)
    assert all(e.status == "PENDING" for e in entries if e.id in accepted_ids)


def test_leaderboard_validation_errors_as_json(served: Any) -> None:
    url, store, tokens = served
    b = valid_bundle("point-pd")
    b["results"][0]["metrics"]["success_rate"] = 3.0
    before = store.dump()
    r = httpx.post(f"{url}/api/submissions", content=json.dumps(b), headers=_auth(tokens["bob"]))
    assert r.status_code == 422
    errs = {e["field"]: e["message"] for e in r.json()["errors"]}
    assert "outside the metric's documented range" in errs["results[0].metrics.success_rate"]
    assert "content_hash" in errs  # altered after hashing
    assert store.dump() == before
    r = httpx.post(f"{url}/api/submissions", content=b"{not json", headers=_auth(tokens["bob"]))
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "bundle"


def test_leaderboard_chunked_oversized_body(served: Any) -> None:
    url, _, tokens = served

    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            yield b" " * 10_000

    r = httpx.post(f"{url}/api/submissions", content=chunks(), headers=_auth(tokens["carol"]))
    assert r.status_code == 413


def test_leaderboard_rate_limit_per_token(tmp_path: Path) -> None:
    store = LeaderboardStore(tmp_path / "lb.db")
    t1, t2 = store.create_token("one"), store.create_token("two")
    with running_server(create_app(store, rate_limit=(2, 3600), reps=100)) as url:
        codes = [
            httpx.post(f"{url}/api/submissions", content=b"{}", headers=_auth(t1)).status_code
            for _ in range(3)
        ]
        assert codes == [422, 422, 429]
        r = httpx.post(f"{url}/api/submissions", content=b"{}", headers=_auth(t1))
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 3500
        assert (
            httpx.post(f"{url}/api/submissions", content=b"{}", headers=_auth(t2)).status_code
            == 422
        )


def test_leaderboard_api_and_pages(served: Any) -> None:
    url, store, tokens = served
    b = variant(valid_bundle("point-pd"), 500, "Escaping check")
    b["description"] = "<script>document.title='pwned'</script> & <b>bold</b>"
    from leaderboard_helpers import rehash

    r = httpx.post(
        f"{url}/api/submissions", content=json.dumps(rehash(b)), headers=_auth(tokens["dave"])
    )
    assert r.status_code == 201, r.text
    eid = r.json()["entry_ids"][0]
    c = httpx.Client(base_url=url, timeout=120)
    tasks = c.get("/api/tasks").json()
    row = next(t for t in tasks if t["task_id"] == "tutorial/point-reach")
    assert row["n_pending"] >= 1 and row["leader"] is None  # nothing verified yet
    ranking = c.get("/api/tasks/tutorial/point-reach").json()
    assert ranking["task_key"] == "tutorial/point-reach@v0" and not ranking["verified"]
    assert any(x["entry_id"] == eid for x in ranking["unverified"])
    assert c.get("/api/tasks/nope/task").status_code == 404
    entry = c.get(f"/api/entries/{eid}").json()
    assert entry["description"] == b["description"] and entry["submitter"] == "dave"
    assert c.get("/api/entries/999999").status_code == 404
    assert c.get("/api/entries?status=BOGUS").status_code == 422
    listed = c.get(
        "/api/entries", params={"task": "tutorial/point-reach", "status": "PENDING"}
    ).json()
    assert eid in [e["id"] for e in listed]
    # pages: the same static site, escaped, with a strict CSP
    r = c.get("/", follow_redirects=True)
    assert r.status_code == 200 and "Escaping check" in r.text
    assert "script-src 'self'" in r.headers["content-security-policy"]
    page = c.get(f"/entries/{eid}.html").text
    assert "&lt;script&gt;document.title=" in page and "<script>document.title" not in page
    assert "&amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert c.get("/tasks/tutorial.point-reach.v0.html").status_code == 200
    assert c.get("/assets/sort.js").headers["content-type"].startswith("text/javascript")
    for bad in (
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/.icml26-leaderboard-site",
        "/nope.html",
    ):
        assert c.get(bad).status_code == 404, bad


# ----------------------------------------------------------------------------- robustness
def _bundle_with_number(base: dict[str, Any], literal: str) -> bytes:
    """``base`` serialized with its first trial's ``return`` replaced by a raw JSON literal."""
    b = copy.deepcopy(base)
    b["results"][0]["metrics"]["return"] = "__NUMBER__"
    return json.dumps(b).replace('"__NUMBER__"', literal).encode()


def test_huge_integer_literal_is_a_422_naming_the_field(served: Any) -> None:
    url, store, tokens = served
    before = store.dump()
    body = _bundle_with_number(variant(valid_bundle("point-pd"), 900), "-1" + "0" * 400)  # -10**400
    r = httpx.post(f"{url}/api/submissions", content=body, headers=_auth(tokens["bob"]), timeout=60)
    assert r.status_code == 422, r.text
    fields = [e["field"] for e in r.json()["errors"]]
    assert "results[0].metrics.return" in fields, r.json()
    assert store.dump() == before


def test_bad_queries_are_4xx_not_500(served: Any) -> None:
    url, _, _ = served
    c = httpx.Client(base_url=url, timeout=60)
    for path, code in [
        ("/api/entries?task=x@vbad", 400),
        ("/api/entries?task=tutorial/point-reach@v-1", 400),
        ("/api/tasks/tutorial/point-reach@vbad", 400),
        ("/api/entries/99999999999999999999999", 404),
        ("/api/entries/-5", 404),
        ("/api/entries/9223372036854775807", 404),
    ]:
        r = c.get(path)
        assert r.status_code == code, (path, r.status_code, r.text)
    assert c.get("/api/entries?task=tutorial/point-reach@v0").status_code == 200


def _store_with_verified_entry(path: Path) -> tuple[LeaderboardStore, str]:
    store = LeaderboardStore(path)
    token = store.create_token("alice")
    receipt = store.submit(json.dumps(variant(valid_bundle("point-pd"), 950)), "alice")
    store.set_status(receipt.entry_ids[0], "VERIFIED", "test: marked verified by hand")
    return store, token


def test_locked_database_is_a_quick_503_with_retry_after(tmp_path: Path) -> None:
    store, token = _store_with_verified_entry(tmp_path / "lb.db")
    blocker = sqlite3.connect(tmp_path / "lb.db", timeout=0, isolation_level=None)
    with running_server(create_app(store, reps=50, lock_timeout=1.0, retry_after=7)) as url:
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            body = json.dumps(variant(valid_bundle("point-pd"), 951))
            t0 = time.monotonic()
            r = httpx.post(f"{url}/api/submissions", content=body, headers=_auth(token), timeout=60)
            took = time.monotonic() - t0
            assert r.status_code == 503, r.text
            assert r.headers["retry-after"] == "7" and "locked" in r.json()["error"]
            assert took < 15, took  # 1 s lock wait, not the store's 60 s
            # reading goes on meanwhile (the statistics memo cannot be written: kept in memory)
            assert httpx.get(f"{url}/api/tasks", timeout=60).status_code == 200
            assert httpx.get(f"{url}/index.html", timeout=60).status_code == 200
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        r = httpx.post(f"{url}/api/submissions", content=body, headers=_auth(token), timeout=60)
        assert r.status_code == 201, r.text


def test_read_only_store_serves_every_get(tmp_path: Path) -> None:
    store, token = _store_with_verified_entry(tmp_path / "lb.db")
    eid = store.entries()[0].id
    store.close()
    ro = LeaderboardStore(f"sqlite:///file:{tmp_path / 'lb.db'}?mode=ro&uri=true")
    with running_server(create_app(ro, reps=50)) as url:
        c = httpx.Client(base_url=url, timeout=60)
        tasks = c.get("/api/tasks")
        assert tasks.status_code == 200
        row = next(t for t in tasks.json() if t["task_id"] == "tutorial/point-reach")
        assert row["n_verified"] == 1 and row["leader"]["entry_id"] == eid
        for path in (
            "/api/tasks/tutorial/point-reach",
            "/api/entries",
            f"/api/entries/{eid}",
            "/index.html",
            f"/entries/{eid}.html",
            "/tasks/tutorial.point-reach.v0.html",
        ):
            assert c.get(path).status_code == 200, path
        r = c.post(
            "/api/submissions",
            content=json.dumps(variant(valid_bundle("point-pd"), 952)),
            headers=_auth(token),
        )
        assert (
            r.status_code == 503 and "read-only" in r.json()["error"] and r.headers["retry-after"]
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_cold_server_stores_every_valid_concurrent_submission_once(tmp_path: Path) -> None:
    """16 submissions at once to a server process started seconds ago (registries cold before
    it started): every valid bundle is stored exactly once; the one that claims a registered
    agent name with a foreign entry point is refused."""
    db = tmp_path / "cold.db"
    store = LeaderboardStore(db)
    token = store.create_token("alice")
    base = valid_bundle("point-pd")
    bodies = [json.dumps(variant(base, 1000 + i, f"cold {i}")).encode() for i in range(15)]
    foreign = variant(base, 2000, "impostor")
    foreign["agent"]["entry_point"] = "mypkg.agents:Impostor"
    bodies.append(json.dumps(rehash(foreign)).encode())
    port = _free_port()
    code = f"from icml26.leaderboards.server import serve; serve({str(db)!r}, port={port})"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)

        async def fire() -> list[httpx.Response]:
            limits = httpx.Limits(max_connections=16, max_keepalive_connections=0)
            async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
                return await asyncio.gather(
                    *(
                        client.post("/api/submissions", content=b, headers=_auth(token))
                        for b in bodies
                    )
                )

        responses = asyncio.run(fire())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    codes = [r.status_code for r in responses]
    assert codes[:15] == [201] * 15, [r.text for r in responses if r.status_code != 201][:2]
    assert codes[15] == 422
    assert any(
        e["field"] == "agent.entry_point" and "registered agent" in e["message"]
        for e in responses[15].json()["errors"]
    ), responses[15].json()
    entries = store.entries()
    assert len(entries) == 15 and len({e.content_hash for e in entries}) == 15
    assert sorted(e.name for e in entries) == sorted(f"cold {i}" for i in range(15))
