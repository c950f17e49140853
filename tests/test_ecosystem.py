"""Every registered id fits the ecosystem's real clients, run unmodified.

Gymnasium's env checker (render checks included) on each id; SB3's ``check_env`` on
``icml26.integrations.sb3.wrap(env)``; ``render_mode`` accepted by every constructor and
``render_fps`` declared where an env renders; the wrappers each env's docstring names. PettingZoo
(``parallel_api_test``, ``parallel_seed_test``, ``api_test`` through ``parallel_to_aec``,
``render_test``) on every Markov game.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import icml26
from icml26.integrations.sb3 import wrap, wrappers_for
from icml26.integrations.wrappers import (
    FlattenDictSpaces,
    NormalizedAction,
    TokenizedText,
    text_to_tokens,
    tokens_to_text,
)

ENV_SPECS = icml26.env_specs()
PZ_SPECS = icml26.parallel_env_specs()
IDS = [s["id"] for s in ENV_SPECS]


def _kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    return dict(spec.get("test_kwargs") or {})


def _quiet_make(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gym.make(env_id, **kwargs)


# The wrappers SB3 needs, per id: what each env's docstring promises (and nothing for the rest).
EXPECTED_WRAPPERS: dict[str, list[type]] = {
    **{i: [NormalizedAction] for i in IDS if i.startswith("icml26/Boltzmann")},
    "icml26/WeatherRollout-v0": [NormalizedAction],
    "icml26/ConstrainedOpt-v0": [NormalizedAction],
    "icml26/LoopReasoning-v0": [TokenizedText],
    "icml26/ReasoningGym-v0": [TokenizedText],
    "icml26/SpaCEInterference-v0": [FlattenDictSpaces],
    "icml26/CapabilityEval-v0": [FlattenDictSpaces],
}


def test_every_family_is_covered() -> None:
    assert len(IDS) >= 14 and set(EXPECTED_WRAPPERS) <= set(IDS)


@pytest.mark.parametrize("spec", ENV_SPECS, ids=IDS)
def test_gymnasium_env_checker_with_render(spec: dict[str, Any]) -> None:
    """Gymnasium's check_env, render checks included (each declared mode is made and rendered)."""
    from gymnasium.utils.env_checker import check_env

    env = _quiet_make(spec["id"], **_kwargs(spec))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


