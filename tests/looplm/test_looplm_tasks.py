"""looplm tasks: run_trial with a scripted oracle, with the looped agents, and the shared warm start."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import icml26.agents
import icml26.benchmarks as bm
from icml26.benchmarks.tasks.looplm import run_trial
from icml26.envs.looplm.tokenizer import CharTokenizer
from icml26.protocol import Budget


class ReversedAdder:
    """Reads the prompt tokens and answers the exact reversed sum (solves addition tasks)."""

    def reset(self, seed=None):  # type: ignore[no-untyped-def]
        pass

    def act(self, observation, info=None):  # type: ignore[no-untyped-def]
        text = CharTokenizer().decode(observation["tokens"][: observation["length"]])
        return str(sum(int(x) for x in text[:-1].split("+")))[::-1]


class Guesser:
    """Answers a random two-digit string: pass@8 > accuracy when resets reseed it."""

    def reset(self, seed=None):  # type: ignore[no-untyped-def]
        self.rng = np.random.default_rng(seed)

    def act(self, observation, info=None):  # type: ignore[no-untyped-def]
        return str(self.rng.integers(0, 2))


def _small(task_id: str = "looplm/addition-2d", n: int = 16):  # type: ignore[no-untyped-def]
    t = bm.get_task(task_id)
    return dataclasses.replace(
        t, eval_episodes=n, budget=Budget(extra={"warm_start_steps": 15, "rl_steps": 2})
    )


def test_oracle_and_guesser_through_the_generic_path() -> None:
    out = run_trial(_small(n=24), ReversedAdder(), seed=0)
    assert out.metrics == {"accuracy": 1.0, "pass_at_8": 1.0} and out.scores == [1.0] * 24
    parity = dataclasses.replace(_small(n=40), env_kwargs={"task": "parity", "length": 5})
    g = run_trial(parity, Guesser(), seed=1)
    assert 0.2 < g.metrics["accuracy"] < 0.8 and g.metrics["pass_at_8"] > 0.9


def test_looped_agents_share_the_warm_start_and_report_every_metric() -> None:
    kw = dict(
        d_model=32,
        n_layers=1,
        prompts_per_step=4,
        group_size=4,
        eval_thresholds=[0.5],
        progress=False,
    )
    outs = {}
    for name in ("looplm-grpo", "looplm-rltt-exit-pdf"):
        agent = icml26.agents.make(name, **kw)
        outs[name] = run_trial(_small(), agent, seed=3)
    a, b = outs["looplm-grpo"], outs["looplm-rltt-exit-pdf"]
    assert a.extra["learn"]["warm_start"]["path"] == b.extra["learn"]["warm_start"]["path"]
    assert b.extra["learn"]["warm_start"]["cached"] is True
    for out in (a, b):
        ev = out.extra["eval"]
        assert set(out.metrics) == {"accuracy", "pass_at_8"}
        assert all(np.isfinite(v) and 0 <= v <= 1 for v in out.metrics.values())
        assert (
            len(ev["per_loop_accuracy"]) == 4
            and ev["per_loop_accuracy"][-1] == out.metrics["accuracy"]
        )
        assert sum(ev["mean_exit_pdf"]) == pytest.approx(1.0, abs=1e-5)
        assert 1.0 <= ev["threshold_curve"][0]["expected_depth"] <= 4.0
        assert out.extra["learn"]["steps"] == 2 and len(out.extra["learn"]["curves"]["reward"]) == 2
        assert (
            out.metrics["pass_at_8"] >= out.metrics["accuracy"] - 1e-9
            or out.metrics["accuracy"] == 0
        )
    # act() on one observation agrees with the batched greedy decoding that evaluate() scores
    import gymnasium as gym

    agent = icml26.agents.make("looplm-sft", **kw)
    sft = run_trial(_small(), agent, seed=3)
    env = gym.make("icml26/LoopReasoning-v0", split="test")
    problems = [
        env.unwrapped.sample_group(1, seed=i)[0] for i in range(6)
    ] + env.unwrapped.sample_group(6, seed=9)
    pol = agent.policy
    ids, mask = pol.encode([p.prompt for p in problems])
    batch = pol.decode(pol.generate(ids, mask, agent.max_new_tokens).tokens)
    tok = CharTokenizer()
    for p, want in zip(problems, batch):
        t = np.zeros(env.unwrapped.max_prompt_len, dtype=np.int64)
        t[: len(p.prompt)] = tok.encode(p.prompt)
        assert agent.act({"tokens": t, "length": len(p.prompt)}) == want
    assert "curves" not in sft.extra["learn"]


def test_registered_agents_and_bad_kwargs() -> None:
    names = [n for n in icml26.agents.names("looplm") if n.startswith("looplm-")]
    assert len(names) == 7
    for n in names:
        icml26.agents.make(n)
    with pytest.raises(TypeError, match="unknown keyword"):
        icml26.agents.make("looplm-grpo", learning_rate=1.0)
    with pytest.raises(ValueError, match="omega"):
        icml26.agents.make("looplm-rltt-uniform", omega="last")
    assert {t.id for t in bm.list_tasks("looplm")} == {
        "looplm/addition-2d",
        "looplm/multiplication-2x1",
        "looplm/addition-2d-1block",
        "looplm/permutation-hops-8x3",
    }


def test_a_task_warm_start_seed_gives_every_trial_seed_one_checkpoint() -> None:
    """With ``warm_start_seed`` in the budget (the depth tasks) trials of different seeds share the
    warm start, and the budget's PPO minibatches reach GRPO (its clip statistics appear)."""
    t = dataclasses.replace(
        bm.get_task("looplm/addition-2d"),
        eval_episodes=8,
        budget=Budget(
            extra={
                "warm_start_steps": 12,
                "rl_steps": 1,
                "warm_start_seed": 5,
                "prompts_per_step": 4,
                "group_size": 4,
                "minibatches": 2,
                "n_layers": 1,
                "lr": 1e-3,
            }
        ),
    )
    kw = dict(d_model=32, eval_thresholds=[0.5], progress=False)
    outs = [run_trial(t, icml26.agents.make("looplm-grpo", **kw), seed=s) for s in (0, 1)]
    paths = {o.extra["learn"]["warm_start"]["path"] for o in outs}
    assert len(paths) == 1 and outs[1].extra["learn"]["warm_start"]["cached"] is True
    assert "clip_frac" in outs[0].extra["learn"]["curves"]
    agent = icml26.agents.make("looplm-reinforce", **kw)
    run_trial(t, agent, seed=0)  # REINFORCE ignores the minibatches (one update per batch)
    assert agent.policy is not None and agent.policy.model.config.n_layers == 1
