"""Pictures of a Markov game's state: Littman's soccer as a board, any other game as its state grid.

:func:`render_text` gives the ``ansi`` frame (a multi-line board for soccer, one status line
plus a state strip otherwise); :func:`render_rgb` gives the ``rgb_array`` frame (uint8, H x W x 3).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icml26.envs.markov_games.game import TabularMarkovGame

__all__ = ["soccer_layout", "soccer_position", "render_text", "render_rgb"]

_CELL = 24  # pixels per soccer cell / state cell


def soccer_layout(game: TabularMarkovGame) -> tuple[int, int] | None:
    """``(rows, cols)`` when ``game`` is Littman's soccer (from its spec), else None."""
    spec = getattr(game, "spec", None) or {}
    if spec.get("name") != "soccer":
        return None
    kw = spec.get("kwargs", {})
    return int(kw.get("rows", 4)), int(kw.get("cols", 5))


def soccer_position(rows: int, cols: int, s: int) -> tuple[tuple[int, int], tuple[int, int], int]:
    """State index -> ``(cell of A, cell of B, ball holder 0 = A / 1 = B)``, in the order of
    :func:`icml26.envs.markov_games.games.soccer` (A's cell, B's cell, ball)."""
    n = rows * cols
    if not 0 <= s < 2 * n * (n - 1):
        raise ValueError(f"soccer {rows}x{cols}: state must be in [0, {2 * n * (n - 1)}), got {s}")
    ball = s % 2
    pair = s // 2
    ia, jb = divmod(pair, n - 1)
    ib = jb if jb < ia else jb + 1  # B's cell skips A's
    return divmod(ia, cols), divmod(ib, cols), ball


def _goal_rows(rows: int) -> set[int]:
    return {r for r in range(rows) if abs(r - (rows - 1) / 2) <= 0.5}


def _status(game: TabularMarkovGame, h: int, s: int, last: tuple[int, int, float] | None) -> str:
    text = f"{game.name}: step {h}/{game.H}, state {s}"
    if last is not None:
        a, b, r = last
        na = game.action_names_max[a] if game.action_names_max else a
        nb = game.action_names_min[b] if game.action_names_min else b
        text += f" (last: max {na}, min {nb}, reward {r:+.3f})"
    return text


def render_text(
    game: TabularMarkovGame, h: int, s: int, last: tuple[int, int, float] | None = None
) -> str:
    """The ``ansi`` frame. Soccer: the board, A (max) and B (min) with ``*`` on the ball carrier,
    ``<`` / ``>`` marking the goal mouths A / B attack."""
    status = _status(game, h, s, last)
    layout = soccer_layout(game)
    if layout is None:
        return status
    rows, cols = layout
    pa, pb, ball = soccer_position(rows, cols, s)
    goals = _goal_rows(rows)
    border = "  +" + "-" * (3 * cols) + "+"
    lines = [status, border]
    for r in range(rows):
        cells = []
        for c in range(cols):
            if (r, c) == pa:
                cells.append(" A*" if ball == 0 else " A ")
            elif (r, c) == pb:
                cells.append(" B*" if ball == 1 else " B ")
            else:
                cells.append(" . ")
        left, right = ("<", ">") if r in goals else ("|", "|")
        lines.append(f"  {left}{''.join(cells)}{right}")
    lines.append(border)
    lines.append("  A = max player (scores through <), B = min player (scores through >), * = ball")
    return "\n".join(lines)


def _disc(
    img: np.ndarray, cy: float, cx: float, radius: float, colour: tuple[int, int, int]
) -> None:
    yy, xx = np.mgrid[0 : img.shape[0], 0 : img.shape[1]]
    img[(yy - cy) ** 2 + (xx - cx) ** 2 <= radius**2] = colour


def render_rgb(game: TabularMarkovGame, h: int, s: int) -> np.ndarray:
    """The ``rgb_array`` frame: the soccer field with both players and the ball, or for other
    games a grid of the S states (current one highlighted); a bar at the bottom shows h / H."""
    layout = soccer_layout(game)
    bar = 6
    if layout is not None:
        rows, cols = layout
        w = (cols + 2) * _CELL
        img = np.zeros(((rows * _CELL) + bar, w, 3), dtype=np.uint8)
        img[: rows * _CELL, _CELL : (cols + 1) * _CELL] = (40, 140, 60)  # the field
        for r in _goal_rows(rows):  # goal mouths: A attacks the left one, B the right one
            img[r * _CELL : (r + 1) * _CELL, :_CELL] = (200, 60, 60)
            img[r * _CELL : (r + 1) * _CELL, (cols + 1) * _CELL :] = (60, 90, 200)
        for k in range(rows + 1):
            img[min(k * _CELL, rows * _CELL - 1), _CELL : (cols + 1) * _CELL] = (230, 230, 230)
        for k in range(cols + 1):
            img[: rows * _CELL, min((k + 1) * _CELL, w - 1)] = (230, 230, 230)
        pa, pb, ball = soccer_position(rows, cols, s)
        for (r, c), colour in ((pa, (220, 40, 40)), (pb, (40, 70, 220))):
            _disc(img, (r + 0.5) * _CELL, (c + 1.5) * _CELL, _CELL * 0.38, colour)
        br, bc = pa if ball == 0 else pb
        _disc(img, (br + 0.5) * _CELL, (bc + 1.5) * _CELL, _CELL * 0.15, (255, 255, 255))
    else:
        side = max(1, math.ceil(math.sqrt(game.S)))
        n_rows = math.ceil(game.S / side)
        w = side * _CELL
        img = np.full((n_rows * _CELL + bar, w, 3), 255, dtype=np.uint8)
        for k in range(game.S):
            r, c = divmod(k, side)
            colour = (240, 150, 30) if k == s else (200, 200, 200)
            img[r * _CELL + 2 : (r + 1) * _CELL - 2, c * _CELL + 2 : (c + 1) * _CELL - 2] = colour
    filled = int(round(w * min(h, game.H) / max(game.H, 1)))
    img[-bar:, :] = (60, 60, 60)
    img[-bar:, :filled] = (250, 210, 40)
    return img


def render_frame(
    game: TabularMarkovGame,
    mode: str | None,
    h: int,
    s: int,
    last: tuple[int, int, float] | None = None,
) -> Any:
    """The frame of ``mode`` (``human`` prints the text and returns None)."""
    if mode == "ansi":
        return render_text(game, h, s, last)
    if mode == "rgb_array":
        return render_rgb(game, h, s)
    if mode == "human":
        print(render_text(game, h, s, last))
    return None
