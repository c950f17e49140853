"""The one-scene fast path of the kinematic backend: :class:`KinematicWorld`'s step for N = 1 in plain
Python floats (``math``), without NumPy's per-call overhead.

A batched NumPy step costs ~0.9 ms whatever N is, almost all of it call overhead on arrays of
one to nine numbers; this module computes the same step -- planner, speed control, bicycle model,
box collisions, route projection, metrics, sigma, TTC and Phi's features -- on Python floats.
Every formula is the vector path's, in the same order of operations, so both paths agree to the
last bit except where ``math`` and NumPy's own elementary functions differ (``atan``, ``tan``,
``asin``, ``atan2``, ``hypot``, ``tanh`` and ``x ** 4`` differ by at most one ulp on some
inputs): ``tests/driving/test_driving_fast_path.py`` checks whole episodes of all 8 scenarios
against the vector path to 1e-12.

:func:`step_scene` reads the world's arrays (row 0), steps, and writes them back, so the world's
state stays in its arrays and either path can take the next step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from icml26.envs.driving.constants import (
    ADV_ACC_MAX,
    ADV_STEER_MAX,
    DT,
    EGO_RL_ACC,
    EGO_RL_STEER,
    MAX_STEER,
    SCRIPTED_REACH,
    STRICT_K,
    TABLES,
)
from icml26.envs.driving.feasibility import conflict_slack
from icml26.envs.driving.realism import light_brake_one
from icml26.envs.driving.scenarios import KIND_NONE, KIND_STATIC, KIND_WALKER, LANE

if TYPE_CHECKING:
    from icml26.envs.driving.feasibility import FeasibilityParams
    from icml26.envs.driving.sim import KinematicWorld, PlannerParams

__all__ = [
    "StepOne",
    "step_scene",
    "observation_one",
    "boxes_overlap_one",
    "project_one",
    "route_point_one",
    "sigma_one",
]

_PI, _TWO_PI, _HALF_PI = math.pi, 2 * math.pi, math.pi / 2
_INF = math.inf
_cos, _sin, _atan2, _hypot, _sqrt = math.cos, math.sin, math.atan2, math.hypot, math.sqrt
_PAIRS = ((0, 1), (0, 2), (1, 2))


def _wrap(a: float) -> float:
    return (a + _PI) % _TWO_PI - _PI


class StepOne:
    """What one scene's step produces, as Python scalars (``StepResult`` for N = 1)."""

    __slots__ = (
        "risk",
        "sigma_t",
        "sigma",
        "ttc",
        "collision",
        "adversary_collision",
        "terminated",
        "truncated",
        "phi_used",
        "distance",
        "completion",
        "off_road",
        "obs",
    )

    def __init__(
        self,
        risk: float,
        sigma_t: float,
        sigma: float,
        ttc: float,
        collision: bool,
        adversary_collision: bool,
        terminated: bool,
        truncated: bool,
        phi_used: bool,
        distance: float,
        completion: float,
        off_road: bool,
        obs: np.ndarray | None = None,
    ) -> None:
        self.risk, self.sigma_t, self.sigma, self.ttc = (
            float(risk),
            float(sigma_t),
            float(sigma),
            float(ttc),
        )
        self.collision, self.adversary_collision = bool(collision), bool(adversary_collision)
        self.terminated, self.truncated, self.phi_used = (
            bool(terminated),
            bool(truncated),
            bool(phi_used),
        )
        self.distance, self.completion, self.off_road = (
            float(distance),
            float(completion),
            bool(off_road),
        )
        self.obs = obs  # the (27,) observation after the step, when the step computed it


# --------------------------------------------------------------------------- geometry


def boxes_overlap_one(
    x1: float,
    y1: float,
    h1: float,
    l1: float,
    w1: float,
    x2: float,
    y2: float,
    h2: float,
    l2: float,
    w2: float,
) -> bool:
    """Separating-axis test between two oriented boxes (``sim.boxes_overlap`` for one pair)."""
    dx, dy = x2 - x1, y2 - y1
    c1, s1, c2, s2 = _cos(h1), _sin(h1), _cos(h2), _sin(h2)
    hl1, hw1, hl2, hw2 = 0.5 * l1, 0.5 * w1, 0.5 * l2, 0.5 * w2
    for ax, ay in ((c1, s1), (-s1, c1), (c2, s2), (-s2, c2)):
        r1 = hl1 * abs(c1 * ax + s1 * ay) + hw1 * abs(-s1 * ax + c1 * ay)
        r2 = hl2 * abs(c2 * ax + s2 * ay) + hw2 * abs(-s2 * ax + c2 * ay)
        if not abs(dx * ax + dy * ay) <= r1 + r2:
            return False
    return True


def prepare_route(prims: list[list[float]]) -> list[tuple[float, ...]]:
    """Per primitive: its row plus the constants :func:`project_prepared` needs (cos, sin, arc centre)."""
    out = []
    for typ, x0, y0, h0, ln, sw, s0, _ in prims:
        ch, sh = _cos(h0), _sin(h0)
        sign = 1.0 if sw >= 0 else -1.0
        out.append(
            (
                typ > 0.5,
                x0,
                y0,
                h0,
                ln,
                sw,
                s0,
                ch,
                sh,
                sign,
                x0 - sign * ln * sh,
                y0 + sign * ln * ch,
                h0 - sign * _HALF_PI,
                abs(sw),
            )
        )
    return out


