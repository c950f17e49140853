"""The driving family: ScenePilot adversarial driving scenarios (ICML 2026).

After ScenePilot (feasibility-guided, boundary-driven scenario generation; public code
``QiyuRuan/ScenePilot``, a SafeBench fork). In ``icml26/ScenePilot-vN`` the agent is the adversary
in one of the 8 SafeBench pre-crash scenarios and the ego is a planner under test; in
``icml26/ScenePilotAV-vN`` the agent drives the ego against an adversary policy (adversarial
fine-tuning). The adversary earns the AV-risk objective; every step also reports the physical
feasibility sigma of what it makes the ego face, so shielded, constrained and multi-objective
agents have what they need. Every id is one engine (:class:`~icml26.envs.driving.env.ScenePilotEnv`,
:class:`~icml26.envs.driving.env.ScenePilotVectorEnv`) with one configuration (below).

## Scenarios

| scenario | layout (ego start frame: x ahead, y left; lanes 3.5 m) | adversary (1-D action a) |
|---|---|---|
| 1 straight obstacle | straight road; a walker 75 m ahead on the right shoulder behind a parked van | walker, 1 + 2a m/s |
| 2 turning obstacle | ego turns left at a junction; cyclist crosses the exit road 8 m after it | cyclist, 5 + 5a |
| 3 lane changing | lead car 35 m ahead in the ego lane, a second car in the left lane (12 m/s) | lead car, 12 m/s until it moved 5 m, then 4a |
| 4 vehicle passing | two-lane road; a stopped car at 30 m forces a pass; oncoming car at 50 m | oncoming car, 5 + 5a |
| 5 red-light running | signalized junction, ego straight on green; car from the left on red | crossing car, 5 + 5a |
| 6 unprotected left turn | ego (inner lane) turns left on green; oncoming car at (81, 3.5) | oncoming car, 5 + 5a |
| 7 right turn | ego turns right on red into the lane a car from the left drives along | crossing car, 5 + 5a |
| 8 crossing negotiation | unsignalized junction; crossing car from the left at (70, 20) | crossing car, 5 + 5a |

![scenario 5](driving/scenario_5.gif) (one GIF per scenario in [driving/](driving/))

## Dynamics, planners, sigma and Phi

Every body follows highway-env's kinematic bicycle model (``x' = v cos(psi + beta)``,
``y' = v sin(psi + beta)``, ``psi' = v sin(beta) / (L / 2)``, ``beta = atan(tan(delta) / 2)``);
walkers move along their heading; collisions are separating-axis tests between oriented boxes;
routes are exact straight/arc primitives (junction squares of half-size 12 m). Scripted actors
drive at full throttle below their target speed and full brake above it. Ego planners
(``ego=``): ``"idm"`` (IDM at 8 m/s, T 1.5 s, s0 2 m on the route corridor, pure-pursuit
steering, curve speed limits, passing through the oncoming lane in scenario 4 when nothing is
within 40 m there, full braking for anything within 5 m in its path), ``"cautious"`` (the same
plus a 4 s constant-velocity conflict prediction, yielding before junctions, a time-gap test
for passing), ``"human"`` (IDM at 9 m/s with a 1 s headway and a jerk-limited brake onset, about
1 s to full braking); or any Agent, SB3 model or callable on the 12-number ego observation.

sigma (:mod:`~icml26.envs.driving.feasibility`, ``sigma=``) against the closest dynamic NPC:
``"released"`` is the release's ``_get_phys_safe`` line by line (safe distances ``a_lon`` 3.0 /
4.0, ``a_lat`` 2.0 / 1.5 m/s^2, ``sigma = 1 - ||(n_x, n_y)||_2``; a car overlapping the ego
laterally keeps sigma <= 0 at any distance); ``"rss"`` uses RSS's safe distances (response times
1 s / 2 s, CARLA's constants) and RSS's rule that a situation is dangerous only when both axes
are unsafe; ``"rss-crossing"`` scores cars on crossing routes by RSS's rule for routes of
different geometry: seconds of escape slack (the latest time the ego can still brake to stop
short of, or enter after, the conflict region, or throttle to clear it first), clipped to
[-1, 1]. Phi (:mod:`~icml26.envs.driving.risk`, ``phi_model=``): ``"td"`` is the release's
``av_safe`` (MLP 6-128-128-1, TD(0) with BCE, one Adam step per transition from the first
collision, frozen after 5,000); ``"horizon"`` predicts "ego collision within 2 s" from labels,
one Adam step (batch 256) per 128 labelled states, ready after 500, frozen after 5,000. Until
Phi is ready the risk is the TTC proxy ``2 / (1 + TTC / 2.5)``. ``env.unwrapped.save_phi(path)``
saves it; ``phi=path`` (or ``"frozen:<path>"``) loads one.

## One engine, versions as configurations

A version is a dict of keyword arguments over :data:`~icml26.envs.driving.versions.DEFAULTS`
(MetaDrive-style: every key commented there; ``gym.make``'s keyword arguments update the
registered ones; an unknown key is a ``TypeError`` listing the known ones). The engine's pieces
are named by the config and live in small modules: the adversary's reward
(:data:`~icml26.envs.driving.rewards.REWARDS`), the sigma rule
(:data:`~icml26.envs.driving.versions.SIGMAS`), the scene tuning
(:data:`~icml26.envs.driving.scenarios.SCENES`: randomized ranges, 1-D speed tables, scripted
actor), the risk predictor (``phi_model``), ``randomize`` / ``traffic_lights``
(:mod:`~icml26.envs.driving.realism`) and ``band`` (v1's per-step band, light and parameter
bookkeeping in ``info``). The kernel (:mod:`~icml26.envs.driving.sim`: physics, planners,
sigma, metrics) and the reward bookkeeping are written once over *lanes*
(:mod:`~icml26.envs.driving.lanes`): the vector env runs them on NumPy arrays, the single env on
Python floats (compiled again from the same source, no NumPy call per number), with the same
results to 1e-12 (``tests/driving/test_driving_kernel.py``). Each version's diff and the measured
reason for it: ``## Version History`` of :class:`~icml26.envs.driving.env.ScenePilotEnv` below.

Worked example -- ScenePilot-v2 with another reward. A reward is a lane function of the step
(``risk``, the previous ``risk``, ``collision``, ``avoidable`` = a collision in the boundary
band, ``sigma``, ``ttc``, ``bonus``) written with the lane operations, so one definition serves
the single and the vector env; this one also pays 0.1 per step the ego is less than 1 s from
contact while sigma still says it can escape (near misses, not only collisions):

>>> import gymnasium as gym, numpy as np, icml26
>>> from icml26.envs.driving import rewards
>>> from icml26.envs.driving.lanes import numpy_ops
>>> where, not_ = numpy_ops("where not_")
>>> def near_miss(risk, risk_prev, collision, avoidable, sigma, ttc, bonus):
...     shaped = (risk - risk_prev) + where(avoidable, bonus, 0.0)
...     return shaped + where((ttc < 1.0) & (sigma >= 0.0) & not_(collision), 0.1, 0.0)
>>> rewards.register_reward("near-miss", near_miss)
>>> def episode(reward):
...     env = gym.make("icml26/ScenePilot-v2", scenario=6, reward=reward, phi="ttc")
...     env.reset(seed=0)
...     total, done = 0.0, False
...     while not done:
...         obs, r, terminated, truncated, info = env.step(np.array([0.5], np.float32))
...         total, done = total + r, terminated or truncated
...     return info["collision"], round(total, 3)
>>> episode("collision"), episode("near-miss")  # scenario 6's oncoming car misses the ego
((False, 0.0), (False, 0.8))
>>> vec = gym.make_vec("icml26/ScenePilot-v2", num_envs=64, reward="near-miss")  # same function
>>> obs, info = vec.reset(seed=0)
>>> obs, r, terminated, truncated, info = vec.step(np.zeros((64, 1)))
>>> r.shape
(64,)

Making it a version is one config and its registration: add ``"v3": {**VERSIONS["v2"],
"version": "v3", "reward": "near-miss"}`` to ``VERSIONS``, and its descriptions and conformance
arguments to the three dicts of ``_specs.py``, whose ``spec(v)`` registers ``ScenePilot-v3`` and
``ScenePilotAV-v3`` (``tests/driving/test_driving_versions.py`` does exactly this).

## Native vector env and backends

``gym.make_vec("icml26/ScenePilot-v2", num_envs=N)``: :class:`ScenePilotVectorEnv` (below).
``backend="metadrive"`` (``pip install metadrive-simulator==0.4.3``) moves every body with
MetaDrive's Bullet physics (one headless engine, asset download disabled; controls mapped like
ScenePilot's ``convert_actions``; layout, collisions, sigma and metrics shared);
``backend="carla"`` (``pip install carla``) connects to ``backend_kwargs={"host", "port",
"timeout"}`` or ``CARLA_HOST``/``CARLA_PORT`` and fails within the timeout with a
``ConnectionError`` that says how to start a server. ``render_mode="rgb_array"`` draws a 480x480
top-down view for every backend. ``perf/driving.py`` times every version (default arguments and
``phi="ttc"``; single env, vector env N = 1024, cold start) against MetaDrive 0.4.3's physics.

## Tasks and results

The attack tasks score the adversary (collision rate, feasible ratio, J_risk, J_sigma, SafeBench's
attack score, the ego's driving score), ``driving/defense-idm`` the fine-tuned ego (crash rate,
driving score); results: [docs/results/driving.md](../results/driving.md).
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_EXPORTS = {  # module: the names it lends this package
    "env": "ScenePilotEnv ScenePilotAVEnv ScenePilotVectorEnv driving_score attack_score",
    "versions": "DEFAULTS VERSIONS",
    "feasibility": "FeasibilityParams sigma_reference",
    "risk": "RiskPredictor HorizonPhiLearner",
    "scenarios": "LAYOUTS SCENES scripted_adversary_action",
}
_LAZY = {name: m for m, names in _EXPORTS.items() for name in names.split()}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
