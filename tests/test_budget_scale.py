"""Budget ladders: Budget.scaled, TrialSpec.budget_scale in keys, store and tables, resume."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from icml26 import benchmarks, cli
from icml26.benchmarks.runner import TrialSpec
from icml26.benchmarks.store import ResultsStore
from icml26.benchmarks.tables import curves, format_curves
from icml26.benchmarks.trial import resolve_trial_timeout
from icml26.protocol import Budget, TrialResult
from icml26.testing import tiny_point_reach_task

LADDER = dataclasses.replace(
    tiny_point_reach_task("testing/ladder-reach", seeds=(0, 1)),
    budget=Budget(
        env_steps=1000,
        dataset_size=64,
        updates=10,
        wall_clock_s=30.0,
        extra={"rl_steps": 7, "group_size": 8, "lr": 0.5},
        learning_extra=("rl_steps",),
    ),
)
benchmarks.register_task(LADDER)


ECHO = "icml26.testing:BudgetGainLearner"  # gain = env_steps / 4000


# ----------------------------------------------------------------------------- Budget.scaled
def test_scaled_multiplies_exactly_the_learning_fields() -> None:
    b = LADDER.budget
    q = b.scaled(0.25)
    # env_steps 1000 -> 250; updates 10 -> 2.5 -> 3 (half up); wall 30 -> 7.5 (float, exact);
    # rl_steps 7 -> 1.75 -> 2; dataset_size, group_size, lr unchanged
    assert (q.env_steps, q.updates, q.wall_clock_s) == (250, 3, 7.5)
    assert q.extra == {"rl_steps": 2, "group_size": 8, "lr": 0.5}
    assert q.dataset_size == 64 and q.episodes is None and q.energy_evals is None
    x4 = b.scaled(4)
    assert (x4.env_steps, x4.updates, x4.wall_clock_s, x4.extra["rl_steps"]) == (
        4000,
        40,
        120.0,
        28,
    )
    assert x4.dataset_size == 64 and x4.extra["group_size"] == 8
    assert b.scaled(1) is b and b.scaled(1.0) is b


def test_scaled_rounding_and_edges() -> None:
    # 3 x 0.1 = 0.3 -> at least 1 (a positive budget never vanishes); 0 stays 0; None stays None
    b = Budget(env_steps=3, episodes=0, energy_evals=5)
    assert b.scaled(0.1) == Budget(env_steps=1, episodes=0, energy_evals=1)
    assert b.scaled(0.5) == Budget(env_steps=2, episodes=0, energy_evals=3)  # 1.5 -> 2, 2.5 -> 3
    assert Budget(updates=5).scaled(3).updates == 15
    for bad in (0, -1, math.inf, math.nan, True, "2"):
        with pytest.raises(ValueError, match="budget scale"):
            b.scaled(bad)  # type: ignore[arg-type]


def test_scaling_a_budget_that_bounds_no_learning_is_an_error() -> None:
    with pytest.raises(ValueError, match="bounds no learning"):
        Budget(dataset_size=1000).scaled(2)
    with pytest.raises(ValueError, match="markov_games/random-uniform@v0: Budget.scaled"):
        benchmarks.get_task("markov_games/random-uniform").scaled(2)
    assert Budget(dataset_size=1000).scaled(1) == Budget(dataset_size=1000)


def test_learning_extra_must_name_numeric_extra_entries() -> None:
    with pytest.raises(ValueError, match="'steps', which must be a numeric entry"):
        Budget(extra={"mode": "fast"}, learning_extra=("steps",))
    with pytest.raises(ValueError, match="numeric"):
        Budget(extra={"mode": "fast"}, learning_extra=("mode",))
    with pytest.raises(TypeError, match="tuple of extra keys"):
        Budget(extra={"steps": 3}, learning_extra="steps")  # type: ignore[arg-type]


def test_the_declaration_leaves_serialization_and_hash_of_old_tasks_alone() -> None:
    plain = Budget(updates=10, extra={"rl_steps": 7})
    declared = Budget(updates=10, extra={"rl_steps": 7}, learning_extra=("rl_steps",))
    assert "learning_extra" not in plain.to_dict()
    assert declared.to_dict()["learning_extra"] == ["rl_steps"]
    assert Budget.from_dict(declared.to_dict()) == declared
    t_plain = dataclasses.replace(LADDER, budget=plain)
    t_declared = dataclasses.replace(LADDER, budget=declared)
    assert t_plain.definition_hash == t_declared.definition_hash
    # scaling never changes the task's identity: same id, version, and (unscaled) hash
    assert LADDER.scaled(4).key == LADDER.key and LADDER.scaled(4).budget.env_steps == 4000


# ----------------------------------------------------------------------------- keys and results
def test_the_trial_key_differs_by_scale_and_scale_1_keeps_the_old_key() -> None:
    base = TrialSpec(LADDER.id, 0, "random", {}, 0)
    assert base.key == TrialSpec(LADDER.id, 0, "random", {}, 0, 1.0).key
    assert "|x" not in base.key and base.key.endswith("|seed=0")
    keys = {TrialSpec(LADDER.id, 0, "random", {}, 0, s).key for s in (0.25, 0.5, 1, 2, 4)}
    assert len(keys) == 5
    assert TrialSpec(LADDER.id, 0, "random", {}, 0, 4).key == base.key + "|x4"
    assert TrialSpec(LADDER.id, 0, "random", {}, 0, 0.25).key == base.key + "|x0.25"
    with pytest.raises(ValueError, match="budget scale"):
        TrialSpec(LADDER.id, 0, "random", {}, 0, 0)


def test_trial_result_round_trips_its_scale() -> None:
    common: dict[str, Any] = dict(
        task_id="t/x", task_version=0, agent_name="a", agent_version="1", seed=3
    )
    r1 = TrialResult(**common, status="FINISHED", metrics={"m": 1.0})
    assert "budget_scale" not in r1.to_dict()  # scale 1: the JSON of before
    r4 = TrialResult(**common, status="FINISHED", metrics={"m": 1.0}, budget_scale=4)
    back = TrialResult.from_json(r4.to_json())
    assert back.budget_scale == 4.0 and back.key == r4.key and back.key.endswith("|x4")
    assert TrialResult.from_json(r1.to_json()).budget_scale == 1.0


def test_timeouts_grow_with_the_scale_unless_overridden() -> None:
    assert resolve_trial_timeout(LADDER, None, 1.0) == 2 * 30 + 600
    assert resolve_trial_timeout(LADDER, None, 4.0) == 2 * 30 * 4 + 600
    assert resolve_trial_timeout(LADDER, None, 0.25) == 2 * 30 + 600  # never shrinks
    assert resolve_trial_timeout(LADDER, 50.0, 4.0) == 50.0


def test_a_ladder_runs_stores_and_resumes_skipping_finished_scales(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = benchmarks.trials_for(LADDER, ECHO, budget_scale=(0.25, 1))
    assert [s.budget_scale for s in first] == [0.25, 0.25, 1.0, 1.0]
    done = benchmarks.run(first, store=db, progress=False)
    assert [r.status for r in done] == ["FINISHED"] * 4
    by_scale = {r.budget_scale: r for r in done}
    learned = {k: by_scale[0.25].extra["learn"][k] for k in ("env_steps", "rl_steps")}
    assert learned == {"env_steps": 250, "rl_steps": 2}
    assert by_scale[0.25].extra["budget"]["env_steps"] == 250  # recorded for the record
    assert by_scale[1.0].extra["learn"]["env_steps"] == 1000
    assert by_scale[1.0].extra["learn"]["rl_steps"] == 7
    assert "budget" not in by_scale[1.0].extra
    assert all(r.task_hash == LADDER.definition_hash for r in done)  # the version's hash
    stamps = {r.key: r.started_at for r in done}
    ladder = benchmarks.trials_for(LADDER, ECHO, budget_scale=(0.25, 1, 4))
    again = benchmarks.run(ladder, store=db, progress=False)
    assert len(again) == 6
    for r in again:  # the finished scales were not run again
        if r.budget_scale in (0.25, 1.0):
            assert r.started_at == stamps[r.key]
    with ResultsStore(db) as st:
        assert len(st.results()) == 6
        assert {r.seed for r in st.results(budget_scale=4)} == {0, 1}
        con = sqlite3.connect(db)
        got = sorted(con.execute("select budget_scale from icml26_trials"))
        assert got == [(0.25,), (0.25,), (1.0,), (1.0,), (4.0,), (4.0,)]
    (table,) = [t for t in benchmarks.aggregate(again, progress=False) if t.task_id == LADDER.id]
    assert sorted(r.budget_scale for r in table.rows) == [0.25, 1.0, 4.0]
    text = benchmarks.format_tables([table])
    assert "scale" in text and "x0.25" in text and "x4" in text
    (curve,) = curves(again)
    assert sorted(curve.points) == [0.25, 1.0, 4.0]
    # gain = min(1, steps / 4000): 0.0625, 0.25, 1 -> return rises with the budget
    assert curve.points[0.25].iqm < curve.points[1.0].iqm < curve.points[4.0].iqm
    assert (curve.plateau.from_scale, curve.plateau.to_scale) == (1.0, 4.0)
    assert "x1 to x4" in format_curves([curve])


def test_a_scale_that_changes_nothing_fails_before_any_trial(tmp_path: Path) -> None:
    spec = TrialSpec("markov_games/random-uniform", 0, "mg-bc", {}, 0, 2.0)
    with pytest.raises(ValueError, match="bounds no learning"):
        benchmarks.run([spec], store=tmp_path / "s.db", progress=False)


def test_store_migrates_a_schema_2_store(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript(
        """
        create table icml26_trials (key varchar(512) primary key, task_id varchar(200) not null,
          task_version integer not null, agent_name varchar(300) not null,
          agent_version varchar(100) not null, seed bigint not null, status varchar(16) not null,
          result_json text not null, stored_at varchar(40) not null);
        create table icml26_schema_version (component varchar(64) primary key,
          version integer not null, updated_at varchar(40) not null);
        insert into icml26_schema_version values ('results', 2, '2026-01-01');
        """
    )
    old = TrialResult("t/x", 0, "a", "1", 0, "FINISHED", metrics={"m": 1.0}, task_hash="abc")
    con.execute(
        "insert into icml26_trials values (?,?,?,?,?,?,?,?,?)",
        (old.key, "t/x", 0, "a", "1", 0, "FINISHED", old.to_json(), "2026-01-01"),
    )
    con.commit()
    con.close()
    with ResultsStore(db) as st:
        assert st.schema_version == 3
        (back,) = st.results(budget_scale=1.0)
        assert back.key == old.key and back.budget_scale == 1.0
        st.put(dataclasses.replace(old, budget_scale=2.0))
        assert {r.budget_scale for r in st.results()} == {1.0, 2.0}


# ----------------------------------------------------------------------------- CLI
def test_cli_budget_scale_flag_and_curve(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = str(tmp_path / "c.db")
    argv = ["run", "--task", LADDER.id, "--agent", ECHO, "--store", db, "--seeds", "0,1"]
    assert cli.main([*argv, "--budget-scale", "1,0.5"]) == 0
    out = capsys.readouterr().out
    assert "x0.5" in out and "last step" in out
    assert cli.main(["results", "--store", db, "--curve"]) == 0
    out = capsys.readouterr().out
    assert "x0.5 to x1" in out and LADDER.id in out


def test_cli_rejects_bad_scales_and_submissions_at_a_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "--task", LADDER.id, "--agent", "random", "--budget-scale", "0,1"])
    assert "expected budget scales > 0" in capsys.readouterr().err
    argv = ["run", "--task", LADDER.id, "--agent", "random", "--store", str(tmp_path / "d.db")]
    assert cli.main([*argv, "--budget-scale", "2", "--out", str(tmp_path / "b.json")]) == 2
    assert "task's own budget" in capsys.readouterr().err


def test_trials_per_worker_only_for_the_process_executor(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["run", "--task", LADDER.id, "--agent", "random", "--store", str(tmp_path / "w.db")]
    assert cli.main([*argv, "--trials-per-worker", "5"]) == 2
    assert "only applies to --executor process or ray" in capsys.readouterr().err
    assert cli.main([*argv, "--executor", "process", "--trials-per-worker", "0"]) == 2
