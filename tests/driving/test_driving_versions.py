"""Versions are configurations of one engine: every id is the same class with a config, a new
version is one config and its registration, and the family page's worked example (a new reward
on ScenePilot-v2) runs as written."""

from __future__ import annotations

import doctest

import gymnasium as gym
import numpy as np
import pytest

import icml26
import icml26.envs.driving as driving
from icml26.envs.driving import _specs, rewards, versions
from icml26.envs.driving.env import ScenePilotEnv
from icml26.envs.driving.lanes import numpy_ops

where, not_ = numpy_ops("where not_")


def _forget_reward(name: str) -> None:
    rewards.REWARDS.pop(name, None)
    rewards.REWARDS_ONE.pop(name, None)


def test_every_id_is_the_one_engine_with_its_version_config() -> None:
    ids = {s["id"] for s in _specs.ENV_SPECS}
    assert ids == {f"icml26/ScenePilot{r}-{v}" for v in versions.VERSIONS for r in ("", "AV")}
    for s in _specs.ENV_SPECS:
        env = gym.make(s["id"], **s["test_kwargs"]).unwrapped
        assert type(env) is ScenePilotEnv or issubclass(type(env), ScenePilotEnv)
        v = s["kwargs"]["version"]
        expected = versions.merge({**versions.VERSIONS[v], **s["test_kwargs"]}, v)
        if s["id"].startswith("icml26/ScenePilotAV"):
            expected = versions.merge({**s["kwargs"], **s["test_kwargs"]}, v)
        assert env.config == expected, s["id"]
        env.close()


def test_an_unknown_argument_names_the_version_and_the_known_keys() -> None:
    with pytest.raises(TypeError, match=r"ScenePilot-v2: unknown arguments \['rewad'\].*reward"):
        gym.make("icml26/ScenePilot-v2", rewad="collision")


def test_the_family_pages_worked_example_runs_as_written() -> None:
    test = doctest.DocTestParser().get_doctest(driving.__doc__, {}, "driving", None, 0)
    assert len(test.examples) > 10
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    try:
        runner.run(test)
    finally:
        _forget_reward("near-miss")
    assert runner.summarize(verbose=False).failed == 0


def near_miss(risk, risk_prev, collision, avoidable, sigma, ttc, bonus):  # type: ignore[no-untyped-def]
    shaped = (risk - risk_prev) + where(avoidable, bonus, 0.0)
    return shaped + where((ttc < 1.0) & (sigma >= 0.0) & not_(collision), 0.1, 0.0)


def _rollout(env: gym.Env, actions: np.ndarray) -> list[tuple[float, ...]]:
    env.reset(seed=3)
    out = []
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((r, float(obs.sum()), info["sigma"], info["risk"], term, trunc))
        if term or trunc:
            env.reset()
    return out


def test_a_new_version_is_one_config_and_its_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    rewards.register_reward("near-miss", near_miss)
    v3 = {**versions.VERSIONS["v2"], "version": "v3", "reward": "near-miss"}
    monkeypatch.setitem(versions.VERSIONS, "v3", v3)
    for table, value in ((_specs._ADVERSARY, "v2 paid for near misses"),
                         (_specs._EGO, "the ego in the v3 scenes"),
                         (_specs._TEST_KWARGS, _specs._TEST_KWARGS["v2"])):  # fmt: skip
        monkeypatch.setitem(table, "v3", value)
    records = [_specs.spec("v3", ego) for ego in (False, True)]
    try:
        for rec in records:
            gym.register(**icml26.gym_register_kwargs(rec))
        actions = np.full((120, 1), 0.5, np.float32)  # the worked example's near miss, scenario 6
        env = gym.make("icml26/ScenePilot-v3", scenario=6, phi="ttc")
        assert env.unwrapped.config["reward"] == "near-miss"
        same = gym.make("icml26/ScenePilot-v2", scenario=6, phi="ttc", reward="near-miss")
        v2 = gym.make("icml26/ScenePilot-v2", scenario=6, phi="ttc")
        got, want, base = (_rollout(e, actions) for e in (env, same, v2))
        assert got == want  # v3 is v2 with reward="near-miss", nothing else
        assert [g[1:] for g in got] == [b[1:] for b in base]  # same dynamics as v2
        assert sum(g[0] for g in got) > sum(b[0] for b in base) + 0.5  # paid for near misses
        vec = gym.make_vec("icml26/ScenePilot-v3", num_envs=8, phi="ttc")
        vec.reset(seed=0)
        assert vec.step(np.zeros((8, 1)))[1].shape == (8,)
        av = gym.make("icml26/ScenePilotAV-v3", scenario=5)
        assert av.unwrapped.config["role"] == "ego" and av.unwrapped.config["version"] == "v3"
        with pytest.raises(TypeError, match="ScenePilot-v3: unknown arguments"):
            gym.make("icml26/ScenePilot-v3", bogus=1)
    finally:
        for rec in records:
            gym.registry.pop(rec["id"], None)
        _forget_reward("near-miss")
