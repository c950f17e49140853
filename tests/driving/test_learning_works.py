"""Learning works on ScenePilot-v1 (ego ``idm``) and v2 (its default ego ``human``): on scenario 5
(red-light running) ScenePilot and the risk-only PPO raise the ego's collision rate far above a
random adversary within a CI-sized budget.

The adversary uses the release's 2-D action ([acc, steer], ``action="acc_steer"``). With the 1-D
target-speed action the per-step Gaussian noise averages out over the ~60 steps before the
crossing, so the colliding speed band (about +-0.1 around a = -0.5, see docs/results/driving_v1.md)
is never sampled from the initial mean and there is no gradient to follow at this budget.
Budget: Phi phase of 60 episodes, then 64 PPO updates of 256 steps (the k curriculum walked once,
8 updates per k), lr 1e-3 with 4 epochs (the release's 1e-4 / 1 epoch scaled to the budget).

At this budget a single training seed is not a test of learning: the deterministic policy's
collision rate over 100 episodes ranges from 0 to 68% across seeds (v2, ego ``human``, one
thread: ScenePilot 33, 1, 0, 33, 33, 30; risk-only 0, 26, 0, 14, 68, 9), and which seeds fail
moves with the last bits of the arithmetic (one thread or two, AVX2 or AVX-512). The test pools
six training seeds: 600 episodes of learned adversaries against 100 of the random one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from scipy.stats import fisher_exact

from icml26.agents.driving import pipeline

KW = {"action": "acc_steer"}
EPISODES = 100
TRAIN_SEEDS = range(6)
VERSIONS = {"v1": "idm", "v2": "human"}  # env version -> ego planner


class _Random2D:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def start(self, n: int, scenario: int) -> None:
        pass

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.uniform(-1.0, 1.0, size=(len(obs), 2)).astype(np.float32)


@contextmanager
def _env_version(version: str) -> Iterator[None]:
    before = pipeline.env_version()
    pipeline.set_env_version(version)
    try:
        yield
    finally:
        pipeline.set_env_version(before)


@pytest.fixture(scope="module", params=sorted(VERSIONS))
def phi(request):
    version = request.param
    with _env_version(version):
        predictor, report = pipeline.phi_phase(
            5, VERSIONS[version], seed=0, episodes=60, test_episodes=20
        )
    assert report["auroc_test"] > 0.9
    return version, predictor


def _rate(policy, planner: str) -> tuple[int, int]:
    rows = pipeline.evaluate(policy, 5, planner, seed=5, episodes=EPISODES, env_kwargs=KW)
    return int(sum(r["collision"] for r in rows)), len(rows)


@pytest.mark.slow
@pytest.mark.parametrize("risk_only", [False, True], ids=["scenepilot", "ppo-risk"])
def test_adversary_learns_to_collide(phi, risk_only: bool) -> None:
    version, predictor = phi
    planner = VERSIONS[version]
    per_seed = []
    with _env_version(version):
        for seed in TRAIN_SEEDS:
            agent, stats = pipeline.train_adversary(
                5,
                planner,
                predictor,
                seed=seed,
                risk_only=risk_only,
                lr=1e-3,
                update_epochs=4,
                env_kwargs=KW,
            )
            assert stats["final_k"] == pytest.approx(0.35)
            per_seed.append(_rate(pipeline.batched_policy("actor", agent), planner)[0])
        k_rand, n = _rate(_Random2D(0), planner)
    k_learn, m = sum(per_seed), n * len(per_seed)
    # well above random: at least 10 points more, pooled, and Fisher's exact test at 1%
    assert k_learn / m >= k_rand / n + 0.1, (version, per_seed, k_rand)
    _, p = fisher_exact([[k_learn, m - k_learn], [k_rand, n - k_rand]], alternative="greater")
    assert p < 0.01, (version, per_seed, p)
    # not one lucky seed: at least two of the six beat random's rate by 10 points on their own
    assert sum(k / n >= k_rand / n + 0.1 for k in per_seed) >= 2, per_seed
