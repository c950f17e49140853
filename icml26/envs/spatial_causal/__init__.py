"""Spatial causal inference with interference (Spatial Deconfounder; SpaCE extension).

* :mod:`~icml26.envs.spatial_causal.simulator` -- seeded simulator: graphs, latent confounder,
  treatment, exposure mapping, outcome, counterfactuals sharing noise, difficulty scores.
* :mod:`~icml26.envs.spatial_causal.env` -- ``icml26/SpaCEInterference-v0`` (one-step episodes).
* :mod:`~icml26.envs.spatial_causal.space_folder` -- reader for SpaCE env folders on disk.
* :mod:`~icml26.envs.spatial_causal.graphs`, :mod:`~icml26.envs.spatial_causal.fields` -- graph
  utilities (hop balls, exposure weights, Moran's I) and confounder samplers (GP, SPDE, ICAR).

Importing this package is cheap; submodules load on first attribute access.

Spatial causal inference with interference, after **Spatial Deconfounder** (arXiv 2510.08762;
code github.com/moprescu/Spatial-CI, which extends SpaCE / `spacebench`). Source:
`icml26/envs/spatial_causal/`. Results: [docs/results/spatial_causal.md](../results/spatial_causal.md).

```python
import gymnasium as gym, icml26
env = gym.make("icml26/SpaCEInterference-v0")                  # 40 x 40 grid, radius 1
env = gym.make("icml26/SpaCEInterference-v0", variant="confmod", graph="rgg")
env = gym.make("icml26/SpaCEInterference-v0", space_dir="/data/space/healthdgrid_rad1_...")
obs, info = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step({"direct": 1.0, "spillover": 0.5})
```

## Simulator

Simulator (`simulator.py`; defaults are the method card's):

```
U        GP with exponential kernel (length-scale 8)       | SPDE/GMRF (sparse, large n) | ICAR | clustered
X        N(0, I), 2 covariates
A        ~ Bernoulli(sigmoid(s (c_A U + X b_A + 0.5 eta) + mu)),  b_A = (0.5, -0.5), s = 1, c_A = 1
e_i      = sum_j W_ij A_j     (W: row-normalized radius-r hop ball; "mean" or "inverse_hop")
mu_i(a, e) = 1.0 a + 0.3 a X_1 + 0.5 s(e) + alpha U_i s(e) + c_Y g(U_y,i) + X_i b_Y,  b_Y = (0.5, 0.5)
Y_i      = mu_i(A_i, e_i) + eps_i,  eps_i ~ N(0, 0.5^2)
```

with `s(e) = e + nl (e^2 - e)`, `g(u) = u + nl (u^2 - 1)/sqrt(2)`. Graphs: `grid` (queen or rook
lattice, coordinates `(col, row)`), `holes` (lattice with `n_holes` round holes removing exactly
`hole_fraction` of the cells), `rgg` (random geometric graph, unit density, mean degree 6, an
edge kept only when both ends are among each other's 8 nearest points).

Counterfactuals share each unit's noise `eps_i` (Spatial-CI's construction): own treatment set to
0/1 with neighbours observed; every neighbour within the DGP radius set to 0/1 with own treatment
observed; a random half of the neighbours treated.

| estimand | definition (mean over scored units) |
|---|---|
| direct effect DE | `Y_i(1, A_N obs) - Y_i(0, A_N obs)` |
| spillover effect SE | `Y_i(A_i obs, 1_N) - Y_i(A_i obs, 0_N)` |
| ERF (3 levels) | `Y_i(A_i obs, 0_N)`, `Y_i(A_i obs, half_N)`, `Y_i(A_i obs, 1_N)` |
| ERF (`erf_points = m > 3`) | `Y_i(A_i obs, floor(q_j k) of the k neighbours treated)`, `q_j = j/(m-1)` |

Scored units: interior units whose full radius-r neighbourhood exists (lattices, as Spatial-CI);
every unit with a neighbour (random graphs).

Difficulty scores (reset `info`): `smoothness` = Moran's I of `U` (binary radius-1 weights);
`confounding_score_direct/_spillover` = how far the DE/SE of a flexible least-squares g-formula
move when `U` (a cubic and its interactions with A and e) is dropped, divided by sd(Y) (SpaCE's
"confounding: how much the counterfactuals move when the group is dropped");
`confounding_score` = their mean; `extreme_propensity_share` = share of propensities outside
[0.05, 0.95] (positivity); `treated_share`.

## Variants and simulator arguments

`variant` (stress variants of the method card, each a set of simulator overrides):

| variant | change |
|---|---|
| `base` | the method card's simulator |
| `radius2` | interference radius 2 |
| `nonlocal` | the outcome responds to `U` averaged over the radius-2 ring around the unit (not its own); length-scale 4 |
| `confmod` | confounder-modulated spillover `+ alpha U s(e)`, alpha so the term has sd 0.5 sd(Y) |
| `asym` | the DGP exposure keeps only neighbours with `x_j >= x_i` (agents are not told) |
| `sparse10/30/70` | intercept solved so the mean propensity is 10 / 30 / 70 % |
| `singlecause10/20/30` | clustered confounder `max_c peak_c exp(-hops/2)` with 10/20/30 % of units as centres |
| `misspec_radius` | data use radius 2, the observation says radius 1 |
| `nonlinear` | `nl = 1`: quadratic confounding and a convex exposure response |

Any `SimulationConfig` field overrides the variant: `graph` (grid, holes, rgg), `n_rows`,
`n_cols`, `n_units`, `adjacency`, `hole_fraction`, `n_holes`, `mean_degree`, `max_degree`,
`radius`, `reported_radius`, `exposure_kernel`, `confounder` (auto, gp, spde, icar, clustered;
`auto` = gp up to 4096 units, spde above), `length_scale`, `cluster_fraction`, `n_covariates`,
`conf_a`, `conf_y`, `treatment_noise`, `treatment_scale` (positivity), `treated_fraction`,
`direct_effect`, `spillover_effect`, `heterogeneity`, `nonlinearity`, `noise_sd`,
`nonlocal_confounding`, `confounder_modulated_spillover`, `asymmetric`, `erf_points` (3..21:
the number of ERF levels; the extra counterfactuals are drawn after everything else, so the
data set of a seed does not depend on it).

`space_dir` (optional extra `spacebench`: pyyaml, pyarrow): a SpaCE / Spatial-CI env folder already
on disk (`config.yaml`, `metadata.yaml`, `synthetic_data.{parquet,csv,tab}` with `Y_synth`,
`Y_synth_<k>`, `spill_Y_synth_<k>`, optional `spill_half_Y_synth`, and `graph.graphml[.gz]` or
`graph.tar.gz`). Read without spacebench and without the network; `missing_group` picks the
masked covariate group (default: the highest `confounding_score`). Binary treatments only.

## Agent and task notes

Agents (`icml26 agents`): `spatial-deconfounder` (paper, graph adaptation: ring-summary encoder,
one latent per unit, whole-graph Laplacian prior), `spatial-deconfounder-splus` (its Spatial+
head), `spatial-deconfounder-ref` (the reference model on lattices: per-pixel latent over the
(2r+1)^2 patch, patch-Laplacian GMRF prior, own treatment in the encoder, beta_max in 1e-5..1e-4
chosen by a held-out predictive check, Spatial+ head), `sc-diff-means`, `sc-ols` (the **null
estimator**: SE = 0, DE from OLS), `sc-ols-exposure`, `sc-spatial`, `sc-spatialplus`, `sc-s2sls`,
`sc-durbin`, `sc-gm-error` (spatial error model, GM + FGLS), `sc-ipw` / `sc-aipw` (marginal
structural model in (A, e) with a joint propensity: logistic own propensity x Poisson-binomial
neighbour count), `sc-ht` (Horvitz-Thompson), `sc-gcn`, and `sc-oracle` (sees `U`; reference
only, in no suite). `icml26.agents.spatial_causal.diagnostics.proxy_r2` gives R^2 of `U` on a
substitute confounder and on smooth proxies.

Tasks (`icml26 tasks`): `spatial_causal/grid-r1`, `grid-r2`, `rgg-r1`, `holes-r1` and
`stress-<variant>`, two data sets per trial. **v1** (latest): primary metric `spillover_error`;
also `direct_error`, `spillover_error_vs_null` / `direct_error_vs_null` (paired differences
against the null estimator on the same data sets), `erf_error` at 5 neighbour shares
(`erf_points=5`; the action must include the ERF) and `error`; episodes record R^2(U given .)
diagnostics. **v0** (still registered, `get_task(id, 0)`): primary metric `error` = mean of the
direct and spillover errors, 3-level ERF.

`reveal_confounder=True` is for the oracle reference agent only: `run_trial` sets it for agents
declaring `uses_hidden_confounder` and marks those trials `reference_only`.
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_LAZY = {
    "SpaCEInterferenceEnv": "icml26.envs.spatial_causal.env",
    "score_estimates": "icml26.envs.spatial_causal.env",
    "SimulationConfig": "icml26.envs.spatial_causal.simulator",
    "SpatialCausalData": "icml26.envs.spatial_causal.simulator",
    "simulate": "icml26.envs.spatial_causal.simulator",
    "config_for_variant": "icml26.envs.spatial_causal.simulator",
    "VARIANTS": "icml26.envs.spatial_causal.simulator",
    "load_space_folder": "icml26.envs.spatial_causal.space_folder",
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
