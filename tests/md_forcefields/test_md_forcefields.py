"""md_forcefields: OpenMM labels, DKMP regions, autograd forces, symmetry, env and tasks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytest.importorskip("openmm")
pytest.importorskip("openmmtools")

from icml26.agents.md_forcefields.agent import ForceFieldAgent, OpenMMAgent  # noqa: E402
from icml26.agents.md_forcefields.models import (  # noqa: E402
    DKMP,
    build_model,
    dilated_regions,
    shell_weights,
)
from icml26.envs.md_forcefields import data  # noqa: E402

SMALL = {"temperatures": (300.0, 500.0), "frames_per_replica": 6, "equil": 50, "stride": 20}


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory) -> data.Frames:
    mp = pytest.MonkeyPatch()
    mp.setenv("ICML26_CACHE", str(tmp_path_factory.mktemp("cache")))
    f = data.load_frames(progress=False, **SMALL)
    yield f
    mp.undo()


def test_labels_match_direct_openmm(frames: data.Frames) -> None:
    import openmm
    import openmm.unit as u
    from openmmtools import testsystems

    ts = testsystems.AlanineDipeptideVacuum(constraints=None)
    ctx = openmm.Context(
        ts.system, openmm.VerletIntegrator(1.0), openmm.Platform.getPlatformByName("Reference")
    )
    for k in (0, 5, 11):
        ctx.setPositions(frames.positions[k] * u.angstrom)
        st = ctx.getState(getEnergy=True, getForces=True)
        e = st.getPotentialEnergy().value_in_unit(u.kilocalorie_per_mole)
        f = st.getForces(asNumpy=True).value_in_unit(u.kilocalorie_per_mole / u.angstrom)
        assert frames.energies[k] == pytest.approx(e, abs=1e-4)
        np.testing.assert_allclose(frames.forces[k], f, atol=1e-3)
    assert frames.positions.shape == (12, 22, 3) and frames.numbers.tolist()[:2] == [1, 6]


def test_frames_decorrelated_and_cached(frames: data.Frames) -> None:
    # consecutive frames (20 fs apart) differ; the cache returns identical arrays
    assert np.abs(np.diff(frames.positions[:6], axis=0)).max() > 0.05
    again = data.load_frames(progress=False, **SMALL)
    np.testing.assert_array_equal(again.forces, frames.forces)


def test_checksum_mismatch_regenerates(frames: data.Frames) -> None:
    path = data.cache_path({**data.DEFAULTS, **SMALL, "temperatures": [300.0, 500.0]})
    assert path.exists()
    path.write_bytes(path.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(ValueError, match="checksum"):
        data._load(path)
    again = data.load_frames(progress=False, **SMALL)
    np.testing.assert_allclose(again.energies, frames.energies)


def test_splits(frames: data.Frames) -> None:
    r = data.split(frames, "random", seed=1)
    allidx = np.concatenate([r["train"], r["val"], r["test"]])
    assert sorted(allidx.tolist()) == list(range(len(frames)))
    t = data.split(frames, "temporal")
    for rep in (0, 1):
        tr = t["train"][frames.replica[t["train"]] == rep]
        te = t["test"][frames.replica[t["test"]] == rep]
        assert frames.time_ps[tr].max() < frames.time_ps[te].min()
    with pytest.raises(ValueError, match="split must be one of"):
        data.split(frames, "scaffold")
    with pytest.raises(ValueError, match="unknown frame parameters"):
        data.load_frames(progress=False, n_frames=3)


def test_dilated_regions_hand_worked() -> None:
    # four atoms on a line at x = 0, 1, 2.5, 5: d01 = 1, d02 = 2.5, d03 = 5, d12 = 1.5, d13 = 4, d23 = 2.5
    x = np.array([[0, 0, 0], [1, 0, 0], [2.5, 0, 0], [5, 0, 0]], float)
    reg = dilated_regions(x, (1.5, 3.0, 6.0))
    assert reg[0] == [[1], [0], [], []]  # shell [0, 1.5)
    assert reg[1] == [[2], [2], [0, 1, 3], [2]]  # shell [1.5, 3): 0-2, 1-2 (d = 1.5), 2-3
    assert reg[2] == [[3], [3], [], [0, 1]]  # shell [3, 6)
    # mutual exclusion: every pair in exactly one shell
    pairs = [(i, j) for s in range(3) for i in range(4) for j in reg[s][i]]
    assert len(pairs) == len(set(pairs)) == 12
    # hard shell weights are one-hot in the same shells; soft ones add up to the envelope
    d = torch.tensor([1.0, 2.5, 5.0, 1.5, 4.0, 2.5])
    w = shell_weights(d, (1.5, 3.0, 6.0), 0.0)
    assert w.argmax(1).tolist() == [0, 1, 2, 1, 2, 1] and torch.all(w.sum(1) == 1)
    ds = torch.linspace(0.0, 7.0, 200)
    ws = shell_weights(ds, (1.5, 3.0, 6.0), 0.4)
    assert torch.all(ws >= -1e-12)
    env = torch.where(
        ds <= 5.6,
        1.0,
        torch.where(ds >= 6.0, 0.0, 0.5 * (1 + torch.cos(math.pi * (ds - 5.6) / 0.4))),
    )
    torch.testing.assert_close(ws.sum(1), env)


def test_dkmp_layer_uses_only_its_shell() -> None:
    m = DKMP(hidden=8, radii=(1.5, 3.0, 6.0), width=0.0).double()
    seen: list[set[tuple[int, int]]] = []
    for layer in m.layers:
        layer.register_forward_hook(
            lambda mod, inp, out: seen.append({(int(a), int(b)) for a, b in zip(inp[1], inp[2])})
        )
    x = torch.tensor([[[0, 0, 0], [1, 0, 0], [2.5, 0, 0], [5, 0, 0]]], dtype=torch.float64)
    m.energy(x, torch.tensor([6, 6, 6, 6]))
    reg = dilated_regions(x[0].numpy(), (1.5, 3.0, 6.0))
    for s in range(3):
        assert seen[s] == {(i, j) for i in range(4) for j in reg[s][i]}


def _mol(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(1, 9, 3, generator=g, dtype=torch.float64) * 5.0
    return x, torch.tensor([6, 1, 1, 8, 7, 6, 1, 1, 1])


@pytest.mark.parametrize("name", ["dkmp", "schnet", "painn"])
def test_forces_are_negative_gradient(name: str) -> None:
    torch.manual_seed(0)
    m = build_model(name, hidden=16).double()
    x, z = _mol()
    _, f = m.energy_forces(x, z)
    h = 1e-5
    for a, k in ((0, 0), (3, 1), (7, 2)):
        xp, xm = x.clone(), x.clone()
        xp[0, a, k] += h
        xm[0, a, k] -= h
        fd = -(m.energy(xp, z) - m.energy(xm, z)) / (2 * h)
        assert float(f[0, a, k].detach()) == pytest.approx(float(fd), rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("name", ["dkmp", "schnet", "painn"])
def test_rotation_translation(name: str) -> None:
    torch.manual_seed(1)
    m = build_model(name, hidden=16).double()
    x, z = _mol(2)
    q, _ = torch.linalg.qr(
        torch.randn(3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    )
    y = x @ q.T + torch.tensor([3.0, -1.0, 2.0], dtype=torch.float64)
    e1, f1 = m.energy_forces(x, z)
    e2, f2 = m.energy_forces(y, z)
    torch.testing.assert_close(e1, e2, rtol=1e-9, atol=1e-9)  # energy invariant
    torch.testing.assert_close(f1 @ q.T, f2, rtol=1e-7, atol=1e-9)  # forces rotate with x


def test_bad_inputs() -> None:
    a = ForceFieldAgent("dkmp", model_kwargs={"hidden": 8})
    a.set_numbers([6, 1, 1])
    with pytest.raises(ValueError, match=r"expected positions of shape \(3, 3\)"):
        a.predict(np.zeros((4, 3)))
    bad = np.zeros((3, 3))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        a.predict(bad)
    with pytest.raises(TypeError, match="positions"):
        a.predict(object())
    with pytest.raises(ValueError, match="radii must increase"):
        DKMP(radii=(2.0, 1.0))
    with pytest.raises(ValueError, match="model must be one of"):
        build_model("mace")


@pytest.mark.slow
def test_training_reduces_force_error(frames: data.Frames) -> None:
    a = ForceFieldAgent("dkmp", updates=120, batch=4, lr=5e-3, model_kwargs={"hidden": 16}, seed=0)
    a.set_numbers(frames.numbers)
    _, f0 = a.predict(frames.positions)
    a.learn(frames)
    _, f1 = a.predict(frames.positions)
    base = np.abs(frames.forces).mean()  # error of predicting zero force
    assert np.abs(f1 - frames.forces).mean() < 0.8 * base
    b = ForceFieldAgent("dkmp", updates=120, batch=4, lr=5e-3, model_kwargs={"hidden": 16}, seed=0)
    b.learn(frames)
    np.testing.assert_array_equal(b.predict(frames.positions)[1], f1)  # seeded: same result


def test_env_with_oracle_forces_is_stable_and_conserves_energy() -> None:
    import gymnasium as gym

    import icml26  # noqa: F401
    from icml26.envs.md_forcefields.systems import ACCEL

    env = gym.make("icml26/MDForceField-v0", friction_per_ps=0.0, timestep_fs=0.25, max_steps=400)
    agent = OpenMMAgent("ala2")
    obs, info = env.reset(seed=0)
    m = info["masses"][:, None]
    tot = []
    while True:
        obs, r, term, trunc, info = env.step(agent.act(obs, info))
        u = env.unwrapped
        # leapfrog: kinetic energy at the half step, fine for a drift check
        tot.append(info["energy"] + 0.5 * float((m * u._v**2).sum()) / ACCEL)
        assert r == pytest.approx(0.0, abs=1e-3) and info["force_cos"] > 0.999
        if term or trunc:
            break
    assert trunc and not info["failed"] and info["max_bond_dev"] < 0.2
    assert abs(tot[-1] - tot[0]) < 1.0 and np.std(tot) < 1.0  # kcal/mol over 0.1 ps NVE


def test_env_rejects_bad_actions_and_zero_forces_score() -> None:
    import gymnasium as gym

    import icml26  # noqa: F401

    env = gym.make("icml26/MDForceField-v0", max_steps=5)
    obs, info = env.reset(seed=1)
    with pytest.raises(ValueError, match=r"shape \(22, 3\)"):
        env.step(np.zeros((21, 3), np.float32))
    with pytest.raises(ValueError, match="finite"):
        env.step(np.full((22, 3), np.nan, np.float32))
    _, f = env.unwrapped.oracle(env.unwrapped._x)  # the env state (obs is its float32 copy)
    _, r, *_ = env.step(np.zeros((22, 3), np.float32))
    assert -r == pytest.approx(np.abs(f).mean(), rel=1e-4)
    with pytest.raises(ValueError, match="temperature"):
        gym.make("icml26/MDForceField-v0", temperature=-1.0)


@pytest.mark.slow
def test_run_trial_s2ef_and_md(monkeypatch: pytest.MonkeyPatch, frames: data.Frames) -> None:
    from icml26.benchmarks.tasks import md_forcefields as T

    monkeypatch.setattr(data, "load_frames", lambda progress=True: frames)
    task = T.TASKS[0]
    out = T.run_trial(task, OpenMMAgent(), 0)
    assert out.metrics["force_mae"] < 1e-3 and out.metrics["force_cos"] > 0.9999
    agent = ForceFieldAgent("schnet", updates=5, batch=2, model_kwargs={"hidden": 8})
    out = T.run_trial(task, agent, 0)
    assert set(out.metrics) == {m.name for m in task.metrics}
    md = T.TASKS[2]
    md = type(md)(
        **{**md.__dict__, "env_kwargs": {**md.env_kwargs, "max_steps": 30}, "eval_episodes": 1}
    )
    out = T.run_trial(md, OpenMMAgent(), 0)
    assert out.metrics["survival"] == 1.0 and out.metrics["time_to_failure_ps"] == pytest.approx(
        0.015
    )


def test_s2ef_metrics_hand_values() -> None:
    from icml26.benchmarks.tasks.md_forcefields import s2ef_metrics

    f = np.zeros((1, 2, 3))
    f[0, 0, 0], f[0, 1, 1] = 1.0, 2.0
    fh = f.copy()
    fh[0, 1] = [0.0, 0.0, -2.0]
    m = s2ef_metrics(np.array([3.0]), fh, np.array([1.0]), f)
    assert m["energy_mae_atom"] == 1.0 and m["force_mae"] == pytest.approx(4 / 6)
    assert m["force_cos"] == pytest.approx(0.5)


def test_loading_a_system_prints_nothing() -> None:
    """pymbar (imported by openmmtools) logs a JAX banner and a timeseries warning at import; a
    trial that loads a system must not print them (a fresh interpreter: they come once per process)."""
    import subprocess
    import sys

    code = "from icml26.envs.md_forcefields.systems import load_system; load_system('ala2')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == "" and "JAX NOT FOUND" not in out.stderr and "timeseries" not in out.stderr
