"""A real browser (headless Debian Chromium via selenium) on the served leaderboard and on the
static site opened from disk: read the ranking table, sort columns, follow an entry's link.

Skips when /usr/bin/chromium or /usr/bin/chromedriver is missing (``.ci/run`` installs them).
With ``ICML26_UPDATE_SCREENSHOTS=1`` it also refreshes docs/figures/leaderboard_overview.png.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from leaderboard_helpers import demo_store, running_server

from icml26.leaderboards.ranking import rank_all
from icml26.leaderboards.server import create_app
from icml26.leaderboards.site import render_site
from icml26.leaderboards.store import LeaderboardStore

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "figures" / "leaderboard_overview.png"

pytestmark = pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="Debian chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)",
)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="icml26-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1280,1500",
    ):
        opts.add_argument(arg)
    # an explicit driver path: selenium never tries to download one
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_page_load_timeout(120)
    try:
        yield d
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _wait(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 60).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def _column(driver: Any, table: str, col: int, attr: str | None = None) -> list[str]:
    from selenium.webdriver.common.by import By

    cells = driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr td:nth-child({col})")
    return [c.get_attribute(attr) if attr else c.text for c in cells]


def _sort(driver: Any, table: str, col: int) -> str:
    from selenium.webdriver.common.by import By

    th = driver.find_element(By.CSS_SELECTOR, f"#{table} thead th:nth-child({col})")
    th.find_element(By.CSS_SELECTOR, "button.sort").click()
    return th.get_attribute("aria-sort")


def _no_alert(driver: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert  # noqa: B018  (an injected script would have opened one)


def test_leaderboard_browser_served_site(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    path, ids = demo_store()
    store = LeaderboardStore(path)
    with running_server(create_app(store, reps=300)) as url:
        driver.get(url + "/")
        _wait(driver, "#tasks-table")
        assert driver.title == "icml26-gym leaderboard"
        _wait(driver, "img[src*='profile-tutorial']")
        shot = tmp_path / "overview.png"
        driver.save_screenshot(str(shot))
        assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000
        if os.environ.get("ICML26_UPDATE_SCREENSHOTS"):
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, SCREENSHOT)

        # the submissions table sorts by entry number, both ways
        assert _column(driver, "entries-table", 1) == [
            f"#{i}" for i in sorted(ids.values(), reverse=True)
        ]
        assert _sort(driver, "entries-table", 1) == "ascending"
        assert _column(driver, "entries-table", 1) == [f"#{i}" for i in sorted(ids.values())]
        assert _sort(driver, "entries-table", 1) == "descending"
        assert _column(driver, "entries-table", 1)[0] == f"#{max(ids.values())}"

        # follow the task link, read the ranking table, compare with the ranking computed here
        driver.find_element(
            By.CSS_SELECTOR, "#tasks-table a[href*='tutorial.point-reach.v0']"
        ).click()
        _wait(driver, "#ranking")
        assert driver.current_url.endswith("/tasks/tutorial.point-reach.v0.html")
        expected = next(r for r in rank_all(store, reps=300) if r.task_id == "tutorial/point-reach")
        names = _column(driver, "ranking", 2)
        assert names == [f"#{r.entry.id} {r.entry.name}" for r in expected.verified]
        iqms = [float(x) for x in _column(driver, "ranking", 4, "data-sort")]
        assert iqms == pytest.approx([r.iqm for r in expected.verified])
        assert iqms == sorted(iqms, reverse=True)
        unverified = _column(driver, "unverified", 2)
        assert unverified == [f"#{ids['soft']} PD, soft gains"]

        # sort the ranking by its IQM column: ascending puts random first, then back
        assert _sort(driver, "ranking", 4) == "ascending"
        assert [float(x) for x in _column(driver, "ranking", 4, "data-sort")] == sorted(iqms)
        assert _column(driver, "ranking", 2)[0].endswith("Uniform random")
        assert _sort(driver, "ranking", 4) == "descending"
        assert _column(driver, "ranking", 2)[0].endswith("PD controller")

        # follow the leader's link to its entry page
        driver.find_element(
            By.CSS_SELECTOR, "#ranking tbody tr:first-child td:nth-child(2) a"
        ).click()
        _wait(driver, "#entry-name")
        assert driver.current_url.endswith(f"/entries/{ids['pd']}.html")
        assert driver.find_element(By.ID, "entry-name").text == f"#{ids['pd']} PD controller"
        assert "VERIFIED" in driver.find_element(By.CSS_SELECTOR, ".badge").text
        assert len(driver.find_elements(By.CSS_SELECTOR, "#trials tbody tr")) == 5

        # user text with a script tag is shown, never run
        driver.get(f"{url}/entries/{ids['soft']}.html")
        _wait(driver, ".description")
        assert (
            "<script>alert('x')</script>"
            in driver.find_element(By.CSS_SELECTOR, ".description").text
        )
        _no_alert(driver)


def test_leaderboard_browser_static_site_from_disk(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    path, ids = demo_store()
    out = render_site(LeaderboardStore(path), tmp_path / "site", reps=300)
    driver.get((out / "index.html").as_uri())
    _wait(driver, "#entries-table")
    assert _sort(driver, "entries-table", 1) == "ascending"  # the script loaded from disk
    assert _column(driver, "entries-table", 1)[0] == f"#{min(ids.values())}"
    driver.find_element(By.CSS_SELECTOR, "#tasks-table a[href*='tutorial.point-reach.v0']").click()
    _wait(driver, "#ranking")
    assert _column(driver, "ranking", 2)[0] == f"#{ids['pd']} PD controller"
    img = driver.find_element(By.CSS_SELECTOR, "figure img")
    assert driver.execute_script("return arguments[0].naturalWidth", img) > 100  # figure loaded
