"""Top-down ``rgb_array`` view of one scene (Pillow): roads, lane markings, route, actors, lights."""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.envs.driving.scenarios import KIND_NONE, KIND_STATIC, KIND_WALKER, LAYOUTS

__all__ = ["render_topdown"]

_BG, _ROAD, _MARK, _CENTRE = (92, 140, 76), (70, 70, 74), (235, 235, 235), (240, 200, 40)
_EGO, _ADV, _OTHER, _STATIC = (40, 110, 230), (220, 50, 50), (230, 150, 40), (120, 120, 120)
_ROUTE, _WHITE, _DARK = (120, 200, 255), (255, 255, 255), (20, 20, 20)


def _dot(d: Any, p: tuple[float, float], r: float, fill: tuple[int, ...]) -> None:
    d.ellipse([p[0] - r, p[1] - r, p[0] + r, p[1] + r], fill=fill)


def render_topdown(world: Any, i: int = 0, size: int = 480, metres: float = 90.0) -> np.ndarray:
    """Draw scene ``i`` of a world, centred on the ego, ``metres`` across; returns (size, size, 3) uint8."""
    from PIL import Image, ImageDraw

    lay = LAYOUTS[int(world.scn[i])]
    scale = size / metres
    cx, cy = float(world.x[i, 0]), float(world.y[i, 0])

    def px(x: float, y: float) -> tuple[float, float]:
        return (size / 2 + (x - cx) * scale, size / 2 - (y - cy) * scale)

    img = Image.new("RGB", (size, size), _BG)
    d = ImageDraw.Draw(img)
    for x0, x1, y0, y1 in lay.rects:
        a, b = px(x0, y1), px(x1, y0)
        d.rectangle([a, b], fill=_ROAD)
    yc_main = lay.rects[0][2] + (lay.rects[0][3] - lay.rects[0][2]) / 2
    xj = lay.junction[0] if lay.junction is not None else None
    for x0, y0, x1, y1, style in lay.markings:
        centre = (y0 == y1 and abs(y0 - yc_main) < 1e-6) or (x0 == x1 and xj is not None and abs(x0 - xj) < 1e-6)  # fmt: skip
        colour = _CENTRE if centre else _MARK
        if style == 1:
            d.line([px(x0, y0), px(x1, y1)], fill=colour, width=2)
        else:
            length = float(np.hypot(x1 - x0, y1 - y0))
            n = int(length // 6)
            for k in range(n):
                t0, t1 = k * 6 / length, min((k * 6 + 3) / length, 1.0)
                ends = [px(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t) for t in (t0, t1)]
                d.line(ends, fill=colour, width=1)
    d.line([px(float(x), float(y)) for x, y in lay.route], fill=_ROUTE, width=1)
    for lx, ly, state in lay.lights:
        _dot(d, px(lx, ly), 4, (40, 200, 60) if state else (230, 40, 40))
    for j in range(world.x.shape[1]):
        kind = int(world.kind[i, j])
        if kind == KIND_NONE:
            continue
        colour = _EGO if j == 0 else _ADV if j == 1 else _STATIC if kind == KIND_STATIC else _OTHER
        L, W, h = float(world.length[i, j]), float(world.width[i, j]), float(world.yaw[i, j])
        x, y = float(world.x[i, j]), float(world.y[i, j])
        c, s = np.cos(h), np.sin(h)
        half = ((L / 2, W / 2), (L / 2, -W / 2), (-L / 2, -W / 2), (-L / 2, W / 2))
        if kind == KIND_WALKER:
            _dot(d, px(x, y), 3, colour)
        else:
            d.polygon([px(x + c * a - s * b, y + s * a + c * b) for a, b in half], fill=colour,
                      outline=_DARK)  # fmt: skip
            _dot(d, px(x + c * L / 2, y + s * L / 2), 2, _WHITE)
    sig = float(world.sigma_prev[i])
    d.rectangle([0, 0, size, 16], fill=_DARK)
    text = (f"scenario {lay.id}: {lay.name[:38]}  t={int(world.t[i]) * 0.1:4.1f}s  "
            f"v_ego={float(world.v[i, 0]):4.1f}  sigma={sig:+.2f}")  # fmt: skip
    d.text((4, 2), text, fill=_WHITE)
    return np.asarray(img, dtype=np.uint8)
