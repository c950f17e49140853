"""Offline two-player zero-sum Markov games (SOS-MD / ROSE, ICML 2026): games, envs, data, metrics.

* :class:`TabularMarkovGame` -- rewards (H, S, A, B), transitions (H, S, A, B, S), initial (S,),
  validated on construction; :func:`make_game` builds the families (``random``, ``low_rank``,
  ``rps``, ``matching_pennies``, ``biased_rps``, ``rps_water``, ``rpsfw``, ``tree``,
  ``soccer``).
* :func:`parallel_env` -- a PettingZoo ParallelEnv of any game; ``icml26/ZeroSumMarkovGame-v0``
  -- the max player's Gymnasium view against a uniform, Nash or best-response opponent.
* :func:`collect_dataset` / :class:`OfflineDataset` / :func:`load_dataset` -- offline data
  under the regimes uniform, eps_nash, unilateral, nash (compressed .npz, Minari export), with
  the exact unilateral concentrability coefficient.
* :func:`duality_gap` (NashConv; :func:`exploitability` = NashConv / 2),
  :func:`regularized_gap`, :func:`nash_equilibrium`, :func:`regularized_equilibrium` -- exact,
  by backward induction vectorized over states.

Names are imported lazily so ``import icml26`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "TabularMarkovGame": "game",
    "check_policy": "game",
    "uniform_policy": "game",
    "make_game": "games",
    "game_names": "games",
    "random_game": "games",
    "low_rank_game": "games",
    "matrix_game": "games",
    "rock_paper_scissors": "games",
    "matching_pennies": "games",
    "biased_rps": "games",
    "rps_water": "games",
    "rpsfw": "games",
    "tree_game": "games",
    "soccer": "games",
    "Equilibrium": "metrics",
    "policy_value": "metrics",
    "best_response_to_min": "metrics",
    "best_response_to_max": "metrics",
    "duality_gap": "metrics",
    "gap_parts": "metrics",
    "exploitability": "metrics",
    "regularized_gap": "metrics",
    "regularized_gap_parts": "metrics",
    "nash_equilibrium": "metrics",
    "regularized_equilibrium": "metrics",
    "state_distribution": "metrics",
    "occupancy": "metrics",
    "unilateral_concentrability": "metrics",
    "solve_matrix_games": "solvers",
    "solve_regularized_matrix_games": "solvers",
    "Behavior": "datasets",
    "behavior": "datasets",
    "REGIMES": "datasets",
    "collect_dataset": "datasets",
    "OfflineDataset": "datasets",
    "load_dataset": "datasets",
    "cached_dataset": "datasets",
    "ZeroSumMarkovGameParallelEnv": "parallel",
    "parallel_env": "parallel",
    "ZeroSumMarkovGameEnv": "env",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
