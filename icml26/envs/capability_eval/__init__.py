"""Certified capability claims: finite tests over a task family (the ICML 2026 paper "when can
finite tests certify capabilities"; method card docs/methods/capability_eval.md).

`gym.make("icml26/CapabilityEval-v0")`: the agent is the *evaluator* of a hidden system. It
spends a test budget on the environments of a task family, then issues a certificate (a lower
bound on the success rate of every member of the family); the env knows the hidden truth and
scores the certificate's validity, whether it certified the claim "success >= tau on every
member", and the tests spent. :mod:`.families` holds the parametric environment grid, the
families and the hidden success profiles; :mod:`.circuits` the bounded-size Boolean circuits
and adversaries of the worst-case regime; the protocols themselves live in :mod:`icml26.certify`.

## Regimes
*Stochastic*: `K` environments on a parameter grid, a family of `m` members (discretized
Gaussian bumps, or every environment), hidden success profiles with narrow failure regions.
The family's chi^2-radius relative to the best design sets the tests a uniform certificate
needs (`2 (1 + R) log(m / delta) / eps^2`); `testable=(low, high)` removes environments from
reach, and members living there lack overlap: no finite test certifies them.
*Worst case*: the environments are the `2^n` inputs of a hidden bounded-size Boolean circuit,
the claim is that it agrees with a public specification on every input; an adaptive adversary
answers every query consistently with the spec and with a backdoored circuit, and reveals the
one that breaks the certificate. The affine circuit class (identified by `n + 1` queries) and the
average claim (`claim="fraction"`) are the controls that finite tests do certify.

## Task notes
`capability_eval/{bumps, every-scenario, no-overlap, boundary}` (stochastic) and
`capability_eval/{circuits-adaptive, circuits-random, circuits-affine, circuits-fraction}`
(worst case): 10 public seeds, 100 hidden systems per seed; primary metric `utility` (mean
episode return: +1 per true claim certified, -1/delta per false one, -0.1 per full test
budget); `validity` (share of certificates whose every bound holds; >= 1 - delta for a uniform
protocol), `false_certification`, `power`, `tests`. Agents: `certify-chi2` (the paper's
protocol as derived in the method card), `certify-iw`, `certify-uniform`, `certify-per-env`,
`certify-per-env-hoeffding`, `certify-pooled` (invalid: a pooled rate is not a uniform
certificate), and the circuit testers `circuit-random`, `circuit-exhaustive`, `circuit-span`.
Results: [docs/results/capability_eval.md](../results/capability_eval.md).

## Running an agent
```python
import gymnasium as gym, icml26, icml26.agents
env = gym.make("icml26/CapabilityEval-v0")
agent = icml26.agents.make("certify-chi2")
agent.bind(env.observation_space, env.action_space)
obs, info = env.reset(seed=0); agent.reset(0)
while True:
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    if terminated or truncated:
        break
print(info["certified"], info["valid"], info["tests"], min(info["truth"]))
```
"""
