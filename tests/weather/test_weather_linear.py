"""The direct linear (and quadratic) forecasters against closed-form least squares."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from icml26.agents.weather.linear import (
    DirectLinearForecaster,
    DirectQuadraticForecaster,
    IteratedQuadraticForecaster,
    ridge_solve,
)
from icml26.envs.weather.env import WeatherDataset
from icml26.protocol import Budget


def _dataset(arr: np.ndarray, lead_steps: int) -> WeatherDataset:
    t = pd.date_range("2001-01-01", periods=arr.shape[0], freq="6h")
    ds = xr.Dataset(
        {"2m_temperature": (("time", "latitude", "longitude"), arr[:, 0])},
        coords={
            "time": t,
            "latitude": np.linspace(-30, 30, arr.shape[2]),
            "longitude": np.arange(arr.shape[3]) * 360 / arr.shape[3],
        },
    )
    return WeatherDataset(ds, ("t2m",), history=2, lead_steps=lead_steps)


def _ar1(n: int = 800, seed: int = 0) -> np.ndarray:
    """x_{t+1} = A x_t + noise on a 3 x 4 grid (12 dims), A a damped rotation."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    a = 0.9 * q
    x = np.zeros((n, 12))
    for t in range(1, n):
        x[t] = a @ x[t - 1] + rng.normal(size=12)
    return x.reshape(n, 1, 3, 4).astype(np.float32)


def test_ridge_solve_matches_lstsq_and_leaves_the_bias_unpenalized() -> None:
    rng = np.random.default_rng(3)
    x = np.c_[rng.normal(size=(50, 4)), np.ones(50)]
    y = rng.normal(size=(50, 2)) + 7.0
    np.testing.assert_allclose(ridge_solve(x, y, 0.0), np.linalg.lstsq(x, y, rcond=None)[0])
    # A huge penalty kills the slopes but not the bias, which becomes the mean of y.
    w = ridge_solve(x, y, 1e9)
    np.testing.assert_allclose(w[:-1], 0.0, atol=1e-6)
    np.testing.assert_allclose(w[-1], y.mean(axis=0), rtol=1e-6)


def test_direct_linear_equals_the_closed_form_least_squares_per_lead() -> None:
    arr = _ar1()
    data = _dataset(arr, lead_steps=3)
    # Full EOF rank and no penalty: the fit is the OLS of z_{t+k} on [z_t, 1], whatever the EOF
    # rotation and whitening.
    agent = DirectLinearForecaster(history=1, n_eofs=(12,), alphas=(0.0,), target_eofs=12)
    stats = agent.learn(data, Budget())
    assert stats["target_variance_kept"] == pytest.approx(1.0)
    clim = data.climatology()
    times = data.times
    z = ((arr - clim.at(times)) / agent.scale[None, :, None, None]).reshape(arr.shape[0], -1)
    ends = np.arange(0, arr.shape[0] - 3)
    x = np.c_[z[ends], np.ones(ends.size)].astype(np.float64)
    i0 = np.array([100, 555])
    pred = agent.rollout(arr[i0][:, None], times[i0], 3)
    for k in (1, 2, 3):
        w = np.linalg.lstsq(x, z[ends + k].astype(np.float64), rcond=None)[0]
        ref = np.c_[z[i0], np.ones(2)] @ w
        ref = clim.at(times[i0 + k]) + ref.reshape(2, 1, 3, 4) * agent.scale[None, :, None, None]
        np.testing.assert_allclose(pred[:, k - 1], ref, rtol=1e-3, atol=1e-3 * arr.std())


