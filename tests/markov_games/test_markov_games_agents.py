"""SOS-MD converges to the regularized equilibrium; estimators and baselines behave as specified."""

from __future__ import annotations

import numpy as np
import pytest

from icml26.agents.markov_games import (
    ROSE,
    SOSMD,
    BehaviorCloning,
    NashOracle,
    NashVI,
    PessimisticNashVI,
    SelfPlayMD,
)
from icml26.agents.markov_games.estimation import QEstimator
from icml26.agents.markov_games.mirror_descent import self_play_md_exact
from icml26.envs.markov_games import (
    collect_dataset,
    duality_gap,
    make_game,
    matrix_game,
    random_game,
    regularized_equilibrium,
    regularized_gap,
)
from icml26.protocol import Budget


@pytest.fixture(scope="module")
def game():  # type: ignore[no-untyped-def]
    return random_game(S=6, A=3, B=3, H=3, seed=2)


def test_sos_md_with_exact_q_converges_to_regularized_equilibrium(game) -> None:  # type: ignore[no-untyped-def]
    beta = 0.1
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(3), (3, 6)), rng.dirichlet(np.ones(3), (3, 6))
    eq = regularized_equilibrium(game, beta, p, q)
    gaps = []
    for T in (3, 10, 30, 100, 300):
        mu, nu = self_play_md_exact(game, beta, 0.5, T, p, q)
        gaps.append(regularized_gap(game, mu, nu, beta, p, q))
    assert all(b < a for a, b in zip(gaps, gaps[1:])), gaps  # decreasing in T
    assert gaps[-1] < 1e-8
    mu, nu = self_play_md_exact(game, beta, 0.5, 2000, p, q)
    assert np.abs(mu - eq.mu).max() < 1e-9 and np.abs(nu - eq.nu).max() < 1e-9
    # the implicit (magnetic) variant reaches the same point
    mu2, _ = self_play_md_exact(game, beta, 0.5, 2000, p, q, variant="magnetic")
    assert np.abs(mu2 - eq.mu).max() < 1e-8


def test_card_rate_on_a_5x5_matrix_game() -> None:
    """Method card: 5x5 game, beta 0.1, eta 0.5: reg. gap ~5e-2 at T = 10, ~6e-6 at T = 100."""
    g = matrix_game(np.random.default_rng(0).uniform(0, 1, (5, 5)))
    g10 = regularized_gap(g, *self_play_md_exact(g, 0.1, 0.5, 10), 0.1)
    g100 = regularized_gap(g, *self_play_md_exact(g, 0.1, 0.5, 100), 0.1)
    assert 1e-2 < g10 < 1e-1 and g100 < 1e-5


def test_tabular_estimator_equals_one_hot_least_squares(game) -> None:  # type: ignore[no-untyped-def]
    ds = collect_dataset(game, 300, "uniform", seed=1)
    v = np.random.default_rng(1).uniform(0, 2, 6)
    for h in range(3):
        a = QEstimator(ds, lam=1.0, features="tabular", clip=False).q(h, v)
        b = QEstimator(ds, lam=1.0, features="onehot", clip=False).q(h, v)
        assert np.allclose(a, b, atol=1e-10)
    # with lam = 0, a visited entry is the empirical mean of r + v(s') over its samples
    est = QEstimator(ds, lam=0.0, clip=False)
    Q = est.q(2, v)
    sel = (ds.states[:, 2] == 1) & (ds.actions_max[:, 2] == 0) & (ds.actions_min[:, 2] == 2)
    assert Q[1, 0, 2] == pytest.approx(np.mean(ds.rewards[sel, 2] + v[ds.next_states[sel, 2]]))


