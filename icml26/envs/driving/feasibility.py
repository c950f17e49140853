"""Physical feasibility sigma and the TTC risk fallback, as ScenePilot's released code computes them.

``sigma`` scores how physically solvable the situation between the ego car and its closest
NPC is: 1 when both axes are clear of the required safe distances, falling towards (and below)
0 as the gap the ego would still have to make up grows, and -1 when no finite lateral safe
distance exists. :func:`sigma_reference` ports ``safebench/gym_carla/envs/carla_env.py::
_get_phys_safe`` and ``phys_safe.py`` of the public ScenePilot release line by line (including
its quirks, e.g. a vehicle that overlaps the ego laterally always keeps ``need_y > 0``, so
sigma <= 0 in the same lane); :func:`sigma_lanes` is the simulator's version (one definition
for one scene and for N, :mod:`.lanes`), checked against the reference in the tests.

``mode="rss"``, ``combine="min"`` and ``crossing="conflict"`` (:class:`FeasibilityParams`) are
v1's and v2's rules: RSS's safe distances (Shalev-Shwartz et al. 2017), unsafe only when both
axes are, and escape slack on crossing routes (:func:`conflict_slack`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np

from icml26.envs.driving.lanes import numpy_ops, scalar_twins

where, fmin, fmax, clip, any_, all_, sqrt, cos, sin, hypot, isfinite = numpy_ops(
    "where fmin fmax clip any_ all_ sqrt cos sin hypot isfinite"
)

__all__ = ["FeasibilityParams", "BodyState", "sigma_reference", "sigma_lanes", "sigma_batch",
           "sigma_one", "ttc_batch", "ttc_risk_batch", "rss_longitudinal_same",
           "rss_longitudinal_opposite", "rss_lateral", "conflict_slack", "conflict_slack_batch",
           "is_crossing"]  # fmt: skip


@dataclass(frozen=True)
class FeasibilityParams:
    """Constants of sigma. Defaults: ScenePilot's ``scripts/rlconfig.yaml`` (``phys_safe``)."""

    a_lon_av: float = 3.0  # rlconfig.yaml a_lon_dec_av
    a_lon_npc: float = 4.0  # rlconfig.yaml a_lon_dec_npc
    a_lat_av: float = 2.0  # rlconfig.yaml a_lat_dec_av
    a_lat_npc: float = 1.5  # rlconfig.yaml a_lat_dec_npc
    eps: float = 0.1  # rlconfig.yaml eps (also inside the distance formulas, as set_from_cfg does)
    inf_dist: float = 1e4  # rlconfig.yaml INF_DIST
    same_dir_deg: float = 30.0  # rlconfig.yaml th_same_dir
    p_norm: float = 2.0  # rlconfig.yaml p_norm
    ttc_eps: float = 1e-4  # rlconfig.yaml ttc_eps
    mode: Literal["code", "rss"] = "code"
    # Full-RSS option (CARLA's RSS defaults; Shalev-Shwartz et al. 2017).
    rho_ego: float = 1.0
    rho_npc: float = 2.0
    rss_a_acc: float = 3.5
    rss_b_max: float = 8.0
    rss_b_min: float = 4.0
    rss_b_min_correct: float = 3.0
    rss_a_lat: float = 0.2
    rss_b_lat_min: float = 0.8
    rss_mu: float = 0.1
    # How the two axes' remaining gaps combine. "norm": the release, sigma = 1 - ||(n_x, n_y)||_p (a
    # car overlapping the ego laterally keeps n_y > 0 at any distance). "min": RSS's rule that a
    # situation is dangerous only when BOTH the longitudinal and the lateral distance are unsafe
    # (Shalev-Shwartz et al. 2017, Def. 7), sigma = 1 - min(n_x, n_y) (ScenePilot-v1's sigma="rss").
    combine: Literal["norm", "min"] = "norm"
    # Crossing routes (heading difference strictly between same_dir_deg and 180 - same_dir_deg).
    # "axes": the two-axes rule above for every geometry (v0, v1). "conflict": RSS's rule for routes
    # of different geometry (ScenePilot-v2): sigma = clip(T / cross_tau, -1, 1), T the latest time
    # (s) at which the ego can still start an escape -- braking at cross_b_ego to stop before the
    # conflict region or to reach it only after the other car has left, or accelerating at
    # cross_a_ego to leave it before the other car arrives (see :func:`conflict_slack`).
    crossing: Literal["axes", "conflict"] = "axes"
    # The release credits the gap the ego can still recover while closing (l = a t^2 / 2, t = need /
    # closing speed). RSS's safe distances already hold the braking, so ScenePilot-v2 turns it off:
    # with it an overlapping head-on car kept sigma ~0.6 at contact.
    recover: bool = True
    cross_b_ego: float = 8.0  # the simulated car's full brake (m/s^2)
    cross_a_ego: float = 3.5  # the simulated car's full throttle (m/s^2)
    cross_tau: float = 1.0  # s of escape slack that count as fully feasible (RSS's response time)

    def __post_init__(self) -> None:
        choices = {"mode": ("code", "rss"), "combine": ("norm", "min"),
                   "crossing": ("axes", "conflict")}  # fmt: skip
        for name, allowed in choices.items():
            if (v := getattr(self, name)) not in allowed:
                one_of = " or ".join(map(repr, allowed))
                raise ValueError(f"FeasibilityParams.{name} must be {one_of}, got {v!r}")
        for name in ("cross_b_ego", "cross_a_ego", "cross_tau", "a_lon_av", "a_lon_npc",
                     "a_lat_av", "a_lat_npc", "eps", "inf_dist"):  # fmt: skip
            if not (v := getattr(self, name)) > 0:
                raise ValueError(f"FeasibilityParams.{name} must be > 0, got {v!r}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class BodyState:
    """A planar rigid body: centre (m), yaw (rad), world velocity (m/s), half length and width (m)."""

    x: float
    y: float
    yaw: float
    vx: float
    vy: float
    half_length: float = 2.5
    half_width: float = 1.0
    ax: float = 0.0  # world acceleration (m/s^2); only the crossing rule "conflict" reads it
    ay: float = 0.0


# ------------------------------------------------------------------------ distance formulas


def rss_longitudinal_same(v_rear: Any, v_front: Any, rho: float, a_acc: float, b_min: float,
                          b_max: float) -> Any:  # fmt: skip
    """RSS safe distance for a rear car following a front car (Shalev-Shwartz et al. 2017, Def. 1)."""
    v_rear, v_front = fmax(v_rear, 0.0), fmax(v_front, 0.0)
    a = v_rear + rho * a_acc
    d = v_rear * rho + 0.5 * a_acc * rho**2 + a * a / (2 * b_min) - v_front * v_front / (2 * b_max)
    return fmax(d, 0.0)


def rss_longitudinal_opposite(v1: float, v2: float, rho1: float, rho2: float, a_acc: float,
                              b_min_correct: float, b_min: float) -> float:  # fmt: skip
    """RSS safe distance for two cars driving towards each other (Def. 2; car 1 in its correct lane)."""
    v1, v2 = abs(v1), abs(v2)
    v1r, v2r = v1 + rho1 * a_acc, v2 + rho2 * a_acc
    d1 = (v1 + v1r) / 2 * rho1 + v1r**2 / (2 * b_min_correct)
    d2 = (v2 + v2r) / 2 * rho2 + v2r**2 / (2 * b_min)
    return d1 + d2


def rss_lateral(v1: Any, v2: Any, rho: float, a_lat: float, b_lat_min: float, mu: float) -> Any:
    """RSS lateral safe distance (Def. 4): car 1 on the left moving with lateral speed v1 towards car 2."""
    v1r, v2r = v1 + rho * a_lat, v2 - rho * a_lat
    d = ((2 * v1 + rho * a_lat) / 2 * rho + v1r * v1r / (2 * b_lat_min)
         - ((2 * v2 - rho * a_lat) / 2 * rho - v2r * v2r / (2 * b_lat_min)))  # fmt: skip
    return mu + fmax(d, 0.0)


def _lon_same_code(va: float, vn: float, p: FeasibilityParams) -> float:
    # phys_safe.phys_safe_same_lane: 0 if the rear car is not faster, else max(d_stop, d_equal)
    if va <= vn + p.eps:
        return 0.0
    d_stop = abs(vn**2 / (2.0 * (p.a_lon_npc + p.eps)) - va**2 / (2.0 * (p.a_lon_av + p.eps)))
    d_equal = 0.0
    if not (p.a_lon_av <= p.a_lon_npc + p.eps or va <= vn + p.eps):
        d_equal = (va - vn) ** 2 / (2.0 * (p.a_lon_av - p.a_lon_npc))
    return max(d_stop, d_equal)


def _lat_code(va: float, vn: float, p: FeasibilityParams) -> float:
    # carla_env.safe_lat_distance + phys_safe.phys_safe_lat_same / phys_safe_lat_opp
    if np.sign(va) == np.sign(vn) and abs(va) > p.eps and abs(vn) > p.eps:
        v_rel = vn - va
        if v_rel <= p.eps:
            return 0.0
        if p.a_lat_av > p.a_lat_npc + p.eps:
            return v_rel**2 / (2.0 * (p.a_lat_av - p.a_lat_npc))
        return p.inf_dist
    return va**2 / (2.0 * (p.a_lat_av + p.eps)) + vn**2 / (2.0 * (p.a_lat_npc + p.eps))


_EPS_V = 0.05  # m/s: a car slower than this stands
_V_IN = 1.0  # m/s: scales how far inside the conflict region a car is into seconds (sigma < 0)


def is_crossing(dyaw: float, p: FeasibilityParams) -> bool:
    """True when two headings ``dyaw`` apart are crossing routes (neither same nor opposite)."""
    a = abs(dyaw)
    return math.radians(p.same_dir_deg) < a < math.pi - math.radians(p.same_dir_deg)


def _arrival(d: Any, v: Any, a: Any) -> Any:
    """Time to cover ``d`` >= 0 m from speed ``v`` >= 0 at constant acceleration ``a`` (inf if it stops first)."""
    disc = v * v + 2.0 * a * d
    den = v + sqrt(fmax(disc, 0.0))
    t = where((disc < 0.0) | (den <= 1e-9), math.inf, 2.0 * d / fmax(den, 1e-9))
    return where(d <= 0.0, 0.0, t)


def conflict_slack_lanes(dx: Any, dy: Any, dyaw: Any, v_e: Any, v_n: Any, a_n: Any,
                         size_e: tuple[Any, Any], size_n: tuple[Any, Any], b: float = 8.0,
                         a: float = 3.5) -> Any:  # fmt: skip
    """The ego's escape slack (s) against a car on a crossing route (RSS, routes of different geometry).

    Ego frame: the other car's centre at (``dx``, ``dy``), its heading ``dyaw``, its speed ``v_n`` and
    acceleration ``a_n`` along that heading; the ego's speed ``v_e`` along its own heading; half
    (length, width) ``size_e`` / ``size_n``. Both cars follow their heading rays; the conflict region
    is where each body overlaps the other's path. The other car occupies it during [t_in, t_out]
    (its current speed and acceleration; it never arrives if it stops first). The ego escapes by
    braking at ``b`` (stopping before the region, or entering it only after t_out) or by
    accelerating at ``a`` (leaving it before t_in). Returns the latest time from now at which one
    of these escapes can still start: negative when none can (how late it is), ``inf`` when there
    is no conflict (a car that has passed, stands or stops short of the region, or an ego that
    clears it at its current speed).
    """
    c, s = cos(dyaw), sin(dyaw)
    par = abs(s) < 1e-6
    s = where(par, 1.0, s)
    sa = abs(s)
    p_e, p_n = dx - dy * c / s, -dy / s  # distances to the crossing point along each heading
    h_e = size_e[0] + (size_n[1] + size_e[1] * abs(c)) / sa
    h_n = size_n[0] + (size_e[1] + size_n[1] * abs(c)) / sa
    d_e, x_e, d_n, x_n = p_e - h_e, p_e + h_e, p_n - h_n, p_n + h_n
    v_e, v_n = fmax(v_e, 0.0), fmax(v_n, 0.0)
    t_in, t_out = _arrival(fmax(d_n, 0.0), v_n, a_n), _arrival(x_n, v_n, a_n)
    none = par | (x_e <= 0.0) | (x_n <= 0.0) | (t_in == math.inf)
    moving = v_e >= _EPS_V
    vs = where(moving, v_e, 1.0)
    # yield: stop short of the region, or brake so as to enter it only after t_out
    t_stop = (d_e - vs * vs / (2.0 * b)) / vs
    w = 2.0 * b * (vs * t_out - d_e)
    q = vs - sqrt(fmax(w, 0.0))
    out = t_out != math.inf
    t_star = where(out & (w <= vs * vs), (d_e - (vs * vs - q * q) / (2.0 * b)) / vs, -math.inf)
    t_star = where(out & (d_e >= vs * t_out), math.inf, t_star)
    t_yield = where(moving, fmax(t_stop, t_star), math.inf)
    t_yield = where(d_e <= 0.0, d_e / fmax(v_e, _V_IN), t_yield)
    # rush: leave the region before t_in
    r = vs + sqrt(fmax(2.0 * a * (x_e - vs * t_in), 0.0))
    t_rush = where(x_e <= vs * t_in, math.inf, (x_e - (r * r - vs * vs) / (2.0 * a)) / vs)
    t_rush = where(moving, t_rush, t_in - sqrt(2.0 * fmax(x_e, 0.0) / a))
    return where(none, math.inf, fmax(t_yield, t_rush))


# ------------------------------------------------------------------------ sigma (lanes)


def _safe_distances_lanes(dx: Any, dy: Any, vax: Any, vay: Any, vnx: Any, vny: Any,
                          same_dir: Any, p: FeasibilityParams) -> tuple[Any, Any]:  # fmt: skip
    eps = p.eps
    if p.mode == "code":  # phys_safe.py: same lane / opposite / lateral
        stop_n = vnx * vnx / (2.0 * (p.a_lon_npc + eps))
        stop_a = vax * vax / (2.0 * (p.a_lon_av + eps))
        d_stop = abs(stop_n - stop_a)
        d_equal = 0.0
        if not p.a_lon_av <= p.a_lon_npc + eps:
            d_equal = (vax - vnx) * (vax - vnx) / (2.0 * (p.a_lon_av - p.a_lon_npc))
        lon_same = where(vax <= vnx + eps, 0.0, fmax(d_stop, d_equal))
        lon_opp = fmax(stop_a + stop_n, 0.0)
        d_x = where(same_dir, lon_same, lon_opp)
        lat_same_dir = ((vay > 0) == (vny > 0)) & ((vay < 0) == (vny < 0))
        lat_same_dir = lat_same_dir & (abs(vay) > eps) & (abs(vny) > eps)
        v_rel = vny - vay
        if p.a_lat_av > p.a_lat_npc + eps:
            lat_same = where(v_rel <= eps, 0.0, v_rel * v_rel / (2.0 * (p.a_lat_av - p.a_lat_npc)))
        else:
            lat_same = where(v_rel <= eps, 0.0, p.inf_dist)
        lat_opp = vay * vay / (2.0 * (p.a_lat_av + eps)) + vny * vny / (2.0 * (p.a_lat_npc + eps))
        return d_x, where(lat_same_dir, lat_same, lat_opp)
    a_acc, b_min, b_max = p.rss_a_acc, p.rss_b_min, p.rss_b_max
    ahead = rss_longitudinal_same(vax, vnx, p.rho_ego, a_acc, b_min, b_max)
    behind = rss_longitudinal_same(vnx, vax, p.rho_npc, a_acc, b_min, b_max)
    va, vn = abs(vax), abs(vnx)
    v1r, v2r = va + p.rho_ego * a_acc, vn + p.rho_npc * a_acc
    opp = ((va + v1r) / 2 * p.rho_ego + v1r * v1r / (2 * p.rss_b_min_correct)
           + (vn + v2r) / 2 * p.rho_npc + v2r * v2r / (2 * b_min))  # fmt: skip
    d_x = where(same_dir, where(dx >= 0, ahead, behind), opp)
    rho, lat = max(p.rho_ego, p.rho_npc), (p.rss_a_lat, p.rss_b_lat_min, p.rss_mu)
    # NPC on the left (dy >= 0): it is car 1, moving right (towards -y) with speed -vny
    d_y = where(dy >= 0, rss_lateral(-vny, -vay, rho, *lat), rss_lateral(vay, vny, rho, *lat))
    return d_x, d_y


def sigma_lanes(ego: tuple[Any, ...], npc: tuple[Any, ...], p: FeasibilityParams,
                a_n: Any = 0.0) -> Any:  # fmt: skip
    """sigma of the ego against one NPC: ``ego``/``npc`` = (x, y, yaw, vx, vy, half_l, half_w) lanes;
    ``a_n`` the NPC's acceleration along its heading (read by ``crossing="conflict"`` only)."""
    x, y, yaw, evx, evy, L_av, W_av = ego
    nxp, nyp, nyaw, nvx, nvy, L_npc, W_npc = npc
    cy, sy = cos(yaw), sin(yaw)
    rx, ry = nxp - x, nyp - y
    dx, dy = cy * rx + sy * ry, -sy * rx + cy * ry
    vax, vay = cy * evx + sy * evy, -sy * evx + cy * evy
    vnx, vny = cy * nvx + sy * nvy, -sy * nvx + cy * nvy
    dyaw = (nyaw - yaw + math.pi) % (2 * math.pi) - math.pi
    cd, sd = cos(dyaw), sin(dyaw)
    same_rad = math.radians(p.same_dir_deg)
    cross = None
    if p.crossing == "conflict":
        cross = (abs(dyaw) > same_rad) & (abs(dyaw) < math.pi - same_rad)
        if any_(cross):
            v_n = vnx * cd + vny * sd
            slack = conflict_slack_lanes(dx, dy, dyaw, vax, v_n, a_n, (L_av, W_av), (L_npc, W_npc),
                                         p.cross_b_ego, p.cross_a_ego)  # fmt: skip
            conflict = clip(slack / p.cross_tau, -1.0, 1.0)
            if all_(cross):
                return conflict
    d_phys_x, d_phys_y = _safe_distances_lanes(dx, dy, vax, vay, vnx, vny, abs(dyaw) <= same_rad, p)
    c, s = abs(cd), abs(sd)
    d_e_x, d_e_y = abs(dx), abs(dy)
    d_n_xp, d_n_yp = abs(dx * cd + dy * sd), abs(-dx * sd + dy * cd)
    clear_e_x = L_av + c * L_npc + s * W_npc
    clear_e_y = W_av + c * W_npc + s * L_npc
    clear_n_xp = L_npc + c * L_av + s * W_av
    clear_n_yp = W_npc + c * W_av + s * L_av
    dphys_n_xp = c * d_phys_x + s * d_phys_y
    dphys_n_yp = s * d_phys_x + c * d_phys_y
    need_x = fmax(fmax(0.0, clear_e_x + d_phys_x - d_e_x), fmax(0.0, clear_n_xp + dphys_n_xp - d_n_xp))  # fmt: skip
    need_y = fmax(fmax(0.0, clear_e_y + d_phys_y - d_e_y), fmax(0.0, clear_n_yp + dphys_n_yp - d_n_yp))  # fmt: skip
    all_clear = (need_x == 0.0) & (need_y == 0.0)
    rel_x = where(dx >= 0, 1.0, -1.0) * (vax - vnx)
    rel_y = where(dy >= 0, 1.0, -1.0) * (vay - vny)
    close_x, close_y = rel_x > 0.0, rel_y > 0.0
    need_x = where((rel_x <= 0.0) & (d_e_x > fmax(clear_n_xp, clear_e_x)), 0.0, need_x)
    need_y = where((rel_y <= 0.0) & (d_e_y > fmax(clear_n_yp, clear_e_y)), 0.0, need_y)
    t_x = where(close_x & (need_x > 0), need_x / fmax(fmax(rel_x, 0.0), p.ttc_eps), math.inf)
    t_y = where(close_y & (need_y > 0), need_y / fmax(fmax(rel_y, 0.0), p.ttc_eps), math.inf)
    t = fmin(t_x, t_y)
    t = where(t == math.inf, 0.0, t)
    l_x = where(close_x & p.recover, 0.5 * p.a_lon_av * (t * t), 0.0)
    l_y = where(close_y & p.recover, 0.5 * p.a_lat_av * (t * t), 0.0)
    eps = p.eps
    nxh = fmax(0.0, need_x - l_x) / fmax(fmax(d_phys_x + clear_e_x, dphys_n_xp + clear_n_xp), eps)
    nyh = fmax(0.0, need_y - l_y) / fmax(fmax(d_phys_y + clear_e_y, dphys_n_yp + clear_n_yp), eps)
    if p.combine == "min":
        sigma = 1.0 - fmin(nxh, nyh)
    elif p.p_norm == 2.0:
        sigma = 1.0 - sqrt(nxh * nxh + nyh * nyh)
    else:
        sigma = 1.0 - (nxh**p.p_norm + nyh**p.p_norm) ** (1.0 / p.p_norm)
    sigma = where(all_clear, 1.0, sigma)
    sigma = where((d_phys_x >= 0.9 * p.inf_dist) | (d_phys_y >= 0.9 * p.inf_dist), -1.0, sigma)
    return sigma if cross is None or not any_(cross) else where(cross, conflict, sigma)


_ONE = scalar_twins([rss_longitudinal_same, rss_lateral, _arrival, conflict_slack_lanes,
                     _safe_distances_lanes, sigma_lanes], globals())  # fmt: skip
sigma_lanes_one = _ONE["sigma_lanes"]


conflict_slack = _ONE["conflict_slack_lanes"]  # conflict_slack_lanes for one pair (floats)
conflict_slack_batch = conflict_slack_lanes  # for arrays (N,)


def sigma_one(ego: tuple[float, ...], npc: tuple[float, ...], p: FeasibilityParams,
              same_dir_rad: float | None = None, a_n: float = 0.0) -> float:  # fmt: skip
    """sigma for one (ego, NPC) pair present: [x, y, yaw, vx, vy, half_l, half_w] each
    (``same_dir_rad`` is ``radians(p.same_dir_deg)``, accepted for older callers)."""
    return sigma_lanes_one(ego, npc, p, a_n)


def sigma_batch(ego: np.ndarray, npc: np.ndarray, present: np.ndarray,
                p: FeasibilityParams | None = None,
                npc_acc: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """sigma for a batch: ``ego`` and ``npc`` are (N, 7) arrays [x, y, yaw, vx, vy, half_l, half_w].

    ``present`` (N,) bool marks rows that have an NPC (others get 0.0, like the release).
    Infinite safe distances give -1.0 (the release's ``None`` mapped as the env does).
    ``npc_acc`` (N,): the NPC's acceleration along its heading (read by ``crossing="conflict"`` only).
    """
    p = p or FeasibilityParams()
    a_n = 0.0 if npc_acc is None else np.asarray(npc_acc, np.float64)
    sig = sigma_lanes(tuple(ego.T), tuple(npc.T), p, a_n)
    return np.where(present, sig, 0.0)


# ------------------------------------------------------------------------ sigma, reference


def _safe_distances(dx: float, dy: float, vax: float, vay: float, vnx: float, vny: float,
                    dyaw: float, p: FeasibilityParams) -> tuple[float, float]:  # fmt: skip
    same_dir = abs(dyaw) <= math.radians(p.same_dir_deg)
    if p.mode == "code":
        if same_dir:
            d_x = _lon_same_code(vax, vnx, p)
        else:  # phys_safe.phys_safe_opposite: both stopping distances
            d_x = vax**2 / (2.0 * (p.a_lon_av + p.eps)) + vnx**2 / (2.0 * (p.a_lon_npc + p.eps))
        return d_x, _lat_code(vay, vny, p)
    # Full RSS: rear/front by the sign of dx; lateral with the NPC on the left when dy > 0.
    if same_dir:
        rear, front, rho = (vax, vnx, p.rho_ego) if dx >= 0 else (vnx, vax, p.rho_npc)
        d_x = float(rss_longitudinal_same(rear, front, rho, p.rss_a_acc, p.rss_b_min, p.rss_b_max))
    else:
        d_x = rss_longitudinal_opposite(vax, vnx, p.rho_ego, p.rho_npc, p.rss_a_acc,
                                        p.rss_b_min_correct, p.rss_b_min)  # fmt: skip
    v1, v2 = (-vny, -vay) if dy >= 0 else (vay, vny)
    rho = max(p.rho_ego, p.rho_npc)
    return d_x, float(rss_lateral(v1, v2, rho, p.rss_a_lat, p.rss_b_lat_min, p.rss_mu))


def sigma_reference(  # the release's function, line by line
    ego: BodyState, npc: BodyState | None, p: FeasibilityParams | None = None
) -> float | None:
    """sigma between the ego and one NPC, line by line as ``_get_phys_safe`` in the release.

    Returns ``None`` where the released code returns ``None`` (an infinite safe distance; the
    environment then reports sigma = -1), ``0.0`` with no NPC, else ``1 - ||(n_x, n_y)||_p``.
    """
    p = p or FeasibilityParams()
    if npc is None:
        return 0.0
    c_yaw, s_yaw = math.cos(ego.yaw), math.sin(ego.yaw)
    rx, ry = npc.x - ego.x, npc.y - ego.y
    dx, dy = c_yaw * rx + s_yaw * ry, -s_yaw * rx + c_yaw * ry
    vax, vay = c_yaw * ego.vx + s_yaw * ego.vy, -s_yaw * ego.vx + c_yaw * ego.vy
    vnx, vny = c_yaw * npc.vx + s_yaw * npc.vy, -s_yaw * npc.vx + c_yaw * npc.vy
    dyaw = (npc.yaw - ego.yaw + math.pi) % (2 * math.pi) - math.pi
    if p.crossing == "conflict" and is_crossing(dyaw, p):
        v_n = vnx * math.cos(dyaw) + vny * math.sin(dyaw)
        a_n = npc.ax * math.cos(npc.yaw) + npc.ay * math.sin(npc.yaw)
        size_e, size_n = (ego.half_length, ego.half_width), (npc.half_length, npc.half_width)
        slack = conflict_slack(dx, dy, dyaw, vax, v_n, a_n, size_e, size_n, p.cross_b_ego,
                               p.cross_a_ego)  # fmt: skip
        return min(max(slack / p.cross_tau, -1.0), 1.0)

    d_phys_x, d_phys_y = _safe_distances(dx, dy, vax, vay, vnx, vny, dyaw, p)
    if d_phys_x >= 0.9 * p.inf_dist or d_phys_y >= 0.9 * p.inf_dist:
        return None

    L_av, W_av, L_npc, W_npc = ego.half_length, ego.half_width, npc.half_length, npc.half_width
    c, s = abs(math.cos(dyaw)), abs(math.sin(dyaw))
    d_e_x, d_e_y = abs(dx), abs(dy)
    d_n_xp = abs(dx * math.cos(dyaw) + dy * math.sin(dyaw))
    d_n_yp = abs(-dx * math.sin(dyaw) + dy * math.cos(dyaw))
    clear_e_x = L_av + c * L_npc + s * W_npc
    clear_e_y = W_av + c * W_npc + s * L_npc
    clear_n_xp = L_npc + c * L_av + s * W_av
    clear_n_yp = W_npc + c * W_av + s * L_av

    def d_phys_on(ux: float, uy: float) -> float:
        return abs(ux) * d_phys_x + abs(uy) * d_phys_y

    dphys_e_x, dphys_e_y = d_phys_on(1.0, 0.0), d_phys_on(0.0, 1.0)
    dphys_n_xp = d_phys_on(math.cos(dyaw), math.sin(dyaw))
    dphys_n_yp = d_phys_on(-math.sin(dyaw), math.cos(dyaw))
    need_x = max(max(0.0, -(d_e_x - clear_e_x - dphys_e_x)),
                 max(0.0, -(d_n_xp - clear_n_xp - dphys_n_xp)))  # fmt: skip
    need_y = max(max(0.0, -(d_e_y - clear_e_y - dphys_e_y)),
                 max(0.0, -(d_n_yp - clear_n_yp - dphys_n_yp)))  # fmt: skip
    if need_x == 0.0 and need_y == 0.0:
        return 1.0

    def closing(d: float, va: float, vn: float) -> tuple[bool, float]:
        rel = (1.0 if d >= 0 else -1.0) * (va - vn)
        return rel > 0.0, max(0.0, rel)

    close_x, dvx = closing(dx, vax, vnx)
    close_y, dvy = closing(dy, vay, vny)
    if not close_x and abs(dx) > max(clear_n_xp, clear_e_x):
        need_x = 0.0
    if not close_y and abs(dy) > max(clear_n_yp, clear_e_y):
        need_y = 0.0
    t_x = need_x / max(dvx, p.ttc_eps) if close_x and need_x > 0 else math.inf
    t_y = need_y / max(dvy, p.ttc_eps) if close_y and need_y > 0 else math.inf
    t = min(t_x, t_y)
    if not math.isfinite(t):
        t = 0.0
    l_x = 0.5 * p.a_lon_av * t**2 if close_x and p.recover else 0.0
    l_y = 0.5 * p.a_lat_av * t**2 if close_y and p.recover else 0.0
    need_x_hat, need_y_hat = max(0.0, need_x - l_x), max(0.0, need_y - l_y)
    nx = need_x_hat / max(max(dphys_e_x + clear_e_x, dphys_n_xp + clear_n_xp), p.eps)
    ny = need_y_hat / max(max(dphys_e_y + clear_e_y, dphys_n_yp + clear_n_yp), p.eps)
    if p.combine == "min":
        return 1.0 - min(nx, ny)
    return 1.0 - (nx**p.p_norm + ny**p.p_norm) ** (1.0 / p.p_norm)


# ------------------------------------------------------------------------ TTC risk


def ttc_lanes(rx: Any, ry: Any, rvx: Any, rvy: Any, present: Any) -> tuple[Any, Any, Any, Any]:
    """Centre-to-centre distance, closing speed (>= 0), TTC (inf when not closing) and the
    position-velocity dot product of an NPC at (``rx``, ``ry``) moving at (``rvx``, ``rvy``)
    relative to the ego, as ``_get_adv_reward`` computes them (lanes)."""
    dist = fmax(hypot(rx, ry), 1e-3)
    dot = rx * rvx + ry * rvy
    closing = fmax(0.0, -dot / dist)
    ttc = where((closing > 0) & present, dist / where(closing > 0, closing, 1.0), math.inf)
    return dist, closing, ttc, dot


def ttc_risk(ttc: Any, w_ttc: float = 2.0, horizon: float = 2.5) -> Any:
    """The pre-Phi risk reward ``w_ttc / (1 + TTC / horizon)`` (0 when not closing); rlconfig
    ``adv_reward`` (lanes)."""
    return where(isfinite(ttc), w_ttc / (1.0 + ttc / horizon), 0.0)


_TTC_ONE = scalar_twins([ttc_lanes, ttc_risk], globals())
ttc_lanes_one, ttc_risk_one = _TTC_ONE["ttc_lanes"], _TTC_ONE["ttc_risk"]


def ttc_batch(ego_xy: np.ndarray, ego_v: np.ndarray, npc_xy: np.ndarray, npc_v: np.ndarray,
              present: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(dist, closing, ttc) of :func:`ttc_lanes` for inputs (N, 2) (``present`` (N,))."""
    rel, vrel = npc_xy - ego_xy, npc_v - ego_v
    return ttc_lanes(rel[:, 0], rel[:, 1], vrel[:, 0], vrel[:, 1], present)[:3]


ttc_risk_batch = ttc_risk  # for arrays (N,)