def project_one(
    prims: list[list[float]], qx: float, qy: float
) -> tuple[float, float, float, float]:
    """(s, lateral, route heading, distance) of a point on one route (``sim.project_on_route``)."""
    return project_prepared(prepare_route(prims), qx, qy)


def project_prepared(
    route: list[tuple[float, ...]], qx: float, qy: float
) -> tuple[float, float, float, float]:
    """:func:`project_one` on a route from :func:`prepare_route` (the same arithmetic)."""
    best: tuple[float, float, float, float] | None = None
    for arc, x0, y0, h0, ln, _sw, s0, ch, sh, sign, cx, cy, th0, abs_sw in route:
        wx, wy = qx - x0, qy - y0
        t = min(max(wx * ch + wy * sh, 0.0), ln)
        if arc:
            rq = _hypot(qx - cx, qy - cy)
            tau = min(max(sign * _wrap(_atan2(qy - cy, qx - cx) - th0), 0.0), abs_sw)
            th = th0 + sign * tau
            px, py = cx + ln * _cos(th), cy + ln * _sin(th)
            lat, s, head = sign * (ln - rq), s0 + ln * tau, h0 + sign * tau
        else:
            px, py = x0 + ch * t, y0 + sh * t
            lat, s, head = ch * wy - sh * wx, s0 + t, h0 + 0.0 * t
        dist = _hypot(qx - px, qy - py)
        if best is None or dist < best[3]:
            best = (s, lat, head, dist)
    assert best is not None
    return best


def route_point_one(prims: list[list[float]], total: float, s: float) -> tuple[float, float, float]:
    """Point and heading at arc length ``s`` along one route (``sim.route_point``)."""
    s = min(max(s, 0.0), total)
    k = 0
    for i, p in enumerate(prims):
        s0, sl = p[6], p[7]
        if s >= s0 and (s < s0 + sl or sl <= 0 or s0 + sl >= total) and sl > 0:
            k = i
            break
    typ, x0, y0, h0, ln, sw, s0, _ = prims[k]
    d = s - s0
    if typ > 0.5:
        sign = 1.0 if sw >= 0 else -1.0
        tau = d / max(ln, 1e-9)
        cx, cy = x0 - sign * ln * _sin(h0), y0 + sign * ln * _cos(h0)
        hh = h0 + sign * tau
        return cx + sign * ln * _sin(hh), cy - sign * ln * _cos(hh), hh
    return x0 + _cos(h0) * d, y0 + _sin(h0) * d, h0


# --------------------------------------------------------------------------- sigma


def _rss_same(v_rear: float, v_front: float, rho: float, p: FeasibilityParams) -> float:
    v_rear, v_front = max(v_rear, 0.0), max(v_front, 0.0)
    a = v_rear + rho * p.rss_a_acc
    d = (
        v_rear * rho
        + 0.5 * p.rss_a_acc * rho**2
        + a * a / (2 * p.rss_b_min)
        - v_front * v_front / (2 * p.rss_b_max)
    )
    return max(d, 0.0)


def _rss_lat(v1: float, v2: float, p: FeasibilityParams) -> float:
    rho, a = max(p.rho_ego, p.rho_npc), p.rss_a_lat
    v1r, v2r = v1 + rho * a, v2 - rho * a
    d = (
        (2 * v1 + rho * a) / 2 * rho
        + v1r * v1r / (2 * p.rss_b_lat_min)
        - ((2 * v2 - rho * a) / 2 * rho - v2r * v2r / (2 * p.rss_b_lat_min))
    )
    return p.rss_mu + max(d, 0.0)


def _combine(nxh: float, nyh: float, p: FeasibilityParams) -> float:
    """sigma from the two normalized remaining gaps (``FeasibilityParams.combine``)."""
    if p.combine == "min":
        return 1.0 - min(nxh, nyh)
    if p.p_norm == 2.0:
        return 1.0 - _sqrt(nxh * nxh + nyh * nyh)
    return 1.0 - (nxh**p.p_norm + nyh**p.p_norm) ** (1.0 / p.p_norm)


