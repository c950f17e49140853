"""``icml26/Boltzmann<Target>-v0``: learn to sample a Boltzmann density under an energy budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from icml26.envs.boltzmann.datasets import LazyDataset
from icml26.envs.boltzmann.registry import make_target
from icml26.envs.boltzmann.targets import DATA_KINDS, Target

__all__ = ["BoltzmannEnv"]


class BoltzmannEnv(gym.Env):
    """
    ## Description
    A Boltzmann generator's training loop as an environment. The target is a density
    ``p(x) ∝ exp(-u(x))`` with reduced energy ``u`` in kT (GMM-40, Many-Well-32, Funnel-10, DW4,
    LJ13, alanine dipeptide through OpenMM). ``reset`` hands the agent a labelled data set
    (configurations with their target energies: exact samples, MCMC or OpenMM MD, unbiased or
    biased) and a budget of energy evaluations; each ``step`` sends a batch of configurations
    and returns their energies (and forces), charging one evaluation per configuration. The
    score is not a reward: a trial's metrics (ESS, NLL, ...) come from the agent's sampler
    after the episode (see ``icml26.benchmarks.tasks.boltzmann``).

    ## Action Space
    ``Box(-inf, inf, (batch_size, dim), float32)``: a batch of configurations. Smaller batches
    ``(n, dim)`` with ``1 <= n <= batch_size`` are accepted too. NaN/inf entries, a wrong shape
    or more configurations than evaluations left raise a ``ValueError`` before anything is
    charged. Alanine dipeptide: Cartesian coordinates in nm, atom order of the openmmtools files.

    ## Observation Space
    ``Dict``: ``energies`` ``Box(-inf, inf, (batch_size,), float64)`` (the batch's reduced
    energies, zero-padded), ``valid`` ``MultiBinary(batch_size)`` (1 where a configuration was
    evaluated), ``evaluations_left`` ``Box(0, max(energy_budget, 1), (1,), int64)``. Enormous energies
    are returned as they are (``+inf`` included); an energy that evaluates to NaN (for example
    coincident particles) is reported as ``+inf`` and counted in ``info["nonfinite"]``.

    ## Rewards
    Always 0: the task's metrics are computed from the agent's sampler, not from steps.

    ## Starting State
    ``info["dataset"]``: a mapping ``{"x": (dataset_size, dim) float32, "energy": (dataset_size,)
    float64}`` drawn with the reset seed (exact samples, or a random subset of the cached
    MCMC/MD pool) when it is first read: reset itself never runs MCMC or MD, so constructing,
    resetting and stepping an env is fast on a fresh cache (the pool is generated, with a progress
    bar, by the first access and cached); ``info["budget"]``: energy evaluations and data set size; also ``target``,
    ``dim``, ``geometry`` (``"euclidean"``, ``"com_free"``, ``"alanine"``), ``scale``,
    ``n_particles``, ``spatial_dim``, ``log_z`` (None when unknown), ``data``.

    ## Episode End
    Terminated when the energy budget is spent; stepping afterwards raises until ``reset``.
    An ``energy_budget`` of 0 ends the episode at reset (data-only learning).
    Step ``info``: ``energies`` (n,), ``forces`` (n, dim) = -grad u (kT per unit length),
    ``nonfinite`` and the evaluation counters. The env keeps ``total_evaluations`` over its
    lifetime; pickling drops the OpenMM Context, which is rebuilt on the next step (the copy
    continues identically).

    ## Arguments
    ``gym.make("icml26/BoltzmannGMM40-v0", data="unbiased" | "biased" | "none",
    dataset_size=10_000, energy_budget=10_000, batch_size=256, return_forces=True,
    target_kwargs={})``. Alanine dipeptide takes ``target_kwargs={"solvent": "vacuum" | "obc1",
    "backend": "openmm" | "torch", "data_preset": "full" | "tiny", "n_workers": 1}``.

    ``render_mode`` is accepted for API uniformity; only ``None`` is valid (nothing to draw).

    ## Ecosystem
    ``icml26.integrations.sb3.wrap(env)`` applies ``NormalizedAction``: ``Box(-1, 1)`` actions
    mapped affinely onto ``env.unwrapped.action_bounds``, a box of half-width ``10 * scale``
    around 0 per coordinate (``scale`` = the target's typical spread; 2 nm for alanine
    dipeptide, whose openmmtools coordinates are not centred). The env itself keeps accepting
    any finite configuration. ``icml26.envs.boltzmann.export.write_dataset(info["dataset"],
    path, target=env.unwrapped.target)`` writes the data as npz with units (plus PDB and DCD for
    alanine dipeptide).

    ## Version History
    * v0: initial version.
    * ``BoltzmannAlanineDipeptide-v1``: decorrelated MD data (independent replica-exchange runs,
      training frames thinned by the autocorrelation time; preset ``"decorrelated"``).
    * ``BoltzmannAlanineDipeptide-v2``: preset ``"converged"`` (300-947 K ladder, 8 + 4 runs of
      7.5 ns: >= 10^4 training configurations; issue 40).

    ## Example
    >>> import gymnasium as gym, numpy as np, icml26
    >>> env = gym.make("icml26/BoltzmannGMM40-v0", dataset_size=8, energy_budget=4, batch_size=2)
    >>> obs, info = env.reset(seed=0)
    >>> info["dataset"]["x"].shape, info["log_z"]
    ((8, 2), 0.0)
    >>> obs, reward, terminated, truncated, info = env.step(np.zeros((2, 2), dtype=np.float32))
    >>> print(obs["energies"].round(4), obs["evaluations_left"], reward, terminated)
    [23.3163 23.3163] [2] 0.0 False
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        target: str = "gmm40",
        data: str = "unbiased",
        dataset_size: int = 10_000,
        energy_budget: int = 10_000,
        batch_size: int = 256,
        return_forces: bool = True,
        target_kwargs: dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None:
            raise ValueError(
                f"Boltzmann: no render modes are supported (metadata['render_modes'] is "
                f"empty), got render_mode={render_mode!r}"
            )
        self.render_mode = render_mode
        self._target: Target = make_target(target, **dict(target_kwargs or {}))
        self.name = f"Boltzmann[{self._target.name}]"
        if data not in (*DATA_KINDS, "none"):
            raise ValueError(
                f"{self.name}: data must be one of {(*DATA_KINDS, 'none')}, got {data!r}"
            )
        for key, value, low in (
            ("dataset_size", dataset_size, 0),
            ("energy_budget", energy_budget, 0),
            ("batch_size", batch_size, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ValueError(f"{self.name}: {key} must be an integer >= {low}, got {value!r}")
        if data == "none":
            dataset_size = 0
        self.data, self.dataset_size = data, int(dataset_size)
        self.energy_budget, self.batch_size = int(energy_budget), int(batch_size)
        self.return_forces = bool(return_forces)
        d = self._target.dim
        self.action_space = spaces.Box(
            -np.inf, np.inf, shape=(self.batch_size, d), dtype=np.float32
        )
        self.observation_space = spaces.Dict(
            {
                "energies": spaces.Box(-np.inf, np.inf, shape=(self.batch_size,), dtype=np.float64),
                "valid": spaces.MultiBinary(self.batch_size),
                # upper bound at least 1 so a data-only env (budget 0) has a non-degenerate box
                "evaluations_left": spaces.Box(
                    0, max(self.energy_budget, 1), shape=(1,), dtype=np.int64
                ),
            }
        )
        self._left = 0
        self.episode_evaluations = 0
        self.total_evaluations = 0  # over the env's lifetime (every episode)

    # ------------------------------------------------------------------ gym API
    @property
    def target(self) -> Target:
        return self._target

    @property
    def action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Finite ``(low, high)`` of the action shape for normalized-action wrappers (see Ecosystem)."""
        half = 2.0 if self._target.geometry == "alanine" else 10.0 * float(self._target.scale)
        high = np.full(self.action_space.shape, half, dtype=np.float32)
        return -high, high

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        data_seed = int(self.np_random.integers(0, 2**31 - 1))
        dataset: Mapping[str, np.ndarray]
        if self.dataset_size > 0:  # drawn (and, for MCMC/MD targets, generated) on first access
            dataset = LazyDataset(self._target, self.dataset_size, self.data, "train", data_seed)
        else:
            dataset = {"x": np.zeros((0, self._target.dim), np.float32), "energy": np.zeros(0)}
        self._left = self.energy_budget
        self.episode_evaluations = 0
        info = {
            "dataset": dataset,
            "budget": {"energy_evals": self.energy_budget, "dataset_size": self.dataset_size},
            "target": self._target.name,
            "dim": self._target.dim,
            "geometry": self._target.geometry,
            "scale": self._target.scale,
            "n_particles": self._target.n_particles,
            "spatial_dim": self._target.spatial_dim,
            "log_z": self._target.log_z,
            "data": self.data,
        }
        return self._obs(np.zeros(0)), info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        x = self._check_action(action)
        n = x.shape[0]
        xt = torch.from_numpy(x.astype(np.float64))
        if self.return_forces:
            u_t, f_t = self._target.energy_and_forces(xt)
            forces = f_t.numpy().astype(np.float64)
        else:
            with torch.no_grad():
                u_t = self._target.energy(xt)
            forces = None
        u = np.asarray(u_t.detach().numpy(), dtype=np.float64).reshape(n)
        nan = np.isnan(u)
        u = np.where(nan, np.inf, u)
        self._left -= n
        self.episode_evaluations += n
        self.total_evaluations += n
        info: dict[str, Any] = {
            "energies": u,
            "evaluations_spent": self.episode_evaluations,
            "evaluations_left": self._left,
            "nonfinite": int(nan.sum()),
        }
        if forces is not None:
            info["forces"] = forces
        return self._obs(u), 0.0, self._left == 0, False, info

    def close(self) -> None:
        close = getattr(getattr(self._target, "openmm", None), "close", None)
        if callable(close):
            close()

    # ------------------------------------------------------------------ helpers
    def _obs(self, u: np.ndarray) -> dict[str, np.ndarray]:
        energies = np.zeros(self.batch_size, dtype=np.float64)
        valid = np.zeros(self.batch_size, dtype=np.int8)
        energies[: u.size] = u
        valid[: u.size] = 1
        return {
            "energies": energies,
            "valid": valid,
            "evaluations_left": np.array([self._left], dtype=np.int64),
        }

    def _check_action(self, action: Any) -> np.ndarray:
        expected = f"a batch of configurations of shape (n, {self._target.dim}) with 1 <= n <= {self.batch_size} (action space {self.action_space})"
        if isinstance(action, torch.Tensor):
            action = action.detach().cpu().numpy()
        try:
            x = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{self.name}: expected {expected}, got {type(action).__name__}"
            ) from None
        if x.ndim != 2 or x.shape[1] != self._target.dim or not 1 <= x.shape[0] <= self.batch_size:
            raise ValueError(f"{self.name}: expected {expected}, got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            bad = np.unique(np.nonzero(~np.isfinite(x))[0])
            raise ValueError(
                f"{self.name}: configurations must be finite; rows {bad[:10].tolist()} hold NaN or inf "
                "(nothing was evaluated or charged)"
            )
        if self._left <= 0:
            raise ValueError(
                f"{self.name}: the energy budget of {self.energy_budget} is spent; call reset()"
            )
        if x.shape[0] > self._left:
            raise ValueError(
                f"{self.name}: a batch of {x.shape[0]} configurations exceeds the {self._left} "
                "energy evaluations left (nothing was evaluated or charged)"
            )
        return x
