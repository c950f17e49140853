"""Task families over a parametric environment grid, and hidden success profiles (stochastic regime).

Environments are ``K`` grid points ``theta_k = (k + 1/2) / K`` of a parameter in [0, 1] (a
difficulty, a perturbation size, a scenario index). A family is described by a small JSON-able
dict that :func:`family_matrix` turns into its ``(m, K)`` member matrix:

``{"kind": "bumps", "K": 32, "centers": [...], "widths": [...]}``  discretized Gaussians
``{"kind": "points", "K": 16}``                                    every environment (point masses)
``{"kind": "uniform", "K": 256}``                                  one member: the average

Hidden systems (:func:`draw_profiles`): ``"dip"`` profiles ``f(theta) = top - depth *
exp(-(theta - c)^2 / (2 w^2))`` (a capability that fails in a narrow region: what a pooled test
misses), and ``"boundary"`` profiles, dips shifted so the worst member sits within 0.02 of tau
(the systems on which an invalid certificate shows).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "FAMILY_KINDS",
    "PROFILE_KINDS",
    "grid",
    "family_matrix",
    "member_values",
    "bumps_family",
    "draw_profiles",
]

FAMILY_KINDS = ("bumps", "points", "uniform")
PROFILE_KINDS = ("dip", "boundary")


def grid(k: int) -> np.ndarray:
    """The environment parameters ``theta_k = (k + 1/2) / K``."""
    return (np.arange(k) + 0.5) / k


def bumps_family(k: int, centers: Any, widths: Any) -> dict[str, Any]:
    """A family description of Gaussian bumps on the K-grid (widths broadcast to the centers)."""
    c = np.atleast_1d(np.asarray(centers, dtype=np.float64))
    w = np.broadcast_to(np.asarray(widths, dtype=np.float64), c.shape)
    return {"kind": "bumps", "K": int(k), "centers": c.tolist(), "widths": w.tolist()}


def family_matrix(desc: Mapping[str, Any]) -> np.ndarray:
    """The ``(m, K)`` member matrix of a family description (rows sum to 1)."""
    if not isinstance(desc, Mapping) or desc.get("kind") not in FAMILY_KINDS:
        raise ValueError(f"family: expected a dict with kind in {FAMILY_KINDS}, got {desc!r:.120}")
    k = int(desc["K"])
    if k < 1:
        raise ValueError(f"family: K must be >= 1, got {k}")
    if desc["kind"] == "points":
        return np.eye(k)
    if desc["kind"] == "uniform":
        return np.full((1, k), 1.0 / k)
    c = np.asarray(desc["centers"], dtype=np.float64)
    w = np.asarray(desc["widths"], dtype=np.float64)
    if c.ndim != 1 or c.shape != w.shape or c.size < 1 or np.any(w <= 0):
        raise ValueError("family: bumps need equal-length centers and positive widths")
    th = grid(k)
    q = np.exp(-((th[None, :] - c[:, None]) ** 2) / (2.0 * w[:, None] ** 2))
    return q / q.sum(axis=1, keepdims=True)


def member_values(
    desc: Mapping[str, Any], members: np.ndarray | None, values: np.ndarray
) -> np.ndarray:
    """``members @ values`` (every member's mean of a per-environment quantity); point masses
    and the uniform member need no matrix (``members`` may be None: 2^n x 2^n for circuits)."""
    v = np.asarray(values, dtype=np.float64)
    if desc.get("kind") == "points":
        return v.copy()
    if desc.get("kind") == "uniform":
        return np.array([v.mean()])
    if members is None:
        members = family_matrix(desc)
    return members @ v


def _dips(rng: np.random.Generator, k: int, size: int) -> np.ndarray:
    th = grid(k)
    top = rng.uniform(0.93, 1.0, size)
    depth = rng.uniform(0.0, 0.5, size)
    center = rng.uniform(0.0, 1.0, size)
    width = np.exp(rng.uniform(np.log(0.01), np.log(0.1), size))
    dip = np.exp(-((th[None, :] - center[:, None]) ** 2) / (2.0 * width[:, None] ** 2))
    return np.clip(top[:, None] - depth[:, None] * dip, 0.0, 1.0)


def draw_profiles(
    rng: np.random.Generator,
    kind: str,
    members: np.ndarray,
    tau: float,
    size: int = 1,
) -> np.ndarray:
    """``size`` hidden success profiles ``(size, K)`` in [0, 1] for the family ``members``."""
    k = members.shape[1]
    if kind == "dip":
        return _dips(rng, k, size)
    if kind == "boundary":
        f = _dips(rng, k, size)
        target = tau + rng.uniform(-0.02, 0.02, size)
        # shift each profile so its worst member lands on target (exact unless clipping binds)
        for _ in range(20):
            worst = (f @ members.T).min(axis=1)
            f = np.clip(f + (target - worst)[:, None], 0.0, 1.0)
        return f
    raise ValueError(f"profile: expected one of {PROFILE_KINDS}, got {kind!r}")
