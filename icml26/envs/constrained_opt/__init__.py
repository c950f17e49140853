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
trained on sklearn's bundled digits; objective: the logit margin) and `qcqp_param` (a parametric
family, the release's parametric QCQP: shared quadratic rows, per-instance right-hand sides and
objective; `Oracle.condition` holds the instance parameters a conditional map sees). Best-known
solutions of the other problems: multi-start SLSQP (20 starts), cached under
`$ICML26_CACHE/constrained_opt`.

## Parametric families
`problems.Family.make("qcqp_param", {...})` draws instances by seed and keeps what an amortized
method trains on apart from what it is tested on: training seeds `[0, 1e6)`, validation
`[1e6, 2e6)`, test instance `i` is seed `2e6 + i`.

Deviations from the paper (method card): on the v0 problems the INN is trained per instance
(`hom-pgd-plus`); the amortized agent `hom-pgd-plus-amortized` trains one conditional INN per
family as the paper does (the family task below); case30 instead of PGLib cases; digits instead
of CIFAR-10; SLSQP instead of IPOPT/Gurobi as the solver row.

## Task notes
`constrained_opt/{qcqp-10x10, qcqp-10x100, qcqp-30x30, star-10, jcc-opf-case30, attack-digits-l2}`:
10 public seeds, 2 instances each; primary metric `penalized_gap` = max(rel_gap, 0) + 100 x
max violation of the final point (the env's final reward negated). Agents: `hom-pgd-plus` (the paper's
method), `hom-pgd-gauge` (the exact map), `co-pgd-exact`, `co-penalty`, `co-alm`, `co-slsqp`.
`icml26.agents.constrained_opt.solvers.run` runs the same methods without the env.

`constrained_opt/qcqp-param-40x1500` (the family task; `run_family_trial`): `qcqp_param` with
n = 40, m = 1,500, box only; the agent's `learn(family, budget)` runs once (2,000 updates for
`hom-pgd-plus-amortized`; timed), then it solves 100 test instances through `solve(problem)`
(or its `act` loop). On a tenth of them per seed (instance `i` in the trial of seed `i mod 10`)
exact-projection PGD, SLSQP and the exact gauge map run back to back with it in one process, the
order rotated per instance; every iterate is stamped with CPU and wall seconds, so the speed
claim is read as paired per-instance times to target gaps (0.5, 0.25, 0.1, 0.01). Metrics:
`penalized_gap` (primary), `rel_gap`, `feasible_rate`, `reach_rate` (gap <= 0.1), `online_cpu_s`,
`learn_cpu_s`; per-instance records in `extra["instances"]`.
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
