"""Road geometry and actors of the 8 SafeBench pre-crash scenarios, in the ego's start frame.

x is metres ahead of the ego's start, y metres to its left; lanes are 3.5 m wide and traffic
drives on the right. Positions, speeds, triggers and route lengths follow the SafeBench /
ScenePilot scenario definitions summarized in the method card (``driving.md``); junctions are
squares of half-size 12 m (lanes plus a 5 m corner apron) so that the turning arcs are drivable
by a 5 m kinematic-bicycle car.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ActorSpec",
    "ScenarioLayout",
    "LAYOUTS",
    "SCENARIO_NAMES",
    "LANE",
    "JUNCTION_HALF",
    "ROUTE_POINTS",
    "MAX_PRIMITIVES",
    "scripted_adversary_action",
    "scripted_adversary_v1",
    "scripted_adversary_v2",
    "reckless_adversary_v2",
    "RANGES",
    "RANGES_V2",
    "SCENES",
    "adv_speed",
]

LANE = 3.5  # lane width, m (SafeBench maps)
JUNCTION_HALF = 12.0  # half-size of a junction square, m
ROUTE_POINTS = 200  # every route is resampled to this many points (for drawing)
MAX_PRIMITIVES = 3  # straight / arc / straight
CAR = (4.9, 2.0)  # length, width of a car (m)
WALKER = (0.6, 0.6)
BICYCLE = (1.8, 0.7)

KIND_NONE, KIND_CAR, KIND_WALKER, KIND_BICYCLE, KIND_STATIC = 0, 1, 2, 3, 4


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
    markings: tuple[
        tuple[float, float, float, float, int], ...
    ]  # (x0, y0, x1, y1, style 0 dashed 1 solid)
    actors: tuple[ActorSpec, ...]  # actors[0] is the adversary
    adv_base: float  # 1-D action: target speed = adv_base + adv_scale * a
    adv_scale: float
    scripted_action: float  # the action that reproduces SafeBench's scripted speed
    trigger_distance: (
        float  # ego-adversary distance at which the scripted actor starts (0 = at once)
    )
    allow_passing: bool = False
    lights: tuple[tuple[float, float, int], ...] = ()  # (x, y, state 0 red 1 green) for drawing
    ego_light_red: bool = False
    junction: tuple[float, float] | None = None  # centre of the junction square
    lead_brake_after: float = 0.0  # scenario 3: the adversary obeys only after moving this far

    @property
    def route_length(self) -> float:
        return float(self.primitives[:, 7].sum())


def _route(
    pieces: list[tuple[str, float, float]], start=(0.0, 0.0), heading=0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Route from ('S', length, 0) straights and ('A', radius, signed angle) arcs.

    Returns (dense polyline (ROUTE_POINTS, 2), primitives (MAX_PRIMITIVES, 8)); a primitive row is
    [type (0 line, 1 arc), x0, y0, heading0, length or radius, sweep, s0, arc length] and unused
    rows are zero-length lines at the route's end (they never win a projection).
    """
    pts = [np.array(start, dtype=float)]
    prims: list[list[float]] = []
    x, y, h, s0 = start[0], start[1], heading, 0.0
    for kind, a, b in pieces:
        if kind == "S":
            prims.append([0.0, x, y, h, a, 0.0, s0, a])
            n = max(2, int(a))
            for i in range(1, n + 1):
                pts.append(np.array([x + math.cos(h) * a * i / n, y + math.sin(h) * a * i / n]))
            x, y = x + math.cos(h) * a, y + math.sin(h) * a
            s0 += a
        else:
            radius, ang = a, b
            prims.append([1.0, x, y, h, radius, ang, s0, radius * abs(ang)])
            sign = 1.0 if ang > 0 else -1.0
            cx, cy = x - sign * radius * math.sin(h), y + sign * radius * math.cos(h)
            n = max(4, int(abs(ang) * radius))
            for i in range(1, n + 1):
                hh = h + ang * i / n
                pts.append(
                    np.array([cx + sign * radius * math.sin(hh), cy - sign * radius * math.cos(hh)])
                )
            h = h + ang
            x, y = cx + sign * radius * math.sin(h), cy - sign * radius * math.cos(h)
            s0 += radius * abs(ang)
    while len(prims) < MAX_PRIMITIVES:
        prims.append([0.0, x, y, h, 0.0, 0.0, s0, 0.0])
    poly = np.array(pts)
    seg = np.hypot(*np.diff(poly, axis=0).T)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    si = np.linspace(0.0, s[-1], ROUTE_POINTS)
    dense = np.stack([np.interp(si, s, poly[:, 0]), np.interp(si, s, poly[:, 1])], axis=1)
    return dense, np.array(prims)