def sigma_one(
    ego: tuple[float, ...],
    npc: tuple[float, ...],
    p: FeasibilityParams,
    same_dir_rad: float,
    a_n: float = 0.0,
) -> float:
    """``feasibility.sigma_batch`` for one (ego, NPC) pair present: [x, y, yaw, vx, vy, half_l, half_w] each
    (``a_n``: the NPC's acceleration along its heading, read by ``crossing="conflict"`` only)."""
    x, y, yaw, evx, evy, L_av, W_av = ego
    nxp, nyp, nyaw, nvx, nvy, L_npc, W_npc = npc
    cy, sy = _cos(yaw), _sin(yaw)
    rx, ry = nxp - x, nyp - y
    dx, dy = cy * rx + sy * ry, -sy * rx + cy * ry
    vax, vay = cy * evx + sy * evy, -sy * evx + cy * evy
    vnx, vny = cy * nvx + sy * nvy, -sy * nvx + cy * nvy
    dyaw = (nyaw - yaw + _PI) % _TWO_PI - _PI
    same_dir = abs(dyaw) <= same_dir_rad
    if p.crossing == "conflict" and same_dir_rad < abs(dyaw) < _PI - same_dir_rad:
        v_n = vnx * _cos(dyaw) + vny * _sin(dyaw)
        slack = conflict_slack(
            dx, dy, dyaw, vax, v_n, a_n, (L_av, W_av), (L_npc, W_npc), p.cross_b_ego, p.cross_a_ego
        )
        return min(max(slack / p.cross_tau, -1.0), 1.0)
    eps = p.eps
    if p.mode == "code":
        if same_dir:
            if vax <= vnx + eps:
                d_phys_x = 0.0
            else:
                d_stop = abs(
                    vnx * vnx / (2.0 * (p.a_lon_npc + eps)) - vax * vax / (2.0 * (p.a_lon_av + eps))
                )
                if p.a_lon_av <= p.a_lon_npc + eps:
                    d_equal = 0.0
                else:
                    d_equal = (vax - vnx) * (vax - vnx) / (2.0 * (p.a_lon_av - p.a_lon_npc))
                d_phys_x = max(d_stop, d_equal)
        else:
            d_phys_x = max(
                vax * vax / (2.0 * (p.a_lon_av + eps)) + vnx * vnx / (2.0 * (p.a_lon_npc + eps)),
                0.0,
            )
        sgn_a = (vay > 0) - (vay < 0)
        sgn_n = (vny > 0) - (vny < 0)
        if sgn_a == sgn_n and abs(vay) > eps and abs(vny) > eps:
            v_rel = vny - vay
            if v_rel <= eps:
                d_phys_y = 0.0
            elif p.a_lat_av > p.a_lat_npc + eps:
                d_phys_y = v_rel * v_rel / (2.0 * (p.a_lat_av - p.a_lat_npc))
            else:
                d_phys_y = p.inf_dist
        else:
            d_phys_y = vay * vay / (2.0 * (p.a_lat_av + eps)) + vny * vny / (
                2.0 * (p.a_lat_npc + eps)
            )
    else:
        if same_dir:
            d_phys_x = (
                _rss_same(vax, vnx, p.rho_ego, p) if dx >= 0 else _rss_same(vnx, vax, p.rho_npc, p)
            )
        else:
            va, vn = abs(vax), abs(vnx)
            v1r, v2r = va + p.rho_ego * p.rss_a_acc, vn + p.rho_npc * p.rss_a_acc
            d_phys_x = (
                (va + v1r) / 2 * p.rho_ego
                + v1r * v1r / (2 * p.rss_b_min_correct)
                + (vn + v2r) / 2 * p.rho_npc
                + v2r * v2r / (2 * p.rss_b_min)
            )
        d_phys_y = _rss_lat(-vny, -vay, p) if dy >= 0 else _rss_lat(vay, vny, p)
    if d_phys_x >= 0.9 * p.inf_dist or d_phys_y >= 0.9 * p.inf_dist:
        return -1.0
    cd, sd = _cos(dyaw), _sin(dyaw)
    c, s = abs(cd), abs(sd)
    d_e_x, d_e_y = abs(dx), abs(dy)
    d_n_xp = abs(dx * cd + dy * sd)
    d_n_yp = abs(-dx * sd + dy * cd)
    clear_e_x = L_av + c * L_npc + s * W_npc
    clear_e_y = W_av + c * W_npc + s * L_npc
    clear_n_xp = L_npc + c * L_av + s * W_av
    clear_n_yp = W_npc + c * W_av + s * L_av
    dphys_n_xp = c * d_phys_x + s * d_phys_y
    dphys_n_yp = s * d_phys_x + c * d_phys_y
    need_x = max(max(0.0, clear_e_x + d_phys_x - d_e_x), max(0.0, clear_n_xp + dphys_n_xp - d_n_xp))
    need_y = max(max(0.0, clear_e_y + d_phys_y - d_e_y), max(0.0, clear_n_yp + dphys_n_yp - d_n_yp))
    if need_x == 0.0 and need_y == 0.0:
        return 1.0
    rel_x = (1.0 if dx >= 0 else -1.0) * (vax - vnx)
    rel_y = (1.0 if dy >= 0 else -1.0) * (vay - vny)
    close_x, close_y = rel_x > 0.0, rel_y > 0.0
    if not close_x and d_e_x > max(clear_n_xp, clear_e_x):
        need_x = 0.0
    if not close_y and d_e_y > max(clear_n_yp, clear_e_y):
        need_y = 0.0
    t_x = need_x / max(max(rel_x, 0.0), p.ttc_eps) if close_x and need_x > 0 else _INF
    t_y = need_y / max(max(rel_y, 0.0), p.ttc_eps) if close_y and need_y > 0 else _INF
    t = min(t_x, t_y)
    if t == _INF:
        t = 0.0
    l_x = 0.5 * p.a_lon_av * (t * t) if close_x and p.recover else 0.0
    l_y = 0.5 * p.a_lat_av * (t * t) if close_y and p.recover else 0.0
    nxh = max(0.0, need_x - l_x) / max(max(d_phys_x + clear_e_x, dphys_n_xp + clear_n_xp), eps)
    nyh = max(0.0, need_y - l_y) / max(max(d_phys_y + clear_e_y, dphys_n_yp + clear_n_yp), eps)
    return _combine(nxh, nyh, p)


