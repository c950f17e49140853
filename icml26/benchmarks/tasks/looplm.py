"""Tasks and suite entries of the looplm family (RLTT vs GRPO on looped transformers).

A trial: the agent learns on the train split of ``icml26/LoopReasoning-v0`` within the budget
(``extra["warm_start_steps"]`` supervised steps, ``extra["rl_steps"]`` RL steps; looplm agents
cache the warm start so every arm of a seed starts from the same checkpoint), then answers
``eval_episodes`` held-out test problems drawn with seeds derived from the trial seed.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent, learn_if_learner
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

METRICS = (
    Metric("accuracy", "max", 0.0, 1.0, "final-loop greedy accuracy on held-out problems (pass@1)"),
    Metric("pass_at_8", "max", 0.0, 1.0, "share of held-out problems solved by any of 8 samples"),
)

_COMMON: dict[str, Any] = dict(
    version=0, family="looplm", env_id="icml26/LoopReasoning-v0",
    run_trial="icml26.benchmarks.tasks.looplm:run_trial", metrics=METRICS, primary_metric="accuracy",
    seeds=(0, 1, 2, 3, 4), eval_episodes=256, tolerance=0.1,
)

ADDITION = Task(
    id="looplm/addition-2d", env_kwargs={"task": "addition", "digits": 2},
    budget=Budget(updates=100, extra={"warm_start_steps": 400, "rl_steps": 100, "prompts_per_step": 16,
                                     "group_size": 8}),
    description="a+b with two 2-digit numbers, answer digits reversed; 400 warm-start + 100 RL steps "
                "(16 prompts x 8 completions each).",
    **_COMMON,
)
MULTIPLICATION = Task(
    id="looplm/multiplication-2x1", env_kwargs={"task": "multiplication", "digits_a": 2, "digits_b": 1},
    budget=Budget(updates=100, extra={"warm_start_steps": 400, "rl_steps": 100, "prompts_per_step": 16,
                                     "group_size": 8}),
    description="a*b with a 2-digit and a 1-digit number, answer digits reversed; 400 warm-start + 100 RL "
                "steps.",
    **_COMMON,
)

TASKS = [ADDITION, MULTIPLICATION]

# smoke: a short warm start and 10 RL steps per arm, 2 seeds (about 25 CPU-seconds in all)
_SMOKE = {"warm_start_steps": 100, "rl_steps": 10, "eval_thresholds": [0.5], "progress": False}
SUITES = {
    "smoke": [SuiteEntry("looplm/addition-2d",
                         {"looplm-grpo": _SMOKE, "looplm-rltt-exit-pdf": _SMOKE}, seeds=(0, 1))],
    "full": [SuiteEntry(t.id, {a: {"progress": False} for a in (
        "looplm-sft", "looplm-grpo", "looplm-reinforce", "looplm-rltt-uniform", "looplm-rltt-progressive",
        "looplm-rltt-exit-pdf", "looplm-rltt-learned")}) for t in TASKS],
}


def eval_problems(env: gym.Env[Any, Any], seed: int, n: int) -> list[Any]:
    """The held-out problems of a trial: one ``reset(seed=derive_seed(seed, "eval", i))`` each."""
    out = []
    for i in range(n):
        env.reset(seed=derive_seed(seed, "eval", i))
        out.append(env.unwrapped.problem)
    return out


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Learn on the train split, then score ``task.eval_episodes`` held-out test problems.

    A looplm agent (anything with ``evaluate(env, problems)``) is evaluated in batches and adds the
    per-loop diagnostics to ``extra``; any other agent answers through ``act`` (pass@8 then resets
    it with 8 derived seeds and asks again, so a deterministic agent has pass@8 = accuracy).
    """
    kwargs = {k: v for k, v in task.env_kwargs.items() if k != "split"}
    train_env = gym.make(task.env_id, split="train", **kwargs)
    train_env.reset(seed=derive_seed(seed, "train"))
    bind_agent(agent, train_env)
    agent.reset(seed)
    learn_stats = learn_if_learner(agent, train_env, task)
    train_env.close()

    env = gym.make(task.env_id, split="test", **kwargs)
    bind_agent(agent, env)
    problems = eval_problems(env, seed, task.eval_episodes)
    extra: dict[str, Any] = {"learn": learn_stats} if learn_stats else {}
    evaluate = getattr(agent, "evaluate", None)
    if callable(evaluate):
        ev = evaluate(env, problems, seed=derive_seed(seed, "pass_at_k"), k=8)
        scores = ev.pop("scores")
        metrics = {"accuracy": ev["accuracy"], "pass_at_8": ev["pass_at_8"]}
        extra["eval"] = ev
    else:
        scores, passed = [], []
        for i in range(len(problems)):
            s_i = derive_seed(seed, "eval", i)
            obs, info = env.reset(seed=s_i)
            agent.reset(s_i)
            r = float(env.step(agent.act(obs, info))[1])
            hits = r == 1.0
            for j in range(7):  # 8 answers in all
                if hits:
                    break
                obs, info = env.reset(seed=s_i)
                agent.reset(derive_seed(seed, "pass_at_k", i, j))
                hits = float(env.step(agent.act(obs, info))[1]) == 1.0
            scores.append(r)
            passed.append(float(hits))
        metrics = {"accuracy": float(np.mean(np.asarray(scores) == 1.0)), "pass_at_8": float(np.mean(passed))}
    env.close()
    return TrialOutcome(metrics=metrics, scores=[float(s) for s in scores], extra=extra)
