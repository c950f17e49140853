"""Offline datasets: regimes, determinism, exact marginals, .npz round trip, rejection, Minari."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from icml26.envs.markov_games import (
    OfflineDataset,
    behavior,
    cached_dataset,
    collect_dataset,
    load_dataset,
    make_game,
    nash_equilibrium,
    random_game,
)


@pytest.fixture(scope="module")
def game():  # type: ignore[no-untyped-def]
    return random_game(S=6, A=3, B=2, H=4, seed=11)


def test_collect_shapes_and_determinism(game) -> None:  # type: ignore[no-untyped-def]
    a = collect_dataset(game, 500, "uniform", seed=3)
    b = collect_dataset(game, 500, "uniform", seed=3)
    c = collect_dataset(game, 500, "uniform", seed=4)
    assert a.states.shape == (500, 4) and a.rewards.dtype == np.float64
    for name in ("states", "actions_max", "actions_min", "rewards", "next_states"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.actions_max, c.actions_max)
    assert np.array_equal(a.states[:, 1:], a.next_states[:, :-1])
    assert a.metadata["n"] == 500 and a.metadata["seed"] == 3
    assert a.metadata["game"]["fingerprint"] == game.fingerprint()
    assert np.array_equal(a.head(100).states, a.states[:100]) and a.head(100).metadata["n"] == 100


def test_empirical_frequencies_match_behavior(game) -> None:  # type: ignore[no-untyped-def]
    ds = collect_dataset(game, 40_000, "eps_nash", seed=0, eps=0.3)
    eq = nash_equilibrium(game)
    mu_b = 0.7 * eq.mu + 0.3 / 3
    # step 0: states ~ initial (uniform), actions ~ mu_b[0, s]
    for s in range(6):
        sel = ds.states[:, 0] == s
        freq = np.bincount(ds.actions_max[sel, 0], minlength=3) / sel.sum()
        assert np.allclose(freq, mu_b[0, s], atol=0.03)
    # the exact data distribution matches the empirical (h, s, a, b) frequencies
    occ = ds.data_occupancy()
    emp = ds.counts() / ds.n
    assert np.allclose(occ.sum(axis=(1, 2, 3)), 1.0)
    assert np.abs(emp - occ).max() < 0.01


def test_unilateral_regime(game) -> None:  # type: ignore[no-untyped-def]
    ds = collect_dataset(game, 1001, "unilateral", seed=1)
    assert set(np.bincount(ds.components[:100])) == {50}  # interleaved: every prefix is balanced
    eq = nash_equilibrium(game)
    assert np.allclose(ds.behavior_mu[0], eq.mu) and np.allclose(ds.behavior_nu[1], eq.nu)
    # at step 0 (state distribution = initial for both components) the marginal is the average
    assert np.allclose(ds.reference_mu[0], 0.5 * eq.mu[0] + 0.5 / 3)
    # the exact marginal behavior agrees with the data at large n
    big = collect_dataset(game, 30_000, "unilateral", seed=2)
    sel = big.states[:, 2] == 3
    freq = np.bincount(big.actions_min[sel, 2], minlength=2) / sel.sum()
    assert np.allclose(freq, big.reference_nu[2, 3], atol=0.03)
    assert big.concentrability() < np.inf
    nash_only = collect_dataset(game, 10, "nash", seed=0)
    assert np.isinf(nash_only.concentrability())  # unilateral coverage fails


def test_regularized_unilateral_regimes(game) -> None:  # type: ignore[no-untyped-def]
    """reg_unilateral: the anchor pair is the beta-regularized equilibrium w.r.t. the data's own
    marginal behavior (a fixed point), so C* around it is finite while the Nash-anchored regime's
    is not; the restricted variant never plays the removed actions and covers its target."""
    from icml26.envs.markov_games import regularized_equilibrium
    from icml26.envs.markov_games.datasets import restricted_support

    ds = collect_dataset(game, 20, "reg_unilateral", seed=0, beta=0.2)
    eq = regularized_equilibrium(game, 0.2, ds.reference_mu, ds.reference_nu)
    assert np.abs(ds.behavior_mu[0] - eq.mu).max() < 1e-8
    assert np.abs(ds.behavior_nu[1] - eq.nu).max() < 1e-8
    assert ds.metadata["behavior"]["beta"] == 0.2
    c_reg = ds.concentrability(0.2)
    assert 1.0 <= c_reg < np.inf
    assert np.isinf(collect_dataset(game, 20, "unilateral", seed=0).concentrability(0.2))

    rs = collect_dataset(game, 3000, "reg_unilateral_restricted", seed=1, beta=0.2)
    m_sup, n_sup = restricted_support(game, 0)
    assert (m_sup.sum(-1) == 2).all() and (n_sup.sum(-1) == 1).all()  # A = 3, B = 2
    h = np.arange(game.H)[None, :]
    assert m_sup[h, rs.states, rs.actions_max].all() and n_sup[h, rs.states, rs.actions_min].all()
    assert np.all(rs.reference_mu[~m_sup] == 0)
    assert 1.0 <= rs.concentrability(0.2) < np.inf
    with pytest.raises(ValueError, match="beta must be > 0"):
        behavior(game, "reg_unilateral", beta=0.0)


def test_save_load_roundtrip(game, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ds = collect_dataset(game, 300, "unilateral", seed=5)
    path = ds.save(tmp_path / "d.npz")
    back = load_dataset(path, game=game)
    for name in (
        "states",
        "actions_max",
        "actions_min",
        "rewards",
        "next_states",
        "components",
        "behavior_mu",
        "reference_nu",
        "legal_max",
    ):
        assert np.array_equal(getattr(ds, name), getattr(back, name))
    assert back.metadata == json.loads(json.dumps(ds.metadata))
    assert back.resolve_game().fingerprint() == game.fingerprint()  # rebuilt from the spec
    assert not list(tmp_path.glob("*.tmp*"))  # atomic write left no temp file


def _corrupt(ds: OfflineDataset, path: Path, **changes: object) -> Path:
    arrays = {
        k: getattr(ds, k)
        for k in (
            "states",
            "actions_max",
            "actions_min",
            "rewards",
            "next_states",
            "components",
            "behavior_weights",
            "behavior_mu",
            "behavior_nu",
            "reference_mu",
            "reference_nu",
            "legal_max",
            "legal_min",
        )
    }
    arrays["metadata"] = np.array(json.dumps(ds.metadata))
    arrays.update(changes)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    np.savez_compressed(path, **arrays)
    return path


def test_malformed_datasets_rejected(game, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ds = collect_dataset(game, 50, "uniform", seed=0)
    states = ds.states.copy()
    states[3, 2] = 6
    with pytest.raises(ValueError, match=r"states\[3, 2\] = 6 is outside \[0, 6\)"):
        load_dataset(_corrupt(ds, tmp_path / "a.npz", states=states))
    with pytest.raises(ValueError, match=r"missing arrays \['rewards'\]"):
        load_dataset(_corrupt(ds, tmp_path / "b.npz", rewards=None))
    nxt = ds.next_states.copy()
    nxt[7, 0] = (nxt[7, 0] + 1) % 6
    with pytest.raises(ValueError, match="trajectory 7 is broken"):
        load_dataset(_corrupt(ds, tmp_path / "c.npz", next_states=nxt))
    md = dict(ds.metadata, n=49)
    with pytest.raises(ValueError, match="metadata says n=49"):
        load_dataset(_corrupt(ds, tmp_path / "d.npz", metadata=np.array(json.dumps(md))))
    with pytest.raises(ValueError, match="format_version"):
        md = dict(ds.metadata, format_version=99)
        load_dataset(_corrupt(ds, tmp_path / "e.npz", metadata=np.array(json.dumps(md))))
    with pytest.raises(ValueError, match="must hold integers"):
        load_dataset(_corrupt(ds, tmp_path / "f.npz", actions_min=ds.actions_min.astype(float)))
    other = random_game(S=6, A=3, B=2, H=4, seed=12)
    with pytest.raises(ValueError, match="checked against"):
        load_dataset(ds.save(tmp_path / "g.npz"), game=other)
    (tmp_path / "h.npz").write_bytes(b"not a zip archive")
    with pytest.raises(ValueError, match="not a readable .npz"):
        load_dataset(tmp_path / "h.npz")
    with zipfile.ZipFile(tmp_path / "i.npz", "w") as z:
        z.writestr("states.npy", b"garbage")
    with pytest.raises(ValueError, match="missing arrays"):
        load_dataset(tmp_path / "i.npz")
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path / "nope.npz")
    with pytest.raises(ValueError, match="regime"):
        collect_dataset(game, 10, "optimal")
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        collect_dataset(game, 0)


def test_tree_game_behavior_and_masks() -> None:
    g = make_game("tree")
    ds = collect_dataset(g, 2000, "tree", seed=0)
    assert np.all(ds.actions_max[:, :2] < 2) and np.all(ds.actions_min[:, :2] < 2)
    assert np.allclose(ds.reference_mu[2, 5], [0.6, 0.1, 0.1, 0.1, 0.1])
    assert np.isfinite(ds.concentrability())
    with pytest.raises(ValueError, match="tree game's data"):
        behavior(make_game("rps"), "tree")


def test_cached_dataset_reuses_the_file(
    game, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    a = cached_dataset(game, 100, "uniform", seed=9)
    files = list((tmp_path / "markov_games" / "datasets").glob("*.npz"))
    assert len(files) == 1
    b = cached_dataset(game, 100, "uniform", seed=9)
    assert np.array_equal(a.actions_max, b.actions_max)
    files[0].write_bytes(b"corrupt")  # a corrupt cache entry is regenerated, not trusted
    c = cached_dataset(game, 100, "uniform", seed=9)
    assert np.array_equal(a.actions_max, c.actions_max)


@pytest.mark.parametrize("relative", [False, True])
def test_minari_export(game, tmp_path: Path, monkeypatch, relative: bool) -> None:  # type: ignore[no-untyped-def]
    minari = pytest.importorskip("minari")
    ds = collect_dataset(game, 20, "uniform", seed=0)
    import os
    import warnings

    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # minari asks for author/permalink metadata
        # a relative data_path works too (Minari 0.5 joined a relative root twice)
        ds.to_minari("icml26/markov-games-test-v0", data_path="." if relative else tmp_path)
    assert os.environ.get("MINARI_DATASETS_PATH") != str(tmp_path)  # restored

    old = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(tmp_path)
    try:
        md = minari.load_dataset("icml26/markov-games-test-v0")
        assert md.total_episodes == 20 and md.total_steps == 20 * 4
        ep = next(iter(md.iterate_episodes([3])))
        assert np.array_equal(ep.actions, ds.actions_max[3])
        assert np.array_equal(ep.observations[:-1, 1], ds.states[3])
        assert np.allclose(ep.rewards, ds.rewards[3])
        assert bool(ep.terminations[-1])
        assert np.array_equal(ep.infos["opponent_action"][1:], ds.actions_min[3])
    finally:
        if old is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = old
