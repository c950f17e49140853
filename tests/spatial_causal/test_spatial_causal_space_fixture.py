"""The SpaCE folder reader against fixtures laid out as the published folders, not as our writer.

Layouts (read from the public code, not copied):

* Spatial-CI ``space-data/train_spaceenv.py`` (the interference extension) writes
  ``synthetic_data.tab`` (tab separated, index = node id, ``"<row>_<col>"`` on grids) with the
  columns ``[treatment, covariates (sorted), <outcome>_pred, <outcome>_pred_00, _01, Y_synth,
  Y_synth_00, Y_synth_01, spill_<outcome>_pred_00, _01, spill_Y_synth_00, spill_Y_synth_01]``;
  ``graph.tar.gz`` holding ``graph/edges.parquet`` (columns ``source``, ``target``: node ids,
  each undirected edge once) and ``graph/coords.parquet`` (node attributes, index = node id);
  ``metadata.yaml`` dumped in insertion order with ``base_name``, ``treatment``,
  ``predicted_outcome``, ``synthetic_outcome``, ``confounding_score`` (+ ``_erf``, ``_ite``,
  ``_ate``), ``spatial_scores``, ``outcome_importance``, ``treatment_importance``,
  ``covariates``, ``treatment_values``, ``covariate_groups``, residual scores, ``radius``; and
  Hydra's resolved ``config.yaml``. Its reader (``benchmarks/sci/env.py``) takes grid
  coordinates from the node ids.
* SpaCE (NSAPH-Projects/space ``spacebench/env.py``): ``synthetic_data.csv`` (index column 0),
  ``Y_synth`` and ``Y_synth_<k>`` only (no spillover counterfactuals), ``graph.graphml`` whose
  node attribute values are the coordinates.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
import icml26.agents as agents
from icml26.envs.spatial_causal.space_folder import SpaceFolderError, load_space_folder

pd = pytest.importorskip("pandas")
yaml = pytest.importorskip("yaml")
pytest.importorskip("pyarrow")

OUTCOME = "cdc_mortality"
TREAT = "qd_mean_pm25_bin"
COVS = ["bin_pop_density", "gmet_tmmx", "hpbf_poverty"]


def _grid_nodes(n: int) -> list[tuple[int, int]]:
    return [(r, c) for r in range(n) for c in range(n)]


def _write_spatial_ci_grid(root: Path, n: int = 9, seed: int = 0) -> dict:
    """A 9 x 9 radius-1 grid env written the way space-data/train_spaceenv.py writes one."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True)
    cells = _grid_nodes(n)
    ids = [f"{r}_{c}" for r, c in cells]
    x = {c: rng.standard_normal(len(ids)) for c in COVS}
    a = (rng.random(len(ids)) < 0.5).astype(float)
    pos = {cell: i for i, cell in enumerate(cells)}
    nbrs = [
        [
            pos[(r + dr, c + dc)]
            for dr in (-1, 0, 1)
            for dc in (-1, 0, 1)
            if (dr, dc) != (0, 0) and (r + dr, c + dc) in pos
        ]
        for r, c in cells
    ]
    e = np.array([a[nb].mean() for nb in nbrs])
    resid = 0.3 * rng.standard_normal(len(ids))

    def mu(av: np.ndarray, ev: np.ndarray) -> np.ndarray:
        return 2.0 * av + 0.7 * ev + 0.5 * x["gmet_tmmx"] - 0.4 * x["hpbf_poverty"]

    ones, zeros = np.ones(len(ids)), np.zeros(len(ids))
    df = pd.DataFrame(
        {TREAT: a, **{c: x[c] for c in sorted(COVS)}}, index=pd.Index(ids, name="node")
    )
    df[f"{OUTCOME}_pred"] = mu(a, e)
    df[f"{OUTCOME}_pred_00"], df[f"{OUTCOME}_pred_01"] = mu(zeros, e), mu(ones, e)
    df["Y_synth"] = mu(a, e) + resid
    df["Y_synth_00"], df["Y_synth_01"] = mu(zeros, e) + resid, mu(ones, e) + resid
    df[f"spill_{OUTCOME}_pred_00"], df[f"spill_{OUTCOME}_pred_01"] = mu(a, zeros), mu(a, ones)
    df["spill_Y_synth_00"], df["spill_Y_synth_01"] = mu(a, zeros) + resid, mu(a, ones) + resid
    df = df.iloc[rng.permutation(len(df))]  # rows are not in raster order in the published files
    df.to_csv(root / "synthetic_data.tab", sep="\t", index=True)

    edges = sorted({tuple(sorted((ids[i], ids[j]))) for i, nb in enumerate(nbrs) for j in nb})
    gdir = root / "_build" / "graph"
    gdir.mkdir(parents=True)
    pd.DataFrame(np.array(edges), columns=["source", "target"]).to_parquet(gdir / "edges.parquet")
    pd.DataFrame(index=pd.Index(ids)).to_parquet(
        gdir / "coords.parquet"
    )  # grid nodes carry no attributes
    with tarfile.open(root / "graph.tar.gz", "w:gz") as tar:
        tar.add(gdir, arcname="graph")

    metadata = {
        "base_name": "grid_pm25_mortality_r1",
        "treatment": TREAT,
        "predicted_outcome": OUTCOME,
        "synthetic_outcome": "Y_synth",
        "confounding_score": {"gmet_tmmx": 0.21, "hpbf_poverty": 0.12, "bin_pop_density": 0.01},
        "confounding_score_erf": {"gmet_tmmx": 0.05, "hpbf_poverty": 0.03},
        "confounding_score_ite": {"gmet_tmmx": 0.09, "hpbf_poverty": 0.06},
        "confounding_score_ate": {"gmet_tmmx": 0.04, "hpbf_poverty": 0.02},
        "spatial_scores": {"gmet_tmmx": 0.83, "hpbf_poverty": 0.41, "bin_pop_density": 0.2},
        "outcome_importance": {
            "gmet_tmmx": 0.3,
            "hpbf_poverty": 0.2,
            "bin_pop_density": 0.01,
            "treatment": 0.5,
        },
        "treatment_importance": {"gmet_tmmx": 0.4, "hpbf_poverty": 0.2, "bin_pop_density": 0.1},
        "covariates": COVS,
        "treatment_values": [0.0, 1.0],
        "covariate_groups": ["bin_pop_density", {"gmet_tmmx": ["gmet_tmmx"]}, "hpbf_poverty"],
        "original_residual_spatial_score": 0.4,
        "synthetic_residual_spatial_score": 0.38,
        "original_nbrs_corr": 0.5,
        "synthetic_nbrs_corr": 0.49,
        "radius": 1,
    }
    with open(root / "metadata.yaml", "w") as f:
        yaml.dump(metadata, f, sort_keys=False)
    with open(root / "config.yaml", "w") as f:
        yaml.dump(
            {
                "spaceenv": {
                    "base_name": metadata["base_name"],
                    "treatment": TREAT,
                    "outcome": OUTCOME,
                    "radius": 1,
                    "datatype": "grid",
                },
                "seed": 0,
            },
            f,
            sort_keys=False,
        )
    return {"df": df, "nbrs": nbrs, "ids": ids, "cells": cells}


