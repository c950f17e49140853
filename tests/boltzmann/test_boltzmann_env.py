"""BoltzmannEnv: data hand-over, exact budget accounting, rejected input, huge energies."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
import torch

import icml26  # noqa: F401

GMM = "icml26/BoltzmannGMM40-v0"


def _env(**kw: object) -> gym.Env:
    return gym.make(
        GMM, **{"dataset_size": 50, "energy_budget": 20, "batch_size": 8, **kw}
    ).unwrapped


def test_reset_hands_data_and_budget_deterministically() -> None:
    env = _env()
    obs, info = env.reset(seed=3)
    _, info2 = _env().reset(seed=3)
    _, info3 = _env().reset(seed=4)
    ds = info["dataset"]
    assert ds["x"].shape == (50, 2) and ds["energy"].shape == (50,)
    assert np.array_equal(ds["x"], info2["dataset"]["x"]) and not np.array_equal(
        ds["x"], info3["dataset"]["x"]
    )
    assert np.allclose(ds["energy"], env.target.energy(torch.from_numpy(ds["x"]).double()).numpy())
    assert info["budget"] == {"energy_evals": 20, "dataset_size": 50}
    assert info["log_z"] == 0.0 and info["geometry"] == "euclidean"
    assert obs["evaluations_left"].tolist() == [20] and obs["valid"].sum() == 0
    assert env.observation_space.contains(obs)


def test_budget_accounting_is_exact() -> None:
    env = _env()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    spent = 0
    for n, done in ((8, False), (3, False), (8, False), (1, True)):
        x = rng.normal(size=(n, 2)) * 30
        obs, reward, term, trunc, info = env.step(x.astype(np.float32))
        spent += n
        assert info["evaluations_spent"] == spent and info["evaluations_left"] == 20 - spent
        assert obs["evaluations_left"].tolist() == [20 - spent]
        assert obs["valid"].tolist() == [1] * n + [0] * (8 - n)
        assert np.allclose(
            obs["energies"][:n],
            env.target.energy(torch.from_numpy(x.astype(np.float32)).double()).numpy(),
        )
        assert reward == 0.0 and term is done and trunc is False
        assert info["forces"].shape == (n, 2)
    assert env.total_evaluations == 20
    with pytest.raises(ValueError, match="spent"):
        env.step(np.zeros((1, 2)))
    env.reset(seed=1)
    env.step(np.zeros((2, 2)))
    assert env.total_evaluations == 22 and env.episode_evaluations == 2


def test_forces_are_minus_energy_gradient() -> None:
    env = _env()
    env.reset(seed=0)
    x = np.array([[1.0, -2.0], [10.0, 3.0]])
    _, _, _, _, info = env.step(x)
    xt = torch.tensor(x, requires_grad=True)
    env.target.energy(xt).sum().backward()
    assert np.allclose(info["forces"], -xt.grad.numpy())


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (np.zeros((9, 2)), r"1 <= n <= 8"),
        (np.zeros((3,)), r"shape \(3,\)"),
        (np.zeros((2, 3)), r"shape \(2, 3\)"),
        (np.array([[0.0, np.nan]]), "finite"),
        (np.array([[np.inf, 0.0]]), "finite"),
        ("abc", "expected"),
    ],
)
def test_bad_batches_are_rejected_before_charging(bad: object, match: str) -> None:
    env = _env()
    env.reset(seed=0)
    with pytest.raises((ValueError, TypeError), match=match):
        env.step(bad)
    assert env.episode_evaluations == 0 and env.total_evaluations == 0
    _, _, _, _, info = env.step(np.zeros((1, 2)))
    assert info["evaluations_left"] == 19


def test_batch_larger_than_remaining_budget_is_rejected() -> None:
    env = _env(energy_budget=5)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="exceeds the 5 energy evaluations left"):
        env.step(np.zeros((6, 2)))
    assert env.episode_evaluations == 0


def test_enormous_and_undefined_energies_are_returned_not_raised() -> None:
    env = _env()
    env.reset(seed=0)
    obs, _, _, _, _ = env.step(np.array([[1e6, -1e6]], dtype=np.float32))
    assert obs["energies"][0] > 1e10  # far from every mode: returned as is
    lj = gym.make("icml26/BoltzmannLJ13-v0", data="none", energy_budget=4, batch_size=2).unwrapped
    lj.reset(seed=0)
    x = np.zeros((2, 39))
    x[1] = np.arange(39) * 0.37
    x[1, 3:6] = x[1, 0:3] + 1e-3  # two particles 1.7e-3 apart
    obs, _, _, _, info = lj.step(x)
    assert (
        obs["energies"][0] == np.inf and info["nonfinite"] == 1
    )  # all particles coincide: NaN -> +inf
    assert 1e30 < obs["energies"][1] < np.inf
    assert lj.observation_space.contains(obs)


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="data must be one of"):
        gym.make(GMM, data="hot")
    with pytest.raises(ValueError, match="batch_size"):
        gym.make(GMM, batch_size=0)
    with pytest.raises(ValueError, match="energy_budget"):
        gym.make(GMM, energy_budget=-1)


def test_alanine_env_pickles_without_its_openmm_context() -> None:
    env = gym.make(
        "icml26/BoltzmannAlanineDipeptide-v0",
        dataset_size=16,
        energy_budget=8,
        batch_size=4,
        target_kwargs={"backend": "openmm", "data_preset": "tiny"},
    ).unwrapped
    _, info = env.reset(seed=0)
    x = info["dataset"]["x"][:4]
    obs, _, _, _, inf1 = env.step(x)
    assert np.allclose(
        obs["energies"], info["dataset"]["energy"][:4], atol=1e-6
    )  # float32 frames, same labels
    assert env.target.openmm._context is not None
    clone = pickle.loads(pickle.dumps(env))
    assert clone.target.openmm._context is None
    a, b = env.step(x[::-1].copy()), clone.step(x[::-1].copy())
    assert np.array_equal(a[0]["energies"], b[0]["energies"]) and np.array_equal(
        a[4]["forces"], b[4]["forces"]
    )
    env.close()


@pytest.mark.parametrize(
    "env_id",
    [
        "icml26/BoltzmannAlanineDipeptide-v0",
        "icml26/BoltzmannAlanineDipeptide-v1",
        "icml26/BoltzmannLJ13-v0",
    ],
)
def test_make_reset_and_step_never_generate_md_or_mcmc_data(
    env_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """First use is fast: the MD / MCMC pools are generated only when the data set is read."""
    from icml26.envs.boltzmann import datasets

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("reference data were generated")

    monkeypatch.setattr(datasets, "cached_arrays", refuse)
    monkeypatch.setattr("icml26.envs.boltzmann.targets.cached_arrays", refuse)
    import icml26.envs.boltzmann.md as md

    monkeypatch.setattr(md, "cached_arrays", refuse)
    env = gym.make(env_id, dataset_size=16, energy_budget=8, batch_size=4).unwrapped
    obs, info = env.reset(seed=0)
    assert not info["dataset"].loaded and set(info["dataset"]) == {"x", "energy"}
    start = env.target.minimum_structure() if "Alanine" in env_id else None
    x = (
        np.zeros((2, env.target.dim), np.float32)
        if start is None
        else np.tile(start, (2, 1)).astype(np.float32)
    )
    if start is None:
        x += np.random.default_rng(0).normal(0, 1.0, x.shape).astype(np.float32)
    obs, *_ = env.step(x)
    assert obs["valid"].sum() == 2
    with pytest.raises(AssertionError, match="generated"):
        info["dataset"]["x"]  # reading the data set is what generates it


def test_lazy_dataset_equals_an_eager_draw() -> None:
    env = _env()
    _, info = env.reset(seed=5)
    lazy = info["dataset"]
    eager = env.target.dataset(50, kind="unbiased", split="train", seed=lazy._args[4])
    assert (
        np.array_equal(lazy["x"], eager.x)
        and np.array_equal(lazy["energy"], eager.energy)
        and lazy.loaded
    )
