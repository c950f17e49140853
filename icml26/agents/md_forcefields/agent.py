"""Force-field agents: a trained energy model (DKMP, SchNet, PaiNN) or the OpenMM oracle.

``learn(frames, budget)`` fits the model to labelled frames (:class:`~icml26.envs.md_forcefields.data.Frames`);
``act(positions, info)`` returns forces (kcal/mol/A) for ``icml26/MDForceField-v0``;
``predict(positions)`` returns energies and forces for a batch.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch

from icml26.agents.md_forcefields.models import EnergyModel, build_model

EnergyModelMaxZ = EnergyModel.max_z

__all__ = ["ForceFieldAgent", "OpenMMAgent", "ConstantEnergyAgent", "check_positions"]


def check_positions(x: Any, n_atoms: int, who: str) -> np.ndarray:
    """``(N, 3)`` or ``(B, N, 3)`` finite float positions with ``N == n_atoms``, else a clear error."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{who}: expected positions as an array of shape (N, 3), got {type(x).__name__}"
        ) from None
    if a.ndim not in (2, 3) or a.shape[-1] != 3 or a.shape[-2] != n_atoms:
        raise ValueError(
            f"{who}: expected positions of shape ({n_atoms}, 3) or (B, {n_atoms}, 3), got {a.shape}"
        )
    if not np.all(np.isfinite(a)):
        raise ValueError(
            f"{who}: positions must be finite, got {int((~np.isfinite(a)).sum())} NaN/inf entries"
        )
    return a


