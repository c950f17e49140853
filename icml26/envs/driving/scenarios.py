"""The 8 SafeBench pre-crash scenarios: road geometry, actors and the tables the kernel reads.

x is metres ahead of the ego's start, y metres to its left; lanes are 3.5 m wide and traffic
drives on the right. Positions, speeds, triggers and route lengths follow the SafeBench /
ScenePilot scenario definitions summarized in the method card (``driving.md``); junctions are
squares of half-size 12 m (lanes plus a 5 m corner apron) so that the turning arcs are drivable
by a 5 m kinematic-bicycle car. Also here: the per-episode randomized ranges, the scene tunings
(:data:`SCENES`) and the scripted adversaries that go with them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ActorSpec", "ScenarioLayout", "LAYOUTS", "TABLES", "LANE", "SCENES", "RANGES", "RANGES_V2",
           "scripted_adversary_action", "scripted_adversary_v1", "scripted_adversary_v2",
           "reckless_adversary_v2", "adv_speed"]  # fmt: skip

LANE = 3.5  # lane width, m (SafeBench maps)
JUNCTION_HALF = 12.0  # half-size of a junction square, m
ROUTE_POINTS = 200  # every route is resampled to this many points (for drawing)
MAX_PRIMITIVES = 3  # straight / arc / straight
CAR, WALKER, BICYCLE = (4.9, 2.0), (0.6, 0.6), (1.8, 0.7)  # length, width (m)
KIND_NONE, KIND_CAR, KIND_WALKER, KIND_BICYCLE, KIND_STATIC = 0, 1, 2, 3, 4
DT = 0.1  # s per step (SafeBench / ScenePilot)
N_BODIES, OBS_PER_ACTOR, EGO_OBS_DIM = 3, 9, 12  # ego, adversary, other
MAX_STEER = np.pi / 3  # highway-env Vehicle.MAX_STEERING_ANGLE
EGO_RL_ACC, EGO_RL_STEER = 3.0, 0.3  # SafeBench RL planners: action [acc * 3, steer * 0.3]
ADV_ACC_MAX, ADV_STEER_MAX = 3.0, 0.2  # ScenePilot 2-D adversary: acc_max 3, steer_max 0.2
LIMITS = {KIND_CAR: (3.5, 8.0, 20.0), KIND_WALKER: (4.0, 4.0, 3.0), KIND_BICYCLE: (2.5, 5.0, 10.0),
          KIND_STATIC: (0.0, 0.0, 0.0), KIND_NONE: (0.0, 0.0, 0.0)}  # (max accel, brake, speed)  # fmt: skip
SCRIPTED_REACH = 12.0  # scenario 3: speed of the scripted cars (m/s)
STRICT_K = 0.35  # the last threshold of ScenePilot's k curriculum (feasible_ratio_strict)


@dataclass(frozen=True)
class ActorSpec:
    """One non-ego actor: kind, spawn pose, size, role and scripted behaviour."""

    kind: int
    x: float
    y: float
    yaw: float
    length: float
    width: float
    role: str  # "adversary" | "scripted" | "static"
    scripted_speed: float = 0.0  # target speed of a scripted actor, m/s
    jitter: float = 1.0  # uniform spawn jitter along the heading, +- m


@dataclass(frozen=True)
class ScenarioLayout:
    """A scenario: drivable rectangles, lane markings, the ego route, actors and its rules."""

    id: int
    name: str
    route: np.ndarray  # (ROUTE_POINTS, 2) dense polyline, for drawing
    primitives: np.ndarray  # (MAX_PRIMITIVES, 8), see _route
    max_distance: float
    rects: tuple[tuple[float, float, float, float], ...]  # drivable (xmin, xmax, ymin, ymax)
    markings: tuple[tuple[float, float, float, float, int], ...]  # x0, y0, x1, y1, 0 dashed 1 solid
    actors: tuple[ActorSpec, ...]  # actors[0] is the adversary
    adv_base: float  # 1-D action: target speed = adv_base + adv_scale * a
    adv_scale: float
    scripted_action: float  # the action that reproduces SafeBench's scripted speed
    trigger_distance: float  # ego-adversary distance that starts the scripted actor (0: at once)
    allow_passing: bool = False
    lights: tuple[tuple[float, float, int], ...] = ()  # (x, y, state 0 red 1 green) for drawing
    ego_light_red: bool = False  # the ego's light is red (scenario 7: it turns right on red)
    junction: tuple[float, float] | None = None  # centre of the junction square
    lead_brake_after: float = 0.0  # scenario 3: the adversary obeys only after moving this far

    @property
    def route_length(self) -> float:
        return float(self.primitives[:, 7].sum())


def _route(pieces: list[tuple[str, float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Route from ('S', length, 0) straights and ('A', radius, signed angle) arcs, from the origin
    heading +x: (dense polyline (ROUTE_POINTS, 2), primitives (MAX_PRIMITIVES, 8)). A primitive row
    is [type (0 line, 1 arc), x0, y0, heading0, length or radius, sweep, s0, arc length]; unused
    rows are zero-length lines at the route's end (they never win a projection)."""
    pts = [np.array((0.0, 0.0))]
    prims: list[list[float]] = []
    x, y, h, s0 = 0.0, 0.0, 0.0, 0.0
    for kind, a, b in pieces:
        if kind == "S":
            prims.append([0.0, x, y, h, a, 0.0, s0, a])
            n = max(2, int(a))
            for i in range(1, n + 1):
                pts.append(np.array([x + math.cos(h) * a * i / n, y + math.sin(h) * a * i / n]))
            x, y = x + math.cos(h) * a, y + math.sin(h) * a
            s0 += a
            continue
        prims.append([1.0, x, y, h, a, b, s0, a * abs(b)])
        sign = 1.0 if b > 0 else -1.0
        cx, cy = x - sign * a * math.sin(h), y + sign * a * math.cos(h)
        n = max(4, int(abs(b) * a))
        for i in range(1, n + 1):
            hh = h + b * i / n
            pts.append(np.array([cx + sign * a * math.sin(hh), cy - sign * a * math.cos(hh)]))
        h = h + b
        x, y = cx + sign * a * math.sin(h), cy - sign * a * math.cos(h)
        s0 += a * abs(b)
    while len(prims) < MAX_PRIMITIVES:
        prims.append([0.0, x, y, h, 0.0, 0.0, s0, 0.0])
    poly = np.array(pts)
    s = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(poly, axis=0).T))])
    si = np.linspace(0.0, s[-1], ROUTE_POINTS)
    dense = np.stack([np.interp(si, s, poly[:, 0]), np.interp(si, s, poly[:, 1])], axis=1)
    return dense, np.array(prims)


