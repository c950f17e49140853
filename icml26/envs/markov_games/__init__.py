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

Offline learning of Nash equilibria in two-player zero-sum Markov games with KL regularization
("Offline Two-Player Zero-Sum Markov Games with KL Regularization", ICML 2026, arXiv
2605.13025). The family ships the games, a PettingZoo ParallelEnv for each, the max player's
Gymnasium view, offline datasets, exact equilibrium metrics, and the paper's agents (SOS-MD,
ROSE) with baselines.

```python
import gymnasium as gym, icml26
from icml26.envs.markov_games import make_game, parallel_env, collect_dataset, duality_gap
from icml26.agents.markov_games import SOSMD

game = make_game("random", S=10, A=3, B=3, H=5, seed=0)
data = collect_dataset(game, n=1000, regime="reg_unilateral", seed=0)  # .save("d.npz"), .to_minari(...)
agent = SOSMD(beta=0.1)                                              # reference = behavior cloning
agent.learn(data)
mu, nu = agent.policy()
print(duality_gap(game, mu, nu))                                     # exact NashConv
env = gym.make("icml26/ZeroSumMarkovGame-v0", game="random", opponent="best_response", agent_policy=mu)
```

## The game type
`TabularMarkovGame(rewards (H, S, A, B), transitions (H, S, A, B, S), initial (S,),
legal_max=None, legal_min=None)`: rewards are paid to the max player (the min player receives
the negative). Construction validates everything and names the first offending index
(`transitions[1, 2, 0, 1] sums to 0.9, expected 1`, `rewards[1, 0, 1, 1] = nan`, a mask row with
no legal action...). Arrays are stored read-only; time-homogeneous games may pass a stride-0
broadcast of one transition slice (soccer), kept and pickled compactly. Sparse transition
tables are applied through a cached CSR matrix.

| name (`make_game`) | what | size |
|---|---|---|
| `random` | r ~ U[0, 1], P ~ Dirichlet(concentration) on a random support of ceil((1 - sparsity) S) states | any S, A, B, H |
| `low_rank` | linear Markov game of rank d (features in `game.features`) | any |
| `rps`, `matching_pennies` | OpenSpiel `matrix_rps`, `matrix_mp` | H = S = 1 |
| `biased_rps` | OpenSpiel `matrix_brps` / 50 (Nash (1/16, 10/16, 5/16)) | H = S = 1 |
| `rps_water` | OpenSpiel `matrix_rpsw` (water always draws) | H = S = 1 |
| `rpsfw` | rock-paper-scissors-fire-water | H = S = 1 |
| `tree` | 3 stages: [[1, 0], [-2, 4]], [[1, 0], [-2, 3]], then RPSFW; each joint action leads to its own child node; 2 legal actions at stages 1-2 | H = 3, S = 21, A = B = 5 |
| `soccer` | Littman (1994) soccer, 4 x 5 grid, random move order, possession to the stationary player, +-1 per goal then reset; `horizon`, `rows`, `cols` | S = 760, A = B = 5 |

The card gives the tree game's stage payoffs and data behavior; the branching (one child per
joint action, i.e. perfect recall of joint actions) is this suite's choice. Values: tree 4/7 +
1/2 = 15/14; soccer 0 (the field is symmetric under a half turn).

## ParallelEnv (PettingZoo)
`icml26.envs.markov_games.parallel_env(game="rps", game_kwargs=None, render_mode=None, **builder_kwargs)`.
Agents `max_player` and `min_player` move simultaneously.

- **Action space**: `Discrete(A)` / `Discrete(B)`. An illegal action (tree game) or a missing
  player raises `ValueError` before anything changes.
- **Observation space**: `Dict(observation=MultiDiscrete([H + 1, S]), action_mask=MultiBinary(n))`;
  both players see `[h, s]` (h = H after the last move).
- **Rewards**: `r_h(s, a, b)` to the max player, `-r_h(s, a, b)` to the min player.
- **Starting state**: `s ~ initial`, h = 0. **Episode end**: both terminate after H moves.

