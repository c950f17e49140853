"""Tasks and run_trial: metrics present and finite, the oracle scores 1, accounting, failures."""

from __future__ import annotations

import pytest

from icml26.benchmarks import get_suite, get_task, list_tasks
from icml26.benchmarks.runner import TrialSpec, execute_trial


def test_tasks_and_suites_are_registered() -> None:
    ids = {t.id for t in list_tasks("boltzmann")}
    assert {
        "boltzmann/gmm40",
        "boltzmann/many-well32",
        "boltzmann/aldp",
        "boltzmann/aldp-biased",
    } <= ids
    smoke = [e.task for e in get_suite("smoke") if e.task.startswith("boltzmann/")]
    assert smoke and all(t in ids for t in smoke)
    assert get_task("boltzmann/aldp").metric("ramachandran_kl").direction == "min"


def test_oracle_scores_one_on_gmm40() -> None:
    r = execute_trial(TrialSpec("boltzmann/gmm40", 0, "boltzmann-oracle", {}, 3))
    assert r.status == "FINISHED", r.traceback
    m = r.metrics
    assert m["reverse_ess"] == pytest.approx(1.0) and m["forward_ess"] == pytest.approx(1.0)
    assert m["log_z_error"] < 1e-9 and m["modes_covered"] == 40.0
    assert m["energy_evals"] == 1000.0  # the labelled data set, nothing bought
    assert r.scores == [m["reverse_ess"]]


def test_flow_on_tiny_alanine_task() -> None:
    kwargs = {"n_layers": 2, "hidden": 16, "bins": 4, "batch_size": 64, "n_iters": 5}
    r = execute_trial(TrialSpec("boltzmann/aldp-tiny", 0, "flow-ldr", kwargs, 0))
    assert r.status == "FINISHED", r.traceback
    task = get_task("boltzmann/aldp-tiny")
    assert set(r.metrics) == {m.name for m in task.metrics}
    assert r.metrics["energy_evals"] == 256.0 and r.metrics["ramachandran_kl"] >= 0
    assert r.extra["learn"]["iterations"] == 5


def test_non_sampler_agent_fails_with_a_clear_message() -> None:
    r = execute_trial(TrialSpec("boltzmann/gmm40", 0, "random", {}, 0))
    assert r.status == "FAILED" and "sample(n)" in r.traceback
