"""The v1 training/evaluation pipeline: paired evaluation, boundary band, curriculum, transfer path."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.agents.driving.pipeline import (
    batched_policy,
    evaluate,
    evaluate_transfer,
    train_adversary,
)
from icml26.agents.driving.scenepilot import ScenePilotAgent


class _Hold:
    def __init__(self, a: float) -> None:
        self.a = a

    def start(self, n: int, scenario: int) -> None:
        pass

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.full((len(obs), 1), self.a, np.float32)


def test_evaluation_is_paired_distinct_and_seeded() -> None:
    a = evaluate(_Hold(-0.5), 5, "idm", seed=3, episodes=20)
    b = evaluate(_Hold(-0.5), 5, "idm", seed=3, episodes=20)
    assert len(a) == 20
    assert a == b  # same seed, same episodes, same outcome
    # the boundary flag is a collision whose pre-collision minimum sigma reached k
    for r in a:
        assert r["boundary"] == float(r["collision"] > 0 and r["min_sigma_pre"] >= 0.0)
    stopped = evaluate(_Hold(-1.0), 5, "idm", seed=3, episodes=20)  # the actor never moves
    assert sum(r["collision"] for r in stopped) == 0


def test_scripted_and_random_policies_shapes() -> None:
    p = batched_policy("scripted")
    p.start(4, 5)
    obs = np.zeros((4, 27), np.float32)
    obs[:, 9] = 200.0  # far away: not triggered -> wait (action -1)
    assert (p(obs) == -1.0).all()
    r = batched_policy("random", seed=0)
    r.start(4, 5)
    assert r(obs).shape == (4, 1) and (np.abs(r(obs)) <= 1).all()
    with pytest.raises(ValueError, match="kind"):
        batched_policy("nope")


def test_curriculum_walks_once_with_equal_spacing() -> None:
    agent, stats = train_adversary(5, "idm", "ttc", seed=0, updates_per_k=1, rollout_steps=4)
    ks = stats["curve"]["k"]
    assert ks == list(agent.args.k_values)  # one update per k, in order, no wrap-around
    assert stats["final_k"] == pytest.approx(0.35)


def test_transfer_code_path_runs_on_the_kinematic_backend() -> None:
    agent = ScenePilotAgent()
    agent.reset(0)
    rows = evaluate_transfer(agent, 5, "idm", seed=0, episodes=2, backend="kinematic")
    assert len(rows) == 2 and all(r["steps"] > 0 for r in rows)


@pytest.mark.slow
def test_transfer_to_metadrive_if_installed() -> None:
    pytest.importorskip("metadrive")
    agent = ScenePilotAgent()
    agent.reset(0)
    rows = evaluate_transfer(agent, 5, "idm", seed=0, episodes=1, backend="metadrive")
    assert len(rows) == 1


def test_per_scene_policy_sees_each_scenes_drawn_parameters() -> None:
    from icml26.envs.driving.env_v1 import scripted_adversary_v1

    seen: list[tuple[int, dict[str, float]]] = []

    def fn(obs, scenario, triggered, params, dim):  # type: ignore[no-untyped-def]
        seen.append((scenario, params))
        return scripted_adversary_v1(obs, scenario, triggered, params, dim)

    pol = batched_policy("per-scene", fn, dim=2)
    rows = evaluate(pol, 5, "idm", seed=4, episodes=6, env_kwargs={"action": "acc_steer"})
    assert len(rows) == 6
    first = seen[:6]  # the first step: one call per scene, with that scene's own draw
    assert all(sc == 5 for sc, _ in first)
    shifts = [p["trigger_scale"] for _, p in first]
    assert len(set(shifts)) == 6  # randomized per scene
    # the drawn scripted actor collides sometimes, and the same seed gives the same episodes
    again = evaluate(
        batched_policy("per-scene", scripted_adversary_v1, dim=2),
        5,
        "idm",
        seed=4,
        episodes=6,
        env_kwargs={"action": "acc_steer"},
    )
    assert [r["collision"] for r in again] == [r["collision"] for r in rows]


def test_env_version_selection() -> None:
    from icml26.agents.driving.pipeline import env_version, set_env_version

    assert env_version() == "v1"
    with pytest.raises(ValueError, match="version"):
        set_env_version("v9")
