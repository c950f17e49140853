"""Reference entries: built from a results store, verified by re-run, loaded VERIFIED once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icml26 import benchmarks
from icml26.benchmarks.runner import TrialSpec
from icml26.leaderboards import reference
from icml26.leaderboards.bundle import content_hash
from icml26.leaderboards.store import LeaderboardStore
from icml26.testing import tiny_point_reach_task

REF_TASK = tiny_point_reach_task("testing/ref-reach")
benchmarks.register_task(REF_TASK)


def test_build_verify_and_load(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    benchmarks.run(
        [TrialSpec(REF_TASK.id, 0, a, {}, s) for a in ("point-pd", "random") for s in (0, 1)]
        + [TrialSpec(REF_TASK.id, 0, "random", {"unused": 1}, 0)],  # incomplete: left out
        store=db,
        progress=False,
    )
    folder = tmp_path / "ref"
    paths = reference.build(db, folder, tasks=[REF_TASK.id], prov={"commit": "abc"})
    assert sorted(p.name.split("-")[0] for p in paths) == ["point", "random"]
    man = reference.manifest(folder)
    assert len(man["bundles"]) == 2 and all(b["verification"] is None for b in man["bundles"])
    with LeaderboardStore(tmp_path / "lb.db") as lb:
        assert reference.load_into(lb, folder) == []  # nothing verified yet: nothing loaded
    records = reference.verify(folder, prov={"commit": "abc"})
    assert reference.verify(folder) == []  # already verified: nothing re-run
    # a bundle named by its path (as a shell completes it) is re-run; an unknown name is refused
    first = man["bundles"][0]["file"]
    assert [
        r["file"]
        for r in reference.verify(folder, files=[str(folder / first)], prov={"commit": "abc"})
    ] == [first]
    with pytest.raises(ValueError, match="no bundle named nope.json"):
        reference.verify(folder, files=["nope.json"])
    for rec in records:
        task_rec = rec["verification"]["tasks"][f"{REF_TASK.id}@v0"]
        assert rec["verification"]["agree"] and task_rec["max_seed_difference"] == 0.0
        assert task_rec["rerun_iqm"] == pytest.approx(task_rec["submitted_iqm"])
    with LeaderboardStore(tmp_path / "lb.db") as lb:
        ids = reference.load_into(lb, folder)
        assert len(ids) == 2
        entries = lb.entries()
        assert {e.status for e in entries} == {"VERIFIED"} and {e.submitter for e in entries} == {
            "reference"
        }
        assert "re-run of its 2 seeds at commit abc" in entries[0].reason
        # ranked by the recorded re-run's per-seed values, which the rows' signatures cover
        for e in entries:
            rec = next(r for r in records if r["name"] == e.name)
            rerun = rec["verification"]["tasks"][f"{REF_TASK.id}@v0"]["rerun_trials"]
            assert e.rerun_values("return") == [t["metrics"]["return"] for t in rerun]
            assert e.measured and e.integrity == "ok"
        assert reference.load_into(lb, folder) == []  # idempotent
    text = reference.overview(folder)
    assert "## testing/ref-reach@v0" in text and text.index("| point-pd |") < text.index(
        "| random |"
    )
    assert text.count("re-run agrees") == 2
    # a bundle altered after verification is refused
    p = folder / man["bundles"][0]["file"]
    b = json.loads(p.read_text())
    b["name"] = "altered"
    p.write_text(json.dumps(b))
    with pytest.raises(ValueError, match="content hash"):
        reference.verify(folder, force=True)


def test_shipped_reference_bundles_match_their_manifest() -> None:
    man = reference.manifest()
    for b in man["bundles"]:
        bundle = json.loads((reference.REFERENCE_DIR / b["file"]).read_text())
        assert content_hash(bundle) == b["content_hash"] == bundle["content_hash"], b["file"]
        ver = b["verification"]
        assert ver is not None and ver["agree"] and ver["commit"], (
            f"{b['file']}: not verified by re-run"
        )
        for key, t in ver[
            "tasks"
        ].items():  # every seed re-ran, and the IQM agrees within the task's tolerance
            assert (
                t["rerun_finished"]
                == t["n_seeds"]
                == len(
                    [r for r in bundle["results"] if f"{r['task_id']}@v{r['task_version']}" == key]
                )
            )
            assert abs(t["rerun_iqm"] - t["submitted_iqm"]) <= t["tolerance"] * abs(
                t["submitted_iqm"]
            )
            # every re-run seed's metrics are recorded: they are what the entry is ranked by
            assert sorted(r["seed"] for r in t["rerun_trials"]) == sorted(
                r["seed"]
                for r in bundle["results"]
                if f"{r['task_id']}@v{r['task_version']}" == key
            )
