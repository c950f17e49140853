"""WeatherRollout-v0: open loop, rewards, bad forecasts, the env/rollout equivalence."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import xarray as xr

import icml26  # noqa: F401
from icml26 import agents
from icml26.envs.weather.forecast_io import forecast_dataset
from icml26.envs.weather.metrics import latitude_weights_array, score

L96 = {
    "source": "lorenz96",
    "train_period": ("2000-01-01", "2000-03-31T18"),
    "test_period": ("2000-04-01", "2000-05-31T18"),
    "lead_steps": 12,
}


@pytest.fixture(scope="module")
def env() -> gym.Env:
    return gym.make("icml26/WeatherRollout-v0", **L96)


def test_spaces_and_episode_length(env: gym.Env) -> None:
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["state"].shape == (2, 1, 1, 40) and obs["lead_step"] == 0
    steps = 0
    while True:
        obs, r, term, trunc, info = env.step(obs["state"][-1])
        steps += 1
        assert r <= 0
        if term or trunc:
            break
    assert steps == 12 and term and info["truth"].shape == (12, 1, 1, 40)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(obs["state"][-1])


def test_default_env_is_ten_days_of_six_hour_steps() -> None:
    spec = gym.spec("icml26/WeatherRollout-v0")
    assert spec.kwargs == {} or "lead_steps" not in spec.kwargs
    import inspect

    from icml26.envs.weather.env import WeatherRolloutEnv

    sig = inspect.signature(WeatherRolloutEnv)
    assert sig.parameters["lead_steps"].default == 40
    assert sig.parameters["source"].default == "synthetic"


def test_open_loop_never_sees_future_truth(env: gym.Env) -> None:
    """Two envs whose data differ only after the initialization time give identical
    observations and infos (until the final info reveals the truth); only rewards differ."""
    a = copy.deepcopy(env.unwrapped)
    b = copy.deepcopy(env.unwrapped)
    obs_a, info_a = a.reset(seed=5, options={"init_index": 3})
    obs_b, info_b = b.reset(seed=5, options={"init_index": 3})
    t0 = b._t0
    b._data = b._data.copy()
    b._data[t0 + 1 :] += np.random.default_rng(0).normal(scale=5.0, size=b._data[t0 + 1 :].shape)
    np.testing.assert_array_equal(obs_a["state"], obs_b["state"])
    rng = np.random.default_rng(1)
    for _ in range(a.lead_steps):
        act = obs_a["state"][-1] + rng.normal(size=obs_a["state"][-1].shape).astype(np.float32)
        obs_a, ra, ta, _, info_a = a.step(act)
        obs_b, rb, tb, _, info_b = b.step(act)
        for key in obs_a:
            np.testing.assert_array_equal(obs_a[key], obs_b[key])
        assert ra != rb
        if not ta:
            assert info_a == info_b and "truth" not in info_a
    assert ta and tb
    assert not np.allclose(info_a["truth"], info_b["truth"])
    np.testing.assert_array_equal(info_a["forecast"], info_b["forecast"])


def test_reward_is_negative_normalized_weighted_mse(env: gym.Env) -> None:
    u = env.unwrapped
    obs, _ = env.reset(seed=1, options={"init_index": 0})
    truth = u._data[u._t0 + 1]
    _, r, *_ = env.step(truth + 2.0)
    # Error 2 everywhere: weighted MSE = 4 (weights have mean 1), divided by the variance.
    assert r == pytest.approx(-4.0 / u.channel_std[0] ** 2, rel=1e-6)
    _, r, *_ = env.step(u._data[u._t0 + 2])
    assert r == pytest.approx(0.0, abs=1e-12)


def test_bad_forecasts_are_rejected_without_side_effects(env: gym.Env) -> None:
    u = env.unwrapped
    obs, _ = env.reset(seed=2)
    good = obs["state"][-1]
    bad = good.copy()
    bad[0, 0, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        env.step(bad)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros((1, 2, 40), dtype=np.float32))
    with pytest.raises(ValueError, match="missing \\['lorenz96_x'\\]"):
        env.step({"x": good[0]})
    with pytest.raises(TypeError):
        env.step("forecast")
    assert u._k == 0
    obs2, *_ = env.step({"lorenz96_x": good[0]})  # named variables are accepted
    assert obs2["lead_step"] == 1


def test_xarray_forecast_with_wrong_variables_is_named() -> None:
    env = gym.make("icml26/WeatherRollout-v0", **{**L96, "lead_steps": 2})
    obs, _ = env.reset(seed=0)
    lat, lon = env.unwrapped.latitude, env.unwrapped.longitude
    ds = xr.Dataset(
        {"2m_temperature": (("latitude", "longitude"), obs["state"][-1, 0])},
        coords={"latitude": lat, "longitude": lon},
    )
    with pytest.raises(ValueError, match="unexpected \\['t2m'\\]"):
        env.step(ds)


def test_reset_options_and_init_times(env: gym.Env) -> None:
    u = env.unwrapped
    t = u.init_times[5]
    _, info = env.reset(options={"init_time": str(t)})
    assert info["init_time"] == str(t)
    hours = u.init_times.astype("datetime64[h]").astype(int) % 24
    assert set(hours.tolist()) <= {0, 12}
    with pytest.raises(ValueError, match="not an allowed"):
        env.reset(options={"init_time": "1999-01-01"})
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"start": 0})
    tr = u.dataset("train")
    assert tr.times.max() < u.init_times.min()


def test_final_info_rmse_matches_metrics_module(env: gym.Env) -> None:
    u = env.unwrapped
    obs, info = env.reset(seed=4)
    rng = np.random.default_rng(4)
    while True:
        obs, r, term, trunc, info = env.step(
            obs["state"][-1] + rng.normal(size=(1, 1, 40)).astype(np.float32)
        )
        if term:
            break
    f = forecast_dataset(
        info["forecast"][None], [info["init_time"]], u.channels, u.latitude, u.longitude
    )
    t = forecast_dataset(
        info["truth"][None], [info["init_time"]], u.channels, u.latitude, u.longitude
    )
    np.testing.assert_allclose(
        score(f, t, tqe=False)["rmse"].values[0], info["rmse"][:, 0], rtol=1e-5
    )
    assert latitude_weights_array(u.latitude).tolist() == [1.0]


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("weather-persistence", {}),
        ("weather-damped-persistence", {}),
        ("weather-ridge", {"radius": 1}),
        (
            "emformer",
            {
                "dim": 8,
                "heads": 2,
                "depth": (1, 1, 1),
                "updates": 3,
                "finetune_updates": 1,
                "finetune_lengths": (2,),
                "progress": False,
            },
        ),
    ],
)
def test_act_in_env_equals_batched_rollout(env: gym.Env, name: str, kwargs: dict) -> None:
    u = env.unwrapped
    agent = agents.make(name, **kwargs)
    agent.bind(env.observation_space, env.action_space)
    agent.reset(0)
    agent.learn(u.dataset("train"))
    inits = u.init_times[[0, 7]]
    forecasts = []
    for t0 in inits:
        obs, info = env.reset(options={"init_time": str(t0)})
        while True:
            obs, r, term, trunc, info = env.step(agent.act(obs, info))
            if term:
                break
        forecasts.append(info["forecast"])
    idx = np.searchsorted(u._times, inits)
    ctx = np.stack([u._data[i - 1 : i + 1] for i in idx])
    batched = agent.rollout(ctx, inits, u.lead_steps)
    np.testing.assert_allclose(batched, np.stack(forecasts), rtol=1e-5, atol=1e-5)


def test_env_on_a_users_era5_file(tmp_path) -> None:
    """The era5 source end to end: a CDS-style netCDF the test writes, regridded to 5.625 deg."""
    import pandas as pd

    t = pd.date_range("2001-01-01", "2001-01-20T18", freq="6h")
    lat = np.linspace(90, -90, 65)
    lon = np.arange(128) * 2.8125
    rng = np.random.default_rng(0)
    shape3 = (t.size, lat.size, lon.size)
    raw = xr.Dataset(
        {
            "z": (
                ("valid_time", "pressure_level", "latitude", "longitude"),
                5e4 + rng.normal(size=(t.size, 2, 65, 128)),
            ),
            "t": (
                ("valid_time", "pressure_level", "latitude", "longitude"),
                270 + rng.normal(size=(t.size, 2, 65, 128)),
            ),
            "t2m": (("valid_time", "latitude", "longitude"), 280 + rng.normal(size=shape3)),
            "u10": (("valid_time", "latitude", "longitude"), rng.normal(size=shape3)),
            "v10": (("valid_time", "latitude", "longitude"), rng.normal(size=shape3)),
        },
        coords={"valid_time": t, "pressure_level": [500, 850], "latitude": lat, "longitude": lon},
    )
    path = tmp_path / "era5.nc"
    raw.to_netcdf(path)
    env = gym.make(
        "icml26/WeatherRollout-v0",
        source="era5",
        source_kwargs={"path": str(path)},
        train_period=("2001-01-01", "2001-01-10T18"),
        test_period=("2001-01-11", "2001-01-20T18"),
        lead_steps=4,
    )
    obs, info = env.reset(seed=0)
    assert obs["state"].shape == (2, 5, 32, 64)
    for _ in range(4):
        obs, r, term, trunc, info = env.step(obs["state"][-1])
    assert term and np.isfinite(r) and info["truth"].shape == (4, 5, 32, 64)
    with pytest.raises(ValueError, match="data cover"):
        gym.make("icml26/WeatherRollout-v0", source="era5", source_kwargs={"path": str(path)})
