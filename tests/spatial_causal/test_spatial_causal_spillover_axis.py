"""The spillover axis of the spatial_causal study (issue 40): the sweep, the crossover rule, the
bias share of exposure-mapping OLS, and the claims' order (the relative claim first)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from icml26.benchmarks.studies import spatial_causal as sc
from icml26.benchmarks.study import Compare
from icml26.envs.spatial_causal.simulator import SimulationConfig, simulate


def _row(g: float, diff: float, p: float) -> dict[str, object]:
    return {"g": g, "vs_null": SimpleNamespace(diff=diff), "p_null": p}


def test_crossover_interpolates_the_sign_change_in_log_size_and_names_the_significant_sizes() -> (
    None
):
    rows = [_row(0.25, 0.2, 0.01), _row(0.5, 0.1, 0.3), _row(1.0, -0.1, 0.2), _row(2.0, -0.5, 0.01)]
    c = sc.crossover(rows)
    # +0.1 at 0.5 and -0.1 at 1: halfway in log size, sqrt(0.5 * 1)
    assert c["zero"] == pytest.approx(math.sqrt(0.5))
    assert c["significant"] == [2.0]  # 0.25 is significant but in the null's favour
    assert "0.71" in c["text"] and "from spillover size 2 on" in c["text"]
    never = sc.crossover([_row(0.5, 0.1, 0.01), _row(1.0, 0.05, 0.5)])
    assert never["zero"] is None and never["significant"] == []
    assert "does not change sign" in never["text"]
    assert sc.crossover([_row(0.25, -0.1, 0.5), _row(0.5, -0.2, 0.5)])["zero"] == 0.25


def test_bias_share_is_the_ratio_of_mean_biases_on_the_same_data_sets() -> None:
    cell = {
        sc.DECONF: {
            0: {"spillover_bias": 0.2},
            1: {"spillover_bias": 0.4},
            2: {"spillover_bias": 0.3},
        },
        sc.EXPOSURE: {
            0: {"spillover_bias": 1.0},
            1: {"spillover_bias": 2.0},
            2: {"spillover_bias": 1.5},
        },
    }
    est, lo, hi = sc.bias_share(cell, sc.DECONF)
    assert est == pytest.approx(0.9 / 4.5)
    assert lo <= est <= hi and hi - lo < 1e-9  # every resample has the same ratio here
    assert sc.bias_share(cell, "sc-oracle") is None
    assert sc._share((0.2, 0.1, 0.3)) == "20% [10, 30]"


def test_the_study_sweeps_the_spillover_size_on_grid_r1_and_leads_with_the_relative_claims() -> (
    None
):
    block = sc.SPATIAL_CAUSAL.block(sc.SPILL_BLOCK)
    assert block.task == "spatial_causal/grid-r1" and block.ladder
    assert block.sweep is not None and block.sweep.path == "env_kwargs.spillover_effect"
    assert set(block.sweep.values) >= {0.25, 0.5, 1.0, 2.0}
    assert [a.label for a in block.arms or ()] == sc.SWEEP_AGENTS
    first = [c for c in sc.SPATIAL_CAUSAL.claims if isinstance(c, Compare)][:2]
    assert [c.b for c in first] == ["sc-spatialplus", "sc-ols-exposure"]
    spill = [c.at for c in sc.SPATIAL_CAUSAL.claims if c.id.startswith("beats-null-spillover-")]
    assert sorted(spill) == [g for g in block.sweep.values if g != 0.5]


def test_the_simulators_true_spillover_effect_is_the_swept_coefficient() -> None:
    """Along the axis the true SE is exactly gamma (exposure s(e) moves from 0 to 1), so the
    null's error |SE| / sd(Y) grows with gamma."""
    truths = []
    for g in (0.25, 1.0, 4.0):
        data = simulate(
            SimulationConfig(n_rows=12, n_cols=12, spillover_effect=g), np.random.default_rng(0)
        )
        se = data.truth()["spillover"]
        truths.append((g, se, abs(se) / data.sd_y))
    assert [t[1] for t in truths] == pytest.approx([0.25, 1.0, 4.0])
    assert truths[0][2] < truths[1][2] < truths[2][2]
