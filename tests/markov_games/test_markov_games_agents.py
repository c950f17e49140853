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
    VILCBGame,
)
from icml26.agents.markov_games.estimation import (
    QEstimator,
    behavior_cloning,
    empirical_regularized_gap,
)
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


def test_sos_md_differs_from_rose_at_small_T_and_agrees_as_T_grows(game) -> None:  # type: ignore[no-untyped-def]
    """On one fixed dataset the optimization error of SOS-MD (its regularized gap in the
    estimated game, 0 at ROSE's output) is large at small T, falls at least as fast as the
    paper's O(1/sqrt(T)) bound (fitted log-log slope <= -1/2 over T in [1, 50]), and SOS-MD's
    last iterate reaches ROSE's policy as T grows."""
    ds = collect_dataset(game, 5000, "uniform", seed=7)
    Ts = np.array([1, 2, 5, 10, 20, 50])
    sos = SOSMD(beta=0.1, T=1000, snapshots=(*Ts.tolist(), 1000))
    sos.learn(ds)
    rose = ROSE(beta=0.1)
    rose.learn(ds)
    assert sos.estimator is not None and sos.references is not None
    refs = sos.references
    assert np.array_equal(refs[0], rose.references[0])  # both regularize toward BC
    assert empirical_regularized_gap(rose.estimator, *rose.policy(), 0.1, *refs) < 1e-12
    err = np.array(
        [empirical_regularized_gap(sos.estimator, *sos.snapshots[t], 0.1, *refs) for t in Ts]
    )
    assert err[0] > 0.1 and np.all(np.diff(err) < 0), err  # differs at small T, decreasing
    fitted = np.polyfit(np.log10(Ts), np.log10(err), 1)[0]
    assert fitted <= -0.5, fitted
    mu, nu = sos.snapshots[1000]
    assert np.abs(mu - rose.mu).max() < 1e-9 and np.abs(nu - rose.nu).max() < 1e-9
    assert sos.optimization_gap() < 1e-12
    # the v1 stagewise schedule reaches the same point
    stage = SOSMD(beta=0.1, T=1000, schedule="stagewise")
    stage.learn(ds)
    assert np.abs(stage.mu - rose.mu).max() < 1e-9


def test_regularized_gap_rate_on_full_coverage(game) -> None:  # type: ignore[no-untyped-def]
    """The paper's O(1/n): ROSE's (BC reference) regularized gap against n in [1e3, 1e5] on
    uniform data has a fitted log-log slope below -0.8 (1/sqrt(n) would give -0.5), and SOS-MD's
    last iterate (T = 300) attains it too (same regularized gap to 2% at n = 1e5)."""
    ns = np.array([1000, 3000, 10_000, 30_000, 100_000])
    curves = []
    for k in range(4):
        full = collect_dataset(game, int(ns[-1]), "uniform", seed=10 + k)
        row = []
        for n in ns:
            agent = ROSE(beta=0.1)
            agent.learn(full.head(int(n)))
            row.append(
                regularized_gap(game, *agent.policy(), 0.1, full.reference_mu, full.reference_nu)
            )
        curves.append(row)
    fitted = np.polyfit(np.log10(ns), np.log10(np.mean(curves, axis=0)), 1)[0]
    assert fitted < -0.8, fitted
    sos = SOSMD(beta=0.1, T=300)
    sos.learn(full)
    ref = (full.reference_mu, full.reference_nu)
    assert regularized_gap(game, *sos.policy(), 0.1, *ref) == pytest.approx(row[-1], rel=0.02)


def test_references_default_to_behavior_cloning(game) -> None:  # type: ignore[no-untyped-def]
    ds = collect_dataset(game, 200, "uniform", seed=5)
    for cls in (SOSMD, ROSE):
        agent = cls(T=5) if cls is SOSMD else cls()
        assert agent.reference == "bc"
        agent.learn(ds)
        assert agent.references is not None
        assert np.allclose(agent.references[0], behavior_cloning(ds)[0])
        oracle = cls(reference="behavior", T=5) if cls is SOSMD else cls(reference="behavior")
        oracle.learn(ds)
        assert np.array_equal(oracle.references[0], ds.reference_mu)
    with pytest.raises(ValueError, match="reference must be one of"):
        ROSE(reference="nash")


def test_nash_vi_fills_unvisited_cells_pessimistically() -> None:
    """A 2x2 game with rewards in [0, 1] whose data never show the max player's row 1: with the
    v1 fill of 0 the min player sees row 1 as harmless; the pessimistic fill gives each player
    the worst end of the range (max: 0, min: 1) and equals PNVI with c = 0."""
    g = matrix_game(np.array([[0.6, 0.4], [1.0, 0.0]]))
    ds = collect_dataset(g, 400, "custom", seed=0, mu=[[[1.0, 0.0]]], nu=[[[0.5, 0.5]]])
    pess, zero, pnvi0 = NashVI(), NashVI(fill=0.0), PessimisticNashVI(c=0.0)
    for a in (pess, zero, pnvi0):
        a.learn(ds)
    assert np.allclose(pess.mu, pnvi0.mu) and np.allclose(pess.nu, pnvi0.nu)
    # max player: row 1 unseen counts as 0 -> keeps the seen row 0 (guarantee 0.4)
    assert np.allclose(pess.mu[0, 0], [1.0, 0.0])
    # min player: row 1 unseen counts as 1 under the pessimistic fill, so the max player could
    # always get 1 and the min player's strategy is uninformed (any column); with fill 0 the
    # min player instead trusts row 0 alone and plays the column that minimizes it (b = 1)
    assert np.allclose(zero.nu[0, 0], [0.0, 1.0])
    with pytest.raises(ValueError, match="fill must be"):
        NashVI(fill="optimistic")


def test_pessimistic_bounds_hold_and_vi_lcb_game_converges(game) -> None:  # type: ignore[no-untyped-def]
    """PNVI (c = 1) and VI-LCB-Game (c_b = 1): the max player's lower bound is below the true
    value of its policy against a best response, the min player's upper bound above; with
    plenty of data VI-LCB-Game's gap is small."""
    from icml26.envs.markov_games.metrics import gap_parts

    for n, seed in ((2000, 0), (50_000, 1)):
        ds = collect_dataset(game, n, "uniform", seed=seed)
        for agent in (PessimisticNashVI(c=1.0), VILCBGame()):
            agent.learn(ds)
            parts = gap_parts(game, *agent.policy())
            lo, hi = (float(game.initial @ np.asarray(v)) for v in agent.stats["bounds"])
            assert lo <= parts["br_min"] + 1e-9 and hi >= parts["br_max"] - 1e-9, (lo, hi, parts)
    assert duality_gap(game, *agent.policy()) < 0.2


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
