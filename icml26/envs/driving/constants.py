"""Constants and per-scenario layout tables shared by the batched simulator (:mod:`.sim`) and the
one-scene scalar step (:mod:`.scalar`); neither module reaches into the other for them."""

from __future__ import annotations

import numpy as np

from icml26.envs.driving.scenarios import (
    JUNCTION_HALF,
    KIND_BICYCLE,
    KIND_CAR,
    KIND_NONE,
    KIND_STATIC,
    KIND_WALKER,
    LAYOUTS,
)

DT = 0.1  # s per step (SafeBench / ScenePilot)
N_BODIES = 3
OBS_PER_ACTOR = 9
EGO_OBS_DIM = 12
MAX_STEER = np.pi / 3  # highway-env Vehicle.MAX_STEERING_ANGLE
EGO_RL_ACC, EGO_RL_STEER = 3.0, 0.3  # SafeBench RL planners: action [acc * 3, steer * 0.3]
ADV_ACC_MAX, ADV_STEER_MAX = 3.0, 0.2  # ScenePilot 2-D adversary: acc_max 3, steer_max 0.2
# (max accel, max brake, max speed) per body kind
LIMITS = {
    KIND_CAR: (3.5, 8.0, 20.0),
    KIND_WALKER: (4.0, 4.0, 3.0),
    KIND_BICYCLE: (2.5, 5.0, 10.0),
    KIND_STATIC: (0.0, 0.0, 0.0),
    KIND_NONE: (0.0, 0.0, 0.0),
}
SCRIPTED_REACH = 12.0  # scenario 3: speed of the scripted cars (m/s)
STRICT_K = 0.35  # the last threshold of ScenePilot's k curriculum (feasible_ratio_strict)


def layout_tables() -> dict[str, np.ndarray]:
    """Per-scenario route primitives, rectangles, lengths and scripted-actor constants as arrays."""
    ids = sorted(LAYOUTS)
    n = max(ids) + 1
    prims = np.zeros((n, 3, 8))
    rects = np.tile(np.array([np.inf, -np.inf, np.inf, -np.inf]), (n, 3, 1))
    route_len, max_dist = np.zeros(n), np.zeros(n)
    adv_base, adv_scale, passing, lead_after = (
        np.zeros(n),
        np.zeros(n),
        np.zeros(n, bool),
        np.zeros(n),
    )
    route_end = np.zeros((n, 2))
    j_entry, j_exit = np.full(n, np.inf), np.full(n, np.inf)
    for i in ids:
        lay = LAYOUTS[i]
        prims[i] = lay.primitives
        for j, r in enumerate(lay.rects):
            rects[i, j] = r
        route_len[i], max_dist[i] = lay.route_length, lay.max_distance
        adv_base[i], adv_scale[i] = lay.adv_base, lay.adv_scale
        passing[i], lead_after[i] = lay.allow_passing, lay.lead_brake_after
        route_end[i] = lay.route[-1]
        if (
            lay.junction is not None
        ):  # arc length where the route enters / leaves the junction square
            xj, yc = lay.junction
            inside = (np.abs(lay.route[:, 0] - xj) <= JUNCTION_HALF) & (
                np.abs(lay.route[:, 1] - yc) <= JUNCTION_HALF
            )
            s_pts = np.linspace(0.0, lay.route_length, len(lay.route))
            j_entry[i], j_exit[i] = s_pts[inside].min(), s_pts[inside].max()
    return {
        "prims": prims,
        "rects": rects,
        "route_len": route_len,
        "max_dist": max_dist,
        "adv_base": adv_base,
        "adv_scale": adv_scale,
        "passing": passing,
        "lead_after": lead_after,
        "route_end": route_end,
        "j_entry": j_entry,
        "j_exit": j_exit,
    }


TABLES = layout_tables()  # scenario id -> row of each table
