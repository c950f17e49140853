"""The static site: every page and figure written, every link relative and resolving on disk,
verified / unverified / rejected entries in their own tables, user text escaped, no secret."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from leaderboard_helpers import TEST_NONCE, demo_store

from icml26 import benchmarks
from icml26.leaderboards.site import render_site, task_slug
from icml26.leaderboards.store import LeaderboardStore
from icml26.leaderboards.verify import heldout_seeds
from icml26.stats import iqm


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_tbody = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("href", "src"):
            if a.get(key):
                self.links.append(a[key] or "")
        if tag == "table" and a.get("id"):
            self._table = a["id"]
            self.tables[self._table] = []
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._table and self._in_tbody:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "tbody":
            self._in_tbody = False
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LeaderboardStore, dict[str, int]]:
    path, ids = demo_store()
    store = LeaderboardStore(path)
    out = render_site(store, tmp_path_factory.mktemp("site") / "site", reps=300)
    return out, store, ids


def test_leaderboard_site_files_and_links(site: Any) -> None:
    out, store, ids = site
    pages = sorted(out.rglob("*.html"))
    names = {p.relative_to(out).as_posix() for p in pages}
    assert "index.html" in names
    for t in benchmarks.list_tasks():  # every registered task has a page, even without entries
        assert f"tasks/{task_slug(t.key)}.html" in names
    assert {f"entries/{i}.html" for i in ids.values()} <= names
    for stem in ("figures/task-tutorial.point-reach.v0", "figures/profile-tutorial"):
        assert (out / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert b"<svg" in (out / f"{stem}.svg").read_bytes()[:500]
    for page in pages:
        for link in parse(page).links:
            if link.startswith(("http://", "https://")):
                continue  # an entry's own link to its paper/code
            assert not link.startswith("/"), f"{page}: absolute link {link}"
            target = (page.parent / link.split("#")[0]).resolve()
            assert target.is_file(), f"{page.relative_to(out)} links to missing {link}"
    data = json.loads(
        (out / "data" / "leaderboard.json").read_text(),
        parse_constant=lambda c: pytest.fail(f"non-finite {c} in leaderboard.json"),
    )
    tut = next(r for r in data["rankings"] if r["task_id"] == "tutorial/point-reach")
    assert [r["entry_id"] for r in tut["verified"]] == [ids["pd"], ids["random"]]


def test_leaderboard_site_tables_by_status(site: Any) -> None:
    out, store, ids = site
    page = parse(out / "tasks" / "tutorial.point-reach.v0.html")
    ranking = page.tables["ranking"]
    assert [r[1].split()[0] for r in ranking] == [f"#{ids['pd']}", f"#{ids['random']}"]
    assert [r[0] for r in ranking] == ["1", "2"]
    # rank, entry, agent, re-run IQM, CI, claimed IQM, tied, P(better than next), ...
    assert ranking[0][6] == "leader" and ranking[1][6] == "no"
    assert ranking[0][7].startswith("1.00")  # PD beats random on every pair of seeds
    pd, rnd = store.entry(ids["pd"]), store.entry(ids["random"])
    assert float(ranking[0][3]) == pytest.approx(iqm(pd.rerun_values("return")), rel=1e-3)
    assert float(ranking[0][5]) == pytest.approx(iqm(pd.values("return")), rel=1e-3)
    assert float(ranking[1][3]) == pytest.approx(iqm(rnd.rerun_values("return")), rel=1e-3)
    assert [r[1].split()[0] for r in page.tables["unverified"]] == [f"#{ids['soft']}"]
    closed = {r[0]: r for r in page.tables["closed"]}
    assert (
        closed[f"#{ids['inflated']}"][2] == "REJECTED"
        and "> allowed" in closed[f"#{ids['inflated']}"][3]
    )
    # the public reason names the exception's type, never the agent's own words
    assert closed[f"#{ids['crash']}"][2] == "FAILED"
    assert closed[f"#{ids['crash']}"][3].endswith("the agent raised RuntimeError")
    assert "crashed on purpose" in store.private_detail(ids["crash"])["detail"]
    index = parse(out / "index.html")
    assert len(index.tables["entries-table"]) == len(ids)
    assert index.tables["aggregate-tutorial"][0][0] == "PD controller"


def test_leaderboard_site_escapes_and_keeps_secrets(site: Any) -> None:
    out, store, ids = site
    html = (out / "entries" / f"{ids['soft']}.html").read_text()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    everything = "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in out.rglob("*")
        if p.is_file() and p.suffix in (".html", ".json", ".svg")
    )
    assert "<script>alert" not in everything
    assert "crashed on purpose" not in everything  # the agent's own text stays private
    seeds = heldout_seeds(
        benchmarks.get_task("tutorial/point-reach"), store.heldout_secret(), nonce=TEST_NONCE
    )
    for s in seeds:
        assert not re.search(rf"\b{s}\b", everything), f"held-out seed {s} leaked"
    assert store.heldout_secret().hex() not in everything
    # provenance on the entry page
    pd = (out / "entries" / f"{ids['pd']}.html").read_text()
    e = store.entry(ids["pd"])
    for needle in (
        e.content_hash,
        "icml26.agents.tutorial.pd:PDController",
        "icml26-gym==",
        "VERIFIED",
        "held-out seeds",
    ):
        assert needle in pd, needle


def test_leaderboard_render_refuses_foreign_directory(site: Any, tmp_path: Path) -> None:
    out, store, _ = site
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not empty"):
        render_site(store, tmp_path, reps=300)
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    render_site(store, out, reps=300)  # over its own previous output: fine
    assert (out / "index.html").is_file()


def test_leaderboard_figure_cache_reuses_unchanged_figures(site: Any, tmp_path: Path) -> None:
    out, store, _ = site
    cache = tmp_path / "cache"
    cache.mkdir()
    a = render_site(store, tmp_path / "a", reps=300, figure_cache=cache)
    b = render_site(store, tmp_path / "b", reps=300, figure_cache=cache)
    assert len(list(cache.iterdir())) == 2  # one task figure, one profile view
    for name in ("task-tutorial.point-reach.v0.png", "profile-tutorial.svg"):
        assert (a / "figures" / name).read_bytes() == (b / "figures" / name).read_bytes()