def _straight_road(yc: float, lanes: int, x0: float, x1: float) -> tuple[tuple, list]:
    """A road along x centred on yc with ``lanes`` lanes per direction: rect and markings."""
    half = lanes * LANE
    rect = (x0, x1, yc - half, yc + half)
    marks = [
        (x0, yc - half, x1, yc - half, 1),
        (x0, yc + half, x1, yc + half, 1),
        (x0, yc, x1, yc, 1),
    ]
    for k in range(1, lanes):
        marks += [
            (x0, yc - k * LANE, x1, yc - k * LANE, 0),
            (x0, yc + k * LANE, x1, yc + k * LANE, 0),
        ]
    return rect, marks


def _junction_layout(
    xj: float, yc: float, y0: float, y1: float, x_end: float
) -> tuple[tuple, tuple]:
    """Main road along x (2 lanes per direction) crossing a road along y at x = xj."""
    J = JUNCTION_HALF
    main, marks_main = _straight_road(yc, 2, -20.0, x_end)
    cross = (xj - 2 * LANE, xj + 2 * LANE, y0, y1)
    box = (xj - J, xj + J, yc - J, yc + J)
    # cut the main-road markings at the junction and add the cross-road markings
    marks: list[tuple[float, float, float, float, int]] = []
    for a, b, c, d, st in marks_main:
        marks += [(a, b, xj - J, d, st), (xj + J, b, c, d, st)]
    for off, st in ((-2 * LANE, 1), (2 * LANE, 1), (0.0, 1), (-LANE, 0), (LANE, 0)):
        marks += [(xj + off, y0, xj + off, yc - J, st), (xj + off, yc + J, xj + off, y1, st)]
    return (main, cross, box), tuple(marks)


