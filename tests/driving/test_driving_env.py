"""ScenePilot-v0 / ScenePilotAV-v0: scenarios, determinism, bad input, vector env, planners, backends."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.agents.driving.baselines import ScriptedAdversary
from icml26.envs.driving.env import ScenePilotVectorEnv, attack_score, driving_score
from icml26.envs.driving.scenarios import LAYOUTS
from icml26.envs.driving.sim import KinematicWorld, boxes_overlap, project_on_route, route_point


def _episode(
    env: gym.Env, agent: ScriptedAdversary, seed: int, scenario: int | None = None
) -> tuple[list, dict]:
    obs, info = env.reset(seed=seed, options=None if scenario is None else {"scenario": scenario})
    agent.reset(seed)
    trace = [obs]
    while True:
        obs, r, term, trunc, info = env.step(agent.act(obs, info))
        trace.append(obs)
        if term or trunc:
            return trace, info


@pytest.mark.parametrize("scenario", sorted(LAYOUTS))
def test_every_scenario_reachable_and_deterministic(scenario: int) -> None:
    env1 = gym.make("icml26/ScenePilot-v0", scenario=scenario)
    env2 = gym.make("icml26/ScenePilot-v0", scenario=scenario)
    t1, i1 = _episode(env1, ScriptedAdversary(), seed=11)
    t2, i2 = _episode(env2, ScriptedAdversary(), seed=11)
    assert i1["scenario"] == scenario and i1["episode_metrics"]["scenario"] == scenario
    assert len(t1) == len(t2) and all(np.array_equal(a, b) for a, b in zip(t1, t2))
    assert i1["episode_metrics"] == i2["episode_metrics"]
    t3, _ = _episode(env1, ScriptedAdversary(), seed=12)
    assert not np.array_equal(t1[0], t3[0])  # the seed moves the spawn jitter
    assert t1[0].shape == (27,) and np.all(
        t1[0][:9][[3]] == 1.0
    )  # ego starts at the origin heading +x


def test_mix_draws_all_scenarios() -> None:
    env = gym.make("icml26/ScenePilot-v0", scenario="all")
    seen = {env.reset(seed=s)[1]["scenario"] for s in range(80)}
    assert seen == set(LAYOUTS)


@pytest.mark.parametrize(
    "bad, err",
    [
        (np.array([np.nan], np.float32), "finite"),
        (np.array([0.1, 0.2], np.float32), "shape"),
        (np.array([[0.1]], np.float32), "shape"),
        (np.array([1.5], np.float32), r"\[-1, 1\]"),
        ("fast", "action"),
    ],
)
def test_bad_actions_rejected_without_changing_state(bad, err) -> None:
    env = gym.make("icml26/ScenePilot-v0", scenario=3)
    ref = gym.make("icml26/ScenePilot-v0", scenario=3)
    env.reset(seed=5)
    ref.reset(seed=5)
    with pytest.raises((ValueError, TypeError), match=err):
        env.step(bad)
    good = np.array([0.3], np.float32)
    assert np.array_equal(env.step(good)[0], ref.step(good)[0])


def test_bad_kwargs_rejected() -> None:
    with pytest.raises(ValueError, match="scenario"):
        gym.make("icml26/ScenePilot-v0", scenario=9)
    with pytest.raises(ValueError, match="ego"):
        gym.make("icml26/ScenePilot-v0", ego="reckless")
    with pytest.raises(ValueError, match="backend"):
        gym.make("icml26/ScenePilot-v0", backend="unity")
    with pytest.raises(TypeError, match="ego"):
        gym.make("icml26/ScenePilot-v0", ego=42)


def test_two_dimensional_action() -> None:
    env = gym.make("icml26/ScenePilot-v0", scenario=5, action="acc_steer")
    assert env.action_space.shape == (2,)
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        obs, *_ = env.step(np.array([1.0, 0.0], np.float32))
    speed = float(np.hypot(obs[14], obs[15]))
    assert speed == pytest.approx(20 * 0.1 * 3.0, abs=1e-6)  # 3 m/s^2 for 2 s from rest


def test_planners_differ_where_they_should() -> None:
    # scenario 5 (red-light runner, scripted): the IDM planner reacts too late, the cautious one yields
    for ego, crash in (("idm", 1.0), ("cautious", 0.0)):
        env = gym.make("icml26/ScenePilot-v0", scenario=5, ego=ego)
        _, info = _episode(env, ScriptedAdversary(), seed=0)
        assert info["episode_metrics"]["collision"] == crash, ego
    # scenario 4: the stopped car forces a pass through the oncoming lane (two lane changes)
    env = gym.make("icml26/ScenePilot-v0", scenario=4, ego="cautious")
    _, info = _episode(env, ScriptedAdversary(), seed=0)
    m = info["episode_metrics"]
    assert m["collision"] == 0.0 and m["route_completion"] > 0.99 and m["lane_invasions"] == 2.0


def test_idle_adversary_lets_every_route_complete() -> None:
    for sc in sorted(LAYOUTS):
        if sc == 3:  # the lead car is scripted until it moved 5 m, then stops: the ego waits behind
            continue
        env = gym.make("icml26/ScenePilot-v0", scenario=sc, ego="idm")
        env.reset(seed=0)
        while True:
            *_, term, trunc, info = env.step(np.array([-1.0], np.float32))
            if term or trunc:
                break
        m = info["episode_metrics"]
        assert (
            m["collision"] == 0.0
            and m["route_completion"] > 0.99
            and m["out_of_road_length"] == 0.0
        ), (sc, m)


def test_native_vector_env_matches_single_worlds() -> None:
    vec = gym.make_vec("icml26/ScenePilot-v0", num_envs=4, scenario="all", phi="ttc")
    assert isinstance(vec, ScenePilotVectorEnv)
    vec.reset(seed=3)
    singles = []
    for i in range(4):
        w = KinematicWorld(1, (int(vec.world.scn[i]),))
        w.reset(np.arange(1), np.random.default_rng(0))
        for name, val in vars(vec.world).items():
            if isinstance(val, np.ndarray) and val.shape[:1] == (4,):
                getattr(w, name)[...] = val[i : i + 1]
        w._update_ego_projection()
        singles.append(w)
    rng = np.random.default_rng(0)
    for _ in range(60):
        a = rng.uniform(-1, 1, size=(4, 1))
        obs, r, term, trunc, info = vec.step(a)
        for i, w in enumerate(singles):
            res = w.step(a[i : i + 1])
            if not (term[i] or trunc[i]):
                np.testing.assert_allclose(obs[i], w.observation()[0], rtol=1e-6, atol=1e-6)
                assert r[i] == pytest.approx(res.risk[0]) and info["sigma_tp1"][i] == pytest.approx(
                    res.sigma[0]
                )
    big = gym.make_vec("icml26/ScenePilot-v0", num_envs=64)
    o, _ = big.reset(seed=0)
    o, r, *_ = big.step(big.action_space.sample())
    assert o.shape == (64, 27) and r.shape == (64,)
    with pytest.raises(ValueError, match="shape"):
        big.step(np.zeros((3, 1)))


def test_vector_env_autoresets_same_step() -> None:
    vec = gym.make_vec(
        "icml26/ScenePilot-v0", num_envs=2, scenario=5, phi="ttc", autoreset_mode="SameStep"
    )
    assert vec.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    vec.reset(seed=0)
    for _ in range(400):
        obs, r, term, trunc, info = vec.step(np.ones((2, 1)))
        if (term | trunc).any():
            i = int(np.flatnonzero(term | trunc)[0])
            assert info["_final_obs"][i] and info["_episode_metrics"][i]
            assert obs[i][0] == 0.0 and info["final_obs"][i][0] > 1.0  # fresh ego at the origin
            return
    pytest.fail("no episode ended")


def test_av_env_zero_residual_reproduces_the_planner() -> None:
    adv_env = gym.make("icml26/ScenePilot-v0", scenario=6, ego="idm", phi="ttc")
    av_env = gym.make(
        "icml26/ScenePilotAV-v0", scenario=6, adversary="scripted", base_planner="idm"
    )
    trace, _ = _episode(adv_env, ScriptedAdversary(), seed=4)
    av_env.reset(seed=4)
    w = av_env.unwrapped.world
    xs = [w.x[0, 0]]
    while True:
        obs, r, term, trunc, info = av_env.step(np.zeros(2, np.float32))
        xs.append(w.x[0, 0])
        if term or trunc:
            break
    assert obs.shape == (12,)
    np.testing.assert_allclose(np.array(xs), np.array([o[0] for o in trace]), atol=1e-9)


def test_av_env_direct_control_and_reward() -> None:
    env = gym.make("icml26/ScenePilotAV-v0", scenario=1, adversary="idle")
    env.reset(seed=0)
    for _ in range(30):
        obs, r, *_ = env.step(np.array([1.0, 0.0], np.float32))
    assert obs[2] == pytest.approx(9.0, abs=1e-6)  # 3 m/s^2 for 3 s
    assert r == pytest.approx(9.0 - 10.0, abs=1e-6)  # v_lon, -10 for faster than 8 m/s
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(1))


def test_saved_adversary_loads_without_torch_and_acts_like_the_agent(tmp_path) -> None:
    from icml26.agents.driving.scenepilot import ScenePilotAgent
    from icml26.envs.driving.policy_io import load_policy

    agent = ScenePilotAgent()
    agent.reset(7)
    agent.act(np.zeros(27, np.float32))
    path = tmp_path / "adv.npz"
    agent.save(path)
    policy = load_policy(path)
    obs = np.random.default_rng(0).normal(size=27).astype(np.float32) * 20
    np.testing.assert_allclose(policy.act(obs), agent.act(obs), rtol=1e-5, atol=1e-6)
    env = gym.make(
        "icml26/ScenePilotAV-v0", scenario=2, adversary=str(path), base_planner="cautious"
    )
    env.reset(seed=0)
    env.step(np.zeros(2, np.float32))
    with pytest.raises(FileNotFoundError):
        gym.make("icml26/ScenePilotAV-v0", adversary=str(tmp_path / "missing.npz"))


def test_custom_ego_policy() -> None:
    class Brake:
        def act(self, obs, info=None):
            return np.array([-1.0, 0.0])

    env = gym.make("icml26/ScenePilot-v0", scenario=1, ego=Brake())
    env.reset(seed=0)
    for _ in range(10):
        obs, *_ = env.step(np.array([0.0], np.float32))
    assert obs[0] == 0.0 and obs[5] == 0.0  # never moves


def test_geometry_helpers() -> None:
    # separating axis: touching/overlapping/separated, and a rotated box that misses
    assert boxes_overlap(0, 0, 0, 4, 2, 3.9, 0, 0, 4, 2)
    assert not boxes_overlap(0, 0, 0, 4, 2, 4.1, 0, 0, 4, 2)
    assert not boxes_overlap(0, 0, 0, 4, 2, 3.0, 2.9, np.pi / 4, 2, 1)
    assert boxes_overlap(0, 0, 0, 4, 2, 2.2, 1.2, np.pi / 4, 2, 1)
    # projection on the left-turn route of scenario 6 and its point at an arc length
    prims = LAYOUTS[6].primitives[None]
    s, lat, head, dist = project_on_route(prims, np.array([[10.0, 61.75]]), np.array([[1.0, 30.0]]))
    assert s[0, 0] == pytest.approx(10.0) and lat[0, 0] == pytest.approx(1.0) and head[0, 0] == 0.0
    arc = 13.75 * np.pi / 2
    assert s[0, 1] == pytest.approx(48.0 + arc + 30.0 - 13.75) and lat[0, 1] == pytest.approx(
        0.0, abs=1e-9
    )
    x, y, h = route_point(prims, np.array([48.0 + arc / 2]))
    assert x[0] == pytest.approx(48.0 + 13.75 * np.sin(np.pi / 4)) and h[0] == pytest.approx(
        np.pi / 4
    )


def test_scores_hand_worked() -> None:
    ep = {
        "collision": 1.0,
        "run_red_light": 0.0,
        "run_stop": 0.0,
        "out_of_road_length": 5.0,
        "route_completion": 0.5,
        "distance_to_route": 0.5,
        "avg_acceleration": 2.0,
        "avg_yaw_velocity": 0.3,
        "lane_invasions": 2.0,
        "time": 10.0,
    }
    ok = {**ep, "collision": 0.0, "route_completion": 1.0, "out_of_road_length": 0.0, "time": 20.0}
    s = driving_score([ep, ok])
    expected = (
        5 * 0.5
        + (3 - 2.5 / 50)
        + 0.5 * ((1 - 0.5 / 5) + 0.75 + 1 - 20 / 60)
        + 0.2 * (3 - 2 / 8 - 0.3 / 3 - 2 / 20)
    ) / 10.1
    assert s["driving_score"] == pytest.approx(expected)
    assert attack_score([ep]) == pytest.approx(
        0.4 + 0.1 * 0.5 + 0.1 * 0.1 + 0.3 * 0.5 + 0.1 * 10 / 30
    )


def test_render_rgb_array() -> None:
    env = gym.make("icml26/ScenePilot-v0", scenario=2, render_mode="rgb_array")
    env.reset(seed=0)
    img = env.render()
    assert img.shape == (480, 480, 3) and img.dtype == np.uint8
    colours = {tuple(c) for c in img.reshape(-1, 3)[::97]}
    assert (70, 70, 74) in colours and (92, 140, 76) in colours  # road and grass


def test_carla_backend_fails_fast_with_instructions() -> None:
    with pytest.raises((ImportError, ConnectionError), match="(?i)carla"):
        gym.make(
            "icml26/ScenePilot-v0", backend="carla", backend_kwargs={"port": 2999, "timeout": 0.5}
        )


@pytest.mark.slow
def test_metadrive_backend_runs_if_installed() -> None:
    pytest.importorskip("metadrive")
    env = gym.make("icml26/ScenePilot-v0", scenario=5, backend="metadrive")
    obs, info = env.reset(seed=0)
    assert info["backend"] == "metadrive"
    for _ in range(30):
        obs, r, term, trunc, info = env.step(np.array([0.0], np.float32))
        if term or trunc:
            break
    assert obs.shape == (27,) and obs[0] > 0.5  # the MetaDrive ego drove forward
    env.close()
