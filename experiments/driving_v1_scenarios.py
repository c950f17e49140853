"""Does every ScenePilot scenario discriminate? Collision and red-light rates per scenario, ego
planner and non-learning adversary (SafeBench's scripted behaviour with the drawn trigger and speed,
a uniform random action each step, and -- v2 -- the deliberately reckless actor), over distinct
randomized episodes (``--episodes`` scenes of one vector reset with seed 0), and the boundary-band
share: of the collisions, the share whose minimum sigma up to 1 s before contact was >= k.

    OMP_NUM_THREADS=1 python experiments/driving_v1_scenarios.py [--episodes 60] [--version v2]

Prints a markdown table (Wilson 95% intervals); the tables in ``docs/envs/driving.md`` and the
driving family docstring come from this script (v1: ``--egos human,idm,cautious``; v2:
``--version v2 --egos human --actors scripted,random,reckless``).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from icml26.envs.driving.env_v1 import ScenePilotV1VectorEnv, scripted_adversary_v1  # noqa: E402
from icml26.envs.driving.env_v2 import (  # noqa: E402
    ScenePilotV2VectorEnv,
    reckless_adversary_v2,
    scripted_adversary_v2,
)
from icml26.envs.driving.scenarios import LAYOUTS  # noqa: E402
from icml26.stats import wilson_ci  # noqa: E402

VERSIONS = {
    "v1": (ScenePilotV1VectorEnv, scripted_adversary_v1),
    "v2": (ScenePilotV2VectorEnv, scripted_adversary_v2),
}
BAND_K = (0.0, 0.35)


def _actions(actor, obs: np.ndarray, scenario: int, trig: np.ndarray, rp: dict, dim: int):
    rows = []
    for i in range(len(obs)):
        p = {"trigger_scale": rp["trigger_scale"][i], "adv_speed_scale": rp["adv_speed_scale"][i]}
        a, trig[i] = actor(obs[i], scenario, bool(trig[i]), p, dim)
        rows.append(a)
    return np.stack(rows)


def run(
    scenario: int,
    ego: str,
    adversary: str,
    episodes: int,
    seed: int = 0,
    version: str = "v1",
    action: str = "speed",
) -> dict[str, float]:
    """One episode per scene (``episodes`` scenes, SAME_STEP autoreset, first episodes only)."""
    cls, scripted = VERSIONS[version]
    venv = cls(num_envs=episodes, scenario=scenario, ego=ego, phi="ttc", action=action)
    dim = 1 if action == "speed" else 2
    actor = {"scripted": scripted, "reckless": reckless_adversary_v2}.get(adversary)
    obs, _ = venv.reset(seed=seed)
    rng = np.random.default_rng(seed + 1)
    trig = np.zeros(episodes, bool)
    done = np.zeros(episodes, bool)
    coll, red, msp = np.zeros(episodes), np.zeros(episodes), np.ones(episodes)
    while not done.all():
        if actor is None:
            a = rng.uniform(-1, 1, (episodes, dim))
        else:
            a = _actions(actor, obs, scenario, trig, venv.world.rparams, dim)
        obs, _, te, tr, info = venv.step(a)
        if "episode_metrics" in info:
            em, mask = info["episode_metrics"], info["_episode_metrics"]
            new = mask & ~done
            coll[new], red[new] = em["collision"][new], em["run_red_light"][new]
            msp[new] = em["min_sigma_pre_collision"][new]
            done |= mask
            trig[mask] = False
    k = int(coll.sum())
    _, lo, hi = wilson_ci(k, episodes)[:3]
    hit = coll > 0
    out = {"rate": k / episodes, "lo": lo, "hi": hi, "red": red.mean(), "n_coll": k}
    for kk in BAND_K:
        out[f"band_{kk}"] = float((msp[hit] >= kk).mean()) if k else float("nan")
    out["median_min_sigma"] = float(np.median(msp[hit])) if k else float("nan")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=60)
    ap.add_argument("--egos", default="idm,cautious")
    ap.add_argument("--version", choices=sorted(VERSIONS), default="v1")
    ap.add_argument("--actors", default="scripted,random")
    ap.add_argument("--action", choices=("speed", "acc_steer"), default="speed")
    ap.add_argument("--scenarios", default=",".join(str(s) for s in sorted(LAYOUTS)))
    args = ap.parse_args()
    print(
        "| scenario | ego | adversary | collision rate [95% CI] | red-light rate | collisions "
        "| band share k=0 | band share k=0.35 | median pre-collision min sigma |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for sc in (int(s) for s in args.scenarios.split(",")):
        for ego in args.egos.split(","):
            for adv in args.actors.split(","):
                r = run(sc, ego, adv, args.episodes, version=args.version, action=args.action)
                print(
                    f"| {sc} | {ego} | {adv} | {r['rate']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}] "
                    f"| {r['red']:.2f} | {r['n_coll']} | {r['band_0.0']:.2f} | {r['band_0.35']:.2f} "
                    f"| {r['median_min_sigma']:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
