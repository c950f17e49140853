"""The evaluator: probes against scikit-learn and brute force, and the PhysioProbe env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401  (registers the envs)
from icml26.envs.pulse.env import PhysioProbeEnv, label_subsets
from icml26.envs.pulse.probes import logistic_probe, ridge_r2, standardize
from icml26.envs.pulse.simulator import SAMPLE_FACTORS, TRANSFERABLE_FACTORS

SMALL = {"recordings_per_class": 6, "test_recordings_per_class": 4, "windows_per_recording": 2}


def _blobs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    x = rng.normal(size=(n, 5)) + np.eye(3, 5)[y] * 1.5
    return x * np.array([1.0, 10.0, 0.1, 3.0, 1.0]), y


def test_logistic_probe_matches_scikit_learn() -> None:
    """Same objective as StandardScaler + LogisticRegression(class_weight='balanced'): the
    predictions agree and the coefficients match."""
    sk = pytest.importorskip("sklearn.linear_model")
    from sklearn.preprocessing import StandardScaler

    x, y = _blobs(0, 300)
    xt, _ = _blobs(1, 200)
    y[:10] = 2  # unbalanced
    mine = logistic_probe(x, y, xt, 3)
    scaler = StandardScaler().fit(x)
    clf = sk.LogisticRegression(class_weight="balanced", max_iter=5000, tol=1e-10).fit(
        scaler.transform(x), y
    )
    theirs = clf.predict(scaler.transform(xt))
    assert np.mean(mine == theirs) >= 0.995


def test_logistic_probe_with_one_class_and_missing_classes() -> None:
    x, _ = _blobs(0, 20)
    assert np.all(logistic_probe(x, np.full(20, 2), x, 4) == 2)
    y = np.where(np.arange(20) < 10, 0, 3)
    assert set(logistic_probe(x, y, x, 4).tolist()) <= {0, 3}


def test_ridge_r2_leave_one_out_is_exact_and_r2_is_held_out() -> None:
    """The LOO shortcut picks the same penalty as brute-force leave-one-out; an exact linear
    target gives R^2 ~ 1, an independent one R^2 <= ~0."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4))
    y = x @ np.array([1.0, -2.0, 0.0, 0.5]) + 0.3 * rng.normal(size=60)
    (xs,) = standardize(x)
    for a in (0.01, 10.0):
        loo = []
        for i in range(60):
            m = np.arange(60) != i
            xm, ym = xs[m], y[m]
            mu = xm.mean(0)
            beta = np.linalg.solve(
                (xm - mu).T @ (xm - mu) + a * np.eye(4), (xm - mu).T @ (ym - ym.mean())
            )
            loo.append((y[i] - ym.mean() - (xs[i] - mu) @ beta) ** 2)
        # the shortcut centres on all rows; the refits centre without row i, so compare loosely
        U, s, Vt = np.linalg.svd(xs, full_matrices=False)
        beta = Vt.T @ ((s / (s**2 + a)) * (U.T @ (y - y.mean())))
        hat = (U**2) @ (s**2 / (s**2 + a)) + 1 / 60
        short = np.mean(((y - y.mean() - xs @ beta) / (1 - hat)) ** 2)
        assert short == pytest.approx(np.mean(loo), rel=0.02)
    xt = rng.normal(size=(200, 4))
    exact = xt @ np.array([1.0, -2.0, 0.0, 0.5])
    assert ridge_r2(x, y, xt, exact)[0] > 0.97
    assert ridge_r2(x, rng.normal(size=60), xt, rng.normal(size=200))[0] < 0.05


def test_label_subsets_keep_one_label_per_class() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 100)
    subs = label_subsets(rng, labels, 0.01, 5, 4)
    assert len(subs) == 5
    for s in subs:
        assert set(labels[s].tolist()) == {0, 1, 2, 3}
        assert 4 <= s.size <= 8
    assert label_subsets(rng, labels, 1.0, 5, 4)[0].size == 400


