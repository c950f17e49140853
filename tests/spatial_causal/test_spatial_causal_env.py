"""``icml26/SpaCEInterference-v0``: rewards, bad input, hidden confounder, SpaCE folder adapter."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import yaml

import icml26  # noqa: F401
from icml26.envs.spatial_causal.space_folder import SpaceFolderError, load_space_folder

ENV_ID = "icml26/SpaCEInterference-v0"
SMALL = {"n_rows": 10, "n_cols": 10, "confounder": "gp", "length_scale": 3.0}


def test_reward_is_minus_normalized_error_and_truth_in_info() -> None:
    env = gym.make(ENV_ID, **SMALL)
    obs, info = env.reset(seed=4)
    assert "confounder" not in info and "confounder" not in obs
    assert set(obs) == {
        "coords",
        "covariates",
        "treatment",
        "outcome",
        "neighbors",
        "scored",
        "radius",
    }
    assert obs in env.observation_space
    data = env.unwrapped._data
    t = data.truth()
    sd = float(np.std(obs["outcome"][obs["scored"].astype(bool)]))
    _, r, term, trunc, step_info = env.step(
        {
            "direct": t["direct"] + 0.2 * sd,
            "spillover": t["spillover"] - 0.1 * sd,
            "erf": t["erf"] + 0.3 * sd,
        }
    )
    assert term and not trunc
    assert r == pytest.approx(-(0.2 + 0.1) / 2)
    assert step_info["direct_bias"] == pytest.approx(0.2) and step_info[
        "spillover_bias"
    ] == pytest.approx(-0.1)
    assert step_info["erf_error"] == pytest.approx(0.3)
    assert step_info["truth"]["direct"] == pytest.approx(t["direct"])
    # the truth is the mean over the scored units of the counterfactual contrasts
    s = obs["scored"].astype(bool)
    assert t["direct"] == pytest.approx(np.mean(data.y_own[s, 1] - data.y_own[s, 0]))
    assert t["spillover"] == pytest.approx(np.mean(data.y_nbr[s, 1] - data.y_nbr[s, 0]))


@pytest.mark.parametrize(
    "action, err, match",
    [
        ({"direct": 1.0}, ValueError, "missing the estimate"),
        ({"direct": None, "spillover": 1.0}, ValueError, "missing the estimate"),
        ({"direct": np.nan, "spillover": 0.0}, ValueError, "finite"),
        ({"direct": 1.0, "spillover": np.inf}, ValueError, "finite"),
        ({"direct": [1.0, 2.0], "spillover": 0.0}, ValueError, r"shape \(2,\)"),
        ({"direct": 1.0, "spillover": 0.0, "erf": [1.0, 2.0]}, ValueError, "erf"),
        ({"direct": 1.0, "spillover": 0.0, "ate": 1.0}, ValueError, "unknown action key"),
        ({"direct": "big", "spillover": 0.0}, TypeError, "numeric"),
        ([1.0, 0.5], TypeError, "expected a dict"),
    ],
)
def test_bad_estimates_get_clear_errors_and_change_nothing(
    action: object, err: type, match: str
) -> None:
    env = gym.make(ENV_ID, **SMALL)
    env.reset(seed=0)
    with pytest.raises(err, match=match):
        env.step(action)
    # the episode is intact: a valid step still scores the same data set
    _, r, term, _, _ = env.step({"direct": 1.0, "spillover": 0.5})
    assert term and np.isfinite(r)


def test_step_needs_reset_and_episode_is_one_step() -> None:
    env = gym.make(ENV_ID, **SMALL).unwrapped
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"direct": 0.0, "spillover": 0.0})
    env.reset(seed=1)
    env.step({"direct": 0.0, "spillover": 0.0})
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"direct": 0.0, "spillover": 0.0})


def test_reveal_confounder_and_variants() -> None:
    env = gym.make(ENV_ID, reveal_confounder=True, **SMALL)
    _, info = env.reset(seed=2)
    assert info["confounder"].shape == (100,)
    assert 0 < info["smoothness"] < 1 and info["confounding_score"] >= 0
    env = gym.make(ENV_ID, variant="misspec_radius", **SMALL)
    obs, _ = env.reset(seed=0)
    assert int(obs["radius"]) == 1
    _, _, _, _, inf = env.step({"direct": 0.0, "spillover": 0.0})
    assert inf["dgp_radius"] == 2
    rgg = gym.make(ENV_ID, graph="rgg", n_units=150, confounder="gp")
    obs, _ = rgg.reset(seed=0)
    assert obs["neighbors"].shape == (150, 8) and obs in rgg.observation_space
    with pytest.raises(ValueError, match="unknown variant"):
        gym.make(ENV_ID, variant="hard")


# ----------------------------------------------------------------------------- SpaCE folders


def _write_space_folder(
    root: Path, fmt: str = "parquet", graph: str = "tar", binary: bool = True
) -> dict:
    """A 6 x 6 grid SpaCE env folder in Spatial-CI's layout, with hand-known counterfactuals."""
    rng = np.random.default_rng(0)
    n_r, n_c = 6, 6
    ids = [f"{r}_{c}" for r in range(n_r) for c in range(n_c)]
    n = len(ids)
    trt_vals = [2.0, 5.0]
    trt = rng.choice(trt_vals if binary else [1.0, 2.0, 3.0], size=n)
    cov = rng.standard_normal((n, 3))
    resid = rng.standard_normal(n)
    y_own = np.stack([cov[:, 0] + resid, cov[:, 0] + 1.5 + resid], 1)
    y_nbr = np.stack([cov[:, 0] + resid - 0.2, cov[:, 0] + resid + 0.7], 1)
    df = pd.DataFrame(
        {
            "trt": trt,
            "c1": cov[:, 0],
            "c2": cov[:, 1],
            "c3": cov[:, 2],
            "Y_synth": cov[:, 0] + resid + 0.3,
            "Y_synth_00": y_own[:, 0],
            "Y_synth_01": y_own[:, 1],
            "spill_Y_synth_00": y_nbr[:, 0],
            "spill_Y_synth_01": y_nbr[:, 1],
            "spill_half_Y_synth": y_nbr.mean(1),
            "spill_Y_synth_01_0_1": 0.0,
        },
        index=pd.Index(ids, name="node"),
    )
    root.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        df.to_parquet(root / "synthetic_data.parquet")
    else:
        df.to_csv(root / "synthetic_data.csv")
    edges = [
        (f"{r}_{c}", f"{r + dr}_{c + dc}")
        for r in range(n_r)
        for c in range(n_c)
        for dr, dc in ((0, 1), (1, -1), (1, 0), (1, 1))
        if 0 <= r + dr < n_r and 0 <= c + dc < n_c
    ]
    if graph == "tar":
        with tarfile.open(root / "graph.tar.gz", "w:gz") as tar:
            for name, frame in (
                ("edges", pd.DataFrame(edges, columns=["source", "target"])),
                ("coords", pd.DataFrame({"lon": np.arange(n, dtype=float), "lat": 0.0}, index=ids)),
            ):
                buf = io.BytesIO()
                frame.to_parquet(buf)
                info = tarfile.TarInfo(f"graph/{name}.parquet")
                info.size = buf.getbuffer().nbytes
                buf.seek(0)
                tar.addfile(info, buf)
    else:
        nodes = "".join(
            f'<node id="{i}"><data key="x">{k % 6}.5</data><data key="y">{k // 6}</data></node>'
            for k, i in enumerate(ids)
        )
        es = "".join(f'<edge source="{a}" target="{b}"/>' for a, b in edges)
        (root / "graph.graphml").write_text(
            '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
            '<key id="x" for="node" attr.name="x" attr.type="double"/>'
            '<key id="y" for="node" attr.name="y" attr.type="double"/>'
            f'<graph edgedefault="undirected">{nodes}{es}</graph></graphml>'
        )
    meta = {
        "base_name": "toy_grid_rad1" if graph == "tar" else "toy_graph_rad1",
        "treatment": "trt",
        "synthetic_outcome": "Y_synth",
        "covariates": ["c1", "c2", "c3"],
        "treatment_values": trt_vals if binary else [1.0, 2.0, 3.0],
        "covariate_groups": ["c1", {"grp": ["c2", "c3"]}],
        "confounding_score": {"grp": 0.4, "c1": 0.1},
        "confounding_score_ate": {"grp": 0.25, "c1": 0.05},
        "spatial_scores": {"c1": 0.1, "c2": 0.7, "c3": 0.6},
        "radius": 1,
    }
    (root / "metadata.yaml").write_text(yaml.safe_dump(meta))
    (root / "config.yaml").write_text(yaml.safe_dump({"spaceenv": "toy", "seed": 1}))
    return {"df": df, "y_own": y_own, "y_nbr": y_nbr, "trt": trt, "cov": cov}