def _build() -> dict[int, ScenarioLayout]:
    J, half_pi = JUNCTION_HALF, math.pi / 2
    L: dict[int, ScenarioLayout] = {}

    # 1 Straight obstacle: a walker behind a parked van crosses from the right (outer lane ego).
    rect, marks = _straight_road(LANE * 1.5, 2, -20.0, 170.0)
    L[1] = ScenarioLayout(
        1,
        "straight obstacle (pedestrian crossing)",
        *_route([("S", 100.0, 0)]),
        150.0,
        (rect,),
        tuple(marks),
        (
            ActorSpec(KIND_WALKER, 75.0, -LANE, half_pi, *WALKER, "adversary", 2.5, 1.0),
            ActorSpec(KIND_STATIC, 70.0, -3.2, 0.0, 4.5, 2.2, "static", jitter=0.0),
        ),
        adv_base=1.0,
        adv_scale=2.0,
        scripted_action=0.75,
        trigger_distance=45.0,
    )

    # 2 Turning obstacle: ego turns left; a bicycle crosses the exit road 8 m after the junction.
    xj, yc = 30.0, LANE / 2
    rects, marks2 = _junction_layout(xj, yc, yc - 60.0, yc + 90.0, xj + J + 40.0)
    r2 = _route([("S", xj - J, 0), ("A", J + LANE / 2, half_pi), ("S", 54.4, 0)])
    L[2] = ScenarioLayout(
        2,
        "turning obstacle (cyclist after a left turn)",
        *r2,
        180.0,
        rects,
        marks2,
        (
            ActorSpec(
                KIND_BICYCLE,
                xj + 2 * LANE + 2.0,
                yc + J + 8.0,
                math.pi,
                *BICYCLE,
                "adversary",
                10.0,
                1.0,
            ),
        ),
        adv_base=5.0,
        adv_scale=5.0,
        scripted_action=1.0,
        trigger_distance=0.0,
        junction=(xj, yc),
        lights=((xj - J, yc - 4.5, 1),),
    )

    # 3 Lane changing: a lead car brakes in the ego lane while a second car blocks the left lane.
    rect, marks = _straight_road(LANE * 1.5, 2, -20.0, 230.0)
    L[3] = ScenarioLayout(
        3,
        "lane changing (other leading vehicle)",
        *_route([("S", 130.0, 0)]),
        200.0,
        (rect,),
        tuple(marks),
        (
            ActorSpec(KIND_CAR, 35.0, 0.0, 0.0, *CAR, "adversary", 2.0, 1.0),
            ActorSpec(KIND_CAR, 36.75, LANE, 0.0, *CAR, "scripted", 12.0, 0.75),
        ),
        adv_base=0.0,
        adv_scale=4.0,
        scripted_action=0.5,
        trigger_distance=0.0,
        lead_brake_after=5.0,
    )

    # 4 Vehicle passing: a stopped car blocks the ego lane of a two-lane road; an oncoming car.
    rect, marks = _straight_road(LANE / 2, 1, -20.0, 230.0)
    L[4] = ScenarioLayout(
        4,
        "vehicle passing (maneuver into the opposite lane)",
        *_route([("S", 150.0, 0)]),
        200.0,
        (rect,),
        tuple(marks),
        (
            ActorSpec(KIND_CAR, 50.0, LANE, math.pi, *CAR, "adversary", 8.0, 1.0),
            ActorSpec(KIND_CAR, 30.0, 0.0, 0.0, *CAR, "static", jitter=0.0),
        ),
        adv_base=5.0,
        adv_scale=5.0,
        scripted_action=0.6,
        trigger_distance=45.0,
        allow_passing=True,
    )

    # 5 Red-light running: ego straight on green; a car from the left crosses on red.
    xj, yc = 55.0, LANE * 1.5
    rects, marks5 = _junction_layout(xj, yc, yc - 60.0, yc + 60.0, 170.0)
    L[5] = ScenarioLayout(
        5,
        "red-light running",
        *_route([("S", 90.0, 0)]),
        150.0,
        rects,
        marks5,
        (
            ActorSpec(
                KIND_CAR, xj - 1.5 * LANE, yc + J + 3.0, -half_pi, *CAR, "adversary", 10.0, 1.0
            ),
        ),
        adv_base=5.0,
        adv_scale=5.0,
        scripted_action=1.0,
        trigger_distance=35.0,
        junction=(xj, yc),
        lights=((xj - J, yc - 4.5, 1), (xj - 4.5, yc + J, 0)),
    )

    # 6 Unprotected left turn: ego (inner lane) turns left on green; an oncoming car goes straight.
    xj, yc = 60.0, LANE / 2
    rects, marks6 = _junction_layout(xj, yc, yc - 60.0, yc + 90.0, 170.0)
    r6 = _route([("S", xj - J, 0), ("A", J + LANE / 2, half_pi), ("S", 51.4, 0)])
    L[6] = ScenarioLayout(
        6,
        "unprotected left turn",
        *r6,
        150.0,
        rects,
        marks6,
        (ActorSpec(KIND_CAR, 81.0, LANE, math.pi, *CAR, "adversary", 12.0, 1.0),),
        adv_base=5.0,
        adv_scale=5.0,
        scripted_action=1.0,
        trigger_distance=45.0,
        junction=(xj, yc),
        lights=((xj - J, yc - 4.5, 1), (xj + J, yc + 4.5, 1)),
    )

    # 7 Right turn on red: ego (outer lane) turns right; a car from the left drives on green along
    # the road the ego turns into.
    xj, yc = 50.0, LANE * 1.5
    rects, marks7 = _junction_layout(xj, yc, yc - 110.0, yc + 60.0, 170.0)
    r7 = _route([("S", xj - J, 0), ("A", J - 1.5 * LANE, -half_pi), ("S", 95.4, 0)])
    L[7] = ScenarioLayout(
        7,
        "right turn (on red)",
        *r7,
        150.0,
        rects,
        marks7,
        (
            ActorSpec(
                KIND_CAR, xj - 1.5 * LANE, yc + J + 15.0, -half_pi, *CAR, "adversary", 12.0, 1.0
            ),
        ),
        adv_base=5.0,
        adv_scale=5.0,
        scripted_action=1.0,
        trigger_distance=40.0,
        junction=(xj, yc),
        lights=((xj - J, yc - 4.5, 0), (xj - 4.5, yc + J, 1)),
        ego_light_red=True,
    )

    # 8 Crossing negotiation at an unsignalized junction.
    xj, yc = 75.0, LANE * 1.5
    rects, marks8 = _junction_layout(xj, yc, yc - 60.0, yc + 60.0, 170.0)
    L[8] = ScenarioLayout(
        8,
        "crossing negotiation (unsignalized junction)",
        *_route([("S", 110.0, 0)]),
        150.0,
        rects,
        marks8,
        (
            ActorSpec(
                KIND_CAR, xj - 1.5 * LANE, yc + J + 3.0, -half_pi, *CAR, "adversary", 10.0, 1.0
            ),
        ),
        adv_base=5.0,
        adv_scale=5.0,
        scripted_action=1.0,
        trigger_distance=45.0,
        junction=(xj, yc),
    )
    return L