def _straight_road(yc: float, lanes: int, x0: float, x1: float) -> tuple[tuple, list]:
    """A road along x centred on yc with ``lanes`` lanes per direction: rect and markings."""
    half = lanes * LANE
    marks = [(x0, y, x1, y, 1) for y in (yc - half, yc + half, yc)]
    for k in range(1, lanes):
        marks += [(x0, yc - k * LANE, x1, yc - k * LANE, 0), (x0, yc + k * LANE, x1, yc + k * LANE, 0)]  # fmt: skip
    return (x0, x1, yc - half, yc + half), marks


def _junction(xj: float, yc: float, y0: float, y1: float, x_end: float) -> tuple[tuple, tuple]:
    """Main road along x (2 lanes per direction) crossing a road along y at x = xj."""
    J = JUNCTION_HALF
    main, marks_main = _straight_road(yc, 2, -20.0, x_end)
    marks: list[tuple[float, float, float, float, int]] = []
    for a, b, c, d, st in marks_main:  # cut the main road's markings at the junction
        marks += [(a, b, xj - J, d, st), (xj + J, b, c, d, st)]
    for off, st in ((-2 * LANE, 1), (2 * LANE, 1), (0.0, 1), (-LANE, 0), (LANE, 0)):
        marks += [(xj + off, y0, xj + off, yc - J, st), (xj + off, yc + J, xj + off, y1, st)]
    rects = (main, (xj - 2 * LANE, xj + 2 * LANE, y0, y1), (xj - J, xj + J, yc - J, yc + J))
    return rects, tuple(marks)


