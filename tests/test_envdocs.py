"""docs/envs pages are generated from the env docstrings, and every docstring example runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from icml26.testing import envdocs


def _classes() -> list[type]:
    return [cls for fam in envdocs.pages() for cls, _ in envdocs.env_classes(fam)]


def test_pages_are_up_to_date() -> None:
    # In a fresh interpreter: other tests register their own agents and tasks in this process's
    # registries, which would show up in the generated tables.
    out = subprocess.run(
        [sys.executable, "-m", "icml26.testing.envdocs", "--check"], capture_output=True, text=True
    )
    assert out.returncode == 0, (
        f"docs/envs pages are stale ({out.stdout.strip()} {out.stderr.strip()}); run `{envdocs.COMMAND}`"
    )


def test_every_family_has_a_page_and_every_class_is_on_it() -> None:
    on_disk = {p.stem for p in envdocs.DOCS_DIR.glob("*.md")}
    assert on_disk == set(envdocs.pages().values()), (
        "a docs/envs page no family generates, or one missing"
    )
    for fam in envdocs.pages():
        page = envdocs.render_page(fam)
        for cls, specs in envdocs.env_classes(fam):
            assert f"## {cls.__name__}" in page
            for spec in specs:
                assert f"`{spec['id']}`" in page


def test_fence_and_heading_helpers() -> None:
    text = "## Example\n>>> 1 + 1\n2\n\nafter"
    out = envdocs._shift_headings(envdocs._fence_doctests(text))
    assert out == "### Example\n```pycon\n>>> 1 + 1\n2\n```\n\nafter"


def test_run_examples_reports_failures() -> None:
    class Bad:
        """## Example\n>>> 1 + 1\n3\n"""

    class Empty:
        """No example."""

    assert envdocs.run_examples(Bad).failed == 1
    with pytest.raises(ValueError, match="no '>>>' example"):
        envdocs.run_examples(Empty)


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_docstring_example_runs(cls: type) -> None:
    result = envdocs.run_examples(cls)
    assert result.attempted > 0
    assert result.failed == 0, f"the '>>>' example of {cls.__qualname__} failed (see output above)"


def test_cli_write_then_check_detects_an_edited_page(
    tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(envdocs, "DOCS_DIR", tmp_path)
    assert envdocs.main(["--check"]) == 1  # no pages yet: all stale
    assert envdocs.main(["--write"]) == 0
    assert envdocs.main(["--check"]) == 0
    page = tmp_path / "point_reach.md"
    page.write_text(page.read_text(encoding="utf-8") + "hand edit\n", encoding="utf-8")
    capsys.readouterr()
    assert envdocs.main(["--check"]) == 1
    out = capsys.readouterr()
    assert "stale:" in out.out and "point_reach.md" in out.out
    assert envdocs.COMMAND in out.err