LAYOUTS: dict[int, ScenarioLayout] = _build()


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
    3: {
        "shift": 6.0,
        "shift_bias": -21.0,
        "adv": 0.0,
        "other": 1.5,
        "other_speed": 0.15,
        "ego_speed": (7.0, 10.0),
        "adv_speed": (0.0, 2.0),
    },  # fmt: skip
    4: {"shift": 0.0, "adv": 20.0, "adv_bias": -12.0, "other": 4.0, "other_speed": 0.0},
}
ADV_V2 = {3: (5.0, 5.0, 0.0)}  # scenario -> 1-D action's (adv_base, adv_scale, lead_brake_after)
TRIGGER_V2 = {2: 35.0}  # scripted actors triggered by distance (m) where v1 started them at once
RECKLESS_AIM = 2.0  # m: the 1-D reckless actor aims at the point this far behind the ego's centre
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


def scripted_adversary_action(
    obs: np.ndarray, scenario: int, triggered: bool, action_dim: int = 1
) -> tuple[np.ndarray, bool]:
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


def scripted_adversary_v1(
    obs: np.ndarray,
    scenario: int,
    triggered: bool,
    params: Mapping[str, float],
    action_dim: int = 1,
) -> tuple[np.ndarray, bool]:
    """SafeBench's scripted behaviour with the episode's drawn trigger distance and target speed
    (``params`` = ``info["scenario_params"]``: ``trigger_scale``, ``adv_speed_scale``)."""
    lay = LAYOUTS[int(scenario)]
    o = np.asarray(obs, dtype=np.float64).reshape(-1)
    d = float(np.hypot(o[9] - o[0], o[10] - o[1]))
    trig = lay.trigger_distance * float(params.get("trigger_scale", 1.0))
    triggered = triggered or lay.trigger_distance <= 0.0 or d < trig
    target = (lay.adv_base + lay.adv_scale * lay.scripted_action) * float(
        params.get("adv_speed_scale", 1.0)
    )
    if not triggered:
        target = 0.0
    if action_dim == 1:
        a = -1.0 if not triggered else (target - lay.adv_base) / lay.adv_scale
        return np.array([np.clip(a, -1.0, 1.0)], dtype=np.float32), triggered
    speed = float(np.hypot(o[14], o[15]))
    acc = float(np.clip((target - speed) / 0.3, -1.0, 1.0))
    return np.array([acc, 0.0], dtype=np.float32), triggered


def scripted_safebench(
    obs: np.ndarray,
    scenario: int,
    triggered: bool,
    params: Mapping[str, float],
    action_dim: int = 1,
) -> tuple[np.ndarray, bool]:
    """The scripted actor of the SafeBench scenes: with the episode's drawn trigger distance and
    speed when the scene draws them (``params``), SafeBench's fixed ones otherwise."""
    if params:
        return scripted_adversary_v1(obs, scenario, triggered, params, action_dim)
    return scripted_adversary_action(obs, scenario, triggered, action_dim)


def scripted_adversary_v2(
    obs: np.ndarray,
    scenario: int,
    triggered: bool,
    params: Mapping[str, float],
    action_dim: int = 1,
) -> tuple[np.ndarray, bool]:
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


def reckless_adversary_v2(
    obs: np.ndarray,
    scenario: int,
    triggered: bool,
    params: Mapping[str, float] | None = None,
    action_dim: int = 1,
) -> tuple[np.ndarray, bool]:
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


SCENARIO_NAMES = {i: lay.name for i, lay in LAYOUTS.items()}
