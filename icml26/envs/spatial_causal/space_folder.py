"""Read a SpaCE / Spatial-CI env folder that is already on disk, without spacebench or a network.

``spacebench.SpaceEnv`` contacts Harvard Dataverse even for local data and ``import spacebench``
pulls torch_geometric; this reader follows the folder layout that Spatial-CI's
``benchmarks/sci/env.py`` reads and ``space-data/train_spaceenv.py`` writes:

* ``config.yaml`` (the env's "birth certificate"; kept as metadata)
* ``metadata.yaml``: ``base_name``, ``treatment``, ``treatment_values``, ``covariates``,
  ``covariate_groups``, ``confounding_score`` (+ ``_ate``/``_erf``/``_ite``), ``spatial_scores``,
  ``radius``
* ``synthetic_data.{csv,tab,parquet}``: index = node id; the treatment and covariate columns;
  ``Y_synth`` (outcome); ``Y_synth_<k>`` (own treatment set to value k, neighbours observed);
  ``spill_Y_synth_<k>`` (every neighbour within the radius set to value k); optionally
  ``spill_half_Y_synth`` (half of the neighbours treated). All share the same residual.
* ``graph.graphml`` / ``graph.graphml.gz`` (node attributes give coordinates on non-grid
  graphs) or ``graph.tar.gz`` holding ``graph/edges.parquet`` and ``graph/coords.parquet``.

On grids (``"grid"`` in ``base_name``) node ids are ``"<row>_<col>"`` and only interior units
with a full radius-r neighbourhood are scored (as Spatial-CI does). Needs the optional extra
``spacebench`` (pyyaml; pyarrow for parquet).
"""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from icml26._entry_points import require
from icml26.envs.spatial_causal import graphs
from icml26.envs.spatial_causal.simulator import SpatialCausalData

__all__ = ["load_space_folder", "SpaceFolderError"]


class SpaceFolderError(ValueError):
    """The folder is not a readable SpaCE env folder; the message says what is missing."""


def _read_yaml(path: Path) -> dict[str, Any]:
    yaml = require("yaml", "spacebench", "reading a SpaCE env folder")
    if not path.is_file():
        raise SpaceFolderError(f"SpaCE folder {path.parent}: missing {path.name}")
    with path.open() as f:
        out = yaml.safe_load(f)
    if not isinstance(out, dict):
        raise SpaceFolderError(f"{path}: expected a YAML mapping, got {type(out).__name__}")
    return out


def _read_table(folder: Path) -> Any:
    import pandas as pd

    for name, reader in (
        ("synthetic_data.parquet", lambda p: pd.read_parquet(p)),
        ("synthetic_data.csv", lambda p: pd.read_csv(p, index_col=0, dtype={0: str})),
        ("synthetic_data.tab", lambda p: pd.read_csv(p, sep="\t", index_col=0, dtype={0: str})),
    ):
        p = folder / name
        if p.is_file():
            if name.endswith("parquet"):
                require("pyarrow", "spacebench", "reading synthetic_data.parquet")
            df = reader(p)
            df.index = df.index.astype(str)
            return df
    raise SpaceFolderError(
        f"SpaCE folder {folder}: no synthetic_data.parquet, synthetic_data.csv or synthetic_data.tab"
    )


