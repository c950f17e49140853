"""Simulator speed of the spatial_causal family against n, side by side with the peers.

For grids of n = 1e3 .. 1e5 units (and random geometric graphs) it times, in one run:

* ``simulate``: one whole data set (graph, sparse SPDE confounder, covariates, treatment,
  exposure, outcome, all counterfactuals, Moran's I and confounding scores);
* the confounder alone, three ways: our sparse SPDE/GMRF sampler (one sparse LU solve), the
  method card's dense exponential-kernel GP (scipy Cholesky, O(n^3) time and O(n^2) memory),
  and scikit-learn's ``GaussianProcessRegressor.sample_y`` (the library peer, SVD-based);
  dense samplers stop where they would take minutes or gigabytes.

Prints seconds, the peers' time divided by ours, and the log-log slope of ``simulate`` time
against n (1 = linear). Run: ``python perf/spatial_causal.py [--max-n 100000] [--repeats 3]``.
Absolute numbers depend on the machine (this one is shared); ratios from one run are robust.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from icml26.envs.spatial_causal import graphs  # noqa: E402
from icml26.envs.spatial_causal.fields import sample_confounder  # noqa: E402
from icml26.envs.spatial_causal.simulator import SimulationConfig, simulate  # noqa: E402

DENSE_MAX = 4096  # dense GP: 4096^2 doubles = 134 MB and a few seconds of Cholesky
SKLEARN_MAX = 2048  # sample_y goes through an SVD of the n x n covariance


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def sklearn_gp_sample(coords: np.ndarray, length_scale: float, seed: int) -> np.ndarray:
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import Matern

    # Matern nu = 1/2 is the exponential kernel exp(-d / length_scale)
    gp = GaussianProcessRegressor(kernel=Matern(length_scale=length_scale, nu=0.5), optimizer=None)
    return gp.sample_y(coords, n_samples=1, random_state=seed).ravel()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--max-n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sides = [s for s in (32, 64, 100, 178, 316) if s * s <= args.max_n]
    rows = []
    for side in tqdm(sides, desc="grid sizes"):
        n = side * side
        coords, adj = graphs.grid_graph(side, side)
        cfg = SimulationConfig(n_rows=side, n_cols=side, confounder="spde")
        rgg = SimulationConfig(graph="rgg", n_units=n, confounder="spde")

        def sim(c: SimulationConfig = cfg) -> object:
            return simulate(c, np.random.default_rng(0))

        def field(kind: str, c: np.ndarray = coords, a: object = adj) -> np.ndarray:
            return sample_confounder(kind, c, a, np.random.default_rng(0), 8.0)  # type: ignore[arg-type]

        t_sim = best_of(sim, args.repeats)
        t_rgg = best_of(lambda c=rgg: sim(c), args.repeats)
        t_spde = best_of(lambda: field("spde"), args.repeats)
        t_dense = best_of(lambda: field("gp"), args.repeats) if n <= DENSE_MAX else float("nan")
        t_skl = (
            best_of(lambda c=coords: sklearn_gp_sample(c, 8.0, 0), max(1, args.repeats - 1))
            if n <= SKLEARN_MAX
            else float("nan")
        )
        rows.append((n, t_sim, t_rgg, t_spde, t_dense, t_skl))

    print("\nspatial_causal simulator: best of", args.repeats, "runs, seconds (OMP_NUM_THREADS=1)")
    print(
        f"{'n':>7} {'simulate grid':>14} {'simulate rgg':>13} {'U: spde':>9} {'U: dense GP':>12} "
        f"{'U: sklearn':>11} {'dense/spde':>11} {'sklearn/spde':>13}"
    )
    for n, ts, tr, tsp, td, tk in rows:
        print(
            f"{n:>7} {ts:>14.3f} {tr:>13.3f} {tsp:>9.4f} {td:>12.3f} {tk:>11.3f} "
            f"{td / tsp:>11.0f} {tk / tsp:>13.0f}"
        )
    ns = np.array([r[0] for r in rows], dtype=float)
    if len(ns) >= 2:
        for name, col in (("simulate grid", 1), ("simulate rgg", 2), ("U: spde", 3)):
            t = np.array([r[col] for r in rows])
            slope = np.polyfit(np.log(ns), np.log(t), 1)[0]
            print(f"log-log slope of {name} time vs n: {slope:.2f}")
        dense = [(r[0], r[4]) for r in rows if np.isfinite(r[4])]
        if len(dense) >= 2:
            d = np.array(dense)
            print(
                f"log-log slope of dense GP time vs n: {np.polyfit(np.log(d[:, 0]), np.log(d[:, 1]), 1)[0]:.2f}"
            )


if __name__ == "__main__":
    main()