def _build() -> dict[int, ScenarioLayout]:
    J, half_pi, pi = JUNCTION_HALF, math.pi / 2, math.pi
    L: dict[int, ScenarioLayout] = {}

    def add(i: int, name: str, road: tuple, pieces: list, max_d: float, actors: tuple,
            speed: tuple[float, float, float, float], **kw: Any) -> None:  # fmt: skip
        """Scenario ``i``: ``road`` (rects, markings), the route's ``pieces``, ``speed`` = the 1-D
        action's (base, scale), the scripted action and the trigger distance."""
        base, scale, scripted, trigger = speed
        L[i] = ScenarioLayout(i, name, *_route(pieces), max_d, road[0], tuple(road[1]), actors,
                              base, scale, scripted, trigger, **kw)  # fmt: skip

    def crossing_car(xj: float, yc: float, dy: float, speed: float) -> ActorSpec:
        """A car from the ego's left, driving south down the cross road's near lanes."""
        return ActorSpec(KIND_CAR, xj - 1.5 * LANE, yc + J + dy, -half_pi, *CAR, "adversary", speed)

    rect, marks = _straight_road(LANE * 1.5, 2, -20.0, 170.0)  # 1: a walker behind a parked van
    add(1, "straight obstacle (pedestrian crossing)", ((rect,), marks), [("S", 100.0, 0)], 150.0,
        (ActorSpec(KIND_WALKER, 75.0, -LANE, half_pi, *WALKER, "adversary", 2.5, 1.0),
         ActorSpec(KIND_STATIC, 70.0, -3.2, 0.0, 4.5, 2.2, "static", jitter=0.0)),
        (1.0, 2.0, 0.75, 45.0))  # fmt: skip
    xj, yc = 30.0, LANE / 2  # 2: the ego turns left; a cyclist crosses the exit road after it
    add(2, "turning obstacle (cyclist after a left turn)", _junction(xj, yc, yc - 60.0, yc + 90.0, xj + J + 40.0),
        [("S", xj - J, 0), ("A", J + LANE / 2, half_pi), ("S", 54.4, 0)], 180.0,
        (ActorSpec(KIND_BICYCLE, xj + 2 * LANE + 2.0, yc + J + 8.0, pi, *BICYCLE, "adversary", 10.0, 1.0),),
        (5.0, 5.0, 1.0, 0.0), junction=(xj, yc), lights=((xj - J, yc - 4.5, 1),))  # fmt: skip
    # 3: a lead car brakes; left lane blocked
    rect, marks = _straight_road(LANE * 1.5, 2, -20.0, 230.0)
    add(3, "lane changing (other leading vehicle)", ((rect,), marks), [("S", 130.0, 0)], 200.0,
        (ActorSpec(KIND_CAR, 35.0, 0.0, 0.0, *CAR, "adversary", 2.0, 1.0),
         ActorSpec(KIND_CAR, 36.75, LANE, 0.0, *CAR, "scripted", 12.0, 0.75)),
        (0.0, 4.0, 0.5, 0.0), lead_brake_after=5.0)  # fmt: skip
    rect, marks = _straight_road(LANE / 2, 1, -20.0, 230.0)  # 4: pass a stopped car; oncoming car
    add(4, "vehicle passing (maneuver into the opposite lane)", ((rect,), marks), [("S", 150.0, 0)], 200.0,
        (ActorSpec(KIND_CAR, 50.0, LANE, pi, *CAR, "adversary", 8.0, 1.0),
         ActorSpec(KIND_CAR, 30.0, 0.0, 0.0, *CAR, "static", jitter=0.0)),
        (5.0, 5.0, 0.6, 45.0), allow_passing=True)  # fmt: skip
    xj, yc = 55.0, LANE * 1.5  # 5: the ego goes straight on green; a car from the left runs the red
    add(5, "red-light running", _junction(xj, yc, yc - 60.0, yc + 60.0, 170.0), [("S", 90.0, 0)], 150.0,
        (crossing_car(xj, yc, 3.0, 10.0),), (5.0, 5.0, 1.0, 35.0), junction=(xj, yc),
        lights=((xj - J, yc - 4.5, 1), (xj - 4.5, yc + J, 0)))  # fmt: skip
    xj, yc = 60.0, LANE / 2  # 6: the ego turns left on green; an oncoming car goes straight
    add(6, "unprotected left turn", _junction(xj, yc, yc - 60.0, yc + 90.0, 170.0),
        [("S", xj - J, 0), ("A", J + LANE / 2, half_pi), ("S", 51.4, 0)], 150.0,
        (ActorSpec(KIND_CAR, 81.0, LANE, pi, *CAR, "adversary", 12.0, 1.0),), (5.0, 5.0, 1.0, 45.0),
        junction=(xj, yc), lights=((xj - J, yc - 4.5, 1), (xj + J, yc + 4.5, 1)))  # fmt: skip
    xj, yc = 50.0, LANE * 1.5  # 7: the ego turns right on red into a car from the left's lane
    add(7, "right turn (on red)", _junction(xj, yc, yc - 110.0, yc + 60.0, 170.0),
        [("S", xj - J, 0), ("A", J - 1.5 * LANE, -half_pi), ("S", 95.4, 0)], 150.0,
        (crossing_car(xj, yc, 15.0, 12.0),), (5.0, 5.0, 1.0, 40.0), junction=(xj, yc),
        lights=((xj - J, yc - 4.5, 0), (xj - 4.5, yc + J, 1)), ego_light_red=True)  # fmt: skip
    xj, yc = 75.0, LANE * 1.5  # 8: crossing negotiation at an unsignalized junction
    add(8, "crossing negotiation (unsignalized junction)", _junction(xj, yc, yc - 60.0, yc + 60.0, 170.0),
        [("S", 110.0, 0)], 150.0, (crossing_car(xj, yc, 3.0, 10.0),), (5.0, 5.0, 1.0, 45.0),
        junction=(xj, yc))  # fmt: skip
    return L


