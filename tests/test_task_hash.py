"""The task definition hash travels with every trial: results of other code are never reused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from icml26 import benchmarks
from icml26.benchmarks.runner import TrialSpec
from icml26.benchmarks.store import ResultsStore
from icml26.protocol import TrialResult
from icml26.testing import tiny_point_reach_task

HASHED = tiny_point_reach_task("testing/hash-reach")
benchmarks.register_task(HASHED)


def test_keys_carry_the_definition_hash(tmp_path: Path) -> None:
    spec = TrialSpec(HASHED.id, 0, "random", {}, 0)
    assert f"@v0~{HASHED.definition_hash}|" in spec.key
    (r,) = benchmarks.run([spec], store=tmp_path / "s.db", progress=False)
    assert r.status == "FINISHED" and r.task_hash == HASHED.definition_hash and r.key == spec.key
    assert TrialResult.from_json(r.to_json()).task_hash == r.task_hash


def test_legacy_and_foreign_rows_are_not_reused_nor_mixed(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    spec = TrialSpec(HASHED.id, 0, "random", {}, 0)
    common = dict(
        task_id=HASHED.id,
        task_version=0,
        agent_name="random",
        agent_version="1",
        seed=0,
        status="FINISHED",
        metrics={"return": 1e6, "success_rate": 1.0, "episode_length": 1.0},
    )
    legacy = TrialResult(**common)  # stored before hashes existed
    other = TrialResult(
        **{**common, "seed": 1}, task_hash=dataclasses.replace(HASHED, seeds=(5,)).definition_hash
    )
    with ResultsStore(db) as st:
        st.put(legacy)
        st.put(other)
        assert "~" not in legacy.key and legacy.key in st.finished_keys()
        assert {
            r.seed for r in st.stale(lambda t, v: benchmarks.get_task(t, v).definition_hash)
        } == {0, 1}
    results = benchmarks.run(
        [spec, TrialSpec(HASHED.id, 0, "random", {}, 1)], store=db, progress=False
    )
    assert [r.task_hash for r in results] == [HASHED.definition_hash] * 2  # both re-run
    with ResultsStore(db) as st:
        everything = st.results()
    assert len(everything) == 4
    (table,) = [
        t for t in benchmarks.aggregate(everything, progress=False) if t.task_id == HASHED.id
    ]
    assert table.stale == 2 and table.rows[0].n_finished == 2
    assert table.rows[0].cells["return"].iqm < 1e6  # the legacy value is not mixed in
    assert "2 trial(s) of another definition" in benchmarks.format_tables([table])
