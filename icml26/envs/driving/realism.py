"""ScenePilot-v1's scenario realism: per-episode randomized scenario parameters and traffic lights.

Both are off in a plain :class:`~icml26.envs.driving.sim.KinematicWorld` (v0) and switched on by
``world.randomize`` / ``world.lights_on`` (the configs' ``randomize`` and ``traffic_lights``).

Randomized per episode, from the reset's generator (uniform; ranges in
:data:`~icml26.envs.driving.scenarios.RANGES`, or ``world.ranges`` for other scene sets):
``shift``, every non-ego actor moved along the ego's start heading by ``shift_bias`` +
U[-shift, shift] m (scenarios 1 and 3: the walker with its blocker, the lead car with its
neighbour); ``adv``, the adversary moved along its heading by ``adv_bias`` + U[-adv, adv] m, on
top of v0's +-1 m jitter (scenario 2: the cyclist starts 0-24 m further upstream); ``other``, the
third body moved along its heading by U[-other, other] m; ``other_speed``, its scripted speed
times U[1 - r, 1 + r]; the scripted adversary's trigger distance times U[0.3, 1.2] and its speed
times U[0.8, 1.2] (:mod:`.scenarios`); the traffic-light timing (:data:`LIGHTS`).

Traffic lights (SafeBench's red-light scenarios 5 and 7): the ego's signal is green on
``[green_from, green_until)``, amber for 3 s after it, red otherwise. Scenario 5 starts green and
turns amber after U[6, 12] s (the ego usually arrives on green, sometimes on amber or red);
scenario 7 starts red and turns green after U[2, 8] s (right turn against a red light: the ego
waits at the line). Both planners obey the signal: on red, or on amber when they can stop
comfortably (v^2 / (2 b_comf) below the gap), they treat the stop line (1 m before the junction)
as a stopped leader (IDM with s0 = 1 m). A red-light violation is the ego's front crossing the
junction's edge while its signal is red.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml26.envs.driving.lanes import numpy_ops, scalar_twins
from icml26.envs.driving.scenarios import DT, RANGES, TABLES

where, fmax = numpy_ops("where fmax")

__all__ = ["RANGES", "LIGHTS", "AMBER_S", "PARAM_KEYS", "apply_reset", "light_state", "light_phase",
           "light_brake", "stop_line"]  # fmt: skip

# scenario -> (starts green?, switch time range in s): 5 green then amber/red, 7 red then green
LIGHTS: dict[int, tuple[bool, float, float]] = {5: (True, 6.0, 12.0), 7: (False, 2.0, 8.0)}
AMBER_S = 3.0  # s of amber after green
SCRIPTED_SCALE = (0.8, 1.2)  # target speed of the scripted adversary (times)
TRIGGER_SCALE = (0.3, 1.2)  # trigger distance of the scripted adversary (times): late triggers too
STOP_BACK = 1.0  # the stop line lies this far before the junction's edge (m)
PARAM_KEYS = ("shift", "adv_offset", "other_offset", "other_speed_scale", "trigger_scale",
              "adv_speed_scale", "green_from", "green_until")  # fmt: skip


def stop_line(scn: np.ndarray) -> np.ndarray:
    """Arc length of the stop line on each scene's ego route (inf without a junction)."""
    return TABLES["j_entry"][scn] - STOP_BACK


def _ensure(w: Any) -> None:
    if getattr(w, "rparams", None) is None or len(w.rparams["shift"]) != w.n:
        w.rparams = {k: np.zeros(w.n) for k in PARAM_KEYS}
        w.has_light = np.zeros(w.n, dtype=bool)
        for k in ("trigger_scale", "adv_speed_scale", "other_speed_scale"):
            w.rparams[k][:] = 1.0