LAYOUTS: dict[int, ScenarioLayout] = _build()


def _tables() -> dict[str, np.ndarray]:
    """Per-scenario route primitives, rectangles, lengths and scripted-actor constants as arrays."""
    n = max(LAYOUTS) + 1
    tb = {k: np.zeros(n) for k in ("route_len", "max_dist", "adv_base", "adv_scale", "lead_after")}
    tb.update(prims=np.zeros((n, 3, 8)), rects=np.tile([np.inf, -np.inf, np.inf, -np.inf], (n, 3, 1)),
              passing=np.zeros(n, bool), route_end=np.zeros((n, 2)),
              j_entry=np.full(n, np.inf), j_exit=np.full(n, np.inf))  # fmt: skip
    for i, lay in LAYOUTS.items():
        tb["prims"][i], tb["route_end"][i] = lay.primitives, lay.route[-1]
        tb["rects"][i, : len(lay.rects)] = lay.rects
        tb["route_len"][i], tb["max_dist"][i] = lay.route_length, lay.max_distance
        tb["adv_base"][i], tb["adv_scale"][i] = lay.adv_base, lay.adv_scale
        tb["passing"][i], tb["lead_after"][i] = lay.allow_passing, lay.lead_brake_after
        if lay.junction is not None:  # arc length where the route enters / leaves the junction
            (xj, yc), r = lay.junction, lay.route
            inside = np.abs(r - (xj, yc)).max(axis=1) <= JUNCTION_HALF
            s_pts = np.linspace(0.0, lay.route_length, len(r))
            tb["j_entry"][i], tb["j_exit"][i] = s_pts[inside].min(), s_pts[inside].max()
    return tb


TABLES = _tables()  # scenario id -> row of each table


# ---------------------------------------------------------------------------- randomized scenes