# --------------------------------------------------------------------------- the step


class _Scene:
    """Row 0 of a world's arrays as Python lists (bodies 0..2) and floats."""

    __slots__ = (
        "kind",
        "x",
        "y",
        "yaw",
        "v",
        "beta",
        "L",
        "W",
        "vx",
        "vy",
        "ax",
        "ay",
        "frozen",
        "a_max",
        "b_max",
        "v_max",
        "scn",
        "prims",
        "total",
        "ego_s",
        "ego_lat",
        "ego_head",
        "lat_target",
        "proj",
    )

    def __init__(self, w: KinematicWorld) -> None:
        self.kind = w.kind[0].tolist()
        self.x, self.y, self.yaw, self.v = (
            w.x[0].tolist(),
            w.y[0].tolist(),
            w.yaw[0].tolist(),
            w.v[0].tolist(),
        )
        self.beta, self.L, self.W = w.beta[0].tolist(), w.length[0].tolist(), w.width[0].tolist()
        self.vx, self.vy, self.ax, self.ay = (
            w.vx[0].tolist(),
            w.vy[0].tolist(),
            w.ax[0].tolist(),
            w.ay[0].tolist(),
        )
        self.frozen = w.frozen[0].tolist()
        self.a_max, self.b_max, self.v_max = (
            w.a_max[0].tolist(),
            w.b_max[0].tolist(),
            w.v_max[0].tolist(),
        )
        self.scn = int(w.scn[0])
        self.prims, self.total = _ROUTES[self.scn]
        self.ego_s, self.ego_lat, self.ego_head = (
            float(w.ego_s[0]),
            float(w.ego_lat[0]),
            float(w.ego_head[0]),
        )
        self.lat_target = float(w.lat_target[0])
        s, lat, head = w.act_proj
        self.proj = [
            None,
            (float(s[0, 0]), float(lat[0, 0]), float(head[0, 0])),
            (float(s[0, 1]), float(lat[0, 1]), float(head[0, 1])),
        ]


def _python_tables() -> tuple[
    dict[int, tuple[list[list[float]], float]],
    dict[int, list[tuple[float, ...]]],
    dict[str, list[Any]],
]:
    """Python-list copies of the layout tables (:data:`constants.TABLES`): lists index faster than arrays."""
    tb = TABLES
    prims = tb["prims"]
    routes = {
        i: (prims[i].tolist(), float((prims[i, :, 6] + prims[i, :, 7]).max()))
        for i in range(1, len(prims))
    }
    prepared = {i: prepare_route(r[0]) for i, r in routes.items()}
    tab = {
        k: tb[k].tolist()
        for k in (
            "adv_base",
            "adv_scale",
            "lead_after",
            "route_len",
            "max_dist",
            "j_entry",
            "j_exit",
            "passing",
            "rects",
            "route_end",
        )
    }
    return routes, prepared, tab


_ROUTES, _PREPARED, _TAB = (
    _python_tables()
)  # scenario -> (primitives, length), prepared route, constants


def _leaders_one(sc: _Scene, lat_center: float) -> list[tuple[float, float, float, float]]:
    """(gap, along-route speed, s, lateral) of bodies 1 and 2 (``KinematicWorld._leaders``)."""
    out = []
    ego_s, hl0, hw0 = sc.ego_s, 0.5 * sc.L[0], 0.5 * sc.W[0]
    for j in (1, 2):
        s, lat, head = sc.proj[j]
        if sc.kind[j] == KIND_NONE:
            out.append((_INF, 0.0, s, lat))
            continue
        rel = sc.yaw[j] - head
        cr, sr = abs(_cos(rel)), abs(_sin(rel))
        perp = sr * sc.L[j] + cr * sc.W[j]
        along = 0.5 * (cr * sc.L[j] + sr * sc.W[j])
        hw = hw0 + 0.5 * perp + 0.3
        gap = _INF
        if abs(lat - lat_center) < hw and s > ego_s:
            gap = max(s - ego_s - hl0 - along, 0.01)
        out.append((gap, sc.v[j] * _cos(sc.yaw[j] + sc.beta[j] - head), s, lat))
    return out


