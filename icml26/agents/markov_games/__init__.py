"""Agents of the offline zero-sum Markov games family: SOS-MD, ROSE and baselines.

Family protocol (beyond ``reset``/``act``/``learn``): ``learn(dataset, budget)`` takes an
:class:`icml26.envs.markov_games.OfflineDataset` (or a path to a saved one) and uses at most
``budget.dataset_size`` trajectories; ``policy() -> (mu, nu)`` returns the learned policy
tables (H, S, A) and (H, S, B), from which the task computes the exact duality gap.
``act(observation, info)`` samples the max player's action at ``[h, s]`` (the min player's with
``info={"player": "min"}``).

* :class:`SOSMD` -- T self-play mirror-descent iterations, each on least-squares Q-values of the
  current policies, last iterate (paper method; reference = behavior cloning by default).
* :class:`ROSE` -- least-squares Q + exact regularized stage equilibria.
* :class:`NashVI` (pessimistic fill of unvisited cells), :class:`PessimisticNashVI` (PNVI),
  :class:`VILCBGame`, :class:`BehaviorCloning`, :class:`SelfPlayMD`, :class:`NashOracle` --
  baselines.
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_EXPORTS = {
    "TabularGameAgent": "agents",
    "SOSMD": "agents",
    "ROSE": "agents",
    "NashVI": "agents",
    "PessimisticNashVI": "agents",
    "VILCBGame": "agents",
    "BehaviorCloning": "agents",
    "SelfPlayMD": "agents",
    "NashOracle": "agents",
}

__getattr__, __all__ = lazy_exports(__name__, _EXPORTS)
