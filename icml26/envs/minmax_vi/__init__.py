"""Stochastic min-max games and variational inequalities (arXiv 2602.05531: VIs without bounded
variance). :mod:`.problems` holds the operators, boxes, residuals and noise models; :mod:`.env`
the oracle env ``icml26/StochasticVI-v0`` and its paired version ``-v1`` (the same samples at two
points, for variance-reduced methods); see ``docs/envs/minmax_vi.md``.

`gym.make("icml26/StochasticVI-v0")`: a stochastic first-order oracle for variational
inequalities and min-max games (Alacaoglu and Kim, ICML 2026, arXiv 2602.05531). The agent is
the optimization algorithm; the env owns the problem, the noise and the exact residual.

## Problems
`bilinear` (M1: `(x - x0)^T A (y - y0)`, well or ill conditioned, free or on a box),
`quadratic_game` (M2, merely monotone), `lagrangian_qp` (M3: a QP's Lagrangian, dual on the
unbounded orthant, solution from a chosen KKT point), `weak_minty_quadratic` (W1, Pethick et
al. 2023: `<F(z), z - z*> = rho |F(z)|^2` exactly), `global_forsaken` (W2, L and rho measured
on a grid of its box) and `network_game` (a nonconvex-nonconcave game of two small tanh networks,
exact gradients, a stationary point certified by its residual). See `icml26/envs/minmax_vi/problems.py`.

## Task notes
`minmax_vi/{bilinear-growing, bilinear-box, bilinear-bounded, lagrangian-qp, weak-minty, network-game}`:
10 public seeds, 3 oracle episodes each, 1e5 oracle calls; primary metric `log10_residual`
(6 for a diverged episode); v0 on `StochasticVI-v0`, v1 on the paired `StochasticVI-v1`.
Agents: `vi-fbf` (the paper's minibatch FBF), `vi-km-mlmc` / `vi-km-mlmc-wide` (the paper's
inexact KM with a multilevel Monte Carlo resolvent estimate, as derived here), `vi-halpern-vr`
(the paper's variance-reduced Halpern FBF, as derived here; v1 tasks only), `vi-km-fbf` and
`vi-halpern-fbf` (growing-batch substitutes for the last two), `vi-seg`, `vi-seg-batched`,
`vi-ogda`, `vi-seg-plus`, `vi-sgda`.
`icml26.agents.minmax_vi.algorithms.run_direct` runs the same algorithms without the env (and on
many replicates at once) for long experiments. Results: [docs/results/minmax_vi.md](../results/minmax_vi.md).

## Running an agent
```python
import gymnasium as gym, icml26, icml26.agents
env = gym.make("icml26/StochasticVI-v0", problem="bilinear", oracle_budget=20_000)
agent = icml26.agents.make("vi-fbf")
agent.bind(env.observation_space, env.action_space)
obs, info = env.reset(seed=0); agent.reset(0)
while True:
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    if terminated or truncated:
        break
print(info["residual"], info["oracle_calls"])
```
"""
