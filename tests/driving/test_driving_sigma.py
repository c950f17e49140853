"""sigma (physical feasibility) and the TTC risk on hand-worked cases; vectorized == reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from icml26.envs.driving.feasibility import (
    BodyState,
    FeasibilityParams,
    rss_lateral,
    rss_longitudinal_opposite,
    rss_longitudinal_same,
    sigma_batch,
    sigma_reference,
    ttc_batch,
    ttc_risk_batch,
)

P = FeasibilityParams()  # a_lon_av 3, a_lon_npc 4, a_lat_av 2, a_lat_npc 1.5, eps 0.1


def car(x: float, y: float, yaw: float, speed: float, vlat: float = 0.0) -> BodyState:
    c, s = math.cos(yaw), math.sin(yaw)
    return BodyState(x, y, yaw, speed * c - vlat * s, speed * s + vlat * c, 2.5, 1.0)


def batch(ego: BodyState, npc: BodyState, p: FeasibilityParams = P) -> float:
    row = lambda b: [b.x, b.y, b.yaw, b.vx, b.vy, b.half_length, b.half_width]  # noqa: E731
    return float(sigma_batch(np.array([row(ego)]), np.array([row(npc)]), np.array([True]), p)[0])


def test_far_apart_is_one() -> None:
    # adjacent lane, 60 m ahead, same speed: both needs are 0
    assert sigma_reference(car(0, 0, 0, 10), car(60, 3.5, 0, 10)) == 1.0
    assert batch(car(0, 0, 0, 10), car(60, 3.5, 0, 10)) == 1.0


def test_head_on() -> None:
    # ego 10 m/s east, NPC 20 m ahead driving west at 10 m/s, same lane.
    d_x = 100 / (2 * 3.1) + 100 / (2 * 4.1)  # both stopping distances (eps 0.1 inside, as released)
    need_x, need_y = 5.0 + d_x - 20.0, 2.0  # clearances 2.5+2.5 and 1+1
    t = need_x / 20.0  # closing at 20 m/s on x; y is not closing
    l_x = 0.5 * 3.0 * t**2
    nx = (need_x - l_x) / (d_x + 5.0)
    ny = need_y / 2.0
    expected = 1.0 - math.hypot(nx, ny)
    got = sigma_reference(car(0, 0, 0, 10), car(20, 0, math.pi, 10))
    assert got == pytest.approx(expected, abs=1e-9)
    assert expected == pytest.approx(-0.0697, abs=1e-3)
    assert batch(car(0, 0, 0, 10), car(20, 0, math.pi, 10)) == pytest.approx(expected, abs=1e-9)


def test_same_lane_ego_faster() -> None:
    # ego 12 m/s closing on a car 15 m ahead at 4 m/s
    va, vn = 12.0, 4.0
    d_stop = abs(vn**2 / (2 * 4.1) - va**2 / (2 * 3.1))  # d_equal unused since a_av < a_npc
    need_x = 5.0 + d_stop - 15.0
    t = need_x / (va - vn)
    nx = (need_x - 0.5 * 3.0 * t**2) / (d_stop + 5.0)
    expected = 1.0 - math.hypot(nx, 1.0)  # need_y = 2 (overlapping laterally) -> ny = 1
    assert sigma_reference(car(0, 0, 0, va), car(15, 0, 0, vn)) == pytest.approx(expected, abs=1e-9)
    assert expected < 0


def test_same_lane_ego_slower_is_zero() -> None:
    # the NPC ahead is faster: no longitudinal need, but the lateral overlap keeps need_y = 2,
    # so the released formula gives exactly 0 (its same-lane quirk)
    assert sigma_reference(car(0, 0, 0, 5), car(30, 0, 0, 10)) == pytest.approx(0.0, abs=1e-12)
    assert batch(car(0, 0, 0, 5), car(30, 0, 0, 10)) == pytest.approx(0.0, abs=1e-12)


def test_lateral_cut_in() -> None:
    # NPC 10 m ahead, 2.5 m to the left, same heading and speed, drifting right at 1.5 m/s
    d_y = 1.5**2 / (2 * 1.6)  # opposite-sign lateral formula (ego has no lateral speed)
    need_y = 2.0 + d_y - 2.5
    t = need_y / 1.5
    ny = (need_y - 0.5 * 2.0 * t**2) / (d_y + 2.0)
    expected = 1.0 - ny
    ego, npc = car(0, 0, 0, 10), car(10, 2.5, 0, 10, vlat=-1.5)
    assert sigma_reference(ego, npc) == pytest.approx(expected, abs=1e-9)
    assert expected == pytest.approx(0.9316, abs=1e-3)
    assert batch(ego, npc) == pytest.approx(expected, abs=1e-9)


def test_infinite_lateral_distance_gives_minus_one() -> None:
    # NPC brakes laterally harder than the ego can: no finite safe distance -> None (env: -1)
    p = FeasibilityParams(a_lat_av=1.0, a_lat_npc=2.0)
    ego, npc = car(0, 0, 0, 10, vlat=0.5), car(5, 3.0, 0, 10, vlat=2.0)
    assert sigma_reference(ego, npc, p) is None
    assert batch(ego, npc, p) == -1.0


def test_no_npc_is_zero() -> None:
    assert sigma_reference(car(0, 0, 0, 5), None) == 0.0
    row = np.zeros((1, 7))
    assert sigma_batch(row, row, np.array([False]))[0] == 0.0


@pytest.mark.parametrize("mode", ["code", "rss"])
def test_vectorized_matches_reference(mode: str) -> None:
    rng = np.random.default_rng(0)
    p = FeasibilityParams(mode=mode)
    egos, npcs, ref = [], [], []
    for _ in range(400):
        e = BodyState(0.0, 0.0, rng.uniform(-np.pi, np.pi), *rng.uniform(-12, 12, 2), 2.45, 1.0)
        n = BodyState(
            *rng.uniform(-30, 30, 2),
            rng.uniform(-np.pi, np.pi),
            *rng.uniform(-12, 12, 2),
            rng.uniform(0.3, 2.5),
            rng.uniform(0.3, 1.1),
        )
        r = sigma_reference(e, n, p)
        egos.append([e.x, e.y, e.yaw, e.vx, e.vy, e.half_length, e.half_width])
        npcs.append([n.x, n.y, n.yaw, n.vx, n.vy, n.half_length, n.half_width])
        ref.append(-1.0 if r is None else r)
    got = sigma_batch(np.array(egos), np.array(npcs), np.ones(400, bool), p)
    np.testing.assert_allclose(got, np.array(ref), atol=1e-9)
    assert len(set(np.round(ref, 3))) > 50  # the cases are varied, not all 1


def test_rss_distances_hand_worked() -> None:
    # Shalev-Shwartz et al. 2017, Def. 1 with rho 1, a_acc 3.5, b_min 4, b_max 8
    assert rss_longitudinal_same(10, 10, 1.0, 3.5, 4.0, 8.0) == pytest.approx(
        10 + 1.75 + 13.5**2 / 8 - 100 / 16
    )
    assert rss_longitudinal_same(0, 30, 1.0, 3.5, 4.0, 8.0) == 0.0
    # Def. 2: both 10 m/s, rho 1, a_acc 3.5, b_min_correct 3, b_min 4
    assert rss_longitudinal_opposite(10, 10, 1.0, 1.0, 3.5, 3.0, 4.0) == pytest.approx(
        (10 + 13.5) / 2 + 13.5**2 / 6 + (10 + 13.5) / 2 + 13.5**2 / 8
    )
    assert rss_lateral(0.0, 0.0, 1.0, 0.2, 0.8, 0.1) == pytest.approx(
        0.1 + 0.1 + 0.2**2 / 1.6 - (-0.1 - 0.2**2 / 1.6)
    )


def test_rss_mode_hand_worked() -> None:
    # ego 20 m/s, 40 m behind a car at 10 m/s: the RSS distance replaces the code's d_stop
    d_rss = 20 * 1.0 + 0.5 * 3.5 + 23.5**2 / 8 - 10**2 / 16
    need_x = 5.0 + d_rss - 40.0
    t = need_x / 10.0
    nx = (need_x - 0.5 * 3.0 * t**2) / (d_rss + 5.0)
    # lateral RSS at zero lateral speed (rho = max(1, 2) = 2, a_lat 0.2, b_lat_min 0.8, mu 0.1)
    d_lat = 0.1 + max(
        0.2 * 2 / 2 * 2 + (0.2 * 2) ** 2 / 1.6 - (-0.2 * 2 / 2 * 2 - (0.2 * 2) ** 2 / 1.6), 0.0
    )
    ny = (2.0 + d_lat) / (d_lat + 2.0)
    expected = 1.0 - math.hypot(nx, ny)
    ego, npc = car(0, 0, 0, 20), car(40, 0, 0, 10)
    got = sigma_reference(ego, npc, FeasibilityParams(mode="rss"))
    assert got == pytest.approx(expected, abs=1e-9)
    assert batch(ego, npc, FeasibilityParams(mode="rss")) == pytest.approx(expected, abs=1e-9)
    assert got != pytest.approx(sigma_reference(ego, npc), abs=1e-3)


def test_ttc_risk() -> None:
    dist, closing, ttc = ttc_batch(
        np.array([[0.0, 0.0]]),
        np.array([[10.0, 0.0]]),
        np.array([[20.0, 0.0]]),
        np.array([[-10.0, 0.0]]),
        np.array([True]),
    )
    assert dist[0] == 20.0 and closing[0] == 20.0 and ttc[0] == 1.0
    assert ttc_risk_batch(ttc)[0] == pytest.approx(2.0 / (1.0 + 1.0 / 2.5))
    _, _, ttc2 = ttc_batch(
        np.zeros((1, 2)),
        np.zeros((1, 2)),
        np.array([[5.0, 0.0]]),
        np.array([[1.0, 0.0]]),
        np.array([True]),
    )
    assert np.isinf(ttc2[0]) and ttc_risk_batch(ttc2)[0] == 0.0


def test_bad_params_rejected() -> None:
    with pytest.raises(ValueError, match="mode"):
        FeasibilityParams(mode="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a_lon_av"):
        FeasibilityParams(a_lon_av=0.0)
