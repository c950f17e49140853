"""Gymnasium / PettingZoo registration records of the markov_games family (no heavy imports)."""

from __future__ import annotations

from typing import Any

_SMALL = {"game": "random", "game_kwargs": {"S": 4, "A": 3, "B": 2, "H": 3, "seed": 1}}

ENV_SPECS: list[dict[str, Any]] = [
    {
        "id": "icml26/ZeroSumMarkovGame-v0",
        "entry_point": "icml26.envs.markov_games.env:ZeroSumMarkovGameEnv",
        "doc": "Zero-sum Markov game (SOS-MD): the agent is the max player vs a uniform, Nash or "
        "best-response opponent.",
        "test_kwargs": {**_SMALL, "opponent": "best_response"},
    },
]

PARALLEL_ENVS: list[dict[str, Any]] = [
    {
        "name": "markov_games/rps",
        "entry_point": "icml26.envs.markov_games:parallel_env",
        "kwargs": {"game": "rps"},
        "doc": "Rock-paper-scissors as a one-step simultaneous-move PettingZoo game.",
    },
    {
        "name": "markov_games/random",
        "entry_point": "icml26.envs.markov_games:parallel_env",
        "kwargs": {"game": "random", "game_kwargs": {"S": 10, "A": 3, "B": 3, "H": 5, "seed": 0}},
        "test_kwargs": _SMALL,
        "doc": "Random tabular zero-sum Markov game (S=10, A=B=3, H=5).",
    },
    {
        "name": "markov_games/soccer",
        "entry_point": "icml26.envs.markov_games:parallel_env",
        "kwargs": {"game": "soccer", "game_kwargs": {"horizon": 10}},
        "test_kwargs": {"game": "soccer", "game_kwargs": {"horizon": 5, "rows": 2, "cols": 3}},
        "doc": "Littman's soccer (4x5 grid, 760 states) truncated to 10 steps.",
    },
]
