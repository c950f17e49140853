"""RLlib integration: every id registered with Ray Tune's registry, each creator builds a working
env (PettingZoo ones as RLlib MultiAgentEnvs), and PPO trains on a remote env runner."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("ray.rllib.algorithms.ppo", reason="RLlib needs the 'rllib' extra")
import numpy as np  # noqa: E402
import ray  # noqa: E402
from ray.rllib.env.env_context import EnvContext  # noqa: E402
from ray.tune.registry import ENV_CREATOR, _global_registry  # noqa: E402

import icml26  # noqa: E402
import icml26.integrations.rllib as icml26_rllib  # noqa: E402
from icml26.testing import assert_same  # noqa: E402

GYM_SPECS = icml26.env_specs()
PZ_SPECS = icml26.parallel_env_specs()


def _creator(name: str):  # type: ignore[no-untyped-def]
    return _global_registry.get(ENV_CREATOR, name)


def test_register_envs_registers_every_id() -> None:
    names = icml26_rllib.register_envs()
    assert names == [s["id"] for s in GYM_SPECS] + [s["name"] for s in PZ_SPECS]
    assert all(_global_registry.contains(ENV_CREATOR, n) for n in names)
    assert icml26_rllib.register_envs(["icml26/PointReach-v0"]) == ["icml26/PointReach-v0"]
    with pytest.raises(KeyError, match="PointRech"):
        icml26_rllib.register_envs(["icml26/PointRech-v0"])


@pytest.mark.parametrize("spec", GYM_SPECS, ids=[s["id"] for s in GYM_SPECS])
def test_creator_matches_gym_make(spec: dict) -> None:
    """The registered creator, given RLlib's EnvContext, builds the same env as gym.make."""
    import gymnasium as gym

    icml26_rllib.register_envs([spec["id"]])
    kwargs = dict(spec.get("test_kwargs") or {})
    env = _creator(spec["id"])(EnvContext(kwargs, worker_index=1, num_workers=2))
    ref = gym.make(spec["id"], **kwargs)
    try:
        assert env.spec.id == spec["id"] and env.observation_space == ref.observation_space
        assert_same(env.reset(seed=5), ref.reset(seed=5), "reset")
        ref.action_space.seed(5)
        action = ref.action_space.sample()
        assert_same(env.step(action), ref.step(action), "step")
    finally:
        env.close()
        ref.close()


@pytest.mark.parametrize("spec", PZ_SPECS, ids=[s["name"] for s in PZ_SPECS])
def test_pettingzoo_creator_is_a_multi_agent_env(spec: dict) -> None:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    icml26_rllib.register_envs([spec["name"]])
    env = _creator(spec["name"])(EnvContext(dict(spec.get("test_kwargs", {})), worker_index=0))
    assert isinstance(env, MultiAgentEnv)
    obs, _ = env.reset(seed=0)
    assert set(obs) == set(env.par_env.possible_agents)
    env.action_space.seed(0)
    actions = {agent: env.action_space[agent].sample() for agent in obs}
    _, rewards, terminated, truncated, _ = env.step(actions)
    assert set(rewards) == set(obs) and "__all__" in terminated and "__all__" in truncated
    # the two players of a zero-sum game get opposite rewards
    assert sum(rewards.values()) == pytest.approx(0.0)


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        log_to_driver=False,
        runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}},
    )
    yield
    ray.shutdown()


def test_ppo_trains_on_a_remote_env_runner(ray_session: None) -> None:
    """The example of docs/scaling.md, shrunk: the remote runner process builds the env by name."""
    from ray.rllib.algorithms.ppo import PPOConfig

    icml26_rllib.register_envs()
    config = (
        PPOConfig()
        .environment("icml26/PointReach-v0", env_config={})
        .env_runners(num_env_runners=1, rollout_fragment_length=200)
        .training(train_batch_size_per_learner=400, minibatch_size=200, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= 400
    # PointReach returns lie in [-200 * 5.76, 0]; 400 steps hold at least two 200-step episodes
    assert -200 * 5.76 <= runners["episode_return_mean"] <= 0.0


def _train_one_iteration(name: str, env_config: dict) -> dict:
    config = (
        icml26_rllib.multi_agent_ppo_config(name, env_config)
        .env_runners(num_env_runners=0, rollout_fragment_length=64)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        return algo.train()
    finally:
        algo.stop()


@pytest.mark.slow
def test_multi_agent_ppo_trains_on_a_markov_game(ray_session: None) -> None:
    """One PPO policy per player on soccer (flat observation): builds and trains one iteration."""
    result = _train_one_iteration(
        "markov_games/soccer", {"game_kwargs": {"horizon": 8, "rows": 2, "cols": 3}}
    )
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= 128
    # both policies learned: one learner result per player
    assert {"max_player", "min_player"} <= set(result["learners"])
    # zero-sum: the two players' mean returns cancel (soccer rewards are +-1 per goal)
    returns = runners["agent_episode_returns_mean"]
    assert returns["max_player"] == pytest.approx(-returns["min_player"], abs=1e-9)


@pytest.mark.slow
def test_multi_agent_ppo_with_action_masks(ray_session: None) -> None:
    """The tree game forbids actions in some states: the masked view with RLlib's action-masking
    module never sends an illegal action (the env would raise) through one training iteration."""
    result = _train_one_iteration("markov_games/rps", {"game": "tree"})
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 128


def test_flat_observation_is_one_hot_step_state_and_mask() -> None:
    env = icml26_rllib.make_parallel_env("markov_games/random", {"observation": "flat"})
    game = env.par_env.game
    H, S, A, B = game.shape
    obs, _ = env.reset(seed=0)
    o = obs["max_player"]
    assert o.shape == (H + 1 + S + A,) and o.dtype == np.float32
    assert o[0] == 1.0 and o[: H + 1].sum() == 1.0  # step 0
    s = int(np.argmax(o[H + 1 : H + 1 + S]))
    assert s == env.par_env.state()[1] and o[H + 1 : H + 1 + S].sum() == 1.0
    np.testing.assert_array_equal(o[H + 1 + S :], game.legal_max[0, s].astype(np.float32))
    with pytest.raises(ValueError, match="masked"):
        icml26_rllib.make_parallel_env("markov_games/rps", {"game": "tree", "observation": "flat"})
    with pytest.raises(ValueError, match="observation"):
        icml26_rllib.make_parallel_env("markov_games/rps", {"observation": "pixels"})
