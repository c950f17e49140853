"""The ``metadrive`` backend: the same scenes with MetaDrive 0.4.3's Bullet physics for every body.

What it does, exactly: one headless MetaDrive engine (``use_render=False``, no traffic, the
straight map ``"S"`` as ground) per scene. The ego and the actors are MetaDrive objects
(``DefaultVehicle`` for cars and the parked obstacle, ``Pedestrian``, ``Cyclist``) placed at the
scenario's coordinates (shifted onto MetaDrive's map frame). Each 0.1 s step the controls that
the kinematic backend would integrate -- the ego planner's [acc, steer] and the adversary's
target speed or [acc, steer] -- are applied as MetaDrive controls (steering / 40 deg; throttle
acc / 3, brake acc / 8 as in ScenePilot's CARLA ``convert_actions``; walkers and cyclists get
velocities), the engine runs ``decision_repeat`` physics substeps of 0.02 s, and the poses and
velocities are read back. Road geometry, collisions (oriented boxes), sigma, risk and metrics
are the kinematic backend's. MetaDrive's reward, termination and observations are not used.

Offline: MetaDrive's wheel has no assets and downloads them on first start; this backend
disables that download (``BaseEngine.try_pull_asset``), which physics-only mode does not need.
Rendering through MetaDrive is therefore unavailable; ``render()`` draws the top-down view.
"""

from __future__ import annotations

import logging
import math
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

__all__ = ["MetaDriveWorld", "metadrive_config", "disable_asset_download"]

_log = logging.getLogger(__name__)
_MAX_STEER = math.radians(40.0)  # MetaDrive DefaultVehicle max_steering (deg)
_ORIGIN = np.array([5.0, 7.0])  # MetaDrive "S" map: the first lane starts at (0, 7) heading +x


def disable_asset_download() -> None:
    """Stop MetaDrive from fetching its asset archive at engine start (physics needs none)."""
    from metadrive.engine.base_engine import BaseEngine

    if not getattr(BaseEngine, "_icml26_offline", False):
        BaseEngine.try_pull_asset = staticmethod(lambda: None)
        BaseEngine._icml26_offline = True
        _log.info("MetaDrive asset download disabled: physics only, no MetaDrive rendering")


def metadrive_config(**overrides: Any) -> dict[str, Any]:
    """Headless, physics-only MetaDrive config (no traffic, no termination by MetaDrive)."""
    cfg = dict(
        use_render=False,
        traffic_density=0.0,
        map="S",
        log_level=50,
        num_scenarios=1,
        start_seed=0,
        out_of_road_done=False,
        crash_vehicle_done=False,
        crash_object_done=False,
        horizon=None,
        vehicle_config=dict(show_navi_mark=False, show_dest_mark=False, show_line_to_dest=False),
    )
    cfg.update(overrides)
    return cfg


