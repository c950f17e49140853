"""Issue 21: the null row and paired differences, R^2(U | .), the weighting and spatial-error
baselines, the reference patch deconfounder and the multi-point exposure-response curve."""

from __future__ import annotations

import dataclasses
import itertools

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
import icml26.agents as agents
from icml26.agents.spatial_causal.common import EffectAgent, EffectEstimate, SpatialData
from icml26.agents.spatial_causal.diagnostics import proxy_r2, r_squared
from icml26.agents.spatial_causal.reference import (
    gmrf_kl,
    gmrf_kl_numpy,
    patch_index,
    patch_laplacian,
)
from icml26.agents.spatial_causal.regression import GMError, kelejian_prucha_lambda
from icml26.agents.spatial_causal.weighting import (
    JointPropensity,
    horvitz_thompson,
    poisson_binomial_pmf,
)
from icml26.benchmarks import get_task
from icml26.benchmarks.tasks.spatial_causal import _task, run_trial
from icml26.envs.spatial_causal import graphs
from icml26.envs.spatial_causal.simulator import SimulationConfig, simulate

ENV_ID = "icml26/SpaCEInterference-v0"
SMALL = dict(n_rows=12, n_cols=12, confounder="gp", length_scale=3.0)


# ----------------------------------------------------------------------------- null row, v1 task


def test_v1_task_scores_the_null_estimator_on_the_same_data_sets() -> None:
    v1 = _task("tiny", "12 x 12 grid", eval_episodes=2, version=1, **SMALL)
    assert v1.primary_metric == "spillover_error" and v1.env_kwargs["erf_points"] == 5
    ols = run_trial(v1, agents.make("sc-ols"), seed=3)
    # sc-ols is the null estimator: its paired differences are exactly zero
    assert (
        ols.metrics["spillover_error_vs_null"] == 0.0 and ols.metrics["direct_error_vs_null"] == 0.0
    )
    olsx = run_trial(v1, agents.make("sc-ols-exposure"), seed=3)
    for a, b in zip(ols.extra["episodes"], olsx.extra["episodes"]):
        assert a["seed"] == b["seed"] and b["null_spillover_error"] == pytest.approx(
            a["spillover_error"]
        )
        assert b["spillover_error_vs_null"] == pytest.approx(
            b["spillover_error"] - a["spillover_error"]
        )
        # the null's SE error is |0 - SE| / sd(Y)
        assert a["null_spillover_error"] == pytest.approx(abs(a["truth_spillover"]) / a["sd_y"])
        assert set(b["r2"]) == {"r2_u_ring_means", "r2_u_spline_of_a", "r2_u_tps_basis"}
    assert olsx.scores == [ep["spillover_error"] for ep in olsx.extra["episodes"]]
    # the v0 task (mean of DE and SE errors) stays registered
    assert get_task("spatial_causal/grid-r1", 0).primary_metric == "error"
    assert get_task("spatial_causal/grid-r1").version == 1


def test_v1_task_needs_the_exposure_response_curve() -> None:
    class NoCurve(EffectAgent):
        def estimate(self, data: SpatialData, info: dict) -> EffectEstimate:
            return EffectEstimate(1.0, 0.5, None)

    v1 = _task("tiny", "12 x 12 grid", eval_episodes=1, version=1, **SMALL)
    with pytest.raises(ValueError, match="exposure-response curve"):
        run_trial(v1, NoCurve(), seed=0)
    v0 = _task("tiny", "12 x 12 grid", eval_episodes=1, version=0, **SMALL)
    assert np.isfinite(run_trial(v0, NoCurve(), seed=0).metrics["error"])


# ----------------------------------------------------------------------------- R^2 diagnostics


def test_r_squared_on_a_known_confounder() -> None:
    rng = np.random.default_rng(0)
    z = rng.standard_normal((40_000, 2))
    u = z @ np.array([1.0, -0.5]) + 0.5 * rng.standard_normal(40_000)
    # population R^2 = var(Z b) / var(U) = 1.25 / 1.5
    assert r_squared(u, z) == pytest.approx(1.25 / 1.5, abs=0.01)
    assert r_squared(u, u) == pytest.approx(1.0, abs=1e-12)
    assert r_squared(u, z[:, :1]) == pytest.approx(np.corrcoef(u, z[:, 0])[0, 1] ** 2, abs=1e-12)
    lat = np.column_stack([u, np.full(u.size, np.nan)])
    lat[:2, 1] = 0.0  # two complete rows only
    with pytest.raises(ValueError, match="complete rows"):
        r_squared(u, lat)
    with pytest.raises(ValueError, match="rows"):
        r_squared(u, z[:5])


