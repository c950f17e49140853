"""The learned forecasters' training loop: budget filling, validation curves, and seeds trained
side by side (``fit_jointly``) equal to seeds trained one at a time."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
import xarray as xr

from icml26.agents.weather.nets import WindowAttention
from icml26.agents.weather.neural import (
    EMFormerForecaster,
    ResNetForecaster,
    TrainConfig,
    fit_jointly,
)
from icml26.envs.weather.env import WeatherDataset
from icml26.envs.weather.metrics import latitude_weights_array
from icml26.protocol import Budget


def _dataset(arr: np.ndarray, start: str = "2001-01-01", lead_steps: int = 40) -> WeatherDataset:
    t = pd.date_range(start, periods=arr.shape[0], freq="6h")
    lat = np.linspace(-60, 60, arr.shape[2])
    lon = np.arange(arr.shape[3]) * 360 / arr.shape[3]
    ds = xr.Dataset(
        {
            "2m_temperature": (("time", "latitude", "longitude"), arr[:, 0]),
            "10m_u_component_of_wind": (("time", "latitude", "longitude"), arr[:, 1]),
        },
        coords={"time": t, "latitude": lat, "longitude": lon},
    )
    return WeatherDataset(ds, ("t2m", "u10"), lead_steps=lead_steps)


def _walk(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 2, 4, 8)).cumsum(axis=0) * 0.1).astype(np.float32)


_TINY: dict[str, Any] = {"dim": 8, "heads": 2, "depth": (1, 1, 1), "batch_size": 4}


def test_budget_filling_stages() -> None:
    """updates=None spends exactly the budget: 20% in the fine-tuning stages (the split the
    weather page used at 1000 updates: 802 one-step + 3 x 66), whatever the budget's scale."""
    cfg = TrainConfig(finetune_lengths=(2, 4, 8))
    assert cfg.stages(Budget(updates=1000)) == [
        (1, 802, 2e-3),
        (2, 66, 5e-4),
        (4, 66, 5e-4),
        (8, 66, 5e-4),
    ]
    for total in (2000, 4000, 8000, 7):
        stages = cfg.stages(Budget(updates=total))
        assert sum(n for _, n, _ in stages) == total
    assert TrainConfig().stages(Budget(updates=4000)) == [(1, 4000, 2e-3)]
    # an explicit count is capped by the budget, as before
    fixed = TrainConfig(updates=800, finetune_updates=60, finetune_lengths=(2, 4, 8))
    assert sum(n for _, n, _ in fixed.stages(Budget(updates=500))) <= 500
    assert fixed.stages(Budget()) == [(1, 800, 2e-3), (2, 60, 5e-4), (4, 60, 5e-4), (8, 60, 5e-4)]
    data = _dataset(_walk(200, 0))
    a = ResNetForecaster(width=4, blocks=1, batch_size=4, progress=False, val_points=0)
    a.reset(0)
    assert a.learn(data, Budget(updates=13))["updates"] == 13
    with pytest.raises(ValueError, match="device"):
        EMFormerForecaster(device="tpu")


