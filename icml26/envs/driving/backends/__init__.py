"""Optional simulator backends of ScenePilot: MetaDrive (physics) and CARLA (server).

Both are :class:`ExternalWorld`: one scene whose bodies move under the other simulator's physics
while the layout, planners, collisions, sigma, risk and metrics stay the kinematic backend's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.envs.driving.sim import DT, N_BODIES, KinematicWorld


class ExternalWorld(KinematicWorld):
    """A one-scene :class:`KinematicWorld` stepped by another simulator: a backend applies the
    controls and advances its physics (:meth:`_drive`), then gives each body's pose and
    velocity back in the scene's frame (:meth:`_read`)."""

    backend = "external"

    def __init__(self, n: int, scenarios: tuple[int, ...], action_mode: str = "speed",
                 planner: str = "idm", feasibility: Any = None, phi: Any = None,
                 max_steps: int = 300, ego_residual: bool = False) -> None:  # fmt: skip
        if n != 1:
            raise ValueError(
                f"{self.backend} backend: one scene per process (use gym.make_vec(..., "
                "vectorization_mode='async') to run several)"
            )
        super().__init__(
            n, scenarios, action_mode, planner, feasibility, phi, max_steps, ego_residual
        )

    def _drive(self, acc: np.ndarray, steer: np.ndarray, moving: np.ndarray) -> None:
        raise NotImplementedError

    def _read(self, j: int) -> tuple[float, float, float, float, float] | None:
        """Body ``j``'s (x, y, yaw, vx, vy), or None when the backend has no such body."""
        raise NotImplementedError

    def _integrate(self, acc: np.ndarray, steer: np.ndarray, moving: np.ndarray) -> np.ndarray:
        yaw0 = self.yaw.copy()
        self._drive(acc, steer, moving)
        new_v = np.zeros_like(self.v)
        for j in range(N_BODIES):
            state = self._read(j)
            if state is None:
                continue
            x, y, yaw, vx, vy = state
            self.x[0, j], self.y[0, j], self.yaw[0, j] = x, y, yaw
            new_v[0, j] = speed = float(np.hypot(vx, vy))
            beta = (np.arctan2(vy, vx) - self.yaw[0, j] + np.pi) % (2 * np.pi) - np.pi
            self.beta[0, j] = beta if speed > 0.05 else 0.0
        self._set_speed(new_v, moving | (new_v > 0))
        return ((self.yaw - yaw0 + np.pi) % (2 * np.pi) - np.pi) / DT
