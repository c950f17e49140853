"""Agent registrations of the markov_games family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

_MOD = "icml26.agents.markov_games.agents"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "sos-md",
        "entry_point": f"{_MOD}:SOSMD",
        "description": "SOS-MD (paper): least-squares Q + T KL-regularized self-play MD steps per stage, last iterate.",
    },
    {
        "name": "sos-md-linear",
        "entry_point": f"{_MOD}:SOSMD",
        "kwargs": {"features": "game"},
        "description": "SOS-MD with the game's linear features (low-rank games) instead of one-hot.",
    },
    {
        "name": "rose",
        "entry_point": f"{_MOD}:ROSE",
        "description": "ROSE (paper): least-squares Q + exact KL-regularized stage equilibria.",
    },
    {
        "name": "rose-linear",
        "entry_point": f"{_MOD}:ROSE",
        "kwargs": {"features": "game"},
        "description": "ROSE with the game's linear features (low-rank games) instead of one-hot.",
    },
    {
        "name": "mg-nash-vi",
        "entry_point": f"{_MOD}:NashVI",
        "description": "Plug-in Nash value iteration on the empirical model (LP per stage).",
    },
    {
        "name": "mg-pessimistic-vi",
        "entry_point": f"{_MOD}:PessimisticNashVI",
        "description": "Pessimistic Nash VI with lower/upper confidence bounds (VI-LCB-Game style).",
    },
    {
        "name": "mg-bc",
        "entry_point": f"{_MOD}:BehaviorCloning",
        "description": "Behavior cloning of both players' empirical action frequencies.",
    },
    {
        "name": "mg-selfplay-md-last",
        "entry_point": f"{_MOD}:SelfPlayMD",
        "kwargs": {"iterate": "last"},
        "description": "Unregularized self-play mirror descent on least-squares Q, last iterate.",
    },
    {
        "name": "mg-selfplay-md-avg",
        "entry_point": f"{_MOD}:SelfPlayMD",
        "kwargs": {"iterate": "average"},
        "description": "Unregularized self-play mirror descent on least-squares Q, average iterate.",
    },
    {
        "name": "mg-nash-oracle",
        "entry_point": f"{_MOD}:NashOracle",
        "description": "Exact Nash equilibrium of the true game (oracle reference, reads the game).",
    },
]
