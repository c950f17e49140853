"""The RL budget ladder inside one trial, the trainer's phases, and the shipped warm starts."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

import icml26.agents
import icml26.benchmarks as bm
from icml26.agents.looplm.rl import ALGOS, LOSSES, RLConfig
from icml26.agents.looplm.sft import SHIPPED, shipped_checkpoint
from icml26.benchmarks.tasks.looplm import run_trial
from icml26.protocol import Budget

_KW = dict(d_model=32, n_layers=1, eval_thresholds=[0.5], progress=False)
_EXTRA = {
    "warm_start_steps": 15,
    "warm_start_seed": 2,
    "prompts_per_step": 4,
    "group_size": 4,
    "lr": 3e-3,
}


def _task(rl_steps: int, ladder: tuple[float, ...] = ()):  # type: ignore[no-untyped-def]
    t = bm.get_task("looplm/addition-2d")
    extra = {**_EXTRA, "rl_steps": rl_steps} | ({"ladder": list(ladder)} if ladder else {})
    return dataclasses.replace(t, eval_episodes=16, budget=Budget(extra=extra))


@pytest.mark.parametrize("agent", ["looplm-grpo", "looplm-rltt-learned"])
def test_a_ladder_snapshot_is_the_trial_of_that_budget(agent: str) -> None:
    """With a constant lr the weights after s RL steps do not depend on the total: the snapshot
    a 6-step trial keeps at step 3 scores exactly like a 3-step trial, loop by loop."""
    long_agent = icml26.agents.make(agent, **_KW)
    long = run_trial(_task(6, ladder=(0.5,)), long_agent, seed=4)
    short_agent = icml26.agents.make(agent, **_KW)
    short = run_trial(_task(3), short_agent, seed=4)
    (snap,) = long.extra["eval"]["ladder"]
    assert snap["rl_steps"] == 3
    assert snap["scores"] == short.scores
    assert snap["per_loop_accuracy"] == short.extra["eval"]["per_loop_accuracy"]
    for k, v in long_agent.snapshots[3].items():
        assert torch.equal(v, short_agent.policy.model.state_dict()[k]), k
    # the final weights are the 6-step ones again after the snapshots were scored
    assert (
        long.extra["learn"]["steps"] == 6
        and long.extra["eval"]["accuracy"] == (long.metrics["accuracy"])
    )
    assert long.extra["learn"]["curves"]["reward"][:3] == short.extra["learn"]["curves"]["reward"]


def test_every_algorithm_has_a_policy_term_and_the_ppo_flag() -> None:
    assert set(LOSSES) == set(ALGOS)
    assert not RLConfig().ppo
    assert RLConfig(minibatches=2, prompts_per_step=4).ppo
    assert RLConfig(updates_per_batch=2).ppo


def test_shipped_checkpoints_load_under_another_torch_version() -> None:
    """A task's shipped warm start is data: the same key with another torch finds the file."""
    metas = sorted(SHIPPED.glob("*.json"))
    assert metas
    for meta in metas:
        key = json.loads(meta.read_text())
        assert shipped_checkpoint(json.dumps({**key, "torch": "0.0.1"})) == meta.with_suffix(".pt")
        other = {**key, "seed": key["seed"] + 1000}
        assert shipped_checkpoint(json.dumps(other)) is None