# ScenePilot-v1: scenario -> ranges of the per-episode draws (m, m, m, fraction; see :mod:`.realism`)
RANGES: dict[int, dict[str, Any]] = {
    1: {"shift": 8.0, "adv": 0.5, "other": 0.0, "other_speed": 0.0},
    2: {"shift": 0.0, "adv": 12.0, "other": 0.0, "other_speed": 0.0, "adv_bias": -12.0},
    3: {"shift": 8.0, "adv": 0.0, "other": 1.5, "other_speed": 0.15},
    4: {"shift": 0.0, "adv": 8.0, "other": 4.0, "other_speed": 0.0},
    5: {"shift": 0.0, "adv": 6.0, "other": 0.0, "other_speed": 0.0},
    6: {"shift": 0.0, "adv": 8.0, "other": 0.0, "other_speed": 0.0},
    7: {"shift": 0.0, "adv": 6.0, "other": 0.0, "other_speed": 0.0},
    8: {"shift": 0.0, "adv": 6.0, "other": 0.0, "other_speed": 0.0},
}
# ScenePilot-v2's re-tuned scenes (scenes="retuned"), each for a measured reason (v1 results):
# 1, the walker starts 0-12 m further from the road (a random walker crossed long before the ego
# came: 0 collisions); 3, the lead car 8-20 m ahead (v1: 27-43 m) at 0-2 m/s, the ego arriving at
# 7-10 m/s (SafeBench's ego catching up with a slow leader), its 1-D action spanning 0-10 m/s
# (v1: 0-4 m/s after a 12 m/s first 5 m); 4, the oncoming car's spawn spread +-20 m around 12 m
# further away (v1: +-8 m); 2, the scripted cyclist starts when the ego is within 35 m (x the drawn
# trigger scale; it crossed long before the ego arrived: 0 collisions)
RANGES_V2: dict[int, dict[str, Any]] = {
    **RANGES,
    1: {**RANGES[1], "adv": 6.0, "adv_bias": -6.0},
    3: {"shift": 6.0, "shift_bias": -21.0, "adv": 0.0, "other": 1.5, "other_speed": 0.15,
        "ego_speed": (7.0, 10.0), "adv_speed": (0.0, 2.0)},
    4: {"shift": 0.0, "adv": 20.0, "adv_bias": -12.0, "other": 4.0, "other_speed": 0.0},
}  # fmt: skip
ADV_V2 = {3: (5.0, 5.0, 0.0)}  # scenario -> 1-D action's (adv_base, adv_scale, lead_brake_after)
TRIGGER_V2 = {2: 35.0}  # scripted actors triggered by distance (m) where v1 started them at once
RECKLESS_AIM = 2.0  # m: the 1-D reckless actor aims at the point this far behind the ego's centre
_Act = tuple[np.ndarray, bool]  # a scripted actor's (action, triggered)
_S3_CRUISE, _S3_TRIGGER = 0.6, 18.0  # v2's scripted lead (scenario 3): 8 m/s, brake check at 18 m


def adv_speed(scenario: int, scenes: str = "safebench") -> tuple[float, float]:
    """(base, scale) of the 1-D target-speed action in ``scenario`` of ``scenes``."""
    lay = LAYOUTS[int(scenario)]
    override = ADV_V2.get(int(scenario)) if scenes == "retuned" else None
    return (override[0], override[1]) if override else (lay.adv_base, lay.adv_scale)


# ---------------------------------------------------------------------------- scripted actors


def _speed_action(target: float, speed: float, base: float, scale: float, dim: int) -> np.ndarray:
    """The action that drives at ``target`` m/s: 1-D target speed, or 2-D throttle/brake."""
    if dim == 1:
        return np.array([np.clip((target - base) / scale, -1.0, 1.0)], np.float32)
    return np.array([np.clip((target - speed) / 0.3, -1.0, 1.0), 0.0], np.float32)


