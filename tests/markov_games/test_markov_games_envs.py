"""The PettingZoo ParallelEnv and the Gymnasium max-player view."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

import icml26  # noqa: F401
from icml26.envs.markov_games import best_response_to_max, make_game, parallel_env, random_game


def test_tree_game_parallel_env_with_masks() -> None:
    parallel_api_test(parallel_env(game="tree"), num_cycles=20)  # samples with the action masks
    env = parallel_env(game="tree")
    obs, _ = env.reset(seed=0)
    assert obs["max_player"]["action_mask"].tolist() == [1, 1, 0, 0, 0]
    with pytest.raises(
        ValueError,
        match=r"max_player action 3 is illegal at step 0, state 0; legal actions \[0, 1\]",
    ):
        env.step({"max_player": 3, "min_player": 0})
    assert env.state().tolist() == [0, 0]  # the rejected step changed nothing
    with pytest.raises(ValueError, match="needs an action for 'min_player'"):
        env.step({"max_player": 0})
    total = 0.0
    for actions in (
        {"max_player": 1, "min_player": 1},
        {"max_player": 0, "min_player": 0},
        {"max_player": 3, "min_player": 4},
    ):
        obs, rew, term, trunc, info = env.step(actions)
        assert rew["max_player"] == -rew["min_player"]
        total += rew["max_player"]
    # stage payoffs: [[1,0],[-2,4]][1,1] + [[1,0],[-2,3]][0,0] + RPSFW[fire, water]
    assert total == 4 + 1 - 1 and all(term.values()) and env.agents == []
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step({"max_player": 0, "min_player": 0})


def test_parallel_env_seeding_and_spaces() -> None:
    a, b = (
        parallel_env(game="random", S=5, H=4, seed=0),
        parallel_env(game="random", S=5, H=4, seed=0),
    )
    assert a.observation_space("max_player") is a.observation_space("max_player")
    trace = []
    for env in (a, b):
        obs, _ = env.reset(seed=3)
        t = [obs["max_player"]["observation"].tolist()]
        while env.agents:
            obs, *_ = env.step({"max_player": 1, "min_player": 2})
            t.append(obs["min_player"]["observation"].tolist())
        trace.append(t)
    assert trace[0] == trace[1] and trace[0][-1][0] == 4
    assert parallel_env(game="soccer", rows=2, cols=3, horizon=2).game.S == 2 * 6 * 5


def test_gym_view_best_response_opponent() -> None:
    env = gym.make("icml26/ZeroSumMarkovGame-v0", game="rps", opponent="best_response")
    rock = np.zeros((1, 1, 3))
    rock[..., 0] = 1.0
    obs, info = env.reset(seed=0, options={"policy": rock})
    assert obs.tolist() == [0, 0] and info["action_mask"].tolist() == [1, 1, 1]
    obs, r, term, trunc, info = env.step(0)
    assert r == -1.0 and info["opponent_action"] == 1 and term and not trunc  # paper beats rock
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(0)
    with pytest.raises(ValueError, match=r"expected an action in Discrete\(3\), got 3"):
        env.reset(seed=0)
        env.step(3)
    with pytest.raises(ValueError, match="opponent must be one of"):
        gym.make("icml26/ZeroSumMarkovGame-v0", game="rps", opponent="greedy")
    with pytest.raises(ValueError, match="puts mass"):
        gym.make("icml26/ZeroSumMarkovGame-v0", game="tree", agent_policy=np.full((3, 21, 5), 0.2))


def test_gym_view_returns_match_exact_values() -> None:
    """Monte-Carlo returns against the best response agree with V^{mu,†} (4 standard errors)."""
    g = random_game(S=5, A=3, B=3, H=4, seed=8)
    mu = np.random.default_rng(0).dirichlet(np.ones(3), size=(4, 5))
    exact = float(g.initial @ best_response_to_max(g, mu)[0][0])
    env = gym.make("icml26/ZeroSumMarkovGame-v0", game=g, opponent="best_response", agent_policy=mu)
    rng = np.random.default_rng(1)
    returns = []
    obs, _ = env.reset(seed=1)
    for _ in range(3000):
        total, done = 0.0, False
        while not done:
            a = int(rng.choice(3, p=mu[obs[0], obs[1]]))
            obs, r, term, trunc, _ = env.step(a)
            total += r
            done = term
        returns.append(total)
        obs, _ = env.reset()
    se = np.std(returns) / np.sqrt(len(returns))
    assert abs(np.mean(returns) - exact) < 4 * se
    # against the Nash opponent no policy beats the value of the game
    nash_env = gym.make("icml26/ZeroSumMarkovGame-v0", game="matching_pennies", opponent="nash")
    assert nash_env.unwrapped.opponent_policy[0, 0].tolist() == pytest.approx([0.5, 0.5])


def test_custom_opponent_and_rendering() -> None:
    g = make_game("matching_pennies")
    tails = np.zeros((1, 1, 2))
    tails[..., 1] = 1
    env = gym.make("icml26/ZeroSumMarkovGame-v0", game=g, opponent=tails, render_mode="ansi")
    env.reset(seed=0)
    _, r, *_ = env.step(1)
    assert r == 1.0 and "reward +1.000" in env.render()
