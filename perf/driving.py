"""Speed of ScenePilot's kinematic backend against MetaDrive (physics only) and highway-env, side by side.

    OMP_NUM_THREADS=1 python perf/driving.py [--quick]

Rows (env steps per second; one env step = 0.1 s of simulated time for every simulator here):
  * kinematic, single env through ``gym.make`` (random adversary, IDM or cautious ego, TTC risk) on
    the one-scene scalar path; the same env forced onto the batched NumPy path (``world.fast =
    False``, the code before the scalar path existed); and the raw world;
  * kinematic, native vector env (``gym.make_vec``) with N = 1, 64, 1024 scenes per batched call;
  * MetaDrive 0.4.3 physics only: ``MetaDriveEnv(use_render=False)``, no traffic, map "S", asset
    download disabled (the wheel ships no assets); and our ``backend="metadrive"`` (same scenes, 3 bodies);
  * highway-env ``highway-fast-v0`` (random actions);
  * ScenePilot-v1: the single env and the native vector env (N = 64, 1024) with ``phi="ttc"``, and
    with the default learned Phi (``phi="online"``: the vector env is first run, untimed, until Phi
    is ready, so the timed steps pay both its inference and its batched training); the script
    prints the default v1 vector-64 rate as a share of its ``phi="ttc"`` rate;
  * ScenePilot-v2 (the default version): the same rows, and a summary line with its single-env and
    vector (N = 1024) ratios to MetaDrive and its vector-64 default-Phi share.
Every configuration runs in this one process, interleaved over ``--rounds`` rounds; the best
round counts. Wall-clock and CPU-time (process_time) rates are both printed; ratios use CPU time,
which is robust to other processes on a shared machine. Everything is single-threaded, so the
vector env's rate is also its rate per core.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import icml26  # noqa: E402,F401

Runner = Callable[[int], int]  # runs >= n env steps, returns the env steps done
V2 = "icml26/ScenePilot-v2"


def kinematic_single_env(ego: str = "idm", fast: bool = True) -> Runner:
    """``gym.make`` single env (with its wrappers), random actions drawn beforehand (the MetaDrive row
    steps a constant action, so neither row times an action sampler)."""

    def run(n: int) -> int:
        env = gym.make("icml26/ScenePilot-v0", scenario="all", ego=ego, phi="ttc")
        env.unwrapped.world.fast = fast
        env.reset(seed=0)
        actions = np.random.default_rng(0).uniform(-1, 1, (n, 1)).astype(np.float32)
        for a in actions:
            *_, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
        return n

    return run


def kinematic_world(n: int) -> int:
    from icml26.envs.driving.sim import KinematicWorld

    w = KinematicWorld(1, tuple(range(1, 9)))
    rng = np.random.default_rng(0)
    w.reset(np.arange(1), rng)
    actions = rng.uniform(-1, 1, (n, 1, 1))
    for a in actions:
        r = w.step(a)
        if r.terminated[0] or r.truncated[0]:
            w.reset(np.arange(1), rng)
    return n


def kinematic_vector(num_envs: int) -> Runner:
    def run(n: int) -> int:
        vec = gym.make_vec("icml26/ScenePilot-v0", num_envs=num_envs, scenario="all", phi="ttc")
        vec.reset(seed=0)
        rng = np.random.default_rng(0)
        batches = max(1, n // num_envs)
        for _ in range(batches):
            vec.step(rng.uniform(-1, 1, (num_envs, 1)))
        return batches * num_envs

    return run


def v1_single_env(phi: str = "ttc", env_id: str = "icml26/ScenePilot-v1") -> Runner:
    def run(n: int) -> int:
        env = gym.make(env_id, scenario="all", phi=phi)
        env.reset(seed=0)
        actions = np.random.default_rng(0).uniform(-1, 1, (n, 1)).astype(np.float32)
        for a in actions:
            *_, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
        return n

    return run


class V1Vector:
    """A v1 native vector env, built (and for the learned Phi, run until Phi is ready) untimed."""

    def __init__(self, num_envs: int, phi: str, env_id: str = "icml26/ScenePilot-v1") -> None:
        self.num_envs, self.phi, self.vec, self.env_id = num_envs, phi, None, env_id
        self.rng = np.random.default_rng(0)

    def prepare(self) -> None:
        if self.vec is not None:
            return
        self.vec = gym.make_vec(self.env_id, num_envs=self.num_envs, scenario="all", phi=self.phi)
        self.vec.reset(seed=0)
        learner = getattr(self.vec, "phi_learner", None)
        while learner is not None and not learner.ready:
            self.vec.step(self.rng.uniform(-1, 1, (self.num_envs, 1)))

    def __call__(self, n: int) -> int:
        self.prepare()
        batches = max(1, n // self.num_envs)
        for _ in range(batches):
            self.vec.step(self.rng.uniform(-1, 1, (self.num_envs, 1)))
        return batches * self.num_envs


def _metadrive_env():  # type: ignore[no-untyped-def]
    from icml26.envs.driving.backends.metadrive_backend import (
        disable_asset_download,
        metadrive_config,
    )

    disable_asset_download()
    from metadrive.envs.metadrive_env import MetaDriveEnv

    return MetaDriveEnv(metadrive_config())


_MD_ENV: list = []


def metadrive_physics(n: int) -> int:
    if not _MD_ENV:  # one engine per process (MetaDrive allows only one)
        _MD_ENV.append(_metadrive_env())
    env = _MD_ENV[0]
    env.reset()
    for i in range(n):
        env.step([0.0, 0.5])
        if i % 300 == 299:
            env.reset()
    return n


def metadrive_backend(n: int) -> int:
    if _MD_ENV:  # free the physics-only engine first
        _MD_ENV.pop().close()
    env = gym.make("icml26/ScenePilot-v0", scenario="all", phi="ttc", backend="metadrive")
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(n):
        *_, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    env.close()
    return n


def highway_fast(n: int) -> int:
    import highway_env  # noqa: F401

    env = gym.make("highway-fast-v0")
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(n):
        *_, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    env.close()
    return n


def measure(fn: Runner, n: int) -> tuple[float, float]:
    prepare = getattr(fn, "prepare", None)
    if callable(prepare):
        prepare()
    t0, c0 = time.perf_counter(), time.process_time()
    done = fn(n)
    return done / (time.perf_counter() - t0), done / max(time.process_time() - c0, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="fewer steps (a rough check)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    k = 0.25 if args.quick else 1.0
    configs: list[tuple[str, Runner, int]] = [
        ("kinematic single env (gym.make)", kinematic_single_env("idm"), int(6000 * k)),
        ("kinematic single env, cautious ego", kinematic_single_env("cautious"), int(6000 * k)),
        (
            "kinematic single env, batched path",
            kinematic_single_env("idm", fast=False),
            int(2000 * k),
        ),
        ("kinematic single world (no wrappers)", kinematic_world, int(6000 * k)),
        ("kinematic vector N=1", kinematic_vector(1), int(3000 * k)),
        ("kinematic vector N=64", kinematic_vector(64), int(64 * 300 * k)),
        ("kinematic vector N=1024", kinematic_vector(1024), int(1024 * 100 * k)),
        ("v1 single env, phi=ttc", v1_single_env("ttc"), int(6000 * k)),
        ("v1 single env, default phi (learning)", v1_single_env("online"), int(6000 * k)),
        ("v1 vector N=64, phi=ttc", V1Vector(64, "ttc"), int(64 * 300 * k)),
        ("v1 vector N=64, default phi (learning)", V1Vector(64, "online"), int(64 * 300 * k)),
        ("v1 vector N=1024, phi=ttc", V1Vector(1024, "ttc"), int(1024 * 100 * k)),
        ("v1 vector N=1024, default phi", V1Vector(1024, "online"), int(1024 * 100 * k)),
        ("v2 single env, phi=ttc", v1_single_env("ttc", V2), int(6000 * k)),
        ("v2 single env, default phi (learning)", v1_single_env("online", V2), int(6000 * k)),
        ("v2 vector N=64, phi=ttc", V1Vector(64, "ttc", V2), int(64 * 300 * k)),
        ("v2 vector N=64, default phi (learning)", V1Vector(64, "online", V2), int(64 * 300 * k)),
        ("v2 vector N=1024, phi=ttc", V1Vector(1024, "ttc", V2), int(1024 * 100 * k)),
        ("v2 vector N=1024, default phi", V1Vector(1024, "online", V2), int(1024 * 100 * k)),
    ]
    md_error = hw_error = None
    try:
        import highway_env  # noqa: F401

        configs.append(("highway-env highway-fast-v0", highway_fast, int(300 * k)))
    except ImportError as e:
        hw_error = f"highway-env not importable ({e}); pip install 'icml26-gym[peers]'"
    try:
        import metadrive  # noqa: F401

        configs += [
            ("MetaDrive 0.4.3 physics only (no traffic)", metadrive_physics, int(2000 * k)),
            ("MetaDrive backend (ScenePilot scenes)", metadrive_backend, int(1000 * k)),
        ]
    except ImportError as e:
        md_error = f"MetaDrive not importable ({e}); pip install metadrive-simulator==0.4.3"
    best: dict[str, tuple[float, float]] = {}
    from tqdm.auto import tqdm

    order = [c for c in configs if not c[0].startswith("MetaDrive backend")]
    tail = [c for c in configs if c[0].startswith("MetaDrive backend")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in tqdm(range(args.rounds), desc="rounds"):
            for name, fn, n in order + tail:
                wall, cpu = measure(fn, n)
                old = best.get(name, (0.0, 0.0))
                best[name] = (max(old[0], wall), max(old[1], cpu))
            if _MD_ENV:
                _MD_ENV.pop().close()
    ref_name = "MetaDrive 0.4.3 physics only (no traffic)"
    ref = best.get(ref_name, (float("nan"), float("nan")))[1]
    hw = best.get("highway-env highway-fast-v0", (float("nan"), float("nan")))[1]
    print(
        f"\n{'configuration':44s} {'steps/s (wall)':>15s} {'steps/s (CPU)':>14s} {'x MetaDrive':>12s} {'x highway-fast':>15s}"
    )
    for name, _, _ in configs:
        wall, cpu = best[name]
        print(f"{name:44s} {wall:15.0f} {cpu:14.0f} {cpu / ref:12.1f} {cpu / hw:15.1f}")
    for err in (md_error, hw_error):
        if err:
            print(err)
    ttc64 = best["v1 vector N=64, phi=ttc"][1]
    d64 = best["v1 vector N=64, default phi (learning)"][1]
    print(
        f"\nv1 vector N=64: default learned Phi runs at {d64 / ttc64:.0%} of its phi='ttc' rate "
        f"(target >= 50%); N=1024: {best['v1 vector N=1024, default phi'][1] / best['v1 vector N=1024, phi=ttc'][1]:.0%}"
    )
    for v in ("v2",):
        row = {name: best[name][1] for name, _, _ in configs if name.startswith(v)}
        r64 = row[f"{v} vector N=64, default phi (learning)"] / row[f"{v} vector N=64, phi=ttc"]
        print(
            f"{v} (the default version), x MetaDrive physics per core: single env "
            f"{row[f'{v} single env, phi=ttc'] / ref:.1f}x with phi='ttc' (target >= 10x), "
            f"{row[f'{v} single env, default phi (learning)'] / ref:.1f}x while the default Phi learns; "
            f"vector N=1024 {row[f'{v} vector N=1024, phi=ttc'] / ref:.1f}x with phi='ttc' (target >= 100x), "
            f"{row[f'{v} vector N=1024, default phi'] / ref:.1f}x while Phi learns; "
            f"vector N=64 default Phi at {r64:.0%} of phi='ttc' (target >= 50%)"
        )
    print(
        f"\ncores: {os.cpu_count()}, load average: {os.getloadavg()}; all rows single-threaded "
        "(vector rates are per core). Ratios use CPU-time rates."
    )


if __name__ == "__main__":
    main()
