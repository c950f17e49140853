"""The ``kinematic`` backend: N ScenePilot scenes stepped together in one batched NumPy call.

Bodies follow highway-env's kinematic bicycle model (``x' = v cos(psi + beta)``,
``y' = v sin(psi + beta)``, ``psi' = v sin(beta) / (L / 2)``, ``beta = atan(tan(delta) / 2)``,
``v' = a``); walkers move along their heading. Collisions are separating-axis tests between
oriented boxes. Each scene holds the ego (body 0), the adversary (body 1) and at most one more
actor (body 2). Routes are exact straight/arc primitives, so projections are analytic.

This module knows nothing of Gymnasium: :mod:`icml26.envs.driving.env` wraps it as a single env
and as a native vector env.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from icml26.envs.driving.constants import (
    ADV_ACC_MAX,
    ADV_STEER_MAX,
    DT,
    EGO_OBS_DIM,
    EGO_RL_ACC,
    EGO_RL_STEER,
    LIMITS,
    MAX_STEER,
    N_BODIES,
    OBS_PER_ACTOR,
    SCRIPTED_REACH,
    STRICT_K,
    TABLES,
)
from icml26.envs.driving.feasibility import (
    FeasibilityParams,
    sigma_batch,
    ttc_batch,
    ttc_risk_batch,
)
from icml26.envs.driving.realism import apply_reset, light_brake_batch
from icml26.envs.driving.risk import RiskPredictor, risk_features
from icml26.envs.driving.scalar import (
    StepOne,
    observation_one,
    reset_measure_one,
    step_scene,
)
from icml26.envs.driving.scenarios import (
    KIND_CAR,
    KIND_NONE,
    KIND_STATIC,
    KIND_WALKER,
    LANE,
    LAYOUTS,
)

__all__ = [
    "KinematicWorld",
    "PlannerParams",
    "PLANNERS",
    "N_BODIES",
    "OBS_PER_ACTOR",
    "EGO_OBS_DIM",
    "boxes_overlap",
    "project_on_route",
    "DT",
]


@dataclass(frozen=True)
class PlannerParams:
    """Ego planner constants. ``idm``: IDM car following on the route corridor (rule-based, like
    SafeBench's autopilot: target 8 m/s, reacts to what is in its path). ``cautious``: the same
    plus a 3 s constant-velocity conflict prediction with emergency braking (BehaviorAgent-like)."""

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
    "cautious": PlannerParams(
        "cautious", v_target=8.0, time_headway=2.0, min_gap=3.0, predict=True, horizon=4.0
    ),
    # ScenePilot-v1: IDM with a human-like brake onset (jerk <= 8 m/s^3: about 1 s from cruising
    # to full braking, RSS's ego response time) and a 1.0 s headway at 9 m/s
    "human": PlannerParams(
        "human", v_target=9.0, time_headway=1.0, min_gap=2.0, jerk_max=8.0, b_emergency=8.0
    ),
}


# --------------------------------------------------------------------------- geometry helpers


def boxes_overlap(x1, y1, h1, l1, w1, x2, y2, h2, l2, w2) -> np.ndarray:
    """Separating-axis test between oriented boxes (centre, heading, length, width), elementwise."""
    dx, dy = x2 - x1, y2 - y1
    c1, s1, c2, s2 = np.cos(h1), np.sin(h1), np.cos(h2), np.sin(h2)
    overlap = np.ones(np.broadcast(dx, dy).shape, dtype=bool)
    for ax, ay in ((c1, s1), (-s1, c1), (c2, s2), (-s2, c2)):
        dist = np.abs(dx * ax + dy * ay)
        r1 = 0.5 * l1 * np.abs(c1 * ax + s1 * ay) + 0.5 * w1 * np.abs(-s1 * ax + c1 * ay)
        r2 = 0.5 * l2 * np.abs(c2 * ax + s2 * ay) + 0.5 * w2 * np.abs(-s2 * ax + c2 * ay)
        overlap &= dist <= r1 + r2
    return overlap


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


def project_on_route(prims: np.ndarray, qx: np.ndarray, qy: np.ndarray) -> tuple[np.ndarray, ...]:
    """Project points on routes made of line/arc primitives.

    ``prims`` (N, P, 8); ``qx``, ``qy`` (N, M). Returns (s, lateral (left +), route heading,
    distance), each (N, M).
    """
    typ, x0, y0, h0, ln, sw, s0 = (prims[:, None, :, i] for i in range(7))
    qx, qy = qx[:, :, None], qy[:, :, None]
    is_arc = typ > 0.5
    ch, sh = np.cos(h0), np.sin(h0)
    wx, wy = qx - x0, qy - y0
    t = np.minimum(np.maximum(wx * ch + wy * sh, 0.0), ln)
    sign = np.where(sw >= 0, 1.0, -1.0)
    cx, cy = x0 - sign * ln * sh, y0 + sign * ln * ch
    th0 = h0 - sign * (np.pi / 2)
    rq = np.hypot(qx - cx, qy - cy)
    tau = np.minimum(np.maximum(sign * _wrap(np.arctan2(qy - cy, qx - cx) - th0), 0.0), np.abs(sw))
    th = th0 + sign * tau
    px = np.where(is_arc, cx + ln * np.cos(th), x0 + ch * t)
    py = np.where(is_arc, cy + ln * np.sin(th), y0 + sh * t)
    lat = np.where(is_arc, sign * (ln - rq), ch * wy - sh * wx)
    s = s0 + np.where(is_arc, ln * tau, t)
    head = np.where(is_arc, h0 + sign * tau, h0 + 0.0 * t)
    dist = np.hypot(qx - px, qy - py)
    outs = [s, lat, head, dist]
    best = [a[:, :, 0] for a in outs]
    for k in range(1, dist.shape[2]):
        better = dist[:, :, k] < best[3]
        best = [np.where(better, a[:, :, k], b) for a, b in zip(outs, best)]
    return tuple(best)


def route_point(prims: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point and heading at arc length ``s`` (N,) along each route; clipped to the route's end."""
    typ, x0, y0, h0, ln, sw, s0, sl = (prims[:, :, i] for i in range(8))
    total = (s0 + sl).max(axis=1)
    s = np.clip(s, 0.0, total)[:, None]
    inside = (s >= s0) & ((s < s0 + sl) | (sl <= 0) | (s0 + sl >= total[:, None]))
    k = np.argmax(inside & (sl > 0), axis=1)[:, None]
    g = lambda a: np.take_along_axis(a, k, axis=1)[:, 0]  # noqa: E731
    typ, x0, y0, h0, ln, sw, s0 = g(typ), g(x0), g(y0), g(h0), g(ln), g(sw), g(s0)
    d = s[:, 0] - s0
    sign = np.where(sw >= 0, 1.0, -1.0)
    is_arc = typ > 0.5
    tau = np.where(is_arc, d / np.maximum(ln, 1e-9), 0.0)
    cx, cy = x0 - sign * ln * np.sin(h0), y0 + sign * ln * np.cos(h0)
    hh = h0 + sign * tau
    px = np.where(is_arc, cx + sign * ln * np.sin(hh), x0 + np.cos(h0) * d)
    py = np.where(is_arc, cy - sign * ln * np.cos(hh), y0 + np.sin(h0) * d)
    return px, py, np.where(is_arc, hh, h0)


# --------------------------------------------------------------------------- the world


@dataclass
class StepResult:
    """Everything one batched step produces (arrays of length N)."""

    risk: np.ndarray
    sigma_t: np.ndarray
    sigma: np.ndarray
    ttc: np.ndarray
    collision: np.ndarray
    adversary_collision: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    phi_used: bool
    extra: dict[str, Any] = field(default_factory=dict)


class KinematicWorld:
    """N scenes of the 8 SafeBench scenarios on the kinematic bicycle model.

    Args:
        n: number of scenes.
        scenarios: scenario ids a reset may draw from (uniformly).
        action_mode: ``"speed"`` (1-D target speed) or ``"acc_steer"`` (2-D) for the adversary.
        planner: ``"idm"``, ``"cautious"`` or ``"external"`` (the ego's [acc, steer] is given to ``step``).
        feasibility: sigma constants (``FeasibilityParams``).
        phi: a :class:`RiskPredictor` (online or frozen) or ``None`` for the TTC risk only.
        max_steps: steps per episode (300 = 30 s).
    """

    def __init__(
        self,
        n: int,
        scenarios: tuple[int, ...],
        action_mode: str = "speed",
        planner: str = "idm",
        feasibility: FeasibilityParams | None = None,
        phi: RiskPredictor | None = None,
        max_steps: int = 300,
        ego_residual: bool = False,
    ) -> None:
        self.n = int(n)
        self.scenarios = np.asarray(scenarios, dtype=np.int64)
        self.action_mode = action_mode
        self.planner_name = planner
        self.planner = PLANNERS.get(planner, PLANNERS["idm"])
        self.external_ego = planner == "external"
        self.ego_residual = ego_residual
        self.feas = feasibility or FeasibilityParams()
        self.phi = phi
        self.max_steps = int(max_steps)
        self.k_feasible = 0.0  # threshold k of the feasible-step count (feasible_ratio)
        N, B = self.n, N_BODIES
        self.scn = np.ones(N, dtype=np.int64)
        self.kind = np.zeros((N, B), dtype=np.int64)
        self.x, self.y, self.yaw, self.v = (np.zeros((N, B)) for _ in range(4))
        self.beta = np.zeros((N, B))
        self.length, self.width = np.ones((N, B)), np.ones((N, B))
        self.vx, self.vy, self.ax, self.ay = (np.zeros((N, B)) for _ in range(4))
        self.spawn_x, self.spawn_y = np.zeros((N, B)), np.zeros((N, B))
        self.frozen = np.zeros((N, B), dtype=bool)
        self.scripted_speed = np.zeros((N, B))
        self.a_max, self.b_max, self.v_max = np.zeros((N, B)), np.zeros((N, B)), np.zeros((N, B))
        self.t = np.zeros(N, dtype=np.int64)
        self.passing = np.zeros(N, dtype=bool)
        self.pass_end = np.zeros(N)
        self.pass_obst = np.zeros(N)
        self.lat_target = np.zeros(N)
        self.sigma_prev = np.zeros(N)
        self.feat_prev = np.zeros((N, 6), dtype=np.float32)
        self.metrics: dict[str, np.ndarray] = {}
        self._reset_metrics(np.arange(N))
        self.ego_s = np.zeros(N)
        self.ego_lat = np.zeros(N)
        self.ego_head = np.zeros(N)
        self.lane_prev = np.zeros(N, dtype=np.int64)
        self.last_ego_control = np.zeros((N, 2))
        self.fast = (
            True  # one scene: step in Python floats (icml26.envs.driving.scalar), same results
        )
        # ScenePilot-v1 realism (icml26.envs.driving.realism); both off for v0
        self.randomize = False
        self.lights_on = False
        self.rparams: dict[str, np.ndarray] | None = None
        self.has_light = np.zeros(N, dtype=bool)
        # ScenePilot-v2: per-scenario ranges of the randomized parameters (None: realism.RANGES) and
        # overrides of the adversary tables adv_base / adv_scale / lead_after (None: TABLES')
        self.ranges: dict[int, dict[str, Any]] | None = None
        self.adv_tables: dict[str, np.ndarray] | None = None

    @property
    def fast_path(self) -> bool:
        """True when :meth:`step` takes the one-scene scalar path (N = 1, ``fast``, kinematic physics)."""
        return self.n == 1 and self.fast and type(self)._integrate is KinematicWorld._integrate

    # ------------------------------------------------------------------ reset
    def _reset_metrics(self, idx: np.ndarray) -> None:
        for k in (
            "driven",
            "off_road",
            "dist_route",
            "lane_inv",
            "acc_sum",
            "yaw_change",
            "collided",
            "adv_other",
            "completion",
            "j_risk",
            "j_sigma",
            "steps",
            "feasible",
            "min_ttc",
            "feasible_strict",
            "min_sigma",
        ):
            if k not in self.metrics:
                self.metrics[k] = np.zeros(self.n)
            self.metrics[k][idx] = np.inf if k == "min_ttc" else (1.0 if k == "min_sigma" else 0.0)

    def reset(
        self, idx: np.ndarray, rng: np.random.Generator, scenario: np.ndarray | None = None
    ) -> None:
        """Reset scenes ``idx`` (drawing scenario ids and spawn jitter from ``rng``)."""
        idx = np.asarray(idx, dtype=np.int64)
        if scenario is None:
            scenario = (
                self.scenarios[rng.integers(0, len(self.scenarios), size=len(idx))]
                if len(self.scenarios) > 1
                else np.full(len(idx), self.scenarios[0])
            )
        jit = rng.uniform(-1.0, 1.0, size=(len(idx), N_BODIES))
        for r, (i, sc) in enumerate(zip(idx, scenario)):
            lay = LAYOUTS[int(sc)]
            self.scn[i] = sc
            self.kind[i] = KIND_NONE
            self.x[i], self.y[i], self.yaw[i], self.v[i], self.beta[i] = 0.0, 0.0, 0.0, 0.0, 0.0
            self.length[i], self.width[i] = 1.0, 1.0
            self.kind[i, 0], self.length[i, 0], self.width[i, 0] = KIND_CAR, 4.9, 2.0
            self.scripted_speed[i] = 0.0
            for j, a in enumerate(lay.actors, start=1):
                off = a.jitter * jit[r, j]
                self.kind[i, j] = a.kind
                self.x[i, j] = a.x + np.cos(a.yaw) * off
                self.y[i, j] = a.y + np.sin(a.yaw) * off
                self.yaw[i, j] = a.yaw
                self.length[i, j], self.width[i, j] = a.length, a.width
                self.scripted_speed[i, j] = a.scripted_speed if a.role == "scripted" else 0.0
            for j in range(N_BODIES):
                self.a_max[i, j], self.b_max[i, j], self.v_max[i, j] = LIMITS[int(self.kind[i, j])]
        if self.randomize or self.lights_on:
            apply_reset(self, idx, rng)
        self.spawn_x[idx], self.spawn_y[idx] = self.x[idx], self.y[idx]
        self.vx[idx], self.vy[idx], self.ax[idx], self.ay[idx] = 0.0, 0.0, 0.0, 0.0
        v0 = self.v[idx]
        if (v0 != 0.0).any():  # ScenePilot-v2 scenes may start moving (realism "ego_speed")
            self.vx[idx] = np.where(v0 != 0.0, v0 * np.cos(self.yaw[idx]), 0.0)
            self.vy[idx] = np.where(v0 != 0.0, v0 * np.sin(self.yaw[idx]), 0.0)
        self.frozen[idx] = False
        self.t[idx] = 0
        self.passing[idx], self.pass_end[idx], self.lat_target[idx] = False, 0.0, 0.0
        self._reset_metrics(idx)
        self.last_ego_control[idx] = 0.0
        self.lane_prev[idx] = 0
        if self.fast_path:  # the same projection, leaders and measurement in Python floats
            reset_measure_one(self)
            return
        self._update_ego_projection()
        sig, feat, *_ = self._measure()
        self.sigma_prev[idx] = sig[idx]
        self.feat_prev[idx] = feat[idx]

    # ------------------------------------------------------------------ observation
    def observation(self) -> np.ndarray:
        """(N, 27): [x, y, yaw, cos, sin, vx, vy, ax, ay] for ego, adversary, other (zeros if absent)."""
        if self.fast_path:
            return observation_one(self)[None]
        present = (self.kind != KIND_NONE)[:, :, None]
        obs = np.stack(
            [
                self.x,
                self.y,
                _wrap(self.yaw),
                np.cos(self.yaw),
                np.sin(self.yaw),
                self.vx,
                self.vy,
                self.ax,
                self.ay,
            ],
            axis=2,
        )
        return (obs * present).reshape(self.n, -1).astype(np.float32)

    def ego_observation(self) -> np.ndarray:
        """(N, 12): SafeBench's 4-D ego state + (dx, dy, dvx, dvy) of both NPCs in the ego frame."""
        c, s = np.cos(self.yaw[:, :1]), np.sin(self.yaw[:, :1])
        rx, ry = self.x[:, 1:] - self.x[:, :1], self.y[:, 1:] - self.y[:, :1]
        rvx, rvy = self.vx[:, 1:] - self.vx[:, :1], self.vy[:, 1:] - self.vy[:, :1]
        dx, dy = c * rx + s * ry, -s * rx + c * ry
        dvx, dvy = c * rvx + s * rvy, -s * rvx + c * rvy
        present = self.kind[:, 1:] != KIND_NONE
        dx = np.where(present, dx, 100.0)
        dy, dvx, dvy = (np.where(present, a, 0.0) for a in (dy, dvx, dvy))
        rel = np.stack([dx, dy, dvx, dvy], axis=2).reshape(self.n, -1)
        return np.concatenate([self.ego_state4(), rel], axis=1).astype(np.float32)

    def ego_state4(self) -> np.ndarray:
        """SafeBench's ego state: [lateral distance, -yaw error, speed, vehicle_front]."""
        yaw_err = _wrap(self.yaw[:, 0] - self.ego_head)
        return np.stack([self.ego_lat, -yaw_err, self.v[:, 0], self.vehicle_front], axis=1)

    # ------------------------------------------------------------------ ego projection & leaders
    def _prims(self) -> np.ndarray:
        return TABLES["prims"][self.scn]

    def _update_ego_projection(self) -> None:
        """Project all bodies on the ego's route once per step (cached for the planner)."""
        s, lat, head, _ = project_on_route(self._prims(), self.x, self.y)
        self.ego_s, self.ego_lat, self.ego_head = s[:, 0], lat[:, 0], head[:, 0]
        self.act_proj = (s[:, 1:], lat[:, 1:], head[:, 1:])
        lead = self._leaders(self.lat_target)
        self.vehicle_front = ((lead[0] < 20.0).any(axis=1)).astype(np.float64)

    def _leaders(
        self, lat_center: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Gap (inf if not in the corridor ahead), along-route speed, s and lateral of bodies 1..2."""
        s, lat, head = self.act_proj
        rel = self.yaw[:, 1:] - head
        cr, sr = np.abs(np.cos(rel)), np.abs(np.sin(rel))
        perp = sr * self.length[:, 1:] + cr * self.width[:, 1:]
        along = 0.5 * (cr * self.length[:, 1:] + sr * self.width[:, 1:])
        hw = 0.5 * self.width[:, :1] + 0.5 * perp + 0.3
        in_corr = (np.abs(lat - lat_center[:, None]) < hw) & (self.kind[:, 1:] != KIND_NONE)
        gap = s - self.ego_s[:, None] - 0.5 * self.length[:, :1] - along
        ahead = s > self.ego_s[:, None]
        gap = np.where(in_corr & ahead, np.maximum(gap, 0.01), np.inf)
        v_along = self.v[:, 1:] * np.cos(self.yaw[:, 1:] + self.beta[:, 1:] - head)
        return gap, v_along, s, lat

    # ------------------------------------------------------------------ ego planner
    def plan_ego(self) -> np.ndarray:
        """The planner's [acc (m/s^2), steer (rad)] for every scene, shape (N, 2)."""
        P = self.planner
        tb = TABLES
        v = self.v[:, 0]
        prims = self._prims()
        # passing manoeuvre (scenario 4): leave the lane around a stopped car when the gap allows
        allow = tb["passing"][self.scn]
        if allow.any():
            self._update_passing(allow)
        # lateral: pure pursuit on the route shifted by lat_target
        ld = np.clip(2.0 + 0.8 * v, 5.0, 15.0)
        px, py, ph = route_point(prims, self.ego_s + ld)
        px, py = px - np.sin(ph) * self.lat_target, py + np.cos(ph) * self.lat_target
        alpha = _wrap(np.arctan2(py - self.y[:, 0], px - self.x[:, 0]) - self.yaw[:, 0])
        dist = np.maximum(np.hypot(px - self.x[:, 0], py - self.y[:, 0]), 1.0)
        kappa = 2.0 * np.sin(alpha) / dist
        sin_beta = np.clip(kappa * self.length[:, 0] / 2.0, -0.99, 0.99)
        steer = np.clip(np.arctan(2.0 * np.tan(np.arcsin(sin_beta))), -MAX_STEER, MAX_STEER)
        # longitudinal: IDM towards min(v_target, curve limits ahead)
        v_des = np.full(self.n, P.v_target)
        is_arc = prims[:, :, 0] > 0.5
        v_arc = np.sqrt(P.a_lat_max * np.maximum(prims[:, :, 4], 1e-3))
        to_arc = prims[:, :, 6] - self.ego_s[:, None]
        in_arc = (to_arc <= 0) & (to_arc + prims[:, :, 7] > 0)
        lim = np.where(in_arc, v_arc, np.sqrt(v_arc**2 + 2 * P.b_comf * np.maximum(to_arc, 0.0)))
        lim = np.where(to_arc + prims[:, :, 7] <= 0, np.inf, lim)  # arcs already behind
        v_des = np.minimum(v_des, np.where(is_arc, lim, np.inf).min(axis=1))
        gap, v_lead, _, _ = self._leaders(self.lat_target)
        free = 1.0 - (v / np.maximum(v_des, 0.1)) ** 4
        dv = v[:, None] - v_lead
        s_star = P.min_gap + np.maximum(
            0.0, v[:, None] * P.time_headway + v[:, None] * dv / (2 * np.sqrt(P.a_max * P.b_comf))
        )
        inter = np.where(np.isfinite(gap), (s_star / gap) ** 2, 0.0).max(axis=1)
        acc = P.a_max * (free - inter)
        close = (gap < P.emergency_distance).any(axis=1) & (v > 0.5)
        acc = np.where(close, -P.b_emergency, acc)
        if P.predict:
            acc = np.minimum(acc, self._predictive_brake())
        if self.lights_on:
            acc = np.minimum(acc, light_brake_batch(self))
        acc = np.clip(acc, -P.b_emergency, 3.5)
        return np.stack([acc, steer], axis=1)

    def _update_passing(self, allow: np.ndarray) -> None:
        P = self.planner
        v = self.v[:, 0]
        gap, v_lead, s_a, lat_a = self._leaders(np.zeros(self.n))
        dyn = (self.kind[:, 1:] != KIND_NONE) & (self.kind[:, 1:] != KIND_STATIC)
        stopped = np.isfinite(gap) & (np.abs(self.v[:, 1:]) < 0.5) & (gap < 25.0)
        has_obst = stopped.any(axis=1)
        obst = np.argmax(stopped, axis=1)[:, None]
        s_obst = np.take_along_axis(s_a, obst, axis=1)[:, 0]
        len_obst = np.take_along_axis(self.length[:, 1:], obst, axis=1)[:, 0]
        gap_obst = np.take_along_axis(gap, obst, axis=1)[:, 0]
        in_pass_lane = dyn & (np.abs(lat_a - LANE) < 2.5)
        ahead = s_a - self.ego_s[:, None]
        t_meet = np.where(
            ahead > -8.0, ahead / np.maximum(v[:, None] + np.abs(self.v[:, 1:]), 1.0), np.inf
        )
        if (
            P.predict
        ):  # cautious: time gap to the oncoming car must exceed the passing time + margin
            t_pass = (gap_obst + len_obst + 12.0) / np.maximum(v, 4.0) + P.pass_time_margin
            clear = ~(in_pass_lane & (t_meet < t_pass[:, None])).any(axis=1)
        else:  # idm: clear if no car in the oncoming lane within pass_clear_ahead metres
            clear = ~(in_pass_lane & (ahead > -8.0) & (ahead < P.pass_clear_ahead)).any(axis=1)
        start = allow & ~self.passing & has_obst & clear
        self.passing |= start
        self.pass_end = np.where(start, s_obst + 0.5 * len_obst + 8.0, self.pass_end)
        self.pass_obst = np.where(start, s_obst - 0.5 * len_obst, self.pass_obst)
        if P.predict:  # cautious: abort (back behind the obstacle) if the oncoming gap closes first
            behind = self.ego_s + 0.5 * self.length[:, 0] < self.pass_obst - 1.0
            remaining = (self.pass_end - self.ego_s) / np.maximum(v, 4.0) + P.pass_time_margin
            threat = (in_pass_lane & (ahead > 0) & (t_meet < remaining[:, None])).any(axis=1)
            self.passing &= ~(behind & threat)
        done = self.passing & (self.ego_s > self.pass_end)
        self.passing &= ~done
        self.lat_target = np.where(self.passing, LANE, 0.0)

    def _predictive_brake(self) -> np.ndarray:
        """Cautious planner: brake for the earliest predicted box conflict within the horizon."""
        P = self.planner
        v = self.v[:, 0]
        v_pred = np.maximum(v, 3.0)
        times = np.arange(1, 11) * (P.horizon / 10)  # (K,)
        prims = self._prims()
        s_future = self.ego_s[:, None] + v_pred[:, None] * times[None, :]  # (N, K)
        N, K = s_future.shape
        px, py, ph = route_point(np.repeat(prims, K, axis=0), s_future.reshape(-1))
        lat = np.repeat(self.lat_target, K)
        ex = (px - np.sin(ph) * lat).reshape(N, K)
        ey = (py + np.cos(ph) * lat).reshape(N, K)
        eh = ph.reshape(N, K)
        dyn = (self.kind[:, 1:] != KIND_NONE) & (self.kind[:, 1:] != KIND_STATIC)
        # followers (behind the ego, same heading) are theirs to avoid: braking for them invites a rear-end
        c0, s0 = np.cos(self.yaw[:, :1]), np.sin(self.yaw[:, :1])
        rel_x = c0 * (self.x[:, 1:] - self.x[:, :1]) + s0 * (self.y[:, 1:] - self.y[:, :1])
        follower = (rel_x < -0.5 * self.length[:, :1]) & (
            np.abs(_wrap(self.yaw[:, 1:] - self.yaw[:, :1])) < np.pi / 3
        )
        dyn &= ~follower
        t_conf = np.full(N, np.inf)
        for j in range(1, N_BODIES):
            ox = self.x[:, j : j + 1] + self.vx[:, j : j + 1] * times[None, :]
            oy = self.y[:, j : j + 1] + self.vy[:, j : j + 1] * times[None, :]
            hit = boxes_overlap(
                ex,
                ey,
                eh,
                self.length[:, :1] + 1.0,
                self.width[:, :1] + 0.4,
                ox,
                oy,
                self.yaw[:, j : j + 1],
                self.length[:, j : j + 1],
                self.width[:, j : j + 1],
            )
            hit &= dyn[:, j - 1 : j]
            first = np.where(hit.any(axis=1), times[np.argmax(hit, axis=1)], np.inf)
            t_conf = np.minimum(t_conf, first)
        # yield before the junction, never stop inside it (clear the junction instead)
        half = 0.5 * self.length[:, 0]
        j_entry, j_exit = TABLES["j_entry"][self.scn], TABLES["j_exit"][self.scn]
        inside = (self.ego_s + half > j_entry) & (self.ego_s - half < j_exit)
        t_conf = np.where(inside, np.inf, t_conf)
        finite = np.isfinite(t_conf)
        d_stop_line = np.where(np.isfinite(j_entry), j_entry - self.ego_s - half - 1.0, np.inf)
        d_avail = np.maximum(np.minimum(v * np.where(finite, t_conf, 0.0) - 1.0, d_stop_line), 0.3)
        a_req = np.where(finite, v**2 / (2 * d_avail), 0.0)
        brake = np.where(a_req > 0.5, -np.clip(np.maximum(a_req, 2.0), 0, P.b_emergency), np.inf)
        brake = np.where(np.isfinite(t_conf) & (t_conf <= 1.0) & (v > 0.5), -P.b_emergency, brake)
        # conflict predicted while standing still: stay put
        brake = np.where(np.isfinite(t_conf) & (v <= 0.5) & (t_conf <= 1.5), -P.b_emergency, brake)
        return brake

    # ------------------------------------------------------------------ step
    def step_one(self, adv: list[float], ego_control: list[float] | None = None) -> StepOne:
        """Step a one-scene world and return Python scalars: the scalar path when :attr:`fast_path`,
        else row 0 of :meth:`step` (other physics backends, or ``fast = False``)."""
        if self.fast_path:
            return step_scene(self, adv, ego_control)
        r = self.step(np.array([adv]), None if ego_control is None else np.array([ego_control]))
        return StepOne(
            risk=r.risk[0],
            sigma_t=r.sigma_t[0],
            sigma=r.sigma[0],
            ttc=r.ttc[0],
            collision=r.collision[0],
            adversary_collision=r.adversary_collision[0],
            terminated=r.terminated[0],
            truncated=r.truncated[0],
            phi_used=r.phi_used,
            distance=r.extra["distance"][0],
            completion=r.extra["completion"][0],
            off_road=r.extra["off_road"][0],
        )

    def step(
        self,
        adv_action: np.ndarray,
        ego_control: np.ndarray | None = None,
        active: np.ndarray | None = None,
    ) -> StepResult:
        """Advance every scene by DT. ``adv_action`` (N, 1) or (N, 2) in [-1, 1].

        ``ego_control`` (N, 2) in [-1, 1] (scaled by 3 m/s^2 and 0.3 rad) when the planner is
        ``"external"``, or a residual added to the planner's control when ``ego_residual``.
        One scene (N = 1) takes the scalar path of :mod:`icml26.envs.driving.scalar` (same results;
        set ``world.fast = False`` for the batched path).
        """
        if active is None and self.fast_path:
            one = step_scene(
                self,
                np.asarray(adv_action, dtype=np.float64).reshape(-1).tolist(),
                None
                if ego_control is None
                else np.asarray(ego_control, dtype=np.float64).reshape(-1).tolist(),
            )
            return StepResult(
                risk=np.array([one.risk]),
                sigma_t=np.array([one.sigma_t]),
                sigma=np.array([one.sigma]),
                ttc=np.array([one.ttc]),
                collision=np.array([one.collision]),
                adversary_collision=np.array([one.adversary_collision]),
                terminated=np.array([one.terminated]),
                truncated=np.array([one.truncated]),
                phi_used=one.phi_used,
                extra={
                    "distance": np.array([one.distance]),
                    "completion": np.array([one.completion]),
                    "off_road": np.array([one.off_road]),
                },
            )
        N = self.n
        tb = TABLES
        # ---- ego control
        if self.external_ego and not self.ego_residual:
            if ego_control is None:
                raise ValueError("KinematicWorld.step: planner='external' needs ego_control")
            acc_e, steer_e = ego_control[:, 0] * EGO_RL_ACC, ego_control[:, 1] * EGO_RL_STEER
        else:
            plan = self.plan_ego()
            acc_e, steer_e = plan[:, 0], plan[:, 1]
            if self.ego_residual and ego_control is not None:
                acc_e = acc_e + ego_control[:, 0] * EGO_RL_ACC
                steer_e = steer_e + ego_control[:, 1] * EGO_RL_STEER
        if self.planner.jerk_max > 0 and not (self.external_ego and not self.ego_residual):
            prev, dj = self.last_ego_control[:, 0], self.planner.jerk_max * DT
            acc_e = np.clip(acc_e, prev - dj, prev + dj)
        acc_e = np.clip(acc_e, -8.0, 3.5)
        steer_e = np.clip(steer_e, -MAX_STEER, MAX_STEER)
        self.last_ego_control = np.stack([acc_e, steer_e], axis=1)

        acc = np.zeros((N, N_BODIES))
        steer = np.zeros((N, N_BODIES))
        acc[:, 0], steer[:, 0] = acc_e, steer_e
        # ---- adversary (body 1)
        a = np.asarray(adv_action, dtype=np.float64)
        if self.action_mode == "speed":
            atb = tb if self.adv_tables is None else self.adv_tables
            target = atb["adv_base"][self.scn] + atb["adv_scale"][self.scn] * a[:, 0]
            lead_after = atb["lead_after"][self.scn]
            moved = np.hypot(self.x[:, 1] - self.spawn_x[:, 1], self.y[:, 1] - self.spawn_y[:, 1])
            scripted_phase = (lead_after > 0) & (moved < lead_after)
            target = np.where(scripted_phase, SCRIPTED_REACH, target)
            acc[:, 1] = self._speed_control(1, np.maximum(target, 0.0))
        else:
            acc[:, 1] = a[:, 0] * ADV_ACC_MAX
            steer[:, 1] = a[:, 1] * ADV_STEER_MAX
        # ---- scripted third body
        acc[:, 2] = self._speed_control(2, self.scripted_speed[:, 2])
        acc = np.minimum(np.maximum(acc, -self.b_max), self.a_max)
        if active is not None:
            acc = np.where(active[:, None], acc, 0.0)
        # ---- integrate (highway-env kinematic bicycle; walkers translate)
        moving = (self.kind != KIND_NONE) & (self.kind != KIND_STATIC) & ~self.frozen
        if active is not None:
            moving &= active[:, None]
        yaw_rate = self._integrate(acc, steer, moving)
        # ---- collisions
        present = self.kind != KIND_NONE
        a_i, b_i = [0, 0, 1], [1, 2, 2]  # pairs: ego-adversary, ego-other, adversary-other
        hits = boxes_overlap(
            self.x[:, a_i],
            self.y[:, a_i],
            self.yaw[:, a_i],
            self.length[:, a_i],
            self.width[:, a_i],
            self.x[:, b_i],
            self.y[:, b_i],
            self.yaw[:, b_i],
            self.length[:, b_i],
            self.width[:, b_i],
        )
        hits &= present[:, a_i] & present[:, b_i]
        collision = hits[:, 0] | hits[:, 1]
        adv_other = hits[:, 2]
        newly = adv_other & ~self.frozen[:, 1]
        self.frozen[:, 1] |= adv_other
        self.frozen[:, 2] |= adv_other & (self.kind[:, 2] != KIND_STATIC)
        if active is not None:
            collision &= active
            newly &= active
        # ---- route progress and metrics
        self._update_ego_projection()
        m = self.metrics
        step_on = np.ones(N, bool) if active is None else active
        m["driven"] += np.where(step_on, self.v[:, 0] * DT, 0.0)
        rects = tb["rects"][self.scn]
        on_road = (
            (self.x[:, :1] >= rects[:, :, 0])
            & (self.x[:, :1] <= rects[:, :, 1])
            & (self.y[:, :1] >= rects[:, :, 2])
            & (self.y[:, :1] <= rects[:, :, 3])
        ).any(axis=1)
        m["off_road"] += np.where(step_on & ~on_road, self.v[:, 0] * DT, 0.0)
        m["dist_route"] += np.where(step_on, np.abs(self.ego_lat), 0.0)
        lane = np.floor((self.ego_lat + LANE / 2) / LANE).astype(np.int64)
        m["lane_inv"] += np.where(step_on & (lane != self.lane_prev), 1.0, 0.0)
        self.lane_prev = np.where(step_on, lane, self.lane_prev)
        m["acc_sum"] += np.where(step_on, np.hypot(self.ax[:, 0], self.ay[:, 0]), 0.0)
        m["yaw_change"] += np.where(step_on & moving[:, 0], np.abs(yaw_rate[:, 0]) * DT, 0.0)
        route_len = tb["route_len"][self.scn]
        completion = np.clip(self.ego_s / route_len, 0.0, 1.0)
        m["completion"] = np.where(
            step_on, np.maximum(m["completion"], completion), m["completion"]
        )
        end = tb["route_end"][self.scn]
        reached = (completion > 0.99) & (
            np.hypot(self.x[:, 0] - end[:, 0], self.y[:, 0] - end[:, 1]) < 10.0
        )
        m["collided"] = np.maximum(m["collided"], collision.astype(float))
        m["adv_other"] = np.maximum(m["adv_other"], newly.astype(float))
        self.t += step_on.astype(np.int64)
        terminated = (collision | reached) & step_on
        truncated = (
            ((self.t >= self.max_steps) | (m["driven"] > tb["max_dist"][self.scn]))
            & ~terminated
            & step_on
        )
        # ---- sigma, TTC, risk
        sig, feat, ttc, dist, present_npc = self._measure()
        sigma_t = self.sigma_prev.copy()
        phi_used = self.phi is not None and self.phi.ready
        if phi_used:
            risk = self.phi.risk(feat)
        else:
            risk = ttc_risk_batch(ttc)
        if self.phi is not None and self.phi.training and not self.phi.ready:
            if collision.any():
                self.phi.started = True
            if self.phi.started:
                rows = step_on
                r_td = (
                    collision.astype(np.float32)
                    + self.phi.gamma * feat[:, -2]
                    - self.feat_prev[:, -2]
                )
                self.phi.update(
                    self.feat_prev[rows],
                    feat[rows],
                    r_td[rows],
                    terminated[rows].astype(np.float32),
                )
        risk = np.where(step_on, risk, 0.0)
        self.sigma_prev = np.where(step_on, sig, self.sigma_prev)
        self.feat_prev = np.where(step_on[:, None], feat, self.feat_prev)
        m["j_risk"] += risk
        m["j_sigma"] += np.where(step_on, sig, 0.0)
        m["feasible"] += np.where(step_on & (sig >= self.k_feasible), 1.0, 0.0)
        m["feasible_strict"] += np.where(step_on & (sig >= STRICT_K), 1.0, 0.0)
        m["min_sigma"] = np.where(step_on, np.minimum(m["min_sigma"], sig), m["min_sigma"])
        m["steps"] += step_on
        m["min_ttc"] = np.where(step_on, np.minimum(m["min_ttc"], ttc), m["min_ttc"])
        return StepResult(
            risk=risk,
            sigma_t=sigma_t,
            sigma=sig,
            ttc=ttc,
            collision=collision,
            adversary_collision=newly,
            terminated=terminated,
            truncated=truncated,
            phi_used=phi_used,
            extra={"distance": dist, "completion": completion, "off_road": ~on_road},
        )

    def _integrate(self, acc: np.ndarray, steer: np.ndarray, moving: np.ndarray) -> np.ndarray:
        """Advance every body by DT under (acc, steer); updates pose, speed, velocity and acceleration.

        Returns the yaw rates. Backends with their own physics (MetaDrive, CARLA) override this.
        """
        walker = self.kind == KIND_WALKER
        beta = np.where(walker, 0.0, np.arctan(0.5 * np.tan(steer)))
        v = self.v
        nx = self.x + v * np.cos(self.yaw + beta) * DT
        ny = self.y + v * np.sin(self.yaw + beta) * DT
        yaw_rate = np.where(walker, 2.0 * steer, v * np.sin(beta) / (self.length / 2.0))
        nyaw = self.yaw + yaw_rate * DT
        nv = np.minimum(np.maximum(v + acc * DT, 0.0), self.v_max)
        self.x, self.y = np.where(moving, nx, self.x), np.where(moving, ny, self.y)
        self.yaw = np.where(moving, nyaw, self.yaw)
        self.beta = np.where(moving, beta, self.beta)
        self._set_speed(np.where(moving, nv, 0.0), moving)
        return np.where(moving, yaw_rate, 0.0)

    def _set_speed(self, new_v: np.ndarray, moving: np.ndarray) -> None:
        """Store speeds, the velocity vectors along yaw + beta and the finite-difference acceleration."""
        nvx, nvy = new_v * np.cos(self.yaw + self.beta), new_v * np.sin(self.yaw + self.beta)
        self.ax = np.where(moving | self.frozen, (nvx - self.vx) / DT, 0.0)
        self.ay = np.where(moving | self.frozen, (nvy - self.vy) / DT, 0.0)
        self.v, self.vx, self.vy = new_v, nvx, nvy

    def _speed_control(self, j: int, target: np.ndarray) -> np.ndarray:
        """Full throttle below the target speed, full brake above it (reaching it within a step)."""
        return np.minimum(
            np.maximum((target - self.v[:, j]) / DT, -self.b_max[:, j]), self.a_max[:, j]
        )

    def _measure(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """sigma, Phi features, TTC and distance against the closest dynamic NPC."""
        dyn = (self.kind[:, 1:] != KIND_NONE) & (self.kind[:, 1:] != KIND_STATIC)
        d = np.hypot(self.x[:, 1:] - self.x[:, :1], self.y[:, 1:] - self.y[:, :1])
        d = np.where(dyn, d, np.inf)
        j = np.argmin(d, axis=1) + 1
        present = dyn.any(axis=1)
        r = np.arange(self.n)
        ego = np.stack(
            [
                self.x[:, 0],
                self.y[:, 0],
                self.yaw[:, 0],
                self.vx[:, 0],
                self.vy[:, 0],
                self.length[:, 0] / 2,
                self.width[:, 0] / 2,
            ],
            axis=1,
        )
        npc = np.stack(
            [
                self.x[r, j],
                self.y[r, j],
                self.yaw[r, j],
                self.vx[r, j],
                self.vy[r, j],
                self.length[r, j] / 2,
                self.width[r, j] / 2,
            ],
            axis=1,
        )
        a_n = None
        if (
            self.feas.crossing == "conflict"
        ):  # ScenePilot-v2: the crossing rule reads the NPC's acceleration
            yaw_n = self.yaw[r, j]
            a_n = self.ax[r, j] * np.cos(yaw_n) + self.ay[r, j] * np.sin(yaw_n)
        sig = sigma_batch(ego, npc, present, self.feas, a_n)
        dist, closing, ttc = ttc_batch(ego[:, :2], ego[:, 3:5], npc[:, :2], npc[:, 3:5], present)
        del closing
        rel = npc[:, :2] - ego[:, :2]
        vrel = npc[:, 3:5] - ego[:, 3:5]
        signed_close = (rel[:, 0] * vrel[:, 0] + rel[:, 1] * vrel[:, 1]) / dist
        feat = risk_features(self.ego_state4(), dist, signed_close, present)
        return sig, feat, ttc, np.where(present, dist, np.inf), present

    # ------------------------------------------------------------------ episode metrics
    def episode_metrics(self, i: int) -> dict[str, float]:
        """Per-episode figures of scene ``i`` (SafeBench / ScenePilot metric inputs)."""
        m = self.metrics
        steps = max(float(m["steps"][i]), 1.0)
        return {
            "scenario": int(self.scn[i]),
            "collision": float(m["collided"][i]),
            "adversary_collision": float(m["adv_other"][i]),
            "route_completion": float(m["completion"][i]),
            "success": float(m["completion"][i] > 0.99 and not m["collided"][i]),
            "out_of_road_length": float(m["off_road"][i]),
            "distance_to_route": float(m["dist_route"][i] / steps),
            "lane_invasions": float(m["lane_inv"][i]),
            "run_red_light": 0.0,
            "run_stop": 0.0,
            "avg_acceleration": float(m["acc_sum"][i] / steps),
            "avg_yaw_velocity": float(m["yaw_change"][i] / (steps * DT)),
            "time": float(steps * DT),
            "driven_distance": float(m["driven"][i]),
            "J_risk": float(m["j_risk"][i]),
            "J_sigma": float(m["j_sigma"][i]),
            "feasible_ratio": float(m["feasible"][i] / steps),
            "feasible_ratio_strict": float(m["feasible_strict"][i] / steps),
            "min_sigma": float(m["min_sigma"][i]),
            "steps": float(steps),
            "min_ttc": float(min(m["min_ttc"][i], 1e4)),
        }
