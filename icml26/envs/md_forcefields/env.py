"""``icml26/MDForceField-v0``: a learned force field drives an MD rollout, OpenMM scores it."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icml26.envs._checks import check_int_at_least, check_render_mode
from icml26.envs.md_forcefields.systems import (
    ACCEL,
    KB_KCAL,
    Oracle,
    bond_lengths,
    load_system,
    radius_of_gyration,
)

ENV_NAME = "MDForceField-v0"


class MDForceFieldEnv(gym.Env):
    """
    ## Description
    The agent is a force field. Each step it receives the current atom positions and returns the
    forces on every atom; the env integrates one Langevin leapfrog step (kick with the agent's
    forces, drift, Ornstein-Uhlenbeck velocity refresh seeded by ``reset(seed=...)``), then scores
    the agent's forces against OpenMM's classical force field at the same positions and checks
    stability. Systems and units are in :mod:`icml26.envs.md_forcefields.systems` (A, fs,
    kcal/mol, kcal/mol/A). Labelled frames for training come from
    :func:`icml26.envs.md_forcefields.data.load_frames`, never from this env.

    ## Action Space
    ``Box(-max_force, max_force, (N, 3), float32)``: forces in kcal/mol/A.

    ## Observation Space
    ``Box(-inf, inf, (N, 3), float32)``: positions in A.

    ## Rewards
    ``-MAE(F_agent, F_openmm)`` (kcal/mol/A, over all components) at the positions the forces were
    asked for.

    ## Starting State
    The system's energy-minimized reference structure (OpenMM, once per env) with velocities drawn
    from Maxwell-Boltzmann at ``temperature`` (``np_random``). Reset's info holds ``numbers``,
    ``masses``, ``bonds``, ``system``, ``timestep_fs`` and the reference bond lengths and Rg.

    ## Episode End
    Terminated (``info["failed"] = True``) when a covalent bond deviates from its reference length
    by more than ``bond_tolerance`` A or a position is not finite (the stability criterion of the
    GGND-style MD benchmarks). Truncated after ``max_steps`` steps. ``info`` reports
    ``force_mae``, ``force_cos`` (mean per-atom cosine), ``energy`` (OpenMM, kcal/mol),
    ``max_bond_dev``, ``rg`` and ``time_ps``.

    ## Arguments
    ``gym.make("icml26/MDForceField-v0", system="ala2", temperature=300.0, timestep_fs=0.5,
    friction_per_ps=1.0, max_steps=2000, bond_tolerance=0.5, max_force=1e4)``;
    ``friction_per_ps=0`` gives NVE (velocity Verlet / leapfrog).

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/MDForceField-v0", max_steps=10)
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, info["system"]
    ((22, 3), 'ala2')
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros((22, 3), np.float32))
    >>> round(-reward, 2) == round(info["force_mae"], 2), terminated
    (True, False)
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        system: str = "ala2",
        temperature: float = 300.0,
        timestep_fs: float = 0.5,
        friction_per_ps: float = 1.0,
        max_steps: int = 2000,
        bond_tolerance: float = 0.5,
        max_force: float = 1e4,
        render_mode: str | None = None,
    ) -> None:
        check_render_mode(ENV_NAME, render_mode, self.metadata["render_modes"])
        for name, v in (
            ("temperature", temperature),
            ("timestep_fs", timestep_fs),
            ("bond_tolerance", bond_tolerance),
            ("max_force", max_force),
        ):
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v <= 0
            ):
                raise ValueError(f"{ENV_NAME}: {name} must be a finite number > 0, got {v!r}")
        if not isinstance(friction_per_ps, (int, float)) or friction_per_ps < 0:
            raise ValueError(f"{ENV_NAME}: friction_per_ps must be >= 0, got {friction_per_ps!r}")
        check_int_at_least(ENV_NAME, "max_steps", max_steps)
        self.system_name, self.temperature = system, float(temperature)
        self.dt, self.gamma = float(timestep_fs), float(friction_per_ps) / 1000.0  # per fs
        self.max_steps, self.bond_tol, self.max_force = (
            int(max_steps),
            float(bond_tolerance),
            float(max_force),
        )
        self.render_mode = render_mode
        self.mol = load_system(system)
        self._oracle: Oracle | None = None
        self.x0 = self._minimized()
        n = self.mol.n_atoms
        self.ref_bonds = bond_lengths(self.x0, self.mol.bonds)
        self.ref_rg = radius_of_gyration(self.x0, self.mol.masses)
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(n, 3), dtype=np.float32)
        self.action_space = spaces.Box(
            -self.max_force, self.max_force, shape=(n, 3), dtype=np.float32
        )
        self._x = self.x0.copy()
        self._v = np.zeros_like(self.x0)
        self._t, self._done, self._started = 0, True, False
        self._last: dict[str, Any] = {}

    @property
    def oracle(self) -> Oracle:
        if self._oracle is None:
            self._oracle = Oracle(self.mol)
        return self._oracle

    def _minimized(self) -> np.ndarray:
        import openmm

        ctx = self.oracle.context
        ctx.setPositions(self.mol.positions * 0.1)
        openmm.LocalEnergyMinimizer.minimize(ctx, 1.0, 500)
        x = ctx.getState(getPositions=True).getPositions(asNumpy=True)._value * 10.0
        return np.asarray(x, dtype=np.float64)

    def bond_deviation(self, x: np.ndarray) -> float:
        """Largest |bond length - reference| (A) at positions ``x``; inf if a position is not
        finite. A rollout fails when it exceeds ``bond_tol``."""
        if not np.all(np.isfinite(x)):
            return math.inf
        return float(np.max(np.abs(bond_lengths(x, self.mol.bonds) - self.ref_bonds)))

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the current positions (A, float64) and velocities (A/fs)."""
        return self._x.copy(), self._v.copy()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_oracle": None}

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        m = self.mol.masses
        self._x = self.x0.copy()
        sd = np.sqrt(KB_KCAL * self.temperature * ACCEL / m)[:, None]  # A/fs
        v = self.np_random.normal(size=self._x.shape) * sd
        self._v = v - (m[:, None] * v).sum(0) / m.sum()  # no centre-of-mass drift
        self._t, self._done, self._started = 0, False, True
        info = {
            "system": self.system_name,
            "numbers": self.mol.numbers.copy(),
            "masses": m.copy(),
            "bonds": self.mol.bonds.copy(),
            "timestep_fs": self.dt,
            "ref_bond_lengths": self.ref_bonds.copy(),
            "ref_rg": self.ref_rg,
            "max_steps": self.max_steps,
        }
        return self._x.astype(np.float32), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._started:
            raise RuntimeError(f"{ENV_NAME}: call reset() before step()")
        if self._done:
            raise RuntimeError(
                f"{ENV_NAME}: the episode has ended; call reset() before stepping again"
            )
        f = self._check_action(action)
        e_ref, f_ref = self.oracle(self._x)
        mae = float(np.abs(f - f_ref).mean())
        num = (f * f_ref).sum(1)
        den = np.linalg.norm(f, axis=1) * np.linalg.norm(f_ref, axis=1)
        cos = float(np.mean(np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)))
        m = self.mol.masses[:, None]
        self._v = self._v + self.dt * ACCEL * f / m
        if self.gamma > 0:
            c = math.exp(-self.gamma * self.dt)
            sd = np.sqrt((1 - c * c) * KB_KCAL * self.temperature * ACCEL / m)
            self._v = c * self._v + sd * self.np_random.normal(size=self._v.shape)
        self._x = self._x + self.dt * self._v
        self._t += 1
        finite = bool(np.all(np.isfinite(self._x)))
        dev = self.bond_deviation(self._x)
        failed = (not finite) or dev > self.bond_tol
        truncated = (not failed) and self._t >= self.max_steps
        self._done = failed or truncated
        rg = radius_of_gyration(self._x, self.mol.masses) if finite else math.nan
        info = {
            "force_mae": mae,
            "force_cos": cos,
            "energy": e_ref,
            "max_bond_dev": dev,
            "rg": rg,
            "time_ps": self._t * self.dt / 1000.0,
            "failed": failed,
            "steps": self._t,
        }
        self._last = info
        obs = np.nan_to_num(self._x, nan=0.0, posinf=0.0, neginf=0.0).astype(np.float32)
        return obs, -mae, failed, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        i = self._last
        return f"{self.system_name}: t={self._t * self.dt / 1000:.3f} ps, force MAE {i.get('force_mae', math.nan):.3g}, max bond dev {i.get('max_bond_dev', math.nan):.3g} A"

    def _check_action(self, action: Any) -> np.ndarray:
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{ENV_NAME}: expected forces in {self.action_space}, got {type(action).__name__}"
            ) from None
        if a.shape != self.action_space.shape:
            raise ValueError(
                f"{ENV_NAME}: expected forces of shape {self.action_space.shape} (atoms, xyz), got {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(
                f"{ENV_NAME}: forces must be finite, got {int((~np.isfinite(a)).sum())} NaN/inf entries"
            )
        if np.any(np.abs(a) > self.max_force * (1 + 1e-6)):
            raise ValueError(
                f"{ENV_NAME}: forces must lie in [-{self.max_force:g}, {self.max_force:g}] kcal/mol/A, got max |F| {np.abs(a).max():g}"
            )
        return a
