"""Issue 36: the valid-collision rate (the paper's headline), the release-reward ablation arm, the
v2 per-scenario tasks and the driving study's plan."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

import icml26.agents
import icml26.benchmarks as bm
from icml26.benchmarks.tasks.driving import VALID_K, _rate_metrics, run_trial, valid_collisions
from icml26.protocol import Budget


def _ep(collision: float, min_sigma: float) -> dict[str, float]:
    return {"collision": collision, "min_sigma_pre_collision": min_sigma}


def test_valid_collisions_count_band_collisions_at_k() -> None:
    # five constructed episodes: in the band (0.5), on its edge (k itself counts), below it, no
    # collision (sigma irrelevant), a collision after sigma went negative
    eps = [_ep(1, 0.5), _ep(1, 0.35), _ep(1, 0.2), _ep(0, 0.9), _ep(1, -0.3)]
    assert VALID_K == 0.35
    assert valid_collisions(eps).tolist() == [1, 1, 0, 0, 0]
    assert valid_collisions(eps, k=0.0).tolist() == [1, 1, 1, 0, 0]
    assert valid_collisions(eps, k=0.6).tolist() == [0, 0, 0, 0, 0]
    # 2 of 5: Wilson 95% by hand, centre (0.4 + z^2/10) / (1 + z^2/5), half-width
    # z sqrt(0.4 * 0.6 / 5 + z^2 / 100) / (1 + z^2/5): [0.1176, 0.7693]
    m = _rate_metrics("valid_collision_rate", valid_collisions(eps))
    assert m["valid_collision_rate"] == 0.4
    assert m["valid_collision_rate_low"] == pytest.approx(0.117621, abs=1e-6)
    assert m["valid_collision_rate_high"] == pytest.approx(0.769276, abs=1e-6)
    with pytest.raises(ValueError, match="min_sigma_pre_collision"):
        valid_collisions([{"collision": 1.0}])


def test_the_v2_tasks_report_valid_and_raw_rates_with_wilson_intervals() -> None:
    v0, v1 = bm.get_task("driving/attack-v2-human@v0"), bm.get_task("driving/attack-v2-human")
    assert v1.version == 1 and v1.extra["valid_k"] == VALID_K and "valid_k" not in v0.extra
    assert {m.name for m in v0.metrics} < {m.name for m in v1.metrics}
    for s in (5, 6, 7):
        t = bm.get_task(f"driving/attack-v2-human-s{s}")
        assert t.env_kwargs["scenario"] == [s] and t.budget.env_steps == 16_384
        assert t.metrics == v1.metrics and t.eval_episodes == 50
    task = dataclasses.replace(
        bm.get_task("driving/attack-v2-human-s5"), eval_episodes=20, budget=Budget(env_steps=0)
    )
    out = run_trial(task, icml26.agents.make("driving-scripted"), 0)
    m, x = out.metrics, out.extra
    for metric in task.metrics:
        assert metric.in_range(m[metric.name]), metric.name
    # the counts behind the rates; valid (sigma >= 0.35 before contact) is a subset of the
    # avoidable collisions (sigma >= 0) and of all collisions
    assert m["collision_rate"] == x["collisions"] / 20 == np.mean(out.scores)
    assert m["valid_collision_rate"] == x["valid_collisions"] / 20
    assert m["valid_collision_rate"] <= m["avoidable_collision_rate"] <= m["collision_rate"]
    assert x["valid_collision_by_scenario"] == {"5": m["valid_collision_rate"]}
    assert x["collisions"] > 0  # the scripted actor collides in scenario 5 (0.53 on the page)
    for name in ("collision_rate", "valid_collision_rate"):
        assert m[f"{name}_low"] <= m[name] <= m[f"{name}_high"]


def _tiny(**kw: object) -> object:
    a = icml26.agents.make(
        kw.pop("name", "scenepilot"), num_envs=2, rollout_steps=8, minibatch_size=16, **kw
    )
    return a


def _params(agent: object) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in agent.actor.parameters()])  # type: ignore[attr-defined]


def _learn(agent: object, env_id: str, steps: int, **env_kw: object) -> dict:
    import gymnasium as gym

    env = gym.make(env_id, scenario=[5], **env_kw)
    agent.bind(env.observation_space, env.action_space)  # type: ignore[attr-defined]
    agent.reset(0)  # type: ignore[attr-defined]
    out = agent.learn(env, Budget(env_steps=steps))  # type: ignore[attr-defined]
    env.close()
    return out


def test_release_reward_arm_is_scenepilot_on_the_release_reward() -> None:
    # the ablation arm on ScenePilot-v2 trains exactly as ScenePilot on ScenePilot-v2 whose env
    # pays the release's reward r = risk (reward="released")
    a, b = _tiny(), _tiny(name="scenepilot-released")
    assert b.args.reward == "released"  # type: ignore[attr-defined]
    _learn(a, "icml26/ScenePilot-v2", 64, phi="ttc", reward="released")
    _learn(b, "icml26/ScenePilot-v2", 64, phi="ttc")
    assert np.array_equal(_params(a), _params(b))
    # v2 pays risk shaping + a band bonus; r = risk gives other critic targets, other updates
    a, b = _tiny(), _tiny(name="scenepilot-released")
    _learn(a, "icml26/ScenePilot-v2", 64, phi="ttc")
    _learn(b, "icml26/ScenePilot-v2", 64, phi="ttc")
    assert not np.array_equal(_params(a), _params(b))
    with pytest.raises(ValueError, match="reward must be one of"):
        icml26.agents.make("scenepilot", reward="phi")
    with pytest.raises(ValueError, match="k_update_every"):
        icml26.agents.make("scenepilot", k_update_every=-1)


def test_k_update_every_0_walks_the_curriculum_once_over_the_budget() -> None:
    a = _tiny(k_update_every=0)
    _learn(a, "icml26/ScenePilot-v2", 8 * 16, phi="ttc")  # 8 updates of 2 x 8 steps
    assert [h["k"] for h in a.history] == list(a.args.k_values)  # type: ignore[attr-defined]
    a = _tiny(k_update_every=0)
    _learn(a, "icml26/ScenePilot-v2", 16 * 16, phi="ttc")  # 16 updates: 2 per k
    assert [h["k"] for h in a.history][::2] == list(a.args.k_values)  # type: ignore[attr-defined]


def test_the_driving_study_plans_the_intended_trials() -> None:
    from icml26.benchmarks.studies import get_study
    from icml26.benchmarks.study_cli import _subset

    study = get_study("driving")
    plan = study.plan()
    assert study.ladder == (1.0, 4.0, 16.0, 64.0, 100.0)
    # the top rung is the release's budget: 100 x 16,384 = 1,638,400 = 8 k x 100 updates x 2048
    top = bm.get_task("driving/attack-v2-human-s5").budget.scaled(study.top)
    assert top.env_steps == 1_638_400 == 8 * 100 * 2048
    cells = Counter((p.block, p.arm, p.rung) for p in plan)
    seeds = {(p.block, p.arm, p.rung): set() for p in plan}
    for p in plan:
        seeds[(p.block, p.arm, p.rung)].add(p.spec.seed)
    learners = ("ScenePilot", "ScenePilot (sampled)", "ScenePilot (r = Phi)", "PPO-risk", "LC")
    for s in (5, 6, 7):
        b = f"scenario {s}"
        for arm in (*learners, "scripted", "random"):
            assert seeds[(b, arm, 100.0)] == set(range(10))
        for arm in learners:
            for rung in (1.0, 4.0, 16.0, 64.0):
                if s == 7:
                    assert (b, arm, rung) not in cells
                else:
                    assert seeds[(b, arm, rung)] == {0, 1, 2}
        for arm in ("scripted", "random"):  # exact: top rung only
            assert {r for (bb, a, r) in cells if bb == b and a == arm} == {100.0}
    # 2 ladder blocks x 5 learners x (4 rungs x 3 seeds) + 3 blocks x 7 arms x 10 seeds
    assert len(plan) == 2 * 5 * 12 + 3 * 7 * 10 == 330
    by_arm = {p.arm: p.spec for p in plan if p.rung == 1.0 and p.block == "scenario 5"}
    assert by_arm["ScenePilot"].agent_kwargs["k_update_every"] == 0
    assert by_arm["ScenePilot (r = Phi)"].agent == "scenepilot-released"
    assert by_arm["PPO-risk"].budget_scale == 1.0
    # the sampled arm is ScenePilot's training (same agent and kwargs) evaluated by sampling
    sampled = dict(by_arm["ScenePilot (sampled)"].agent_kwargs)
    assert sampled.pop("deterministic") is False
    assert by_arm["ScenePilot (sampled)"].agent == by_arm["ScenePilot"].agent
    assert sampled == dict(by_arm["ScenePilot"].agent_kwargs)
    # --scales keeps the cheap rungs (a first run), the rest follows
    cheap = _subset(study.trials(), None, "driving/attack-v2-human-s[56]", "1,4")
    assert len(cheap) == 2 * 5 * 2 * 3 and {s.budget_scale for s in cheap} == {1.0, 4.0}
    claims = {c.id: c for c in study.claims}
    assert claims["valid-vs-scripted-s6"].metric == "valid_collision_rate"
    assert {c.b for c in claims.values() if hasattr(c, "b")} == {"scripted", "LC", "PPO-risk"}


def test_the_driving_page_pools_episodes_and_pairs_seeds() -> None:
    """Synthetic top-rung trials: the page's Wilson cells pool the seeds' episodes, and the
    pooled +6.2 pp table pairs per-seed means over the three scenarios."""
    from icml26 import benchmarks
    from icml26.benchmarks.studies import get_study
    from icml26.benchmarks.studies.driving import pooled_difference, sections
    from icml26.benchmarks.study import StudyData, evaluate
    from icml26.protocol import TrialResult

    study = get_study("driving")
    # valid collisions out of 50 episodes per (arm, scenario, seed), seeds 0 and 1
    valid = {"ScenePilot": (10, 20), "scripted": (5, 5)}
    results = []
    for p in study.plan():
        if p.rung != study.top or p.arm not in valid or p.spec.seed > 1:
            continue
        task = benchmarks.get_task(p.spec.task_id)
        v = valid[p.arm][p.spec.seed] + (int(p.block[-1]) - 5)  # +0/+1/+2 for scenarios 5/6/7
        results.append(
            TrialResult(
                p.spec.task_id,
                p.spec.task_version,
                p.spec.agent,
                "1",
                p.spec.seed,
                "FINISHED",
                metrics={"valid_collision_rate": v / 50, "collision_rate": 2 * v / 50},
                agent_kwargs=dict(p.spec.agent_kwargs),
                extra={"valid_collisions": v, "collisions": 2 * v},
                task_hash=task.definition_hash,
                budget_scale=p.spec.budget_scale,
            )
        )
    data = StudyData(study, results)
    lines = "\n".join(sections(data, evaluate(data)))
    # scenario 5, ScenePilot: (10 + 20) / 100 valid, 60 / 100 raw; Wilson 95% of 30/100 is
    # [0.219, 0.396] (centre (0.3 + z^2/200) / (1 + z^2/100), half-width
    # z sqrt(0.3 * 0.7 / 100 + z^2 / 40000) / (1 + z^2/100))
    assert "| 5 | ScenePilot | 0.300 [0.219, 0.396] | 0.600 [0.502, 0.691] | 30/60 | 2 |" in lines
    # per seed, mean over scenarios of valid: ScenePilot (11/50, 21/50), scripted (6/50, 6/50):
    # differences 10 and 30 pp, mean +20 pp
    d = pooled_difference(data, "ScenePilot", "scripted", "valid_collision_rate")
    assert d is not None and d["n"] == 2
    assert d["diff_pp"] == pytest.approx(20.0) and d["a"] == pytest.approx(0.32)
    assert "| valid_collision_rate | LC | - | - | - | - | 0 |" in lines  # LC has no trials here
