"""Drive ScenePilot episodes on a CARLA server: the `driving-carla` service of compose.yaml.

    CARLA_HOST=carla CARLA_PORT=2000 python docker/carla_check.py --episodes 1 --wait 300

Waits until the server's RPC port accepts connections (CARLA takes a minute or more to start),
then runs seeded random-adversary episodes of ``icml26/ScenePilot-v0`` with ``backend="carla"``;
the driving env's carla backend reads ``CARLA_HOST`` and ``CARLA_PORT``.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=1, help="episodes to drive (default 1)")
    p.add_argument("--wait", type=float, default=300.0, help="seconds to wait for the server (default 300)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    p.add_argument("--env-id", default="icml26/ScenePilot-v0", help="driving env id")
    return p


def carla_address() -> tuple[str, int]:
    host = os.environ.get("CARLA_HOST", "localhost")
    port_text = os.environ.get("CARLA_PORT", "2000")
    try:
        port = int(port_text)
    except ValueError:
        raise SystemExit(f"CARLA_PORT must be an integer port, got {port_text!r}") from None
    return host, port


def wait_for_server(host: str, port: int, wait_s: float) -> None:
    """Return once ``host:port`` accepts a TCP connection; exit with advice after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=2.0):
                return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise SystemExit(
                    f"no CARLA server at {host}:{port} after {wait_s:g} s ({e}). Start one with "
                    "`docker compose -f docker/compose.yaml --profile carla up carla` or "
                    "`docker run --gpus all -p 2000-2002:2000-2002 carlasim/carla:0.9.16 "
                    "./CarlaUE4.sh -RenderOffScreen`, and set CARLA_HOST/CARLA_PORT."
                ) from None
            time.sleep(2.0)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    host, port = carla_address()
    wait_for_server(host, port, args.wait)
    import gymnasium as gym

    import icml26  # noqa: F401  (registers the env ids)

    env = gym.make(args.env_id, backend="carla")
    try:
        for ep in range(args.episodes):
            seed = args.seed + ep
            obs, info = env.reset(seed=seed)
            env.action_space.seed(seed)
            total, steps = 0.0, 0
            while True:
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                total += float(reward)
                steps += 1
                if terminated or truncated:
                    break
            keys = ", ".join(f"{k}={info[k]}" for k in sorted(info) if isinstance(info[k], (bool, int, float)))
            print(f"episode {ep} (seed {seed}) on CARLA {host}:{port}: {steps} steps, return {total:.3f}; {keys}")
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