def _update_passing(w: KinematicWorld, sc: _Scene, P: PlannerParams) -> None:
    v = sc.v[0]
    lead = _leaders_one(sc, 0.0)
    dyn = [False] + [sc.kind[j] != KIND_NONE and sc.kind[j] != KIND_STATIC for j in (1, 2)]
    stopped = [
        math.isfinite(g) and abs(sc.v[j]) < 0.5 and g < 25.0
        for j, (g, _, _, _) in zip((1, 2), lead)
    ]
    has_obst = stopped[0] or stopped[1]
    o = 0 if stopped[0] or not stopped[1] else 1
    s_obst, len_obst, gap_obst = lead[o][2], sc.L[1 + o], lead[o][0]
    in_pass, ahead, t_meet = [], [], []
    for j in (1, 2):
        s_a, lat_a = lead[j - 1][2], lead[j - 1][3]
        in_pass.append(dyn[j] and abs(lat_a - LANE) < 2.5)
        a = s_a - sc.ego_s
        ahead.append(a)
        t_meet.append(a / max(v + abs(sc.v[j]), 1.0) if a > -8.0 else _INF)
    if P.predict:
        t_pass = (gap_obst + len_obst + 12.0) / max(v, 4.0) + P.pass_time_margin
        clear = not any(in_pass[k] and t_meet[k] < t_pass for k in (0, 1))
    else:
        clear = not any(
            in_pass[k] and ahead[k] > -8.0 and ahead[k] < P.pass_clear_ahead for k in (0, 1)
        )
    passing = bool(w.passing[0])
    start = not passing and has_obst and clear
    passing = passing or start
    if start:
        w.pass_end[0] = s_obst + 0.5 * len_obst + 8.0
        w.pass_obst[0] = s_obst - 0.5 * len_obst
    if P.predict:
        behind = sc.ego_s + 0.5 * sc.L[0] < float(w.pass_obst[0]) - 1.0
        remaining = (float(w.pass_end[0]) - sc.ego_s) / max(v, 4.0) + P.pass_time_margin
        threat = any(in_pass[k] and ahead[k] > 0 and t_meet[k] < remaining for k in (0, 1))
        passing = passing and not (behind and threat)
    if passing and sc.ego_s > float(w.pass_end[0]):
        passing = False
    w.passing[0] = passing
    sc.lat_target = LANE if passing else 0.0


def _predictive_brake(w: KinematicWorld, sc: _Scene, P: PlannerParams) -> float:
    v = sc.v[0]
    x0, y0, yaw0, L0, W0 = sc.x[0], sc.y[0], sc.yaw[0], sc.L[0], sc.W[0]
    c0, s0 = _cos(yaw0), _sin(yaw0)
    others = []
    for j in (1, 2):
        if sc.kind[j] == KIND_NONE or sc.kind[j] == KIND_STATIC:
            continue
        # followers (behind the ego, same heading) are theirs to avoid
        rel_x = c0 * (sc.x[j] - x0) + s0 * (sc.y[j] - y0)
        if rel_x < -0.5 * L0 and abs(_wrap(sc.yaw[j] - yaw0)) < _PI / 3:
            continue
        others.append(j)
    t_conf = _INF
    if others:
        v_pred = max(v, 3.0)
        step = P.horizon / 10
        lat = sc.lat_target
        el, ew = L0 + 1.0, W0 + 0.4
        for k in range(1, 11):
            tk = k * step
            px, py, ph = route_point_one(sc.prims, sc.total, sc.ego_s + v_pred * tk)
            ex, ey = px - _sin(ph) * lat, py + _cos(ph) * lat
            if any(
                boxes_overlap_one(
                    ex,
                    ey,
                    ph,
                    el,
                    ew,
                    sc.x[j] + sc.vx[j] * tk,
                    sc.y[j] + sc.vy[j] * tk,
                    sc.yaw[j],
                    sc.L[j],
                    sc.W[j],
                )
                for j in others
            ):
                t_conf = tk
                break
    half = 0.5 * L0
    j_entry, j_exit = _TAB["j_entry"][sc.scn], _TAB["j_exit"][sc.scn]
    if sc.ego_s + half > j_entry and sc.ego_s - half < j_exit:
        t_conf = _INF
    if t_conf == _INF:
        return _INF
    d_stop_line = j_entry - sc.ego_s - half - 1.0 if j_entry != _INF else _INF
    d_avail = max(min(v * t_conf - 1.0, d_stop_line), 0.3)
    a_req = v * v / (2 * d_avail)
    brake = -min(max(max(a_req, 2.0), 0.0), P.b_emergency) if a_req > 0.5 else _INF
    if (t_conf <= 1.0 and v > 0.5) or (v <= 0.5 and t_conf <= 1.5):
        brake = -P.b_emergency
    return brake


def _plan_ego(w: KinematicWorld, sc: _Scene) -> tuple[float, float]:
    P = w.planner
    v = sc.v[0]
    if _TAB["passing"][sc.scn]:
        _update_passing(w, sc, P)
    x0, y0, yaw0 = sc.x[0], sc.y[0], sc.yaw[0]
    # lateral: pure pursuit on the route shifted by lat_target
    ld = min(max(2.0 + 0.8 * v, 5.0), 15.0)
    px, py, ph = route_point_one(sc.prims, sc.total, sc.ego_s + ld)
    px, py = px - _sin(ph) * sc.lat_target, py + _cos(ph) * sc.lat_target
    alpha = _wrap(_atan2(py - y0, px - x0) - yaw0)
    dist = max(_hypot(px - x0, py - y0), 1.0)
    kappa = 2.0 * _sin(alpha) / dist
    sin_beta = min(max(kappa * sc.L[0] / 2.0, -0.99), 0.99)
    steer = min(max(math.atan(2.0 * math.tan(math.asin(sin_beta))), -MAX_STEER), MAX_STEER)
    # longitudinal: IDM towards min(v_target, curve limits ahead)
    v_des = P.v_target
    for typ, _, _, _, ln, _, s0, sl in sc.prims:
        if typ > 0.5:
            to_arc = s0 - sc.ego_s
            if to_arc + sl <= 0:
                continue
            v_arc = _sqrt(P.a_lat_max * max(ln, 1e-3))
            lim = v_arc if to_arc <= 0 else _sqrt(v_arc * v_arc + 2 * P.b_comf * max(to_arc, 0.0))
            v_des = min(v_des, lim)
    free = 1.0 - (v / max(v_des, 0.1)) ** 4
    inter = 0.0
    close = False
    root = 2 * _sqrt(P.a_max * P.b_comf)
    for gap, v_lead, _, _ in _leaders_one(sc, sc.lat_target):
        if gap != _INF:
            s_star = P.min_gap + max(0.0, v * P.time_headway + v * (v - v_lead) / root)
            q = s_star / gap
            inter = max(inter, q * q)
            close = close or gap < P.emergency_distance
    acc = P.a_max * (free - inter)
    if close and v > 0.5:
        acc = -P.b_emergency
    if P.predict:
        acc = min(acc, _predictive_brake(w, sc, P))
    if w.lights_on:
        acc = min(acc, light_brake_one(w, sc))
    return min(max(acc, -P.b_emergency), 3.5), steer


