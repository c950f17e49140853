"""Tasks of the driving family: attack tasks per ego planner and the adversarial fine-tuning (defense) task.

* ``driving/attack-idm`` and ``driving/attack-cautious``: the agent is the adversary on
  ``icml26/ScenePilot-v0`` (all 8 scenarios) against the IDM or the cautious planner. Learn for
  the budget, then evaluate 24 episodes (3 per scenario) with the TTC risk as J_risk's reward
  (the same scorer for every agent). Metrics: collision rate, feasible ratio (share of steps
  with sigma >= 0), J_risk, J_sigma, SafeBench's attack score and the ego's driving score.
* ``driving/attack-v2-human``: the agent is the adversary on ``icml26/ScenePilot-v2`` (its
  v2 sigma and scenes, the collision reward, the 2-D [acc, steer] action) against the ``human``
  planner in scenarios 5, 6 and 7 (the crossing scenarios that discriminate under scripted and
  random actors); 60 evaluation episodes (20 per scenario). Adds the avoidable-collision rate
  (collisions whose minimum sigma up to 1 s before contact was >= 0, the boundary band) and the
  red-light rate to the attack metrics.
* ``driving/attack-v2-human`` v1: v0 with the headline metric in the paper's terms added: the
  collision rate of *valid* scenarios (``valid_collision_rate``: collisions whose minimum sigma up
  to 1 s before contact was >= the release's final k, 0.35, :func:`valid_collisions`) next to the
  raw collision rate, each with its Wilson 95% interval over the trial's episodes
  (``*_low``/``*_high``).
* ``driving/attack-v2-human-s5``, ``-s6``, ``-s7``: the same metrics on one scenario each (5
  red-light running, 6 unprotected left turn, 7 right turn), 16,384 env steps of learning (the
  pooled task's per-scenario share, about 1% of the release's 1.64M) and 50 evaluation
  episodes: the blocks of the ``driving`` study (:mod:`icml26.benchmarks.studies.driving`),
  whose budget ladder reaches the release's budget at x100.
* ``driving/defense-idm``: the agent is the ego (a residual on the IDM planner) on
  ``icml26/ScenePilotAV-v0``. run_trial trains a ScenePilot adversary against the IDM planner,
  measures the ego's crash rate and ScenePilot's overall driving score before fine-tuning (the
  planner alone) and after the agent learned against that adversary.
* ``driving/defense-v2-human``: the same protocol in the current version: the ego is a
  residual on the ``human`` planner on ``icml26/ScenePilotAV-v2`` in scenarios 5-7, against a
  ScenePilot adversary (2-D action) trained on ``icml26/ScenePilot-v2``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent, rollout, train_phase
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

EVAL_EPISODES = 24  # 3 per scenario
# ScenePilot's hyperparameters scaled to the CPU budget (24 updates of 2048 steps): the k
# curriculum walks once through its 8 values (3 updates each); lr 1e-3 with 4 epochs of 512.
BUDGET_PPO_KWARGS: dict[str, Any] = {
    "lr": 1e-3,
    "update_epochs": 4,
    "minibatch_size": 512,
    "k_update_every": 3,
}
SB3_PPO_KWARGS: dict[str, Any] = {"n_steps": 1024, "batch_size": 256, "learning_rate": 3e-4}

_ATTACK_METRICS = (
    Metric(
        "collision_rate", "max", 0.0, 1.0, "share of evaluation episodes in which the ego collides"
    ),
    Metric(
        "feasible_ratio",
        "max",
        0.0,
        1.0,
        "mean share of steps with sigma >= 0 (physically solvable)",
    ),
    Metric(
        "feasible_ratio_strict",
        "max",
        0.0,
        1.0,
        "mean share of steps with sigma >= 0.35 (the curriculum's last k)",
    ),
    Metric("J_risk", "max", 0.0, 600.0, "mean episode sum of the TTC risk 2 / (1 + TTC / 2.5)"),
    Metric("J_sigma", "max", -300.0, 300.0, "mean episode sum of sigma"),
    Metric(
        "attack_score",
        "max",
        0.0,
        2.0,
        "SafeBench's attack score (0.4 CR + 0.1 OR + 0.1 RF + 0.3 IC + 0.1 T)",
    ),
    Metric(
        "ego_driving_score",
        "min",
        -1.0,
        1.0,
        "ScenePilot's overall driving score of the ego (lower = stronger attack)",
    ),
)


# The ``-long`` attack tasks: 8x the learning budget (192 PPO updates), so the curriculum spends 24
# updates on each k (the release: 100) and Phi, frozen after 5,000 updates, drives most of training.
LONG_PPO_KWARGS: dict[str, Any] = {**BUDGET_PPO_KWARGS, "k_update_every": 24}


def _attack_task(planner: str, env_steps: int = 49_152, suffix: str = "") -> Task:
    return Task(
        id=f"driving/attack-{planner}{suffix}",
        version=0,
        family="driving",
        env_id="icml26/ScenePilot-v0",
        run_trial="icml26.benchmarks.tasks.driving:run_trial",
        metrics=_ATTACK_METRICS,
        primary_metric="collision_rate",
        env_kwargs={"scenario": "all", "ego": planner, "action": "speed", "phi": "online"},
        budget=Budget(env_steps=env_steps),
        seeds=(0, 1, 2, 3, 4),
        eval_episodes=EVAL_EPISODES,
        description=f"Adversary vs the {planner} planner on the 8 SafeBench scenarios; "
        f"{env_steps // 1024}k env steps of learning.",
        tolerance=0.25,
        extra={"kind": "attack"},
    )


_V2_METRICS = _ATTACK_METRICS + (
    Metric(
        "avoidable_collision_rate",
        "max",
        0.0,
        1.0,
        "share of episodes whose collision had a minimum sigma >= 0 up to 1 s before contact",
    ),
    Metric("red_light_rate", "min", 0.0, 1.0, "share of episodes in which the ego ran a red light"),
)

ATTACK_V2_HUMAN = Task(
    id="driving/attack-v2-human",
    version=0,
    family="driving",
    env_id="icml26/ScenePilot-v2",
    run_trial="icml26.benchmarks.tasks.driving:run_trial",
    metrics=_V2_METRICS,
    primary_metric="collision_rate",
    env_kwargs={"scenario": [5, 6, 7], "ego": "human", "action": "acc_steer", "phi": "online"},
    budget=Budget(env_steps=49_152),
    seeds=(0, 1, 2, 3, 4),
    eval_episodes=60,
    description="Adversary vs the human planner in ScenePilot-v2 scenarios 5-7 (crossing-route "
    "sigma, collision reward, 2-D action); 48k env steps of learning.",
    tolerance=0.25,
    extra={"kind": "attack"},
)

# "valid" in the paper's sense: a collision inside the feasibility boundary band at the release's k
VALID_K = 0.35  # the k curriculum's last value (scenario/config/scenepilot.yaml)

_V2_VALID_METRICS = _V2_METRICS + (
    Metric("collision_rate_low", "max", 0.0, 1.0, "Wilson 95% lower bound of collision_rate"),
    Metric("collision_rate_high", "max", 0.0, 1.0, "Wilson 95% upper bound of collision_rate"),
    Metric(
        "valid_collision_rate",
        "max",
        0.0,
        1.0,
        "share of episodes ending in a valid collision: minimum sigma up to 1 s before contact "
        f">= {VALID_K} (the release's final k)",
    ),
    Metric(
        "valid_collision_rate_low",
        "max",
        0.0,
        1.0,
        "Wilson 95% lower bound of valid_collision_rate",
    ),
    Metric(
        "valid_collision_rate_high",
        "max",
        0.0,
        1.0,
        "Wilson 95% upper bound of valid_collision_rate",
    ),
)

ATTACK_V2_HUMAN_V1 = dataclasses.replace(
    ATTACK_V2_HUMAN,
    version=1,
    metrics=_V2_VALID_METRICS,
    description="Adversary vs the human planner in ScenePilot-v2 scenarios 5-7 (crossing-route "
    "sigma, collision reward, 2-D action); 48k env steps of learning; the valid-collision rate "
    f"(boundary band at k = {VALID_K}) and Wilson intervals added.",
    extra={"kind": "attack", "valid_k": VALID_K},
)

SCENARIO_NAMES = {5: "red-light running", 6: "unprotected left turn", 7: "right turn"}


def _attack_v2_scenario(scenario: int) -> Task:
    return dataclasses.replace(
        ATTACK_V2_HUMAN_V1,
        id=f"driving/attack-v2-human-s{scenario}",
        version=0,
        env_kwargs={**ATTACK_V2_HUMAN.env_kwargs, "scenario": [scenario]},
        budget=Budget(env_steps=16_384),
        eval_episodes=50,
        description=f"Adversary vs the human planner in ScenePilot-v2 scenario {scenario} "
        f"({SCENARIO_NAMES[scenario]}); 16k env steps of learning (about 1% of the release's "
        f"1.64M); collision and valid-collision (k = {VALID_K}) rates with Wilson intervals.",
    )


ATTACK_V2_SCENARIOS = [_attack_v2_scenario(s) for s in sorted(SCENARIO_NAMES)]

ATTACK_IDM = _attack_task("idm")
ATTACK_CAUTIOUS = _attack_task("cautious")
ATTACK_IDM_LONG = _attack_task("idm", 8 * 49_152, "-long")
ATTACK_CAUTIOUS_LONG = _attack_task("cautious", 8 * 49_152, "-long")

DEFENSE_IDM = Task(
    id="driving/defense-idm",
    version=0,
    family="driving",
    env_id="icml26/ScenePilotAV-v0",
    run_trial="icml26.benchmarks.tasks.driving:run_trial",
    metrics=(
        Metric(
            "crash_rate_after",
            "min",
            0.0,
            1.0,
            "ego crash rate vs the ScenePilot adversary after fine-tuning",
        ),
        Metric(
            "crash_rate_before",
            "min",
            0.0,
            1.0,
            "ego crash rate vs the same adversary before (the planner alone)",
        ),
        Metric(
            "driving_score_after",
            "max",
            -1.0,
            1.0,
            "ScenePilot's overall driving score after fine-tuning",
        ),
        Metric("driving_score_before", "max", -1.0, 1.0, "the same score before fine-tuning"),
        Metric("crash_rate_reduction", "max", -1.0, 1.0, "crash_rate_before - crash_rate_after"),
        Metric(
            "crash_rate_after_scripted",
            "min",
            0.0,
            1.0,
            "after fine-tuning, vs SafeBench's scripted actors",
        ),
    ),
    primary_metric="crash_rate_after",
    env_kwargs={
        "scenario": "all",
        "base_planner": "idm",
        "adversary_action": "speed",
        "phi": "ttc",
    },
    budget=Budget(env_steps=30_720, extra={"adversary_steps": 40_960}),
    seeds=(0, 1, 2, 3, 4),
    eval_episodes=EVAL_EPISODES,
    description="Fine-tune a residual on the IDM planner against a ScenePilot adversary trained in the trial.",
    tolerance=0.25,
    extra={"kind": "defense", "adversary_kwargs": BUDGET_PPO_KWARGS, "planner": "idm"},
)

DEFENSE_V2_HUMAN = dataclasses.replace(
    DEFENSE_IDM,
    id="driving/defense-v2-human",
    env_id="icml26/ScenePilotAV-v2",
    env_kwargs={
        "scenario": [5, 6, 7],
        "base_planner": "human",
        "adversary_action": "acc_steer",
        "phi": "ttc",
    },
    description="Fine-tune a residual on the human planner in ScenePilotAV-v2 scenarios 5-7 "
    "against a ScenePilot adversary trained on ScenePilot-v2 in the trial.",
    extra={
        **DEFENSE_IDM.extra,
        "planner": "human",
        "adversary_env_id": "icml26/ScenePilot-v2",
    },
)

TASKS = [
    ATTACK_IDM,
    ATTACK_CAUTIOUS,
    ATTACK_IDM_LONG,
    ATTACK_CAUTIOUS_LONG,
    DEFENSE_IDM,
    ATTACK_V2_HUMAN,
    DEFENSE_V2_HUMAN,
    ATTACK_V2_HUMAN_V1,
    *ATTACK_V2_SCENARIOS,
]

SUITES = {
    # the current version (ScenePilot-v2): an old id would print Gymnasium's "out of date" warning
    "smoke": [
        SuiteEntry(
            "driving/attack-v2-human-s5",
            {"random": {}, "driving-scripted": {}, "scenepilot": BUDGET_PPO_KWARGS},
            seeds=(0, 1),
        ),
        SuiteEntry("driving/defense-v2-human", {"driving-no-finetune": {}}, seeds=(0,)),
    ],
    "full": [
        SuiteEntry(
            t,
            {
                "scenepilot": BUDGET_PPO_KWARGS,
                "driving-ppo-risk": BUDGET_PPO_KWARGS,
                "driving-lc": {},
                "driving-scripted": {},
                "random": {},
                "sb3-ppo": SB3_PPO_KWARGS,
            },
        )
        for t in ("driving/attack-idm", "driving/attack-cautious")
    ]
    + [
        SuiteEntry(
            t,
            {
                "scenepilot": BUDGET_PPO_KWARGS,
                "scenepilot-released": BUDGET_PPO_KWARGS,
                "driving-ppo-risk": BUDGET_PPO_KWARGS,
                "driving-lc": {},
                "driving-scripted": {},
                "random": {},
            },
        )
        for t in ("driving/attack-v2-human", *(t.id for t in ATTACK_V2_SCENARIOS))
    ]
    + [
        SuiteEntry(
            "driving/defense-v2-human",
            {
                "driving-no-finetune": {},
                "sb3-ppo": {**SB3_PPO_KWARGS, "policy_kwargs": {"log_std_init": -1.5}},
            },
        ),
        SuiteEntry(
            "driving/defense-idm",
            {
                "driving-no-finetune": {},
                "sb3-ppo": {**SB3_PPO_KWARGS, "policy_kwargs": {"log_std_init": -1.5}},
            },
        ),
    ],
    # the learners whose results can change with budget (random and scripted actors do not learn)
    "driving-long": [
        SuiteEntry(
            t,
            {"scenepilot": LONG_PPO_KWARGS, "driving-ppo-risk": LONG_PPO_KWARGS, "driving-lc": {}},
        )
        for t in ("driving/attack-idm-long", "driving/attack-cautious-long")
    ],
}


# ---------------------------------------------------------------------------- evaluation helpers


_VECTOR_ENVS = {
    "icml26/ScenePilot-v0": ("icml26.envs.driving.env", "ScenePilotVectorEnv"),
    "icml26/ScenePilot-v1": ("icml26.envs.driving.env", "ScenePilotV1VectorEnv"),
    "icml26/ScenePilot-v2": ("icml26.envs.driving.env", "ScenePilotV2VectorEnv"),
}


def _vector_env_class(env_id: str) -> Any:
    import importlib

    if env_id not in _VECTOR_ENVS:
        raise ValueError(
            f"driving evaluation: env_id must be one of {sorted(_VECTOR_ENVS)}, got {env_id!r}"
        )
    module, name = _VECTOR_ENVS[env_id]
    return getattr(importlib.import_module(module), name)


def evaluate_adversary(
    agent: Any,
    env_kwargs: Mapping[str, Any],
    seed: int,
    episodes: int,
    env_id: str = "icml26/ScenePilot-v0",
) -> list[dict[str, float]]:
    """Run ``episodes`` adversary episodes (scenario ``i % 8 + 1`` for episode i when all 8 are used).

    Episode i starts from ``reset(seed=derive_seed(seed, "eval", i))``. When the agent can be
    copied (``copy.deepcopy``) every episode gets its own copy and all run in lock-step on the
    native vector env; otherwise (e.g. SB3 models) they run one after the other on a single env.
    Both give the same episodes (to float rounding: the single env steps on the scalar path).
    J_risk uses the TTC risk (the same scorer for every agent).
    """
    from icml26.envs.driving.env import parse_scenarios

    kw = {k: v for k, v in env_kwargs.items() if k not in ("phi", "render_mode")}
    scen = parse_scenarios(kw.get("scenario", "all"))
    order = np.array([scen[i % len(scen)] for i in range(episodes)])
    seeds = [derive_seed(seed, "eval", i) for i in range(episodes)]
    _vector_env_class(env_id)
    try:
        clones = [copy.deepcopy(agent) for _ in range(episodes)]
    except Exception:  # not copyable: sequential episodes with the one agent
        return _evaluate_sequential(agent, kw, order, seeds, env_id)
    return _evaluate_lockstep(clones, kw, order, seeds, env_id)


def _evaluate_sequential(
    agent: Any,
    kw: Mapping[str, Any],
    order: np.ndarray,
    seeds: list[int],
    env_id: str = "icml26/ScenePilot-v0",
) -> list[dict[str, float]]:
    env = gym.make(env_id, **kw, phi="ttc")
    bind_agent(agent, env)
    shape = env.action_space.shape

    def act(obs: Any, info: dict[str, Any]) -> np.ndarray:
        return np.clip(np.asarray(agent.act(obs, info), np.float32).reshape(shape), -1, 1)

    out = [
        dict(rollout(agent, env, s, {"scenario": int(sc)}, act=act).info["episode_metrics"])
        for sc, s in zip(order, seeds)
    ]
    env.close()
    return out


def _reset_scenes(venv: Any, idx: np.ndarray, rng: np.random.Generator, scen: np.ndarray) -> None:
    """Reset scenes ``idx`` of a ScenePilot vector env to scenarios ``scen`` (v1/v2: their bookkeeping too)."""
    reset = getattr(venv, "reset_scenes", None)
    if reset is not None:
        reset(idx, rng, scen)
    else:
        venv.world.reset(idx, rng, scen)


def _evaluate_lockstep(
    clones: list[Any],
    kw: Mapping[str, Any],
    order: np.ndarray,
    seeds: list[int],
    env_id: str = "icml26/ScenePilot-v0",
) -> list[dict[str, float]]:
    episodes = len(clones)
    venv = _vector_env_class(env_id)(num_envs=episodes, phi="ttc", **kw)
    venv.reset(seed=0)
    for i in range(episodes):
        _reset_scenes(venv, np.array([i]), np.random.default_rng(seeds[i]), order[i : i + 1])
    obs = venv.world.observation()
    single = gym.make(env_id, **kw, phi="ttc")
    for c, s in zip(clones, seeds):
        bind_agent(c, single)
        c.reset(s)
    results: list[dict[str, float] | None] = [None] * episodes
    info_rows: list[dict[str, Any]] = [{"scenario": int(order[i])} for i in range(episodes)]
    dim = int(np.prod(venv.single_action_space.shape or (1,)))
    while any(r is None for r in results):
        acts = np.zeros((episodes, dim), dtype=np.float64)
        for i in range(episodes):
            if results[i] is None:
                a = np.asarray(clones[i].act(obs[i], info_rows[i]), dtype=np.float64).reshape(-1)
                acts[i] = np.clip(a, -1.0, 1.0)
        obs, _, term, trunc, info = venv.step(acts)
        done = np.logical_or(term, trunc)
        for i in range(episodes):
            info_rows[i] = {
                "scenario": int(order[i]),
                "sigma": float(info["sigma_tp1"][i]),
                "ttc": float(info["ttc"][i]),
            }
            if results[i] is None and done[i]:
                results[i] = {k: float(v[i]) for k, v in info["episode_metrics"].items()}
        if done.any():  # keep finished rows on their scenario (their later episodes are ignored)
            _reset_scenes(venv, np.flatnonzero(done), np.random.default_rng(0), order[done])
            obs = venv.world.observation()
    return [r for r in results if r is not None]


def evaluate_ego(
    agent: Any,
    env_kwargs: Mapping[str, Any],
    adversary: Any,
    seed: int,
    episodes: int,
    zero_residual: bool = False,
    env_id: str = "icml26/ScenePilotAV-v0",
) -> list[dict[str, float]]:
    """Ego episodes on ``env_id`` against ``adversary``, the scenarios in turn; sequential."""
    from icml26.envs.driving.env import parse_scenarios

    scen = parse_scenarios(env_kwargs.get("scenario", "all"))
    env = gym.make(env_id, **{**env_kwargs, "adversary": adversary})

    def act(obs: Any, info: dict[str, Any]) -> np.ndarray:
        return (
            np.zeros(2)
            if zero_residual
            else np.clip(np.asarray(agent.act(obs, info), np.float64).reshape(-1), -1, 1)
        )

    out = [
        dict(
            rollout(
                agent,
                env,
                derive_seed(seed, "eval", i),
                {"scenario": scen[i % len(scen)]},
                act=act,
                reset_agent=not zero_residual,
            ).info["episode_metrics"]
        )
        for i in range(episodes)
    ]
    env.close()
    return out


def _attack_metrics(eps: list[dict[str, float]]) -> dict[str, float]:
    from icml26.envs.driving.env import attack_score, driving_score

    out = {
        "collision_rate": float(np.mean([e["collision"] for e in eps])),
        "feasible_ratio": float(np.mean([e["feasible_ratio"] for e in eps])),
        "feasible_ratio_strict": float(np.mean([e["feasible_ratio_strict"] for e in eps])),
        "J_risk": float(np.mean([e["J_risk"] for e in eps])),
        "J_sigma": float(np.mean([e["J_sigma"] for e in eps])),
        "attack_score": float(attack_score(eps)),
        "ego_driving_score": float(driving_score(eps)["driving_score"]),
    }
    if eps and "avoidable_collision" in eps[0]:  # ScenePilot-v1 and later
        out["avoidable_collision_rate"] = float(np.mean([e["avoidable_collision"] for e in eps]))
        out["red_light_rate"] = float(np.mean([e["run_red_light"] for e in eps]))
    return out


def valid_collisions(eps: list[dict[str, float]], k: float = VALID_K) -> np.ndarray:
    """1.0 per episode that ended in a valid collision: a collision whose minimum sigma from the
    reset up to 1 s before contact (``min_sigma_pre_collision``) was >= ``k``; else 0.0."""
    missing = [i for i, e in enumerate(eps) if "min_sigma_pre_collision" not in e]
    if missing:
        raise ValueError(
            "valid_collisions: episodes need 'min_sigma_pre_collision' (ScenePilot-v1 and later); "
            f"episode(s) {missing[:5]} have keys {sorted(eps[missing[0]])}"
        )
    return np.array([float(e["collision"] > 0 and e["min_sigma_pre_collision"] >= k) for e in eps])


def _rate_metrics(name: str, outcomes: np.ndarray) -> dict[str, float]:
    from icml26.stats import wilson_ci

    iv = wilson_ci(int(round(float(outcomes.sum()))), len(outcomes))
    return {name: float(iv.estimate), f"{name}_low": float(iv.low), f"{name}_high": float(iv.high)}


def _per_scenario(eps: list[dict[str, float]], key: str) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for e in eps:
        out.setdefault(str(int(e["scenario"])), []).append(e[key])
    return {k: float(np.mean(v)) for k, v in sorted(out.items())}


# ---------------------------------------------------------------------------- run_trial


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Learn within the budget, evaluate, return the task's metrics (see the module docstring)."""
    kind = task.extra.get("kind")
    if kind == "attack":
        return _run_attack(task, agent, seed)
    if kind == "defense":
        return _run_defense(task, agent, seed)
    raise ValueError(f"driving run_trial: task {task.id!r} has unknown kind {kind!r}")


