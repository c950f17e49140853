"""Optional simulator backends of ScenePilot: MetaDrive (physics) and CARLA (server).

Both are :class:`ExternalWorld`: one scene whose bodies move under the other simulator's physics
while the layout, planners, collisions, sigma, risk and metrics stay the kinematic backend's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.envs.driving.sim import DT, N_BODIES, KinematicWorld, Scene


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

    def physics(self, S: Scene, acc: list, steer: list, moving: list) -> list:
        """The kernel's step moves the bodies here: the arrays go to the backend and come back."""
        self._store(S, None)
        acc, steer, moving = (
            np.stack(np.broadcast_arrays(*a), axis=1) for a in (acc, steer, moving)
        )
        rates = self._integrate(acc, steer, moving)
        fresh = self._scene(None)
        for k in ("x", "y", "yaw", "v", "beta", "vx", "vy", "ax", "ay", "frozen"):
            setattr(S, k, [a.copy() for a in getattr(fresh, k)])
        return list(rates.T)

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
        # speeds, velocities along yaw + beta and the finite-difference acceleration
        keep = moving | (new_v > 0)
        nvx, nvy = new_v * np.cos(self.yaw + self.beta), new_v * np.sin(self.yaw + self.beta)
        self.ax[...] = np.where(keep | self.frozen, (nvx - self.vx) / DT, 0.0)
        self.ay[...] = np.where(keep | self.frozen, (nvy - self.vy) / DT, 0.0)
        self.v[...], self.vx[...], self.vy[...] = new_v, nvx, nvy
        return ((self.yaw - yaw0 + np.pi) % (2 * np.pi) - np.pi) / DT