@pytest.mark.parametrize("spec", ENV_SPECS, ids=IDS)
def test_sb3_check_env_on_wrap(spec: dict[str, Any]) -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = _quiet_make(spec["id"], **_kwargs(spec))
    try:
        expected = EXPECTED_WRAPPERS.get(spec["id"], [])
        assert wrappers_for(env) == expected
        wrapped = wrap(env)
        if not expected:
            assert wrapped is env  # SB3 already accepts it: returned unchanged
        else:
            layers, w = [], wrapped
            while w is not env:
                layers.append(type(w))
                w = w.env
            assert layers[::-1] == expected
            # the env's docstring names the wrapper it gets
            doc = type(env.unwrapped).__doc__ or ""
            assert "## Ecosystem" in doc and all(c.__name__ in doc for c in expected), spec["id"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sb3_check_env(wrapped, warn=True)
        # SB3's own space checks: finite Box actions, no Text/Dict actions
        act = wrapped.action_space
        assert isinstance(
            act, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
        )
        if isinstance(act, spaces.Box):
            assert np.all(np.isfinite(act.low)) and np.all(np.isfinite(act.high))
    finally:
        env.close()


@pytest.mark.parametrize("spec", ENV_SPECS, ids=IDS)
def test_render_mode_accepted_and_fps_declared(spec: dict[str, Any]) -> None:
    kwargs = _kwargs(spec)
    env = _quiet_make(spec["id"], render_mode=None, **kwargs)
    meta = env.unwrapped.metadata
    env.close()
    modes = list(meta["render_modes"])
    if modes:
        assert isinstance(meta.get("render_fps"), int) and meta["render_fps"] > 0, spec["id"]
    for mode in modes:
        env = _quiet_make(spec["id"], render_mode=mode, **kwargs)
        try:
            env.reset(seed=0)
            frame = env.render()
            if mode == "rgb_array":
                assert isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3
                assert frame.dtype == np.uint8
            elif mode == "ansi":
                assert isinstance(frame, str) and frame
        finally:
            env.close()
    with pytest.raises(ValueError, match="render_mode"):
        _quiet_make(spec["id"], render_mode="no-such-mode", **kwargs)


@pytest.mark.parametrize(
    "env_id", sorted(i for i in EXPECTED_WRAPPERS if "Boltzmann" in i or "Weather" in i)
)
def test_normalized_action_maps_onto_documented_bounds(env_id: str) -> None:
    spec = next(s for s in ENV_SPECS if s["id"] == env_id)
    env = _quiet_make(env_id, **_kwargs(spec))
    try:
        low, high = env.unwrapped.action_bounds
        w = wrap(env)
        assert isinstance(w, NormalizedAction) and w.action_space.shape == env.action_space.shape
        np.testing.assert_allclose(w.action(-np.ones(w.action_space.shape)), low, rtol=1e-6)
        np.testing.assert_allclose(w.action(np.ones(w.action_space.shape)), high, rtol=1e-6)
        np.testing.assert_allclose(
            w.action(np.zeros(w.action_space.shape)), (low + high) / 2, rtol=1e-5, atol=1e-6
        )
        a = np.random.default_rng(0).uniform(-1, 1, w.action_space.shape).astype(np.float32)
        np.testing.assert_allclose(w.reverse_action(w.action(a)), a, atol=1e-5)
        with pytest.raises(ValueError, match=r"\[-1, 1\]"):
            w.action(np.full(w.action_space.shape, 1.5))
    finally:
        env.close()


def test_weather_bounds_are_mean_plus_minus_ten_std() -> None:
    spec = next(s for s in ENV_SPECS if s["id"] == "icml26/WeatherRollout-v0")
    env = _quiet_make(spec["id"], **_kwargs(spec)).unwrapped
    low, high = env.action_bounds
    for c in range(len(env.channels)):
        assert (
            low[c].min()
            == low[c].max()
            == pytest.approx(env.channel_mean[c] - 10 * env.channel_std[c], rel=1e-6)
        )
        assert high[c].max() == pytest.approx(
            env.channel_mean[c] + 10 * env.channel_std[c], rel=1e-6
        )


def test_tokenized_text_round_trip_and_scores_like_the_text_env() -> None:
    env = _quiet_make("icml26/LoopReasoning-v0")
    space = env.action_space
    assert isinstance(space, spaces.Text)
    assert tokens_to_text(text_to_tokens("12+3", space), space) == "12+3"
    assert tokens_to_text(np.zeros(space.max_length, dtype=np.int64), space) == ""
    with pytest.raises(ValueError, match="charset"):
        text_to_tokens("A", space)
    with pytest.raises(ValueError, match="max_length"):
        text_to_tokens("1" * (space.max_length + 1), space)
    w = wrap(env)
    assert w.action_space == spaces.MultiDiscrete(
        [len(space.character_list) + 1] * space.max_length
    )
    _, info = w.reset(seed=3)
    gold_env = _quiet_make("icml26/LoopReasoning-v0")
    gold_env.reset(seed=3)
    gold = gold_env.step("0")[4]["gold"]
    _, r, term, _, info = w.step(text_to_tokens(gold, space))
    assert (r, term, info["correct"]) == (1.0, True, True)
    w.reset(seed=3)
    _, r, _, _, _ = w.step(text_to_tokens(gold + "1", space))
    assert r == 0.0
    with pytest.raises(ValueError, match="token ids"):
        w.step(np.full(space.max_length, len(space.character_list) + 1))


def test_flatten_dict_spaces_passes_estimates_through() -> None:
    spec = next(s for s in ENV_SPECS if s["id"] == "icml26/SpaCEInterference-v0")
    env = _quiet_make(spec["id"], **_kwargs(spec))
    ref = _quiet_make(spec["id"], **_kwargs(spec))
    w = wrap(env)
    obs, _ = w.reset(seed=4)
    ref_obs, _ = ref.reset(seed=4)
    np.testing.assert_array_equal(obs, spaces.flatten(ref.observation_space, ref_obs))
    # keys in sorted order: direct, erf (3), spillover
    flat = np.array([0.3, 0.1, 0.2, 0.4, -0.5])
    _, r, _, _, info = w.step(flat)
    _, r_ref, _, _, info_ref = ref.step({"direct": 0.3, "erf": [0.1, 0.2, 0.4], "spillover": -0.5})
    assert r == r_ref and info["direct_error"] == info_ref["direct_error"]
    with pytest.raises(ValueError, match="flat action"):
        w.reset(seed=4)
        w.step(np.zeros(3))


def test_wrap_refuses_what_it_cannot_fix() -> None:
    class Unbounded(gym.Env):
        observation_space = spaces.Box(-1, 1, (1,))
        action_space = spaces.Box(-np.inf, np.inf, (1,))

    with pytest.raises(TypeError, match="action_bounds"):
        wrap(Unbounded())
    with pytest.raises(TypeError, match="gymnasium.Env"):
        wrap("icml26/PointReach-v0")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- PettingZoo


def _pz_factory(spec: dict[str, Any]) -> Any:
    module, _, attr = spec["entry_point"].partition(":")
    factory = getattr(importlib.import_module(module), attr)
    kwargs = dict(spec.get("test_kwargs", spec.get("kwargs", {})))
    return lambda **kw: factory(**{**kwargs, **kw})


@pytest.mark.parametrize("spec", PZ_SPECS, ids=[s["name"] for s in PZ_SPECS])
def test_pettingzoo_clients(spec: dict[str, Any]) -> None:
    from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test
    from pettingzoo.utils.conversions import parallel_to_aec

    make = _pz_factory(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parallel_api_test(make(), num_cycles=60)
        parallel_seed_test(make, num_cycles=60)
        api_test(parallel_to_aec(make()), num_cycles=60)
        render_test(lambda render_mode=None: parallel_to_aec(make(render_mode=render_mode)))
    env = make(render_mode="human")
    assert "human" in env.metadata["render_modes"] and env.metadata["render_fps"] > 0


# ---------------------------------------------------------------------------- vector autoreset


def _scene_streams(vec: Any, steps: int, seed: int) -> list[list[tuple[Any, ...]]]:
    """Per scene: the transitions of every episode, whatever the autoreset mode reports."""
    from gymnasium.vector import AutoresetMode

    n = vec.num_envs
    obs, _ = vec.reset(seed=seed)
    streams: list[list[tuple[Any, ...]]] = [[("start", obs[i].copy())] for i in range(n)]
    # each scene's own action sequence, consumed only when the scene really steps
    plans = np.random.default_rng(seed).uniform(-1, 1, size=(n, steps, 1)).astype(np.float32)
    used = np.zeros(n, dtype=int)
    next_step = vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    pending = np.zeros(n, dtype=bool)
    for _ in range(steps):
        a = plans[np.arange(n), np.minimum(used, steps - 1)]
        if next_step:
            a[pending] = 0.5  # ignored by the reset step
        used += ~pending if next_step else 1
        obs, r, term, trunc, info = vec.step(a)
        for i in range(n):
            if next_step and pending[i]:  # the reset step: action ignored, reward 0
                assert r[i] == 0.0 and not term[i] and not trunc[i]
                streams[i].append(("start", obs[i].copy()))
                continue
            last = info["final_obs"][i] if (not next_step and (term[i] or trunc[i])) else obs[i]
            streams[i].append(
                (a[i].copy(), float(r[i]), bool(term[i]), bool(trunc[i]), last.copy())
            )
            if not next_step and (term[i] or trunc[i]):
                streams[i].append(("start", obs[i].copy()))
        pending = term | trunc
    return streams


def _trim(stream: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Whole episodes only (the two modes cut the stream at different places)."""
    starts = [k for k, t in enumerate(stream) if t[0] == "start"]
    return stream[: starts[-1]] if len(starts) > 1 else []


def test_scenepilot_make_vec_defaults_to_next_step_like_gymnasium() -> None:
    from gymnasium.vector import AutoresetMode

    vec = gym.make_vec("icml26/ScenePilot-v0", num_envs=2, phi="ttc")
    try:
        assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        assert type(vec).__name__ == "ScenePilotVectorEnv"
    finally:
        vec.close()
    with pytest.raises(ValueError, match="autoreset_mode"):
        gym.make_vec("icml26/ScenePilot-v0", num_envs=2, autoreset_mode="Disabled")


def test_next_step_vector_env_matches_the_single_env() -> None:
    """One scene, NEXT_STEP: the same stream as the single env driven by hand (reset() after each end)."""
    kw = {"scenario": 5, "phi": "ttc", "max_steps": 40}
    vec = gym.make_vec("icml26/ScenePilot-v0", num_envs=1, **kw)
    single = gym.make("icml26/ScenePilot-v0", **kw).unwrapped
    obs_v, _ = vec.reset(seed=9)
    obs_s, _ = single.reset(seed=9)
    np.testing.assert_array_equal(obs_v[0], obs_s)
    rng = np.random.default_rng(1)
    ends = 0
    need_reset = False
    for _ in range(130):
        a = rng.uniform(-1, 1, size=(1, 1)).astype(np.float32)
        obs_v, r_v, term_v, trunc_v, _ = vec.step(a)
        if need_reset:
            obs_s, _ = single.reset()
            r_s, term_s, trunc_s = 0.0, False, False
            need_reset = False
        else:
            obs_s, r_s, term_s, trunc_s, _ = single.step(a[0])
            need_reset = term_s or trunc_s
            ends += need_reset
        np.testing.assert_allclose(obs_v[0], obs_s, rtol=1e-6, atol=1e-6)
        assert r_v[0] == pytest.approx(r_s, abs=1e-9) and (term_v[0], trunc_v[0]) == (
            term_s,
            trunc_s,
        )
    assert ends >= 2  # the comparison crossed episode boundaries
    vec.close()


def test_both_autoreset_modes_give_the_same_episodes() -> None:
    kw = {"scenario": "all", "phi": "ttc", "max_steps": 30}
    same = gym.make_vec("icml26/ScenePilot-v0", num_envs=3, autoreset_mode="SameStep", **kw)
    nxt = gym.make_vec("icml26/ScenePilot-v0", num_envs=3, autoreset_mode="NextStep", **kw)
    a_streams = _scene_streams(same, 100, seed=2)
    b_streams = _scene_streams(nxt, 100, seed=2)
    for a, b in zip(a_streams, b_streams):
        a, b = _trim(a), _trim(b)
        k = min(len(a), len(b))
        assert k > 30
        for x, y in zip(a[:k], b[:k]):
            assert x[0] == "start" or y[0] == "start" or x[1:4] == pytest.approx(y[1:4])
            np.testing.assert_allclose(x[-1], y[-1], rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------- misuse


@pytest.mark.parametrize(
    "env_id, kwargs, action",
    [
        ("icml26/PointReach-v0", {}, np.zeros(2, np.float32)),
        ("icml26/ScenePilot-v0", {"scenario": 5, "phi": "ttc"}, np.zeros(1, np.float32)),
        ("icml26/ScenePilotAV-v0", {"scenario": 5, "base_planner": "idm"}, np.zeros(2, np.float32)),
    ],
)
def test_unwrapped_envs_refuse_step_before_reset_and_after_the_end(
    env_id: str, kwargs: dict[str, Any], action: np.ndarray
) -> None:
    env = _quiet_make(env_id, **kwargs).unwrapped
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(action)
    env.reset(seed=0)
    if env_id == "icml26/PointReach-v0":  # put the point on its goal at rest: terminates at once
        env._pos, env._vel = env._goal.copy(), np.zeros(2)
        end = env.step(np.zeros(2, np.float32))
        assert end[2]
    else:
        for _ in range(400):
            end = env.step(action)
            if end[2] or end[3]:
                break
        assert end[2] or end[3]
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(action)
    env.reset(seed=1)
    env.step(action)  # a new episode steps again


@pytest.mark.parametrize(
    "bad, exc, match",
    [
        (True, TypeError, "boolean"),
        (np.bool_(False), TypeError, "boolean"),
        (float("inf"), ValueError, "finite"),
        (np.float64("-inf"), ValueError, "finite"),
        (1.5, ValueError, "expected an action"),
        ("1", ValueError, "expected an action"),
    ],
)
def test_markov_game_refuses_booleans_and_inf(bad: Any, exc: type, match: str) -> None:
    env = _quiet_make("icml26/ZeroSumMarkovGame-v0", game="rps").unwrapped
    env.reset(seed=0)
    with pytest.raises(exc, match=f"ZeroSumMarkovGame-v0: .*{match}"):
        env.step(bad)
    assert env.step(np.int64(1))[2]  # the rejected steps changed nothing: rps ends after one move
    from icml26.envs.markov_games import parallel_env

    pz = parallel_env("rps")
    pz.reset(seed=0)
    with pytest.raises(
        exc if match != "expected an action" else (TypeError, ValueError), match="max_player action"
    ):
        pz.step({"max_player": bad, "min_player": 0})


# ---------------------------------------------------------------------------- rendering the games


def test_soccer_renders_its_board() -> None:
    from icml26.envs.markov_games import parallel_env
    from icml26.envs.markov_games.render import soccer_position

    env = parallel_env("soccer", game_kwargs={"horizon": 10}, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    lines = text.splitlines()
    board = [ln for ln in lines if ln.strip().startswith(("|", "<"))]
    assert len(board) == 4 and all(len(ln.strip()) == 2 + 3 * 5 for ln in board)  # 4 rows x 5 cols
    pa, pb, ball = soccer_position(4, 5, env.state()[1])
    assert board[pa[0]].strip()[1 + 3 * pa[1] : 4 + 3 * pa[1]] == (" A*" if ball == 0 else " A ")
    assert board[pb[0]].strip()[1 + 3 * pb[1] : 4 + 3 * pb[1]] == (" B*" if ball == 1 else " B ")
    # goal mouths are the middle two rows (Littman 1994)
    assert [ln.strip()[0] for ln in board] == ["|", "<", "<", "|"]
    # the start: A at row 1, column 3; B at row 2, column 1
    assert (pa, pb) == ((1, 3), (2, 1))
    rgb = parallel_env("soccer", game_kwargs={"horizon": 10}, render_mode="rgb_array")
    rgb.reset(seed=0)
    img = rgb.render()
    assert img.dtype == np.uint8 and img.shape == (4 * 24 + 6, 7 * 24, 3)
    cy, cx = int(1.5 * 24), int(4.5 * 24)  # A's cell centre
    assert tuple(img[cy - 5, cx]) == (220, 40, 40)
    cy, cx = int(2.5 * 24), int(2.5 * 24)  # B's cell centre
    assert tuple(img[cy - 5, cx]) == (40, 70, 220)
    # the ball is drawn on its carrier
    carrier = (1.5, 4.5) if ball == 0 else (2.5, 2.5)
    assert tuple(img[int(carrier[0] * 24), int(carrier[1] * 24)]) == (255, 255, 255)


# ---------------------------------------------------------------------------- offline formats


def test_minari_export_recovers_the_env_for_both_players(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    minari = pytest.importorskip("minari")
    from icml26.envs.markov_games import collect_dataset, make_game

    game = make_game("random", S=4, A=3, B=2, H=3, seed=1)
    ds = collect_dataset(game, 12, "eps_nash", seed=0)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for player in ("max", "min"):
            ds.to_minari(f"icml26/mg-{player}-v0", player=player)
    for player, own, other, sign, n_act, opp_ref in (
        ("max", ds.actions_max, ds.actions_min, 1.0, 3, ds.reference_nu),
        ("min", ds.actions_min, ds.actions_max, -1.0, 2, ds.reference_mu),
    ):
        md = minari.load_dataset(f"icml26/mg-{player}-v0")
        assert md.total_episodes == 12 and md.total_steps == 12 * 3
        ep = next(iter(md.iterate_episodes([5])))
        np.testing.assert_array_equal(ep.actions, own[5])
        np.testing.assert_array_equal(ep.infos["opponent_action"][1:], other[5])
        np.testing.assert_allclose(ep.rewards, sign * ds.rewards[5])
        assert md.spec.env_spec is not None and md.spec.env_spec.id == "icml26/ZeroSumMarkovGame-v0"
        env = md.recover_environment()
        try:
            u = env.unwrapped
            assert u.player == player and u.action_space == spaces.Discrete(n_act)
            assert u.game.fingerprint() == game.fingerprint()
            np.testing.assert_allclose(u.opponent_policy, opp_ref, atol=1e-9)
            # a step of the recovered env pays this player's side of r_h(s, a, b)
            obs, _ = env.reset(seed=0)
            mine = int(ep.actions[0])
            _, r, _, _, info = env.step(mine)
            theirs = info["opponent_action"]
            a, b = (mine, theirs) if player == "max" else (theirs, mine)
            assert r == pytest.approx(sign * game.rewards[0, obs[1], a, b])
            assert opp_ref[0, obs[1], theirs] > 0  # the data's behavior can play that action
        finally:
            env.close()
    # one env per player, with opposite rewards for the same joint action
    mx = minari.load_dataset("icml26/mg-max-v0").recover_environment().unwrapped
    mn = minari.load_dataset("icml26/mg-min-v0").recover_environment().unwrapped
    h, s, a, b = 0, int(ds.states[0, 0]), int(ds.actions_max[0, 0]), int(ds.actions_min[0, 0])
    assert mx.game.rewards[h, s, a, b] == pytest.approx(ds.rewards[0, 0])
    assert mn.game is mx.game or mn.game.fingerprint() == mx.game.fingerprint()


def test_alanine_md_data_round_trips_through_pdb_dcd_and_npz(tmp_path: Any) -> None:
    import torch

    from icml26.envs.boltzmann.export import read_dataset, write_dataset

    spec = next(s for s in ENV_SPECS if s["id"] == "icml26/BoltzmannAlanineDipeptide-v0")
    env = _quiet_make(spec["id"], **{**_kwargs(spec), "dataset_size": 40})
    _, info = env.reset(seed=0)
    target = env.unwrapped.target
    files = write_dataset(info["dataset"], tmp_path / "aldp.npz", target=target)
    assert {"npz", "pdb"} <= set(files)
    back = read_dataset(tmp_path / "aldp")
    np.testing.assert_array_equal(back["x"], info["dataset"]["x"])
    np.testing.assert_array_equal(back["energy"], info["dataset"]["energy"])
    meta = back["meta"]
    assert meta["units"]["positions"] == "nm" and meta["units"]["energy_kj_per_mol"] == "kJ/mol"
    assert meta["temperature_K"] == 300.0 and meta["target"] == "aldp"
    # kJ/mol = kT x k_B T with k_B = 0.0083144626 kJ/(mol K) (CODATA 2018)
    np.testing.assert_allclose(
        back["energy_kj_per_mol"], back["energy"] * 0.0083144626 * 300.0, rtol=1e-7
    )
    assert back["positions"].shape == (40, 22, 3)
    # the stored coordinates reproduce the stored energies
    u = target.energy(torch.from_numpy(back["x"][:5].astype(np.float64))).numpy()
    np.testing.assert_allclose(u, back["energy"][:5], rtol=1e-4, atol=1e-3)
    mdtraj = pytest.importorskip("mdtraj")
    traj = mdtraj.load(str(files["dcd"]), top=str(files["pdb"]))
    assert traj.n_frames == 40 and traj.n_atoms == 22
    assert sorted({a.element.symbol for a in traj.topology.atoms}) == ["C", "H", "N", "O"]
    np.testing.assert_allclose(traj.xyz, back["positions"], atol=2e-5)  # DCD is float32 in Angstrom
    # the PDB frame is the first configuration (PDB keeps 3 decimals of Angstrom)
    pdb = mdtraj.load(str(files["pdb"]))
    np.testing.assert_allclose(pdb.xyz[0], back["positions"][0], atol=1e-4)
    env.close()


def test_other_targets_export_npz_only(tmp_path: Any) -> None:
    from icml26.envs.boltzmann.export import read_dataset, write_dataset

    env = _quiet_make("icml26/BoltzmannGMM40-v0", dataset_size=16, energy_budget=8, batch_size=8)
    _, info = env.reset(seed=1)
    files = write_dataset(info["dataset"], tmp_path / "gmm", target=env.unwrapped.target)
    assert set(files) == {"npz"}
    back = read_dataset(files["npz"])
    np.testing.assert_array_equal(back["x"], info["dataset"]["x"])
    with pytest.raises(ValueError, match="dim"):
        write_dataset(
            {"x": np.zeros((3, 5)), "energy": np.zeros(3)},
            tmp_path / "bad",
            target=env.unwrapped.target,
        )
    with pytest.raises(TypeError, match="BoltzmannDataset"):
        write_dataset([1, 2], tmp_path / "bad", target=env.unwrapped.target)


class _Persistence:
    """Forecasts the latest state again (enough to exercise the one-call export)."""

    def __init__(self) -> None:
        self.bound = False

    def bind(self, observation_space: Any, action_space: Any) -> None:
        self.bound = True

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: Any, info: Any) -> np.ndarray:
        return obs["state"][-1]


def test_weather_forecast_written_in_one_call_with_units_and_only_its_channels(
    tmp_path: Any,
) -> None:
    import xarray as xr

    from icml26.envs.weather.forecast_io import open_forecast, write_forecast
    from icml26.envs.weather.grid import channels_of, dataset_to_array

    env = _quiet_make(
        "icml26/WeatherRollout-v0",
        source="synthetic",
        lead_steps=4,
        train_period=("2000-01-01", "2000-01-20T18"),
        test_period=("2000-01-21", "2000-02-10T18"),
    )
    u = env.unwrapped
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(obs["state"][-1])
        done = term or trunc
    path = write_forecast(info, tmp_path / "episode.zarr", env=env)
    back = xr.open_zarr(path)
    assert set(channels_of(back)) == set(u.channels)  # z500, t850, t2m, u10, v10: nothing else
    for var in back.data_vars:
        assert not bool(back[var].isnull().all(dim=("latitude", "longitude")).any()), (
            var
        )  # no NaN slab
    units = {v: back[v].attrs["units"] for v in back.data_vars}
    assert units["geopotential"] == "m**2 s**-2" and units["temperature"] == "K"
    assert units["2m_temperature"] == "K" and units["10m_u_component_of_wind"] == "m s**-1"
    assert str(back["time"].values[0])[:19] == info["init_time"][:19]
    arr = dataset_to_array(back, u.channels, lead_dims=("time", "prediction_timedelta"))
    np.testing.assert_array_equal(arr[0], info["forecast"])
    # an agent, rolled out from two initialization times, in the same one call
    agent = _Persistence()
    path2 = write_forecast(agent, tmp_path / "agent.nc", env=env, n_inits=2)
    both = open_forecast(path2)
    assert agent.bound and both.sizes["time"] == 2 and both.sizes["prediction_timedelta"] == 4
    np.testing.assert_array_equal(both["time"].values, u.evaluation_init_times(2))
    with pytest.raises(TypeError, match="env="):
        write_forecast(info, tmp_path / "x.zarr")
    with pytest.raises(ValueError, match="last step"):
        write_forecast({"lead_hours": 6}, tmp_path / "x.zarr", env=env)


def test_markov_game_min_player_view_mirrors_the_max_view() -> None:
    env = _quiet_make(
        "icml26/ZeroSumMarkovGame-v0", game="rps", opponent="best_response", player="min"
    ).unwrapped
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)  # no episode before the first reset
    rock = np.zeros((1, 1, 3))
    rock[..., 0] = 1.0
    env.reset(seed=0, options={"policy": rock})  # the min player always plays rock
    _, r, term, _, info = env.step(0)
    # the max player's best response to rock is paper (1): rock loses, the min player gets -1
    assert info["opponent_action"] == 1 and r == -1.0 and term
    nash = _quiet_make(
        "icml26/ZeroSumMarkovGame-v0", game="rps", opponent="nash", player="min"
    ).unwrapped
    np.testing.assert_allclose(nash.opponent_policy[0, 0], [1 / 3, 1 / 3, 1 / 3], atol=1e-9)
    with pytest.raises(ValueError, match="player must be"):
        _quiet_make("icml26/ZeroSumMarkovGame-v0", player="both")


def test_flatten_dict_actions_read_discrete_blocks_by_argmax() -> None:
    """A policy's real-valued output is an action: each one-hot block reads as its arg-max."""
    from icml26.integrations.wrappers import _unflatten_by_argmax

    space = spaces.Dict(
        {
            "a": spaces.Box(0.0, 1.0, (2,)),
            "b": spaces.Discrete(3, start=1),
            "c": spaces.MultiDiscrete([2, 3]),
        }
    )
    flat = np.array([0.25, 0.5, 0.1, 0.9, 0.3, 0.7, 0.2, -1.0, 0.4, 0.3])
    out = _unflatten_by_argmax(space, flat)
    np.testing.assert_allclose(out["a"], [0.25, 0.5])
    assert out["b"] == 2  # block [0.1, 0.9, 0.3] -> index 1, start 1
    assert out["c"].tolist() == [0, 1]  # blocks [0.7, 0.2] and [-1.0, 0.4, 0.3]
    # on exact one-hots it agrees with Gymnasium's unflatten
    x = space.sample()
    ref = spaces.unflatten(space, spaces.flatten(space, x))
    got = _unflatten_by_argmax(space, spaces.flatten(space, x))
    assert got["b"] == ref["b"] and got["c"].tolist() == ref["c"].tolist()