def _run_attack(task: Task, agent: Any, seed: int) -> TrialOutcome:
    stats = train_phase(task, agent, seed)
    eps = evaluate_adversary(agent, task.env_kwargs, seed, task.eval_episodes, task.env_id)
    metrics = _attack_metrics(eps)
    extra: dict[str, Any] = {
        "collision_by_scenario": _per_scenario(eps, "collision"),
        "feasible_by_scenario": _per_scenario(eps, "feasible_ratio"),
    }
    if "valid_k" in task.extra:  # the paper's headline: collisions in the band at the release's k
        valid = valid_collisions(eps, float(task.extra["valid_k"]))
        metrics.update(_rate_metrics("collision_rate", np.array([e["collision"] for e in eps])))
        metrics.update(_rate_metrics("valid_collision_rate", valid))
        for e, v in zip(eps, valid):
            e["valid_collision"] = float(v)
        extra["valid_collision_by_scenario"] = _per_scenario(eps, "valid_collision")
        extra["valid_collisions"] = int(valid.sum())
        extra["collisions"] = int(sum(e["collision"] > 0 for e in eps))
    if stats:
        extra["learn"] = stats
    return TrialOutcome(metrics=metrics, scores=[e["collision"] for e in eps], extra=extra)


def _run_defense(task: Task, agent: Any, seed: int) -> TrialOutcome:
    from icml26.agents.driving.scenepilot import ScenePilotAgent
    from icml26.envs.driving.env import driving_score

    planner = task.extra.get("planner", "idm")
    kw = dict(task.env_kwargs)
    ego_env = task.env_id
    # 1. the adversary: ScenePilot trained against the planner alone
    adversary = ScenePilotAgent(**dict(task.extra.get("adversary_kwargs", {})))
    adv_env = gym.make(
        task.extra.get("adversary_env_id", "icml26/ScenePilot-v0"),
        scenario=kw.get("scenario", "all"),
        ego=planner,
        action=kw.get("adversary_action", "speed"),
        phi="online",
    )
    adversary.bind(adv_env.observation_space, adv_env.action_space)
    adversary.reset(derive_seed(seed, "adversary"))
    adv_stats = adversary.learn(
        adv_env, Budget(env_steps=int(task.budget.extra.get("adversary_steps", 40_960)))
    )
    adv_env.close()
    # 2. before: the planner alone (zero residual) against that adversary
    n = task.eval_episodes
    before = evaluate_ego(None, kw, adversary, seed, n, zero_residual=True, env_id=ego_env)
    # 3. fine-tune the agent against the adversary
    stats = train_phase(task, agent, seed, env_kwargs={**kw, "adversary": adversary})
    # 4. after: the fine-tuned agent against the same adversary, and against the scripted actors
    after = evaluate_ego(agent, kw, adversary, seed, n, env_id=ego_env)
    scripted_seed = derive_seed(seed, "scripted")
    after_scripted = evaluate_ego(agent, kw, "scripted", scripted_seed, n, env_id=ego_env)
    before_scripted = evaluate_ego(
        None, kw, "scripted", scripted_seed, n, zero_residual=True, env_id=ego_env
    )
    cr_b = float(np.mean([e["collision"] for e in before]))
    cr_a = float(np.mean([e["collision"] for e in after]))
    metrics = {
        "crash_rate_after": cr_a,
        "crash_rate_before": cr_b,
        "driving_score_after": float(driving_score(after)["driving_score"]),
        "driving_score_before": float(driving_score(before)["driving_score"]),
        "crash_rate_reduction": cr_b - cr_a,
        "crash_rate_after_scripted": float(np.mean([e["collision"] for e in after_scripted])),
    }
    extra: dict[str, Any] = {
        "crash_rate_before_scripted": float(np.mean([e["collision"] for e in before_scripted])),
        "route_completion_before": float(np.mean([e["route_completion"] for e in before])),
        "route_completion_after": float(np.mean([e["route_completion"] for e in after])),
        "adversary_final_k": adv_stats.get("final_k"),
        "adversary_collision_curve": adv_stats["curve"]["collision_rate"],
    }
    if stats:
        extra["learn"] = stats
    return TrialOutcome(metrics=metrics, scores=[e["collision"] for e in after], extra=extra)
