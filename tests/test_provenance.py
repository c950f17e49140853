"""Results pages name a clean commit and the exact command, or say they are drafts."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from icml26.provenance import DirtyTreeError, provenance, provenance_lines

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "x.py").write_text("print(1)\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    return tmp_path


def test_clean_tree_names_commit_and_command(repo: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD").strip()
    prov = provenance(argv=[str(repo / "experiments" / "x.py"), "--seeds", "0-9"], root=repo)
    assert prov["commit"] == head and prov["dirty"] is False
    assert prov["command"] == "python experiments/x.py --seeds 0-9"
    mod = provenance(argv=[str(repo / "icml26" / "tool.py"), "--go"], root=repo)["command"]
    assert mod == "python -m icml26.tool --go"
    text = provenance_lines(prov)
    assert head in text and "`python experiments/x.py --seeds 0-9`" in text and "draft" not in text
    # rewriting a results page over its previous version keeps the tree clean
    (repo / "docs" / "results").mkdir(parents=True)
    (repo / "docs" / "results" / "x.md").write_text("old page\n")
    assert provenance(argv=["x"], root=repo)["dirty"] is False


def test_dirty_tree_is_refused_unless_draft(repo: Path) -> None:
    (repo / "experiments" / "x.py").write_text("print(2)\n")
    with pytest.raises(DirtyTreeError, match=r"experiments/x.py.*--allow-dirty"):
        provenance(argv=["x"], root=repo)
    (repo / "experiments" / "x.py").write_text("print(1)\n")
    (repo / "new_module.py").write_text("")  # untracked code counts too
    with pytest.raises(DirtyTreeError, match="new_module.py"):
        provenance(argv=["x"], root=repo)
    prov = provenance(allow_dirty=True, argv=["x"], root=repo)
    assert prov["dirty"] is True and prov["dirty_paths"] == ["new_module.py"]
    assert provenance_lines(prov).startswith("> **draft: generated from uncommitted tree**")


def test_outside_git_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DirtyTreeError, match="not a git checkout"):
        provenance(argv=["x"], root=tmp_path)
    assert provenance(allow_dirty=True, argv=["x"], root=tmp_path)["commit"] is None


def test_git_state_names_the_commit_and_dirtiness_under_paths(tmp_path: Path) -> None:
    from icml26.provenance import git_state

    assert git_state(tmp_path) == ("", True)  # not a checkout
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("1\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "commit", "-qm", "x"], check=True, env={**os.environ, **env}
    )
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert git_state(tmp_path) == (head, False)
    (tmp_path / "b.txt").write_text("new")
    assert git_state(tmp_path) == (head, True)
    assert git_state(tmp_path, paths=("a",)) == (head, False)  # the change is outside a/
    (tmp_path / "a" / "x.py").write_text("2\n")
    assert git_state(tmp_path, paths=("a",)) == (head, True)