def test_explicit_attention_equals_the_fused_kernel() -> None:
    torch.manual_seed(0)
    att = WindowAttention(16, 4, (2, 4)).double()
    x = torch.randn(3, 4, 8, 16, dtype=torch.float64)
    fused = att(x)
    att.explicit = True
    torch.testing.assert_close(att(x), fused, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (
            EMFormerForecaster,
            {**_TINY, "finetune_lengths": (2, 3), "finetune_share": 0.4},
        ),
        (EMFormerForecaster, {**_TINY, "loss": "fixed", "finetune_lengths": ()}),
        (ResNetForecaster, {"width": 4, "blocks": 1, "batch_size": 4}),
    ],
)
def test_seeds_trained_jointly_equal_seeds_trained_alone(cls: Any, kwargs: dict[str, Any]) -> None:
    """Same initialization, batches, clipping and optimizer steps per seed: the stacked (vmap)
    training gives each seed the network it gets alone, up to float rounding; the validation
    curves agree too, and the grad clip is per seed (a low threshold makes it bind)."""
    data = _dataset(_walk(300, 1))
    val = _dataset(_walk(120, 2), start="2003-01-01", lead_steps=12)
    budget = Budget(updates=10)
    common = {**kwargs, "progress": False, "val_points": 2, "val_inits": 3, "grad_clip": 0.5}

    def make(seed: int) -> Any:
        a = cls(**common)
        a.reset(seed)
        a.set_validation(val)
        return a

    alone = []
    for seed in (0, 3):
        a = make(seed)
        stats = a.learn(data, budget)
        alone.append((a, stats))
    together = [make(0), make(3)]
    joint_stats = fit_jointly(together, data, budget)
    for (a, st), (b, jst) in zip(alone, zip(together, joint_stats, strict=True), strict=True):
        assert jst["updates"] == st["updates"] == 10
        assert jst["trained_jointly_with_seeds"] == [0, 3]
        for (name, pa), pb in zip(a.model.named_parameters(), b.model.parameters(), strict=True):
            torch.testing.assert_close(pb, pa, rtol=2e-4, atol=2e-5, msg=name)
        for pa, pb in zip(a.loss_fn.parameters(), b.loss_fn.parameters(), strict=True):
            torch.testing.assert_close(pb, pa, rtol=2e-4, atol=2e-5)
        va, vb = st["validation"]["points"], jst["validation"]["points"]
        assert [p["update"] for p in va] == [p["update"] for p in vb] == [0, 5, 10]
        np.testing.assert_allclose(
            [p["rmse"]["t2m"] for p in vb], [p["rmse"]["t2m"] for p in va], rtol=1e-4
        )
        ctx = val.array[:2][None]
        np.testing.assert_allclose(
            b.rollout(ctx, val.times[1:2], 3), a.rollout(ctx, val.times[1:2], 3), rtol=1e-4
        )
    seeds_differ = any(
        not torch.equal(p0, p1)
        for p0, p1 in zip(together[0].model.parameters(), together[1].model.parameters())
    )
    assert seeds_differ
    with pytest.raises(ValueError, match="same class"):
        fit_jointly([make(0), cls(**{**common, "lr": 1e-3})], data, budget)
    with pytest.raises(ValueError, match="repeats"):
        fit_jointly([make(0), make(0)], data, budget)


def test_composite_balance_arms_train_together_as_alone() -> None:
    """Members may differ in the composite loss's balance: a learned theta from 0, a fixed
    w = 1/2, and the release's learned theta from -pi/2 train side by side exactly as alone (the
    fixed member's theta stays put)."""
    data = _dataset(_walk(300, 6))
    budget = Budget(updates=8)
    arms = [
        ({}, 0),
        ({"loss": "fixed"}, 0),
        ({"theta0": -1.5707963267948966}, 1),
    ]
    common = {**_TINY, "finetune_lengths": (2,), "progress": False, "val_points": 0, "lr": 1e-2}

    def make(kw: dict[str, Any], seed: int) -> EMFormerForecaster:
        a = EMFormerForecaster(**common, **kw)
        a.reset(seed)
        return a

    alone = [make(kw, s) for kw, s in arms]
    stats = [a.learn(data, budget) for a in alone]
    together = [make(kw, s) for kw, s in arms]
    jstats = fit_jointly(together, data, budget)
    for a, b, st, jst in zip(alone, together, stats, jstats, strict=True):
        for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True):
            torch.testing.assert_close(pb, pa, rtol=2e-4, atol=2e-5)
        assert jst["composite_theta"] == pytest.approx(st["composite_theta"], abs=1e-5)
        assert jst["config"]["loss"] == st["config"]["loss"]
    assert jstats[1]["composite_theta"] == 0.0 and abs(jstats[0]["composite_theta"]) > 1e-3


def test_validation_curve_starts_at_anomaly_persistence() -> None:
    """Before the first update the network's head is zero, so it forecasts the initial anomaly
    (from the training climatology) unchanged: the curve's first point is that forecast's
    WeatherBench 2 RMSE on the held-out data, computed here by hand."""
    data = _dataset(_walk(400, 4))
    val = _dataset(_walk(160, 5) + 0.5, start="2004-01-01", lead_steps=12)
    a = EMFormerForecaster(**_TINY, finetune_lengths=(), val_points=1, val_inits=5, progress=False)
    a.reset(0)
    a.set_validation(val)
    stats = a.learn(data, Budget(updates=3))
    curve = stats["validation"]
    assert curve["days"] == [1, 3] and curve["inits"] == 5
    assert [p["update"] for p in curve["points"]] == [0, 3]
    x, t = val.array.astype(np.float64), val.times
    idx = np.unique(np.round(np.linspace(1, x.shape[0] - 12 - 1, 5)).astype(int))
    w = latitude_weights_array(val.latitude)[:, None]
    for d in (1, 3):
        k = 4 * d
        fc = a.clim.at(t[idx + k]) + (x[idx] - a.clim.at(t[idx]))
        mse = ((fc - x[idx + k]) ** 2 * w).mean(axis=(-2, -1)).mean(axis=0)
        got = [curve["points"][0]["rmse"][c][(1, 3).index(d)] for c in ("t2m", "u10")]
        np.testing.assert_allclose(got, np.sqrt(mse), rtol=1e-4)
    assert curve["points"][1]["rmse"]["t2m"] != curve["points"][0]["rmse"]["t2m"]


