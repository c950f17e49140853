"""Road geometry and actors of the 8 SafeBench pre-crash scenarios, in the ego's start frame.

x is metres ahead of the ego's start, y metres to its left; lanes are 3.5 m wide and traffic
drives on the right. Positions, speeds, triggers and route lengths follow the SafeBench /
ScenePilot scenario definitions summarized in the method card (``driving.md``); junctions are
squares of half-size 12 m (lanes plus a 5 m corner apron) so that the turning arcs are drivable
by a 5 m kinematic-bicycle car.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


SCENARIO_NAMES = {i: lay.name for i, lay in LAYOUTS.items()}
