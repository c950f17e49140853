"""Learned molecular force fields on OpenMM-labelled molecules (DKMP, Hong, Lin and Tan, ICML
2026: dilated star-structured message passing). :mod:`.systems` builds the OpenMM systems and the
labelling oracle, :mod:`.data` generates and caches labelled frames with random and temporal
splits, :mod:`.env` is ``icml26/MDForceField-v0``; see ``docs/envs/md_forcefields.md``.

`gym.make("icml26/MDForceField-v0")`: the agent is a force field; the env integrates Langevin
MD with the agent's forces, scores them against OpenMM at every step and stops when a covalent
bond breaks (|d - d_ref| > 0.5 A).

## Systems
`ala2` (alanine dipeptide, vacuum, 22 atoms: trained on), `t4l` (T4 lysozyme L99A + p-xylene,
vacuum, 1.0 nm cutoff, 2,621 atoms), `dhfr` (DHFR/JAC, explicit water, 23,558 atoms) and
`waterbox` (TIP3P, any size): the last three for scaling. trpzip2 (the card's Chignolin
stand-in) needs ParmEd for its old-style prmtop and is not included.

## Task notes
`md_forcefields/ala2-s2ef-random`, `md_forcefields/ala2-s2ef-temporal`: train on 1,600 labelled
frames (4 replicas, 300-600 K), test energy MAE per atom, force MAE and cosine.
`md_forcefields/ala2-md-stability`: the same training, then learned-force Langevin MD in the
env (3 episodes x 1 ps at 0.5 fs): time to failure, Rg and bond-length drift, force error along
the trajectory, inference time per step. Its v1 adds 3 NVE runs (velocity Verlet, 1 ps at 0.5 fs,
the agent's own energy and forces) from OpenMM-thermalised states: `nve_drift` (kcal/mol/atom/ps),
`nve_max_dev` (max |E_t - E_0| per atom) and `nve_time_ps`; a zero-force model conserves its
constant energy exactly, so read the drift next to the accuracy. Agents: `md-dkmp`, `md-dkmp-eq`
(equivariant), `md-dkmp-r` (DKMP^R, k-d tree neighbours), `md-schnet`, `md-painn`, `md-null`
(per-element constant energy, zero forces) and `md-openmm` (oracle). Results: [docs/results/md_forcefields.md](../results/md_forcefields.md).

## Running an agent
```python
import gymnasium as gym, icml26, icml26.agents
from icml26.envs.md_forcefields.data import load_frames   # generated on first call (~1 min)
frames = load_frames()
agent = icml26.agents.make("md-dkmp", updates=200)
agent.learn(frames)
env = gym.make("icml26/MDForceField-v0", max_steps=200)
obs, info = env.reset(seed=0); agent.reset(0)
while True:
    obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
    if terminated or truncated:
        break
print(info["steps"], info["force_mae"], info["failed"])
```
"""