def test_reader_on_a_spatial_ci_grid_folder(tmp_path: Path) -> None:
    src = _write_spatial_ci_grid(tmp_path / "grid_pm25_mortality_r1")
    data = load_space_folder(tmp_path / "grid_pm25_mortality_r1")
    df = src["df"]
    # units in the table's order; coordinates (x, y) = (col, row) parsed from the ids
    rows_cols = np.array([[int(v) for v in i.split("_")] for i in df.index])
    np.testing.assert_array_equal(data.coords, rows_cols[:, ::-1])
    np.testing.assert_allclose(
        data.outcome, df["Y_synth"].to_numpy(), rtol=1e-12
    )  # text round trip
    np.testing.assert_array_equal(data.treatment, df[TREAT].to_numpy().astype(np.int8))
    # the masked group is the one with the top confounding score (SpaCE's ranking): gmet_tmmx
    assert data.meta["missing_group"] == "gmet_tmmx"
    assert data.meta["covariate_names"] == ["bin_pop_density", "hpbf_poverty"]
    assert data.scores == {"smoothness": 0.83, "confounding_score": 0.04}
    # queen grid: 8 neighbours inside, 3 at corners; scored = the 7 x 7 interior
    deg = np.diff(data.adjacency.indptr)
    assert deg.max() == 8 and deg.min() == 3
    interior = (rows_cols.min(1) >= 1) & (rows_cols.max(1) <= 7)
    np.testing.assert_array_equal(data.scored, interior)
    # the truth is read from the Y_synth_0k / spill_Y_synth_0k columns over the interior
    t = data.truth()
    de = float((df["Y_synth_01"] - df["Y_synth_00"])[interior].mean())
    se = float((df["spill_Y_synth_01"] - df["spill_Y_synth_00"])[interior].mean())
    assert t["direct"] == pytest.approx(de) and t["spillover"] == pytest.approx(se)
    assert t["direct"] == pytest.approx(2.0) and t["spillover"] == pytest.approx(0.7)
    assert "erf" not in t  # no half-treated column in these folders
    assert data.meta["config"]["spaceenv"]["datatype"] == "grid"