def test_direct_linear_learns_the_powers_of_the_propagator() -> None:
    # Lead-k regression of an AR(1) process recovers A^k: the lead-3 forecast error is close to
    # the optimal one, far below persistence's.
    arr = _ar1(n=3000, seed=1)
    agent = DirectLinearForecaster(history=2, n_eofs=(12,), alphas=(1e-4,), target_eofs=12)
    agent.learn(_dataset(arr, lead_steps=3), Budget())
    times = pd.date_range("2001-01-01", periods=arr.shape[0], freq="6h").values
    i0 = np.arange(1, 2990, 7)
    ctx = np.stack([arr[i0 - 1], arr[i0]], axis=1)
    pred = agent.rollout(ctx, times[i0], 3)[:, 2]
    err = float(((pred - arr[i0 + 3]) ** 2).mean())
    # optimal lead-3 error variance: noise accumulated over 3 steps, (1 + 0.81 + 0.6561) per dim
    assert err == pytest.approx(1 + 0.81 + 0.6561, rel=0.15)
    assert err < 0.6 * float(((arr[i0] - arr[i0 + 3]) ** 2).mean())


def test_quadratic_features_are_the_pairwise_products() -> None:
    agent = DirectQuadraticForecaster(quadratic=3, n_eofs=(4,))
    pcs = np.arange(2 * 2 * 4, dtype=float).reshape(2, 2, 4)  # (B, h, K)
    f = agent._features(pcs, 4)
    assert f.shape == (2, 4 * 2 + 6 + 1)
    # EOF-major, newest first
    np.testing.assert_array_equal(f[0, :4], [4, 0, 5, 1])
    q = pcs[0, -1, :3]
    expected = [q[i] * q[j] / np.sqrt(2) for i in range(3) for j in range(i, 3)]
    np.testing.assert_allclose(f[0, 8:14], expected)
    assert f[0, -1] == 1.0
    with pytest.raises(ValueError, match="quadratic"):
        DirectQuadraticForecaster(quadratic=5, n_eofs=(4,))


@pytest.mark.parametrize(
    "make",
    [
        lambda: DirectLinearForecaster(n_eofs=(8, 16), alphas=(1e-3,)),
        lambda: IteratedQuadraticForecaster(n_eofs=12, quadratic=6, val_steps=4),
    ],
    ids=["linear-direct", "quadratic-iterated"],
)
def test_acting_through_the_env_equals_the_rollout(make) -> None:
    env = gym.make(
        "icml26/WeatherRollout-v0",
        source="lorenz96",
        train_period=("2000-01-01", "2000-03-31T18"),
        test_period=("2000-04-01", "2000-05-31T18"),
        lead_steps=5,
    )
    agent = make()
    agent.learn(env, Budget())
    u = env.unwrapped
    for init in u.evaluation_init_times(2):
        obs, _ = env.reset(options={"init_time": str(init)})
        direct = agent.rollout(obs["state"][None], np.array([init]), 5)[0]
        for k in range(5):
            action = agent.act(obs)
            np.testing.assert_allclose(action, direct[k], rtol=1e-5, atol=1e-4)
            obs, *_ = env.step(action)
    if type(agent) is DirectLinearForecaster:  # one fitted map per lead: no lead beyond them
        with pytest.raises(ValueError, match="lead 6"):
            agent.rollout(obs["state"][None], np.array([init]), 6)