class ForceFieldAgent:
    """A learned force field: energy model + conservative forces, trained on energies and forces.

    Loss (per batch): ``w_energy * mean(((E_hat - E) / (N s))^2) + mean(((F_hat - F) / s)^2)`` with
    ``s`` the RMS training force; energies are shifted by a per-element least-squares fit first.
    Adam, cosine learning-rate decay over ``updates`` steps, the best of 4 validation checkpoints
    (force MAE on at most 64 validation frames) kept.
    """

    def __init__(
        self,
        model: str = "dkmp",
        updates: int = 800,
        batch: int = 8,
        lr: float = 5e-3,
        w_energy: float = 1.0,
        model_kwargs: dict[str, Any] | None = None,
        seed: int = 0,
    ) -> None:
        self.model_name, self.updates, self.batch, self.lr = (
            model,
            int(updates),
            int(batch),
            float(lr),
        )
        self.w_energy, self.model_kwargs, self.seed = (
            float(w_energy),
            dict(model_kwargs or {}),
            int(seed),
        )
        self.numbers: np.ndarray | None = None
        self._z: torch.Tensor | None = None
        self.model = self._new_model(seed)
        self.train_log: list[float] = []

    def _new_model(self, seed: int) -> Any:
        torch.manual_seed(seed)
        return build_model(self.model_name, **self.model_kwargs).double()

    # -------------------------------------------------------------- protocol
    def bind(self, observation_space: Any, action_space: Any) -> None:
        if observation_space.shape != action_space.shape:
            raise ValueError(
                f"{self.model_name}: observation {observation_space.shape} and action {action_space.shape} differ"
            )

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)

    def act(self, observation: Any, info: dict[str, Any] | None = None) -> np.ndarray:
        if self.numbers is None and info is not None and "numbers" in info:
            self.set_numbers(info["numbers"])
        _, f = self.predict(observation)
        return f.astype(np.float32)

    def set_numbers(self, numbers: Any) -> None:
        self.numbers = np.asarray(numbers, dtype=np.int64)
        self._z = torch.as_tensor(self.numbers)

    # -------------------------------------------------------------- inference
    def predict(self, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        """Energies (kcal/mol) and forces (kcal/mol/A) for positions ``(N, 3)`` or ``(B, N, 3)``."""
        if self._z is None:
            raise RuntimeError(f"{self.model_name}: call learn() or set_numbers() first")
        x = check_positions(positions, len(self._z), self.model_name)
        single = x.ndim == 2
        pos = torch.as_tensor(x if not single else x[None])
        e, f = self.model.energy_forces(pos, self._z)
        e, f = e.detach().numpy(), f.detach().numpy()
        return (e[0], f[0]) if single else (e, f)

    # -------------------------------------------------------------- training
    def learn(self, frames: Any, budget: Any = None, val: Any = None) -> dict[str, float]:
        """Fit to ``frames`` (a :class:`Frames`); ``budget.updates`` overrides ``updates``."""
        updates = int(getattr(budget, "updates", None) or self.updates)
        self.set_numbers(frames.numbers)
        self.model = self._new_model(self.seed)
        z, n = self._z, len(frames.numbers)
        assert z is not None
        counts = np.bincount(frames.numbers, minlength=self.model.max_z)[None].repeat(
            len(frames), 0
        )
        per_el, *_ = np.linalg.lstsq(counts.astype(float), frames.energies, rcond=None)
        s = float(np.sqrt(np.mean(frames.forces**2)))
        self.model.shift.copy_(torch.as_tensor(per_el))
        self.model.scale.fill_(s)
        pos = torch.as_tensor(frames.positions)
        en = torch.as_tensor(frames.energies)
        fo = torch.as_tensor(frames.forces)
        opt = torch.optim.Adam(self.model.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, updates, eta_min=self.lr * 0.02)
        rng = np.random.default_rng(self.seed)
        best, best_state = math.inf, None
        t0 = time.perf_counter()
        for k in range(updates):
            idx = torch.as_tensor(rng.choice(len(frames), self.batch, replace=False))
            e, f = self.model.energy_forces(pos[idx], z, create_graph=True)
            loss = (
                self.w_energy * (((e - en[idx]) / (n * s)) ** 2).mean()
                + (((f - fo[idx]) / s) ** 2).mean()
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            self.train_log.append(float(loss.detach()))
            if (
                val is not None
                and len(val)
                and ((k + 1) % max(1, updates // 4) == 0 or k + 1 == updates)
            ):
                _, fv = self.predict(val.positions[:64])  # at most 64 validation frames
                err = float(np.abs(fv - val.forces[:64]).mean())
                if err < best:
                    best, best_state = (
                        err,
                        {k2: v.clone() for k2, v in self.model.state_dict().items()},
                    )
        if best_state is not None:
            self.model.load_state_dict(best_state)
        return {
            "train_s": time.perf_counter() - t0,
            "val_force_mae": best,
            "final_loss": self.train_log[-1],
        }


class OpenMMAgent:
    """The classical force field itself (the oracle row): forces from OpenMM at the given positions."""

    def __init__(self, system: str = "ala2") -> None:
        self.system = system
        self._oracle: Any = None
        self.numbers: np.ndarray | None = None

    def _get(self) -> Any:
        if self._oracle is None:
            from icml26.envs.md_forcefields.systems import Oracle, load_system

            mol = load_system(self.system)
            self._oracle, self.numbers = Oracle(mol), mol.numbers
        return self._oracle

    def bind(self, observation_space: Any, action_space: Any) -> None:
        return None

    def reset(self, seed: int | None = None) -> None:
        return None

    def learn(self, frames: Any, budget: Any = None, val: Any = None) -> dict[str, float]:
        self.system = getattr(frames, "system", self.system)
        self._oracle = None
        return {"train_s": 0.0}

    def predict(self, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        oracle = self._get()
        x = check_positions(positions, len(self.numbers), "openmm")  # type: ignore[arg-type]
        xs = x[None] if x.ndim == 2 else x
        out = [oracle(p) for p in xs]
        e, f = np.array([o[0] for o in out]), np.stack([o[1] for o in out])
        return (e[0], f[0]) if x.ndim == 2 else (e, f)

    def act(self, observation: Any, info: dict[str, Any] | None = None) -> np.ndarray:
        if info and info.get("system") and info["system"] != self.system:
            self.system, self._oracle = info["system"], None
        return self.predict(observation)[1].astype(np.float32)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_oracle": None}


class ConstantEnergyAgent:
    """The null baseline: energy = sum of per-element constants (least squares on element counts),
    forces zero. A force field that does not beat it has learned nothing about forces."""

    def __init__(self) -> None:
        self.numbers: np.ndarray | None = None
        self.per_element = np.zeros(EnergyModelMaxZ)

    def bind(self, observation_space: Any, action_space: Any) -> None:
        return None

    def reset(self, seed: int | None = None) -> None:
        return None

    def set_numbers(self, numbers: Any) -> None:
        self.numbers = np.asarray(numbers, dtype=np.int64)

    def learn(self, frames: Any, budget: Any = None, val: Any = None) -> dict[str, float]:
        self.set_numbers(frames.numbers)
        counts = np.bincount(self.numbers, minlength=EnergyModelMaxZ)[None].repeat(len(frames), 0)
        self.per_element, *_ = np.linalg.lstsq(
            counts.astype(float), np.asarray(frames.energies, dtype=np.float64), rcond=None
        )
        return {"train_s": 0.0}

    def predict(self, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        if self.numbers is None:
            raise RuntimeError("null: call learn() or set_numbers() first")
        x = check_positions(positions, len(self.numbers), "null")
        e0 = float(self.per_element[self.numbers].sum())
        if x.ndim == 2:
            return np.float64(e0), np.zeros_like(x)
        return np.full(len(x), e0), np.zeros_like(x)

    def act(self, observation: Any, info: dict[str, Any] | None = None) -> np.ndarray:
        if self.numbers is None and info is not None and "numbers" in info:
            self.set_numbers(info["numbers"])
        return self.predict(observation)[1].astype(np.float32)