def test_proxy_r2_sees_a_smooth_confounder_and_the_latent() -> None:
    d = simulate(
        SimulationConfig(n_rows=20, n_cols=20, confounder="gp", length_scale=8.0),
        np.random.default_rng(1),
    )
    data = SpatialData.from_observation(d.observation())
    out = proxy_r2(data, d.confounder, latent=d.confounder[:, None] * 2.0 + 1.0)
    assert out["r2_u_latent"] == pytest.approx(1.0, abs=1e-10)
    # a smooth GP is mostly a function of the coordinates; the treatment proxies see less of it
    assert 0.6 < out["r2_u_tps_basis"] <= 1.0
    assert 0.0 < out["r2_u_ring_means"] < out["r2_u_tps_basis"]
    assert 0.0 < out["r2_u_spline_of_a"] < out["r2_u_tps_basis"]


# ----------------------------------------------------------------------------- weighting baselines


def test_poisson_binomial_matches_enumeration() -> None:
    p = np.array([[0.1, 0.5, 0.7, 0.9, 0.0], [0.3, 0.3, 0.3, 0.0, 0.0]])
    pmf = poisson_binomial_pmf(p)
    for row in range(2):
        brute = np.zeros(6)
        for bits in itertools.product((0, 1), repeat=5):
            prob = np.prod([pi if b else 1 - pi for pi, b in zip(p[row], bits)])
            brute[sum(bits)] += prob
        np.testing.assert_allclose(pmf[row], brute, atol=1e-14)


def test_horvitz_thompson_is_unbiased_with_the_true_propensities() -> None:
    # fixed units and covariates, a known logistic propensity and potential outcomes
    # Y(a, e) = 1 + 2 a + 1.5 e + x; the truth is DE = 2 and SE = 1.5 for every draw
    coords, adj = graphs.grid_graph(12, 12, "rook")
    rng = np.random.default_rng(0)
    n = coords.shape[0]
    x = rng.standard_normal(n)
    pi = 1 / (1 + np.exp(-(0.3 + 0.8 * x)))
    obs = {
        "coords": coords,
        "covariates": x[:, None],
        "treatment": np.zeros(n, np.int8),
        "outcome": np.zeros(n),
        "neighbors": graphs.neighbor_table(adj, 4),
        "scored": np.ones(n, np.int8),
        "radius": 1,
    }
    base = SpatialData.from_observation(obs)
    units = np.diff(base.ball.indptr) > 0
    est = []
    for _ in range(600):
        a = (rng.random(n) < pi).astype(float)
        e = base.w @ a
        y = 1 + 2 * a + 1.5 * e + x
        jp = JointPropensity(dataclasses.replace(base, a=a, e=e), pi=pi)
        de, se, erf = horvitz_thompson(y, a, jp, units, (0.0, 1.0))
        est.append((de, se, erf[1] - erf[0]))
    est = np.array(est)
    mean, sem = est.mean(0), est.std(0) / np.sqrt(len(est))
    assert abs(mean[0] - 2.0) < 4 * sem[0] and abs(mean[1] - 1.5) < 4 * sem[1]
    np.testing.assert_allclose(est[:, 1], est[:, 2])  # SE = ERF(all) - ERF(none)
    assert sem[1] < 0.2  # the check has power: a bias of 0.8 would fail it


def _bias(name: str, seeds: range, **kwargs: object) -> np.ndarray:
    env = gym.make(ENV_ID, **kwargs)
    out = []
    for s in seeds:
        obs, info = env.reset(seed=s)
        agent = agents.make(name)
        agent.reset(s)
        _, _, _, _, inf = env.step(agent.act(obs, info))
        out.append((inf["direct_bias"], inf["spillover_bias"], inf["erf_error"]))
    return np.array(out)


UNCONFOUNDED = dict(conf_a=0.0, conf_y=0.0, treatment_noise=0.0, adjacency="rook")


@pytest.mark.parametrize(
    "name, de_tol, se_tol",
    [
        ("sc-ipw", 0.08, 0.15),
        ("sc-aipw", 0.08, 0.1),
        ("sc-gm-error", 0.05, 0.05),
        ("sc-ht", 0.08, 0.35),
    ],
)
def test_new_baselines_recover_known_effects_without_confounding(
    name: str, de_tol: float, se_tol: float
) -> None:
    # the propensity is logistic in X (the agents' model); DE = 1, SE = 0.5 in outcome units
    b = _bias(name, range(3), **UNCONFOUNDED)
    assert abs(b[:, 0].mean()) < de_tol and abs(b[:, 1].mean()) < se_tol, b
    assert np.isfinite(b[:, 2]).all()