def _quadratic_process(n: int = 1500, seed: int = 2) -> np.ndarray:
    """12 dims: the first 4 white noise, the other 8 at t + 1 products of pairs of them at t."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 12))
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (0, 0), (1, 1)]
    for t in range(1, n):
        x[t, 4:] = [x[t - 1, i] * x[t - 1, j] for i, j in pairs] + 0.05 * rng.normal(size=8)
    return x.reshape(n, 1, 3, 4).astype(np.float32)


def test_the_quadratic_forecaster_learns_a_quadratic_map_the_linear_one_cannot() -> None:
    arr = _quadratic_process()
    data = _dataset(arr, lead_steps=1)
    times = data.times
    i0 = np.arange(1, arr.shape[0] - 1, 3)
    ctx = np.stack([arr[i0 - 1], arr[i0]], axis=1)
    errs = {}
    for name, agent in (
        ("linear", DirectLinearForecaster(n_eofs=(12,), alphas=(1e-6,), target_eofs=12)),
        (
            "quadratic",
            DirectQuadraticForecaster(
                quadratic=12, n_eofs=(12,), alphas=(1e-6,), quad_alphas=(1e-6,), target_eofs=12
            ),
        ),
    ):
        agent.learn(data, Budget())
        pred = agent.rollout(ctx, times[i0], 1)[:, 0].reshape(i0.size, 12)
        errs[name] = float(((pred[:, 4:] - arr[i0 + 1].reshape(-1, 12)[:, 4:]) ** 2).mean())
    # the products have variance ~1-2 and are uncorrelated with the linear features
    assert errs["linear"] > 0.8
    assert errs["quadratic"] < 0.05 * errs["linear"]


def test_a_huge_quadratic_penalty_recovers_the_linear_forecaster() -> None:
    arr = _ar1(n=600, seed=4)
    data = _dataset(arr, lead_steps=2)
    lin = DirectLinearForecaster(n_eofs=(8,), alphas=(1e-3,), target_eofs=12)
    quad = DirectQuadraticForecaster(
        quadratic=4, n_eofs=(8,), alphas=(1e-3,), quad_alphas=(1e12,), target_eofs=12
    )
    lin.learn(data, Budget())
    quad.learn(data, Budget())
    ctx = np.stack([arr[[9, 300]], arr[[10, 301]]], axis=1)
    t = data.times[[10, 301]]
    np.testing.assert_allclose(
        quad.rollout(ctx, t, 2), lin.rollout(ctx, t, 2), rtol=1e-4, atol=1e-4
    )


def _lorenz63_embedded(n: int = 3000, seed: int = 5) -> np.ndarray:
    """A chaotic quadratic map (Lorenz-63, forward Euler, dt 0.01 per 6 h) rotated into 12 dims,
    the other 9 directions small white noise."""
    rng = np.random.default_rng(seed)
    s = np.array([1.0, 1.0, 20.0])
    xs = np.empty((n, 3))
    for t in range(n + 500):
        x, y, z = s
        s = s + 0.01 * np.array([10 * (y - x), x * (28 - z) - y, x * y - 8 / 3 * z])
        if t >= 500:
            xs[t - 500] = s
    q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    full = np.c_[xs - xs.mean(0), 0.01 * rng.normal(size=(n, 9))] @ q.T
    return full.reshape(n, 1, 3, 4).astype(np.float32)


def test_the_iterated_quadratic_forecaster_emulates_a_quadratic_map() -> None:
    arr = _lorenz63_embedded()
    data = _dataset(arr, lead_steps=20)
    iq = IteratedQuadraticForecaster(
        reference="mean", history=1, n_eofs=3, quadratic=3, alphas=(1e-9,), quad_alphas=(1e-9,)
    )
    lin = DirectLinearForecaster(history=1, n_eofs=(3, 12), alphas=(1e-6,), target_eofs=12)
    stats = iq.learn(data, Budget())
    lin.learn(data, Budget())
    assert stats["variance_kept"] > 0.99
    i0 = np.arange(2000, 2980, 7)
    truth = arr[i0 + 20]
    errs = {
        name: float(((a.rollout(arr[i0][:, None], data.times[i0], 20)[:, -1] - truth) ** 2).mean())
        for name, a in (("iterated", iq), ("linear", lin))
    }
    # 20 Euler steps of the fitted map stay on the attractor's trajectory; the linear map cannot
    assert errs["iterated"] < 1e-3 * errs["linear"]
    # predict is one step of rollout
    np.testing.assert_allclose(
        iq.predict(arr[i0][:, None], data.times[i0]),
        iq.rollout(arr[i0][:, None], data.times[i0], 1)[:, 0],
    )


def test_iterated_quadratic_options_are_checked() -> None:
    with pytest.raises(ValueError, match="n_eofs must be one positive int"):
        IteratedQuadraticForecaster(n_eofs=(8, 16))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="quadratic must be >= 1"):
        IteratedQuadraticForecaster(quadratic=0)
    with pytest.raises(ValueError, match="reference must be"):
        IteratedQuadraticForecaster(reference="daily")
