"""Agent registrations of the markov_games family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

_MOD = "icml26.agents.markov_games.agents"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "sos-md",
        "entry_point": f"{_MOD}:SOSMD",
        "description": "SOS-MD (paper): T KL-regularized self-play MD iterations, each on least-squares Q of "
        "the current policies; last iterate; reference = behavior cloning.",
    },
    {
        "name": "sos-md-oracle-ref",
        "entry_point": f"{_MOD}:SOSMD",
        "kwargs": {"reference": "behavior"},
        "description": "Ablation: SOS-MD regularized toward the data's exact behavior policy (an oracle).",
    },
    {
        "name": "sos-md-stagewise",
        "entry_point": f"{_MOD}:SOSMD",
        "kwargs": {"schedule": "stagewise"},
        "description": "Ablation: T self-play MD steps per stage, backward in h (the suite's v1 SOS-MD).",
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
        "description": "ROSE (paper): least-squares Q + exact KL-regularized stage equilibria; "
        "reference = behavior cloning.",
    },
    {
        "name": "rose-oracle-ref",
        "entry_point": f"{_MOD}:ROSE",
        "kwargs": {"reference": "behavior"},
        "description": "Ablation: ROSE regularized toward the data's exact behavior policy (an oracle).",
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
        "description": "Plug-in Nash value iteration on the empirical model (LP per stage); unvisited "
        "cells filled pessimistically for each player.",
    },
    {
        "name": "mg-pessimistic-vi",
        "entry_point": f"{_MOD}:PessimisticNashVI",
        "description": "Pessimistic Nash VI, Hoeffding bonus with a tuned constant c = 0.1.",
    },
    {
        "name": "mg-pnvi",
        "entry_point": f"{_MOD}:PessimisticNashVI",
        "kwargs": {"c": 1.0},
        "description": "PNVI (Cui & Du 2022): pessimistic Nash VI, Hoeffding bonus at c = 1 (as written).",
    },
    {
        "name": "mg-vi-lcb-game",
        "entry_point": f"{_MOD}:VILCBGame",
        "description": "VI-LCB-Game (Yan et al. 2022): Bernstein-penalized pessimistic Nash VI, c_b = 1.",
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
