"""icml26-gym: ICML 2026 methods as Gymnasium / PettingZoo environments, agents and benchmarks.

``import icml26`` registers every environment id with Gymnasium (idempotently, through string
entry points, without importing any simulator), so both of these work::

    import icml26, gymnasium as gym
    env = gym.make("icml26/PointReach-v0")
    env = gym.make("icml26:icml26/PointReach-v0")   # without the explicit import

Sub-packages: :mod:`icml26.envs`, :mod:`icml26.agents`, :mod:`icml26.benchmarks`,
:mod:`icml26.leaderboards`, :mod:`icml26.testing`; the common language is
:mod:`icml26.protocol`.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# The one list of method families: envs (``icml26/envs/<family>``), agents
# (``icml26/agents/<family>``, plus ``generic``) and tasks (``icml26/benchmarks/tasks/<family>.py``) are
# all loaded from it; ``tests/test_registration.py`` checks that the folders and this list agree.
# Every family has a lightweight ``icml26/envs/<family>/_specs.py`` holding ``ENV_SPECS`` (kwargs
# for ``gymnasium.register`` plus ``doc``, a one-line description, and optionally
# ``test_kwargs``, cheaper kwargs for the conformance tests, and ``golden_rtol`` for an env whose
# numbers depend on the CPU's SIMD width, see ``icml26.testing.golden``) and, for multi-agent envs,
# ``PARALLEL_ENVS`` (``name``, ``entry_point`` of a ParallelEnv factory, ``kwargs``, ``doc``).
FAMILIES: tuple[str, ...] = (
    "tutorial",
    "driving",
    "markov_games",
    "looplm",
    "boltzmann",
    "spatial_causal",
    "weather",
    "minmax_vi",
    "constrained_opt",
    "md_forcefields",
    "capability_eval",
    "pulse",
)


def env_specs(family: str | None = None) -> list[dict[str, Any]]:
    """The registration records (``gymnasium.register`` kwargs) of one family or of all."""
    fams = FAMILIES if family is None else (family,)
    out: list[dict[str, Any]] = []
    for fam in fams:
        mod = importlib.import_module(f"icml26.envs.{fam}._specs")
        for spec in getattr(mod, "ENV_SPECS", ()):
            out.append({**spec, "family": fam})
    return out


def parallel_env_specs(family: str | None = None) -> list[dict[str, Any]]:
    """PettingZoo ``ParallelEnv`` factories: ``{"name", "entry_point", "kwargs", "family"}``."""
    fams = FAMILIES if family is None else (family,)
    out: list[dict[str, Any]] = []
    for fam in fams:
        mod = importlib.import_module(f"icml26.envs.{fam}._specs")
        for spec in getattr(mod, "PARALLEL_ENVS", ()):
            out.append({**spec, "family": fam})
    return out


# keys of an ``ENV_SPECS`` record that are the suite's own, not ``gymnasium.register``'s
SPEC_ONLY_KEYS: tuple[str, ...] = ("family", "doc", "test_kwargs", "golden_rtol")


def gym_register_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    """An ``ENV_SPECS`` record without :data:`SPEC_ONLY_KEYS`: the kwargs of ``gymnasium.register``."""
    return {k: v for k, v in spec.items() if k not in SPEC_ONLY_KEYS}


def register_envs() -> list[str]:
    """Register every ``icml26/`` id with Gymnasium; safe to call any number of times."""
    import gymnasium

    ids = []
    for record in env_specs():
        spec = gym_register_kwargs(record)
        ids.append(spec["id"])
        if spec["id"] not in gymnasium.registry:
            gymnasium.register(**spec)
    return ids


register_envs()

__all__ = ["FAMILIES", "env_specs", "parallel_env_specs", "register_envs", "__version__"]
