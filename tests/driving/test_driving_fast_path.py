"""The one-scene scalar path (icml26.envs.driving.scalar) against the batched NumPy step: same episodes.

Both paths compute every formula in the same order; they can differ only where ``math`` and NumPy's
elementary functions round differently (one ulp), so float64 state is compared to 1e-12 and every
discrete outcome (collisions, ends, lanes, passing) exactly.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.envs.driving.constants import TABLES
from icml26.envs.driving.feasibility import FeasibilityParams
from icml26.envs.driving.scalar import boxes_overlap_one, project_one, route_point_one, sigma_one
from icml26.envs.driving.scenarios import LAYOUTS
from icml26.envs.driving.sim import (
    KinematicWorld,
    boxes_overlap,
    project_on_route,
    route_point,
)

STATE = (
    "x",
    "y",
    "yaw",
    "v",
    "beta",
    "vx",
    "vy",
    "ax",
    "ay",
    "pass_end",
    "pass_obst",
    "lat_target",
    "sigma_prev",
    "ego_s",
    "ego_lat",
    "ego_head",
    "last_ego_control",
    "vehicle_front",
)
EXACT = ("frozen", "t", "passing", "lane_prev", "scn", "kind")


def _assert_same_world(fast: KinematicWorld, ref: KinematicWorld, where: str) -> None:
    for k in STATE:
        np.testing.assert_allclose(
            getattr(fast, k), getattr(ref, k), rtol=1e-12, atol=1e-12, err_msg=f"{where} {k}"
        )
    for k in EXACT:
        np.testing.assert_array_equal(getattr(fast, k), getattr(ref, k), err_msg=f"{where} {k}")
    np.testing.assert_allclose(
        fast.feat_prev, ref.feat_prev, rtol=1e-6, atol=1e-7, err_msg=f"{where} feat"
    )
    for k in ref.metrics:
        np.testing.assert_allclose(
            fast.metrics[k], ref.metrics[k], rtol=1e-12, atol=1e-12, err_msg=f"{where} metric {k}"
        )


def _run_pair(
    scenario: int, planner: str, action: str, feas: str, seed: int, steps: int = 300
) -> int:
    fast = KinematicWorld(1, (scenario,), action, planner, FeasibilityParams(mode=feas))
    ref = KinematicWorld(1, (scenario,), action, planner, FeasibilityParams(mode=feas))
    ref.fast = False
    assert fast.fast_path and not ref.fast_path
    fast.reset(np.arange(1), np.random.default_rng(seed))
    ref.reset(np.arange(1), np.random.default_rng(seed))
    _assert_same_world(fast, ref, f"scenario {scenario} reset")
    rng = np.random.default_rng(seed + 1)
    for t in range(steps):
        a = rng.uniform(-1, 1, (1, 1 if action == "speed" else 2))
        rf, rr = fast.step(a), ref.step(a)
        where = f"scenario {scenario} {planner} {action} {feas} step {t}"
        for k in ("collision", "adversary_collision", "terminated", "truncated"):
            assert getattr(rf, k)[0] == getattr(rr, k)[0], f"{where} {k}"
        for k in ("risk", "sigma_t", "sigma", "ttc"):
            np.testing.assert_allclose(
                getattr(rf, k), getattr(rr, k), rtol=1e-12, atol=1e-12, err_msg=f"{where} {k}"
            )
        _assert_same_world(fast, ref, where)
        np.testing.assert_allclose(fast.observation(), ref.observation(), rtol=1e-6, atol=1e-6)
        if rr.terminated[0] or rr.truncated[0]:
            return t + 1
    return steps


@pytest.mark.parametrize("scenario", sorted(LAYOUTS))
def test_scalar_path_equals_batched_path_over_whole_episodes(scenario: int) -> None:
    n = _run_pair(scenario, "idm", "speed", "code", seed=scenario)
    n += _run_pair(scenario, "cautious", "speed", "code", seed=10 + scenario)
    n += _run_pair(
        scenario,
        "idm" if scenario % 2 else "cautious",
        "acc_steer",
        "rss",
        seed=20 + scenario,
        steps=120,
    )
    assert n > 150


def test_scalar_helpers_equal_the_vector_helpers() -> None:
    rng = np.random.default_rng(0)
    b = rng.uniform(-1, 1, size=(400, 10)) * [8, 8, 4, 3, 1, 8, 8, 4, 3, 1] + [
        0,
        0,
        0,
        3,
        1.5,
        0,
        0,
        0,
        3,
        1.5,
    ]
    vec = boxes_overlap(*b.T)
    assert 20 < vec.sum() < 380
    assert [boxes_overlap_one(*row) for row in b.tolist()] == vec.tolist()
    for sc in (2, 6, 7):  # routes with an arc
        prims = TABLES["prims"][sc]
        q = rng.uniform([-5, -30], [120, 60], size=(200, 2))
        ref = project_on_route(prims[None], q[None, :, 0], q[None, :, 1])
        one = np.array([project_one(prims.tolist(), x, y) for x, y in q.tolist()])
        for k in range(4):
            np.testing.assert_allclose(one[:, k], ref[k][0], rtol=1e-12, atol=1e-12)
        s = rng.uniform(-5, 200, size=100)
        total = float((prims[:, 6] + prims[:, 7]).max())
        ref = route_point(np.repeat(prims[None], 100, axis=0), s)
        one = np.array([route_point_one(prims.tolist(), total, v) for v in s.tolist()])
        for k in range(3):
            np.testing.assert_allclose(one[:, k], ref[k], rtol=1e-12, atol=1e-12)
    from icml26.envs.driving.feasibility import sigma_batch

    ego = np.column_stack(
        [
            rng.uniform(-20, 20, (500, 2)),
            rng.uniform(-np.pi, np.pi, 500),
            rng.uniform(-10, 10, (500, 2)),
            np.full(500, 2.45),
            np.full(500, 1.0),
        ]
    )
    npc = np.column_stack(
        [
            rng.uniform(-20, 20, (500, 2)),
            rng.uniform(-np.pi, np.pi, 500),
            rng.uniform(-10, 10, (500, 2)),
            np.full(500, 2.2),
            np.full(500, 0.9),
        ]
    )
    npc[::3, 2] = ego[::3, 2] + rng.uniform(-0.3, 0.3, npc[::3].shape[0])  # same direction cases
    for mode in ("code", "rss"):
        p = FeasibilityParams(mode=mode)
        ref = sigma_batch(ego, npc, np.ones(500, bool), p)
        one = [
            sigma_one(tuple(e), tuple(n), p, float(np.radians(p.same_dir_deg)))
            for e, n in zip(ego.tolist(), npc.tolist())
        ]
        assert len(set(np.round(ref, 6))) > 50  # the sample spans sigma's cases (1, -1, in between)
        np.testing.assert_allclose(one, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        (
            "icml26/ScenePilot-v0",
            {"scenario": "all", "ego": "idm", "phi": {"max_updates": 120}},
        ),  # idm: a collision starts Phi
        (
            "icml26/ScenePilotAV-v0",
            {"scenario": "all", "adversary": "scripted", "base_planner": "idm"},
        ),
    ],
)
def test_single_env_episodes_are_the_same_on_both_paths(env_id: str, kwargs: dict) -> None:
    fast, ref = gym.make(env_id, **kwargs), gym.make(env_id, **kwargs)
    ref.unwrapped.world.fast = False
    rng = np.random.default_rng(3)
    steps = 0
    for episode in range(6):
        (of, _), (orf, _) = fast.reset(seed=episode), ref.reset(seed=episode)
        np.testing.assert_array_equal(of, orf)
        while True:
            a = rng.uniform(-1, 1, fast.action_space.shape).astype(np.float32)
            of, rf, tf, uf, inf = fast.step(a)
            orf, rr, tr, ur, inr = ref.step(a)
            steps += 1
            assert (tf, uf) == (tr, ur) and inf["collision"] == inr["collision"]
            assert inf["risk_source"] == inr["risk_source"]
            np.testing.assert_allclose(of, orf, rtol=1e-6, atol=1e-6)
            assert rf == pytest.approx(rr, rel=1e-9, abs=1e-9)
            for k in ("sigma_t", "sigma_tp1", "ttc", "route_completion", "ego_speed"):
                assert inf[k] == pytest.approx(inr[k], rel=1e-12, abs=1e-12), k
            if tf or uf:
                for k, v in inr["episode_metrics"].items():
                    assert inf["episode_metrics"][k] == pytest.approx(v, rel=1e-9, abs=1e-9), k
                break
    assert steps > 300
    phi_f, phi_r = fast.unwrapped.phi, ref.unwrapped.phi
    if env_id == "icml26/ScenePilot-v0":  # Phi trained on the same transitions on both paths
        assert phi_f.ready and phi_r.ready and phi_f.n_updates == phi_r.n_updates == 120
        s = np.random.default_rng(0).uniform(-1, 1, (32, 6)).astype(np.float32)
        np.testing.assert_allclose(phi_f.risk(s), phi_r.risk(s), rtol=1e-5, atol=1e-6)