def scripted_adversary_action(obs: np.ndarray, scenario: int, triggered: bool,
                              action_dim: int = 1) -> _Act:  # fmt: skip
    """SafeBench's standard (hand-designed) behaviour of the adversary, as an action of this env.

    The actor waits (target speed 0, or full brake in the 2-D mode) until the ego comes within
    the scenario's trigger distance, then drives at the scripted speed (the 2-D action drives at
    full throttle below it and brakes above it). ``obs`` is one 27-number observation.
    Returns (action, triggered).
    """
    lay = LAYOUTS[int(scenario)]
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    d = math.hypot(o[9] - o[0], o[10] - o[1])
    triggered = triggered or lay.trigger_distance <= 0.0 or d < lay.trigger_distance
    if action_dim == 1:
        return np.array([lay.scripted_action if triggered else -1.0], dtype=np.float32), triggered
    target = lay.adv_base + lay.adv_scale * lay.scripted_action if triggered else 0.0
    speed = math.hypot(o[14], o[15])
    acc = float(np.clip((target - speed) / 0.3, -1.0, 1.0))
    return np.array([acc, 0.0], dtype=np.float32), triggered


def scripted_adversary_v1(obs: np.ndarray, scenario: int, triggered: bool,
                          params: Mapping[str, float], action_dim: int = 1) -> _Act:  # fmt: skip
    """SafeBench's scripted behaviour with the episode's drawn trigger distance and target speed
    (``params`` = ``info["scenario_params"]``: ``trigger_scale``, ``adv_speed_scale``)."""
    lay = LAYOUTS[int(scenario)]
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    d = float(np.hypot(o[9] - o[0], o[10] - o[1]))
    trig = lay.trigger_distance * float(params.get("trigger_scale", 1.0))
    triggered = triggered or lay.trigger_distance <= 0.0 or d < trig
    speed_scale = float(params.get("adv_speed_scale", 1.0))
    target = (lay.adv_base + lay.adv_scale * lay.scripted_action) * speed_scale
    if not triggered:
        target = 0.0
    if action_dim == 1:
        a = -1.0 if not triggered else (target - lay.adv_base) / lay.adv_scale
        return np.array([np.clip(a, -1.0, 1.0)], dtype=np.float32), triggered
    speed = float(np.hypot(o[14], o[15]))
    acc = float(np.clip((target - speed) / 0.3, -1.0, 1.0))
    return np.array([acc, 0.0], dtype=np.float32), triggered


def scripted_safebench(obs: np.ndarray, scenario: int, triggered: bool,
                       params: Mapping[str, float], action_dim: int = 1) -> _Act:  # fmt: skip
    """The scripted actor of the SafeBench scenes: with the episode's drawn trigger distance and
    speed when the scene draws them (``params``), SafeBench's fixed ones otherwise."""
    if params:
        return scripted_adversary_v1(obs, scenario, triggered, params, action_dim)
    return scripted_adversary_action(obs, scenario, triggered, action_dim)


def scripted_adversary_v2(obs: np.ndarray, scenario: int, triggered: bool,
                          params: Mapping[str, float], action_dim: int = 1) -> _Act:  # fmt: skip
    """SafeBench's scripted behaviour in the re-tuned scenes: as :func:`scripted_adversary_v1`,
    except scenario 2 (the cyclist waits for its trigger) and scenario 3, where the lead car
    cruises at 8 m/s (x the drawn speed scale) and brakes to a stop once the ego is within 18 m
    (x the drawn trigger scale): SafeBench's sudden deceleration of the leader."""
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    sc = int(scenario)
    if sc in TRIGGER_V2 and not triggered:
        d = float(np.hypot(o[9] - o[0], o[10] - o[1]))
        if d >= TRIGGER_V2[sc] * float(params.get("trigger_scale", 1.0)):
            return _speed_action(0.0, float(np.hypot(o[14], o[15])), 5.0, 5.0, action_dim), False
        triggered = True
    if sc != 3:
        return scripted_adversary_v1(obs, scenario, triggered, params, action_dim)
    d = float(np.hypot(o[9] - o[0], o[10] - o[1]))
    triggered = triggered or d < _S3_TRIGGER * float(params.get("trigger_scale", 1.0))
    base, scale = adv_speed(3, "retuned")
    cruise = (base + scale * _S3_CRUISE) * float(params.get("adv_speed_scale", 1.0))
    target = 0.0 if triggered else cruise
    if action_dim == 1:
        return np.array([np.clip((target - base) / scale, -1.0, 1.0)], np.float32), triggered
    speed = float(np.hypot(o[14], o[15]))
    return np.array([np.clip((target - speed) / 0.3, -1.0, 1.0), 0.0], np.float32), triggered