def _project_and_lead(sc: _Scene) -> float:
    """Project the bodies on the ego's route (``_update_ego_projection``); returns vehicle_front."""
    route = _PREPARED[sc.scn]
    sc.ego_s, sc.ego_lat, sc.ego_head, _ = project_prepared(route, sc.x[0], sc.y[0])
    for j in (1, 2):
        if sc.kind[j] != KIND_NONE:
            sc.proj[j] = project_prepared(route, sc.x[j], sc.y[j])[:3]
    return 1.0 if any(g < 20.0 for g, _, _, _ in _leaders_one(sc, sc.lat_target)) else 0.0


def reset_measure_one(w: KinematicWorld) -> None:
    """The end of ``KinematicWorld.reset`` for a one-scene world: every body projected on the ego's
    route (``_update_ego_projection``), vehicle_front, and sigma and Phi's features (``_measure``)."""
    route = _PREPARED[int(w.scn[0])]
    xs, ys = w.x[0].tolist(), w.y[0].tolist()
    proj = [project_prepared(route, xs[j], ys[j]) for j in range(3)]
    w.ego_s, w.ego_lat, w.ego_head = (np.array([proj[0][k]]) for k in range(3))
    w.act_proj = tuple(np.array([[proj[1][k], proj[2][k]]]) for k in range(3))
    sc = _Scene(w)
    vehicle_front = 1.0 if any(g < 20.0 for g, _, _, _ in _leaders_one(sc, sc.lat_target)) else 0.0
    w.vehicle_front = np.array([vehicle_front])
    sig, feat, *_ = measure_one(w, sc, vehicle_front)
    w.sigma_prev[0] = sig
    w.feat_prev[0] = feat