def _lorenz_task(**env: Any) -> Any:
    import dataclasses

    from icml26 import benchmarks

    task = benchmarks.get_task("weather/lorenz96-10day")
    return dataclasses.replace(
        task,
        env_kwargs={
            **task.env_kwargs,
            "train_period": ("2000-01-01", "2000-04-30T18"),
            "test_period": ("2000-05-01", "2000-06-30T18"),
            **env,
        },
        eval_episodes=4,
        budget=Budget(updates=12),
    )


class _ActOnly:
    """Hides a forecaster's ``rollout``: run_trial then steps the env with ``act``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "rollout":
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_batched_forecasts_score_as_the_env_loop() -> None:
    """run_trial forecasts every initialization in one batch (``rollout``) and replays it through
    the env; an agent seen only through ``act`` gives the same scores, and a replay the env does
    not confirm is refused."""
    from icml26 import agents
    from icml26.benchmarks.tasks import weather as wt

    task = _lorenz_task()
    for name, kw in (
        ("weather-damped-persistence", {}),
        ("weather-resnet", {"width": 4, "blocks": 1, "batch_size": 4, "progress": False}),
    ):
        torch.manual_seed(0)
        fast = wt.run_trial(task, agents.make(name, **kw), 0)
        torch.manual_seed(0)
        slow = wt.run_trial(task, _ActOnly(agents.make(name, **kw)), 0)
        assert fast.metrics.keys() == slow.metrics.keys()
        for k, v in fast.metrics.items():
            assert v == pytest.approx(slow.metrics[k], rel=1e-5, abs=1e-6), (name, k)
        assert fast.extra["divergence"]["count"] == 0
    replay = wt._Replay(np.zeros((3, 1, 1, 4), np.float32), np.ones((2, 1, 1, 4), np.float32))
    with pytest.raises(RuntimeError, match="not the one"):
        replay.act({"lead_step": 1, "state": np.ones((2, 1, 1, 4), np.float32)})


def test_divergence_counts_forecasts_far_off_the_attractor() -> None:
    """A forecast with RMSE above 5x climatology's at some diagnostic day is counted from the
    first such day; a finite but huge forecast is not averaged away."""
    from icml26.benchmarks.tasks import weather as wt

    class Blowup:
        """Persistence that starts doubling its anomaly after two days, on one init only."""

        def __init__(self) -> None:
            self.k = 0

        def reset(self, seed: int | None = None) -> None:
            pass

        def act(self, obs: Any, info: Any = None) -> np.ndarray:
            k = int(obs["lead_step"])
            x = np.asarray(obs["state"][-1], dtype=np.float32)
            if k == 0:
                self.k += 1
            return x * 2.0 if (self.k == 2 and k >= 8) else x

    out = wt.run_trial(_lorenz_task(), Blowup(), 0)
    div = out.extra["divergence"]
    assert div["count"] == 1 and div["first_day"][0] is None
    assert div["first_day"][1] == 3  # doubling from step 8: 2^5 x at 3 days, 2^1 at 2 days


def test_joint_trials_equal_single_trials_and_carry_validation_curves() -> None:
    """run_trials_jointly scores each seed as run_trial does (same forecasts up to float
    rounding), and both hand the env's validation data to the forecaster: the trial's extra
    holds its validation curve."""
    from icml26 import agents
    from icml26.benchmarks.tasks import weather as wt

    task = _lorenz_task(val_period=("2000-07-01", "2000-08-31T18"))
    kw = {"width": 4, "blocks": 1, "batch_size": 4, "progress": False, "val_points": 2}
    single = [wt.run_trial(task, agents.make("weather-resnet", **kw), s) for s in (0, 1)]
    joint = wt.run_trials_jointly(
        task, [agents.make("weather-resnet", **kw) for _ in (0, 1)], [0, 1]
    )
    for a, b in zip(single, joint, strict=True):
        for k, v in a.metrics.items():
            assert b.metrics[k] == pytest.approx(v, rel=1e-4, abs=1e-6), k
        va, vb = a.extra["validation_curve"], b.extra["validation_curve"]
        assert [p["update"] for p in va["points"]] == [0, 6, 12]
        np.testing.assert_allclose(
            [p["rmse"]["lorenz96_x"] for p in vb["points"]],
            [p["rmse"]["lorenz96_x"] for p in va["points"]],
            rtol=1e-4,
        )
    assert single[0].metrics != single[1].metrics
