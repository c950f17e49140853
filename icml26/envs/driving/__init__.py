"""The driving family: ScenePilot adversarial driving scenarios (ICML 2026).

* ``icml26/ScenePilot-v0`` (:class:`~icml26.envs.driving.env.ScenePilotEnv`): the agent is the
  adversary in one of the 8 SafeBench pre-crash scenarios, the ego is a planner under test.
* ``icml26/ScenePilotAV-v0`` (:class:`~icml26.envs.driving.env.ScenePilotAVEnv`): the agent is the
  ego car facing an adversary policy (adversarial fine-tuning).
* ``icml26/ScenePilot-v1`` / ``icml26/ScenePilotAV-v1`` (:mod:`.env_v1`): the same scenes with an
  adversary reward whose optimum is an avoidable collision, RSS sigma, a collision-horizon Phi
  learned in batches, randomized scenarios and traffic lights (section "ScenePilot-v1" below).
* ``icml26/ScenePilot-v2`` / ``icml26/ScenePilotAV-v2`` (:mod:`.env_v2`, the default version): v1
  with a sigma that flags crossing conflicts, scenarios 1-4 re-tuned so that every scenario
  discriminates, and the ``human`` ego by default (section "ScenePilot-v2" below).

Backends: ``kinematic`` (default, vectorized NumPy), ``metadrive`` and ``carla`` (optional).
sigma lives in :mod:`.feasibility`, Phi in :mod:`.risk`, the layouts in :mod:`.scenarios`.
This module stays cheap to import; the classes load lazily.

After ScenePilot (ICML 2026, feasibility-guided, boundary-driven scenario generation; public code
``QiyuRuan/ScenePilot``, a SafeBench fork). The adversary earns the AV-risk objective; every step
also reports the physical feasibility sigma of what it makes the ego face, so shielded,
constrained and multi-objective agents have what they need.

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

## Dynamics and ego planners

Every body follows highway-env's kinematic bicycle model (``x' = v cos(psi + beta)``,
``y' = v sin(psi + beta)``, ``psi' = v sin(beta) / (L / 2)``, ``beta = atan(tan(delta) / 2)``),
walkers move along their heading; collisions are separating-axis tests between oriented boxes.
Scripted actors drive at full throttle below their target speed and full brake above it. Routes
are exact straight/arc primitives (junction squares of half-size 12 m).

Ego planners (``ego=``): ``"idm"`` -- rule-based: IDM car following (8 m/s, T 1.5 s, s0 2 m) on
the route corridor, pure-pursuit steering, curve speed limits, overtaking through the oncoming
lane in scenario 4 when nothing is within 40 m there, and full braking when something is within
5 m in its path; it reacts only to what is already in its corridor. ``"cautious"`` -- the same
plus a 4 s constant-velocity conflict prediction (oriented boxes) with emergency braking,
yielding before junctions (never stopping inside one), ignoring followers, and a time-gap test
before and during overtaking. Any Agent (``act``), SB3 model (``predict``) or callable mapping
the 12-number ego observation to [acc, steer] in [-1, 1] can drive too.

## sigma and Phi

sigma (``icml26.envs.driving.feasibility``) is the release's ``_get_phys_safe`` line by line
against the closest dynamic NPC: safe distances (``a_lon`` 3.0 / 4.0, ``a_lat`` 2.0 / 1.5 m/s^2,
eps 0.1, INF 1e4), separating-axis clearances, closing-speed compensation ``0.5 a t^2``, and
``sigma = 1 - ||(n_x, n_y)||_2``; an infinite lateral distance gives -1 and no NPC gives 0.
Note the released formula's behaviour in the same lane: a car overlapping the ego laterally
keeps ``need_y > 0``, so sigma <= 0 there at any distance (e.g. 0 behind a faster car).
``feasibility={"mode": "rss"}`` swaps in the full RSS distances (response time rho, CARLA's
defaults). Phi (``icml26.envs.driving.risk.RiskPredictor``) is the release's ``av_safe``: MLP
6-128-128-1, TD(0) with BCE (weight 50 above 0.85), lr 1e-3, gamma 0.95, soft target update
(tau 0.01 every 100 updates), one Adam step per transition, training from the first collision.
It is ready when its mean loss over 1000 updates falls below 0.01 (the release's test, which in
practice takes 10^5-10^6 updates because the target network decays slowly), after 5,000 updates
(the release's ``--train_avsafe_steps`` cap; then, as the release does between its Phi run and
its ScenePilot run, the online network is frozen and used), or when loaded. Until then the
reward is the TTC proxy ``2 / (1 + TTC / 2.5)``. ``phi={"max_updates": n, ...}`` sets the cap
and other RiskPredictor arguments. Save it with ``env.unwrapped.save_phi(path)``; pass
``phi=path`` to use a trained one. The release feeds Phi the TD flag of the previous step; here
the current step's termination is used.

## Native vector env

``gym.make_vec("icml26/ScenePilot-v0", num_envs=N)`` returns ``ScenePilotVectorEnv``: all N
scenes (mixed scenarios) advance in one batched NumPy call; autoreset is same-step
(``final_obs``, ``episode_metrics`` and their masks in ``info``); Phi is shared by the N scenes.
``vectorization_mode="async"`` works too (one env per worker).

## Backends

``backend="kinematic"`` (default). ``backend="metadrive"`` (``pip install
metadrive-simulator==0.4.3``): the same scenes with MetaDrive's Bullet physics for every body
(one headless engine, map "S" as ground, asset download disabled -- physics needs no assets;
controls mapped like ScenePilot's ``convert_actions``; layout, collisions, sigma and metrics
shared); ``reset`` reports ``info["backend_note"]``. ``backend="carla"`` (``pip install
carla``): connects to ``backend_kwargs={"host", "port", "timeout"}`` or
``CARLA_HOST``/``CARLA_PORT``; with no server it fails within the timeout with a
``ConnectionError`` that says how to start one (``docker run --gpus all --net=host
carlasim/carla:0.9.16 bash CarlaUE4.sh -RenderOffScreen``). The CARLA stepping path anchors the
scene at a map spawn point; it is not exercised here. ``render_mode="rgb_array"`` draws a
480x480 top-down view for every backend.

## Performance

``perf/driving.py`` (one process, interleaved rounds, CPU-time rates, 2 idle cores, every row
single-threaded), env steps per second, one run:

| configuration | steps/s (CPU) | x MetaDrive physics-only | x highway-fast-v0 |
|---|---|---|---|
| kinematic single env (``gym.make``, IDM ego) | 15,185 | 11.3 | 343 |
| kinematic single env, cautious ego | 10,573 | 7.8 | 239 |
| kinematic single env on the batched NumPy path | 1,351 | 1.0 | 31 |
| kinematic world, no Gymnasium wrappers | 15,289 | 11.3 | 346 |
| kinematic native vector, N = 64 | 46,020 | 34 | 1,041 |
| kinematic native vector, N = 1024 | 183,233 | 136 | 4,143 |
| MetaDrive 0.4.3 physics only (ego, no traffic) | 1,348 | 1.0 | 30.5 |
| ``backend="metadrive"`` (ScenePilot scenes, 3 bodies) | 486 | 0.4 | 11 |
| highway-env ``highway-fast-v0`` | 44 | 0.03 | 1 |

MetaDrive's own rate moves by about 15% from run to run (1,348-1,597 steps/s over our runs), so
the single-env ratio was 10.3x-11.3x and the N = 1024 ratio 118x-136x. Both targets (single env
10x, vector 100x per core) are met with the default IDM ego; the cautious planner, which
predicts both actors along the route every step, is 7.8x. One scene steps on a scalar path
(``icml26/envs/driving/scalar.py``: the batched step's formulas in Python floats, about 11x
faster than the NumPy code at N = 1, whose per-call overhead dominates there);
``tests/driving/test_driving_fast_path.py`` checks that both give the same episodes to 1e-12,
with identical collisions, ends and lane changes.

## Tasks and results

``driving/attack-idm``, ``driving/attack-cautious`` (the agent is the adversary; ``-long``: 8x the
steps; 24 evaluation episodes, 3 per scenario; collision rate, feasible ratio, J_risk, J_sigma,
SafeBench's attack score, the ego's driving score) and ``driving/defense-idm`` (ego crash rate
and ScenePilot's overall driving score before/after fine-tuning against a ScenePilot adversary
trained in the trial). Results: [docs/results/driving.md](../results/driving.md).

## ScenePilot-v1

Why a v1 (measured on v0, ``docs/results/driving.md``): v0's released per-step risk reward has no
collision term, so a near-constant risk makes surviving worth more than colliding; the released
sigma puts every car in the ego's lane at sigma <= 0 at any distance (the shield then switches
scenarios on and off rather than steps); Phi trained by batch-1 TD for 5,000 updates is nearly
constant; and episodes barely vary (spawn jitter under 1 m). v1 (``icml26.envs.driving.env_v1``):

* ``reward="collision"`` (default): ``(risk_t - risk_{t-1}) + 10 * 1[collision at t and
  min_sigma_pre >= k]`` where ``min_sigma_pre`` is the minimum sigma from the reset up to 1 s
  (RSS's ego response time) before t; the shaping telescopes, so the optimum is an avoidable
  (boundary-band) collision. ``reward="released"``: the release's ``r_t = risk_t``.
* ``sigma="rss"`` (default): RSS safe distances with response times (rho 1 s ego, 2 s others;
  CARLA's RSS constants) and RSS's rule that a situation is dangerous only when both the
  longitudinal and the lateral distance are unsafe: ``sigma = 1 - min(n_x, n_y)``; a distant
  lead car has sigma = 1. ``sigma="released"`` is v0's.
* Phi (``phi="online"``, :class:`~icml26.envs.driving.risk.HorizonPhiLearner`): the release's MLP
  predicting "ego collision within the next 2 s", labels known 20 steps late, a replay buffer and
  one Adam step (batch 256) per 128 labelled states, from the first collision; ready after 500
  steps, frozen after 5,000; ``phi="frozen:<path>"`` or a frozen RiskPredictor is used as is.
* Per episode from the reset seed (:mod:`.realism`): spawn offsets, the third body's speed, the
  scripted adversary's trigger distance (x U[0.3, 1.2]) and speed (x U[0.8, 1.2]); traffic lights
  in scenarios 5 (green for U[6, 12] s, 3 s amber, then red) and 7 (red for U[2, 8] s, then
  green), obeyed by every planner; red-light violations are measured (``run_red_light``).
* ``ego="human"``: IDM at 9 m/s with a 1 s headway and a jerk-limited brake onset (8 m/s^3, about
  1 s to full braking), added for v1 so that more scenarios discriminate (table below).

Which scenarios discriminate (``experiments/driving_v1_scenarios.py --episodes 60 --egos
human,idm,cautious``; ego collision rate with Wilson 95% intervals over 60 distinct randomized
episodes, seeds 0-59, per scenario, planner and non-learning adversary: SafeBench's scripted
behaviour with the drawn trigger and speed, or a uniform random action each step; ``phi="ttc"``):

| scenario | human, scripted | human, random | idm, scripted | idm, random | cautious, scripted | cautious, random |
|---|---|---|---|---|---|---|
| 1 | 0.12 [0.06, 0.22] | 0.00 [0.00, 0.06] | 0.03 [0.01, 0.11] | 0.00 [0.00, 0.06] | 0.00 [0.00, 0.06] | 0.00 [0.00, 0.06] |
| 2 | 0.00 [0.00, 0.06] | 0.13 [0.07, 0.24] | 0.00 [0.00, 0.06] | 0.08 [0.04, 0.18] | 0.00 [0.00, 0.06] | 0.10 [0.05, 0.20] |
| 3 | 0.00 [0.00, 0.06] | 0.00 [0.00, 0.06] | 0.00 [0.00, 0.06] | 0.00 [0.00, 0.06] | 0.00 [0.00, 0.06] | 0.00 [0.00, 0.06] |
| 4 | 0.92 [0.82, 0.96] | 0.98 [0.91, 1.00] | 0.93 [0.84, 0.97] | 0.90 [0.80, 0.95] | 0.43 [0.32, 0.56] | 0.00 [0.00, 0.06] |
| 5 | 0.23 [0.14, 0.35] | 0.33 [0.23, 0.46] | 0.18 [0.11, 0.30] | 0.17 [0.09, 0.28] | 0.05 [0.02, 0.14] | 0.00 [0.00, 0.06] |
| 6 | 0.30 [0.20, 0.43] | 0.33 [0.23, 0.46] | 0.30 [0.20, 0.43] | 0.18 [0.11, 0.30] | 0.15 [0.08, 0.26] | 0.00 [0.00, 0.06] |
| 7 | 0.27 [0.17, 0.39] | 0.15 [0.08, 0.26] | 0.33 [0.23, 0.46] | 0.08 [0.04, 0.18] | 0.18 [0.11, 0.30] | 0.00 [0.00, 0.06] |
| 8 | 0.25 [0.16, 0.37] | 0.05 [0.02, 0.14] | 0.18 [0.11, 0.30] | 0.00 [0.00, 0.06] | 0.05 [0.02, 0.14] | 0.00 [0.00, 0.06] |

With ``ego="human"`` every scenario except 3 has a rate strictly between 0 and 1 under at least
one of the two actors (scenario 4 stays near 1: 0.92 and 0.98); scenario 3 (a lead car that brakes
while still 35 m ahead) yields no collision for any planner under these actors -- only a learning
adversary that brakes when the ego is close can make it collide. Red-light violations were 0 in
every cell (the planners obey the lights); the share of collisions whose pre-collision min sigma
was >= 0 was 1.00 wherever there were collisions (RSS sigma stays high until the last second).

v1 speed (``perf/driving.py``, same run as v0's rows, CPU-time rates on a loaded 2-core machine,
load average ~20; MetaDrive and highway-env were not installed, so no ratios against them here):
v1 single env with ``phi="ttc"`` 13,274 steps/s (v0's single env 12,340 in the same run);
with the default learned Phi while it trains 5,876; native vector N = 64: 30,111 (``phi="ttc"``)
and 18,141 with the default learned Phi while it trains (60% of ``phi="ttc"``); N = 1024: 119,589
and 38,892 (33%: Phi's inference and one Adam step per 128 labelled states grow with N).

## ScenePilot-v2

Why a v2 (measured on v1, ``docs/results/driving.md``): with v1's RSS sigma every collision of
every adversary in scenarios 5-7 had a pre-collision minimum sigma >= 0.35, even 0.1 s before
contact, so the boundary-band share was 1.000 for every arm and the shield's gate never closed;
scenario 3 never collided and scenario 4 collided in ~0.95 of episodes for every actor.
v2 (``icml26.envs.driving.env_v2``; v0 and v1 unchanged):

* ``sigma="rss"`` (default). Cars on crossing routes (heading difference between 30 and 150
  degrees) are scored by RSS's rule for routes of different geometry
  (:func:`~icml26.envs.driving.feasibility.conflict_slack`): both cars follow their heading rays;
  the conflict region is where each body overlaps the other's path; the other car occupies it
  during a window predicted from its speed and acceleration along its heading (none if it
  stands, stops short, or has passed). ``T`` is the latest time from now at which the ego can
  still start an escape -- full brake (8 m/s^2) to stop short of the region or to enter it only
  after the window, or full throttle (3.5 m/s^2) to leave it before -- and ``sigma = clip(T / 1 s,
  -1, 1)``: seconds of escape slack, 0 at the ego's point of no return. Near-parallel cars keep
  v1's RSS two-axes rule, without the release's recoverable-gap credit (``l = a t^2 / 2``, which
  kept an overlapping head-on car at sigma ~0.6 at contact in scenario 6). ``sigma="rss-v1"`` is
  v1's sigma, ``"released"`` the release's. The boundary band (``min_sigma_pre_collision`` >= k,
  the minimum up to 1 s before contact) then reads, for crossing routes: 1 s before contact the
  ego still had >= k s to start an escape. The two rules have different scales: the two-axes
  rule rarely goes below 0 (same- and opposite-direction collisions sit at 0.1-0.6 a second
  before contact), so k = 0 separates crossing collisions only; report the band at several k.
* Scenarios (:data:`~icml26.envs.driving.env_v2.RANGES_V2`, ``ADV_TABLES_V2``, ``TRIGGER_V2``):
  1, the walker starts 0-12 m further from the road; 2, the scripted cyclist starts when the ego
  is within 35 m (x U[0.3, 1.2]) instead of at once; 3, the ego arrives at 7-10 m/s behind a slow
  lead car (0-2 m/s, 8-20 m ahead) whose 1-D action now spans 0-10 m/s, and SafeBench's scripted
  leader cruises at 8 m/s and brakes to a stop when the ego is within 18 m (x U[0.3, 1.2]);
  4, the oncoming car's spawn spreads +-20 m around a point 12 m further away.
* ``ego="human"`` is the default planner; :func:`~icml26.envs.driving.env_v2.reckless_adversary_v2`
  is a deliberately reckless actor (1-D: times its speed to hit 2 m behind the ego's centre at
  the crossing of the two headings; 2-D: rams; scenario 3: brake check at 11 m), the contrast
  arm of the boundary-band metric.

Which scenarios discriminate on v2 (``experiments/driving_v1_scenarios.py --version v2 --egos
human --actors scripted,random,reckless --episodes 100``; 1-D action, ``phi="ttc"``, 100
randomized episodes per cell from one vector reset with seed 0; band share = share of the
collisions whose minimum sigma up to 1 s before contact was >= k):

| scenario | ego | adversary | collision rate [95% CI] | red-light rate | collisions | band share k=0 | band share k=0.35 | median pre-collision min sigma |
|---|---|---|---|---|---|---|---|---|
| 1 | human | scripted | 0.28 [0.20, 0.37] | 0.00 | 28 | 0.96 | 0.46 | 0.35 |
| 1 | human | random | 0.10 [0.06, 0.17] | 0.00 | 10 | 0.90 | 0.50 | 0.34 |
| 1 | human | reckless | 0.47 [0.38, 0.57] | 0.00 | 47 | 1.00 | 0.45 | 0.32 |
| 2 | human | scripted | 0.16 [0.10, 0.24] | 0.00 | 16 | 0.81 | 0.50 | 0.39 |
| 2 | human | random | 0.23 [0.16, 0.32] | 0.00 | 23 | 0.96 | 0.70 | 0.56 |
| 2 | human | reckless | 0.00 [0.00, 0.04] | 0.00 | 0 | nan | nan | nan |
| 3 | human | scripted | 0.35 [0.26, 0.45] | 0.00 | 35 | 1.00 | 0.06 | 0.30 |
| 3 | human | random | 0.19 [0.13, 0.28] | 0.00 | 19 | 1.00 | 0.00 | 0.28 |
| 3 | human | reckless | 0.34 [0.25, 0.44] | 0.00 | 34 | 1.00 | 0.06 | 0.31 |
| 4 | human | scripted | 0.62 [0.52, 0.71] | 0.00 | 62 | 1.00 | 0.95 | 0.57 |
| 4 | human | random | 0.88 [0.80, 0.93] | 0.00 | 88 | 1.00 | 0.80 | 0.58 |
| 4 | human | reckless | 0.96 [0.90, 0.98] | 0.00 | 96 | 1.00 | 0.72 | 0.60 |
| 5 | human | scripted | 0.31 [0.23, 0.41] | 0.00 | 31 | 0.77 | 0.42 | 0.25 |
| 5 | human | random | 0.41 [0.32, 0.51] | 0.00 | 41 | 0.83 | 0.56 | 0.35 |
| 5 | human | reckless | 1.00 [0.96, 1.00] | 0.00 | 100 | 1.00 | 0.92 | 0.35 |
| 6 | human | scripted | 0.25 [0.18, 0.34] | 0.00 | 25 | 1.00 | 0.04 | 0.22 |
| 6 | human | random | 0.40 [0.31, 0.50] | 0.00 | 40 | 1.00 | 0.03 | 0.23 |
| 6 | human | reckless | 0.00 [0.00, 0.04] | 0.00 | 0 | nan | nan | nan |
| 7 | human | scripted | 0.25 [0.18, 0.34] | 0.00 | 25 | 0.40 | 0.12 | -0.19 |
| 7 | human | random | 0.08 [0.04, 0.15] | 0.00 | 8 | 0.62 | 0.50 | 0.41 |
| 7 | human | reckless | 0.71 [0.61, 0.79] | 0.00 | 71 | 0.08 | 0.01 | -0.16 |
| 8 | human | scripted | 0.24 [0.17, 0.33] | 0.00 | 24 | 0.79 | 0.67 | 0.38 |
| 8 | human | random | 0.01 [0.00, 0.05] | 0.00 | 1 | 1.00 | 1.00 | 0.37 |
| 8 | human | reckless | 0.60 [0.50, 0.69] | 0.00 | 60 | 1.00 | 0.42 | 0.27 |

Every scenario is strictly inside (0, 1) under both the scripted and the random actor (8 with
random only barely: 1 collision in 100). With the 2-D ``acc_steer`` action (same command with
``--action acc_steer``) scripted / random collision rates are 0.26 / 0.06, 0.16 / 0.03,
0.32 / 0.29, 0.61 / 0.41, 0.27 / 0.04, 0.18 / 0.05, 0.26 / 0.00 and 0.28 / 0.06 in scenarios 1-8:
with the 2-D action a random adversary never hits the ego in scenario 7 (its acceleration noise
rarely brings it to the junction at the right time), the one saturated cell. The boundary-band share discriminates where the ego is slow in the conflict region: in
scenario 7 (right turn), at k = 0, 10 of 25 scripted collisions are in the band against 6 of 71
of the reckless actor's (Fisher's exact test p = 0.0008); in 5 and 8 the reckless actor's
collisions come right after the ego's point of no return and count as band, as do most scripted
ones (0.77-1.00 at k = 0 in every scenario but 7).

v2 speed (``perf/driving.py --quick``, CPU-time rates, one run on the shared 2-core machine, load
average ~11): single env with ``phi="ttc"`` 13,477 steps/s = 15.6x MetaDrive 0.4.3 physics only
(864), 7.7x while the default Phi learns (6,633; v1 in the same run: 8.8x); native vector N = 1024
with ``phi="ttc"`` 140,268 = 162x per core (49x while Phi learns: its batched Adam steps grow with
N); vector N = 64 with the default learned Phi at 59% of its ``phi="ttc"`` rate (16,391 vs 27,999).
The crossing rule costs the single env ~15% against v1's sigma (15,721 in the same run).
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_LAZY = {
    "ScenePilotEnv": "icml26.envs.driving.env",
    "ScenePilotAVEnv": "icml26.envs.driving.env",
    "ScenePilotVectorEnv": "icml26.envs.driving.env",
    "driving_score": "icml26.envs.driving.env",
    "attack_score": "icml26.envs.driving.env",
    "FeasibilityParams": "icml26.envs.driving.feasibility",
    "sigma_reference": "icml26.envs.driving.feasibility",
    "RiskPredictor": "icml26.envs.driving.risk",
    "HorizonPhiLearner": "icml26.envs.driving.risk",
    "ScenePilotV1Env": "icml26.envs.driving.env_v1",
    "ScenePilotAVV1Env": "icml26.envs.driving.env_v1",
    "ScenePilotV1VectorEnv": "icml26.envs.driving.env_v1",
    "ScenePilotV2Env": "icml26.envs.driving.env_v2",
    "ScenePilotAVV2Env": "icml26.envs.driving.env_v2",
    "ScenePilotV2VectorEnv": "icml26.envs.driving.env_v2",
    "LAYOUTS": "icml26.envs.driving.scenarios",
    "scripted_adversary_action": "icml26.envs.driving.scenarios",
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
