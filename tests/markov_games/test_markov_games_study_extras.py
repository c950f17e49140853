"""The task extras the markov_games study sets: nested pools, data seeds, snapshots, off-support."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import icml26.agents as agents
import icml26.benchmarks as bm
from icml26.benchmarks.study import task_variant
from icml26.benchmarks.tasks.markov_games import run_trial
from icml26.envs.markov_games import collect_dataset, duality_gap, make_game, regularized_gap
from icml26.protocol import derive_seed

UNIFORM = bm.get_task("markov_games/random-uniform")
GAME = make_game(UNIFORM.env_kwargs["game"], **UNIFORM.env_kwargs["game_kwargs"])


def test_registered_tasks_draw_their_data_as_before() -> None:
    small = task_variant(UNIFORM, {"budget.dataset_size": 200, "eval_episodes": 0}, "small")
    out = run_trial(small, agents.make("rose"), seed=3)
    ds = collect_dataset(GAME, 200, "uniform", seed=derive_seed(3, "data"), eps=0.2, beta=0.1)
    rose = agents.make("rose")
    rose.learn(ds)
    assert out.metrics["gap"] == duality_gap(GAME, *rose.policy())
    assert out.extra["reg_gap"] == regularized_gap(
        GAME, *rose.policy(), 0.1, ds.reference_mu, ds.reference_nu
    )
    assert out.extra["learn_cpu_s"] >= 0 and out.extra["game_shape"] == {
        "H": 5,
        "S": 10,
        "A": 3,
        "B": 3,
    }


def test_a_pool_nests_the_data_and_data_seed_keys_seed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    over = {"extra.dataset_pool": 1000, "extra.data_seed": ["k", "uniform"], "eval_episodes": 0}
    outs = {}
    for n in (100, 400):
        t = task_variant(UNIFORM, {**over, "budget.dataset_size": n}, f"n={n}")
        outs[n] = run_trial(t, agents.make("mg-bc"), seed=1)
    pool = collect_dataset(
        GAME, 1000, "uniform", seed=derive_seed(1, "k", "uniform"), eps=0.2, beta=0.1
    )
    for n, out in outs.items():
        bc = agents.make("mg-bc")
        bc.learn(pool.head(n))
        assert out.metrics["gap"] == duality_gap(GAME, *bc.policy()) and out.extra["n"] == n
    assert len(list((tmp_path / "markov_games" / "datasets").glob("*.npz"))) == 1  # drawn once
    with pytest.raises(ValueError, match="dataset_pool 100 is smaller than n = 400"):
        run_trial(
            task_variant(
                UNIFORM, {**over, "extra.dataset_pool": 100, "budget.dataset_size": 400}, "x"
            ),
            agents.make("mg-bc"),
            seed=1,
        )


def test_snapshots_and_optimization_gap_are_recorded() -> None:
    t = task_variant(UNIFORM, {"budget.dataset_size": 300, "eval_episodes": 0}, "snap")
    out = run_trial(t, agents.make("sos-md", T=40, snapshots=(1, 10, 40)), seed=0)
    snaps = out.extra["snapshots"]
    assert list(snaps) == ["1", "10", "40"]
    assert snaps["1"]["opt"] > snaps["10"]["opt"] > snaps["40"]["opt"] >= 0
    # the last snapshot is the final policy: its optimization error is the agent's own
    assert snaps["40"]["opt"] == pytest.approx(out.extra["optimization_gap"], rel=1e-9, abs=1e-15)
    assert snaps["40"]["true_reg"] == pytest.approx(out.extra["reg_gap"], rel=1e-12)


def test_a_variant_without_the_reg_gap_metric_keeps_off_support_trials() -> None:
    restricted = bm.get_task("markov_games/random-reg-unilateral-restricted")
    t = task_variant(
        restricted, {"budget.dataset_size": 300, "eval_episodes": 0, "metrics": ["gap"]}, "gap"
    )
    out = run_trial(t, agents.make("mg-nash-vi"), seed=0)  # leaves the support
    assert np.isinf(out.extra["reg_gap"]) and np.isfinite(out.metrics["gap"])
    with pytest.raises(ValueError, match="infinite"):
        run_trial(
            task_variant(restricted, {"budget.dataset_size": 300, "eval_episodes": 0}, "reg"),
            agents.make("mg-nash-vi"),
            seed=0,
        )
