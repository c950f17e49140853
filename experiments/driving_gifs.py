"""One GIF per ScenePilot scenario (SafeBench's scripted adversary vs the IDM planner) in docs/envs/driving/.

python experiments/driving_gifs.py [--size 320] [--every 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np

import icml26  # noqa: F401
from icml26.agents.driving.baselines import ScriptedAdversary
from icml26.envs.driving.render import render_topdown
from icml26.envs.driving.scenarios import LAYOUTS

OUT = Path(__file__).resolve().parents[1] / "docs" / "envs" / "driving"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=320)
    ap.add_argument("--every", type=int, default=3, help="keep every n-th step")
    args = ap.parse_args()
    from PIL import Image
    from tqdm.auto import tqdm

    OUT.mkdir(parents=True, exist_ok=True)
    for sc in tqdm(sorted(LAYOUTS), desc="scenarios"):
        env = gym.make("icml26/ScenePilot-v0", scenario=sc, ego="idm", phi="ttc")
        agent = ScriptedAdversary()
        obs, info = env.reset(seed=0)
        agent.reset(0)
        world = env.unwrapped.world
        frames = [render_topdown(world, 0, size=args.size)]
        t = 0
        while True:
            obs, _, term, trunc, info = env.step(agent.act(obs, info))
            t += 1
            if t % args.every == 0 or term or trunc:
                frames.append(render_topdown(world, 0, size=args.size))
            if term or trunc:
                break
        frames += [frames[-1]] * 8  # hold the last frame
        imgs = [
            Image.fromarray(np.asarray(f)).convert("P", palette=Image.ADAPTIVE, colors=64)
            for f in frames
        ]
        imgs[0].save(
            OUT / f"scenario_{sc}.gif",
            save_all=True,
            append_images=imgs[1:],
            duration=int(100 * args.every),
            loop=0,
            optimize=True,
        )
        env.close()
    print(f"wrote {len(LAYOUTS)} GIFs to {OUT}")


if __name__ == "__main__":
    main()
