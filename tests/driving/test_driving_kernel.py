"""One kernel for one scene and for N: the float binding and the NumPy binding of the same code.

The physics, planners, sigma and metrics of :mod:`icml26.envs.driving.sim` are one definition
(:mod:`icml26.envs.driving.lanes`); the one-scene path runs its float binding, the batched path
its NumPy binding. On random scenes (random scenario, planner, sigma rule, lights, poses, speeds,
accelerations, passing state, light phase) both give the same step to 1e-12, with identical
discrete outcomes.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from icml26.envs.driving import feasibility, lanes, sim
from icml26.envs.driving.feasibility import FeasibilityParams
from icml26.envs.driving.sim import KinematicWorld

FLOAT = ("x", "y", "yaw", "v", "beta", "vx", "vy", "ax", "ay", "pass_end", "pass_obst",
         "lat_target", "sigma_prev", "ego_s", "ego_lat", "ego_head", "last_ego_control",
         "vehicle_front")  # fmt: skip
EXACT = ("frozen", "t", "passing", "lane_prev", "scn", "kind")
SIGMAS = {
    "released": FeasibilityParams(),
    "rss": FeasibilityParams(mode="rss", combine="min"),
    "crossing": FeasibilityParams(mode="rss", combine="min", crossing="conflict", recover=False),
}


LANE_OPS = ("where", "fmin", "fmax", "clip", "any_", "all_", "not_")


def _names(code: types.CodeType) -> set[str]:
    """The global names a code object and the code nested in it read."""
    nested = (_names(c) for c in code.co_consts if isinstance(c, types.CodeType))
    return set(code.co_names).union(*nested)


def test_the_float_path_is_compiled_from_the_same_source() -> None:
    pairs = [(sim._ONE[k], getattr(sim, k)) for k in ("step_lanes", "plan_ego", "move", "measure",
                                                       "project", "boxes_overlap")]  # fmt: skip
    pairs.append((feasibility.sigma_lanes_one, feasibility.sigma_lanes))
    for twin, f in pairs:
        assert twin is not f and twin.__code__ is not f.__code__
        assert twin.__code__.co_filename == f.__code__.co_filename
        assert twin.__code__.co_firstlineno == f.__code__.co_firstlineno  # tracebacks: the source
        assert not set(LANE_OPS) & _names(twin.__code__)  # written out, no calls
        assert set(LANE_OPS) & _names(f.__code__)  # the NumPy binding calls them


where, fmin, fmax, clip, any_, all_, not_ = lanes.numpy_ops(" ".join(LANE_OPS))


def _kernel(a, b, c, x):  # type: ignore[no-untyped-def]
    s = where(c, a, b) + fmin(a * 2.0, b) + fmax(a, b - 1.0) + clip(x + 1.0, -a, b)
    t = [fmin(a * k, b) for k in (1.0, 2.0)]  # stays a call inside a comprehension
    return s + t[0] + t[1], not_(c), any_(c) and all_(c)


def test_inlined_lane_operations_keep_their_values() -> None:
    called = types.FunctionType(_kernel.__code__, {**globals(), **lanes.SCALAR_OPS})
    twin = lanes.scalar_twins([_kernel], globals())["_kernel"]
    assert "where" not in _names(twin.__code__) and "fmin" in _names(twin.__code__)
    for a, b, x in np.random.default_rng(0).normal(size=(200, 3)) * 3:
        for c in (True, False):
            args = (float(a), float(b), c, float(x))
            assert twin(*args) == called(*args)
            assert np.allclose(_kernel(*args)[0], twin(*args)[0], rtol=0, atol=1e-12)


def _random_scenes(n: int, rng: np.random.Generator, planner: str, feas: str) -> KinematicWorld:
    w = KinematicWorld(n, tuple(range(1, 9)), "acc_steer", planner, SIGMAS[feas])
    w.randomize = w.lights_on = True
    w.reset(np.arange(n), rng)
    present = w.kind != 0
    moving = present & (w.kind != 4)
    w.x[...] += np.where(moving, rng.uniform(-6, 6, (n, 3)), 0.0)
    w.y[...] += np.where(moving, rng.uniform(-3, 3, (n, 3)), 0.0)
    w.yaw[...] += np.where(moving, rng.uniform(-0.6, 0.6, (n, 3)), 0.0)
    w.v[...] = np.where(moving, rng.uniform(0, 12, (n, 3)), 0.0)
    w.beta[...] = np.where(moving, rng.uniform(-0.2, 0.2, (n, 3)), 0.0)
    w.vx[...], w.vy[...] = w.v * np.cos(w.yaw + w.beta), w.v * np.sin(w.yaw + w.beta)
    w.ax[...] = np.where(moving, rng.uniform(-8, 3, (n, 3)), 0.0)
    w.ay[...] = np.where(moving, rng.uniform(-2, 2, (n, 3)), 0.0)
    close = moving[:, 1] & (rng.uniform(size=n) < 0.3)  # adversaries right in front of the ego
    w.x[:, 1] = np.where(close, w.x[:, 0] + rng.uniform(3, 9, n), w.x[:, 1])
    w.y[:, 1] = np.where(close, w.y[:, 0] + rng.uniform(-2, 2, n), w.y[:, 1])
    w.frozen[...] = moving & (rng.uniform(size=(n, 3)) < 0.1)
    w.t[...] = rng.integers(0, 150, n)
    w.last_ego_control[...] = rng.uniform([-8, -0.5], [3.5, 0.5], (n, 2))
    w.passing[...] = (w.scn == 4) & (rng.uniform(size=n) < 0.5)
    w.lat_target[...] = np.where(w.passing, 3.5, 0.0)
    w.pass_end[...] = rng.uniform(30, 80, n)
    w.pass_obst[...] = rng.uniform(20, 40, n)
    w._update_ego_projection()
    return w


def _row(w: KinematicWorld, i: int) -> KinematicWorld:
    one = KinematicWorld(1, (int(w.scn[i]),), w.action_mode, w.planner_name, w.feas)
    one.randomize, one.lights_on = w.randomize, w.lights_on
    one.rparams = {k: v[i : i + 1].copy() for k, v in w.rparams.items()}
    one.has_light[...] = w.has_light[i]
    for buf in (
        "_body",
        "_sc",
        "_m",
        "scn",
        "kind",
        "frozen",
        "t",
        "passing",
        "lane_prev",
        "feat_prev",
    ):
        getattr(one, buf)[...] = getattr(w, buf)[i : i + 1]
    assert one.fast_path
    return one


@pytest.mark.parametrize(
    "planner, feas", [("idm", "released"), ("cautious", "rss"), ("human", "crossing")]
)
def test_float_path_equals_numpy_path_on_random_scenes(planner: str, feas: str) -> None:
    rng = np.random.default_rng(["idm", "cautious", "human"].index(planner))
    n = 48
    batch = _random_scenes(n, rng, planner, feas)
    ones = [_row(batch, i) for i in range(n)]
    outcomes = set()
    for step in range(12):
        a = rng.uniform(-1, 1, (n, 2))
        r = batch.step(a)
        for i, w in enumerate(ones):
            o = w.step_one(a[i].tolist())
            where = f"{planner}/{feas} scene {i} (scenario {int(batch.scn[i])}) step {step}"
            for k in ("collision", "adversary_collision", "terminated", "truncated"):
                assert getattr(o, k) == bool(getattr(r, k)[i]), f"{where} {k}"
            for k in ("risk", "sigma_t", "sigma", "ttc"):
                assert getattr(o, k) == pytest.approx(
                    float(getattr(r, k)[i]), rel=1e-12, abs=1e-12
                ), f"{where} {k}"
            for k in FLOAT:
                np.testing.assert_allclose(
                    getattr(w, k)[0],
                    getattr(batch, k)[i],
                    rtol=1e-12,
                    atol=1e-12,
                    err_msg=f"{where} {k}",
                )
            for k in EXACT:
                np.testing.assert_array_equal(
                    getattr(w, k)[0], getattr(batch, k)[i], err_msg=f"{where} {k}"
                )
            np.testing.assert_allclose(w._m[0], batch._m[i], rtol=1e-12, atol=1e-12, err_msg=where)
            np.testing.assert_allclose(w.feat_prev[0], batch.feat_prev[i], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(o.obs, batch.observation()[i], rtol=1e-6, atol=1e-6)
            outcomes.update(
                k for k, hit in (("collision", o.collision), ("end", o.terminated or o.truncated),
                                 ("passing", bool(w.passing[0])), ("low sigma", o.sigma < 0.35))
                if hit
            )  # fmt: skip
        done = r.terminated | r.truncated
        if done.any():  # restart ended scenes in both copies from the same draw
            idx = np.flatnonzero(done)
            batch.reset(idx, np.random.default_rng(step))
            for i in idx:
                ones[i] = _row(batch, i)
    assert outcomes == {"collision", "end", "passing", "low sigma"}  # the sample reaches every case
