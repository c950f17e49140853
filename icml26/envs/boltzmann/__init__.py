"""Boltzmann sampling (LDR, arXiv 2602.03729): targets, OpenMM energies, MD data sets, metrics.

* :func:`make_target` (``"gmm40"``, ``"many_well32"``, ``"funnel10"``, ``"dw4"``, ``"lj13"``,
  ``"aldp"``, ``"aldp_implicit"``): ``dim``, ``energy(x)`` (reduced, batched torch), ``log_z``,
  ``sample(n, seed)`` where exact, ``dataset(n, kind, split, seed)``.
* :class:`BoltzmannEnv` behind ``icml26/Boltzmann<Target>-v0``: reset hands the data set and the
  budget, each step returns energies and charges the energy-evaluation budget.
* :mod:`.alanine`: OpenMM (one reused Context per worker) and a torch Amber force field;
  :mod:`.md`: cached Langevin / replica-exchange data; :mod:`.metrics`: ESS, NLL, W1/W2, modes,
  Ramachandran KL.

This ``__init__`` stays cheap: names load on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "make_target": "targets",
    "TARGET_NAMES": "targets",
    "Target": "targets",
    "BoltzmannDataset": "datasets",
    "BoltzmannEnv": "env",
    "AlanineDipeptide": "alanine",
    "OpenMMEnergy": "openmm_energy",
    "AmberTorchEnergy": "alanine",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"icml26.envs.boltzmann.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'icml26.envs.boltzmann' has no attribute {name!r}")
