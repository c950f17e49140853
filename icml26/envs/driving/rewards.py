"""The adversary's reward and its per-episode bookkeeping, for one scene (floats) or N (arrays).

A reward (``reward=``) is a lane function of the step (:mod:`.lanes`) registered in
:data:`REWARDS` (:func:`register_reward`):

* ``"released"``: ``r_t = risk_t``, what the release optimizes (Phi, or the TTC proxy before Phi
  is ready).
* ``"collision"`` (v1, v2): ``r_t = (risk_t - risk_{t-1}) + bonus * 1[collision at t and
  min_sigma_pre_t >= k]``. The shaping telescopes to ``risk_T - risk_0`` (at most 2 in size), so
  an avoidable collision is worth more than any episode without one and a collision the ego
  could not have avoided earns nothing extra: the optimum is a boundary-band collision.

``min_sigma_pre_t``: the minimum sigma from the reset up to ``RESPONSE_STEPS`` steps (1 s, RSS's
response time) before t. :class:`Band` holds it and the red-light count; :func:`band_step`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icml26.envs.driving.lanes import numpy_ops, scalar_twins

where, fmin, fmax = numpy_ops("where fmin fmax")

__all__ = ["RESPONSE_STEPS", "REWARDS", "register_reward", "Band", "band_reset", "band_step"]

RESPONSE_STEPS = 10  # 1 s: RSS's ego response time rho (CARLA's default); the band's window


def released(risk: Any, risk_prev: Any, collision: Any, avoidable: Any, sigma: Any, ttc: Any,
             bonus: float) -> Any:  # fmt: skip
    """``r_t = risk_t`` (the release's ``_get_scenario_moreward_vec``: risk each step)."""
    return risk


def collision(risk: Any, risk_prev: Any, collision: Any, avoidable: Any, sigma: Any, ttc: Any,
              bonus: float) -> Any:  # fmt: skip
    """Telescoping risk shaping plus ``bonus`` for an avoidable collision (v1, v2)."""
    return (risk - risk_prev) + where(avoidable, bonus, 0.0)


REWARDS: dict[str, Callable[..., Any]] = {"released": released, "collision": collision}
REWARDS_ONE = scalar_twins(list(REWARDS.values()), globals())  # their float bindings


def register_reward(name: str, fn: Callable[..., Any]) -> None:
    """Make ``reward=name`` pay ``fn(risk, risk_prev, collision, avoidable, sigma, ttc, bonus)``
    per step (lanes: write it with the operations of :mod:`.lanes` bound in its module, e.g.
    ``where, not_ = numpy_ops("where not_")``, so that it serves one scene and N)."""
    REWARDS[name] = fn
    REWARDS_ONE[name] = scalar_twins([fn], fn.__globals__)[fn.__name__]


class Band:
    """Per scene: the last RESPONSE_STEPS sigmas (oldest first), how many there are, their running
    minimum before the window, the previous risk and ego front, and the episode's sums."""

    __slots__ = ("ring", "count", "min_old", "risk_prev", "front_prev", "j_reward", "red_run",
                 "avoidable")  # fmt: skip

    def __init__(self, zero: Any) -> None:
        self.ring = [zero] * RESPONSE_STEPS
        self.count = self.min_old = self.risk_prev = self.front_prev = zero
        self.j_reward = self.red_run = self.avoidable = zero


def band_reset(B: Band, rows: Any, sigma: Any, risk: Any, front: Any) -> None:
    """Start the episodes of lanes ``rows`` (True: every lane) from ``sigma``, ``risk``, ``front``."""
    B.count = where(rows, 0, B.count)
    B.min_old, B.risk_prev = where(rows, sigma, B.min_old), where(rows, risk, B.risk_prev)
    B.front_prev = where(rows, front, B.front_prev)
    B.j_reward, B.red_run = where(rows, 0.0, B.j_reward), where(rows, 0.0, B.red_run)
    B.avoidable = where(rows, 0.0, B.avoidable)


def band_step(B: Band, collision: Any, sigma: Any, risk: Any, on: Any, k: float,
              reward: Callable[..., Any], bonus: float, ttc: Any, front: Any, j_entry: Any,
              light_before: Any) -> tuple[Any, Any, Any]:  # fmt: skip
    """One step of the lanes ``on`` (True: every lane): (reward (of the function ``reward``),
    avoidable collision, red-light violation). ``front``: the ego's front (route arc length)
    after the step; ``light_before``: its signal before it (0 red)."""
    out = on & (B.count >= RESPONSE_STEPS)
    B.min_old = where(out, fmin(B.min_old, B.ring[0]), B.min_old)
    nxt = B.ring[1:] + [sigma]
    B.ring = nxt if on is True else [where(on, b, a) for a, b in zip(B.ring, nxt)]
    B.count = where(on, fmin(B.count + 1, RESPONSE_STEPS), B.count)
    avoid = collision & on & (B.min_old >= k)
    rew = reward(risk, B.risk_prev, collision, avoid, sigma, ttc, bonus)
    rew = rew if on is True else where(on, rew, 0.0)
    B.risk_prev = where(on, risk, B.risk_prev)
    red = on & (light_before == 0) & (B.front_prev < j_entry) & (front >= j_entry)
    B.front_prev = where(on, front, B.front_prev)
    B.red_run = B.red_run + where(red, 1.0, 0.0)
    B.avoidable = fmax(B.avoidable, where(avoid, 1.0, 0.0))
    B.j_reward = B.j_reward + rew
    return rew, avoid, red


_ONE = scalar_twins([band_reset, band_step], globals())
band_reset_one, band_step_one = _ONE["band_reset"], _ONE["band_step"]
