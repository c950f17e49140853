"""ScenePilot-v2: the crossing-route sigma (hand-worked, three implementations agree), no recoverable
gap credit, the re-tuned scenarios 3 and 4, the reckless arm, and v0/v1 left as they were."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.envs.driving.env_v1 import sigma_params
from icml26.envs.driving.env_v2 import (
    ScenePilotV2VectorEnv,
    reckless_adversary_v2,
    scripted_adversary_v2,
    sigma_params_v2,
)
from icml26.envs.driving.feasibility import (
    BodyState,
    FeasibilityParams,
    conflict_slack,
    sigma_batch,
    sigma_reference,
)
from icml26.envs.driving.scalar import sigma_one

V2 = sigma_params_v2("rss")
V1 = sigma_params("rss")
HL, HW = 2.45, 1.0  # half length / width of a car
SOUTH = -math.pi / 2  # a car crossing from the ego's left heads along -y


def _sig(p: FeasibilityParams, x: float, y: float, yaw: float, v_n: float, v_e=9.0, a_n=0.0):
    """sigma of an NPC at (x, y) heading ``yaw`` at ``v_n`` (accelerating ``a_n``); ego at the origin along +x."""
    c, s = math.cos(yaw), math.sin(yaw)
    ref = sigma_reference(
        BodyState(0.0, 0.0, 0.0, v_e, 0.0, HL, HW),
        BodyState(x, y, yaw, v_n * c, v_n * s, HL, HW, a_n * c, a_n * s),
        p,
    )
    ego = np.array([[0.0, 0.0, 0.0, v_e, 0.0, HL, HW]])
    npc = np.array([[x, y, yaw, v_n * c, v_n * s, HL, HW]])
    b = float(sigma_batch(ego, npc, np.array([True]), p, np.array([a_n]))[0])
    one = sigma_one(
        tuple(ego[0].tolist()), tuple(npc[0].tolist()), p, math.radians(p.same_dir_deg), a_n
    )
    assert ref == pytest.approx(b, abs=1e-12) and one == pytest.approx(b, abs=1e-12)
    return b


def test_conflict_slack_hand_worked():
    # ego 9 m/s, 12 m (centre) before the crossing point; a car from the left at 10 m/s arriving
    # together (13.33 m away). Conflict region half-extent at 90 deg: 2.45 + 1.0 = 3.45 m.
    # Stop: d_e = 8.55, brake distance 81/16 = 5.0625 -> latest brake onset (8.55 - 5.0625)/9 s.
    # Yield after it leaves: t_out = (13.33 + 3.45)/10 = 1.678 s -> needs 2*8*(9*1.678 - 8.55) > 81: no.
    # Rush: exit 15.45 m away, it enters at 0.988 s -> too late (negative). So T = 0.3875 s.
    t = conflict_slack(12.0, 10.0 * 12.0 / 9.0, SOUTH, 9.0, 10.0, 0.0, (HL, HW), (HL, HW))
    assert t == pytest.approx((8.55 - 81.0 / 16.0) / 9.0)
    assert _sig(V2, 12.0, 10.0 * 12.0 / 9.0, SOUTH, 10.0) == pytest.approx(0.3875)


def test_unavoidable_crossing_flagged_a_second_before_contact():
    # A car from the left at 10 m/s whose front reaches the ego's path 0.8 s from now; the ego at
    # 9 m/s is 6 m (centre) before the crossing point: braking takes 81/16 = 5.06 m > 2.55 m to the
    # conflict region, and it is inside from 0.28 s to (6 + 3.45)/9 = 1.05 s (full throttle:
    # 9.45 = 9 t + 1.75 t^2 -> 0.894 s > 0.8 s). Contact comes ~0.8 s from now, unavoidably.
    def at(before: float) -> float:  # sigma `before` s earlier on the same two straight courses
        return _sig(V2, 6.0 + 9.0 * before, 3.45 + 10.0 * (0.8 + before), SOUTH, 10.0)

    assert at(0.0) < 0.0
    # the ego's last chance to stop was at 8.5 m: 0.28 s earlier sigma is ~0 (slack 0.02 s)
    assert at(0.3) == pytest.approx((8.7 - 3.45 - 81.0 / 16.0) / 9.0, abs=1e-9)
    # below k = 0.35 already 1.4 s before contact (0.6 s before now): slack (11.4 - 3.45 - 5.06)/9
    assert at(0.6) == pytest.approx((11.4 - 3.45 - 81.0 / 16.0) / 9.0) and at(0.6) < 0.35
    # 2 s before contact: 0.92 s of slack; 2.3 s before: more than a second, fully feasible
    assert at(1.2) == pytest.approx((16.8 - 3.45 - 81.0 / 16.0) / 9.0) and at(1.5) == 1.0
    # v1's two-axes rule missed it (sigma stayed high: one axis was "clear")
    assert _sig(V1, 6.0, 3.45 + 8.0, SOUTH, 10.0) > 0.35


@pytest.mark.parametrize(
    "case",
    [
        (12.0, 80.0, SOUTH, 10.0, 0.0),  # crossing car far away: it arrives long after the ego left
        (12.0, -8.0, SOUTH, 10.0, 0.0),  # crossing car already past the ego's path
        (12.0, 8.0, SOUTH, 0.0, 0.0),  # crossing car standing at its line
        (12.0, 20.0, SOUTH, 8.0, -8.0),  # braking hard: it stops 4 m later, short of the crossing
        (-12.0, 10.0, SOUTH, 10.0, 0.0),  # the crossing lies behind the ego
    ],
)
def test_no_conflict_is_feasible(case):
    assert _sig(V2, *case) == 1.0


def test_ego_waiting_at_the_line_is_feasible_and_a_stopped_ego_in_the_path_is_not():
    # the ego stands 3 m before the conflict region: it can keep standing
    assert _sig(V2, 6.45, 8.0, SOUTH, 10.0, v_e=0.0) == 1.0
    # the ego stands in the middle of the crossing with a car arriving in 0.5 s: full throttle from
    # rest needs sqrt(2 * 3.45 / 3.5) = 1.40 s to get out -> 0.5 - 1.40 = -0.9 s
    assert _sig(V2, 0.0, 3.45 + 5.0, SOUTH, 10.0, v_e=0.0) == pytest.approx(
        0.5 - math.sqrt(2 * 3.45 / 3.5)
    )


def test_same_lane_cases_keep_their_rss_values():
    # a lead car at the RSS distance is feasible in v2 as in v1; a close lead car is not
    d = 8.0 + 1.75 + 11.5**2 / 8.0
    for p in (V1, V2):
        assert _sig(p, 4.9 + d + 0.5, 0.0, 0.0, 0.0, v_e=8.0) == 1.0
    # following at equal speed: the release's rule zeroes a gap that is not closing, in both
    assert _sig(V2, 15.0, 0.0, 0.0, 9.0) == _sig(V1, 15.0, 0.0, 0.0, 9.0) == 1.0
    # closing on a 5 m/s lead car 10 m ahead (15 m centre to centre) at 9 m/s:
    # d_safe = 9 + 1.75 + 12.5^2/8 - 5^2/8 = 28.71875 (b_max 8 for the lead), need = 4.9 + d - 15;
    # lateral need 2 + 1.1 (no lateral motion) -> n_y = 1, so sigma = 1 - n_x.
    d = 9.0 + 1.75 + 12.5**2 / 8.0 - 25.0 / 16.0
    assert _sig(V2, 15.0, 0.0, 0.0, 5.0) == pytest.approx(1.0 - (4.9 + d - 15.0) / (d + 4.9))
    # v1 credited 0.5 * 3 * (need / 4 m/s)^2 = 32 m of "recoverable" gap: fully feasible
    assert _sig(V1, 15.0, 0.0, 0.0, 5.0) == 1.0


def test_no_recoverable_gap_credit_for_an_overlapping_head_on_car():
    # scenario 6's contact: the ego starts its left turn into the oncoming car's lane, 4.7 m apart
    yaw = math.radians(164.0)
    v1 = _sig(V1, 4.7, 1.8, yaw, 9.0, v_e=4.0)
    v2 = _sig(V2, 4.7, 1.8, yaw, 9.0, v_e=4.0)
    # v1 0.68 (as measured at contact in scenario 6), v2 below the curriculum's last k (0.35)
    assert v1 > 0.6 and v2 < 0.2, (v1, v2)


def test_v1_sigma_and_params_unchanged():
    assert V1.crossing == "axes" and V1.recover
    assert FeasibilityParams().crossing == "axes"
    assert sigma_params_v2("rss-v1") == V1
    assert sigma_params_v2("released") == sigma_params("released")
    with pytest.raises(ValueError, match="sigma must be one of"):
        sigma_params_v2("rss2")
    with pytest.raises(ValueError, match="crossing must be"):
        FeasibilityParams(crossing="ray")


def test_v2_registered_with_its_defaults():
    env = gym.make("icml26/ScenePilot-v2", scenario=5)
    w = env.unwrapped.world
    assert w.planner_name == "human" and w.feas == V2 and w.ranges is not None
    obs, info = env.reset(seed=0)
    obs, r, te, tr, info = env.step(np.array([0.5], np.float32))
    assert {"min_sigma_pre", "avoidable", "red_light", "risk"} <= set(info)
    av = gym.make("icml26/ScenePilotAV-v2", scenario=3, base_planner="human")
    av.reset(seed=1)
    av.step(np.zeros(2, np.float32))
    # the v1 ids keep v1's world
    w1 = gym.make("icml26/ScenePilot-v1", scenario=5).unwrapped.world
    assert w1.planner_name == "idm" and w1.feas == V1 and w1.ranges is None


def test_single_and_vector_v2_agree_on_scenario_3():
    # the scalar one-scene path and the batched path give the same v2 episode (moving start included)
    env = gym.make("icml26/ScenePilot-v2", scenario=3).unwrapped
    venv = ScenePilotV2VectorEnv(num_envs=1, scenario=3, phi="ttc")
    o1, _ = env.reset(seed=3)
    o2, _ = venv.reset(seed=3)
    assert o1[5] > 6.0  # the ego starts at 7-10 m/s
    np.testing.assert_allclose(o1, o2[0], atol=1e-9)
    for t in range(40):
        a = np.array([math.sin(t / 5.0)], np.float32)
        o1, r1, *_, i1 = env.step(a)
        o2, r2, *_, i2 = venv.step(a[None])
        np.testing.assert_allclose(o1, o2[0], atol=1e-6)
        assert i1["sigma"] == pytest.approx(float(i2["sigma"][0]), abs=1e-9)


def _rate(scenario: int, actor, n: int = 40) -> tuple[float, np.ndarray]:
    venv = ScenePilotV2VectorEnv(num_envs=n, scenario=scenario, phi="ttc")
    obs, _ = venv.reset(seed=0)
    rng = np.random.default_rng(1)
    trig, done = np.zeros(n, bool), np.zeros(n, bool)
    coll, msp = np.zeros(n), np.ones(n)
    while not done.all():
        if actor == "random":
            a = rng.uniform(-1, 1, (n, 1))
        else:
            rows = []
            for i in range(n):
                p = {
                    k: float(venv.world.rparams[k][i]) for k in ("trigger_scale", "adv_speed_scale")
                }
                ai, trig[i] = actor(obs[i], scenario, bool(trig[i]), p)
                rows.append(ai)
            a = np.stack(rows)
        obs, _, _, _, info = venv.step(a)
        if "episode_metrics" in info:
            em, m = info["episode_metrics"], info["_episode_metrics"]
            new = m & ~done
            coll[new], msp[new] = em["collision"][new], em["min_sigma_pre_collision"][new]
            done |= m
    return float(coll.mean()), msp[coll > 0]


@pytest.mark.slow
def test_scenarios_3_and_4_discriminate():
    # v1: scenario 3 never collided, scenario 4 collided in ~0.95 of episodes for every actor
    for sc in (3, 4):
        for actor in (scripted_adversary_v2, "random"):
            rate, _ = _rate(sc, actor)
            assert 0.0 < rate < 0.9, (sc, actor, rate)


def test_reckless_actor_signature_and_brake_check():
    obs = np.zeros(27)
    obs[9] = 30.0  # the lead car 30 m ahead: it cruises
    a, trig = reckless_adversary_v2(obs, 3, False)
    assert not trig and a.shape == (1,) and a[0] == pytest.approx((7.0 - 5.0) / 5.0)
    obs[9] = 10.0  # within 11 m: full brake, and it stays triggered
    a, trig = reckless_adversary_v2(obs, 3, False)
    assert trig and a[0] == -1.0
    a2, _ = reckless_adversary_v2(obs, 5, False, None, 2)
    assert a2.shape == (2,)
    s, _ = scripted_adversary_v2(obs, 3, False, {"trigger_scale": 1.0, "adv_speed_scale": 1.0})
    assert s[0] == -1.0  # the scripted lead of scenario 3 brakes once the ego is within 18 m


def test_attack_v2_task_runs_and_evaluates_the_v2_env():
    import dataclasses

    import icml26.agents
    import icml26.benchmarks as bm
    from icml26.benchmarks.tasks.driving import (
        _evaluate_lockstep,
        _evaluate_sequential,
        run_trial,
    )
    from icml26.protocol import Budget, derive_seed

    task = dataclasses.replace(
        bm.get_task("driving/attack-v2-human"), eval_episodes=6, budget=Budget(env_steps=0)
    )
    out = run_trial(task, icml26.agents.make("driving-scripted"), 0)
    for m in task.metrics:
        assert m.in_range(out.metrics[m.name]), m.name
    assert set(out.extra["collision_by_scenario"]) == {"5", "6", "7"}
    assert out.metrics["avoidable_collision_rate"] <= out.metrics["collision_rate"]
    # the lock-step (vector) evaluation gives the v2 episodes of the one-scene env
    kw = {"scenario": [5, 6, 7], "ego": "human", "action": "acc_steer"}
    order, seeds = np.array([5, 6, 7]), [derive_seed(0, "eval", i) for i in range(3)]
    agents = [icml26.agents.make("driving-scripted") for _ in range(3)]
    lock = _evaluate_lockstep(agents, kw, order, seeds, "icml26/ScenePilot-v2")
    seq = _evaluate_sequential(
        icml26.agents.make("driving-scripted"), kw, order, seeds, "icml26/ScenePilot-v2"
    )
    for a, b in zip(lock, seq):
        assert a.keys() == b.keys() and "min_sigma_pre_collision" in a
        for k in a:
            assert a[k] == pytest.approx(b[k], abs=1e-4), k
