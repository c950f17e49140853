"""The oracle env and the algorithms: convergence where theory says, divergence where it says,
the env path equal to the direct path, clear errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401  (registers the ids)
import icml26.agents
from icml26.agents.minmax_vi.algorithms import VIAlgorithmAgent, batch_size, run_direct
from icml26.benchmarks import get_task
from icml26.benchmarks.tasks.minmax_vi import run_trial
from icml26.envs.minmax_vi.problems import bilinear, weak_minty_quadratic

CP = [1_000, 10_000, 40_000]


def _direct(
    prob, alg: str, batch: str, noise: str, sigma1: float, calls: int = 40_000, reps: int = 8, **kw
):
    params = {"eta": 0.5, "batch": batch, "b0": 1.0, **kw}
    return run_direct(
        prob,
        alg,
        params,
        noise=noise,
        sigma0=0.1,
        sigma1=sigma1,
        oracle_budget=calls,
        seed=3,
        checkpoints=CP,
        replicates=reps,
    )


def test_seg_converges_on_a_monotone_bilinear_game_with_bounded_noise() -> None:
    prob = bilinear(n=5, seed=0)
    run = _direct(prob, "seg", "linear", "additive", 0.0)
    assert not run.diverged.any()
    start = prob.residual(prob.z0)
    assert np.median(run.residual[:, -1]) < 0.1 * start
    assert np.median(run.residual[:, -1]) < np.median(
        run.residual[:, 0]
    )  # still improving with the batches


def test_unbatched_extragradient_diverges_under_growing_variance_where_batched_fbf_converges() -> (
    None
):
    """The failure mode the paper removes (method card): with the random-operator noise the
    variance grows like |z - z*|^2; unbatched SEG and SGDA blow up, FBF with b_k = k + 1 converges."""
    prob = bilinear(n=5, seed=0)
    for alg in ("seg", "sgda", "ogda"):
        assert _direct(prob, alg, "constant", "operator", 1.0).diverged.all(), alg
    fbf = _direct(prob, "fbf", "linear", "operator", 1.0)
    assert not fbf.diverged.any()
    assert np.median(fbf.residual[:, -1]) < 0.15 * prob.residual(prob.z0)
    # ... and on the same game with bounded noise, unbatched SEG does not diverge
    assert not _direct(prob, "seg", "constant", "additive", 0.0, calls=10_000).diverged.any()


def test_paper_methods_converge_on_the_weak_minty_game() -> None:
    prob = weak_minty_quadratic(copies=3, rho=-0.1, seed=0)
    start = prob.residual(prob.z0)
    for alg in ("fbf", "km_fbf"):
        run = _direct(prob, alg, "linear", "operator", 1.0)
        assert not run.diverged.any() and np.median(run.residual[:, -1]) < 0.05 * start, alg


def test_env_path_equals_direct_path_for_the_same_seed() -> None:
    env = gym.make(
        "icml26/StochasticVI-v0",
        problem="bilinear",
        problem_kwargs={"n": 3, "seed": 2},
        noise="operator",
        sigma1=1.0,
        oracle_budget=3_000,
    )
    agent = VIAlgorithmAgent("fbf", batch="linear")
    agent.bind(env.observation_space, env.action_space)
    obs, info = env.reset(seed=17)
    agent.reset(17)
    while True:
        obs, reward, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            break
    direct = run_direct(
        env.unwrapped.problem,
        "fbf",
        agent.params,
        noise="operator",
        sigma0=0.1,
        sigma1=1.0,
        oracle_budget=3_000,
        seed=17,
    )
    assert info["oracle_calls"] == direct.oracle_calls == 3_000
    assert info["residual"] == direct.final_residual[0]
    assert reward == -info["residual"]


def test_batch_rules() -> None:
    assert [batch_size("constant", 2, k) for k in range(3)] == [2, 2, 2]
    assert [batch_size("linear", 1, k) for k in range(4)] == [1, 2, 3, 4]
    assert [batch_size("quadratic", 0.5, k) for k in range(4)] == [1, 2, 5, 8]
    with pytest.raises(ValueError, match="batch rule"):
        batch_size("cubic", 1, 0)


def test_task_trial_scores_divergence_and_convergence() -> None:
    task = get_task("minmax_vi/bilinear-growing")
    task = type(task).from_dict(
        {
            **task.to_dict(),
            "eval_episodes": 2,
            "budget": {**task.budget.to_dict(), "extra": {"oracle_calls": 20_000}},
        }
    )
    fbf = run_trial(task, icml26.agents.make("vi-fbf"), 0)
    seg = run_trial(task, icml26.agents.make("vi-seg"), 0)
    assert fbf.metrics["diverged"] == 0.0 and fbf.metrics["log10_residual"] < -0.5
    assert fbf.metrics["oracle_calls"] == 20_000
    assert seg.metrics["diverged"] == 1.0 and seg.metrics["log10_residual"] == 6.0


def test_env_rejects_misuse_and_bad_actions_clearly() -> None:
    env = gym.make("icml26/StochasticVI-v0", problem_kwargs={"n": 2}, oracle_budget=10).unwrapped
    good = np.zeros(9)
    good[-1] = 1
    with pytest.raises(RuntimeError, match="reset"):
        env.step(good)
    env.reset(seed=0)
    for bad, match in (
        (np.zeros(5), "shape"),
        (np.full(9, np.nan), "finite"),
        (np.r_[np.zeros(8), 0.0], "batch"),
        (np.r_[np.full(8, 2e6), 1.0], r"lie in"),
        ("abc", "expected an action"),
    ):
        with pytest.raises((ValueError, TypeError), match=match):
            env.step(bad)
    big = good.copy()
    big[-1] = 10
    *_, trunc, info = env.step(big)
    assert trunc and info["oracle_calls"] == 10
    with pytest.raises(RuntimeError, match="ended"):
        env.step(good)
    for kwargs, match in (
        ({"noise": "gauss"}, "noise"),
        ({"sigma1": -1.0}, "sigma1"),
        ({"oracle_budget": 0}, "oracle_budget"),
        ({"problem": "global_forsaken", "problem_kwargs": {}}, "linear problem"),
        ({"render_mode": "human"}, "render_mode"),
    ):
        with pytest.raises(ValueError, match=match):
            gym.make("icml26/StochasticVI-v0", **kwargs)
    with pytest.raises(ValueError, match="batch must be"):
        VIAlgorithmAgent(batch="cubic")
    with pytest.raises(ValueError, match="missing"):
        VIAlgorithmAgent().act(np.zeros(4), {})


def test_ansi_render_reports_calls_and_residual() -> None:
    env = gym.make("icml26/StochasticVI-v0", problem_kwargs={"n": 2}, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "oracle calls 0/100000" in text and "residual" in text
