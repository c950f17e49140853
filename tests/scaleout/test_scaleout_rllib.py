"""RLlib integration: every id registered with Ray Tune's registry, each creator builds a working
env (PettingZoo ones as RLlib MultiAgentEnvs), and PPO trains on a remote env runner."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("ray.rllib.algorithms.ppo", reason="RLlib needs the 'rllib' extra")
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
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False,
             runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
    yield
    ray.shutdown()


def test_ppo_trains_on_a_remote_env_runner(ray_session: None) -> None:
    """The example of docs/scaling.md, shrunk: the remote runner process builds the env by name."""
    from ray.rllib.algorithms.ppo import PPOConfig

    icml26_rllib.register_envs()
    config = (PPOConfig()
              .environment("icml26/PointReach-v0", env_config={})
              .env_runners(num_env_runners=1, rollout_fragment_length=200)
              .training(train_batch_size_per_learner=400, minibatch_size=200, num_epochs=1)
              .debugging(seed=0))
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= 400
    # PointReach returns lie in [-200 * 5.76, 0]; 400 steps hold at least two 200-step episodes
    assert -200 * 5.76 <= runners["episode_return_mean"] <= 0.0