def test_linear_features_recover_low_rank_q() -> None:
    g = make_game("low_rank", S=12, A=3, B=3, H=2, d=4, seed=1)
    ds = collect_dataset(g, 20_000, "uniform", seed=0)
    from icml26.envs.markov_games.metrics import q_values

    Q_lin = QEstimator(ds, lam=1e-3, features="game", clip=False).q(1, np.zeros(12))
    assert np.abs(Q_lin - q_values(g, 1, np.zeros(12))).max() < 0.02
    agent = SOSMD(features="game", T=300)
    agent.learn(ds)
    with pytest.raises(ValueError, match="has no feature map"):
        QEstimator(collect_dataset(random_game(), 10), features="game")


def test_sos_md_and_rose_agree_and_improve_with_n(game) -> None:  # type: ignore[no-untyped-def]
    full = collect_dataset(game, 100_000, "uniform", seed=3)
    ref = (full.reference_mu, full.reference_nu)
    reg = {}
    for n in (1000, 100_000):
        rose, sos = ROSE(beta=0.1), SOSMD(beta=0.1, eta=0.5, T=2000)
        rose.learn(full.head(n))
        sos.learn(full.head(n))
        assert np.abs(rose.policy()[0] - sos.policy()[0]).max() < 1e-6
        reg[n] = regularized_gap(game, *sos.policy(), 0.1, *ref)
    assert reg[100_000] < 0.1 * reg[1000]  # fast rate: 100x data, far more than 10x smaller


def test_baselines_at_large_n(game) -> None:  # type: ignore[no-untyped-def]
    ds = collect_dataset(game, 50_000, "uniform", seed=4)
    oracle = NashOracle()
    oracle.learn(ds)
    assert duality_gap(game, *oracle.policy()) < 1e-9
    vi = NashVI()
    vi.learn(ds)
    assert duality_gap(game, *vi.policy()) < 0.1
    bc = BehaviorCloning()
    bc.learn(ds)
    u = (game.uniform_policy("max"), game.uniform_policy("min"))
    assert np.abs(bc.policy()[0] - u[0]).max() < 0.05
    pvi = PessimisticNashVI(c=0.1)
    pvi.learn(ds)
    assert duality_gap(game, *pvi.policy()) < 0.2
    last, avg = SelfPlayMD(iterate="last", T=400), SelfPlayMD(iterate="average", T=400)
    last.learn(ds)
    avg.learn(ds)
    assert duality_gap(game, *avg.policy()) < duality_gap(game, *last.policy())


def test_learn_respects_budget_and_validates_input(game) -> None:  # type: ignore[no-untyped-def]
    ds = collect_dataset(game, 200, "uniform", seed=0)
    agent = SOSMD(T=20)
    stats = agent.learn(ds, Budget(dataset_size=50))
    assert stats["n"] == 50
    with pytest.raises(TypeError, match="expects an icml26.envs.markov_games.OfflineDataset"):
        agent.learn({"states": []})
    with pytest.raises(RuntimeError, match="call learn"):
        ROSE().policy()
    with pytest.raises(ValueError, match="eta \\* beta <= 1"):
        SOSMD(beta=1.0, eta=2.0)
    with pytest.raises(ValueError, match="iterate must be"):
        SelfPlayMD(iterate="best")


def test_act_samples_the_policy_table(game) -> None:  # type: ignore[no-untyped-def]
    agent = NashOracle()
    agent.learn(collect_dataset(game, 10, "uniform", seed=0))
    agent.reset(0)
    mu, nu = agent.policy()
    draws = [agent.act(np.array([1, 4])) for _ in range(3000)]
    assert np.allclose(np.bincount(draws, minlength=3) / 3000, mu[1, 4], atol=0.04)
    draws = [agent.act({"observation": np.array([0, 2])}, {"player": "min"}) for _ in range(3000)]
    assert np.allclose(np.bincount(draws, minlength=3) / 3000, nu[0, 2], atol=0.04)
    agent.reset(5)
    a = [agent.act(np.array([2, 0])) for _ in range(20)]
    agent.reset(5)
    assert a == [agent.act(np.array([2, 0])) for _ in range(20)]