def test_env_splits_by_recording_and_scores_an_oracle_and_noise() -> None:
    """The oracle embedding (the true factors of each window) is recovered with R^2 ~ 1 and
    classifies well above chance; pure-noise embeddings give R^2 ~ 0 and chance accuracy."""
    env = PhysioProbeEnv(
        probe="factors", embedding_dim=len(TRANSFERABLE_FACTORS) + len(SAMPLE_FACTORS), **SMALL
    )
    obs, info = env.reset(seed=3)
    ep = env._episode
    assert ep is not None
    assert obs.shape == (4 * 10 * 2, 2, 256)
    assert not set(ep["train"].tolist()) & set(ep["test"].tolist())
    oracle = np.zeros(env.action_space.shape, np.float32)
    oracle[ep["train"]] = ep["f_train"]
    oracle[ep["test"]] = ep["f_test"]
    _, reward, term, _, out = env.step(oracle)
    assert term and reward > 0.99 and out["r2_sample"] > 0.99
    env.reset(seed=3)
    noise = np.random.default_rng(0).normal(size=env.action_space.shape).astype(np.float32)
    _, reward, _, _, out = env.step(noise)
    assert reward < 0.1 and out["r2_sample"] < 0.1 and abs(out["selectivity"]) < 0.2

    cls = PhysioProbeEnv(embedding_dim=len(TRANSFERABLE_FACTORS), **SMALL)
    obs, _ = cls.reset(seed=3)
    np.testing.assert_array_equal(obs, env.reset(seed=3)[0])  # same windows, same order
    _, reward, _, _, out = cls.step(np.asarray(oracle[:, : len(TRANSFERABLE_FACTORS)]))
    assert reward > 0.9 and out["n_labels"] == 4 * 6 * 2
    cls.reset(seed=3)
    _, reward, _, _, _ = cls.step(noise[:, : len(TRANSFERABLE_FACTORS)])
    assert reward < 0.5


def test_recordings_never_straddle_the_split() -> None:
    env = PhysioProbeEnv(**SMALL)
    env.reset(seed=1)
    ep = env._episode
    assert ep is not None
    rec = ep["recording"]
    assert not set(rec[ep["train"]].tolist()) & set(rec[ep["test"]].tolist())
    assert ep["train"].size == 4 * 6 * 2 and ep["test"].size == 4 * 4 * 2
    assert np.unique(rec[ep["train"]]).size == 4 * 6


def test_env_label_fraction_and_target_domain() -> None:
    env = gym.make(
        "icml26/PhysioProbe-v0", label_fraction=0.1, label_draws=3, embedding_dim=4, **SMALL
    )
    obs, info = env.reset(seed=0)
    assert info["label_fraction"] == 0.1
    _, _, _, _, out = env.step(np.zeros((obs.shape[0], 4), np.float32))
    assert len(out["accuracies"]) == 3 and out["n_labels"] >= 4
    src = gym.make("icml26/PhysioProbe-v0", **SMALL).reset(seed=0)[0]
    tgt = gym.make("icml26/PhysioProbe-v0", domain="target", **SMALL).reset(seed=0)[0]
    assert tgt[:, 0].std() > src[:, 0].std()  # twice the noise, more artefacts


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"probe": "nope"}, ValueError),
        ({"label_fraction": 0.0}, ValueError),
        ({"windows_per_recording": 0}, ValueError),
        ({"domain": "mars"}, ValueError),
        ({"noise": 1.0}, TypeError),
        ({"render_mode": "human"}, ValueError),
    ],
)
def test_env_rejects_bad_arguments(kwargs: dict, err: type) -> None:
    with pytest.raises(err, match="PhysioProbe-v0"):
        PhysioProbeEnv(**{**SMALL, **kwargs})


def test_env_rejects_bad_actions_without_losing_the_episode() -> None:
    env = PhysioProbeEnv(embedding_dim=3, **SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros((80, 3)))
    obs, _ = env.reset(seed=0)
    n = obs.shape[0]
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros((n, 4)))
    bad = np.zeros((n, 3))
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        env.step(bad)
    with pytest.raises(TypeError, match="embeddings"):
        env.step("zeros")
    _, _, term, _, _ = env.step(np.zeros((n, 3)))  # the episode survived the rejected actions
    assert term
