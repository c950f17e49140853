"""Phi's pretraining phase: the AUROC, the collision-within-2-s labels and Phi's separation."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.agents.driving.phi_pretrain import (
    HORIZON_STEPS,
    auroc,
    collect_phi_dataset,
    train_phi,
)


def test_auroc_hand_worked_and_against_sklearn() -> None:
    # positives {0.8, 0.4}, negatives {0.5, 0.1}: pairs won 1 + 1 + 0 + 1 of 4 -> 0.75
    assert auroc([1, 1, 0, 0], [0.8, 0.4, 0.5, 0.1]) == pytest.approx(0.75)
    assert auroc([1, 0], [0.3, 0.3]) == pytest.approx(0.5)  # a tie counts one half
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    s = np.round(rng.normal(y * 0.7, 1.0), 1)  # rounding makes ties
    assert auroc(y, s) == pytest.approx(sk.roc_auc_score(y, s), abs=1e-12)


def test_auroc_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="both classes"):
        auroc([1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="same length"):
        auroc([1, 0], [0.1])
    with pytest.raises(ValueError, match="only 0 and 1"):
        auroc([2, 0], [0.1, 0.2])


@pytest.fixture(scope="module")
def data_s5():
    # scenario 5 against IDM: random / held / scripted adversaries collide in part of the episodes
    return collect_phi_dataset([5], "idm", episodes=80, seed=0)


def test_labels_mark_the_last_two_seconds_before_a_collision(data_s5) -> None:
    d = data_s5
    assert d.collisions > 5 and d.collisions < d.episodes  # both outcomes occur
    for ep in np.unique(d.episode):
        y = d.y[d.episode == ep]
        if y.any():
            # the positives are exactly the last HORIZON_STEPS states (or all of a short episode)
            assert y[-1] == 1 and y.sum() == min(HORIZON_STEPS, len(y))
            assert (y[-int(y.sum()) :] == 1).all()
        else:
            assert y.sum() == 0
    assert d.x.shape[1] == 6 and np.isfinite(d.x).all()


def test_collection_is_seeded(data_s5) -> None:
    again = collect_phi_dataset([5], "idm", episodes=80, seed=0)
    np.testing.assert_array_equal(again.x, data_s5.x)
    np.testing.assert_array_equal(again.y, data_s5.y)


def test_trained_phi_separates_colliding_from_safe_states(data_s5) -> None:
    test = collect_phi_dataset([5], "idm", episodes=40, seed=1)
    phi, rep = train_phi(data_s5, test, seed=0, max_epochs=40, patience=5)
    assert not phi.training and phi.ready and phi.k_inv_d == 0.0  # frozen, risk = P(collision)
    assert rep["auroc_test"] > 0.9, rep
    # the states 2 s before a collision score higher than states of episodes without one
    p = phi.risk(test.x)
    assert p[test.y == 1].mean() > 3 * p[test.y == 0].mean()
    # early stopping on held-out episodes fired (trained to convergence, not to the epoch cap)
    assert rep["converged"] and rep["epochs"] < 40
