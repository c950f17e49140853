"""The pulse tasks: one trial end to end through the harness's runner."""

from __future__ import annotations

import math

import pytest

from icml26 import agents, benchmarks
from icml26.benchmarks.tasks.pulse import EVALUATIONS, pretraining_data, run_trial


def test_quick_trial_reports_every_metric_in_range() -> None:
    task = benchmarks.get_task("pulse/ecg-ppg-quick")
    out = run_trial(task, agents.make("pulse-random"), 0)
    assert set(out.metrics) == {m.name for m in task.metrics}
    for m in task.metrics:
        assert math.isfinite(out.metrics[m.name]) and m.in_range(out.metrics[m.name]), m.name
    assert set(out.extra["episodes"]) == set(EVALUATIONS)
    assert out.extra["reference_only"] is False
    again = run_trial(task, agents.make("pulse-random"), 0)
    assert again.metrics == out.metrics
    # label fractions share the source windows; the target domain has its own seed
    eps = out.extra["episodes"]
    assert eps["probe"]["seed"] == eps["probe_1pct"]["seed"] != eps["transfer"]["seed"]
    assert eps["probe_1pct"]["n_labels"] < eps["probe_10pct"]["n_labels"] < eps["probe"]["n_labels"]


def test_labels_reach_only_label_using_agents() -> None:
    task = benchmarks.get_task("pulse/ecg-ppg-quick")
    assert (pretraining_data(task, 0, False).labels == -1).all()
    assert (pretraining_data(task, 0, True).labels >= 0).all()
    out = run_trial(task, agents.make("pulse-supervised", updates=2), 1)
    assert out.extra["reference_only"] is True


def test_budget_ladder_moves_the_updates() -> None:
    task = benchmarks.get_task("pulse/ecg-ppg")
    assert task.scaled(0.5).budget.updates == task.budget.updates // 2
    assert task.scaled(2).budget.dataset_size == task.budget.dataset_size


def test_runner_stores_a_pulse_trial(tmp_path) -> None:
    results = benchmarks.run(
        benchmarks.trials_for(benchmarks.get_task("pulse/ecg-ppg-quick"), "pulse-mae", seeds=[0]),
        store=tmp_path / "r.db",
    )
    assert [r.status for r in results] == ["FINISHED"]
    assert results[0].extra["learn"]["updates"] == 20


@pytest.mark.parametrize("name", ["pulse/ecg-ppg", "pulse/ecg-ppg-quick"])
def test_tasks_are_registered(name: str) -> None:
    t = benchmarks.get_task(name)
    assert t.family == "pulse" and t.primary_metric == "accuracy" and len(t.seeds) == 10
