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

from icml26._lazy import lazy_exports

_LAZY = {
    "make_target": "registry",
    "TARGET_NAMES": "registry",
    "Target": "targets",
    "BoltzmannDataset": "datasets",
    "BoltzmannEnv": "env",
    "AlanineDipeptide": "alanine",
    "OpenMMEnergy": "openmm_energy",
    "AmberTorchEnergy": "alanine",
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
