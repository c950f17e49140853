"""The common protocol: exact JSON round-trips, validation with clear errors, seed helpers."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icml26.protocol import (
    Budget,
    Metric,
    Task,
    TrialResult,
    as_seed_list,
    config_hash,
    derive_seed,
)

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
anyfloat = st.floats(allow_nan=True, allow_infinity=True, width=64)


def _task(**kw):
    base = dict(
        id="tutorial/x",
        version=1,
        family="tutorial",
        env_id="icml26/PointReach-v0",
        run_trial="icml26.benchmarks.generic:run_trial",
        metrics=(Metric("return", "max", -10.0, 0.0), Metric("len", "min")),
        primary_metric="return",
        budget=Budget(env_steps=100, extra={"k": [1, 2]}),
        seeds=(3, 4),
        env_kwargs={"a": 1},
    )
    base.update(kw)
    return Task(**base)


def test_task_round_trip_is_exact() -> None:
    t = _task()
    d = json.loads(json.dumps(t.to_dict()))
    assert Task.from_dict(d) == t
    assert t.key == "tutorial/x@v1"
    assert t.primary.direction == "max" and t.metric("len").direction == "min"


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"id": "noslash"}, "family>/<name"),
        ({"version": -1}, "version"),
        ({"primary_metric": "nope"}, "primary metric 'nope'"),
        ({"run_trial": "nocolon"}, "module:function"),
        ({"metrics": (Metric("a"), Metric("a"))}, "duplicate metric"),
    ],
)
def test_task_validation_names_the_problem(kw, msg) -> None:
    if "metrics" in kw:
        kw["primary_metric"] = "a"
    with pytest.raises(ValueError, match=msg):
        _task(**kw)


def test_metric_and_budget_validation() -> None:
    with pytest.raises(ValueError, match="direction"):
        Metric("x", "up")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lower"):
        Metric("x", "max", 1.0, 0.0)
    with pytest.raises(ValueError, match="env_steps"):
        Budget(env_steps=-5)
    m = Metric("x", "min", 0.0, 1.0)
    assert m.better(0.1, 0.2) and not m.better(0.2, 0.1)
    assert m.in_range(0.5) and not m.in_range(1.5) and not m.in_range(float("nan"))
    with pytest.raises(ValueError, match="unknown field"):
        Budget.from_dict({"env_step": 3})


@given(
    metrics=st.dictionaries(st.text(min_size=1, max_size=8), anyfloat, max_size=5),
    scores=st.lists(anyfloat, max_size=20),
    seed=st.integers(0, 2**31),
    wall=finite.filter(lambda x: x >= 0),
)
def test_trial_result_json_round_trip(metrics, scores, seed, wall) -> None:
    r = TrialResult(
        task_id="tutorial/x",
        task_version=0,
        agent_name="a",
        agent_version="1",
        seed=seed,
        status="FINISHED",
        metrics=metrics,
        scores=scores,
        wall_time_s=wall,
        packages={"numpy": "2"},
        git_commit=None,
        agent_kwargs={"lr": 0.1, "n": [1, 2]},
        extra={"curve": [1.0, float("nan")]},
    )
    back = TrialResult.from_json(r.to_json())
    assert back.key == r.key
    assert set(back.metrics) == set(metrics)
    for k, v in metrics.items():
        assert (math.isnan(v) and math.isnan(back.metrics[k])) or back.metrics[k] == v
    assert len(back.scores) == len(scores)
    assert json.loads(back.to_json()) == json.loads(r.to_json())


def test_failed_result_needs_traceback() -> None:
    with pytest.raises(ValueError, match="traceback"):
        TrialResult("t/x", 0, "a", "1", 0, "FAILED")  # no traceback
    with pytest.raises(ValueError, match="FINISHED or FAILED"):
        TrialResult("t/x", 0, "a", "1", 0, "DONE")  # type: ignore[arg-type]
    good = TrialResult("t/x", 0, "a", "1", 0, "FINISHED").to_dict()
    with pytest.raises(ValueError, match="got the string '1'"):
        TrialResult.from_dict({**good, "metrics": {"m": "1"}})
    with pytest.raises(TypeError, match="expected a number"):
        TrialResult.from_dict({**good, "metrics": {"m": [1]}})


def test_seed_helpers() -> None:
    assert derive_seed(1, "eval", 0) == derive_seed(1, "eval", 0)
    assert len({derive_seed(s, "eval", i) for s in range(5) for i in range(20)}) == 100
    assert derive_seed(0, "train") != derive_seed(0, "eval")
    assert as_seed_list("0,2-4") == [0, 2, 3, 4]
    assert as_seed_list([1, 2]) == [1, 2]
    with pytest.raises(ValueError, match="bad seed"):
        as_seed_list("a,b")
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
    assert config_hash({"a": 1}) != config_hash({"a": 2})