class MetaDriveWorld(ExternalWorld):
    """A world whose bodies move under MetaDrive physics (one scene per process)."""

    backend = "metadrive"
    backend_note = (
        "MetaDrive 0.4.3 Bullet physics, headless, assets download disabled; layout, collisions, "
        "sigma and metrics from the kinematic backend"
    )

    def __init__(self, *args: Any, **config: Any) -> None:
        require("metadrive", "metadrive", "the ScenePilot metadrive backend")
        super().__init__(*args)
        disable_asset_download()
        from metadrive.envs.metadrive_env import MetaDriveEnv

        self._md = MetaDriveEnv(metadrive_config(**config))
        self._md.reset()
        self._objs: list[Any] = []

    # ------------------------------------------------------------------ reset / spawn
    def reset(
        self, idx: np.ndarray, rng: np.random.Generator, scenario: np.ndarray | None = None
    ) -> None:
        super().reset(idx, rng, scenario)
        from metadrive.component.traffic_participants.cyclist import Cyclist
        from metadrive.component.traffic_participants.pedestrian import Pedestrian
        from metadrive.component.vehicle.vehicle_type import DefaultVehicle

        eng = self._md.engine
        if len(self._objs) > 1:  # the actors we spawned (the ego is MetaDrive's own agent)
            eng.clear_objects([o.id for o in self._objs[1:] if o is not None])
        ego = self._md.agent
        self._objs = [ego]
        for j in range(1, self.x.shape[1]):
            kind = int(self.kind[0, j])
            pos = [float(self.x[0, j] + _ORIGIN[0]), float(self.y[0, j] + _ORIGIN[1])]
            h = float(self.yaw[0, j])
            if kind in (
                KIND_CAR,
                KIND_STATIC,
            ):  # spawn on a lane (navigation needs one), then move it
                obj = eng.spawn_object(
                    DefaultVehicle,
                    vehicle_config=dict(),
                    position=list(_ORIGIN + [10.0 * j, 0.0]),
                    heading=0.0,
                )
                obj.set_position(pos)
                obj.set_heading_theta(h)
                obj.set_velocity([1.0, 0.0], 0.0)
            elif kind == KIND_WALKER:
                obj = eng.spawn_object(
                    Pedestrian, name=None, position=pos, heading_theta=h, random_seed=0
                )
            elif kind == KIND_BICYCLE:
                obj = eng.spawn_object(
                    Cyclist, name=None, position=pos, heading_theta=h, random_seed=0
                )
            else:
                obj = None
            self._objs.append(obj)
        ego.set_position([float(self.x[0, 0] + _ORIGIN[0]), float(self.y[0, 0] + _ORIGIN[1])])
        ego.set_heading_theta(float(self.yaw[0, 0]))
        ego.set_velocity([1.0, 0.0], 0.0)
        for j, o in enumerate(self._objs):  # MetaDrive's own vehicle sizes
            if o is not None and int(self.kind[0, j]) in (KIND_CAR, KIND_STATIC):
                self.length[0, j], self.width[0, j] = float(o.LENGTH), float(o.WIDTH)
        self._update_ego_projection()

    # ------------------------------------------------------------------ physics
    def _drive(self, acc: np.ndarray, steer: np.ndarray, moving: np.ndarray) -> None:
        for j, o in enumerate(self._objs):
            kind = int(self.kind[0, j])
            if o is None or kind == KIND_NONE:
                continue
            a, d = float(acc[0, j]), float(steer[0, j])
            if kind in (KIND_CAR,) and moving[0, j]:
                pedal = a / 3.0 if a >= 0 else a / 8.0  # ScenePilot's convert_actions
                o.before_step([float(np.clip(d / _MAX_STEER, -1, 1)), float(np.clip(pedal, -1, 1))])
            elif kind in (KIND_CAR, KIND_STATIC):
                o.before_step([0.0, -1.0])
            else:  # walkers and cyclists move kinematically in MetaDrive too
                v = max(0.0, float(self.v[0, j]) + a * DT) if moving[0, j] else 0.0
                h = float(self.yaw[0, j]) + (2.0 * d * DT if kind == KIND_WALKER else 0.0)
                o.set_heading_theta(h)
                o.set_velocity([math.cos(h), math.sin(h)], v)
        self._md.engine.step(self._md.config["decision_repeat"])

    def _read(self, j: int) -> tuple[float, float, float, float, float] | None:
        o = self._objs[j] if j < len(self._objs) else None
        if o is None or int(self.kind[0, j]) == KIND_NONE:
            return None
        (x, y), (vx, vy) = o.position, np.asarray(o.velocity, dtype=float)[:2]
        return x - _ORIGIN[0], y - _ORIGIN[1], float(o.heading_theta), vx, vy

    def close(self) -> None:
        if getattr(self, "_md", None) is not None:
            self._md.close()
            self._md = None

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("the metadrive backend holds a live MetaDrive engine and cannot be pickled")
