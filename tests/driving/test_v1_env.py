"""ScenePilot-v1: RSS sigma (hand-worked), the collision reward and its gate, the pre-collision
window, randomized scenes, traffic lights, the collision-horizon Phi labels and the vector env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.envs.driving.constants import TABLES
from icml26.envs.driving.env_v1 import (
    RESPONSE_STEPS,
    ScenePilotV1VectorEnv,
    scripted_adversary_v1,
    sigma_params,
)
from icml26.envs.driving.feasibility import FeasibilityParams, sigma_batch
from icml26.envs.driving.realism import stop_line
from icml26.envs.driving.risk import HorizonPhiLearner, RiskPredictor
from icml26.envs.driving.scalar import sigma_one

RSS = sigma_params("rss")
REL = sigma_params("released")
HL, HW = 2.45, 1.0  # half length / width of a car


def _sig(p: FeasibilityParams, dx: float, dy: float, v_ego: float, v_npc: float, yaw_npc=0.0):
    ego = np.array([[0.0, 0.0, 0.0, v_ego, 0.0, HL, HW]])
    npc = np.array([[dx, dy, yaw_npc, v_npc * np.cos(yaw_npc), v_npc * np.sin(yaw_npc), HL, HW]])
    b = float(sigma_batch(ego, npc, np.array([True]), p)[0])
    s = sigma_one(
        tuple(ego[0].tolist()), tuple(npc[0].tolist()), p, float(np.radians(p.same_dir_deg))
    )
    assert s == pytest.approx(b, abs=1e-12)  # scalar path == batched path
    return b


def test_rss_longitudinal_distance_hand_worked():
    # ego 8 m/s behind a stopped car, rho 1 s, a_acc 3.5, b_min 4:
    # d = 8*1 + 3.5/2 + (8 + 3.5)^2 / 8 - 0 = 8 + 1.75 + 16.53125 = 26.28125 m (+ 4.9 m of car lengths)
    d = 8.0 + 1.75 + 11.5**2 / 8.0
    assert d == pytest.approx(26.28125)
    assert _sig(RSS, 4.9 + d + 0.5, 0.0, 8.0, 0.0) == 1.0  # a distant lead car is feasible
    assert _sig(RSS, 4.9 + d - 3.0, 0.0, 8.0, 0.0) < 1.0
    # the released formula: a car in the ego's lane keeps need_y > 0 -> sigma = 0 even at 60 m
    assert _sig(REL, 60.0, 0.0, 8.0, 0.0) == pytest.approx(0.0)
    assert _sig(RSS, 60.0, 0.0, 8.0, 0.0) == 1.0


def test_rss_lateral_distance_hand_worked():
    # ego at rest, a car level with it on its left drifting towards it at 1 m/s: rho = max(1, 2) = 2,
    # a_lat 0.2, b_lat 0.8, mu 0.1: v1 = 1, v2 = 0, v1r = 1.4, v2r = -0.4,
    # d = (2 + 0.4)/2*2 + 1.4^2/1.6 - ((0 - 0.4)/2*2 - 0.4^2/1.6) = 2.4 + 1.225 + 0.4 + 0.1 = 4.125 m
    d_lat = 0.1 + 4.125
    ego = np.array([[0.0, 0.0, 0.0, 0.0, 0.0, HL, HW]])

    def at(dy: float) -> float:
        npc = np.array([[0.0, dy, 0.0, 0.0, -1.0, HL, HW]])
        return float(sigma_batch(ego, npc, np.array([True]), RSS)[0])

    assert at(2 * HW + d_lat + 0.05) == 1.0  # laterally safe: nothing else matters
    assert at(2 * HW + d_lat - 0.5) < 1.0  # unsafe on both axes (level with the ego)
    # not closing laterally and clear: the adjacent lane is safe at any speed
    assert _sig(RSS, 0.0, 3.5, 8.0, 8.0) == 1.0


def test_sigma_scalar_equals_batch_random():
    rng = np.random.default_rng(0)
    for _ in range(300):
        dx, dy = rng.uniform(-40, 40), rng.uniform(-10, 10)
        _sig(RSS, dx, dy, rng.uniform(0, 15), rng.uniform(0, 15), rng.uniform(-np.pi, np.pi))


def _run(env, action, seed):
    obs, info = env.reset(seed=seed)
    sigmas, rewards, risks = [info["sigma"]], [], []
    while True:
        obs, r, te, tr, info = env.step(np.array([action], np.float32))
        sigmas.append(info["sigma"])
        rewards.append(r)
        risks.append(info["risk"])
        if te or tr:
            return sigmas, rewards, risks, info


def test_collision_reward_telescopes_and_gate():
    env = gym.make("icml26/ScenePilot-v1", scenario=4, phi="ttc").unwrapped
    sigmas, rewards, risks, info = _run(env, 1.0, 1)
    m = info["episode_metrics"]
    assert m["collision"] == 1.0 and info["collision"]
    # the window ends RESPONSE_STEPS steps before the collision, and starts at the reset state
    assert m["min_sigma_pre_collision"] == pytest.approx(
        min(sigmas[: len(sigmas) - RESPONSE_STEPS])
    )
    assert m["avoidable_collision"] == float(m["min_sigma_pre_collision"] >= 0.0)
    # sum of rewards = bonus * avoidable + risk_T - risk_0 (risk_0 = 0: all at rest)
    assert sum(rewards) == pytest.approx(10.0 * m["avoidable_collision"] + risks[-1], abs=1e-9)
    assert m["J_reward"] == pytest.approx(sum(rewards))
    env.set_feasibility_threshold(1.01)  # nothing is feasible at k > 1: no collision pays
    _, rewards2, risks2, info2 = _run(env, 1.0, 1)
    assert info2["episode_metrics"]["collision"] == 1.0
    assert info2["episode_metrics"]["avoidable_collision"] == 0.0
    assert sum(rewards2) == pytest.approx(risks2[-1], abs=1e-9)


def test_released_reward_is_the_risk():
    env = gym.make("icml26/ScenePilot-v1", scenario=4, reward="released", phi="ttc").unwrapped
    _, rewards, risks, info = _run(env, 1.0, 1)
    assert info["episode_metrics"]["collision"] == 1.0
    assert rewards == pytest.approx(risks)
    assert info["episode_metrics"]["J_risk"] == pytest.approx(sum(risks))


def test_randomized_parameters_follow_the_seed():
    env = gym.make("icml26/ScenePilot-v1", scenario=3)
    p1 = env.reset(seed=1)[1]["scenario_params"]
    p2 = env.reset(seed=2)[1]["scenario_params"]
    p1b = env.reset(seed=1)[1]["scenario_params"]
    assert p1 == p1b and p1 != p2
    assert abs(p1["shift"]) <= 8.0 and 0.85 <= p1["other_speed_scale"] <= 1.15
    fixed = gym.make("icml26/ScenePilot-v1", scenario=3, randomize=False)
    q = fixed.reset(seed=1)[1]["scenario_params"]
    assert q["shift"] == 0.0 and q["trigger_scale"] == 1.0
    # the scripted adversary uses the drawn trigger distance
    obs = np.zeros(27, np.float32)
    obs[9] = 40.0  # adversary 40 m away; scenario 5 triggers at 35 m x scale
    a, trig = scripted_adversary_v1(obs, 5, False, {"trigger_scale": 1.2})
    assert trig and a[0] > -1.0
    a, trig = scripted_adversary_v1(obs, 5, False, {"trigger_scale": 1.0})
    assert not trig and a[0] == -1.0


def test_ego_waits_at_red_and_a_reckless_ego_runs_it():
    for seed in range(3):
        env = gym.make("icml26/ScenePilot-v1", scenario=7, phi="ttc").unwrapped
        env.reset(seed=seed)
        w = env.world
        line = float(stop_line(w.scn)[0])
        j_in = float(TABLES["j_entry"][7])
        while True:
            _, _, te, tr, info = env.step(np.array([-1.0], np.float32))  # adversary stays put
            if info["red_light"] == 0:
                assert float(w.ego_s[0]) + 2.45 < j_in
            if te or tr:
                break
        assert info["episode_metrics"]["run_red_light"] == 0.0
        assert line < j_in
    reckless = gym.make(
        "icml26/ScenePilot-v1", scenario=7, phi="ttc", ego=lambda o, i: np.array([1.0, 0.0])
    ).unwrapped
    reckless.reset(seed=0)
    seen = False
    while True:
        _, _, te, tr, info = reckless.step(np.array([-1.0], np.float32))
        seen |= info["red_light_violation"]
        if te or tr:
            break
    assert seen and info["episode_metrics"]["run_red_light"] == 1.0


def test_horizon_labels_hand_worked():
    net = RiskPredictor(training=True, seed=0, k_inv_d=0.0)
    L = HorizonPhiLearner(1, net, horizon_steps=3, samples_per_update=10**6)
    one = np.ones(1, bool)
    no = np.zeros(1, bool)
    feats = [np.full((1, 6), float(t), np.float32) for t in range(8)]
    for t in range(5):  # states 0..4, no collision: a state is labelled 0 once its 3 steps passed
        L.observe(feats[t], no, no, one)
    assert L._size == 3 and np.all(L._Y[:3] == 0.0) and list(L._X[:3, 0]) == [0.0, 1.0, 2.0]
    L.observe(feats[5], one, one, one)  # collision right after state 5: states 3, 4, 5 are positive
    assert L._size == 6 and list(L._X[3:6, 0]) == [3.0, 4.0, 5.0] and np.all(L._Y[3:6] == 1.0)
    L.observe(feats[6], no, one, one)  # truncation: state 6 negative
    assert L._size == 7 and L._Y[6] == 0.0 and L._X[6, 0] == 6.0
    assert L.n_positive == 3 and L.n_labelled == 7


def test_vector_env_and_batched_phi():
    venv = gym.make_vec("icml26/ScenePilot-v1", num_envs=8, phi={"min_updates": 1})
    assert isinstance(venv.unwrapped if hasattr(venv, "unwrapped") else venv, ScenePilotV1VectorEnv)
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(400):
        obs, r, te, tr, info = venv.step(rng.uniform(-1, 1, (8, 1)))
        assert r.shape == (8,) and info["min_sigma_pre"].shape == (8,)
        if "episode_metrics" in info:
            ended += int(info["_episode_metrics"].sum())
            em = info["episode_metrics"]
            for k in (
                "avoidable_collision",
                "min_sigma_pre_collision",
                "run_red_light",
                "J_reward",
            ):
                assert k in em
    assert ended > 0
    L = venv.phi_learner
    assert L.n_labelled > 0
    if L.n_positive:
        assert L.n_updates > 0 and L.ready


def test_bad_arguments():
    with pytest.raises(ValueError, match="reward"):
        gym.make("icml26/ScenePilot-v1", reward="survive")
    with pytest.raises(ValueError, match="sigma"):
        gym.make("icml26/ScenePilot-v1", sigma="l2")
    with pytest.raises(TypeError, match="phi"):
        gym.make("icml26/ScenePilot-v1", phi=3)


@pytest.mark.parametrize("scenario,ego", [(5, "human"), (7, "idm"), (7, "human"), (1, "cautious")])
def test_scalar_path_equals_batched_path_v1(scenario, ego):
    """Lights, the jerk limit and the randomized reset give the same episode on both step paths."""
    runs = []
    for fast in (True, False):
        env = gym.make("icml26/ScenePilot-v1", scenario=scenario, ego=ego, phi="ttc").unwrapped
        env.world.fast = fast
        env.reset(seed=3)
        rng = np.random.default_rng(0)
        traj = []
        while True:
            a = rng.uniform(-1, 1, 1).astype(np.float32)
            obs, r, te, tr, info = env.step(a)
            traj.append((obs.copy(), r, info["sigma"], info["red_light"], te, tr))
            if te or tr:
                break
        runs.append((traj, info["episode_metrics"]))
    (t1, m1), (t2, m2) = runs
    assert len(t1) == len(t2)
    for a, b in zip(t1, t2):
        np.testing.assert_allclose(a[0], b[0], atol=1e-9)
        assert a[1] == pytest.approx(b[1], abs=1e-9) and a[2] == pytest.approx(b[2], abs=1e-9)
        assert a[3:] == b[3:]
    assert m1["collision"] == m2["collision"] and m1["run_red_light"] == m2["run_red_light"]


def test_phi_save_and_frozen_load(tmp_path):
    venv = ScenePilotV1VectorEnv(num_envs=16, scenario=4, phi={"min_updates": 1})
    venv.reset(seed=0)
    for _ in range(300):
        venv.step(np.ones((16, 1)))
    L = venv.phi_learner
    assert L.n_positive > 0 and L.n_updates > 0 and L.learning
    path = tmp_path / "phi.npz"
    venv.save_phi(path)
    env = gym.make("icml26/ScenePilot-v1", scenario=4, phi=f"frozen:{path}").unwrapped
    assert env.phi_learner is not None and not env.phi_learner.learning
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.ones(1, np.float32))
    assert info["risk_source"] == "phi"
    p = RiskPredictor.load(path)
    feat = env.world.feat_prev
    assert info["risk"] == pytest.approx(float(p.risk(feat)[0]))
    assert info["risk"] == pytest.approx(
        float(L.risk(feat)[0]), abs=1e-6
    )  # the online net as saved
    frozen = RiskPredictor.load(path, training=False)
    env2 = gym.make("icml26/ScenePilot-v1", scenario=4, phi=frozen).unwrapped
    assert not env2.phi_learner.learning and env2.phi is frozen


def test_av_v1_env_scripted_and_red_light_penalty():
    env = gym.make(
        "icml26/ScenePilotAV-v1", scenario=7, base_planner=None, adversary="idle"
    ).unwrapped
    env.reset(seed=0)
    viol = False
    while True:
        obs, r, te, tr, info = env.step(np.array([1.0, 0.0], np.float32))  # floor it
        viol |= info["red_light_violation"]
        if te or tr:
            break
    assert obs.shape == (12,)
    assert viol == bool(info["episode_metrics"]["run_red_light"])
    env2 = gym.make("icml26/ScenePilotAV-v1", scenario=5, base_planner="idm")
    _, info = env2.reset(seed=4)
    assert set(info["scenario_params"]) >= {"trigger_scale", "adv_speed_scale", "green_until"}


def test_online_phi_separates_colliding_from_safe_states():
    """Phi learned online in the vector env ranks held-out states that precede a collision within
    2 s above those that do not (AUROC on fresh seeds, random adversaries, scenarios 4-6)."""
    from scipy.stats import rankdata

    venv = ScenePilotV1VectorEnv(
        num_envs=24, scenario=[4, 5, 6], phi={"min_updates": 1, "samples_per_update": 32}
    )
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(300):
        venv.step(rng.uniform(-1, 1, (24, 1)))
    phi = venv.phi_learner
    assert phi.n_updates > 50 and phi.ready
    held = ScenePilotV1VectorEnv(num_envs=24, scenario=[4, 5, 6], phi="ttc")
    labels = HorizonPhiLearner(
        24, RiskPredictor(training=True, k_inv_d=0.0), samples_per_update=10**9
    )
    held.reset(seed=123)
    for _ in range(250):
        before = held.world.feat_prev.copy()
        _, _, te, tr, info = held.step(rng.uniform(-1, 1, (24, 1)))
        labels.observe(before, info["collision"], te | tr, np.ones(24, bool))
    x, y = labels._X[: labels._size], labels._Y[: labels._size]
    n1, n0 = y.sum(), len(y) - y.sum()
    assert n1 > 50 and n0 > 50
    ranks = rankdata(phi.risk(x))
    auroc = (ranks[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)
    assert auroc > 0.85
