"""The defense phase: a residual PPO on the ego planner against an adversary (icml26.agents.driving.defense)."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.agents.driving.defense import DefenseVectorEnv, ResidualEgoPPO, evaluate_ego
from icml26.agents.driving.pipeline import evaluate


class _Hold2D:
    """A held [acc, steer] adversary action, as a batched policy and as a plain callable."""

    def __init__(self, acc: float) -> None:
        self.acc = acc

    def start(self, n: int, scenario: int) -> None:
        pass

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.tile([self.acc, 0.0], (len(obs), 1)).astype(np.float32)


def test_zero_residual_is_the_planner_alone() -> None:
    """With the zero residual the defense env replays the attack evaluation episode by episode."""
    adv = _Hold2D(0.2)  # collides in about 10 of 24 randomized episodes
    attack = evaluate(adv, 5, "idm", seed=11, episodes=24, env_kwargs={"action": "acc_steer"})
    rows, stats = evaluate_ego(None, 5, "idm", adv, seed=11, episodes=24, action="acc_steer")
    assert [r["collision"] for r in rows] == [r["collision"] for r in attack]
    assert [r["route_completion"] for r in rows] == pytest.approx(
        [r["route_completion"] for r in attack]
    )
    assert sum(r["collision"] for r in rows) > 0  # the cross-check covers colliding episodes
    assert stats["mean_abs_acc"] == 0.0 and stats["share_active"] == 0.0


def test_training_moves_the_residual() -> None:
    rng = np.random.default_rng(0)

    def adv(o: np.ndarray) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, (len(o), 2))

    ego = ResidualEgoPPO(seed=0)
    obs = DefenseVectorEnv(8, 5, "idm", adv).reset(seed=0)[0]
    assert np.all(ego.act(obs) == 0.0)  # zero-initialized: the planner alone before training
    env = DefenseVectorEnv(8, 5, "idm", adv)
    st = ego.learn(env, updates=6, rollout_steps=32, seed=1)
    assert st["env_steps"] == 6 * 8 * 32 and len(st["curve"]["mean_reward"]) == 6
    u = ego.act(obs)
    # IDM cruises above SafeBench's 8 m/s speed limit of the ego reward (-10 per step): the
    # residual learns to brake, i.e. its mean acceleration moves clearly below zero
    assert np.abs(u).mean() > 0.02
    assert u[:, 0].mean() < 0.0


def test_ego_reward_penalizes_collisions_and_bad_input() -> None:
    env = DefenseVectorEnv(4, 5, "idm", None, collision_penalty=50.0)
    env.reset(seed=0)
    w = env.venv.world
    base = env._ego_reward(np.zeros(4, bool))
    hit = env._ego_reward(np.ones(4, bool))
    assert hit == pytest.approx(base - 50.0)
    v_lon = w.v[:, 0] * np.cos(w.yaw[:, 0] + w.beta[:, 0] - w.ego_head)
    assert base == pytest.approx(v_lon - 10.0 * (v_lon > 8.0) - 1.0 * (np.abs(w.ego_lat) > 4.0))
    with pytest.raises(ValueError, match="residual"):
        env.step(np.zeros((3, 2)))
    with pytest.raises(TypeError, match="adversary"):
        DefenseVectorEnv(2, 5, "idm", adversary="scripted")
    with pytest.raises(ValueError, match="init_std"):
        ResidualEgoPPO(init_std=0.0)
