"""RL that trains the model: v1 of looplm/permutation-hops-8x3 (issue 35).

The fast tests check the registration (v0 kept, v1 the default, the budget's RL keys reach the
trainer). The manual test runs GRPO at the task's default RL budget on seeds 0-2 (about 2 CPU
minutes a trial) and checks that it lifts held-out accuracy by at least +0.05 over the warm start
on average and on every seed (v0's budget: +0.071 on seed 0, +0.000 on seed 1)::

    OMP_NUM_THREADS=1 python -m pytest -m manual tests/looplm/test_looplm_rl_effect.py
"""

from __future__ import annotations

import numpy as np
import pytest

import icml26.agents
import icml26.benchmarks as bm
from icml26.benchmarks.tasks.looplm import run_trial

TASK = "looplm/permutation-hops-8x3"


def test_v1_is_the_default_and_v0_stays_registered() -> None:
    v0, v1 = bm.get_task(TASK, 0), bm.get_task(TASK, 1)
    assert bm.get_task(TASK) == v1 and v0.version == 0
    assert v0.definition_hash != v1.definition_hash
    # one warm start for both versions: only the RL budget changed
    for k in ("warm_start_seed", "warm_start_steps", "n_layers", "inject_input"):
        assert v0.budget.extra[k] == v1.budget.extra[k]
    assert v1.env_kwargs == v0.env_kwargs and v1.seeds == tuple(range(10))
    ex = v1.budget.extra
    assert ex["prompts_per_step"] * ex["rl_steps"] > 10 * 16 * v0.budget.extra["rl_steps"]


def test_the_budget_sets_the_trainer_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key of v1's RL budget reaches RLConfig (so every arm trains identically)."""
    from icml26.agents.looplm import agent as agent_mod

    seen = {}

    class Stop(Exception):
        pass

    def capture(policy, source, cfg, seed):  # type: ignore[no-untyped-def]
        seen.update(vars(cfg))
        raise Stop

    monkeypatch.setattr(agent_mod, "LoopRLTrainer", capture)
    task = bm.get_task(TASK)
    a = icml26.agents.make("looplm-rltt-progressive", progress=False)
    with pytest.raises(Stop):
        run_trial(task, a, seed=0)
    ex = task.budget.extra
    for k in ("prompts_per_step", "group_size", "updates_per_batch", "minibatches"):
        assert seen[k] == ex[k], k
    assert seen["lr"] == ex["lr"] and seen["beta_kl"] == ex["beta_kl"]
    assert seen["algo"] == "rltt" and seen["omega"] == "progressive"


@pytest.fixture(scope="module")
def grpo_gains() -> dict[int, float]:
    task = bm.get_task(TASK)
    gains = {}
    for seed in (0, 1, 2):
        acc = {}
        for name in ("looplm-sft", "looplm-grpo"):
            agent = icml26.agents.make(name, progress=False, eval_thresholds=[0.5])
            acc[name] = run_trial(task, agent, seed).metrics["accuracy"]
        gains[seed] = acc["looplm-grpo"] - acc["looplm-sft"]
    return gains


@pytest.mark.slow
@pytest.mark.manual
@pytest.mark.timeout(3600)
def test_grpo_at_the_default_budget_lifts_held_out_accuracy(grpo_gains: dict[int, float]) -> None:
    assert np.mean(list(grpo_gains.values())) >= 0.05, grpo_gains
    assert min(grpo_gains.values()) >= 0.05, grpo_gains
