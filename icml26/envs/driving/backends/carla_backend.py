"""The ``carla`` backend: the same protocol over a CARLA server (client ``pip install carla``).

Connection: ``backend_kwargs={"host": ..., "port": ..., "timeout": ...}`` or the environment
variables ``CARLA_HOST`` / ``CARLA_PORT`` (default ``localhost:2000``). With no server the
constructor fails within ``timeout`` seconds with a ``ConnectionError`` that says how to start one.

What it does once connected: synchronous mode with 0.1 s fixed steps; the scene's frame is
anchored at the map's spawn point ``spawn_index`` (CARLA's left-handed frame: y and yaw are
mirrored); the ego and actors are spawned as CARLA actors; each step applies the controls the
kinematic backend would integrate (throttle acc / 3, brake -acc / 8, steer / max steer angle,
walkers via ``WalkerControl``) and reads poses and velocities back. Roads are the town's, so the
scenario layouts only match where the chosen spawn point has the same geometry (SafeBench's
routes); collisions, sigma, risk and metrics come from the shared code. Not exercised in this
repository's CI (no server there); only the fail-fast path is tested.
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from icml26._entry_points import require
from icml26.envs.driving.backends import ExternalWorld
from icml26.envs.driving.scenarios import (
    KIND_BICYCLE,
    KIND_CAR,
    KIND_NONE,
    KIND_STATIC,
    KIND_WALKER,
)
from icml26.envs.driving.sim import DT

__all__ = ["CarlaWorld", "connect"]

_BLUEPRINTS = {
    KIND_CAR: "vehicle.audi.tt",
    KIND_STATIC: "vehicle.audi.tt",
    KIND_WALKER: "walker.pedestrian.0001",
    KIND_BICYCLE: "vehicle.diamondback.century",
}


def connect(
    host: str | None = None, port: int | None = None, timeout: float = 5.0
) -> tuple[Any, Any]:
    """A CARLA client and its world, or a ConnectionError explaining how to start a server."""
    carla = require("carla", "carla", "the ScenePilot carla backend")
    host = host or os.environ.get("CARLA_HOST", "localhost")
    port = int(port or os.environ.get("CARLA_PORT", 2000))
    client = carla.Client(host, port)
    client.set_timeout(float(timeout))
    try:
        return client, client.get_world()
    except RuntimeError as e:
        raise ConnectionError(
            f"ScenePilot carla backend: no CARLA server answered at {host}:{port} within {timeout} s ({e}). "
            f"Start one first, e.g. `docker run --rm --gpus all --net=host carlasim/carla:0.9.16 "
            f"bash CarlaUE4.sh -RenderOffScreen -carla-rpc-port={port}` (see docker/ in this repository), then "
            f"pass backend_kwargs={{'host': ..., 'port': ...}} or set CARLA_HOST / CARLA_PORT."
        ) from None


class CarlaWorld(ExternalWorld):
    """A world whose bodies are CARLA actors (one scene per client)."""

    backend = "carla"
    backend_note = (
        "CARLA server physics in synchronous mode (0.1 s); layout anchored at a map spawn point"
    )

    def __init__(self, *args: Any, host: str | None = None, port: int | None = None,
                 timeout: float = 5.0, spawn_index: int = 0) -> None:  # fmt: skip
        super().__init__(*args)
        self._actors: list[Any] = []
        self._client, self._world = connect(host, port, timeout)
        import carla

        self._carla = carla
        settings = self._world.get_settings()
        self._old_settings = settings
        new = carla.WorldSettings(
            synchronous_mode=True,
            fixed_delta_seconds=DT,
            no_rendering_mode=settings.no_rendering_mode,
        )
        self._world.apply_settings(new)
        self._anchor = self._world.get_map().get_spawn_points()[int(spawn_index)]

    def _to_carla(self, x: float, y: float, yaw: float) -> Any:
        c = self._carla
        a = self._anchor
        h = math.radians(a.rotation.yaw)
        # ours: x ahead, y left (right-handed); CARLA: y to the right (left-handed)
        wx = a.location.x + math.cos(h) * x + math.sin(h) * y
        wy = a.location.y + math.sin(h) * x - math.cos(h) * y
        return c.Transform(
            c.Location(wx, wy, a.location.z + 0.5),
            c.Rotation(yaw=a.rotation.yaw - math.degrees(yaw)),
        )

    def _from_carla(self, tf: Any, vel: Any) -> tuple[float, float, float, float, float]:
        a = self._anchor
        h = math.radians(a.rotation.yaw)
        dx, dy = tf.location.x - a.location.x, tf.location.y - a.location.y
        x, y = math.cos(h) * dx + math.sin(h) * dy, math.sin(h) * dx - math.cos(h) * dy
        yaw = -math.radians(tf.rotation.yaw - a.rotation.yaw)
        vx, vy = (
            math.cos(h) * vel.x + math.sin(h) * vel.y,
            math.sin(h) * vel.x - math.cos(h) * vel.y,
        )
        return x, y, yaw, vx, vy

    def reset(
        self, idx: np.ndarray, rng: np.random.Generator, scenario: np.ndarray | None = None
    ) -> None:
        super().reset(idx, rng, scenario)
        for a in self._actors:
            if a is not None:
                a.destroy()
        lib = self._world.get_blueprint_library()
        self._actors = []
        for j in range(self.x.shape[1]):
            kind = int(self.kind[0, j])
            if kind == KIND_NONE:
                self._actors.append(None)
                continue
            bp = lib.find("vehicle.lincoln.mkz_2020" if j == 0 else _BLUEPRINTS[kind])
            self._actors.append(
                self._world.spawn_actor(
                    bp, self._to_carla(self.x[0, j], self.y[0, j], self.yaw[0, j])
                )
            )
        self._world.tick()

    def _drive(self, acc: np.ndarray, steer: np.ndarray, moving: np.ndarray) -> None:
        c = self._carla
        for j, actor in enumerate(self._actors):
            if actor is None:
                continue
            kind, a, d = int(self.kind[0, j]), float(acc[0, j]), float(steer[0, j])
            if kind == KIND_WALKER:
                v = max(0.0, float(self.v[0, j]) + a * DT) if moving[0, j] else 0.0
                fwd = actor.get_transform().get_forward_vector()
                actor.apply_control(c.WalkerControl(direction=fwd, speed=v))
            else:
                max_steer = math.radians(70.0)
                control = c.VehicleControl(
                    throttle=float(np.clip(a / 3.0, 0, 1)) if moving[0, j] else 0.0,
                    brake=float(np.clip(-a / 8.0, 0, 1)) if moving[0, j] else 1.0,
                    steer=float(np.clip(-d / max_steer, -1, 1)),
                )
                actor.apply_control(control)
        self._world.tick()

    def _read(self, j: int) -> tuple[float, float, float, float, float] | None:
        actor = self._actors[j] if j < len(self._actors) else None
        return (
            None if actor is None else self._from_carla(actor.get_transform(), actor.get_velocity())
        )

    def close(self) -> None:
        for a in getattr(self, "_actors", []):
            if a is not None:
                a.destroy()
        self._actors = []
        if getattr(self, "_old_settings", None) is not None:
            self._world.apply_settings(self._old_settings)
            self._old_settings = None
