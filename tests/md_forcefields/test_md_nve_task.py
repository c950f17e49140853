"""The NVE part of ``md_forcefields/ala2-md-stability`` v1: the oracle's own forces conserve
energy, noisy forces heat the system, and a tiny-budget trial reports the NVE metrics."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("openmm")
pytest.importorskip("openmmtools")

from icml26.agents.md_forcefields.agent import OpenMMAgent  # noqa: E402
from icml26.benchmarks.tasks import md_forcefields as T  # noqa: E402
from icml26.envs.md_forcefields import data  # noqa: E402
from icml26.envs.md_forcefields.env import MDForceFieldEnv  # noqa: E402


class NoisyOpenMM(OpenMMAgent):
    """OpenMM's energy with its forces plus white noise (sd ``sigma`` kcal/mol/A per component):
    forces that are not the gradient of the reported energy."""

    def __init__(self, sigma: float) -> None:
        super().__init__()
        self.sigma, self.rng = sigma, np.random.default_rng(0)

    def predict(self, positions):  # type: ignore[no-untyped-def]
        e, f = super().predict(positions)
        return e, f + self.sigma * self.rng.normal(size=f.shape)


@pytest.fixture(scope="module")
def env() -> MDForceFieldEnv:
    return MDForceFieldEnv(friction_per_ps=10.0, max_steps=200)


def test_nve_exact_forces_conserve_noisy_forces_heat(env: MDForceFieldEnv) -> None:
    exact = T.nve_run(OpenMMAgent(), env, 0, steps=400, thermalise_steps=200)
    assert exact["nve_time_ps"] == pytest.approx(0.2) and exact["nve_failed"] == 0.0
    # velocity Verlet at 0.5 fs on the exact potential: only the O(dt^2) shadow-energy wobble
    assert exact["nve_drift"] < 0.01 and exact["nve_max_dev"] < 0.01
    noisy = T.nve_run(NoisyOpenMM(2.0), env, 0, steps=400, thermalise_steps=200)
    assert noisy["nve_e0"] == pytest.approx(exact["nve_e0"])  # same thermalised start
    # white-noise kicks heat at about 1.5 dt c sigma^2 mean(1/m) = 0.72 kcal/mol/atom/ps here
    # (dt 5e-4 ps, c 418.4, mean 1/m of alanine dipeptide 0.576 / amu), plus a random walk
    assert noisy["nve_drift"] > 0.2 and noisy["nve_drift"] > 50 * exact["nve_drift"]
    assert noisy["nve_max_dev"] > 20 * exact["nve_max_dev"]


def test_nve_stops_when_a_bond_breaks(env: MDForceFieldEnv) -> None:
    out = T.nve_run(NoisyOpenMM(300.0), env, 1, steps=400, thermalise_steps=10)
    assert out["nve_failed"] == 1.0 and out["nve_time_ps"] < 0.2


def test_stability_v1_is_v0_plus_nve(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from icml26 import benchmarks

    v0 = benchmarks.get_task("md_forcefields/ala2-md-stability", 0)
    v1 = benchmarks.get_task("md_forcefields/ala2-md-stability")
    assert v1.version == 1 and "nve" not in v0.extra
    assert [m.name for m in v1.metrics] == [m.name for m in v0.metrics] + [
        "nve_drift",
        "nve_max_dev",
        "nve_time_ps",
    ]
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    small = {"temperatures": (300.0,), "frames_per_replica": 10, "equil": 20, "stride": 10}
    frames = data.load_frames(progress=False, **small)
    monkeypatch.setattr(data, "load_frames", lambda progress=True: frames)
    task = dataclasses.replace(
        v1,
        env_kwargs={**v1.env_kwargs, "max_steps": 20},
        eval_episodes=1,
        extra={**v1.extra, "nve": {**v1.extra["nve"], "steps": 100, "thermalise_steps": 100}},
    )
    out = T.run_trial(task, OpenMMAgent(), 0)
    assert set(out.metrics) == {m.name for m in v1.metrics}
    assert out.metrics["nve_time_ps"] == pytest.approx(0.05)
    assert 0 <= out.metrics["nve_drift"] < 0.05 and out.metrics["nve_max_dev"] < 0.01
    assert out.metrics["survival"] == 1.0 and len(out.extra["nve"]) == 1
