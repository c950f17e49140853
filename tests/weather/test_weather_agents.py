"""EMFormer's building blocks and the baselines on problems with known answers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
import xarray as xr

from icml26.agents.weather.baselines import DampedPersistenceForecaster
from icml26.agents.weather.nets import (
    CompositeLoss,
    EMFormerNet,
    MultiScaleDepthwiseConv,
    WeightedMSELoss,
    WindowAttention,
)
from icml26.agents.weather.ridge import RidgePatchForecaster, local_patches
from icml26.envs.weather.env import WeatherDataset
from icml26.protocol import Budget


def test_merged_convolution_equals_the_sum_of_three() -> None:
    torch.manual_seed(0)
    conv = MultiScaleDepthwiseConv(6)
    for k in conv.kernels:
        torch.nn.init.normal_(k)
    x = torch.randn(3, 6, 8, 16, dtype=torch.float64)
    conv = conv.double()
    merged = conv(x)
    separate = conv.forward_separate(x)
    torch.testing.assert_close(merged, separate, rtol=1e-12, atol=1e-12)
    # An independent reference: three nn.Conv2d with the same kernels on explicitly padded input
    # (circular in longitude, zeros in latitude).
    ref = torch.zeros_like(x)
    for w in conv.kernels:
        p = w.shape[-1] // 2
        c = torch.nn.Conv2d(6, 6, w.shape[-1], groups=6, bias=False).double()
        c.weight.data.copy_(w.data)
        xp = torch.nn.functional.pad(
            torch.nn.functional.pad(x, (p, p, 0, 0), mode="circular"), (0, 0, p, p)
        )
        ref += c(xp)
    torch.testing.assert_close(merged, ref, rtol=1e-12, atol=1e-12)
    assert conv.merged_kernel().shape == (6, 1, 5, 5)
    # The merged kernel's centre collects all three centre taps.
    centre = sum(w[:, :, w.shape[-1] // 2, w.shape[-1] // 2] for w in conv.kernels)
    torch.testing.assert_close(conv.merged_kernel()[:, :, 2, 2], centre)


def test_merged_convolution_is_periodic_in_longitude() -> None:
    conv = MultiScaleDepthwiseConv(2).double()
    for k in conv.kernels:
        torch.nn.init.normal_(k)
    x = torch.randn(1, 2, 6, 12, dtype=torch.float64)
    torch.testing.assert_close(conv(torch.roll(x, 5, dims=-1)), torch.roll(conv(x), 5, dims=-1))


def test_window_attention_mixes_only_within_windows() -> None:
    torch.manual_seed(0)
    attn = WindowAttention(dim=8, heads=2, window=(4, 4), multiscale=False)
    x = torch.randn(1, 8, 8, 8)
    y = attn(x)
    x2 = x.clone()
    x2[0, 0, 0] += 1.0  # a token in the top-left window
    y2 = attn(x2)
    changed = (y2 - y).abs().sum(-1)[0] > 1e-6
    assert changed[:4, :4].any() and not changed[4:, :].any() and not changed[:, 4:].any()
    # With the multi-scale (5x5) convolution on q/k/v the change reaches 2 tokens further: across
    # the periodic longitude edge into the top-right window, not down into rows 4-7.
    attn_ms = WindowAttention(dim=8, heads=2, window=(4, 4), multiscale=True)
    for k in attn_ms.conv.kernels:
        torch.nn.init.normal_(k, std=0.3)
    d = (attn_ms(x2) - attn_ms(x)).abs().sum(-1)[0] > 1e-6
    assert d[:4, 4:].any() and not d[4:, :].any()


def test_emformer_net_shapes_and_zero_initial_increment() -> None:
    net = EMFormerNet(17, 5, (32, 64))
    x = torch.randn(2, 17, 32, 64)
    y = net(x)
    assert y.shape == (2, 5, 32, 64)
    assert torch.all(y == 0)  # the head starts at zero: the first forecast is persistence
    assert net.tokens == (16, 32) and net.hourglass
    tiny = EMFormerNet(3, 1, (1, 40), dim=8, heads=2, depth=(1, 1, 1))  # Lorenz-96 ring
    assert tiny(torch.randn(1, 3, 1, 40)).shape == (1, 1, 1, 40)


def test_composite_loss_limits_and_log_variance_optimum() -> None:
    torch.manual_seed(0)
    w = torch.ones(4)
    pred, target = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)
    loss = CompositeLoss(3, w)
    err2 = (pred - target) ** 2
    # theta = -pi/2: w = 0, pure L_gen; with log-variance 0 that is the MSE.
    loss.theta.data.fill_(-math.pi / 2)
    torch.testing.assert_close(loss(pred, target), err2.mean())
    # theta = pi/2: w = 1, the mean over (sample, channel) of the latitude-weighted RMSE.
    loss.theta.data.fill_(math.pi / 2)
    torch.testing.assert_close(loss(pred, target), torch.sqrt(err2.mean(dim=(-2, -1))).mean())
    assert loss.balance == pytest.approx(1.0)
    # L_gen is minimized by s_c = log(MSE_c): the gradient vanishes there.
    loss.theta.data.fill_(-math.pi / 2)
    loss.logvar.data = torch.log(err2.mean(dim=(0, 2, 3))).reshape(1, 3, 1, 1)
    loss(pred, target).backward()
    assert loss.logvar.grad.abs().max() < 1e-6
    mse = WeightedMSELoss(torch.tensor([0.5, 1.5, 1.5, 0.5]))
    expected = (torch.tensor([0.5, 1.5, 1.5, 0.5]).reshape(1, 1, 4, 1) * err2).mean()
    torch.testing.assert_close(mse(pred, target), expected)


def _dataset(arr: np.ndarray, start: str = "2001-01-01", lat=None, lon=None) -> WeatherDataset:
    t = pd.date_range(start, periods=arr.shape[0], freq="6h")
    lat = np.linspace(-60, 60, arr.shape[2]) if lat is None else lat
    lon = np.arange(arr.shape[3]) * 360 / arr.shape[3] if lon is None else lon
    ds = xr.Dataset(
        {"2m_temperature": (("time", "latitude", "longitude"), arr[:, 0])},
        coords={"time": t, "latitude": lat, "longitude": lon},
    )
    return WeatherDataset(ds, ("t2m",))


def test_damped_persistence_recovers_the_ar1_coefficient() -> None:
    rng = np.random.default_rng(0)
    n, rho = 2 * 1464, 0.8
    x = np.zeros((n, 1, 4, 8))
    for t in range(1, n):
        x[t] = rho * x[t - 1] + math.sqrt(1 - rho**2) * rng.normal(size=(1, 4, 8))
    agent = DampedPersistenceForecaster()
    agent.learn(_dataset(x.astype(np.float32)), Budget())
    assert agent.alpha[0] == pytest.approx(rho, abs=0.03)
    # Forecast k steps ahead = clim + alpha^k (x0 - clim).
    ctx = x[None, 100:102].astype(np.float32)
    out = agent.rollout(ctx, pd.DatetimeIndex(["2001-01-26T06"]).values, 3)
    times = pd.date_range("2001-01-26T06", periods=4, freq="6h").values
    c = agent.clim.at(times)
    a0 = ctx[0, -1] - c[0]
    for k in range(1, 4):
        np.testing.assert_allclose(
            out[0, k - 1], c[k] + agent.alpha[0] ** k * a0, rtol=1e-5, atol=1e-5
        )


def test_ridge_learns_advection_by_one_cell() -> None:
    # x_{t+1} = x_t shifted one cell east: a local linear operator the 3x3 patch ridge can represent.
    rng = np.random.default_rng(1)
    base = rng.normal(size=(1, 6, 64))
    n = 1464
    x = np.stack([np.roll(base, t, axis=-1) for t in range(n)]).astype(np.float32)
    agent = RidgePatchForecaster(radius=1, alpha=1e-6)
    agent.learn(_dataset(x), Budget())
    ctx = x[None, 500:502]
    pred = agent.rollout(ctx, pd.date_range("2001-01-01", periods=n, freq="6h").values[[501]], 4)
    truth = x[502:506][None]
    persistence = np.sqrt(((x[501][None, None] - truth) ** 2).mean())
    err = np.sqrt(((pred - truth) ** 2).mean())
    assert err < 0.05 * persistence


def test_local_patches_are_periodic_in_longitude() -> None:
    z = np.arange(2 * 3 * 5, dtype=float).reshape(1, 2, 3, 5)
    p = local_patches(z, 1)  # (1, lat, lon, C * 9)
    assert p.shape == (1, 3, 5, 18)
    # Centre of the patch at (lat 1, lon 0), channel 0 is z[0, 0, 1, 0]; its west neighbour wraps.
    patch = p[0, 1, 0, :9].reshape(3, 3)
    assert patch[1, 1] == z[0, 0, 1, 0] and patch[1, 0] == z[0, 0, 1, 4]
    # Latitude edges repeat the edge row.
    top = p[0, 0, 2, :9].reshape(3, 3)
    np.testing.assert_array_equal(top[0], top[1])


def test_emformer_training_is_seeded_and_updates_loss_parameters() -> None:
    from icml26.agents.weather.neural import EMFormerForecaster

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 1, 4, 8)).astype(np.float32).cumsum(axis=0) * 0.1
    data = _dataset(x)

    def train(seed: int) -> EMFormerForecaster:
        torch.manual_seed(seed)
        a = EMFormerForecaster(
            dim=8,
            heads=2,
            depth=(1, 1, 1),
            updates=6,
            finetune_updates=2,
            finetune_lengths=(2, 3),
            batch_size=4,
            progress=False,
        )
        a.reset(seed)
        stats = a.learn(data, Budget())
        assert stats["updates"] == 10
        return a

    a, b, c = train(0), train(0), train(1)
    for pa, pb in zip(a.model.parameters(), b.model.parameters()):
        torch.testing.assert_close(pa, pb)
    assert any(
        not torch.equal(pa, pc) for pa, pc in zip(a.model.parameters(), c.model.parameters())
    )
    assert not torch.all(a.loss_fn.logvar == 0)  # the log-variances are learned
    with pytest.raises(RuntimeError, match="learn"):
        EMFormerForecaster().act({"state": x[:2], "time": np.array([0])})
    capped = EMFormerForecaster(
        dim=8,
        heads=2,
        depth=(1, 1, 1),
        updates=10,
        finetune_updates=5,
        finetune_lengths=(2,),
        batch_size=2,
        progress=False,
    )
    assert capped.learn(data, Budget(updates=6))["updates"] == 6


def test_composite_balance_theta_moves_from_its_default_and_not_from_the_release_init() -> None:
    """v2 starts theta at 0 (w = 1/2, largest dw/dtheta) with no weight decay on it: it moves. The
    release's -pi/2 is a stationary point of w (cos = 0): there it stays, which is why v1's
    composite loss reduced to its first term. ``loss="fixed"`` keeps theta where it starts."""
    from icml26.agents.weather.neural import EMFormerForecaster

    rng = np.random.default_rng(1)
    data = _dataset(rng.normal(size=(300, 1, 4, 8)).astype(np.float32).cumsum(axis=0) * 0.1)

    def theta_after(**kw: Any) -> float:
        torch.manual_seed(0)
        a = EMFormerForecaster(
            dim=8,
            heads=2,
            depth=(1, 1, 1),
            updates=30,
            finetune_updates=0,
            finetune_lengths=(),
            batch_size=4,
            progress=False,
            lr=1e-2,
            **kw,
        )
        a.reset(0)
        return a.learn(data, Budget())["composite_theta"]

    moved = abs(theta_after())
    stuck = abs(
        theta_after(theta0=-math.pi / 2) + math.pi / 2
    )  # Adam's eps turns ~0 gradients into ~0 steps
    assert moved > 0.05 and stuck < 1e-3 and moved > 100 * stuck
    assert theta_after(loss="fixed") == 0.0
    assert EMFormerForecaster.version == "3"
