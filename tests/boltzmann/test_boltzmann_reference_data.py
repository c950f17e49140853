"""Decorrelated alanine reference data (v1 env), the autocorrelation time, and the paired
Ramachandran KL with its noise floor."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import icml26  # noqa: F401
from icml26.envs.boltzmann.md import (
    OBSERVABLES,
    integrated_autocorrelation_time,
    phi_share_agreement,
    pool_diagnostics,
)
from icml26.envs.boltzmann.metrics import (
    evaluate_sampler,
    ramachandran_kl,
    ramachandran_kl_paired,
    reference_halves,
)
from icml26.envs.boltzmann.registry import make_target


def _ar1(rho: float, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0] / math.sqrt(1 - rho**2)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + e[i]
    return x


def test_iat_of_ar1_matches_theory() -> None:
    # AR(1) with coefficient rho: rho_k = rho^k, tau = 1 + 2 rho / (1 - rho) = (1 + rho) / (1 - rho)
    assert integrated_autocorrelation_time(_ar1(0.8, 200_000, 0)) == pytest.approx(9.0, rel=0.1)
    assert integrated_autocorrelation_time(_ar1(0.0, 50_000, 1)) == pytest.approx(1.0, abs=0.1)
    assert integrated_autocorrelation_time(np.ones(10)) == 1.0
    with pytest.raises(ValueError, match="at least 2"):
        integrated_autocorrelation_time(np.ones(1))


@pytest.fixture(scope="module")
def tiny_v2(tmp_path_factory: pytest.TempPathFactory) -> object:
    mp = pytest.MonkeyPatch()
    mp.setenv("ICML26_CACHE", str(tmp_path_factory.mktemp("cache")))
    t = make_target("aldp", backend="openmm", data_preset="tiny-decorrelated")
    pools = {s: t.pool("unbiased", s) for s in ("train", "test")}
    yield t, pools
    mp.undo()


def test_training_pool_is_thinned_by_the_largest_iat(tiny_v2: object) -> None:
    target, pools = tiny_v2  # type: ignore[misc]
    train, test = pools["train"], pools["test"]
    d = pool_diagnostics(train)
    iat = np.asarray(train.meta["iat"])
    assert iat.shape == (2, len(OBSERVABLES))
    stride = d["thinning_stride"]
    assert stride == math.ceil(iat.max()) > 1
    assert len(train) == 2 * len(range(0, 600, stride))  # every stride-th frame of two runs
    assert np.array_equal(np.unique(train.meta["run_id"]), [0, 1])
    assert len(d["phi_positive_per_run"]) == 2 and len(d["phi_positive_curve"][0]) == 10
    assert d["phi_positive_curve"][0][-1] == pytest.approx(d["phi_positive_per_run"][0])
    # test pools keep every frame and record the run of each
    dt = pool_diagnostics(test)
    assert dt["thinning_stride"] == 1 and len(test) == 2 * 100
    assert np.array_equal(test.meta["run_id"], np.repeat([0, 1], 100))
    # energies are the target's reduced energies of the stored coordinates
    e = target.energy(torch.from_numpy(train.x[:5].astype(np.float64))).numpy()
    assert np.allclose(e, train.energy[:5], atol=1e-4)
    # a subset carries the run ids of its own frames
    sub = train.subset(np.array([0, len(train) - 1]))
    assert list(sub.meta["run_id"]) == [0, 1]
    with pytest.raises(ValueError, match="v2"):
        pool_diagnostics(
            make_target("aldp", backend="openmm", data_preset="tiny").pool("unbiased", "test")
        )


def test_paired_kl_floor_is_what_an_independent_reference_run_scores() -> None:
    rng = np.random.default_rng(0)

    def draw(n: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        return rng.normal(-1.2 + shift, 0.4, n), rng.normal(2.5, 0.4, n)

    a, b = draw(5000), draw(5000)
    ref = (np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    runs = np.repeat([0, 1], 5000)
    assert np.array_equal(reference_halves(10_000, runs), runs == 1)  # B = the odd run
    kl, floor = ramachandran_kl_paired(ref, draw(6000), runs)
    assert floor == pytest.approx(ramachandran_kl(a, b, bins=36))
    # the floor is one draw of what exact samplers score: inside their spread
    exact = np.array([kl] + [ramachandran_kl_paired(ref, draw(5000), runs)[0] for _ in range(11)])
    assert abs(floor - exact.mean()) < 4 * exact.std()
    bad, _ = ramachandran_kl_paired(ref, draw(6000, shift=0.4), runs)
    assert bad > 3 * floor and bad > exact.max() + 10 * exact.std()
    # no run ids: a seeded random half split
    assert reference_halves(10, None).sum() == 5
    with pytest.raises(ValueError, match="at least 5000 samples"):
        ramachandran_kl_paired(ref, draw(100), runs)
    with pytest.raises(ValueError, match="run_id must have shape"):
        reference_halves(10, np.zeros(3))


def test_evaluate_sampler_reports_the_paired_kl_and_its_floor(tiny_v2: object) -> None:
    target, pools = tiny_v2  # type: ignore[misc]
    test, train = pools["test"], pools["train"]
    x = np.resize(train.x.astype(np.float64), (200, 66))

    def sample(n: int) -> tuple[np.ndarray, np.ndarray]:
        return x[:n], np.zeros(n)

    out = evaluate_sampler(target, sample, lambda y: np.zeros(len(y)), test, n_samples=200)
    from icml26.envs.boltzmann.geometry import ramachandran

    ref = tuple(t.numpy() for t in ramachandran(torch.from_numpy(test.x.astype(np.float64))))
    mod = tuple(t.numpy() for t in ramachandran(torch.from_numpy(x)))
    kl, floor = ramachandran_kl_paired(ref, mod, test.meta["run_id"], bins=36)  # type: ignore[arg-type]
    assert out["ramachandran_kl_36_paired"] == pytest.approx(kl)
    assert out["ramachandran_kl_36_paired_floor"] == pytest.approx(floor) and floor > 0
    assert "ramachandran_kl_100_paired_floor" in out
    assert out["phi_positive_reference"] == pytest.approx(np.mean(ref[0] > 0))


def test_v1_env_uses_the_decorrelated_preset() -> None:
    env = gym.make("icml26/BoltzmannAlanineDipeptide-v1", dataset_size=4, energy_budget=0)
    assert env.unwrapped.target.data_preset == "decorrelated"
    env0 = gym.make("icml26/BoltzmannAlanineDipeptide-v0", dataset_size=4, energy_budget=0)
    assert env0.unwrapped.target.data_preset == "full"


def test_gmm_validation_target_and_weight_decay() -> None:
    from icml26.agents.boltzmann.flow_agent import FlowConfig

    base, other = make_target("gmm40"), make_target("gmm40", means_seed=1)
    assert base.name == "gmm40" and other.name == "gmm40_means1"
    assert not torch.allclose(base.means, other.means)
    # still a normalized mixture: exp(-u) integrates to 1 (grid quadrature around every mode)
    g = torch.linspace(-50, 50, 801, dtype=torch.float64)
    xx, yy = torch.meshgrid(g, g, indexing="ij")
    z = torch.exp(-other.energy(torch.stack([xx, yy], -1))).sum() * (g[1] - g[0]) ** 2
    assert float(z) == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(ValueError, match="weight_decay"):
        FlowConfig(weight_decay=-1.0)


def test_phi_share_agreement_hand_worked() -> None:
    # two runs of 1000 frames of 0.1 ps (0.1 ns), shares 1% and 3%, indicator IATs 10 and 40
    diag = {
        "phi_positive_per_run": [0.01, 0.03],
        "iat_phi_positive_frames": [10.0, 40.0],
        "ns_per_run": 0.1,
        "frame_ps": 0.1,
    }
    a = phi_share_agreement(diag)
    se = [math.sqrt(0.01 * 0.99 * 10 / 1000), math.sqrt(0.03 * 0.97 * 40 / 1000)]
    assert a["within_se"] == pytest.approx(se)
    assert a["between_sd"] == pytest.approx(math.sqrt(2) * 0.01)
    assert a["ratio"] == pytest.approx(
        math.sqrt(2) * 0.01 / math.sqrt((se[0] ** 2 + se[1] ** 2) / 2)
    )
    same = phi_share_agreement({**diag, "phi_positive_per_run": [0.02, 0.02]})
    assert same["between_sd"] == 0.0 and same["ratio"] == 0.0


def test_independent_runs_are_cached_one_by_one_and_the_pool_reuses_them(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted generation resumes: runs made by ``alanine_runs`` (here one of two) are
    read back, not re-simulated, when the pool is assembled, and the pool equals a pool made in
    one go in a fresh cache."""
    import icml26.envs.boltzmann.md as md

    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    t = make_target("aldp", backend="openmm", data_preset="tiny-decorrelated")
    assert md.alanine_runs(t, "unbiased", "train", runs=[0]) == 1
    calls: list[int] = []
    real = md.run_langevin
    monkeypatch.setattr(md, "run_langevin", lambda *a, **k: calls.append(1) or real(*a, **k))
    pool = t.pool("unbiased", "train")
    assert len(calls) == 1  # run 1 only; run 0 came from its cache
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "fresh"))
    fresh = make_target("aldp", backend="openmm", data_preset="tiny-decorrelated")
    again = fresh.pool("unbiased", "train")
    assert np.array_equal(pool.x, again.x) and np.array_equal(pool.energy, again.energy)
    with pytest.raises(ValueError, match="no independent runs"):
        md.alanine_runs(
            make_target("aldp", backend="openmm", data_preset="tiny"), "unbiased", "train"
        )


def test_converged_preset_is_registered_as_v2_with_enough_configurations() -> None:
    from icml26.envs.boltzmann.md import PRESETS

    p = PRESETS["converged"]
    train_runs, train_frames = dict(p.runs)["train"], dict(p.frames)["train"]
    # thinned by an IAT of at most 60 frames (decorrelated measured 50), >= 10^4 configurations
    assert train_runs * train_frames // 60 >= 10_000
    assert p.ladder[-1] > PRESETS["decorrelated"].ladder[-1]
    spec = gym.spec("icml26/BoltzmannAlanineDipeptide-v2")
    assert spec.kwargs["target_kwargs"]["data_preset"] == "converged"