def apply_reset(w: Any, idx: np.ndarray, rng: np.random.Generator) -> None:
    """Draw and apply the v1 per-episode parameters of scenes ``idx`` (after the layout is placed)."""
    _ensure(w)
    n = len(idx)
    u = rng.uniform(-1.0, 1.0, size=(n, 6))  # one block per reset: same seed, same episode
    P = w.rparams
    ranges = RANGES if getattr(w, "ranges", None) is None else w.ranges
    for r, i in enumerate(idx):
        sc = int(w.scn[i])
        rg = ranges[sc]
        if w.randomize:
            shift = rg.get("shift_bias", 0.0) + rg["shift"] * u[r, 0]
            adv = rg.get("adv_bias", 0.0) + rg["adv"] * u[r, 1]
            oth = rg["other"] * u[r, 2]
            spd = 1.0 + rg["other_speed"] * u[r, 3]
            lo, hi = SCRIPTED_SCALE
            tlo, thi = TRIGGER_SCALE
            trig = tlo + (thi - tlo) * 0.5 * (u[r, 4] + 1.0)
            advs = lo + (hi - lo) * 0.5 * (u[r, 5] + 1.0)
        else:
            shift = adv = oth = 0.0
            spd = trig = advs = 1.0
        P["shift"][i], P["adv_offset"][i], P["other_offset"][i] = shift, adv, oth
        P["other_speed_scale"][i], P["trigger_scale"][i], P["adv_speed_scale"][i] = spd, trig, advs
        for j, off in ((1, adv), (2, oth)):
            if w.kind[i, j] == 0:
                continue
            w.x[i, j] += shift + math.cos(w.yaw[i, j]) * off
            w.y[i, j] += math.sin(w.yaw[i, j]) * off
        w.scripted_speed[i, 2] *= spd
        if w.randomize and "ego_speed" in rg:  # v2: the ego (and adversary) start moving
            w.v[i, 0] = rng.uniform(*rg["ego_speed"])
            w.v[i, 1] = rng.uniform(*rg.get("adv_speed", (0.0, 0.0)))
        lit = LIGHTS.get(sc) if w.lights_on else None
        w.has_light[i] = lit is not None
        if lit is None:
            P["green_from"][i], P["green_until"][i] = 0.0, np.inf
            continue
        starts_green, t_lo, t_hi = lit
        t_sw = t_lo + (t_hi - t_lo) * rng.uniform() if w.randomize else 0.5 * (t_lo + t_hi)
        if starts_green:
            P["green_from"][i], P["green_until"][i] = 0.0, t_sw
        else:
            P["green_from"][i], P["green_until"][i] = t_sw, np.inf


def light_phase(t: Any, green_from: Any, green_until: Any, lit: Any) -> Any:
    """The ego's signal at step ``t`` (lanes): 0 red, 1 amber, 2 green, -1 none (``lit`` False)."""
    ts = t * DT
    amber = (ts >= green_until) & (ts < green_until + AMBER_S)
    return where(lit, where((ts >= green_from) & (ts < green_until), 2, where(amber, 1, 0)), -1)


def light_brake(P: Any, v: Any, front: Any, j_entry: Any, t: Any, green_from: Any,
                green_until: Any, lit: Any) -> Any:  # fmt: skip
    """IDM deceleration (s0 = 1 m) towards the stop line where the signal says stop, +inf
    elsewhere: on red when the planner can still stop, on amber when it can stop comfortably."""
    gap = (j_entry - STOP_BACK) - front
    st = light_phase(t, green_from, green_until, lit)
    comfy = v * v / (2.0 * P.b_comf) < gap
    can = v * v / (2.0 * P.b_emergency) < gap + 0.5
    must = lit & (gap > -0.5) & (((st == 0) & can) | ((st == 1) & comfy))
    q = (1.0 + v * P.time_headway) / fmax(gap, 0.05)
    return where(must, P.a_max * (1.0 - q * q), math.inf)


_ONE = scalar_twins([light_phase, light_brake], globals())
light_phase_one, light_brake_one = _ONE["light_phase"], _ONE["light_brake"]


def light_state(w: Any, t: np.ndarray | None = None) -> np.ndarray:
    """The ego's signal per scene of world ``w`` at step ``t`` (default: now): 0 red, 1 amber,
    2 green, -1 none."""
    _ensure(w)
    gf, gu = w.rparams["green_from"], w.rparams["green_until"]
    return light_phase(w.t if t is None else t, gf, gu, w.has_light)
