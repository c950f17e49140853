"""The ``kinematic`` backend: ScenePilot scenes on the kinematic bicycle model, one scene or N at once.

A scene holds the ego (body 0), the adversary (body 1) and at most one more actor (body 2) on
highway-env's kinematic bicycle model (the family page gives the equations); routes are exact
straight/arc primitives, so projections are analytic. The physics, planners, sigma and metrics
are written once over *lanes* (:mod:`.lanes`): :func:`step_lanes` steps N scenes as NumPy arrays
(the vector env) and, compiled for floats, one scene (the single env), with the same results to
1e-12 (``tests/driving/test_driving_kernel.py``). No Gymnasium here: :mod:`.env` wraps it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from icml26.envs.driving import realism
from icml26.envs.driving.feasibility import (
    FeasibilityParams,
    sigma_lanes,
    sigma_lanes_one,
    ttc_lanes,
    ttc_lanes_one,
    ttc_risk,
    ttc_risk_one,
)
from icml26.envs.driving.lanes import numpy_ops, scalar_twins
from icml26.envs.driving.realism import light_brake, light_brake_one
from icml26.envs.driving.scenarios import (
    ADV_ACC_MAX,
    ADV_STEER_MAX,
    DT,
    EGO_OBS_DIM,
    EGO_RL_ACC,
    EGO_RL_STEER,
    KIND_CAR,
    KIND_NONE,
    KIND_STATIC,
    KIND_WALKER,
    LANE,
    LAYOUTS,
    LIMITS,
    MAX_STEER,
    N_BODIES,
    OBS_PER_ACTOR,
    SCRIPTED_REACH,
    STRICT_K,
    TABLES,
)

where, fmin, fmax, clip, any_, all_, not_, isfinite, floor = numpy_ops("where fmin fmax clip any_ "
                                                                      "all_ not_ isfinite floor")  # fmt: skip
sqrt, cos, sin, tan, atan, asin, atan2, hypot, tanh = numpy_ops("sqrt cos sin tan atan asin atan2 "
                                                                "hypot tanh")  # fmt: skip

__all__ = ["KinematicWorld", "PlannerParams", "PLANNERS", "StepResult", "N_BODIES", "OBS_PER_ACTOR",
           "EGO_OBS_DIM", "DT", "boxes_overlap", "boxes_overlap_one", "project_on_route", "project_one",
           "route_point", "route_point_one"]  # fmt: skip

INF = math.inf
METRIC_KEYS = ("driven off_road dist_route lane_inv acc_sum yaw_change collided adv_other completion j_risk "
               "j_sigma steps feasible min_ttc feasible_strict min_sigma").split()  # fmt: skip
_METRIC_START = np.array([{"min_ttc": np.inf, "min_sigma": 1.0}.get(k, 0.0) for k in METRIC_KEYS])


@dataclass(frozen=True)
class PlannerParams:
    """Ego planner constants. ``idm``: IDM car following on the route corridor (rule-based, like
    SafeBench's autopilot: target 8 m/s, reacts to what is in its path). ``cautious``: the same
    plus a constant-velocity conflict prediction with emergency braking (BehaviorAgent-like)."""

    name: str = "idm"
    v_target: float = 8.0  # m/s, SafeBench's desired speed
    time_headway: float = 1.5  # IDM T (s)
    min_gap: float = 2.0  # IDM s0 (m)
    a_max: float = 3.0  # IDM a (m/s^2)
    b_comf: float = 3.0  # IDM b (m/s^2)
    b_emergency: float = 8.0  # full brake
    a_lat_max: float = 2.5  # curve speed limit sqrt(a_lat R)
    predict: bool = False  # cautious: constant-velocity conflict prediction
    horizon: float = 3.0  # s, prediction horizon (the autopilot looks 4 s ahead in junctions)
    emergency_distance: float = 5.0  # m, brake fully if something is this close in the path
    pass_clear_ahead: float = 40.0  # idm: oncoming lane "clear" if nothing within this many metres
    pass_time_margin: float = 3.0  # cautious: extra seconds demanded from the oncoming gap
    jerk_max: float = 0.0  # m/s^3 limit on the planner's acceleration change (0: none); "human"


PLANNERS = {
    "idm": PlannerParams("idm"),
    "cautious": PlannerParams("cautious", time_headway=2.0, min_gap=3.0, predict=True, horizon=4.0),
    # ScenePilot-v1: IDM with a human-like brake onset (jerk <= 8 m/s^3: about 1 s from cruising
    # to full braking, RSS's ego response time) and a 1.0 s headway at 9 m/s
    "human": PlannerParams("human", v_target=9.0, time_headway=1.0, jerk_max=8.0),
}


# --------------------------------------------------------------------------- route tables


def _prepare(typ: Any, x0: Any, y0: Any, h0: Any, ln: Any, sw: Any, s0: Any, sl: Any) -> tuple:
    """A route primitive with the constants its projection needs (cos, sin, arc centre)."""
    ch, sh = cos(h0), sin(h0)
    sign = where(sw >= 0, 1.0, -1.0)
    cx, cy = x0 - sign * ln * sh, y0 + sign * ln * ch
    return (typ > 0.5, x0, y0, h0, ln, s0, ch, sh, sign, cx, cy, h0 - sign * (np.pi / 2), abs(sw))


_ROUTE = ("total", "route_len", "max_dist", "j_entry", "j_exit", "passing", "adv_base", "adv_scale",
          "lead_after", "end_x", "end_y")  # fmt: skip


def _tables(adv: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Per-scenario tables of the step, with the adversary speed tables of ``adv``."""
    pr = TABLES["prims"]
    tb = {**TABLES, **(adv or {}), "total": (pr[:, :, 6] + pr[:, :, 7]).max(axis=1)}
    tb["end_x"], tb["end_y"] = TABLES["route_end"].T
    tb["prep"] = np.stack([np.stack(_prepare(*p.T), axis=1) for p in pr.transpose(1, 0, 2)], 1)
    return tb


class _Route:
    """A route and the per-scenario constants of one scene (floats) or N scenes (arrays)."""

    __slots__ = ("prims", "prep", "rects", *_ROUTE)

    def __init__(self, tb: dict[str, Any], rows: Any) -> None:
        pr, pp, rc = tb["prims"][rows], tb["prep"][rows], tb["rects"][rows]
        if isinstance(rows, int):
            self.prims, self.rects = ([tuple(a) for a in x.tolist()] for x in (pr, rc))
            self.prep = [(p[0] > 0.5, *p[1:]) for p in pp.tolist()]
        else:
            self.prims, self.rects = ([tuple(a.T) for a in x.transpose(1, 0, 2)] for x in (pr, rc))
            self.prep = [(pp[:, k, 0] > 0.5, *pp[:, k, 1:].T) for k in range(3)]
        for k in _ROUTE:
            setattr(self, k, tb[k][rows].tolist() if isinstance(rows, int) else tb[k][rows])


def _wrap(a: Any) -> Any:
    return (a + np.pi) % (2 * np.pi) - np.pi


def boxes_overlap(x1, y1, h1, l1, w1, x2, y2, h2, l2, w2):  # type: ignore[no-untyped-def]
    """Separating-axis test between oriented boxes (centre, heading, length, width), per lane."""
    dx, dy = x2 - x1, y2 - y1
    c1, s1, c2, s2 = cos(h1), sin(h1), cos(h2), sin(h2)
    hl1, hw1, hl2, hw2 = 0.5 * l1, 0.5 * w1, 0.5 * l2, 0.5 * w2
    hit = True
    for ax, ay in ((c1, s1), (-s1, c1), (c2, s2), (-s2, c2)):
        r1 = hl1 * abs(c1 * ax + s1 * ay) + hw1 * abs(-s1 * ax + c1 * ay)
        r2 = hl2 * abs(c2 * ax + s2 * ay) + hw2 * abs(-s2 * ax + c2 * ay)
        hit = hit & (abs(dx * ax + dy * ay) <= r1 + r2)
        if not any_(hit):
            break
    return hit


def project(prep: list, qx: Any, qy: Any) -> tuple[Any, Any, Any, Any]:
    """(s, lateral (left +), route heading, distance) of a point on a route of prepared primitives;
    the closest primitive wins (the first one on ties)."""
    best: tuple[Any, Any, Any, Any] | None = None
    for arc, x0, y0, h0, ln, s0, ch, sh, sign, cx, cy, th0, abs_sw in prep:
        wx, wy = qx - x0, qy - y0
        t = fmin(fmax(wx * ch + wy * sh, 0.0), ln)
        px, py = x0 + ch * t, y0 + sh * t
        lat, s, head = ch * wy - sh * wx, s0 + t, h0 + 0.0 * t
        if any_(arc):
            rq = hypot(qx - cx, qy - cy)
            tau = fmin(fmax(sign * _wrap(atan2(qy - cy, qx - cx) - th0), 0.0), abs_sw)
            th = th0 + sign * tau
            px, py = where(arc, cx + ln * cos(th), px), where(arc, cy + ln * sin(th), py)
            lat, s = where(arc, sign * (ln - rq), lat), where(arc, s0 + ln * tau, s)
            head = where(arc, h0 + sign * tau, head)
        dist = hypot(qx - px, qy - py)
        if best is None:
            best = (s, lat, head, dist)
        else:
            better = dist < best[3]
            best = (where(better, s, best[0]), where(better, lat, best[1]),
                    where(better, head, best[2]), where(better, dist, best[3]))  # fmt: skip
    assert best is not None
    return best


def _route_point(prims: list, total: Any, s: Any) -> tuple[Any, Any, Any]:
    """Point and heading at arc length ``s`` along a route (clipped to its ends)."""
    s = clip(s, 0.0, total)
    typ, x0, y0, h0, ln, sw, s0, _ = prims[0]
    found = False
    for p in prims:
        hit = (s >= p[6]) & ((s < p[6] + p[7]) | (p[7] <= 0) | (p[6] + p[7] >= total)) & (p[7] > 0)
        take = hit & not_(found)
        if any_(take):
            typ, x0, y0, h0, ln, sw, s0 = (where(take, a, b) for a, b in
                                           zip(p[:7], (typ, x0, y0, h0, ln, sw, s0)))  # fmt: skip
        found = found | hit
        if all_(found):
            break
    d = s - s0
    arc = typ > 0.5
    px, py, head = x0 + cos(h0) * d, y0 + sin(h0) * d, h0
    if any_(arc):
        sign = where(sw >= 0, 1.0, -1.0)
        tau = d / fmax(ln, 1e-9)
        cx, cy = x0 - sign * ln * sin(h0), y0 + sign * ln * cos(h0)
        hh = h0 + sign * tau
        px, py = where(arc, cx + sign * ln * sin(hh), px), where(arc, cy - sign * ln * cos(hh), py)
        head = where(arc, hh, head)
    return px, py, head


# --------------------------------------------------------------------------- kernel (lanes)


class Scene:
    """The state of one scene (Python floats) or N scenes (NumPy arrays, one per scene): per body
    lists [ego, adversary, other] and per scene values, as the kernel reads and writes them."""

    __slots__ = ("kind", "x", "y", "yaw", "v", "beta", "L", "W", "vx", "vy", "ax", "ay", "frozen",
                 "a_max", "b_max", "v_max", "spawn_x", "spawn_y", "scripted", "scn", "t", "passing",
                 "pass_end", "pass_obst", "lat_target", "ego_s", "ego_lat", "ego_head", "proj",
                 "lane_prev", "last_ctl", "vehicle_front", "has_light", "green_from",
                 "green_until", "m", "route", "sigma", "feat")  # fmt: skip


def leaders(S: Scene, lat_center: Any) -> list[tuple[Any, Any, Any, Any]]:
    """Gap (inf if not in the corridor ahead), along-route speed, s and lateral of bodies 1 and 2."""
    out = []
    hw0, hl0 = 0.5 * S.W[0], 0.5 * S.L[0]
    for j in (1, 2):
        s, lat, head = S.proj[j]
        if not any_(S.kind[j] != KIND_NONE):
            out.append((where(True, INF, s), 0.0 * s, s, lat))
            continue
        rel = S.yaw[j] - head
        cr, sr = abs(cos(rel)), abs(sin(rel))
        perp = sr * S.L[j] + cr * S.W[j]
        along = 0.5 * (cr * S.L[j] + sr * S.W[j])
        in_corr = (abs(lat - lat_center) < hw0 + 0.5 * perp + 0.3) & (S.kind[j] != KIND_NONE)
        gap = where(in_corr & (s > S.ego_s), fmax(s - S.ego_s - hl0 - along, 0.01), INF)
        out.append((gap, S.v[j] * cos(S.yaw[j] + S.beta[j] - head), s, lat))
    return out


def update_projection(S: Scene, all_bodies: bool = False) -> None:
    """Project the bodies on the ego's route (absent ones only when ``all_bodies``) and set
    ``vehicle_front`` (something within 20 m ahead in the ego's corridor)."""
    prep = S.route.prep
    S.ego_s, S.ego_lat, S.ego_head, _ = project(prep, S.x[0], S.y[0])
    for j in (1, 2):
        if all_bodies or any_(S.kind[j] != KIND_NONE):
            S.proj[j] = project(prep, S.x[j], S.y[j])[:3]
    (g1, *_), (g2, *_) = leaders(S, S.lat_target)
    S.vehicle_front = where((g1 < 20.0) | (g2 < 20.0), 1.0, 0.0)


def update_passing(P: PlannerParams, S: Scene, allow: Any) -> None:
    """Scenario 4's passing manoeuvre: leave the lane around a stopped car when the gap allows."""
    v = S.v[0]
    lead = leaders(S, 0.0)
    stopped = [isfinite(g) & (abs(S.v[j]) < 0.5) & (g < 25.0) for j, (g, *_) in zip((1, 2), lead)]
    first = stopped[0] | not_(stopped[1])  # the first stopped body (body 1 when none)
    s_obst, gap_obst = where(first, lead[0][2], lead[1][2]), where(first, lead[0][0], lead[1][0])
    len_obst = where(first, S.L[1], S.L[2])
    in_pass, ahead, t_meet = [], [], []
    for j, (_, _, s_a, lat_a) in zip((1, 2), lead):
        dyn = (S.kind[j] != KIND_NONE) & (S.kind[j] != KIND_STATIC)
        in_pass.append(dyn & (abs(lat_a - LANE) < 2.5))
        ahead.append(s_a - S.ego_s)
        t_meet.append(where(ahead[-1] > -8.0, ahead[-1] / fmax(v + abs(S.v[j]), 1.0), INF))
    if P.predict:  # cautious: the oncoming gap must exceed the passing time + margin
        t_pass = (gap_obst + len_obst + 12.0) / fmax(v, 4.0) + P.pass_time_margin
        blocked = (in_pass[0] & (t_meet[0] < t_pass)) | (in_pass[1] & (t_meet[1] < t_pass))
    else:  # idm: clear if no car in the oncoming lane within pass_clear_ahead metres
        near = [(a > -8.0) & (a < P.pass_clear_ahead) for a in ahead]
        blocked = (in_pass[0] & near[0]) | (in_pass[1] & near[1])
    start = allow & not_(S.passing) & (stopped[0] | stopped[1]) & not_(blocked)
    passing = S.passing | start
    S.pass_end = where(start, s_obst + 0.5 * len_obst + 8.0, S.pass_end)
    S.pass_obst = where(start, s_obst - 0.5 * len_obst, S.pass_obst)
    if P.predict:  # cautious: abort (back behind the obstacle) if the oncoming gap closes first
        behind = S.ego_s + 0.5 * S.L[0] < S.pass_obst - 1.0
        remaining = (S.pass_end - S.ego_s) / fmax(v, 4.0) + P.pass_time_margin
        threat = [p & (a > 0) & (t < remaining) for p, a, t in zip(in_pass, ahead, t_meet)]
        passing = passing & not_(behind & (threat[0] | threat[1]))
    S.passing = passing & not_(passing & (S.ego_s > S.pass_end))
    S.lat_target = where(S.passing, LANE, 0.0)


def predictive_brake(P: PlannerParams, S: Scene) -> Any:
    """Cautious planner: brake for the earliest predicted box conflict within the horizon."""
    v, R = S.v[0], S.route
    x0, y0, yaw0, L0 = S.x[0], S.y[0], S.yaw[0], S.L[0]
    c0, s0 = cos(yaw0), sin(yaw0)
    others = []  # dynamic bodies that are not followers (those are theirs to avoid)
    for j in (1, 2):
        rel_x = c0 * (S.x[j] - x0) + s0 * (S.y[j] - y0)
        follower = (rel_x < -0.5 * L0) & (abs(_wrap(S.yaw[j] - yaw0)) < np.pi / 3)
        others.append((S.kind[j] != KIND_NONE) & (S.kind[j] != KIND_STATIC) & not_(follower))
    t_conf = where(True, INF, v)
    if any_(others[0] | others[1]):
        v_pred, lat, found = fmax(v, 3.0), S.lat_target, False
        for k in range(1, 11):
            tk = k * (P.horizon / 10)
            px, py, ph = _route_point(R.prims, R.total, S.ego_s + v_pred * tk)
            ex, ey = px - sin(ph) * lat, py + cos(ph) * lat
            hit = False
            for j in (1, 2):
                if any_(others[j - 1]):
                    ox, oy = S.x[j] + S.vx[j] * tk, S.y[j] + S.vy[j] * tk
                    box = boxes_overlap(ex, ey, ph, L0 + 1.0, S.W[0] + 0.4, ox, oy, S.yaw[j],
                                        S.L[j], S.W[j])  # fmt: skip
                    hit = hit | (others[j - 1] & box)
            t_conf = where(hit & not_(found), tk, t_conf)
            found = found | hit
            if all_(found):
                break
    # yield before the junction, never stop inside it (clear the junction instead)
    half = 0.5 * L0
    inside = (S.ego_s + half > R.j_entry) & (S.ego_s - half < R.j_exit)
    t_conf = where(inside, INF, t_conf)
    finite = isfinite(t_conf)
    if not any_(finite):
        return INF
    d_stop_line = where(isfinite(R.j_entry), R.j_entry - S.ego_s - half - 1.0, INF)
    d_avail = fmax(fmin(v * where(finite, t_conf, 0.0) - 1.0, d_stop_line), 0.3)
    a_req = where(finite, v * v / (2 * d_avail), 0.0)
    brake = where(a_req > 0.5, -clip(fmax(a_req, 2.0), 0.0, P.b_emergency), INF)
    brake = where(finite & (t_conf <= 1.0) & (v > 0.5), -P.b_emergency, brake)
    # conflict predicted while standing still: stay put
    return where(finite & (v <= 0.5) & (t_conf <= 1.5), -P.b_emergency, brake)


def plan_ego(P: PlannerParams, S: Scene, lights: bool) -> tuple[Any, Any]:
    """The planner's acceleration (m/s^2) and steering (rad)."""
    v, R = S.v[0], S.route
    if any_(R.passing):
        update_passing(P, S, R.passing)
    x0, y0, yaw0 = S.x[0], S.y[0], S.yaw[0]
    # lateral: pure pursuit on the route shifted by lat_target
    px, py, ph = _route_point(R.prims, R.total, S.ego_s + clip(2.0 + 0.8 * v, 5.0, 15.0))
    px, py = px - sin(ph) * S.lat_target, py + cos(ph) * S.lat_target
    alpha = _wrap(atan2(py - y0, px - x0) - yaw0)
    kappa = 2.0 * sin(alpha) / fmax(hypot(px - x0, py - y0), 1.0)
    sin_beta = clip(kappa * S.L[0] / 2.0, -0.99, 0.99)
    steer = clip(atan(2.0 * tan(asin(sin_beta))), -MAX_STEER, MAX_STEER)
    # longitudinal: IDM towards min(v_target, curve limits ahead)
    v_des = P.v_target
    for typ, _, _, _, ln, _, s0, sl in R.prims:
        arc = typ > 0.5
        if any_(arc):
            v_arc = sqrt(P.a_lat_max * fmax(ln, 1e-3))
            to_arc = s0 - S.ego_s
            lim = where(to_arc <= 0, v_arc, sqrt(v_arc * v_arc + 2 * P.b_comf * fmax(to_arc, 0.0)))
            v_des = fmin(v_des, where(arc & (to_arc + sl > 0), lim, INF))  # arcs behind: no limit
    free = 1.0 - (v / fmax(v_des, 0.1)) ** 4
    inter, close = 0.0, False
    root = 2 * math.sqrt(P.a_max * P.b_comf)
    for gap, v_lead, _, _ in leaders(S, S.lat_target):
        s_star = P.min_gap + fmax(0.0, v * P.time_headway + v * (v - v_lead) / root)
        q = s_star / gap
        inter = fmax(inter, where(isfinite(gap), q * q, 0.0))
        close = close | (gap < P.emergency_distance)
    acc = where(close & (v > 0.5), -P.b_emergency, P.a_max * (free - inter))
    if P.predict:
        acc = fmin(acc, predictive_brake(P, S))
    if lights:
        acc = fmin(acc, light_brake(P, S.v[0], S.ego_s + 0.5 * S.L[0], R.j_entry, S.t, S.green_from,
                                    S.green_until, S.has_light))  # fmt: skip
    return clip(acc, -P.b_emergency, 3.5), steer


def move(S: Scene, acc: list, steer: list, moving: list) -> list:
    """Advance every body by DT under (acc, steer): highway-env's kinematic bicycle, walkers
    translate; pose, speed, velocity and finite-difference acceleration. Returns the yaw rates."""
    rates = []
    for j in range(N_BODIES):
        m = moving[j]
        if any_(m):
            walker = S.kind[j] == KIND_WALKER
            v, b = S.v[j], where(walker, 0.0, atan(0.5 * tan(steer[j])))
            hb = S.yaw[j] + b
            S.x[j] = where(m, S.x[j] + v * cos(hb) * DT, S.x[j])
            S.y[j] = where(m, S.y[j] + v * sin(hb) * DT, S.y[j])
            rate = where(walker, 2.0 * steer[j], v * sin(b) / (S.L[j] / 2.0))
            S.yaw[j] = where(m, S.yaw[j] + rate * DT, S.yaw[j])
            S.beta[j] = where(m, b, S.beta[j])
            a = clip(acc[j], -S.b_max[j], S.a_max[j])
            nv, rate = where(m, fmin(fmax(v + a * DT, 0.0), S.v_max[j]), 0.0), where(m, rate, 0.0)
        else:  # speed 0 along the old heading; a frozen body reports its deceleration
            nv = rate = where(m, 0.0, 0.0)
        hb = S.yaw[j] + S.beta[j]
        nvx, nvy = nv * cos(hb), nv * sin(hb)
        keep = m | S.frozen[j]
        S.ax[j] = where(keep, (nvx - S.vx[j]) / DT, 0.0)
        S.ay[j] = where(keep, (nvy - S.vy[j]) / DT, 0.0)
        S.v[j], S.vx[j], S.vy[j] = nv, nvx, nvy
        rates.append(rate)
    return rates


def measure(S: Scene, feas: FeasibilityParams) -> tuple[Any, list, Any, Any, Any]:
    """sigma, Phi's six features, TTC, distance and presence against the closest dynamic NPC."""
    x0, y0 = S.x[0], S.y[0]
    dyn = [(S.kind[j] != KIND_NONE) & (S.kind[j] != KIND_STATIC) for j in (1, 2)]
    present = dyn[0] | dyn[1]
    yaw_err = _wrap(S.yaw[0] - S.ego_head)
    state4 = [S.ego_lat, -yaw_err, S.v[0], S.vehicle_front]
    if not any_(present):
        return 0.0 * x0, [*state4, 0.0 * x0, 0.0 * x0], INF + 0.0 * x0, INF + 0.0 * x0, present
    d1 = where(dyn[0], hypot(S.x[1] - x0, S.y[1] - y0), INF)
    d2 = where(dyn[1], hypot(S.x[2] - x0, S.y[2] - y0), INF)
    two = d2 < d1  # the closest (body 1 on ties)

    def pick(f: list) -> Any:
        return where(two, f[2], f[1])

    nx, ny, nyaw, nvx, nvy = pick(S.x), pick(S.y), pick(S.yaw), pick(S.vx), pick(S.vy)
    ego = (x0, y0, S.yaw[0], S.vx[0], S.vy[0], S.L[0] / 2, S.W[0] / 2)
    npc = (nx, ny, nyaw, nvx, nvy, pick(S.L) / 2, pick(S.W) / 2)
    a_n = pick(S.ax) * cos(nyaw) + pick(S.ay) * sin(nyaw) if feas.crossing == "conflict" else 0.0
    sig = where(present, sigma_lanes(ego, npc, feas, a_n), 0.0)
    dist, _, ttc, dot = ttc_lanes(nx - x0, ny - y0, nvx - S.vx[0], nvy - S.vy[0], present)
    inv_d = where(present, 1.0 / (dist + 1.0), 0.0)
    feat = [*state4, inv_d, where(present, tanh(dot / dist / 10.0), 0.0)]
    return sig, feat, ttc, where(present, dist, INF), present


def step_lanes(w: KinematicWorld, S: Scene, adv: Any, ego: Any, on: Any) -> tuple:
    """One step of the scenes in ``S`` (``on``: the lanes that step, True for all)."""
    P, R, M = w.planner, S.route, S.m
    # ---- ego control
    if w.external_ego and not w.ego_residual:
        if ego is None:
            raise ValueError("KinematicWorld.step: planner='external' needs ego_control")
        acc_e, steer_e = ego[0] * EGO_RL_ACC, ego[1] * EGO_RL_STEER
    else:
        acc_e, steer_e = plan_ego(P, S, w.lights_on)
        if w.ego_residual and ego is not None:
            acc_e, steer_e = acc_e + ego[0] * EGO_RL_ACC, steer_e + ego[1] * EGO_RL_STEER
        if P.jerk_max > 0:
            dj = P.jerk_max * DT
            acc_e = clip(acc_e, S.last_ctl[0] - dj, S.last_ctl[0] + dj)
    acc_e, steer_e = clip(acc_e, -8.0, 3.5), clip(steer_e, -MAX_STEER, MAX_STEER)
    S.last_ctl = [acc_e, steer_e]
    acc, steer = [acc_e, 0.0, 0.0], [steer_e, 0.0, 0.0]
    # ---- adversary (body 1) and the scripted third body: full throttle / brake to a target speed
    if w.action_mode == "speed":
        target = R.adv_base + R.adv_scale * adv[0]
        if any_(R.lead_after > 0):  # scenario 3: scripted until it moved lead_after metres
            moved = hypot(S.x[1] - S.spawn_x, S.y[1] - S.spawn_y)
            target = where((R.lead_after > 0) & (moved < R.lead_after), SCRIPTED_REACH, target)
        acc[1] = fmin(fmax((fmax(target, 0.0) - S.v[1]) / DT, -S.b_max[1]), S.a_max[1])
    else:
        acc[1], steer[1] = adv[0] * ADV_ACC_MAX, adv[1] * ADV_STEER_MAX
    acc[2] = fmin(fmax((S.scripted - S.v[2]) / DT, -S.b_max[2]), S.a_max[2])
    # ---- integrate
    moving = [(S.kind[j] != KIND_NONE) & (S.kind[j] != KIND_STATIC) & not_(S.frozen[j]) & on
              for j in range(N_BODIES)]  # fmt: skip
    if on is not True:
        acc = [where(on, a, 0.0) for a in acc]
    rates = move(S, acc, steer, moving) if w.physics is None else w.physics(S, acc, steer, moving)
    # ---- collisions
    hits = []
    for a, b in ((0, 1), (0, 2), (1, 2)):
        both = (S.kind[a] != KIND_NONE) & (S.kind[b] != KIND_NONE)
        if any_(both):
            both = both & boxes_overlap(S.x[a], S.y[a], S.yaw[a], S.L[a], S.W[a],
                                        S.x[b], S.y[b], S.yaw[b], S.L[b], S.W[b])  # fmt: skip
        hits.append(both)
    collision, newly = (hits[0] | hits[1]) & on, hits[2] & not_(S.frozen[1]) & on
    S.frozen[1] = S.frozen[1] | hits[2]
    S.frozen[2] = S.frozen[2] | (hits[2] & (S.kind[2] != KIND_STATIC))
    # ---- route progress and metrics (``on is True``: every lane steps, nothing to mask)
    update_projection(S)
    every = on is True
    x0, y0, ego_lat = S.x[0], S.y[0], S.ego_lat
    on_road = False
    for r0, r1, r2, r3 in R.rects:
        on_road = on_road | ((x0 >= r0) & (x0 <= r1) & (y0 >= r2) & (y0 <= r3))
    lane = floor((ego_lat + LANE / 2) / LANE)
    completion = clip(S.ego_s / R.route_len, 0.0, 1.0)
    d_ego, moved0 = S.v[0] * DT, moving[0]
    if not every:
        d_ego, ego_lat = where(on, d_ego, 0.0), where(on, ego_lat, 0.0)
    M["driven"] = M["driven"] + d_ego
    M["off_road"] = M["off_road"] + where(on_road, 0.0, d_ego)
    M["dist_route"] = M["dist_route"] + abs(ego_lat)
    M["lane_inv"] = M["lane_inv"] + where(on & (lane != S.lane_prev), 1.0, 0.0)
    jerk = hypot(S.ax[0], S.ay[0])
    M["acc_sum"] = M["acc_sum"] + (jerk if every else where(on, jerk, 0.0))
    M["yaw_change"] = M["yaw_change"] + where(moved0, abs(rates[0]) * DT, 0.0)
    S.lane_prev = lane if every else where(on, lane, S.lane_prev)
    best = fmax(M["completion"], completion)
    M["completion"] = best if every else where(on, best, M["completion"])
    reached = (completion > 0.99) & (hypot(x0 - R.end_x, y0 - R.end_y) < 10.0)
    M["collided"] = fmax(M["collided"], where(collision, 1.0, 0.0))
    M["adv_other"] = fmax(M["adv_other"], where(newly, 1.0, 0.0))
    S.t = S.t + (1 if every else where(on, 1, 0))
    terminated = (collision | reached) & on
    truncated = ((S.t >= w.max_steps) | (M["driven"] > R.max_dist)) & not_(terminated) & on
    # ---- sigma, TTC and Phi's features
    sig, feat, ttc, dist, _ = measure(S, w.feas)
    sig_on = sig if every else where(on, sig, 0.0)
    M["j_sigma"] = M["j_sigma"] + sig_on
    M["feasible"] = M["feasible"] + where(on & (sig >= w.k_feasible), 1.0, 0.0)
    M["feasible_strict"] = M["feasible_strict"] + where(on & (sig >= STRICT_K), 1.0, 0.0)
    M["steps"] = M["steps"] + (1.0 if every else where(on, 1.0, 0.0))
    if every:
        M["min_sigma"], M["min_ttc"] = fmin(M["min_sigma"], sig), fmin(M["min_ttc"], ttc)
    else:
        M["min_sigma"] = where(on, fmin(M["min_sigma"], sig), M["min_sigma"])
        M["min_ttc"] = where(on, fmin(M["min_ttc"], ttc), M["min_ttc"])
    risk = ttc_risk(ttc)  # rlconfig adv_reward, before Phi
    return (collision, newly, terminated, truncated, sig, feat, ttc, dist, completion, not_(on_road),
            risk)  # fmt: skip


def observation_lanes(S: Scene) -> list:
    """27 lanes: [x, y, yaw, cos, sin, vx, vy, ax, ay] of ego, adversary, other (zeros if absent)."""
    out = []
    for j in range(N_BODIES):
        h, p = S.yaw[j], S.kind[j] != KIND_NONE
        if not any_(p):
            out += [0.0 * h] * OBS_PER_ACTOR
            continue
        vals = [S.x[j], S.y[j], _wrap(h), cos(h), sin(h), S.vx[j], S.vy[j], S.ax[j], S.ay[j]]
        out += vals if all_(p) else [where(p, a, 0.0) for a in vals]
    return out


def ego_observation_lanes(S: Scene) -> list:
    """12 lanes: SafeBench's 4-D ego state + (dx, dy, dvx, dvy) of both NPCs in the ego frame."""
    c, s = cos(S.yaw[0]), sin(S.yaw[0])
    out = [S.ego_lat, -_wrap(S.yaw[0] - S.ego_head), S.v[0], S.vehicle_front]
    for j in (1, 2):
        rx, ry = S.x[j] - S.x[0], S.y[j] - S.y[0]
        rvx, rvy = S.vx[j] - S.vx[0], S.vy[j] - S.vy[0]
        p = S.kind[j] != KIND_NONE
        out += [where(p, c * rx + s * ry, 100.0), where(p, -s * rx + c * ry, 0.0),
                where(p, c * rvx + s * rvy, 0.0), where(p, -s * rvx + c * rvy, 0.0)]  # fmt: skip
    return out


_KERNEL = [boxes_overlap, _wrap, project, _route_point, leaders, update_projection, update_passing,
           predictive_brake, plan_ego, move, measure, step_lanes, observation_lanes,
           ego_observation_lanes, _prepare]  # fmt: skip
_ONE = scalar_twins(_KERNEL, globals(), sigma_lanes=sigma_lanes_one, light_brake=light_brake_one,
                    ttc_lanes=ttc_lanes_one, ttc_risk=ttc_risk_one)  # fmt: skip
boxes_overlap_one = _ONE["boxes_overlap"]


def project_one(prims: list, qx: float, qy: float) -> tuple[float, float, float, float]:
    """(s, lateral, route heading, distance) of a point on one route (primitives as lists)."""
    return _ONE["project"]([_ONE["_prepare"](*row) for row in prims], qx, qy)


def route_point_one(prims: list, total: float, s: float) -> tuple[float, float, float]:
    """Point and heading at arc length ``s`` along one route (primitives as lists)."""
    return _ONE["_route_point"]([tuple(p) for p in prims], total, s)


def project_on_route(prims: np.ndarray, qx: np.ndarray, qy: np.ndarray) -> tuple[np.ndarray, ...]:
    """Project points on routes: ``prims`` (N, P, 8); ``qx``, ``qy`` (N, M). Returns (s, lateral
    (left +), route heading, distance), each (N, M)."""
    prep = [_prepare(*(prims[:, k, i][:, None] for i in range(8))) for k in range(prims.shape[1])]
    return project(prep, qx, qy)


def route_point(prims: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point and heading at arc length ``s`` (N,) along each route ``prims`` (N, P, 8)."""
    total = (prims[:, :, 6] + prims[:, :, 7]).max(axis=1)
    return _route_point([tuple(prims[:, k].T) for k in range(prims.shape[1])], total, s)


# --------------------------------------------------------------------------- the world


class StepResult(NamedTuple):
    """What a step produces: arrays of length N (:meth:`KinematicWorld.step`) or, for one scene,
    Python scalars (:meth:`KinematicWorld.step_one`, which adds ``obs``, ``feat`` and ``scene``)."""

    risk: Any  # the TTC proxy (the env replaces it by Phi's)
    sigma_t: Any
    sigma: Any
    ttc: Any
    collision: Any
    adversary_collision: Any
    terminated: Any
    truncated: Any
    distance: Any
    completion: Any
    off_road: Any
    obs: np.ndarray | None = None  # the (27,) observation after the step, when the step made it
    feat: np.ndarray | None = None  # Phi's features after the step (float32)
    scene: Scene | None = None  # the scene after the step (floats)


# The state of a world lives in a few buffers: floats per body (N, field, body), per scene (N,
# field), the metrics (N, key), and the integer and boolean arrays. The public arrays (``x``,
# ``ego_s``, ``metrics``, ...) are views of them. A one-scene world keeps the scene its last step
# left as Python floats (the float path reads and writes no array); reading a public array first
# writes that scene back, so a world always shows its current state.
_BODY_F = ("x", "y", "yaw", "v", "beta", "vx", "vy", "ax", "ay",  # moved by a step
           "length", "width", "a_max", "b_max", "v_max", "spawn_x", "spawn_y", "scripted_speed")  # fmt: skip
_N_MOVED = 9
_SCENE_F = ("pass_end", "pass_obst", "lat_target", "ego_s", "ego_lat", "ego_head", "vehicle_front",
            "sigma_prev")  # fmt: skip
_SC = len(_SCENE_F)  # then last_ego_control (2), act_proj s, lat, head (2 each)
_OTHER = {"scn": np.int64, "kind": np.int64, "frozen": bool, "t": np.int64, "lane_prev": np.int64,
          "passing": bool, "feat_prev": np.float32}  # fmt: skip
_PUBLIC = (*_BODY_F, *_SCENE_F, *_OTHER, "last_ego_control", "act_proj", "metrics")


class KinematicWorld:
    """N scenes of the 8 SafeBench scenarios on the kinematic bicycle model.

    Args:
        n: number of scenes.
        scenarios: scenario ids a reset may draw from (uniformly).
        action_mode: ``"speed"`` (1-D target speed) or ``"acc_steer"`` (2-D) for the adversary.
        planner: ``"idm"``, ``"cautious"``, ``"human"`` or ``"external"`` (the ego's [acc, steer]
            is given to ``step``).
        feasibility: sigma constants (``FeasibilityParams``).
        phi: must be None (the env holds the risk predictor; the world's risk is the TTC proxy).
        max_steps: steps per episode (300 = 30 s).
        ego_residual: the ego's control given to ``step`` is added to the planner's.

    The per-body arrays (``x``, ``v``, ... (N, 3)) and per-scene arrays (``ego_s``, ``t``, ...
    (N,)) are views of a few buffers: write into them (``world.x[...] = ...``), never rebind them.
    """

    physics: Any = None  # backends with their own physics: (scene, acc, steer, moving) -> yaw rates

    def __init__(self, n: int, scenarios: tuple[int, ...], action_mode: str = "speed", planner: str = "idm",
                 feasibility: FeasibilityParams | None = None, phi: None = None, max_steps: int = 300,
                 ego_residual: bool = False) -> None:  # fmt: skip
        if phi is not None:
            raise TypeError("KinematicWorld: phi must be None (the env holds the risk predictor)")
        self.n = N = int(n)
        self.scenarios, self.action_mode = np.asarray(scenarios, dtype=np.int64), action_mode
        self.planner_name, self.planner = planner, PLANNERS.get(planner, PLANNERS["idm"])
        self.external_ego, self.ego_residual = planner == "external", ego_residual
        self.feas, self.max_steps = feasibility or FeasibilityParams(), int(max_steps)
        self.k_feasible = 0.0  # threshold k of the feasible-step count (feasible_ratio)
        self._body, self._sc = np.zeros((N, len(_BODY_F), N_BODIES)), np.zeros((N, _SC + 8))
        self._m = np.tile(_METRIC_START, (N, 1))
        shapes = {"kind": 3, "frozen": 3, "feat_prev": 6}
        self._arr = {k: np.zeros((N, shapes[k]) if k in shapes else N, t)
                     for k, t in _OTHER.items()}  # fmt: skip
        self._arr["scn"][:] = 1
        self._one: Scene | None = None  # a one-scene world's scene after its last step (floats)
        self._bind_views()
        self.length[...] = self.width[...] = 1.0
        self.fast = True  # one scene: step in Python floats (the kernel's float binding)
        # realism (randomized scenes, traffic lights): off unless the config switches them on
        self.randomize = self.lights_on = False
        self.rparams: dict[str, np.ndarray] | None = None
        self.has_light = np.zeros(N, dtype=bool)
        # the scene tuning: randomized ranges (None: realism's) and adversary tables (None: layouts')
        self.ranges: dict[int, dict[str, Any]] | None = None
        self._adv_tables: dict[str, np.ndarray] | None = None
        self._tb, self._routes = _tables(), {}

    def _bind_views(self) -> None:
        """The public arrays as views of the buffers (again after unpickling, which copies views)."""
        v: dict[str, Any] = {name: self._body[:, i] for i, name in enumerate(_BODY_F)}
        v.update({name: self._sc[:, i] for i, name in enumerate(_SCENE_F)})
        v["last_ego_control"] = self._sc[:, _SC : _SC + 2]
        v["act_proj"] = tuple(self._sc[:, _SC + 2 + 2 * k : _SC + 4 + 2 * k] for k in range(3))
        v["metrics"] = {k: self._m[:, i] for i, k in enumerate(METRIC_KEYS)}
        self._views = {**v, **self._arr}

    def _flush(self) -> None:
        """Write the one-scene float state back into the arrays (they become the state again)."""
        S, self._one = self._one, None
        if S is not None:
            self._store(S, 0)

    def __getstate__(self) -> dict[str, Any]:
        self._flush()
        return {k: v for k, v in self.__dict__.items() if k != "_views"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._bind_views()

    @property
    def adv_tables(self) -> dict[str, np.ndarray] | None:
        return self._adv_tables

    @adv_tables.setter
    def adv_tables(self, tables: dict[str, np.ndarray] | None) -> None:
        self._adv_tables, self._tb, self._routes = tables, _tables(tables), {}

    @property
    def fast_path(self) -> bool:
        """True when :meth:`step` takes the one-scene float path (N = 1, ``fast``, kinematic physics)."""
        return self.n == 1 and self.fast and self.physics is None

    def _scene(self, rows: Any) -> Scene:
        """The kernel's view of scenes ``rows``: 0 (floats; one-scene worlds: the cached scene if
        any), None (all scenes, arrays) or an index array (those scenes, arrays)."""
        if self._one is not None:
            if isinstance(rows, int):
                return self._one
            self._flush()
        S, A, one = Scene(), self._arr, isinstance(rows, int)
        if one:
            F = self._body[0].reshape(-1).tolist()
            b = [F[3 * i : 3 * i + 3] for i in range(len(_BODY_F))]
            sc = self._sc[0].tolist()
            S.kind, S.frozen = A["kind"][0].tolist(), A["frozen"][0].tolist()
            S.t, S.lane_prev, S.scn = int(A["t"][0]), int(A["lane_prev"][0]), int(A["scn"][0])
            S.passing, S.has_light = bool(A["passing"][0]), bool(self.has_light[0])
            S.m, S.feat = dict(zip(METRIC_KEYS, self._m[0].tolist())), A["feat_prev"][0].copy()
            S.route = self._routes.get(S.scn)
            if S.route is None:
                S.route = self._routes[S.scn] = _Route(self._tb, S.scn)
        else:
            r = slice(None) if rows is None else rows
            b, sc = [list(f.T) for f in self._body[r].transpose(1, 0, 2)], self._sc[r].T
            S.kind, S.frozen = list(A["kind"][r].T), list(A["frozen"][r].T)
            S.t, S.lane_prev, S.passing = A["t"][r], A["lane_prev"][r], A["passing"][r]
            S.scn, S.has_light, S.feat = A["scn"][r], self.has_light[r], A["feat_prev"][r]
            S.m, S.route = dict(zip(METRIC_KEYS, self._m[r].T)), _Route(self._tb, S.scn)
        (S.x, S.y, S.yaw, S.v, S.beta, S.vx, S.vy, S.ax, S.ay, S.L, S.W, S.a_max, S.b_max,
         S.v_max, sx, sy, scr) = b  # fmt: skip
        (S.pass_end, S.pass_obst, S.lat_target, S.ego_s, S.ego_lat, S.ego_head, S.vehicle_front,
         S.sigma, a, st, s1, s2, l1, l2, h1, h2) = sc  # fmt: skip
        S.spawn_x, S.spawn_y, S.scripted = sx[1], sy[1], scr[2]
        S.last_ctl, S.proj = [a, st], [None, (s1, l1, h1), (s2, l2, h2)]
        S.green_from, S.green_until = 0.0, INF
        if self.lights_on and self.rparams is not None:
            gf, gu = self.rparams["green_from"], self.rparams["green_until"]
            S.green_from, S.green_until = (float(gf[0]), float(gu[0])) if one else (gf[r], gu[r])
        return S

    def _store(self, S: Scene, rows: Any, moved: bool = True) -> None:
        """Write the kernel's scenes ``rows`` (as in :meth:`_scene`) back into the arrays (the
        bodies too when ``moved``)."""
        (_, (s1, l1, h1), (s2, l2, h2)), (a, st), A = S.proj, S.last_ctl, self._arr
        sc = (S.pass_end, S.pass_obst, S.lat_target, S.ego_s, S.ego_lat, S.ego_head,
              S.vehicle_front, S.sigma, a, st, s1, s2, l1, l2, h1, h2)  # fmt: skip
        body = (S.x, S.y, S.yaw, S.v, S.beta, S.vx, S.vy, S.ax, S.ay)
        if isinstance(rows, int):
            if moved:
                self._body.reshape(-1)[: 3 * _N_MOVED] = [v for f in body for v in f]
                A["frozen"][0] = S.frozen
            self._sc[0], self._m[0] = sc, [S.m[k] for k in METRIC_KEYS]
        else:
            rows = slice(None) if rows is None else rows
            if moved:
                for i, f in enumerate((*body, S.frozen)):
                    arr = A["frozen"] if i == _N_MOVED else self._body[:, i]
                    for j in range(N_BODIES):
                        arr[rows, j] = f[j]
            for i, v in enumerate(sc):
                self._sc[rows, i] = v
            for i, k in enumerate(METRIC_KEYS):
                self._m[rows, i] = S.m[k]
        A["t"][rows], A["lane_prev"][rows], A["passing"][rows] = S.t, S.lane_prev, S.passing
        A["feat_prev"][rows] = S.feat

    def add_j_risk(self, risk: Any) -> None:
        """Add this step's risk (the env's: Phi or the TTC proxy) to each scene's J_risk."""
        if self._one is not None:
            self._one.m["j_risk"] += risk if isinstance(risk, float) else float(np.ravel(risk)[0])
        else:
            self._m[:, 9] += risk

    def features(self) -> np.ndarray:
        """Phi's six features of the current state, (N, 6) float32 (a copy)."""
        return self._one.feat[None].copy() if self._one is not None else self.feat_prev.copy()

    def reset(self, idx: np.ndarray, rng: np.random.Generator,
              scenario: np.ndarray | None = None) -> None:  # fmt: skip
        """Reset scenes ``idx`` (drawing scenario ids and spawn jitter from ``rng``)."""
        self._flush()
        idx = np.asarray(idx, dtype=np.int64)
        if scenario is None:
            scenario = (self.scenarios[rng.integers(0, len(self.scenarios), size=len(idx))]
                        if len(self.scenarios) > 1 else np.full(len(idx), self.scenarios[0]))  # fmt: skip
        jit = rng.uniform(-1.0, 1.0, size=(len(idx), N_BODIES))
        for r, (i, sc) in enumerate(zip(idx, scenario)):
            self.scn[i], self.kind[i], self.scripted_speed[i] = sc, KIND_NONE, 0.0
            self.x[i], self.y[i], self.yaw[i], self.v[i], self.beta[i] = 0.0, 0.0, 0.0, 0.0, 0.0
            self.length[i], self.width[i] = 1.0, 1.0
            self.kind[i, 0], self.length[i, 0], self.width[i, 0] = KIND_CAR, 4.9, 2.0
            for j, a in enumerate(LAYOUTS[int(sc)].actors, start=1):
                off = a.jitter * jit[r, j]
                self.kind[i, j], self.yaw[i, j] = a.kind, a.yaw
                self.x[i, j], self.y[i, j] = a.x + np.cos(a.yaw) * off, a.y + np.sin(a.yaw) * off
                self.length[i, j], self.width[i, j] = a.length, a.width
                self.scripted_speed[i, j] = a.scripted_speed if a.role == "scripted" else 0.0
            for j in range(N_BODIES):
                self.a_max[i, j], self.b_max[i, j], self.v_max[i, j] = LIMITS[int(self.kind[i, j])]
        if self.randomize or self.lights_on:
            realism.apply_reset(self, idx, rng)
        self.spawn_x[idx], self.spawn_y[idx] = self.x[idx], self.y[idx]
        self.vx[idx], self.vy[idx], self.ax[idx], self.ay[idx] = 0.0, 0.0, 0.0, 0.0
        v0 = self.v[idx]
        if (v0 != 0.0).any():  # re-tuned scene 3 starts moving (realism "ego_speed")
            self.vx[idx] = np.where(v0 != 0.0, v0 * np.cos(self.yaw[idx]), 0.0)
            self.vy[idx] = np.where(v0 != 0.0, v0 * np.sin(self.yaw[idx]), 0.0)
        self.frozen[idx], self.t[idx], self.lane_prev[idx] = False, 0, 0
        self.last_ego_control[idx] = 0.0
        self.passing[idx], self.pass_end[idx], self.lat_target[idx] = False, 0.0, 0.0
        self._m[idx] = _METRIC_START
        self._refresh(0 if self.fast_path else idx, measure=True)

    def _refresh(self, rows: Any, measure: bool = False) -> None:
        """Project every body of scenes ``rows`` on the ego's route; with ``measure`` also sigma
        and Phi's features (the state a step starts from)."""
        one = isinstance(rows, int)
        self._flush()
        S = self._scene(rows)
        (_ONE["update_projection"] if one else update_projection)(S, True)
        if measure:
            sig, feat, *_ = (_ONE["measure"] if one else globals()["measure"])(S, self.feas)
            S.sigma = sig
            S.feat = np.array(feat, np.float32) if one else np.stack(feat, 1).astype(np.float32)
        self._store(S, rows, moved=False)

    def _update_ego_projection(self) -> None:
        """Recompute the route projections of every scene from the arrays (after editing them)."""
        self._refresh(0 if self.fast_path else None)

    def observation(self) -> np.ndarray:
        """(N, 27): [x, y, yaw, cos, sin, vx, vy, ax, ay] for ego, adversary, other (zeros if absent)."""
        if self.fast_path:
            return np.array([_ONE["observation_lanes"](self._scene(0))], dtype=np.float32)
        return np.stack(observation_lanes(self._scene(None)), axis=1).astype(np.float32)

    def ego_observation(self) -> np.ndarray:
        """(N, 12): SafeBench's 4-D ego state + (dx, dy, dvx, dvy) of both NPCs in the ego frame."""
        if self.fast_path:
            return np.array([_ONE["ego_observation_lanes"](self._scene(0))], dtype=np.float32)
        cols = ego_observation_lanes(self._scene(None))
        return np.stack(np.broadcast_arrays(*cols), axis=1).astype(np.float32)

    def step_one(self, adv: list[float], ego_control: list[float] | None = None) -> StepResult:
        """Step a one-scene world and return Python scalars: the float path when :attr:`fast_path`,
        else row 0 of :meth:`step` (other physics backends, or ``fast = False``)."""
        if not self.fast_path:
            r = self.step(np.array([adv]), None if ego_control is None else np.array([ego_control]))
            first = (a[0].item() for a in r[:11])
            return StepResult(*first, None, self.feat_prev[0].copy(), self._scene(0))
        S = self._scene(0)
        self._one = None  # a step that raises leaves the arrays as they were
        out = _ONE["step_lanes"](self, S, adv, ego_control, True)
        coll, newly, term, trunc, sig, feat, ttc, dist, comp, off_road, risk = out
        sigma_t, S.sigma, S.feat = S.sigma, sig, np.array(feat, dtype=np.float32)
        self._one = S
        obs = np.array(_ONE["observation_lanes"](S), dtype=np.float32)
        return StepResult(risk, sigma_t, sig, ttc, coll, newly, term, trunc, dist, comp, off_road,
                          obs, S.feat, S)  # fmt: skip

    def step(self, adv_action: np.ndarray, ego_control: np.ndarray | None = None,
             active: np.ndarray | None = None) -> StepResult:  # fmt: skip
        """Advance every scene by DT. ``adv_action`` (N, 1) or (N, 2) in [-1, 1].

        ``ego_control`` (N, 2) in [-1, 1] (scaled by 3 m/s^2 and 0.3 rad) when the planner is
        ``"external"``, or a residual added to the planner's control when ``ego_residual``.
        ``active`` (N,) bool: only those scenes step. One scene (N = 1) takes the float path
        (same results; set ``world.fast = False`` for the batched path).
        """
        if active is None and self.fast_path:
            as_list = lambda a: np.asarray(a, dtype=np.float64).reshape(-1).tolist()  # noqa: E731
            ego = None if ego_control is None else as_list(ego_control)
            one = self.step_one(as_list(adv_action), ego)
            return StepResult(*(np.array([v]) for v in one[:11]))
        S = self._scene(None)
        ego = None if ego_control is None else np.asarray(ego_control, np.float64).T
        on = True if active is None else np.asarray(active, bool)
        out = step_lanes(self, S, np.asarray(adv_action, dtype=np.float64).T, ego, on)
        coll, newly, term, trunc, sig, feat, ttc, dist, comp, off_road, risk = out
        step_on = np.ones(self.n, bool) if on is True else on
        sigma_t = S.sigma.copy()
        S.sigma = np.where(step_on, sig, S.sigma)
        S.feat = np.where(step_on[:, None], np.stack(feat, axis=1).astype(np.float32), S.feat)
        self._store(S, None)
        risk = np.where(step_on, risk, 0.0)
        return StepResult(risk, sigma_t, sig, ttc, coll, newly, term, trunc, dist, comp, off_road)

    def episode_metrics(self, i: int) -> dict[str, float]:
        """Per-episode figures of scene ``i`` (SafeBench / ScenePilot metric inputs)."""
        m = {k: float(v[i]) for k, v in self.metrics.items()}
        steps = max(m["steps"], 1.0)
        return {
            "scenario": int(self.scn[i]), "collision": m["collided"], "adversary_collision": m["adv_other"],
            "route_completion": m["completion"], "success": float(m["completion"] > 0.99 and not m["collided"]),
            "out_of_road_length": m["off_road"], "distance_to_route": m["dist_route"] / steps,
            "lane_invasions": m["lane_inv"], "run_red_light": 0.0, "run_stop": 0.0,
            "avg_acceleration": m["acc_sum"] / steps, "avg_yaw_velocity": m["yaw_change"] / (steps * DT),
            "time": steps * DT, "driven_distance": m["driven"], "J_risk": m["j_risk"], "J_sigma": m["j_sigma"],
            "feasible_ratio": m["feasible"] / steps, "feasible_ratio_strict": m["feasible_strict"] / steps,
            "min_sigma": m["min_sigma"], "steps": steps, "min_ttc": min(m["min_ttc"], 1e4),
        }  # fmt: skip


def _public(name: str) -> property:
    def get(self: KinematicWorld) -> Any:
        if self._one is not None:
            self._flush()
        return self._views[name]

    return property(get, doc=f"``{name}`` (a view of the world's buffers; write into it)")


for _name in _PUBLIC:
    setattr(KinematicWorld, _name, _public(_name))
