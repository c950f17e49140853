"""Boltzmann sampling (LDR, arXiv 2602.03729): targets, OpenMM energies, MD data sets, metrics.

* :func:`make_target` (``"gmm40"``, ``"many_well32"``, ``"funnel10"``, ``"dw4"``, ``"lj13"``,
  ``"aldp"``, ``"aldp_implicit"``): ``dim``, ``energy(x)`` (reduced, batched torch), ``log_z``,
  ``sample(n, seed)`` where exact, ``dataset(n, kind, split, seed)``.
* :class:`BoltzmannEnv` behind ``icml26/Boltzmann<Target>-v0``: reset hands the data set and the
  budget, each step returns energies and charges the energy-evaluation budget.
* :mod:`.alanine`: OpenMM (one reused Context per worker) and a torch Amber force field;
  :mod:`.md`: cached Langevin / replica-exchange data; :mod:`.metrics`: ESS, NLL, W1/W2, modes,
  Ramachandran KL.

This ``__init__`` stays cheap: names load on first access.

Boltzmann generators (normalizing flows with exact log q, reweighted to p(x) ∝ exp(-u(x))) and
"Efficient Training of Boltzmann Generators Using Off-Policy Log-Dispersion Regularization"
(ICML 2026, arXiv 2602.03729). The family ships six targets, labelled data sets made locally
(exact sampling, MALA, OpenMM molecular dynamics), an environment that sells energy evaluations,
exact metrics, and spline-flow agents trained by maximum likelihood, the log-variance loss, LDR,
reverse KL and variational LDR.

```python
import gymnasium as gym, icml26
from icml26.envs.boltzmann import make_target
from icml26.agents import make

t = make_target("aldp")                     # alanine dipeptide, vacuum, 300 K, torch force field
u = t.energy(x)                             # reduced energy U / kT of (..., 66) nm, differentiable
env = gym.make("icml26/BoltzmannAlanineDipeptide-v0", data="biased", dataset_size=4000, energy_budget=0)
env.reset(seed=0)
agent = make("flow-ldr", n_iters=400, batch_size=128)
agent.reset(0); agent.learn(env)            # LDR on the 600 K data with its 300 K energies
x, log_q = agent.sample(10_000)             # the sampler every metric is computed from
```

## Targets (`make_target(name, **kwargs)`)

| name | env id | dim | log Z | exact `sample` | reference / biased data |
|---|---|---|---|---|---|
| `gmm40` | `icml26/BoltzmannGMM40-v0` | 2 | 0 | yes | exact; biased: components at T = 2 (std x sqrt 2) |
| `many_well32` | `icml26/BoltzmannManyWell32-v0` | 32 | 16 (ln 11784.50927 + ln(2 pi)/2) | yes (rejection in x1) | exact; biased: exact at T = 2 |
| `funnel10` | `icml26/BoltzmannFunnel10-v0` | 10 | 0 | yes | exact; biased: x0 with twice the variance |
| `dw4` | `icml26/BoltzmannDW4-v0` | 8 | unknown | no | MALA (64 chains x 320); biased: MALA at T = 2 |
| `lj13` | `icml26/BoltzmannLJ13-v0` | 39 | unknown | no | MALA (64 chains x 320); biased: MALA at T = 1.5 |
| `aldp` / `aldp_implicit` | `icml26/BoltzmannAlanineDipeptide-v0` | 66 | unknown | no | OpenMM MD: replica exchange (300 K kept) / 600 K |

Every target has `dim`, `energy(x)` (reduced energy in kT, batched torch, differentiable except
the OpenMM backend), `energy_and_forces(x)`, `log_z`, `geometry`, and
`dataset(n, kind="unbiased" | "biased", split="train" | "test", seed)`: exact targets draw fresh
samples, the others take a seeded subset of their cached pool. All data are labelled with the
*target* energy, also the biased data.

- **GMM-40** (FAB, Midgley et al. 2023): `torch.manual_seed(0); means = (rand(40, 2) - 0.5) * 80`,
  equal weights, per-dimension std softplus(1) = 1.3133. Normalized.
- **Many-Well-32**: 16 copies of `E(x1, x2) = x1^4 - 6 x1^2 - 0.5 x1 + 0.5 x2^2` on
  `(x[2i], x[2i+1])`, 2^16 modes. The 1-D normalizer 11784.50927 is checked by quadrature.
- **Funnel-10**: `x0 ~ N(0, 9)`, `x_i | x0 ~ N(0, e^{x0})`.
- **DW4** (Köhler et al. 2020): `u = sum_{i<j} 0.9 (d - 4)^4 - 4 (d - 4)^2`.
- **LJ13**, pinned convention (bgflow / Köhler et al. 2020, tau = 1): `u = sum_{i<j} [(1/d)^12 -
  2 (1/d)^6] + 0.5 sum_i |x_i - mean|^2`, epsilon = r_m = 1, each pair counted once (pair minimum
  -1 at d = 1). Codes summing over ordered pairs without the 1/2 have twice the LJ term.
- DW4 and LJ13 are translation invariant: their support is the centre-of-mass-free subspace
  (`geometry = "com_free"`); densities are w.r.t. Lebesgue measure on it, and the MALA chains and
  the agents' flows stay on it.
- **Alanine dipeptide**: openmmtools' Amber files (`alanine-dipeptide-gbsa/alanine-dipeptide.
  {prmtop,crd}`), `AmberPrmtopFile.createSystem(nonbondedMethod=NoCutoff, constraints=None)`,
  vacuum or `implicitSolvent=OBC1` (`make_target("aldp", solvent="obc1")` = `"aldp_implicit"`),
  300 K, positions in nm in the files' atom order. `backend="torch"` (vacuum only; default for
  the target) uses `AmberTorchEnergy`, a vectorized torch implementation of the force field
  (bonds, angles, periodic torsions, LJ + Coulomb with Amber's scaled 1-4 pairs and exclusions,
  read from the OpenMM System) that matches OpenMM to 1e-3 kJ/mol (tests; 2.4e-4 measured);
  `backend="openmm"` (the env's default) uses `OpenMMEnergy`: one Context reused for every
  configuration of every batch, or `n_workers` spawned workers with one Context each (Reference
  platform in vacuum, one-thread CPU platform for OBC1). Densities of alanine configurations are
  with respect to Cartesian volume *modulo rigid motion*: a density on the 60 internal coordinates
  (bonds, angles, torsions of the Z-matrix in `geometry.ALANINE_ZMATRIX`) and one on Cartesian
  configurations differ by `log J = sum 2 log r + sum log sin theta`
  (`geometry.ZMatrix.log_jacobian`, checked against a numerical Jacobian). Convert a Cartesian
  log-density with it before comparing.

## Data sets and the cache

Generated pools are cached under `icml26._paths.cache_dir("boltzmann", ...)`, i.e.
`$ICML26_CACHE/boltzmann/{md,mcmc}/` (default `~/.cache/icml26/boltzmann/`), one `.npz` per
pool named by a hash of every parameter that shapes it, written atomically, generated with a
progress bar on first use.

Alanine MD (`icml26.envs.boltzmann.md`), `LangevinMiddleIntegrator`, 1 fs, friction 1/ps, no
constraints, frames every 100 steps (0.1 ps), energies recomputed by OpenMM on the stored float32
coordinates:

| preset | unbiased (300 K) | biased | cost (measured, shared 2-core machine) |
|---|---|---|---|
| `full` | replica exchange on 300, 365, 444, 540, 657, 800 K (exchange acceptance 0.44-0.47), 1000 frames burn-in; train 30,000 frames, test 10,000 frames from an independent run | 600 K, train 30,000, test 5,000 | 39 min (train), 34 min (test), 5 min (biased) of wall time under a load average of about 20 |
| `tiny` | 300 / 450 K exchange, train 256, test 128, stride 10 | 600 K, 256 / 64 | well under a second |
| `decorrelated` (default of `icml26/BoltzmannAlanineDipeptide-v1`) | replica exchange on 300, 400, 533, 710 K (acceptance 0.25-0.31); train: 4 independent runs of 0.6 ns, thinned by the largest integrated autocorrelation time of cos/sin phi, cos/sin psi and the energy (stride 50 frames measured: 480 configurations); test: 2 independent runs of 0.6 ns, every frame, with run ids | 600 K, 4 runs (train, thinned) / 2 runs (test) | about 5 CPU-minutes once |
| `decorrelated-long` | as `decorrelated`, 8 + 4 runs of 1.2 ns | as `decorrelated`, 2x longer | about 4x that |
| `converged` (default of `icml26/BoltzmannAlanineDipeptide-v2`) | replica exchange on 300, 400, 533, 710, 947 K; train: 8 independent runs of 7.5 ns (thinned as above: >= 10^4 configurations); test: 4 runs of 7.5 ns; each run cached on its own (`md.alanine_runs(target, kind, split, workers=2)` makes them in parallel; an interrupted generation resumes); `md.phi_share_agreement` compares the runs' phi > 0 shares with their own standard errors | as `decorrelated` | about 2.5 CPU-hours once (estimated from `decorrelated`'s cost per replica-ns) |
| `tiny-decorrelated` | as `decorrelated` at test size | | about a second |

`md.pool_diagnostics(pool)` reports, for decorrelated pools, the phi > 0 population of every run,
its running value over simulation time, its between-run standard error, the autocorrelation
times and the thinning stride; measured with `decorrelated`: 0.02-0.63% per training run (mean
0.24%, between-run SE 0.14%), 1.05% and 0.03% in the two test runs, i.e. not converged at this
budget (use `decorrelated-long` or longer runs for the basin population).

A plain 300 K run of 5 ns crosses to phi > 0 only a handful of times; with replica exchange the
300 K test set has 0.33% of its frames at phi > 0, the 600 K set 5.5%.

## Metrics (`icml26.envs.boltzmann.metrics`)

log w = -u(x) - log q(x). Reverse ESS (Kish, top 1e-4 of log-weights clipped), forward ESS
`exp(-logmeanexp(-log w) - logmeanexp(log w))` on held-out target samples, NLL of held-out target
samples, `|log Z^ - log Z|` where log Z is known, energy W1/W2 (sampler energies above the
reference's 99.9% quantile + 100 kT are capped, the capped share is reported), modes covered on
GMM-40 (modes holding >= 10% of their share of samples), Ramachandran KL(reference || sampler)
between 100 x 100 (phi, psi) histograms with eps 1e-10. `evaluate_sampler(target, sample,
log_prob, test, n)` computes all of them.

## Agents (`icml26.agents.boltzmann`)

`FlowSampler(objective=...)`: coupling rational-quadratic spline flows on R^a x T^b (real and
circular coordinates, zuko's spline formulas, checked against zuko), with a coordinate map:
standardization; a centre-of-mass-free orthonormal basis (DW4, LJ13); for alanine the
internal-coordinate transform (log bonds, logit angles, torsions; narrow torsions standardized,
phi/psi/methyl rotors circular). Objectives: `ml`, `lv` (log-variance with R = data), `ldr`
(NLL + lambda * dispersion of -u - log q on the same batch; dispersion `variance`, `mad`,
`huber`, `iqr`), `rkl` (reparametrized reverse KL with the env's forces), `lv_onpolicy`,
`ldr_var` (reverse KL + lambda * dispersion over a replay buffer of past samples and their
energies, with extra buffer-only updates). Registered as `flow-ml`, `flow-lv`, `flow-ldr` (MAD,
lambda 1), `flow-rkl`, `flow-lv-onpolicy`, `flow-ldr-var` (MAD, lambda 1); `boltzmann-oracle`
is the exact sampler of exact targets (ESS 1). Samplers expose `sample(n) -> (x, log_q)` and
`log_prob(x)`.

## Task notes

`boltzmann/gmm40`, `-biased`, `-variational`; `boltzmann/many-well32`, `-biased`,
`-variational`; `boltzmann/funnel10`; `boltzmann/dw4`; `boltzmann/lj13`; `boltzmann/aldp`,
`aldp-biased`; `boltzmann/aldp-tiny` (smoke). Budgets: `dataset_size` (labelled configurations
handed at reset), `energy_evals` (configurations the agent may have evaluated), `updates`
(maximum gradient updates of data-based objectives). Metric `energy_evals` = labelled data +
bought evaluations. Results: [docs/results/boltzmann.md](../results/boltzmann.md).
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_LAZY = {
    "make_target": "registry",
    "TARGET_NAMES": "registry",
    "Target": "targets",
    "BoltzmannDataset": "datasets",
    "BoltzmannEnv": "env",
    "AlanineDipeptide": "alanine",
    "OpenMMEnergy": "openmm_energy",
    "AmberTorchEnergy": "alanine",
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