`PARALLEL_ENVS` lists `markov_games/rps`, `markov_games/random` and `markov_games/soccer`; they
pass `parallel_api_test` and `parallel_seed_test`. The tree game passes `parallel_api_test`
(which samples with the masks); the unmasked `parallel_seed_test` would play illegal actions.

## Offline datasets
`collect_dataset(game, n, regime, seed, eps=0.2, beta=0.1, support_seed=0)` draws n
trajectories, vectorized and seeded.
Regimes: `uniform`; `eps_nash` ((1 - eps) Nash + eps uniform, both players); `unilateral`
(half (mu*, uniform), half (uniform, nu*) around the *unregularized* Nash equilibrium,
interleaved so every prefix is balanced; the regularized equilibrium plays every action, so its
unilateral concentrability is infinite here); `reg_unilateral` (the same around the
beta-*regularized* equilibrium whose reference is the data's own marginal behavior, found by a
fixed-point iteration; finite C* around the regularized target); `reg_unilateral_restricted`
(the same with every policy on a seeded support, one action per player removed at each (h, s)
(`restricted_support(game, seed)`): the data never cover A x B nor the Nash equilibrium, but
they cover the regularized target); `nash`
(Nash only); `tree` (the tree game's data: uniform at the 2-action stages, mu = (0.6, .1, .1,
.1, .1) and nu uniform at RPSFW); `custom` (mu, nu given). The Nash policies are the LP's.

An `OfflineDataset` holds `states`, `actions_max`, `actions_min`, `rewards`, `next_states` (n, H),
the behavior components, the exact per-state marginal behavior policies `reference_mu/nu` (the
KL reference), the legal-action masks and metadata (game spec and fingerprint, regime, eps, n,
seed). `save(path)` writes a compressed `.npz` atomically; `load_dataset(path, game=None)`
validates every array (shapes, integer dtypes, index ranges, broken trajectories, illegal
actions, distributions, metadata, and with `game` the fingerprint and rewards) and raises a
`ValueError` naming the problem. `cached_dataset(...)` caches under
`$ICML26_CACHE/markov_games/datasets`. `to_minari(dataset_id, data_path=None)` exports the max
player's view (observations `[h, s]`, actions a, rewards, `infos["opponent_action"]`) with
Minari's arrow format. `dataset.concentrability()` is the exact unilateral concentrability
coefficient C* of the data distribution around the Nash equilibrium; `concentrability(beta)`
around the beta-regularized equilibrium of the data's marginal behavior (deviations restricted
to that reference's support: outside it the KL term is infinite).

## OpenSpiel games
`make_game("openspiel", openspiel_game="goofspiel", params={...})` or
`icml26.envs.markov_games.openspiel.from_openspiel(name, params)` (needs `open_spiel`, extra
`openspiel`) converts a two-player zero-sum simultaneous-move OpenSpiel game: layer h holds the
distinct decision states (by `str(state)`) after h joint moves, chance nodes fold into the
transitions (and into `initial` at the root), rewards are player 0's expected OpenSpiel rewards
up to the next decision state, and a finished game moves to an absorbing sink. Action ids are
OpenSpiel's, illegal ones masked. `openspiel_policy(conversion, mu, nu)` returns the turn-based
game and an OpenSpiel policy, so `open_spiel.python.algorithms.exploitability.nash_conv` checks
`duality_gap` (the tests agree to 1e-9 on goofspiel with and without chance and on oshi-zumo).
The dense transition table limits the size (goofspiel with 3 cards, oshi-zumo with 4 coins).

## Exact metrics and the gap convention
All by backward induction, vectorized over states, no sampling:

