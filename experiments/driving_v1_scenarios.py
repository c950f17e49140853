"""Does every ScenePilot-v1 scenario discriminate? Collision and red-light rates per scenario, ego
planner and non-learning adversary (SafeBench's scripted behaviour with v1's drawn trigger and speed,
and a uniform random action each step), over distinct randomized episodes (seeds 0..n-1).

    OMP_NUM_THREADS=1 python experiments/driving_v1_scenarios.py [--episodes 60]

Prints a markdown table (Wilson 95% intervals); the table in ``docs/envs/driving.md`` / the
ScenePilot-v1 notes comes from this script.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from icml26.envs.driving.env_v1 import ScenePilotV1VectorEnv  # noqa: E402
from icml26.envs.driving.scenarios import LAYOUTS  # noqa: E402
from icml26.stats import wilson_ci  # noqa: E402


def scripted_actions(obs: np.ndarray, scenario: int, trig: np.ndarray, params: dict) -> np.ndarray:
    """The v1 scripted adversary for a batch (see ``scripted_adversary_v1``); updates ``trig``."""
    lay = LAYOUTS[scenario]
    d = np.hypot(obs[:, 9] - obs[:, 0], obs[:, 10] - obs[:, 1])
    trig |= (lay.trigger_distance <= 0.0) | (d < lay.trigger_distance * params["trigger_scale"])
    target = (lay.adv_base + lay.adv_scale * lay.scripted_action) * params["adv_speed_scale"]
    a = np.clip((target - lay.adv_base) / lay.adv_scale, -1.0, 1.0)
    return np.where(trig, a, -1.0)[:, None]


def run(scenario: int, ego: str, adversary: str, episodes: int, seed: int = 0) -> dict[str, float]:
    """One episode per scene (``episodes`` scenes, SAME_STEP autoreset, first episodes only)."""
    venv = ScenePilotV1VectorEnv(num_envs=episodes, scenario=scenario, ego=ego, phi="ttc")
    obs, _ = venv.reset(seed=seed)
    rng = np.random.default_rng(seed + 1)
    w = venv.world
    trig = np.zeros(episodes, bool)
    done = np.zeros(episodes, bool)
    coll = np.zeros(episodes)
    red = np.zeros(episodes)
    avoid = np.zeros(episodes)
    while not done.all():
        if adversary == "scripted":
            params = {k: w.rparams[k] for k in ("trigger_scale", "adv_speed_scale")}
            a = scripted_actions(obs, scenario, trig, params)
        else:
            a = rng.uniform(-1, 1, (episodes, 1))
        obs, _, te, tr, info = venv.step(a)
        if "episode_metrics" in info:
            em, mask = info["episode_metrics"], info["_episode_metrics"]
            new = mask & ~done
            coll[new], red[new] = em["collision"][new], em["run_red_light"][new]
            avoid[new] = em["avoidable_collision"][new]
            done |= mask
            trig[mask] = False
    k = int(coll.sum())
    _, lo, hi = wilson_ci(k, episodes)[:3]
    return {
        "rate": k / episodes,
        "lo": lo,
        "hi": hi,
        "red": red.mean(),
        "avoid": avoid.sum() / max(k, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=60)
    ap.add_argument("--egos", default="idm,cautious")
    args = ap.parse_args()
    print(
        "| scenario | ego | adversary | collision rate [95% CI] | red-light rate | avoidable share |"
    )
    print("|---|---|---|---|---|---|")
    for sc in sorted(LAYOUTS):
        for ego in args.egos.split(","):
            for adv in ("scripted", "random"):
                r = run(sc, ego, adv, args.episodes)
                print(
                    f"| {sc} | {ego} | {adv} | {r['rate']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}] "
                    f"| {r['red']:.2f} | {r['avoid']:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