def test_a_spatial_ci_folder_through_the_env_and_an_agent(tmp_path: Path) -> None:
    _write_spatial_ci_grid(tmp_path / "g", n=16, seed=1)
    env = gym.make("icml26/SpaCEInterference-v0", space_dir=str(tmp_path / "g"))
    obs, info = env.reset(seed=0)
    assert info["n_scored"] == 14 * 14 and obs["neighbors"].shape == (256, 8)
    agent = agents.make("sc-ols-exposure")
    _, _, _, _, res = env.step(agent.act(obs, info))
    # the fixture is unconfounded and linear in (A, e) (the masked covariate is independent noise
    # of sd 0.5): exposure OLS recovers both effects up to sampling error (SE of DE ~ 0.06 sd(Y))
    assert abs(res["direct_bias"]) < 0.2 and abs(res["spillover_bias"]) < 0.4


def test_an_original_space_folder_is_refused_for_lack_of_spillover_columns(tmp_path: Path) -> None:
    nx = pytest.importorskip("networkx")
    root = tmp_path / "healthd_dmgrcs_mortality_disc"
    root.mkdir()
    rng = np.random.default_rng(0)
    ids = [f"{1000 + i:05d}" for i in range(20)]  # county FIPS-like ids
    df = pd.DataFrame(
        {"qd_mean_pm25": rng.integers(0, 2, 20), "gmet_tmmx": rng.standard_normal(20)},
        index=pd.Index(ids, name="FIPS"),
    )
    df["Y_synth"] = rng.standard_normal(20)
    df["Y_synth_00"], df["Y_synth_01"] = df["Y_synth"] - 1, df["Y_synth"]
    df.to_csv(root / "synthetic_data.csv")
    g = nx.Graph()
    for i, node in enumerate(ids):
        g.add_node(node, lat=float(i), lon=float(-i))
    g.add_edges_from(zip(ids[:-1], ids[1:]))
    nx.write_graphml(g, root / "graph.graphml")
    with open(root / "metadata.yaml", "w") as f:
        yaml.dump(
            {
                "base_name": "healthd_dmgrcs_mortality_disc",
                "treatment": "qd_mean_pm25",
                "synthetic_outcome": "Y_synth",
                "covariates": ["gmet_tmmx"],
                "covariate_groups": ["gmet_tmmx"],
                "treatment_values": [0, 1],
                "confounding_score": {"gmet_tmmx": 0.1},
                "spatial_scores": {"gmet_tmmx": 0.5},
            },
            f,
            sort_keys=False,
        )
    with open(root / "config.yaml", "w") as f:
        yaml.dump({"spaceenv": {"base_name": "healthd_dmgrcs_mortality_disc"}}, f)
    with pytest.raises(SpaceFolderError, match="spill_Y_synth"):
        load_space_folder(root)
    # with spillover columns added it loads; coordinates (x, y) = (lon, lat) from the node attributes
    df["spill_Y_synth_00"], df["spill_Y_synth_01"] = df["Y_synth"], df["Y_synth"] + 0.5
    df.to_csv(root / "synthetic_data.csv")
    data = load_space_folder(root)
    np.testing.assert_array_equal(
        data.coords[:3], [[0.0, 0.0], [-1.0, 1.0], [-2.0, 2.0]]
    )  # (lon, lat)
    assert data.truth()["spillover"] == pytest.approx(0.5)
