"""``icml26/PointReach-v0``: the suite's tutorial environment (a damped 2-D double integrator)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from icml26.envs._checks import check_render_mode

ARENA = 2.0  # half-width of the square arena, metres
DT = 0.1  # integration step, seconds
MAX_ACCEL = 2.0  # acceleration at |action| = 1, m/s^2
DRAG = 0.5  # linear drag coefficient, 1/s (terminal speed MAX_ACCEL / DRAG = 4 m/s)
GOAL_RADIUS = 0.05
STOP_SPEED = 0.1
ACTION_COST = 0.05


class PointReachEnv(gym.Env):
    """
    ## Description
    A point mass moves in the square arena [-2, 2]^2 under a force the agent chooses and linear
    drag. It must reach a goal and stop there. It is the suite's tutorial env: small, exactly
    solvable by a PD controller, learnable by PPO in a few thousand steps, and it exercises
    registration, the runner, the store and the leaderboard end to end.

    Dynamics (semi-implicit Euler, dt = 0.1 s): ``v <- v + dt (2 a - 0.5 v)``, ``p <- p + dt v``.
    Hitting a wall clamps the position and zeroes the normal velocity.

    ## Action Space
    ``Box(-1, 1, (2,), float32)``: the force along x and y (acceleration 2 m/s^2 at 1). NaN,
    wrong shapes and values outside [-1, 1] raise a ``ValueError`` and leave the state unchanged.

    ## Observation Space
    ``Box((6,), float32)``: ``[x, y, vx, vy, gx - x, gy - y]`` with positions in [-2, 2],
    velocities in [-4, 4] and goal offsets in [-4, 4].

    ## Rewards
    ``-|p - g| - 0.05 |a|^2`` per step, so an episode return lies in [-200 * 5.76, 0].

    ## Starting State
    Position and goal uniform in [-1.5, 1.5]^2, at least 1 m apart; zero velocity.

    ## Episode End
    Terminated when ``|p - g| < 0.05`` and ``|v| < 0.1``. Truncated after 200 steps (by the
    registered ``TimeLimit``). ``step`` before the first ``reset`` or after termination raises
    ``RuntimeError``.

    ## Arguments
    ``gym.make("icml26/PointReach-v0", render_mode=None | "rgb_array")``.

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/PointReach-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(np.array([1.0, 0.0], dtype=np.float32))
    >>> print(obs[2:4], round(float(reward), 4), terminated)
    [0.2 0. ] -2.0111 False
    """

    metadata = {
        "render_modes": ["rgb_array"],
        "render_fps": int(1 / DT),
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(self, render_mode: str | None = None) -> None:
        check_render_mode("PointReach-v0", render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        vmax = MAX_ACCEL / DRAG
        high = np.array([ARENA, ARENA, vmax, vmax, 2 * ARENA, 2 * ARENA], dtype=np.float32)
        self.observation_space = spaces.Box(-high, high, dtype=np.float32)
        self._pos = np.zeros(2)
        self._vel = np.zeros(2)
        self._goal = np.zeros(2)
        self._running = False  # between reset() and termination

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        while True:
            pos = self.np_random.uniform(-1.5, 1.5, size=2)
            goal = self.np_random.uniform(-1.5, 1.5, size=2)
            if np.linalg.norm(pos - goal) >= 1.0:
                break
        self._pos, self._vel, self._goal = pos, np.zeros(2), goal
        self._running = True
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._running:
            raise RuntimeError(
                "PointReach-v0: call reset() before step() (the episode has ended or not begun)"
            )
        a = self._check_action(action)
        vel = self._vel + DT * (MAX_ACCEL * a - DRAG * self._vel)
        pos = self._pos + DT * vel
        hit = np.abs(pos) > ARENA
        pos = np.clip(pos, -ARENA, ARENA)
        vel = np.where(hit, 0.0, vel)
        vmax = MAX_ACCEL / DRAG
        self._pos, self._vel = pos, np.clip(vel, -vmax, vmax)
        dist = float(np.linalg.norm(self._pos - self._goal))
        reward = -dist - ACTION_COST * float(a @ a)
        terminated = dist < GOAL_RADIUS and float(np.linalg.norm(self._vel)) < STOP_SPEED
        self._running = not terminated
        return self._obs(), reward, terminated, False, self._info()

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        size = 128
        img = np.full((size, size, 3), 255, dtype=np.uint8)
        yy, xx = np.mgrid[0:size, 0:size]

        def to_px(p: np.ndarray) -> tuple[float, float]:
            return (
                (p[0] + ARENA) / (2 * ARENA) * (size - 1),
                (ARENA - p[1]) / (2 * ARENA) * (size - 1),
            )

        for point, colour, radius in (
            (self._goal, (40, 170, 60), 6),
            (self._pos, (30, 60, 200), 4),
        ):
            cx, cy = to_px(point)
            img[(xx - cx) ** 2 + (yy - cy) ** 2 <= radius**2] = colour
        return img

    # ------------------------------------------------------------------ helpers
    def _obs(self) -> np.ndarray:
        return np.concatenate([self._pos, self._vel, self._goal - self._pos]).astype(np.float32)

    def _info(self) -> dict[str, Any]:
        return {
            "distance": float(np.linalg.norm(self._pos - self._goal)),
            "goal": self._goal.copy(),
        }

    def _check_action(self, action: Any) -> np.ndarray:
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"PointReach-v0: expected an action in {self.action_space}, got {action!r}"
            ) from None
        if a.shape != (2,):
            raise ValueError(
                f"PointReach-v0: expected an action of shape (2,) in {self.action_space}, "
                f"got shape {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"PointReach-v0: action must be finite, got {a.tolist()}")
        if np.any(np.abs(a) > 1.0 + 1e-6):
            raise ValueError(f"PointReach-v0: action must lie in [-1, 1]^2, got {a.tolist()}")
        return np.clip(a, -1.0, 1.0)
