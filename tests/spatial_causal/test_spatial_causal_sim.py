"""Simulator, graphs and fields of the spatial_causal family: hand-worked cases and cross-checks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from icml26.envs.spatial_causal import graphs
from icml26.envs.spatial_causal.fields import sample_confounder
from icml26.envs.spatial_causal.simulator import (
    VARIANTS,
    OutcomeModel,
    SimulationConfig,
    config_for_variant,
    counterfactual_table,
    simulate,
)

# ----------------------------------------------------------------------------- 3 x 3 grid by hand


def _model(**kw: float) -> OutcomeModel:
    base = dict(
        direct_effect=1.0, heterogeneity=0.3, spillover_effect=0.5, conf_y=1.0, nonlinearity=0.0
    )
    base.update(kw)
    return OutcomeModel(beta_y=np.array([0.5, 0.5]), **base)


def test_counterfactual_bookkeeping_on_hand_built_3x3_grid() -> None:
    # units in row-major order; queen adjacency; checkerboard treatment
    # 1 0 1
    # 0 1 0
    # 1 0 1
    coords, adj = graphs.grid_graph(3, 3, "queen")
    assert np.diff(adj.indptr).tolist() == [3, 5, 3, 5, 8, 5, 3, 5, 3]
    w = graphs.exposure_weights(graphs.hop_ball(adj, 1), "mean")
    a = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1])
    x = np.zeros((9, 2))
    x[4, 0] = 2.0  # heterogeneity at the centre: DE_4 = 1 + 0.3 * 2
    u = np.zeros(9)
    u[4] = 0.4
    eps = np.linspace(-0.4, 0.4, 9)  # eps[4] = 0
    e_half = np.full(9, 0.5)
    t = counterfactual_table(_model(), w, a, x, u, u, eps, e_half)
    # centre: 4 of 8 neighbours treated -> e = 0.5; mu = 1 + 0.6 + 0.5*0.5 + 0.4 + 0.5*2 = 3.25
    assert t["y"][4] == pytest.approx(3.25)
    assert t["y_own"][4].tolist() == pytest.approx([3.25 - 1.6, 3.25])
    assert t["y_nbr"][4].tolist() == pytest.approx([3.25 - 0.25, 3.25 + 0.25])
    assert t["y_half"][4] == pytest.approx(3.25)
    # corner (0, 0): neighbours (0,1)=0, (1,0)=0, (1,1)=1 -> e = 1/3; mu = 1 + 0.5/3; eps = -0.4
    assert t["y"][0] == pytest.approx(1 + 0.5 / 3 - 0.4)
    assert t["y_own"][0].tolist() == pytest.approx([0.5 / 3 - 0.4, 1 + 0.5 / 3 - 0.4])
    assert t["y_nbr"][0].tolist() == pytest.approx([1 - 0.4, 1.5 - 0.4])
    # edge unit (0, 1) untreated: neighbours 0,2,3,4,5 -> treated 0,2,4 -> e = 3/5
    assert t["y"][1] == pytest.approx(0.5 * 0.6 - 0.3)
    assert t["y_own"][1, 1] - t["y_own"][1, 0] == pytest.approx(1.0)
    # every counterfactual of a unit shares its noise: differences are noise-free
    assert np.allclose(t["y_nbr"][:, 1] - t["y_nbr"][:, 0], 0.5)


def test_simulated_3x3_grid_scores_only_the_centre() -> None:
    data = simulate(
        SimulationConfig(n_rows=3, n_cols=3, confounder="gp", length_scale=2.0),
        np.random.default_rng(0),
    )
    assert data.scored.tolist() == [False] * 4 + [True] + [False] * 4
    truth = data.truth()
    # only the centre counts: DE = tau + h * X_41, SE = gamma (no confmod, linear)
    assert truth["direct"] == pytest.approx(1.0 + 0.3 * data.covariates[4, 0])
    assert truth["spillover"] == pytest.approx(0.5)
    e4 = data.treatment[[0, 1, 2, 3, 5, 6, 7, 8]].mean()
    assert data.outcome[4] - data.y_nbr[4, 0] == pytest.approx(0.5 * e4)
    assert data.y_half[4] - data.y_nbr[4, 0] == pytest.approx(0.5 * 0.5)  # 4 of 8 treated
    assert truth["erf"].tolist() == pytest.approx(
        [data.y_nbr[4, 0], data.y_half[4], data.y_nbr[4, 1]]
    )
    assert data.sd_y == pytest.approx(np.std(data.outcome))  # one scored unit: sd over all units


# ----------------------------------------------------------------------------- graphs


def test_hop_ball_matches_breadth_first_search() -> None:
    _, adj = graphs.random_geometric_graph(300, np.random.default_rng(1))
    dist = shortest_path(adj, unweighted=True)
    for r in (1, 2, 3):
        ball = graphs.hop_ball(adj, r).toarray()
        expect = np.where((dist >= 1) & (dist <= r), dist, 0)
        assert np.array_equal(ball, expect)


def test_rgg_degree_cap_and_table_roundtrip() -> None:
    _, adj = graphs.random_geometric_graph(
        500, np.random.default_rng(2), mean_degree=9, max_degree=5
    )
    deg = np.diff(adj.indptr)
    assert deg.max() <= 5 and (adj != adj.T).nnz == 0
    table = graphs.neighbor_table(adj, 5)
    assert (graphs.adjacency_from_table(table) != adj).nnz == 0
    with pytest.raises(ValueError, match="width"):
        graphs.neighbor_table(adj, 3)


def test_lattice_with_holes_removes_exact_count() -> None:
    coords, adj = graphs.lattice_with_holes(20, 20, 60, 3, np.random.default_rng(3))
    assert coords.shape == (340, 2)
    assert len({tuple(c) for c in coords}) == 340
    # queen adjacency between remaining cells only
    d = np.abs(coords[:, None, :] - coords[None, :, :]).max(-1)
    assert np.array_equal(adj.toarray() > 0, d == 1)


def test_morans_i_matches_definition() -> None:
    _, adj = graphs.grid_graph(6, 7)
    x = np.random.default_rng(4).standard_normal(42)
    z = x - x.mean()
    a = adj.toarray()
    brute = (
        42 / a.sum() * sum(a[i, j] * z[i] * z[j] for i in range(42) for j in range(42)) / (z @ z)
    )
    assert graphs.morans_i(x, adj) == pytest.approx(brute)
    # a linear trend is strongly positive, a checkerboard strongly negative on a rook grid
    _, rook = graphs.grid_graph(10, 10, "rook")
    r, c = np.divmod(np.arange(100), 10)
    assert graphs.morans_i(r + c, rook) > 0.8
    assert graphs.morans_i((r + c) % 2, rook) == pytest.approx(-1.0)


def test_exposure_weights_kernels() -> None:
    _, adj = graphs.grid_graph(5, 5)
    ball = graphs.hop_ball(adj, 2)
    w = graphs.exposure_weights(ball, "mean")
    assert np.allclose(np.asarray(w.sum(1)).ravel(), 1.0)
    centre = w[12].toarray().ravel()
    assert np.allclose(centre[centre > 0], 1 / 24)
    wi = graphs.exposure_weights(ball, "inverse_hop")[12].toarray().ravel()
    # 8 units at hop 1 (weight 1), 16 at hop 2 (weight 1/2): normalizer 16
    assert wi[13] == pytest.approx(1 / 16) and wi[14] == pytest.approx(0.5 / 16)


# ----------------------------------------------------------------------------- fields


def test_gp_smoothness_grows_with_length_scale_and_matches_card() -> None:
    coords, adj = graphs.grid_graph(40, 40)

    def moran(ls: float) -> float:
        return float(
            np.mean(
                [
                    graphs.morans_i(
                        sample_confounder("gp", coords, adj, np.random.default_rng(s), ls), adj
                    )
                    for s in range(3)
                ]
            )
        )

    i2, i8 = moran(2.0), moran(8.0)
    assert i2 < i8
    assert 0.78 < i8 < 0.92  # method card: length-scale 8 cells on 40 x 40 gives Moran's I ~ 0.86


def test_sparse_fields_are_standardized_and_smooth() -> None:
    coords, adj = graphs.grid_graph(60, 60)
    for kind in ("spde", "icar"):
        u = sample_confounder(kind, coords, adj, np.random.default_rng(5), 8.0)
        assert abs(u.mean()) < 1e-9 and u.std() == pytest.approx(1.0)
        assert graphs.morans_i(u, adj) > 0.5


def test_clustered_confounder_decays_from_a_single_centre() -> None:
    coords, adj = graphs.grid_graph(9, 9)
    rng = np.random.default_rng(6)
    from icml26.envs.spatial_causal.fields import _clustered

    v = _clustered(adj, 1 / 81, rng)  # exactly one centre
    c = int(np.argmax(v))
    hops = np.abs(coords - coords[c]).max(1)  # queen grid: Chebyshev distance
    assert np.allclose(v, v[c] * np.exp(-hops / 2.0))
    assert 0.5 <= v[c] <= 1.0


# ----------------------------------------------------------------------------- simulator


def test_same_seed_same_data_different_seed_different() -> None:
    cfg = SimulationConfig(n_rows=12, n_cols=12, graph="holes")
    d1, d2 = simulate(cfg, np.random.default_rng(9)), simulate(cfg, np.random.default_rng(9))
    d3 = simulate(cfg, np.random.default_rng(10))
    assert np.array_equal(d1.outcome, d2.outcome) and np.array_equal(d1.coords, d2.coords)
    assert not np.array_equal(d1.outcome, d3.outcome)


def test_treated_fraction_and_positivity_knobs() -> None:
    for frac in (0.1, 0.7):
        d = simulate(
            config_for_variant(f"sparse{int(frac * 100)}", n_rows=30, n_cols=30),
            np.random.default_rng(0),
        )
        assert d.propensity.mean() == pytest.approx(frac, abs=1e-6)
    sharp = simulate(
        SimulationConfig(n_rows=30, n_cols=30, treatment_scale=6.0), np.random.default_rng(0)
    )
    soft = simulate(
        SimulationConfig(n_rows=30, n_cols=30, treatment_scale=1.0), np.random.default_rng(0)
    )
    assert sharp.scores["extreme_propensity_share"] > soft.scores["extreme_propensity_share"] + 0.3


def test_confmod_term_has_half_the_outcome_sd() -> None:
    d = simulate(config_for_variant("confmod", n_rows=30, n_cols=30), np.random.default_rng(1))
    alpha = d.meta["alpha"]
    w = graphs.exposure_weights(graphs.hop_ball(d.adjacency, 1), "mean")
    term = alpha * d.confounder * (w @ d.treatment)
    base = d.outcome - term
    assert np.std(term) == pytest.approx(0.5 * np.std(base), rel=1e-9)
    # spillover truth now includes alpha * mean(U) over the scored units
    assert d.truth()["spillover"] == pytest.approx(0.5 + alpha * d.confounder[d.scored].mean())


def test_asymmetric_dgp_ignores_left_neighbours() -> None:
    d = simulate(
        config_for_variant("asym", n_rows=6, n_cols=6, confounder="gp", noise_sd=0.0),
        np.random.default_rng(2),
    )
    i = 2 * 6 + 2  # row 2, col 2
    right = [
        j
        for j in range(36)
        if abs(d.coords[j, 1] - 2) <= 1 and 0 <= d.coords[j, 0] - 2 <= 1 and j != i
    ]
    assert len(right) == 5
    e = d.treatment[right].mean()
    assert d.outcome[i] - d.y_nbr[i, 0] == pytest.approx(0.5 * e)


def test_misspecified_radius_shows_one_uses_two() -> None:
    d = simulate(
        config_for_variant("misspec_radius", n_rows=10, n_cols=10), np.random.default_rng(3)
    )
    assert d.radius == 1 and d.dgp_radius == 2
    assert d.scored.sum() == 36  # interior units with a full radius-2 ball


def test_every_variant_simulates() -> None:
    for v in VARIANTS:
        d = simulate(config_for_variant(v, n_rows=10, n_cols=10), np.random.default_rng(0))
        t = d.truth()
        assert np.isfinite([t["direct"], t["spillover"], *t["erf"]]).all()
        assert 0 <= d.scores["confounding_score"] < 10


def test_confounding_score_vanishes_without_confounding() -> None:
    cfg = SimulationConfig(n_rows=40, n_cols=40)
    strong = simulate(cfg, np.random.default_rng(4)).scores
    none = simulate(cfg.replace(conf_a=0.0), np.random.default_rng(4)).scores
    assert none["confounding_score"] < 0.05 < strong["confounding_score"]


def test_config_validation_messages() -> None:
    with pytest.raises(ValueError, match="graph must be"):
        SimulationConfig(graph="torus")
    with pytest.raises(ValueError, match="radius"):
        SimulationConfig(radius=5)
    with pytest.raises(ValueError, match="unknown variant"):
        config_for_variant("sparse50")
    with pytest.raises(TypeError, match="unknown simulator argument"):
        config_for_variant("base", n_row=3)
    with pytest.raises(ValueError, match="dense Cholesky"):
        simulate(SimulationConfig(n_rows=80, n_cols=80, confounder="gp"), np.random.default_rng(0))
    assert sp.issparse(
        simulate(SimulationConfig(n_rows=5, n_cols=5), np.random.default_rng(0)).adjacency
    )


def test_spde_sampler_solves_its_gmrf_system_exactly() -> None:
    # the conjugate-gradient draw equals the sparse-LU solution of (kappa^2 I + L) x = z
    import scipy.sparse.linalg as spla

    coords, adj = graphs.grid_graph(50, 50)
    x = sample_confounder("spde", coords, adj, np.random.default_rng(8), 8.0)
    z = np.random.default_rng(8).standard_normal(2500)
    k = (sp.identity(2500) * (8.0 / 64) + graphs.laplacian(adj)).tocsc()
    ref = spla.splu(k).solve(z)
    assert np.allclose(x, (ref - ref.mean()) / ref.std(), atol=1e-7)