def test_space_folder_grid_served_through_the_env(tmp_path: Path) -> None:
    src = _write_space_folder(tmp_path / "toy")
    env = gym.make(ENV_ID, space_dir=str(tmp_path / "toy"))
    obs, info = env.reset(seed=0)
    assert obs in env.observation_space
    assert info["source"].startswith("space:")
    assert info["smoothness"] == pytest.approx(0.6) and info["confounding_score"] == pytest.approx(
        0.25
    )
    # group 'grp' (highest confounding score) is masked: only c1 is observed
    assert np.allclose(obs["covariates"][:, 0], src["cov"][:, 0]) and obs["covariates"].shape == (
        36,
        1,
    )
    assert np.array_equal(obs["treatment"], (src["trt"] == 5.0).astype(np.int8))
    scored = obs["scored"].astype(bool).reshape(6, 6)
    assert scored[1:5, 1:5].all() and scored.sum() == 16  # interior units, full queen ball
    assert np.array_equal(obs["coords"][7], [1.0, 1.0])  # node "1_1" -> (col, row)
    assert (obs["neighbors"][14] >= 0).sum() == 8
    s = scored.ravel()
    de = float(np.mean(src["y_own"][s, 1] - src["y_own"][s, 0]))
    se = float(np.mean(src["y_nbr"][s, 1] - src["y_nbr"][s, 0]))
    assert de == pytest.approx(1.5) and se == pytest.approx(0.9)
    _, r, *_, step_info = env.step({"direct": de, "spillover": se})
    assert r == pytest.approx(0.0, abs=1e-12)
    assert step_info["truth"]["erf"][1] == pytest.approx(np.mean(src["y_nbr"][s].mean(1)))