def step_scene(w: KinematicWorld, adv: list[float], ego_control: list[float] | None) -> StepOne:  # noqa: C901
    """One step of scene 0 of a one-scene world, identical to ``KinematicWorld.step`` (see the module doc)."""
    sc = _Scene(w)
    tb = _TAB
    scn = sc.scn
    # ---- ego control
    if w.external_ego and not w.ego_residual:
        if ego_control is None:
            raise ValueError("KinematicWorld.step: planner='external' needs ego_control")
        acc_e, steer_e = ego_control[0] * EGO_RL_ACC, ego_control[1] * EGO_RL_STEER
    else:
        acc_e, steer_e = _plan_ego(w, sc)
        if w.ego_residual and ego_control is not None:
            acc_e = acc_e + ego_control[0] * EGO_RL_ACC
            steer_e = steer_e + ego_control[1] * EGO_RL_STEER
    if w.planner.jerk_max > 0 and not (w.external_ego and not w.ego_residual):
        prev, dj = float(w.last_ego_control[0, 0]), w.planner.jerk_max * DT
        acc_e = min(max(acc_e, prev - dj), prev + dj)
    acc_e = min(max(acc_e, -8.0), 3.5)
    steer_e = min(max(steer_e, -MAX_STEER), MAX_STEER)
    w.last_ego_control[0] = (acc_e, steer_e)
    X, Y, YAW, V, BETA, L, KIND = sc.x, sc.y, sc.yaw, sc.v, sc.beta, sc.L, sc.kind
    acc, steer = [acc_e, 0.0, 0.0], [steer_e, 0.0, 0.0]
    # ---- adversary (body 1) and the scripted third body: full throttle / full brake to a target speed
    if w.action_mode == "speed":
        atb = tb if w.adv_tables is None else w.adv_tables
        target = float(atb["adv_base"][scn]) + float(atb["adv_scale"][scn]) * adv[0]
        lead_after = float(atb["lead_after"][scn])
        if (
            lead_after > 0
            and _hypot(X[1] - float(w.spawn_x[0, 1]), Y[1] - float(w.spawn_y[0, 1])) < lead_after
        ):
            target = SCRIPTED_REACH
        acc[1] = min(max((max(target, 0.0) - V[1]) / DT, -sc.b_max[1]), sc.a_max[1])
    else:
        acc[1] = adv[0] * ADV_ACC_MAX
        steer[1] = adv[1] * ADV_STEER_MAX
    acc[2] = min(max((float(w.scripted_speed[0, 2]) - V[2]) / DT, -sc.b_max[2]), sc.a_max[2])
    # ---- integrate (highway-env kinematic bicycle; walkers translate)
    frozen = sc.frozen
    moving = [KIND[j] != KIND_NONE and KIND[j] != KIND_STATIC and not frozen[j] for j in range(3)]
    yaw_rate = [0.0, 0.0, 0.0]
    for j in range(3):
        a_j = min(max(acc[j], -sc.b_max[j]), sc.a_max[j])
        if not moving[j]:  # speed 0 along the old heading; a frozen body reports its deceleration
            hb = YAW[j] + BETA[j]
            nvx, nvy = 0.0 * _cos(hb), 0.0 * _sin(hb)
            if frozen[j]:
                sc.ax[j], sc.ay[j] = (nvx - sc.vx[j]) / DT, (nvy - sc.vy[j]) / DT
            else:
                sc.ax[j], sc.ay[j] = 0.0, 0.0
            V[j], sc.vx[j], sc.vy[j] = 0.0, nvx, nvy
            continue
        v = V[j]
        if KIND[j] == KIND_WALKER:
            beta = 0.0
            yr = 2.0 * steer[j]
        else:
            beta = math.atan(0.5 * math.tan(steer[j]))
            yr = v * _sin(beta) / (L[j] / 2.0)
        hb = YAW[j] + beta
        X[j] = X[j] + v * _cos(hb) * DT
        Y[j] = Y[j] + v * _sin(hb) * DT
        YAW[j] = YAW[j] + yr * DT
        BETA[j] = beta
        nv = min(max(v + a_j * DT, 0.0), sc.v_max[j])
        hb = YAW[j] + beta
        nvx, nvy = nv * _cos(hb), nv * _sin(hb)
        sc.ax[j], sc.ay[j] = (nvx - sc.vx[j]) / DT, (nvy - sc.vy[j]) / DT
        V[j], sc.vx[j], sc.vy[j] = nv, nvx, nvy
        yaw_rate[j] = yr
    # ---- collisions
    hits = []
    for a, b in _PAIRS:
        hits.append(
            KIND[a] != KIND_NONE
            and KIND[b] != KIND_NONE
            and boxes_overlap_one(
                X[a], Y[a], YAW[a], L[a], sc.W[a], X[b], Y[b], YAW[b], L[b], sc.W[b]
            )
        )
    collision = hits[0] or hits[1]
    newly = hits[2] and not frozen[1]
    if hits[2]:
        frozen[1] = True
        if KIND[2] != KIND_STATIC:
            frozen[2] = True
    # ---- route progress and metrics
    vehicle_front = _project_and_lead(sc)
    m = w.metrics
    v0 = V[0]
    m["driven"][0] += v0 * DT
    on_road = False
    for r0, r1, r2, r3 in tb["rects"][scn]:
        if X[0] >= r0 and X[0] <= r1 and Y[0] >= r2 and Y[0] <= r3:
            on_road = True
            break
    if not on_road:
        m["off_road"][0] += v0 * DT
    m["dist_route"][0] += abs(sc.ego_lat)
    lane = math.floor((sc.ego_lat + LANE / 2) / LANE)
    if lane != int(w.lane_prev[0]):
        m["lane_inv"][0] += 1.0
    w.lane_prev[0] = lane
    m["acc_sum"][0] += _hypot(sc.ax[0], sc.ay[0])
    if moving[0]:
        m["yaw_change"][0] += abs(yaw_rate[0]) * DT
    completion = min(max(sc.ego_s / tb["route_len"][scn], 0.0), 1.0)
    if completion > m["completion"][0]:
        m["completion"][0] = completion
    ex, ey = tb["route_end"][scn]
    reached = completion > 0.99 and _hypot(X[0] - ex, Y[0] - ey) < 10.0
    if collision:
        m["collided"][0] = 1.0
    if newly:
        m["adv_other"][0] = 1.0
    t = int(w.t[0]) + 1
    w.t[0] = t
    terminated = collision or reached
    truncated = (t >= w.max_steps or m["driven"][0] > tb["max_dist"][scn]) and not terminated
    # ---- write the bodies back
    w.x[0], w.y[0], w.yaw[0], w.v[0], w.beta[0] = X, Y, YAW, V, BETA
    w.vx[0], w.vy[0], w.ax[0], w.ay[0] = sc.vx, sc.vy, sc.ax, sc.ay
    w.frozen[0] = frozen
    w.ego_s[0], w.ego_lat[0], w.ego_head[0], w.lat_target[0] = (
        sc.ego_s,
        sc.ego_lat,
        sc.ego_head,
        sc.lat_target,
    )
    s_act, lat_act, head_act = w.act_proj
    for j in (1, 2):
        if KIND[j] != KIND_NONE:
            s_act[0, j - 1], lat_act[0, j - 1], head_act[0, j - 1] = sc.proj[j]
    w.vehicle_front[0] = vehicle_front
    # ---- sigma, TTC, risk
    sig, feat, ttc, dist, present = measure_one(w, sc, vehicle_front)
    sigma_t = float(w.sigma_prev[0])
    phi = w.phi
    phi_used = phi is not None and phi.ready
    if phi_used:
        risk = float(phi.risk(feat[None])[0])
    else:
        risk = 2.0 / (1.0 + ttc / 2.5) if ttc != _INF else 0.0
    if phi is not None and phi.training and not phi.ready:
        if collision:
            phi.started = True
        if phi.started:
            fp = w.feat_prev[0]
            r_td = np.float32(collision) + phi.gamma * feat[-2] - fp[-2]
            phi.update(
                fp[None],
                feat[None],
                np.array([r_td], np.float32),
                np.array([terminated], np.float32),
            )
    w.sigma_prev[0] = sig
    w.feat_prev[0] = feat
    m["j_risk"][0] += risk
    m["j_sigma"][0] += sig
    if sig >= w.k_feasible:
        m["feasible"][0] += 1.0
    if sig >= STRICT_K:
        m["feasible_strict"][0] += 1.0
    if sig < m["min_sigma"][0]:
        m["min_sigma"][0] = sig
    m["steps"][0] += 1.0
    if ttc < m["min_ttc"][0]:
        m["min_ttc"][0] = ttc
    return StepOne(
        risk=risk,
        sigma_t=sigma_t,
        sigma=sig,
        ttc=ttc,
        collision=collision,
        adversary_collision=newly,
        terminated=terminated,
        truncated=truncated,
        phi_used=phi_used,
        distance=dist if present else _INF,
        completion=completion,
        off_road=not on_road,
        obs=_observation_from(KIND, X, Y, YAW, sc.vx, sc.vy, sc.ax, sc.ay),
    )


