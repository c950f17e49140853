"""Driving tasks: run_trial returns every metric in range; defense before/after is consistent."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import icml26.agents
import icml26.benchmarks as bm
from icml26.benchmarks.tasks.driving import evaluate_adversary, run_trial
from icml26.protocol import Budget


def _check(task, outcome) -> None:
    for m in task.metrics:
        v = outcome.metrics[m.name]
        assert m.in_range(v), (m.name, v)


def test_attack_trial_scripted_and_random() -> None:
    task = dataclasses.replace(
        bm.get_task("driving/attack-idm"), eval_episodes=8, budget=Budget(env_steps=0)
    )
    out = run_trial(task, icml26.agents.make("driving-scripted"), 0)
    _check(task, out)
    assert len(out.scores) == 8 and set(out.extra["collision_by_scenario"]) == {
        str(i) for i in range(1, 9)
    }
    # scripted vs IDM: the red-light runner (5) and the oncoming car on the passing road (4) hit the ego
    assert (
        out.extra["collision_by_scenario"]["4"] == 1.0
        and out.extra["collision_by_scenario"]["5"] == 1.0
    )
    again = run_trial(task, icml26.agents.make("driving-scripted"), 0)
    assert again.metrics == out.metrics  # deterministic under the trial seed


def test_lockstep_evaluation_equals_sequential_episodes() -> None:
    from icml26.benchmarks.tasks.driving import _evaluate_lockstep, _evaluate_sequential
    from icml26.protocol import derive_seed

    kw = {"scenario": "all", "ego": "cautious"}
    order = np.arange(8) + 1
    seeds = [derive_seed(0, "eval", i) for i in range(8)]
    lock = _evaluate_lockstep(
        [icml26.agents.make("driving-scripted") for _ in range(8)], kw, order, seeds
    )
    seq = _evaluate_sequential(icml26.agents.make("driving-scripted"), kw, order, seeds)
    assert [int(e["scenario"]) for e in lock] == list(range(1, 9))
    # the batched and the one-scene (scalar) step agree to float rounding (see test_driving_fast_path.py)
    _same_episodes(lock, seq)
    eps = evaluate_adversary(icml26.agents.make("driving-scripted"), kw, seed=0, episodes=8)
    assert eps == lock


def _same_episodes(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in (
            "scenario",
            "collision",
            "adversary_collision",
            "success",
            "lane_invasions",
            "steps",
            "time",
        ):
            assert x[k] == y[k], k
        for k in x:
            assert x[k] == pytest.approx(y[k], rel=1e-12, abs=1e-12), k


@pytest.mark.parametrize(
    "task_id, envs",
    [
        ("driving/defense-idm", {"icml26/ScenePilot-v0", "icml26/ScenePilotAV-v0"}),
        ("driving/defense-v2-human", {"icml26/ScenePilot-v2", "icml26/ScenePilotAV-v2"}),
    ],
)
def test_defense_trial_without_finetuning_changes_nothing(
    task_id: str, envs: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gymnasium

    made: set[str] = set()
    make = gymnasium.make

    def recording_make(env_id, **kwargs):  # type: ignore[no-untyped-def]
        made.add(env_id)
        return make(env_id, **kwargs)

    monkeypatch.setattr(gymnasium, "make", recording_make)
    task = bm.get_task(task_id)
    task = dataclasses.replace(
        task,
        eval_episodes=4,
        budget=Budget(env_steps=0, extra={"adversary_steps": 1024}),
        extra={**task.extra, "adversary_kwargs": {"num_envs": 8, "rollout_steps": 64}},
    )
    out = run_trial(task, icml26.agents.make("driving-no-finetune"), 0)
    _check(task, out)
    m = out.metrics
    assert m["crash_rate_after"] == m["crash_rate_before"] and m["crash_rate_reduction"] == 0.0
    assert m["driving_score_after"] == m["driving_score_before"]
    assert out.extra["crash_rate_before_scripted"] == m["crash_rate_after_scripted"]
    assert made == envs  # the adversary's and the ego's env of the task's version, nothing older


def test_suites_name_registered_agents_and_tasks() -> None:
    names = set(icml26.agents.names("driving"))
    for suite in ("smoke", "full"):
        for entry in bm.get_suite(suite):
            if entry.task.startswith("driving/"):
                bm.get_task(entry.task)
                assert set(entry.agents) <= names, set(entry.agents) - names
