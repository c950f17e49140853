"""The studies behind the results pages, registered by name (``icml26 study list``).

Each family declares its studies in ``icml26/benchmarks/studies/<family>.py`` as ``STUDIES``
(a list of :class:`~icml26.benchmarks.study.Study`); the types live in
:mod:`icml26.benchmarks.study` and are re-exported here::

    from icml26.benchmarks.studies import Arm, Block, Compare, Study, get_study
    study = get_study("tutorial")
    results = icml26.benchmarks.run(study.trials(), store=study.store_path)

``icml26 study run NAME [--agent mypkg.x:Y]`` runs a study (with your agent as one more arm),
``icml26 study report NAME`` writes its page through :mod:`icml26.benchmarks.report`, and
``icml26 study export NAME`` writes its raw archive; docs/studies.md is the guide.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading

from icml26._entry_points import unknown_name_error
from icml26.benchmarks.study import (
    VERDICTS,
    Arm,
    Block,
    ClaimResult,
    Compare,
    Evaluation,
    Planned,
    Rate,
    Study,
    StudyData,
    Sweep,
    Untestable,
    evaluate,
    read_archive,
    task_variant,
    write_archive,
)

__all__ = [
    "Arm",
    "Block",
    "ClaimResult",
    "Compare",
    "Evaluation",
    "Planned",
    "Rate",
    "Study",
    "StudyData",
    "Sweep",
    "Untestable",
    "VERDICTS",
    "evaluate",
    "get_study",
    "list_studies",
    "read_archive",
    "register_study",
    "study_names",
    "task_variant",
    "write_archive",
]

_studies: dict[str, Study] = {}
_loaded = False
_lock = threading.RLock()


def register_study(study: Study, *, replace: bool = False) -> Study:
    """Register ``study`` under its name (a second, different study of that name is an error
    unless ``replace``)."""
    old = _studies.get(study.name)
    if old is not None and old is not study and not replace:
        raise ValueError(f"a study named {study.name!r} is already registered")
    _studies[study.name] = study
    return study


def _load() -> None:
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        from icml26 import FAMILIES

        for fam in FAMILIES:
            name = f"{__name__}.{fam}"
            if importlib.util.find_spec(name) is None:
                continue
            for s in getattr(importlib.import_module(name), "STUDIES", ()):
                if s.name not in _studies:
                    register_study(s)
        _loaded = True


def get_study(name: str) -> Study:
    """The study ``name`` (KeyError with suggestions when unknown)."""
    _load()
    if name not in _studies:
        raise unknown_name_error("study", name, _studies)
    return _studies[name]


def study_names() -> list[str]:
    _load()
    return sorted(_studies)


def list_studies() -> list[Study]:
    _load()
    return [_studies[n] for n in sorted(_studies)]
