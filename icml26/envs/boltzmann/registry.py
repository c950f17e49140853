"""The Boltzmann targets by name: :func:`make_target` (kept apart from :mod:`.targets`, which the
alanine target itself builds on, so no module imports its own importer)."""

from __future__ import annotations

from typing import Any

from icml26._entry_points import unknown_name_error
from icml26.envs.boltzmann.alanine import AlanineDipeptide
from icml26.envs.boltzmann.targets import DW4, GMM40, LJ13, Funnel10, ManyWell32, Target

TARGET_NAMES = ("gmm40", "many_well32", "funnel10", "dw4", "lj13", "aldp", "aldp_implicit")


def make_target(name: str, **kwargs: Any) -> Target:
    """The target called ``name`` (one of :data:`TARGET_NAMES`)."""
    if name == "gmm40":
        return GMM40(**kwargs)
    if name == "many_well32":
        return ManyWell32(**kwargs)
    if name == "funnel10":
        return Funnel10(**kwargs)
    if name == "dw4":
        return DW4(**kwargs)
    if name == "lj13":
        return LJ13(**kwargs)
    if name in ("aldp", "aldp_implicit"):
        if name == "aldp_implicit":
            kwargs = {"solvent": "obc1", **kwargs}
        return AlanineDipeptide(**kwargs)
    raise unknown_name_error("Boltzmann target", name, TARGET_NAMES)
