"""Learning works on ScenePilot-v2 too: on scenario 5 (red-light running) against its default
``human`` ego, ScenePilot and the risk-only PPO raise the collision rate far above a random
adversary within the same CI-sized budget as the v1 test (``test_learning_works.py``: Phi phase
of 60 episodes, 64 PPO updates of 256 steps, 2-D action)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import fisher_exact

from icml26.agents.driving import pipeline

KW = {"action": "acc_steer"}
EPISODES = 100


class _Random2D:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def start(self, n: int, scenario: int) -> None:
        pass

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.uniform(-1.0, 1.0, size=(len(obs), 2)).astype(np.float32)


@pytest.fixture(scope="module")
def v2_phi():
    before = pipeline.env_version()
    pipeline.set_env_version("v2")
    try:
        predictor, report = pipeline.phi_phase(5, "human", seed=0, episodes=60, test_episodes=20)
        assert report["auroc_test"] > 0.9
        yield predictor
    finally:
        pipeline.set_env_version(before)


def _rate(policy) -> tuple[int, int]:
    rows = pipeline.evaluate(policy, 5, "human", seed=5, episodes=EPISODES, env_kwargs=KW)
    return int(sum(r["collision"] for r in rows)), len(rows)


@pytest.mark.slow
@pytest.mark.parametrize("risk_only", [False, True], ids=["scenepilot", "ppo-risk"])
def test_adversary_learns_to_collide_on_v2(v2_phi, risk_only: bool) -> None:
    before = pipeline.env_version()
    pipeline.set_env_version("v2")
    try:
        agent, stats = pipeline.train_adversary(
            5, "human", v2_phi, seed=0, risk_only=risk_only, lr=1e-3, update_epochs=4, env_kwargs=KW
        )
        k_rand, n = _rate(_Random2D(0))
        k_learn, _ = _rate(pipeline.batched_policy("actor", agent))
    finally:
        pipeline.set_env_version(before)
    assert stats["final_k"] == pytest.approx(0.35)
    assert k_learn / n >= k_rand / n + 0.2, (k_learn, k_rand)
    _, p = fisher_exact([[k_learn, n - k_learn], [k_rand, n - k_rand]], alternative="greater")
    assert p < 0.01, p
