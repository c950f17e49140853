"""Tasks of the pulse family: pretrain a representation, then score it under four protocols.

A trial (``run_trial``) draws the pretraining pool (``recordings_per_class`` recordings of each
class with ``windows_per_recording`` windows, seed ``derive_seed(seed, "pretrain")``; labels
hidden unless the agent declares ``uses_labels``, which marks the trial ``reference_only``),
lets the agent learn for ``budget.updates`` gradient updates, and then plays one episode of
``icml26/PhysioProbe-v0`` per evaluation, all with the frozen encoder:

============================  ===============================================================
metric                        evaluation
============================  ===============================================================
``accuracy`` (primary)        linear probe on the source domain, all probe-training labels
``accuracy_10pct``            the same windows, 10% of the labels (5 draws, >= 1 per class)
``accuracy_1pct``             the same windows, 1% of the labels (5 draws, >= 1 per class)
``transfer_accuracy``         linear probe on the shifted target domain (all its labels)
``r2_transferable``           mean held-out R^2 of the recording-level (system) factors
``r2_sample``                 mean held-out R^2 of the window-level (sample-specific) factors
``selectivity``               ``r2_transferable - r2_sample``
``r2_<factor>``               each factor's R^2
============================  ===============================================================

The source evaluations share one probe data set (seed ``derive_seed(seed, "eval", "source")``),
so label fractions are compared on the same windows; the target domain has its own seed.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent, learn_if_learner
from icml26.envs.pulse.simulator import SAMPLE_FACTORS, TRANSFERABLE_FACTORS, PhysioConfig, simulate
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

ENV_ID = "icml26/PhysioProbe-v0"

# evaluation name -> (PhysioProbe kwargs on top of the task's env_kwargs, eval-seed stream)
EVALUATIONS: dict[str, tuple[dict[str, Any], str]] = {
    "probe": ({"probe": "classes"}, "source"),
    "probe_10pct": ({"probe": "classes", "label_fraction": 0.1}, "source"),
    "probe_1pct": ({"probe": "classes", "label_fraction": 0.01}, "source"),
    "transfer": ({"probe": "classes", "domain": "target"}, "target"),
    "factors": ({"probe": "factors"}, "source"),
}

METRICS = (
    Metric(
        "accuracy",
        "max",
        0.0,
        1.0,
        "linear-probe accuracy on held-out source recordings (all labels)",
    ),
    Metric(
        "accuracy_10pct", "max", 0.0, 1.0, "linear-probe accuracy with 10% of the labels (5 draws)"
    ),
    Metric(
        "accuracy_1pct", "max", 0.0, 1.0, "linear-probe accuracy with 1% of the labels (5 draws)"
    ),
    Metric(
        "transfer_accuracy", "max", 0.0, 1.0, "linear-probe accuracy on the shifted target domain"
    ),
    Metric("balanced_accuracy", "max", 0.0, 1.0, "mean per-class recall of the all-label probe"),
    Metric("r2_transferable", "max", -math.inf, 1.0, "mean R^2 of the recording-level factors"),
    Metric(
        "r2_sample",
        "min",
        -math.inf,
        1.0,
        "mean R^2 of the window-level factors (lower = filtered)",
    ),
    Metric("selectivity", "max", -math.inf, math.inf, "r2_transferable - r2_sample"),
    *(
        Metric(f"r2_{f}", "max", -math.inf, 1.0, f"R^2 of the transferable factor {f}")
        for f in TRANSFERABLE_FACTORS
    ),
    *(
        Metric(f"r2_{f}", "min", -math.inf, 1.0, f"R^2 of the sample-specific factor {f}")
        for f in SAMPLE_FACTORS
    ),
)


def _task(
    name: str,
    description: str,
    updates: int,
    pretrain_per_class: int,
    pretrain_windows: int,
    probe: dict[str, int],
    tolerance: float = 0.05,
) -> Task:
    return Task(
        id=f"pulse/{name}",
        version=0,
        family="pulse",
        env_id=ENV_ID,
        run_trial="icml26.benchmarks.tasks.pulse:run_trial",
        metrics=METRICS,
        primary_metric="accuracy",
        env_kwargs=dict(probe),
        budget=Budget(updates=updates, dataset_size=pretrain_per_class * 4),
        seeds=tuple(range(10)),
        eval_episodes=len(EVALUATIONS),
        description=description,
        tolerance=tolerance,
        extra={
            "pretrain": {
                "recordings_per_class": pretrain_per_class,
                "windows_per_recording": pretrain_windows,
            },
            "evaluations": {k: {"env_kwargs": kw, "seed": s} for k, (kw, s) in EVALUATIONS.items()},
        },
    )


ECG_PPG = _task(
    "ecg-ppg",
    "ECG + PPG from the McSharry / Windkessel simulator, 4 classes; pretrain on 512 unlabelled "
    "recordings x 8 windows (4 s at 64 Hz) for 500 updates; linear probe (64 + 32 recordings per "
    "class x 4 windows) at 100/10/1% labels, on the shifted target domain, and factor R^2",
    updates=500,
    pretrain_per_class=128,
    pretrain_windows=8,
    probe={"recordings_per_class": 64, "test_recordings_per_class": 32, "windows_per_recording": 4},
)
QUICK = _task(
    "ecg-ppg-quick",
    "smoke-sized pulse/ecg-ppg: 32 pretraining recordings x 4 windows, 20 updates, small probes",
    updates=20,
    pretrain_per_class=8,
    pretrain_windows=4,
    probe={"recordings_per_class": 12, "test_recordings_per_class": 6, "windows_per_recording": 2},
    tolerance=0.15,
)

TASKS: list[Task] = [ECG_PPG, QUICK]


def pretraining_data(task: Task, seed: int, with_labels: bool) -> Any:
    """The trial's pretraining pool (source domain; labels only for label-using agents)."""
    sim_keys = set(PhysioConfig.__dataclass_fields__)
    config = PhysioConfig(**{k: v for k, v in task.env_kwargs.items() if k in sim_keys})
    pre = task.extra["pretrain"]
    data = simulate(
        np.random.default_rng(derive_seed(seed, "pretrain")),
        int(pre["recordings_per_class"]),
        int(pre["windows_per_recording"]),
        config,
    )
    return data if with_labels else data.without_labels()


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Pretrain within ``task.budget``, then one probe episode per evaluation (frozen encoder;
    ``agent.act`` is called once per distinct observation: the source evaluations share theirs)."""
    uses_labels = bool(getattr(agent, "uses_labels", False))
    evaluations = task.extra["evaluations"]
    envs = {
        name: gym.make(task.env_id, **{**task.env_kwargs, **ev["env_kwargs"]})
        for name, ev in evaluations.items()
    }
    try:
        bind_agent(agent, next(iter(envs.values())))
        agent.reset(seed)
        learn_stats = learn_if_learner(agent, pretraining_data(task, seed, uses_labels), task)
        episodes: dict[str, Any] = {}
        embedded: dict[str, Any] = {}
        for name, env in envs.items():
            s = derive_seed(seed, "eval", evaluations[name]["seed"])
            obs, info = env.reset(seed=s)
            # the source evaluations show the same windows: embed them once
            digest = hashlib.sha256(obs.tobytes()).hexdigest()
            if digest not in embedded:
                embedded[digest] = agent.act(obs, info)
            action = embedded[digest]
            _, reward, terminated, _, step_info = env.step(action)
            assert terminated, "PhysioProbe episodes last one step"
            keep = (
                "accuracy",
                "balanced_accuracy",
                "accuracies",
                "n_labels",
                "r2",
                "r2_transferable",
                "r2_sample",
                "selectivity",
            )
            episodes[name] = {
                "seed": s,
                "reward": float(reward),
                **{k: step_info[k] for k in keep if k in step_info},
            }
    finally:
        for env in envs.values():
            env.close()
    r2 = episodes["factors"]["r2"]
    metrics = {
        "accuracy": episodes["probe"]["accuracy"],
        "accuracy_10pct": episodes["probe_10pct"]["accuracy"],
        "accuracy_1pct": episodes["probe_1pct"]["accuracy"],
        "transfer_accuracy": episodes["transfer"]["accuracy"],
        "balanced_accuracy": episodes["probe"]["balanced_accuracy"],
        "r2_transferable": episodes["factors"]["r2_transferable"],
        "r2_sample": episodes["factors"]["r2_sample"],
        "selectivity": episodes["factors"]["selectivity"],
        **{f"r2_{k}": float(v) for k, v in r2.items()},
    }
    extra: dict[str, Any] = {"episodes": episodes, "reference_only": uses_labels}
    if learn_stats:
        extra["learn"] = learn_stats
    return TrialOutcome(metrics=metrics, scores=[episodes["probe"]["accuracy"]], extra=extra)


_SSL: dict[str, dict[str, Any]] = {
    "pulse": {},
    "pulse-cross": {},
    "pulse-simclr": {},
    "pulse-mae": {},
    "pulse-svae": {},
    "pulse-random": {},
}

SUITES: dict[str, list[SuiteEntry]] = {
    # pulse-supervised (reference only) is left out of the ranked suites
    "smoke": [SuiteEntry("pulse/ecg-ppg-quick", dict(_SSL), seeds=(0,))],
    "full": [SuiteEntry("pulse/ecg-ppg", dict(_SSL))],
}