def reckless_adversary_v2(obs: np.ndarray, scenario: int, triggered: bool,
                          params: Mapping[str, float] | None = None, action_dim: int = 1) -> _Act:  # fmt: skip
    """A deliberately reckless adversary (the contrast arm of the boundary-band metric): it makes
    collisions the ego cannot avoid instead of ones it fails to avoid.

    Scenario 3: the lead car cruises at 7 m/s and brakes fully once the ego is within 11 m
    (centre to centre: a late brake check). Otherwise, with the 2-D action: it stands until the
    ego is within 40 m, then drives at full throttle, steering at where the ego will be in 0.5 s
    (ramming, head-on into the ego's lane in scenarios 4 and 6). With the 1-D action: it times its
    speed to reach the crossing of the two headings when the ego's centre is ``RECKLESS_AIM`` (2) m
    past it, i.e. to hit the ego's rear half (full speed when the headings do not cross ahead of
    both). ``params`` is unused (same signature as the scripted ones).
    """
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    ex, ey, eyaw, evx, evy = o[0], o[1], o[2], o[5], o[6]
    ax_, ay_, ayaw, avx, avy = o[9], o[10], o[11], o[14], o[15]
    d = float(np.hypot(ax_ - ex, ay_ - ey))
    speed = float(np.hypot(avx, avy))
    base, scale = adv_speed(scenario, "retuned")
    if int(scenario) == 3:
        triggered = triggered or d < 11.0
        return _speed_action(0.0 if triggered else 7.0, speed, base, scale, action_dim), triggered
    if action_dim == 2:
        triggered = triggered or d < 40.0
        if not triggered:
            return np.array([-1.0, 0.0], np.float32), False
        tx, ty = ex + 0.5 * evx, ey + 0.5 * evy
        err = (np.arctan2(ty - ay_, tx - ax_) - ayaw + np.pi) % (2 * np.pi) - np.pi
        return np.array([1.0, float(np.clip(2.0 * err, -1.0, 1.0))], np.float32), True
    c, s = np.cos(ayaw - eyaw), np.sin(ayaw - eyaw)
    rx, ry = ax_ - ex, ay_ - ey
    dx = np.cos(eyaw) * rx + np.sin(eyaw) * ry
    dy = -np.sin(eyaw) * rx + np.cos(eyaw) * ry
    v_e = float(np.hypot(evx, evy))
    if abs(s) < 0.2:
        return _speed_action(base + scale, speed, base, scale, 1), True
    p_e, p_n = dx - dy * c / s, -dy / s
    if p_e <= 0.0 or p_n <= 0.0 or v_e < 0.5:
        return _speed_action(base + scale if p_n > 0.0 else 0.0, speed, base, scale, 1), True
    return _speed_action(p_n / ((p_e + RECKLESS_AIM) / v_e), speed, base, scale, 1), True


@dataclass(frozen=True)
class Scenes:
    """A set of scene tunings: the randomized ranges (None: :data:`RANGES`), the 1-D action's
    speed tables per scenario (overrides of the layouts'), and the scripted adversary."""

    ranges: dict[int, dict[str, Any]] | None
    adv: dict[int, tuple[float, float, float]]
    scripted: Callable[..., tuple[np.ndarray, bool]]


SCENES = {
    "safebench": Scenes(None, {}, scripted_safebench),
    "retuned": Scenes(RANGES_V2, ADV_V2, scripted_adversary_v2),
}