def measure_one(
    w: KinematicWorld, sc: _Scene, vehicle_front: float
) -> tuple[float, np.ndarray, float, float, bool]:
    """sigma, Phi's features (float32), TTC, distance and presence for the closest dynamic NPC (``_measure``)."""
    X, Y = sc.x, sc.y
    best, d_best = 1, _INF
    for j in (1, 2):
        if sc.kind[j] != KIND_NONE and sc.kind[j] != KIND_STATIC:
            d = _hypot(X[j] - X[0], Y[j] - Y[0])
            if d < d_best:
                best, d_best = j, d
    present = d_best != _INF
    yaw_err = _wrap(sc.yaw[0] - sc.ego_head)
    if not present:
        feat = np.array([sc.ego_lat, -yaw_err, sc.v[0], vehicle_front, 0.0, 0.0], dtype=np.float32)
        return 0.0, feat, _INF, _INF, False
    j = best
    ego = (X[0], Y[0], sc.yaw[0], sc.vx[0], sc.vy[0], sc.L[0] / 2, sc.W[0] / 2)
    npc = (X[j], Y[j], sc.yaw[j], sc.vx[j], sc.vy[j], sc.L[j] / 2, sc.W[j] / 2)
    a_n = 0.0
    if w.feas.crossing == "conflict":
        a_n = sc.ax[j] * _cos(sc.yaw[j]) + sc.ay[j] * _sin(sc.yaw[j])
    sig = sigma_one(ego, npc, w.feas, _same_dir_rad(w.feas), a_n)
    rx, ry = X[j] - X[0], Y[j] - Y[0]
    rvx, rvy = sc.vx[j] - sc.vx[0], sc.vy[j] - sc.vy[0]
    dist = max(_hypot(rx, ry), 1e-3)
    dot = rx * rvx + ry * rvy
    closing = max(0.0, -dot / dist)
    ttc = dist / closing if closing > 0 else _INF
    feat = np.array(
        [
            sc.ego_lat,
            -yaw_err,
            sc.v[0],
            vehicle_front,
            1.0 / (dist + 1.0),
            math.tanh(dot / dist / 10.0),
        ],
        dtype=np.float32,
    )
    return sig, feat, ttc, dist, True


_SAME_DIR: dict[float, float] = {}


def _same_dir_rad(p: FeasibilityParams) -> float:
    r = _SAME_DIR.get(p.same_dir_deg)
    if r is None:
        r = _SAME_DIR[p.same_dir_deg] = float(np.radians(p.same_dir_deg))
    return r


def observation_one(w: KinematicWorld) -> np.ndarray:
    """(27,) float32: ``KinematicWorld.observation()[0]``."""
    return _observation_from(
        w.kind[0].tolist(),
        w.x[0].tolist(),
        w.y[0].tolist(),
        w.yaw[0].tolist(),
        w.vx[0].tolist(),
        w.vy[0].tolist(),
        w.ax[0].tolist(),
        w.ay[0].tolist(),
    )


def _observation_from(
    kind: list[int],
    x: list[float],
    y: list[float],
    yaw: list[float],
    vx: list[float],
    vy: list[float],
    ax: list[float],
    ay: list[float],
) -> np.ndarray:
    out: list[float] = []
    for j in range(3):
        if kind[j] == KIND_NONE:
            out += (0.0,) * 9
        else:
            h = yaw[j]
            out += (x[j], y[j], _wrap(h), _cos(h), _sin(h), vx[j], vy[j], ax[j], ay[j])
    return np.array(out, dtype=np.float32)
