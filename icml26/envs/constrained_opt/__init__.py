"""Optimization over non-convex sets homeomorphic to a ball (Hom-PGD+: Liu, Liang and Chen,
ICML 2026). :mod:`.problems` holds the generators, radial functions and best-known solutions;
:mod:`.env` the episode env ``icml26/ConstrainedOpt-v0``; see ``docs/envs/constrained_opt.md``.

`gym.make("icml26/ConstrainedOpt-v0")`: one problem instance per episode. The agent is the
optimizer: it gets objective, constraint and radial-function oracles (call-counted) and proposes
iterates; the env scores objective, max constraint violation and the relative gap to a cached
best-known solution.

## Problems
`qcqp` (non-convex QCQP, the homopt repo's generator: indefinite quadratic constraints,
box [-5, 5]^n, indefinite objective; `x0 = 0` strictly feasible), `star` (a star-shaped set with
a known radial function), `jcc_opf` (joint chance-constrained DC-OPF on pypower's IEEE case30:
at least S - K of S = 20 demand scenarios, sigma 5%, eps = 0.1, must meet every line and slack
limit; the best known solution is exact: one convex QP per admissible scenario subset) and
`attack` (a non-uniform l2 attack, `||B diag(w) d||_2 <= 0.06` and the image box, on a tanh MLP
trained on sklearn's bundled digits; objective: the logit margin). Best-known solutions of the
other problems: multi-start SLSQP (20 starts), cached under `$ICML26_CACHE/constrained_opt`.

Deviations from the paper (method card): per-instance INN training (the paper conditions the
INN on instance parameters and amortizes it); case30 instead of PGLib cases; digits instead of
CIFAR-10; SLSQP instead of IPOPT/Gurobi as the solver row.

## Task notes
`constrained_opt/{qcqp-10x10, qcqp-10x100, qcqp-30x30, star-10, jcc-opf-case30, attack-digits-l2}`:
10 public seeds, 2 instances each; primary metric `penalized_gap` = max(rel_gap, 0) + 100 x
max violation of the final point (the env's final reward negated). Agents: `hom-pgd-plus` (the paper's
method), `hom-pgd-gauge` (the exact map), `co-pgd-exact`, `co-penalty`, `co-alm`, `co-slsqp`.
`icml26.agents.constrained_opt.solvers.run` runs the same methods without the env.
Results: [docs/results/constrained_opt.md](../results/constrained_opt.md).

## Running an agent
```python
import gymnasium as gym, icml26, icml26.agents
env = gym.make("icml26/ConstrainedOpt-v0", problem="qcqp", problem_kwargs={"n": 10, "m": 10})
agent = icml26.agents.make("hom-pgd-gauge")
obs, info = env.reset(seed=0); agent.reset(0)
while True:
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    if terminated or truncated:
        break
print(info["rel_gap"], info["violation"], info["oracle_calls"])
```
"""
