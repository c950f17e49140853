"""Tasks of the learned-force-field family (DKMP, ICML 2026).

S2EF tasks (``ala2-s2ef-random``, ``ala2-s2ef-temporal``): the agent learns from the training
split of the cached OpenMM-labelled alanine-dipeptide frames (:mod:`icml26.envs.md_forcefields.data`,
generated on first request), is scored on the test split. Metrics: ``energy_mae_atom``
(kcal/mol/atom, primary), ``energy_mae_mev_atom``, ``force_mae`` and ``force_rmse``
(kcal/mol/A over all components), ``force_cos`` (mean per-atom cosine), ``infer_ms`` (one
energy+forces call on one frame, median of 20).

Stability task (``ala2-md-stability``): the same training (random split), then
``task.eval_episodes`` Langevin rollouts of ``icml26/MDForceField-v0`` driven by the agent's
forces. Metrics: ``time_to_failure_ps`` (mean, a surviving episode counts its full length),
``survival`` (share of episodes that never broke a bond), ``rg_drift`` (mean |Rg - Rg_ref|, A),
``bond_drift`` (mean over steps of the RMS bond-length deviation, A), ``md_force_mae`` (force
error along the trajectory, kcal/mol/A), ``step_ms`` (agent time per MD step).

Stability v1 adds, after the Langevin rollouts, ``task.eval_episodes`` NVE runs (velocity Verlet,
:mod:`icml26.envs.md_forcefields.nve`) driven by the agent's forces, each from a state
thermalised by OpenMM (the env driven by the oracle's forces, friction 10/ps, 0.5 ps from the
minimized structure, seeded per run), so every agent starts from the same states. The energy
conserved is the agent's own (its predicted potential + kinetic energy). Metrics:
``nve_drift`` (|least-squares slope| of that total energy, kcal/mol/atom/ps), ``nve_max_dev``
(max ``|E_t - E_0|`` per atom, kcal/mol/atom), both over the steps before a bond leaves its
reference +- 0.5 A, and ``nve_time_ps`` (time to that failure, or the run's length). A zero-force
model (``md-null``) conserves its constant energy exactly: read the drift with the accuracy
metrics, never alone.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import gymnasium as gym
import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.benchmarks.generic import bind_agent
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

__all__ = ["TASKS", "SUITES", "run_trial", "s2ef_metrics", "nve_run"]

_ENV = "icml26/MDForceField-v0"
KCAL_TO_MEV = 43.364  # 1 kcal/mol = 43.364 meV
_S2EF = (
    Metric("energy_mae_atom", "min", 0.0, float("inf"), "test energy MAE per atom, kcal/mol/atom"),
    Metric("energy_mae_mev_atom", "min", 0.0, float("inf"), "test energy MAE per atom, meV/atom"),
    Metric("force_mae", "min", 0.0, float("inf"), "test force MAE over components, kcal/mol/A"),
    Metric("force_rmse", "min", 0.0, float("inf"), "test force RMSE over components, kcal/mol/A"),
    Metric("force_cos", "max", -1.0, 1.0, "mean per-atom cosine of predicted and true forces"),
    Metric("infer_ms", "min", 0.0, float("inf"), "energy + forces on one frame, ms (median of 20)"),
)
_MD = (
    Metric(
        "time_to_failure_ps",
        "max",
        0.0,
        float("inf"),
        "mean time before a bond leaves ref +- 0.5 A",
    ),
    Metric("survival", "max", 0.0, 1.0, "share of rollouts that never broke a bond"),
    Metric("rg_drift", "min", 0.0, float("inf"), "mean |Rg - Rg_ref| along the rollout, A"),
    Metric("bond_drift", "min", 0.0, float("inf"), "mean RMS bond-length deviation, A"),
    Metric("md_force_mae", "min", 0.0, float("inf"), "force MAE vs OpenMM along the rollout"),
    Metric("step_ms", "min", 0.0, float("inf"), "agent time per MD step, ms"),
)
_NVE = (
    Metric(
        "nve_drift",
        "min",
        0.0,
        float("inf"),
        "NVE drift of the agent's own total energy, |slope| kcal/mol/atom/ps",
    ),
    Metric("nve_max_dev", "min", 0.0, float("inf"), "NVE max |E_t - E_0| per atom, kcal/mol/atom"),
    Metric("nve_time_ps", "max", 0.0, float("inf"), "NVE time before a bond breaks (or run end)"),
)
_BUDGET = Budget(updates=800, dataset_size=1600)


def _s2ef(split: str) -> Task:
    return Task(
        id=f"md_forcefields/ala2-s2ef-{split}",
        version=0,
        family="md_forcefields",
        env_id=_ENV,
        run_trial="icml26.benchmarks.tasks.md_forcefields:run_trial",
        metrics=_S2EF,
        primary_metric="energy_mae_atom",
        env_kwargs={},
        budget=_BUDGET,
        seeds=tuple(range(5)),
        eval_episodes=1,
        description=f"Alanine dipeptide S2EF, {split} split of 2,000 OpenMM frames (300-600 K), 800 updates.",
        tolerance=0.25,
        extra={"kind": "s2ef", "split": split},
    )


MD_STABILITY = Task(
    id="md_forcefields/ala2-md-stability",
    version=0,
    family="md_forcefields",
    env_id=_ENV,
    run_trial="icml26.benchmarks.tasks.md_forcefields:run_trial",
    metrics=_MD,
    primary_metric="time_to_failure_ps",
    env_kwargs={"system": "ala2", "temperature": 300.0, "timestep_fs": 0.5, "max_steps": 2000},
    budget=_BUDGET,
    seeds=tuple(range(5)),
    eval_episodes=3,
    description="Learned-force Langevin MD of alanine dipeptide (300 K, 0.5 fs, 1 ps x 3 rollouts).",
    tolerance=0.25,
    extra={"kind": "md", "split": "random"},
)

# v1: v0's Langevin rollouts, then per episode an NVE run of 1 ps (2,000 velocity-Verlet steps of
# 0.5 fs) with the agent's forces from an OpenMM-thermalised state; adds the NVE metrics.
MD_STABILITY_V1 = dataclasses.replace(
    MD_STABILITY,
    version=1,
    metrics=_MD + _NVE,
    description="Learned-force MD of alanine dipeptide: Langevin (300 K, 0.5 fs, 1 ps x 3 "
    "rollouts), then NVE (velocity Verlet, 0.5 fs, 1 ps x 3 runs from OpenMM-thermalised "
    "states) with the drift of the model's own total energy.",
    extra={
        "kind": "md",
        "split": "random",
        "nve": {"steps": 2000, "thermalise_steps": 1000, "thermalise_friction_per_ps": 10.0},
    },
)

TASKS = [_s2ef("random"), _s2ef("temporal"), MD_STABILITY, MD_STABILITY_V1]

_AGENTS = ("md-dkmp", "md-schnet", "md-painn", "md-null", "md-openmm")
SUITES = {
    "smoke": [
        SuiteEntry("md_forcefields/ala2-s2ef-random", {"md-dkmp": {"updates": 20}}, seeds=(0,))
    ],
    # one line per task id (its latest version)
    "full": [SuiteEntry(i, {a: {} for a in _AGENTS}) for i in dict.fromkeys(t.id for t in TASKS)],
}


def _train(task: Task, agent: Any, seed: int) -> tuple[Any, dict[str, np.ndarray], dict[str, Any]]:
    from icml26.envs.md_forcefields.data import load_frames, split

    frames = load_frames()
    sp = split(frames, task.extra["split"], seed=0)
    agent.reset(seed)
    stats = agent.learn(frames.subset(sp["train"]), task.budget, frames.subset(sp["val"]))
    return frames, sp, dict(stats or {})


def s2ef_metrics(
    e_hat: np.ndarray, f_hat: np.ndarray, e: np.ndarray, f: np.ndarray
) -> dict[str, float]:
    """Energy MAE per atom, force MAE / RMSE over components and mean per-atom cosine."""
    n = f.shape[-2]
    emae = float(np.mean(np.abs(e_hat - e)) / n)
    num = (f_hat * f).sum(-1)
    den = np.linalg.norm(f_hat, axis=-1) * np.linalg.norm(f, axis=-1)
    return {
        "energy_mae_atom": emae,
        "energy_mae_mev_atom": emae * KCAL_TO_MEV,
        "force_mae": float(np.mean(np.abs(f_hat - f))),
        "force_rmse": float(np.sqrt(np.mean((f_hat - f) ** 2))),
        "force_cos": float(np.mean(num / np.maximum(den, 1e-12))),
    }


def _infer_ms(agent: Any, x: np.ndarray) -> float:
    ts = []
    for _ in range(20):
        t = time.perf_counter()
        agent.predict(x)
        ts.append(time.perf_counter() - t)
    return float(np.median(ts) * 1000)


def _run_s2ef(task: Task, agent: Any, seed: int) -> TrialOutcome:
    frames, sp, stats = _train(task, agent, seed)
    test = frames.subset(sp["test"])
    e_hat, f_hat = agent.predict(test.positions)
    m = s2ef_metrics(e_hat, f_hat, test.energies, test.forces)
    m["infer_ms"] = _infer_ms(agent, test.positions[0])
    per_frame = np.abs(f_hat - test.forces).mean(axis=(1, 2)).tolist()
    return TrialOutcome(metrics=m, scores=per_frame, extra={"train": stats, "n_test": len(test)})


def _episode(agent: Any, env: gym.Env[Any, Any], seed: int) -> dict[str, float]:
    obs, info = env.reset(seed=seed)
    ref_b, ref_rg, bonds = info["ref_bond_lengths"], info["ref_rg"], info["bonds"]
    rg, bd, fm, ts = [], [], [], []
    while True:
        t = time.perf_counter()
        act = agent.act(obs, info)
        ts.append(time.perf_counter() - t)
        obs, _, term, trunc, info = env.step(act)
        fm.append(info["force_mae"])
        if not info["failed"]:
            rg.append(abs(info["rg"] - ref_rg))
            b = np.linalg.norm(obs[bonds[:, 0]] - obs[bonds[:, 1]], axis=1)
            bd.append(float(np.sqrt(np.mean((b - ref_b) ** 2))))
        if term or trunc:
            break
    return {
        "time_ps": float(info["time_ps"]),
        "failed": float(info["failed"]),
        "rg_drift": float(np.mean(rg)) if rg else float("nan"),
        "bond_drift": float(np.mean(bd)) if bd else float("nan"),
        "md_force_mae": float(np.mean(fm)),
        "step_ms": float(np.median(ts) * 1000),
    }


def nve_run(agent: Any, env: Any, seed: int, steps: int, thermalise_steps: int) -> dict[str, float]:
    """One NVE run: reset ``env`` (an unwrapped :class:`MDForceFieldEnv`, usually with a strong
    thermostat) with ``seed``, drive it ``thermalise_steps`` steps with the OpenMM oracle's
    forces, then ``steps`` velocity-Verlet steps with ``agent.predict``'s energy and forces from
    that state; stops early when a bond leaves its reference length +- tolerance."""
    from icml26.envs.md_forcefields.nve import MD_ACCEL, energy_drift, velocity_verlet

    _, info = env.reset(seed=seed)
    for _ in range(thermalise_steps):
        x, _ = env.state()
        *_, term, trunc, _ = env.step(env.oracle(x)[1])
        if term or trunc:
            break
    x0, v0 = env.state()

    def broken(x: np.ndarray) -> bool:
        return env.bond_deviation(x) > env.bond_tol

    def force(x: np.ndarray) -> tuple[float, np.ndarray]:
        e, f = agent.predict(x)
        return float(e), np.asarray(f, dtype=np.float64)

    dt = env.dt / 1000.0  # ps
    out = velocity_verlet(
        x0, v0 * 1000.0, info["masses"], force, dt, steps, accel_scale=MD_ACCEL, stop=broken
    )
    n_steps = len(out["total"]) - 1
    n = len(info["masses"])
    if n_steps >= 1:
        d = energy_drift(out["total"], dt, n)
        drift, dev = abs(d["drift_per_atom_per_time"]), d["max_dev_per_atom"]
    else:
        drift = dev = math.nan
    return {
        "nve_drift": drift,
        "nve_max_dev": dev,
        "nve_time_ps": n_steps * dt,
        "nve_failed": float(n_steps < steps),
        "nve_e0": float(out["total"][0]),
    }


def _run_md(task: Task, agent: Any, seed: int) -> TrialOutcome:
    _, _, stats = _train(task, agent, seed)
    env = gym.make(task.env_id, **task.env_kwargs)
    bind_agent(agent, env)
    eps = [
        _episode(agent, env.unwrapped, derive_seed(seed, "eval", i))
        for i in range(task.eval_episodes)
    ]
    env.close()
    m = {
        k: float(np.nanmean([e[k] for e in eps]))
        for k in ("rg_drift", "bond_drift", "md_force_mae", "step_ms")
    }
    m["time_to_failure_ps"] = float(np.mean([e["time_ps"] for e in eps]))
    m["survival"] = float(1.0 - np.mean([e["failed"] for e in eps]))
    extra: dict[str, Any] = {"train": stats, "episodes": eps}
    cfg = task.extra.get("nve")
    if cfg:
        from icml26.envs.md_forcefields.env import MDForceFieldEnv

        kw = {**task.env_kwargs, "friction_per_ps": float(cfg["thermalise_friction_per_ps"])}
        nenv = MDForceFieldEnv(**{**kw, "max_steps": max(1, int(cfg["thermalise_steps"]))})
        runs = [
            nve_run(
                agent,
                nenv,
                derive_seed(seed, "nve", i),
                int(cfg["steps"]),
                int(cfg["thermalise_steps"]),
            )
            for i in range(task.eval_episodes)
        ]
        for k in ("nve_drift", "nve_max_dev"):
            vals = [r[k] for r in runs if not math.isnan(r[k])]
            m[k] = float(np.mean(vals)) if vals else math.nan
        m["nve_time_ps"] = float(np.mean([r["nve_time_ps"] for r in runs]))
        extra["nve"] = runs
    return TrialOutcome(metrics=m, scores=[e["time_ps"] for e in eps], extra=extra)


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Train on the task's split, then score (S2EF on the test frames, or MD rollouts)."""
    if task.extra.get("kind") == "md":
        return _run_md(task, agent, seed)
    return _run_s2ef(task, agent, seed)