def test_space_folder_graphml_and_csv(tmp_path: Path) -> None:
    _write_space_folder(tmp_path / "g", fmt="csv", graph="graphml")
    data = load_space_folder(tmp_path / "g", missing_group="c1")
    assert data.covariates.shape == (36, 2)  # c2, c3 observed
    assert data.coords[7].tolist() == [1.5, 1.0]
    assert data.scored.all()  # non-grid graphs: every unit with a neighbour


def test_space_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(SpaceFolderError, match="does not exist"):
        load_space_folder(tmp_path / "nope")
    _write_space_folder(tmp_path / "cont", binary=False)
    with pytest.raises(SpaceFolderError, match="binary"):
        load_space_folder(tmp_path / "cont")
    _write_space_folder(tmp_path / "nograph")
    (tmp_path / "nograph" / "graph.tar.gz").unlink()
    with pytest.raises(SpaceFolderError, match="graph"):
        load_space_folder(tmp_path / "nograph")
    _write_space_folder(tmp_path / "badgroup")
    with pytest.raises(SpaceFolderError, match="unknown covariate group"):
        load_space_folder(tmp_path / "badgroup", missing_group="c9")
    with pytest.raises(ValueError, match="space_dir"):
        gym.make(ENV_ID, space_dir=str(tmp_path / "badgroup"), n_rows=5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"graph": "rgg", "n_units": 120, "confounder": "gp"},
        {
            "graph": "holes",
            "n_rows": 16,
            "n_cols": 16,
            "hole_fraction": 0.05,
            "n_holes": 2,
            "confounder": "icar",
            "variant": "radius2",
        },
        {"n_rows": 9, "n_cols": 9, "variant": "singlecause20", "adjacency": "rook"},
    ],
)
def test_conformance_of_other_graphs_and_variants(kwargs: dict) -> None:
    from icml26.envs.spatial_causal.env import SpaCEInterferenceEnv
    from icml26.testing import check_env_conformance

    check_env_conformance(lambda: SpaCEInterferenceEnv(**kwargs), steps=6)


def test_conformance_of_a_space_folder_env(tmp_path: Path) -> None:
    from icml26.envs.spatial_causal.env import SpaCEInterferenceEnv
    from icml26.testing import check_env_conformance

    _write_space_folder(tmp_path / "toy")
    check_env_conformance(lambda: SpaCEInterferenceEnv(space_dir=str(tmp_path / "toy")), steps=6)