- `duality_gap(game, mu, nu)` = **NashConv** = `rho . (V^{†,nu}_1 - V^{mu,†}_1)`, the sum of both
  players' best-response gains; 0 exactly at a Nash equilibrium. `exploitability(...)` =
  NashConv / 2 (OpenSpiel's convention). **Every "gap" this family reports is the NashConv.**
  Hand checks: the uniform pair of rock-paper-scissors has gap 0, (rock, rock) has gap 2.
- `regularized_gap(game, mu, nu, beta, mu_ref, nu_ref)`: the same with soft best responses of
  the regularized game `mu^T Q nu - beta KL(mu || mu_ref) + beta KL(nu || nu_ref)`; 0 exactly at
  the regularized equilibrium, `+inf` if a policy leaves its reference's support.
- `nash_equilibrium(game)`: one block-diagonal HiGHS LP per stage (`max v s.t. Q^T x >= v 1`), the
  min player's strategy from the duals (checked, re-solved if inaccurate); cached per game.
- `regularized_equilibrium(game, beta, mu_ref, nu_ref)`: the unique fixed point
  `mu ∝ mu_ref exp(Q nu / beta)`, `nu ∝ nu_ref exp(-Q^T mu / beta)` of every stage, by damped
  Newton with a temperature continuation, to machine precision.
- `unilateral_concentrability(game, d_data, equilibrium=None, support=None)`: `max_{h,s,a,b}` of the largest
  probability a unilateral deviator (against the other's equilibrium policy) puts on (h, s, a,
  b), over the data's; the deviator's reach probabilities come from one dynamic program per
  target step.

## Task and agent notes
Tasks (`icml26 tasks`): `markov_games/random-uniform`, `-eps-nash`, `-unilateral`,
`-reg-unilateral`, `-reg-unilateral-restricted`, `-nash-only` (random game S=10, A=B=3, H=5,
n = 1000 trajectories), `markov_games/goofspiel`, `markov_games/oshi-zumo` (OpenSpiel, needs
`open_spiel`), `markov_games/tree-game`
(n = 1000, beta = 0.3), `markov_games/low-rank` (rank-5 linear game, S = 50, n = 300; where the
linear-feature variants `sos-md-linear` / `rose-linear` pay off) and `markov_games/soccer`
(n = 10^4). Budget: `dataset_size` = n;
metrics `gap` (primary) and `reg_gap` (beta = 0.1, reference = the data's marginal behavior;
not on the Nash-only task, where the reference has partial support), lower is better. Agents
must expose `policy() -> (mu, nu)`.

Agents: `sos-md` (paper: T self-play iterations, each a least-squares evaluation of the
*current* policies followed by one KL-regularized mirror-descent step at every (h, s), last
iterate; `beta`, `eta` (number or `"auto"`), `T`, `lam`, `features` = `"tabular"`/`"game"`/array,
`reference` = `"bc"` (default) / `"behavior"` (oracle) / `"uniform"`, `variant` =
`"explicit"`/`"magnetic"`, `schedule` = `"interleaved"`/`"stagewise"`; `optimization_gap()` is
its regularized gap in the estimated game, 0 at ROSE's output), `sos-md-linear`,
`sos-md-stagewise` and `sos-md-oracle-ref` (ablations), `rose` (paper: exact regularized stage
solve, BC reference), `rose-linear`, `rose-oracle-ref` (ablation), `mg-nash-vi` (plug-in, unvisited
cells filled pessimistically for each player), `mg-pnvi` (Hoeffding LCB/UCB at c = 1, Cui & Du
2022), `mg-vi-lcb-game` (Bernstein LCB/UCB at c_b = 1, Yan et al. 2022), `mg-pessimistic-vi`
(Hoeffding with a tuned c = 0.1), `mg-bc`, `mg-selfplay-md-last`, `mg-selfplay-md-avg`
(unregularized), `mg-nash-oracle`.
Results: [docs/results/markov_games.md](../results/markov_games.md).

## Version history
- `icml26/ZeroSumMarkovGame-v0`, ParallelEnv `zero_sum_markov_game_v0`: initial version.
- Tasks `markov_games/*` v0: initial version. New v0 tasks `random-reg-unilateral`,
  `random-reg-unilateral-restricted`, `goofspiel`, `oshi-zumo`.
- Agents: `SOSMD` v2 (the interleaved algorithm, BC reference by default; v1 = `schedule=
  "stagewise", reference="behavior"`), `ROSE` v2 (BC reference by default), `NashVI` v2
  (pessimistic fill of unvisited cells; v1 = `fill=0.0`).
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

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


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__getattr__, __all__ = lazy_exports(__name__, _EXPORTS)
