"""Metrics on known cases: ESS of exact samplers is 1, hand-worked ESS, W1/W2, modes, KL."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml26.agents.boltzmann.flows import SplineFlow
from icml26.envs.boltzmann import make_target
from icml26.envs.boltzmann.metrics import (
    energy_wasserstein,
    evaluate_sampler,
    forward_ess,
    log_z_estimate,
    modes_covered,
    ramachandran_kl,
    reverse_ess,
)


def test_kish_ess_hand_worked() -> None:
    assert reverse_ess(np.log([1.0, 1.0, 1.0, 1.0])) == pytest.approx(1.0)
    assert reverse_ess(np.log([1.0, 1.0, 1e-300, 1e-300]), clip_fraction=0) == pytest.approx(0.5)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    assert reverse_ess(np.log(w), clip_fraction=0) == pytest.approx(
        w.sum() ** 2 / (4 * (w**2).sum())
    )
    # forward ESS = 1 / (E[w] E[1/w]) on target samples
    assert forward_ess(np.log(w)) == pytest.approx(1 / (w.mean() * (1 / w).mean()))
    assert forward_ess(np.array([0.0, -np.inf])) == 0.0
    assert log_z_estimate(np.log(w) + 3.0) == pytest.approx(3.0 + math.log(2.5))
    # clipping the top 1e-4 of log-weights limits one outlier among 20000 samples
    lw = np.zeros(20000)
    lw[0] = 50.0
    assert reverse_ess(lw, clip_fraction=0) < 1e-3 and reverse_ess(lw) > 0.99


def test_flow_equal_to_target_has_ess_one() -> None:
    """A zero-initialized spline flow is exactly N(0, I); on the N(0, I) energy its ESS is 1."""
    flow = SplineFlow(6, None, n_layers=4, hidden=16).double()
    with torch.no_grad():
        x, log_q = flow.rsample(4000, torch.Generator().manual_seed(0))
    u = 0.5 * (x**2).sum(-1) + 3 * math.log(2 * math.pi)  # normalized: log Z = 0
    log_w = (-u - log_q).numpy()
    assert np.abs(log_w).max() < 1e-10
    assert reverse_ess(log_w) == pytest.approx(1.0, abs=1e-12)
    assert forward_ess(log_w) == pytest.approx(1.0, abs=1e-12)
    assert abs(log_z_estimate(log_w)) < 1e-10


def test_exact_sampler_scores_perfectly_on_gmm40() -> None:
    t = make_target("gmm40")
    test = t.dataset(5000, "unbiased", "test", seed=1)
    draws = iter(range(10))

    def sample(n: int) -> tuple[np.ndarray, np.ndarray]:
        x = t.sample(n, seed=100 + next(draws))
        return x.numpy(), (-t.energy(x)).numpy()

    m = evaluate_sampler(
        t, sample, lambda x: -t.energy(torch.as_tensor(x, dtype=torch.float64)).numpy(), test, 5000
    )
    assert m["reverse_ess"] == pytest.approx(1.0) and m["forward_ess"] == pytest.approx(1.0)
    assert m["log_z_error"] < 1e-10 and m["modes_covered"] == 40
    assert m["nll"] == pytest.approx(float(test.energy.mean()))
    assert m["energy_w1"] < 0.15  # two independent samples of the same energy distribution


def test_energy_wasserstein_of_a_shift() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=5000)
    d = energy_wasserstein(a + 2.5, a)
    assert d["energy_w1"] == pytest.approx(2.5, abs=1e-9) and d["energy_w2"] == pytest.approx(
        2.5, abs=1e-9
    )
    capped = energy_wasserstein(np.array([np.inf, np.nan, 0.0, 0.0]), np.zeros(1000))
    assert capped["energy_clip_fraction"] == 0.5 and np.isfinite(capped["energy_w1"])


def test_modes_covered_counts_only_populated_modes() -> None:
    means = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]])
    x = np.concatenate([np.repeat(means[:2], 50, 0), means[2:3]])  # 101 samples, mode 3 has one
    assert modes_covered(x, means) == 2  # 1 < 10% of 101 / 4
    assert modes_covered(np.repeat(means, 5, 0), means) == 4


def test_ramachandran_kl_hand_worked() -> None:
    phi = np.array([0.1, 0.1, 3.0, 3.0])
    psi = np.array([0.1, 0.1, 3.0, 3.0])
    assert ramachandran_kl((phi, psi), (phi, psi)) == pytest.approx(0.0, abs=1e-8)
    # model puts 3/4 in the first bin and 1/4 in the second: KL = 0.5 ln(2/3) + 0.5 ln 2
    model = (np.array([0.1, 0.1, 0.1, 3.0]), np.array([0.1, 0.1, 0.1, 3.0]))
    assert ramachandran_kl((phi, psi), model) == pytest.approx(
        0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(2), abs=1e-6
    )
    # angles are taken modulo 2 pi: -pi + 0.1 and pi + 0.1 fall in the same bin
    assert (
        ramachandran_kl(
            (np.array([-math.pi + 0.1]), np.array([0.2])),
            (np.array([math.pi + 0.1]), np.array([0.2])),
        )
        < 1e-8
    )


def test_ramachandran_kl_floor_is_what_two_samples_of_one_distribution_score() -> None:
    from icml26.envs.boltzmann.metrics import ramachandran_kl, ramachandran_kl_floor

    rng = np.random.default_rng(0)

    def draw(n: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        return rng.normal(-1.2 + shift, 0.4, n), rng.normal(2.5, 0.4, n)

    ref = draw(20_000)
    floor = ramachandran_kl_floor(ref, 5_000)
    same = ramachandran_kl(ref, draw(5_000))
    shifted = ramachandran_kl(ref, draw(5_000, shift=0.5))
    assert floor > 0.05  # finite samples never score 0 with 100 x 100 bins
    assert abs(same - floor) < 0.25 * floor  # an exact sampler scores about the floor
    assert shifted > 2 * floor  # a wrong one clearly exceeds it
    assert ramachandran_kl_floor(ref, 5_000, bins=36) < 0.5 * floor  # coarser bins: a lower floor
    with pytest.raises(ValueError, match="at least 4"):
        ramachandran_kl_floor((np.zeros(2), np.zeros(2)), 1)
