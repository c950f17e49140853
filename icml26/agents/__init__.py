"""Agents: one sub-package per family (the paper's method and its baselines) plus generic ones.

Every agent has ``reset(seed)`` and ``act(observation, info) -> action``; learners also have
``learn(env_or_dataset, budget)`` (see :mod:`icml26.protocol`). Agents that need the env's
spaces before acting may implement ``bind(observation_space, action_space)``; the generic trial
runner calls it when present.

Agents are made by name, like Gymnasium envs::

    import icml26.agents
    agent = icml26.agents.make("random")
    agent = icml26.agents.make("mypkg.mymodule:MyAgent", lr=3e-4)   # your own class

Each family lists its agents in ``icml26/agents/<family>/_specs.py`` (``AGENT_SPECS``).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icml26._entry_points import load_entry_point, unknown_name_error

__all__ = ["AgentSpec", "register", "make", "spec", "names", "all_specs", "agent_version"]


def _agent_families() -> tuple[str, ...]:
    """``generic`` plus the families of :data:`icml26.FAMILIES` (the one family list)."""
    from icml26 import FAMILIES

    return ("generic", *FAMILIES)


@dataclass(frozen=True)
class AgentSpec:
    """A named agent: its entry point, the family it serves (``"any"`` for generic agents),
    default constructor kwargs and a one-line description."""

    name: str
    entry_point: str
    family: str = "any"
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


_registry: dict[str, AgentSpec] = {}
_loaded = False
_loading = False
_load_lock = threading.RLock()


def register(
    name: str,
    entry_point: str,
    family: str = "any",
    description: str = "",
    kwargs: Mapping[str, Any] | None = None,
) -> AgentSpec:
    """Register an agent under ``name``; re-registering the same entry point is a no-op."""
    if ":" not in entry_point:
        raise ValueError(f"agent {name!r}: entry point must be 'module:Class', got {entry_point!r}")
    new = AgentSpec(name, entry_point, family, dict(kwargs or {}), description)
    old = _registry.get(name)
    if old is not None and old.entry_point != entry_point:
        raise ValueError(
            f"agent name {name!r} is already registered to {old.entry_point!r} "
            f"(tried {entry_point!r}); pick another name"
        )
    _registry[name] = new
    return new


def _load() -> None:
    """Fill the registry from every family's ``_specs``, once, under a lock: concurrent first
    callers wait for the whole registry (a half-filled one would let a bundle claim a
    registered name with a foreign entry point); ``_loaded`` is set only once it is filled."""
    global _loaded, _loading
    if _loaded:
        return
    with _load_lock:
        if _loaded or _loading:  # _loading: a family module calling back while we import it
            return
        _loading = True
        try:
            found: list[tuple[str, dict[str, Any]]] = []
            for fam in _agent_families():
                mod = importlib.import_module(f"icml26.agents.{fam}._specs")
                found.extend((fam, s) for s in getattr(mod, "AGENT_SPECS", ()))
            for fam, s in found:
                register(
                    family=s.get("family", fam), **{k: v for k, v in s.items() if k != "family"}
                )
            _loaded = True
        finally:
            _loading = False


def all_specs() -> dict[str, AgentSpec]:
    _load()
    return dict(_registry)


def names(family: str | None = None) -> list[str]:
    """Registered agent names, optionally those usable on ``family`` (including generic ones)."""
    _load()
    return sorted(n for n, s in _registry.items() if family is None or s.family in (family, "any"))


def spec(name: str) -> AgentSpec:
    _load()
    if name in _registry:
        return _registry[name]
    if ":" in name:
        return AgentSpec(name, name, "any")
    raise unknown_name_error("agent", name, _registry)


def make(name: str, **kwargs: Any) -> Any:
    """Instantiate a registered agent, or a user class given as ``package.module:ClassName``."""
    s = spec(name)
    cls = load_entry_point(s.entry_point)
    merged = {**s.kwargs, **kwargs}
    try:
        agent = cls(**merged)
    except TypeError as e:
        raise TypeError(
            f"cannot construct agent {name!r} ({s.entry_point}) with kwargs {merged}: {e}"
        ) from e
    for method in ("reset", "act"):
        if not callable(getattr(agent, method, None)):
            raise TypeError(
                f"agent {name!r} ({s.entry_point}) has no {method}() method; an agent needs "
                "reset(seed) and act(observation, info)"
            )
    return agent


def agent_version(agent: Any) -> str:
    return str(getattr(agent, "version", "0"))