def test_weighting_fails_under_spatial_confounding() -> None:
    # the same estimators on the method card's confounded grid: the joint propensity cannot see U
    b = _bias("sc-ipw", range(1))
    assert b[0, 1] > 0.8


def test_gm_error_recovers_a_true_spatial_error_model() -> None:
    coords, adj = graphs.grid_graph(30, 30)
    w = graphs.exposure_weights(graphs.hop_ball(adj, 1), "mean")
    rng = np.random.default_rng(0)
    n = coords.shape[0]
    lams, des, ses = [], [], []
    for _ in range(3):
        a = (rng.random(n) < 0.5).astype(float)
        x = rng.standard_normal((n, 2))
        u = np.linalg.solve(np.eye(n) - 0.6 * w.toarray(), 0.5 * rng.standard_normal(n))
        y = 1 + 1.0 * a + 0.8 * (w @ a) + x @ np.array([0.5, -0.3]) + u
        obs = {
            "coords": coords,
            "covariates": x,
            "treatment": a.astype(np.int8),
            "outcome": y,
            "neighbors": graphs.neighbor_table(adj, 8),
            "scored": np.ones(n, np.int8),
            "radius": 1,
        }
        agent = GMError()
        act = agent.act(obs)
        lams.append(agent.diagnostics["lambda"])
        des.append(act["direct"][0])
        ses.append(act["spillover"][0])
    assert np.mean(lams) == pytest.approx(0.6, abs=0.08)
    assert np.mean(des) == pytest.approx(1.0, abs=0.05) and np.mean(ses) == pytest.approx(
        0.8, abs=0.1
    )
    # with no spatial dependence the moment estimate is near 0
    lam0, s2 = kelejian_prucha_lambda(rng.standard_normal(n), w)
    assert abs(lam0) < 0.1 and s2 == pytest.approx(1.0, abs=0.1)


# ----------------------------------------------------------------------------- reference deconfounder


def test_patch_laplacian_matches_a_hand_built_one() -> None:
    # 3 x 3 patch, 4-connectivity, pixels 0..8 row-major: corners degree 2, edges 3, centre 4
    hand = np.array(
        [
            [2, -1, 0, -1, 0, 0, 0, 0, 0],
            [-1, 3, -1, 0, -1, 0, 0, 0, 0],
            [0, -1, 2, 0, 0, -1, 0, 0, 0],
            [-1, 0, 0, 3, -1, 0, -1, 0, 0],
            [0, -1, 0, -1, 4, -1, 0, -1, 0],
            [0, 0, -1, 0, -1, 3, 0, 0, -1],
            [0, 0, 0, -1, 0, 0, 2, -1, 0],
            [0, 0, 0, 0, -1, 0, -1, 3, -1],
            [0, 0, 0, 0, 0, -1, 0, -1, 2],
        ],
        dtype=float,
    )
    np.testing.assert_array_equal(patch_laplacian(1, 4), hand)
    l8 = patch_laplacian(1, 8)
    assert np.diag(l8).tolist() == [3, 5, 3, 5, 8, 5, 3, 5, 3] and np.allclose(l8.sum(1), 0)
    assert patch_laplacian(2, 4).shape == (25, 25)
    with pytest.raises(ValueError, match="connectivity"):
        patch_laplacian(1, 6)
    # the model's KL term uses exactly this prior: tau/2 (mu'(L + eps I)mu + tr) - 1/2 sum log var
    import torch

    rng = np.random.default_rng(0)
    mu, logvar = rng.standard_normal((5, 9, 2)), rng.standard_normal((5, 9, 2))
    lap_eps = hand + 1e-5 * np.eye(9)
    by_hand = (
        np.mean(
            [
                10
                / 2
                * sum(
                    mu[b, :, c] @ lap_eps @ mu[b, :, c] + np.diag(lap_eps) @ np.exp(logvar[b, :, c])
                    for c in range(2)
                )
                - 0.5 * logvar[b].sum()
                for b in range(5)
            ]
        )
        / 18
    )
    assert gmrf_kl_numpy(mu, logvar, hand, 10.0, 1e-5) == pytest.approx(by_hand, rel=1e-12)
    t = gmrf_kl(torch.tensor(mu), torch.tensor(logvar), torch.tensor(lap_eps), 10.0)
    assert float(t) == pytest.approx(by_hand, rel=1e-10)


