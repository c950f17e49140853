"""The SB3 adapter: SubprocVecEnv with spawned workers on every registered id, step for step
identical to plain ``gym.make`` copies seeded the way SB3 seeds them."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import icml26
from icml26.integrations.sb3 import env_fn, make_vec_env
from icml26.testing import assert_same

ENV_SPECS = icml26.env_specs()
SEED = 11
STEPS = 3


def _stack(obs: list[Any], space: gym.Space[Any]) -> Any:
    """Stack per-env observations the way SB3's SubprocVecEnv does."""
    if isinstance(space, gym.spaces.Dict):
        return {k: np.stack([o[k] for o in obs]) for k in space.spaces}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(np.stack([o[i] for o in obs]) for i in range(len(space.spaces)))
    return np.stack(obs)


@pytest.mark.parametrize("spec", ENV_SPECS, ids=[s["id"] for s in ENV_SPECS])
def test_subproc_vec_env_spawn_matches_plain_envs(spec: dict) -> None:
    kwargs = dict(spec.get("test_kwargs") or {})
    n = 2
    refs = [gym.make(spec["id"], **kwargs) for _ in range(n)]
    ref_obs = [env.reset(seed=SEED + i)[0] for i, env in enumerate(refs)]
    space = refs[0].action_space
    space.seed(SEED)
    actions = [[space.sample() for _ in range(n)] for _ in range(STEPS)]
    venv = make_vec_env(spec["id"], n_envs=n, seed=SEED, env_kwargs=kwargs, start_method="spawn")
    try:
        assert type(venv).__name__ == "SubprocVecEnv" and venv.num_envs == n
        assert venv.observation_space == refs[0].observation_space and venv.action_space == space
        assert_same(venv.reset(), _stack(ref_obs, refs[0].observation_space), "reset")
        for t, acts in enumerate(actions):
            batch = (
                np.stack(acts)
                if isinstance(
                    space,
                    (
                        gym.spaces.Box,
                        gym.spaces.Discrete,
                        gym.spaces.MultiDiscrete,
                        gym.spaces.MultiBinary,
                    ),
                )
                else acts
            )
            obs, rewards, dones, infos = venv.step(batch)
            expected_obs, expected_rew = [], []
            for i, env in enumerate(refs):
                o, r, term, trunc, _ = env.step(acts[i])
                expected_rew.append(float(r))
                assert bool(dones[i]) == (term or trunc), f"step {t} env {i}: done flag"
                if term or trunc:
                    assert_same(
                        infos[i]["terminal_observation"], o, f"step {t} env {i} terminal obs"
                    )
                    o, _ = env.reset()
                expected_obs.append(o)
            assert_same(obs, _stack(expected_obs, refs[0].observation_space), f"step {t} obs")
            np.testing.assert_array_equal(rewards, np.asarray(expected_rew, dtype=rewards.dtype))
    finally:
        venv.close()
        for env in refs:
            env.close()


def test_ppo_trains_on_spawned_workers() -> None:
    """PPO collects its rollouts from both spawned workers (learning quality is the tutorial
    family's test; this checks the plumbing: steps counted, episodes logged by Monitor)."""
    from stable_baselines3 import PPO

    venv = make_vec_env("icml26/PointReach-v0", n_envs=2, seed=0)
    try:
        model = PPO(
            "MlpPolicy", venv, n_steps=256, batch_size=128, n_epochs=1, seed=0, device="cpu"
        )
        model.learn(1024)
    finally:
        venv.close()
    assert model.num_timesteps == 1024
    # 1024 steps over 2 envs = 512 steps each; PointReach episodes last at most 200 steps
    assert len(model.ep_info_buffer) >= 2 * (512 // 200)
    assert all(-200 * 5.76 <= ep["r"] <= 0 and 1 <= ep["l"] <= 200 for ep in model.ep_info_buffer)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(KeyError, match="PointReach-v0"):
        env_fn("icml26/PointRech-v0")
    with pytest.raises(ValueError, match="n_envs"):
        make_vec_env("icml26/PointReach-v0", n_envs=0)
    with pytest.raises(ValueError, match="vec_env"):
        make_vec_env("icml26/PointReach-v0", vec_env="ray")
    with pytest.raises(ValueError, match="start_method"):
        make_vec_env("icml26/PointReach-v0", start_method="thread")
    dummy = make_vec_env("icml26/PointReach-v0", n_envs=2, vec_env="dummy", seed=3)
    assert type(dummy).__name__ == "DummyVecEnv" and dummy.reset().shape == (2, 6)
    dummy.close()
    assert env_fn("icml26/PointReach-v0")().spec.id == "icml26/PointReach-v0"


@pytest.mark.parametrize(
    "env_id",
    [
        "icml26/LoopReasoning-v0",
        "icml26/SpaCEInterference-v0",
        "icml26/WeatherRollout-v0",
        "icml26/BoltzmannGMM40-v0",
    ],
)
def test_ppo_runs_on_every_kind_of_wrapped_env(env_id: str) -> None:
    """SB3's PPO, unmodified, collects and trains on ``wrap(env)`` for each wrapper kind (Text
    tokens, flattened Dict, normalized unbounded Box) through ``make_vec_env(wrapper_class=wrap)``."""
    from stable_baselines3 import PPO

    from icml26.integrations.sb3 import wrap

    spec = next(s for s in ENV_SPECS if s["id"] == env_id)
    venv = make_vec_env(
        env_id,
        n_envs=1,
        seed=0,
        vec_env="dummy",
        env_kwargs=spec.get("test_kwargs"),
        wrapper_class=wrap,
    )
    try:
        policy = (
            "MultiInputPolicy"
            if isinstance(venv.observation_space, gym.spaces.Dict)
            else "MlpPolicy"
        )
        model = PPO(policy, venv, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
        model.learn(64)
        assert model.num_timesteps == 64
        action, _ = model.predict(venv.reset(), deterministic=True)
        assert venv.action_space.contains(action[0])
    finally:
        venv.close()
