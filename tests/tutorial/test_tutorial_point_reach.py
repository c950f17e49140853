"""PointReach-v0: dynamics by hand, input validation, and the PD controller's exact solution."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.agents.tutorial.pd import PDController
from icml26.envs.tutorial.point_reach import PointReachEnv


def test_one_step_by_hand() -> None:
    env = PointReachEnv()
    env.reset(seed=0)
    env._pos, env._vel, env._goal = np.array([0.0, 0.0]), np.array([1.0, 0.0]), np.array([1.0, 1.0])
    obs, reward, term, trunc, info = env.step(np.array([0.5, -1.0], dtype=np.float32))
    # v = v + 0.1 (2 a - 0.5 v) = (1 + 0.1 (1 - 0.5), 0 + 0.1 (-2)) = (1.05, -0.2); p = 0.1 v
    np.testing.assert_allclose(obs[:4], [0.105, -0.02, 1.05, -0.2], rtol=1e-6)
    np.testing.assert_allclose(obs[4:], [1 - 0.105, 1.02], rtol=1e-6)
    dist = np.hypot(1 - 0.105, 1.02)
    assert reward == pytest.approx(-dist - 0.05 * (0.25 + 1.0))
    assert not term and not trunc and info["distance"] == pytest.approx(dist)


def test_wall_clamps_and_stops() -> None:
    env = PointReachEnv()
    env.reset(seed=0)
    env._pos, env._vel = np.array([1.99, 0.0]), np.array([3.0, 0.0])
    obs, *_ = env.step(np.array([1.0, 0.0]))
    assert obs[0] == pytest.approx(2.0) and obs[2] == 0.0


@pytest.mark.parametrize(
    "action, err",
    [
        (np.array([np.nan, 0.0]), "finite"),
        (np.zeros(3), "shape \\(2,\\)"),
        (np.array([2.0, 0.0]), "\\[-1, 1\\]"),
        ("left", "expected an action"),
    ],
)
def test_bad_actions_are_rejected_without_changing_state(action, err) -> None:
    env = PointReachEnv()
    obs0, _ = env.reset(seed=1)
    with pytest.raises((ValueError, TypeError), match=err):
        env.step(action)
    np.testing.assert_array_equal(env._obs(), obs0)


def test_pd_controller_solves_every_start_and_random_does_not() -> None:
    env = gym.make("icml26/PointReach-v0")
    pd = PDController()
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        for t in range(200):  # noqa: B007 (t is read after the loop)
            obs, r, term, trunc, info = env.step(pd.act(obs))
            if term or trunc:
                break
        assert term, f"seed {seed}: PD did not stop on the goal (distance {info['distance']:.3f})"
        assert t < 80


def test_render_rgb_array() -> None:
    env = gym.make("icml26/PointReach-v0", render_mode="rgb_array")
    env.reset(seed=0)
    img = env.render()
    assert img.shape == (128, 128, 3) and img.dtype == np.uint8 and (img != 255).any()
    with pytest.raises(ValueError, match="render_mode"):
        PointReachEnv(render_mode="human")