def test_reference_deconfounder_runs_on_lattices_only() -> None:
    env = gym.make(ENV_ID, n_rows=14, n_cols=14, confounder="gp", length_scale=4.0, erf_points=5)
    obs, info = env.reset(seed=2)
    units, idx = patch_index(obs["coords"], 1)
    assert units.size == 12 * 12 and idx.shape == (144, 9)
    centre = obs["coords"][idx[:, 4]]
    np.testing.assert_array_equal(centre, obs["coords"][units])
    np.testing.assert_array_equal(
        obs["coords"][idx[:, 0]] - centre, np.tile([-1.0, -1.0], (144, 1))
    )
    outs = []
    for _ in range(2):
        agent = agents.make(
            "spatial-deconfounder-ref", epochs=30, betas=(1e-5, 1e-4), check_samples=5
        )
        agent.reset(5)
        outs.append(agent.act(obs, info))
    assert outs[0]["spillover"][0] == outs[1]["spillover"][0] and outs[0]["erf"].shape == (5,)
    assert agent.diagnostics["beta"] in (1e-5, 1e-4) and len(agent.selection) == 2
    assert np.isnan(agent.latent[0]).all() and np.isfinite(agent.latent[units]).all()
    rgg = gym.make(ENV_ID, graph="rgg", n_units=200, confounder="gp")
    obs, info = rgg.reset(seed=0)
    with pytest.raises(ValueError, match="lattice"):
        agents.make("spatial-deconfounder-ref", epochs=5).act(obs, info)


# ----------------------------------------------------------------------------- 5-point ERF


def test_erf_points_score_more_levels_on_the_same_data() -> None:
    env5 = gym.make(ENV_ID, erf_points=5, **SMALL)
    env3 = gym.make(ENV_ID, **SMALL)
    obs5, info5 = env5.reset(seed=4)
    obs3, _ = env3.reset(seed=4)
    for k in obs3:
        np.testing.assert_array_equal(obs5[k], obs3[k])
    assert info5["erf_levels"] == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert env5.action_space["erf"].shape == (5,)
    data = env5.unwrapped._data
    erf = data.truth()["erf"]
    s = data.scored
    assert erf[0] == pytest.approx(data.y_nbr[s, 0].mean()) and erf[-1] == pytest.approx(
        data.y_nbr[s, 1].mean()
    )
    # linear exposure response, 8 queen neighbours: floor(q 8) / 8 = q, so the truth is linear in q
    np.testing.assert_allclose(np.diff(erf, 2), 0.0, atol=1e-9)
    with pytest.raises(ValueError, match=r"shape \(5,\)"):
        env5.step({"direct": 1.0, "spillover": 0.5, "erf": [0.0, 1.0, 2.0]})
    with pytest.raises(ValueError, match="erf_points"):
        SimulationConfig(erf_points=2)
    # the oracle's curve is close at every level
    oracle = agents.make("sc-oracle")
    env5r = gym.make(
        ENV_ID, erf_points=5, reveal_confounder=True, n_rows=30, n_cols=30, confounder="gp"
    )
    obs, info = env5r.reset(seed=0)
    _, _, _, _, res = env5r.step(oracle.act(obs, info))
    assert res["erf_error"] < 0.06


def test_curves_of_the_lag_models_and_the_per_unit_counterfactuals() -> None:
    import scipy.sparse as sp

    from icml26.agents.spatial_causal.common import per_unit_counterfactuals

    env = gym.make(ENV_ID, n_rows=15, n_cols=15, confounder="gp", length_scale=4.0, erf_points=5)
    obs, info = env.reset(seed=1)
    for name in ("sc-s2sls", "sc-durbin"):
        act = agents.make(name).act(obs, info)
        # the curve's end points differ by exactly the model's spillover effect
        assert act["erf"].shape == (5,) and act["erf"][-1] - act["erf"][0] == pytest.approx(
            act["spillover"][0]
        )
    d = simulate(
        SimulationConfig(n_rows=7, n_cols=7, confounder="gp", length_scale=3.0),
        np.random.default_rng(0),
    )
    data = SpatialData.from_observation(d.observation(), erf_levels=(0.0, 0.25, 0.5, 1.0))
    prop = (data.adj + sp.identity(data.n)).tocsr()

    def predict(a: np.ndarray) -> np.ndarray:
        return np.tanh(prop @ np.column_stack([a, data.w @ a]) @ np.array([1.0, -0.7])) ** 2

    cf = per_unit_counterfactuals(data, predict, receptive_hops=2)
    for i in range(data.n):
        nb = data.ball.indices[data.ball.indptr[i] : data.ball.indptr[i + 1]]
        for j, q in enumerate((0.0, 0.25, 0.5, 1.0)):
            a = data.a.copy()
            a[nb] = 0.0
            a[nb[: int(np.floor(q * nb.size + 1e-9))]] = 1.0
            assert cf["levels"][i, j] == pytest.approx(predict(a)[i])
