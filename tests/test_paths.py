"""The shared cache and atomic-write helpers of icml26._paths."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest

from icml26._paths import atomic_write, cache_dir, params_digest


def test_params_digest_is_stable_and_order_free() -> None:
    assert params_digest({"a": 1, "b": [1, 2]}) == params_digest({"b": [1, 2], "a": 1})
    assert params_digest({"a": 1}) != params_digest({"a": 2})
    assert len(params_digest({"a": 1}, length=8)) == 8


def test_atomic_write_replaces_files_and_folders_and_leaves_nothing_on_failure(
    tmp_path: Path,
) -> None:
    target = tmp_path / "sub" / "data.txt"
    atomic_write(target, lambda p: p.write_text("one"))
    atomic_write(target, lambda p: p.write_text("two"))
    assert target.read_text() == "two"

    def boom(p: Path) -> None:
        p.write_text("half")
        raise RuntimeError("writer failed")

    with pytest.raises(RuntimeError, match="writer failed"):
        atomic_write(target, boom)
    assert target.read_text() == "two"
    assert sorted(x.name for x in target.parent.iterdir()) == ["data.txt"]

    folder = tmp_path / "store.zarr"

    def make_dir(p: Path, text: str) -> None:
        p.mkdir()
        (p / "chunk").write_text(text)

    atomic_write(folder, lambda p: make_dir(p, "a"))
    atomic_write(folder, lambda p: make_dir(p, "b"))
    assert (folder / "chunk").read_text() == "b"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["store.zarr", "sub"]


def test_cache_dir_follows_the_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    assert (
        cache_dir("fam", "kind") == tmp_path / "fam" / "kind"
        and (tmp_path / "fam" / "kind").is_dir()
    )


def test_cached_makes_once_and_regenerates_a_corrupt_entry(tmp_path: Path) -> None:
    from icml26._paths import cached

    calls = []

    def make() -> str:
        calls.append(1)
        return "value"

    def load(p: Path) -> str:
        text = p.read_text()
        if text != "value":
            raise ValueError("corrupt")
        return text

    def save(v: str, p: Path) -> None:
        p.write_text(v)

    target = tmp_path / "c.txt"
    assert cached(target, make, load, save) == "value" and len(calls) == 1
    assert cached(target, make, load, save) == "value" and len(calls) == 1  # loaded, not made
    target.write_text("garbage")
    assert cached(target, make, load, save) == "value" and len(calls) == 2
    assert target.read_text() == "value"


def _make_slowly(target: str, log: str, barrier: Any) -> None:
    from icml26._paths import cached

    def make() -> str:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(0.5)  # long enough for the other process to miss the entry too
        return "value"

    barrier.wait()
    assert cached(target, make, lambda p: p.read_text(), lambda v, p: p.write_text(v)) == "value"


def test_cached_is_made_once_by_processes_that_miss_it_together(tmp_path: Path) -> None:
    """Parallel trials on a cold cache: one process generates, the others load its file."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(3)
    target, log = tmp_path / "entry.txt", tmp_path / "makers.log"
    procs = [ctx.Process(target=_make_slowly, args=(str(target), str(log), barrier)) for _ in "abc"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert len(log.read_text().split()) == 1 and target.read_text() == "value"