def _parse_graphml(raw: bytes) -> tuple[list[tuple[str, str]], dict[str, tuple[float, float]]]:
    """Edges and (x, y) / (longitude, latitude) node attributes of a GraphML document."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(raw)
    ns = root.tag[: root.tag.index("}") + 1] if root.tag.startswith("{") else ""
    key_names = {k.get("id"): k.get("attr.name") for k in root.iter(f"{ns}key")}
    edges, coords = [], {}
    for node in root.iter(f"{ns}node"):
        attrs = {
            key_names.get(d.get("key"), d.get("key")): (d.text or "")
            for d in node.findall(f"{ns}data")
        }
        for kx, ky in (("x", "y"), ("longitude", "latitude"), ("lon", "lat")):
            if kx in attrs and ky in attrs:
                coords[str(node.get("id"))] = (float(attrs[kx]), float(attrs[ky]))
                break
        else:
            if (
                len(attrs) == 2
            ):  # SpaCE reads a node's two attribute values, in order, as coordinates
                try:
                    first, second = (float(v) for v in attrs.values())
                except ValueError:
                    continue
                coords[str(node.get("id"))] = (first, second)
    for edge in root.iter(f"{ns}edge"):
        edges.append((str(edge.get("source")), str(edge.get("target"))))
    return edges, coords


def _read_graph(folder: Path) -> tuple[list[tuple[str, str]], dict[str, tuple[float, float]]]:
    """Edges (node-id pairs) and node coordinates (may be empty) from the graph file."""
    for name in ("graph.graphml", "graph.graphml.gz"):
        p = folder / name
        if p.is_file():
            raw = gzip.decompress(p.read_bytes()) if name.endswith(".gz") else p.read_bytes()
            return _parse_graphml(raw)
    p = folder / "graph.tar.gz"
    if p.is_file():
        import pandas as pd

        require("pyarrow", "spacebench", "reading graph.tar.gz (parquet inside)")
        with tarfile.open(p, "r:gz") as tar:
            try:
                edges = pd.read_parquet(io.BytesIO(tar.extractfile("graph/edges.parquet").read()))  # type: ignore[union-attr]
                coords_df = pd.read_parquet(
                    io.BytesIO(tar.extractfile("graph/coords.parquet").read())
                )  # type: ignore[union-attr]
            except KeyError as e:
                raise SpaceFolderError(
                    f"{p}: expected graph/edges.parquet and graph/coords.parquet ({e})"
                ) from None
        coords = {}
        if coords_df.shape[1] >= 2:
            for node, row in zip(coords_df.index.astype(str), coords_df.to_numpy()[:, :2]):
                coords[node] = (float(row[0]), float(row[1]))
        return [(str(a), str(b)) for a, b in edges.to_numpy()[:, :2]], coords
    raise SpaceFolderError(f"SpaCE folder {folder}: no graph.graphml(.gz) or graph.tar.gz")


def _cf_columns(columns: list[str], pattern: str) -> list[str]:
    cols = [c for c in columns if re.fullmatch(pattern, c)]
    return sorted(cols, key=lambda c: int(c.rsplit("_", 1)[-1]))


def load_space_folder(  # noqa: C901
    path: str | Path, missing_group: str | None = None, radius: int | None = None
) -> SpatialCausalData:
    """Load a SpaCE env folder as a :class:`SpatialCausalData` (binary treatments only).

    ``missing_group``: the covariate group masked as the unmeasured confounder (default: the
    group with the highest ``confounding_score`` in metadata.yaml, SpaCE's ranking).
    ``radius``: the neighbourhood radius shown to agents (default: metadata ``radius``).
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise SpaceFolderError(f"SpaCE folder {folder} does not exist or is not a directory")
    config = _read_yaml(folder / "config.yaml")
    meta = _read_yaml(folder / "metadata.yaml")
    for key in ("treatment", "covariates", "treatment_values"):
        if key not in meta:
            raise SpaceFolderError(f"{folder / 'metadata.yaml'}: missing key {key!r}")
    tvals = sorted(float(v) for v in meta["treatment_values"])
    if len(tvals) != 2:
        raise SpaceFolderError(
            f"{folder}: only binary treatments are supported (direct/spillover effects of 0 -> 1); "
            f"treatment_values has {len(tvals)} values"
        )
    df = _read_table(folder)
    columns = [str(c) for c in df.columns]
    outcome_col = str(meta.get("synthetic_outcome", "Y_synth"))
    needed = [str(meta["treatment"]), outcome_col]
    missing_cols = [c for c in needed if c not in columns]
    if missing_cols:
        raise SpaceFolderError(f"{folder}: synthetic data lacks column(s) {missing_cols}")
    own_cols = _cf_columns(columns, r"Y_synth_\d+")
    nbr_cols = _cf_columns(columns, r"spill_Y_synth_\d+")
    if len(own_cols) != 2 or len(nbr_cols) != 2:
        raise SpaceFolderError(
            f"{folder}: expected two Y_synth_<k> and two spill_Y_synth_<k> counterfactual columns, "
            f"found {own_cols} and {nbr_cols}"
        )

    # covariate groups: a group is a name or {name: [columns]} (SpaCE metadata)
    groups: dict[str, list[str]] = {}
    for g in meta.get("covariate_groups", meta["covariates"]):
        if isinstance(g, dict):
            groups.update({str(k): [str(c) for c in v] for k, v in g.items()})
        else:
            groups[str(g)] = [str(g)]
    if missing_group is None:
        cs_all = {
            str(k): float(v)
            for k, v in (meta.get("confounding_score") or {}).items()
            if str(k) in groups
        }
        missing_group = max(cs_all, key=cs_all.__getitem__) if cs_all else next(iter(groups))
    if missing_group not in groups:
        raise SpaceFolderError(
            f"{folder}: unknown covariate group {missing_group!r}; groups: {sorted(groups)}"
        )
    masked = set(groups[missing_group])
    obs_cols = [str(c) for c in meta["covariates"] if str(c) not in masked]

    ids = list(df.index)
    pos = {node: i for i, node in enumerate(ids)}
    edges, node_coords = _read_graph(folder)
    e = np.array(
        [(pos[a], pos[b]) for a, b in edges if a in pos and b in pos and a != b], dtype=np.int64
    )
    n = len(ids)
    adj = sp.csr_matrix(
        (np.ones(len(e)), (e[:, 0], e[:, 1])) if len(e) else ([], ([], [])), shape=(n, n)
    )
    adj = ((adj + adj.T) > 0).astype(np.float64).tocsr()

    is_grid = "grid" in str(meta.get("base_name", ""))
    r = int(radius if radius is not None else meta.get("radius", 1))
    if is_grid:
        try:
            rc = np.array([[int(v) for v in node.split("_")[:2]] for node in ids], dtype=np.float64)
        except ValueError:
            raise SpaceFolderError(
                f"{folder}: grid node ids must look like '<row>_<col>', got {ids[0]!r}"
            ) from None
        coords = rc[:, ::-1].copy()  # (x, y) = (col, row)
        size = np.diff(graphs.hop_ball(adj, r).indptr)
        deg_max = int(np.diff(adj.indptr).max()) if n else 0
        full = (2 * r + 1) ** 2 - 1 if deg_max > 4 else 2 * r * (r + 1)
        scored = size == full
    else:
        if len(node_coords) < n:
            raise SpaceFolderError(
                f"{folder}: the graph file gives coordinates for {len(node_coords)} of {n} nodes"
            )
        coords = np.array([node_coords[node] for node in ids], dtype=np.float64)
        scored = np.diff(adj.indptr) > 0
    if not scored.any():
        raise SpaceFolderError(f"{folder}: no unit has a full radius-{r} neighbourhood to score")

    t = df[str(meta["treatment"])].to_numpy()
    treatment = (
        (t == tvals[1]).astype(np.int8) if not np.isin(t, [0, 1]).all() else t.astype(np.int8)
    )
    x = df[obs_cols].to_numpy(dtype=np.float64) if obs_cols else np.zeros((n, 0))
    if not np.isfinite(x).all():
        raise SpaceFolderError(f"{folder}: covariates contain NaN or inf")
    width = max(1, int(np.diff(adj.indptr).max()))
    data = SpatialCausalData(
        coords=coords,
        adjacency=adj,
        covariates=x,
        treatment=treatment,
        outcome=df[outcome_col].to_numpy(dtype=np.float64),
        scored=scored,
        radius=r,
        table_width=width,
        y_own=df[own_cols].to_numpy(dtype=np.float64),
        y_nbr=df[nbr_cols].to_numpy(dtype=np.float64),
        y_half=df["spill_half_Y_synth"].to_numpy(dtype=np.float64)
        if "spill_half_Y_synth" in columns
        else None,
        dgp_radius=int(meta.get("radius", r)),
        meta={
            "source": str(folder),
            "missing_group": missing_group,
            "base_name": meta.get("base_name"),
            "config": config,
            "covariate_names": obs_cols,
        },
    )
    cs = meta.get("confounding_score_ate") or {}
    sm = meta.get("spatial_scores") or {}
    scores: dict[str, float] = {}
    group_smooth = [float(sm[c]) for c in groups[missing_group] if c in sm]
    if group_smooth:  # SpaCE: the least smooth column of the masked group
        scores["smoothness"] = min(group_smooth)
    if missing_group in cs:
        scores["confounding_score"] = float(cs[missing_group])
    data.scores = scores
    return data
