"""Tasks and suites of the markov_games family run end to end."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import icml26.agents as agents
import icml26.benchmarks as bm
from icml26.benchmarks.runner import TrialSpec, execute_trial
from icml26.benchmarks.tasks.markov_games import TASKS, run_trial
from icml26.protocol import Budget


def test_run_trial_reports_exact_gaps() -> None:
    task = dataclasses.replace(
        bm.get_task("markov_games/random-uniform"), budget=Budget(dataset_size=300), eval_episodes=5
    )
    out = run_trial(task, agents.make("rose"), seed=0)
    assert set(out.metrics) == {"gap", "reg_gap"} and all(np.isfinite(list(out.metrics.values())))
    assert out.metrics["gap"] == pytest.approx(
        out.extra["br_max_value"] - out.extra["br_min_value"]
    )
    assert (
        out.extra["br_min_value"]
        <= out.extra["game_value"] + 1e-9
        <= out.extra["br_max_value"] + 2e-9
    )
    assert len(out.scores) == 5 and np.isfinite(out.extra["concentrability"])
    again = run_trial(task, agents.make("rose"), seed=0)
    assert again.metrics == out.metrics and again.scores == out.scores  # seeded


def test_runner_records_failures_clearly() -> None:
    nash_only = bm.get_task("markov_games/random-nash-only")
    assert [m.name for m in nash_only.metrics] == ["gap"]
    res = execute_trial(TrialSpec("markov_games/tree-game", 0, "random", {}, 0))
    assert res.status == "FAILED" and "policy() -> (mu (H, S, A), nu (H, S, B))" in res.traceback


def test_suites_name_registered_tasks_and_agents() -> None:
    known = set(agents.names())
    ids = {t.id for t in TASKS}
    for suite in ("smoke", "full"):
        entries = [e for e in bm.get_suite(suite) if e.task.startswith("markov_games/")]
        assert entries
        for e in entries:
            assert e.task in ids and set(e.agents) <= known


@pytest.mark.slow
def test_regularized_coverage_tasks_report_both_coefficients() -> None:
    task = dataclasses.replace(
        bm.get_task("markov_games/random-reg-unilateral-restricted"),
        budget=Budget(dataset_size=200),
        eval_episodes=2,
    )
    out = run_trial(task, agents.make("rose"), seed=0)
    # the Nash equilibrium is not covered (C* infinite), the regularized target is
    assert np.isinf(out.extra["concentrability"])
    assert 1.0 <= out.extra["concentrability_regularized"] < np.inf
    assert np.isfinite(out.metrics["reg_gap"])
    # a plug-in Nash-VI policy leaves the data's support: its regularized gap is infinite and
    # the trial says so
    with pytest.raises(ValueError, match="never takes"):
        run_trial(task, agents.make("mg-nash-vi"), seed=0)
