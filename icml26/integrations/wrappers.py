"""Wrappers that give every ``icml26/`` env spaces the mainstream RL libraries accept.

Stable-Baselines3 (and most deep-RL code) wants finite Box actions, fixed-size numeric
observations and no ``Text`` or ``Dict`` actions. Three envs families need a view:

* :class:`NormalizedAction` -- a ``Box(-inf, inf)`` action (Boltzmann configurations, weather
  forecasts) becomes ``Box(-1, 1)``, mapped affinely onto the finite bounds the env documents in
  ``env.unwrapped.action_bounds``.
* :class:`TokenizedText` -- ``Text`` observations and actions (LoopReasoning, ReasoningGym)
  become ``MultiDiscrete([len(charset) + 1] * max_length)`` token arrays: id 0 ends the text
  (padding), id ``i + 1`` is the ``i``-th character of the space's sorted charset.
* :class:`FlattenDictSpaces` -- ``Dict`` observations and actions (SpaCE) become flat ``Box``
  vectors with :func:`gymnasium.spaces.flatten` (one-hot for discrete parts).

:func:`icml26.integrations.sb3.wrap` picks the ones an env needs. None of them changes the
env's dynamics or rewards; each rejects input outside its own space with a ``ValueError``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = [
    "NormalizedAction",
    "TokenizedText",
    "FlattenDictSpaces",
    "text_to_tokens",
    "tokens_to_text",
]


def _name(env: gym.Env[Any, Any]) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped).__name__


class NormalizedAction(gym.ActionWrapper):
    """``Box(-1, 1)`` actions mapped onto ``[low, high]``: ``x = low + (a + 1) / 2 (high - low)``.

    ``low``/``high`` default to ``env.unwrapped.action_bounds`` (each env documents its
    choice); they broadcast to the action shape and must be finite with ``low < high``. An action
    outside [-1, 1] (beyond float32 rounding) or with NaN raises ``ValueError``: nothing is clipped.
    """

    def __init__(self, env: gym.Env[Any, Any], low: Any = None, high: Any = None) -> None:
        super().__init__(env)
        inner = env.action_space
        if not isinstance(inner, spaces.Box):
            raise TypeError(
                f"NormalizedAction: {_name(env)} has action space {inner}, expected a Box"
            )
        if low is None or high is None:
            bounds = getattr(env.unwrapped, "action_bounds", None)
            if bounds is None:
                raise TypeError(
                    f"NormalizedAction: {_name(env)} documents no action_bounds; pass low and high"
                )
            low, high = bounds
        lo = np.broadcast_to(np.asarray(low, dtype=np.float64), inner.shape).copy()
        hi = np.broadcast_to(np.asarray(high, dtype=np.float64), inner.shape).copy()
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
            raise ValueError(
                f"NormalizedAction: bounds of {_name(env)} must be finite with low < high"
            )
        self.low, self.high = lo, hi
        self.action_space = spaces.Box(-1.0, 1.0, shape=inner.shape, dtype=np.float32)

    def action(self, action: Any) -> np.ndarray:
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self.action_space.shape:
            raise ValueError(
                f"NormalizedAction: expected an action of shape {self.action_space.shape} in "
                f"[-1, 1], got shape {a.shape}"
            )
        if not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1.0 + 1e-6):
            raise ValueError(
                f"NormalizedAction: actions must be finite and in [-1, 1], got min "
                f"{np.nanmin(a) if a.size else 0:.4g}, max {np.nanmax(a) if a.size else 0:.4g}"
            )
        x = self.low + (np.clip(a, -1.0, 1.0) + 1.0) * 0.5 * (self.high - self.low)
        return x.astype(self.env.action_space.dtype)

    def reverse_action(self, action: Any) -> np.ndarray:
        """The normalized action that maps to ``action`` (for logging or imitation data)."""
        x = np.asarray(action, dtype=np.float64)
        return (2.0 * (x - self.low) / (self.high - self.low) - 1.0).astype(np.float32)


def _token_space(text: spaces.Text) -> spaces.MultiDiscrete:
    return spaces.MultiDiscrete(
        np.full(text.max_length, len(text.character_list) + 1, dtype=np.int64)
    )


def text_to_tokens(text: str, space: spaces.Text) -> np.ndarray:
    """``text`` as ``(max_length,)`` int64 ids of ``space``'s charset (0-padded)."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string in {space}, got {type(text).__name__}")
    if len(text) > space.max_length:
        raise ValueError(
            f"text of {len(text)} characters exceeds max_length {space.max_length} of {space}"
        )
    bad = sorted(set(text) - space.character_set)
    if bad:
        raise ValueError(f"text has characters {bad[:10]} outside the charset of {space}")
    out = np.zeros(space.max_length, dtype=np.int64)
    out[: len(text)] = [int(space.character_index(c)) + 1 for c in text]
    return out


def tokens_to_text(tokens: Any, space: spaces.Text) -> str:
    """Inverse of :func:`text_to_tokens`: ids up to the first 0, as text."""
    ids = np.asarray(tokens)
    n = len(space.character_list)
    if ids.shape != (space.max_length,) or ids.dtype.kind not in "iu":
        raise ValueError(
            f"expected ({space.max_length},) integer token ids, got shape {ids.shape} dtype {ids.dtype}"
        )
    if np.any(ids < 0) or np.any(ids > n):
        raise ValueError(f"token ids must lie in [0, {n}], got min {ids.min()}, max {ids.max()}")
    end = np.flatnonzero(ids == 0)
    ids = ids[: end[0]] if end.size else ids
    chars = space.character_list
    return "".join(chars[int(i) - 1] for i in ids)


class TokenizedText(gym.Wrapper):
    """``Text`` observation and/or action spaces as ``MultiDiscrete`` token arrays.

    Token id 0 ends the text (and pads it); id ``i + 1`` is ``space.character_list[i]``. Text
    shorter than the action space's ``min_length`` is passed on as is (the env decides).
    Non-Text spaces pass through unchanged.
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self._obs_text = (
            env.observation_space if isinstance(env.observation_space, spaces.Text) else None
        )
        self._act_text = env.action_space if isinstance(env.action_space, spaces.Text) else None
        if self._obs_text is None and self._act_text is None:
            raise TypeError(f"TokenizedText: {_name(env)} has no Text observation or action space")
        if self._obs_text is not None:
            self.observation_space = _token_space(self._obs_text)
        if self._act_text is not None:
            self.action_space = _token_space(self._act_text)

    def _obs(self, obs: Any) -> Any:
        return obs if self._obs_text is None else text_to_tokens(obs, self._obs_text)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._obs(obs), info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        if self._act_text is not None:
            action = tokens_to_text(action, self._act_text)
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._obs(obs), reward, terminated, truncated, info


def _unflatten_by_argmax(space: spaces.Space[Any], flat: np.ndarray) -> Any:
    """:func:`gymnasium.spaces.unflatten`, except that a one-hot block reads as its arg-max.

    Gymnasium's own needs exact one-hot blocks (a MultiDiscrete block with two non-zeros fails),
    which a continuous policy's output never is.
    """
    if isinstance(space, spaces.Dict):
        out, start = {}, 0
        for key, sub in space.spaces.items():
            n = spaces.flatdim(sub)
            out[key] = _unflatten_by_argmax(sub, flat[start : start + n])
            start += n
        return out
    if isinstance(space, spaces.Discrete):
        return space.start + np.int64(np.argmax(flat)).astype(space.dtype)
    if isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim == 1:
        bounds = np.cumsum(space.nvec)[:-1]
        idx = [int(np.argmax(block)) for block in np.split(flat, bounds)]
        return np.asarray(idx, dtype=space.dtype) + space.start
    return spaces.unflatten(space, flat)


class FlattenDictSpaces(gym.Wrapper):
    """``Dict`` observations and/or actions as flat ``Box`` vectors (:func:`gymnasium.spaces.flatten`).

    Discrete parts become one-hot blocks (so ``Discrete(3, start=1)`` is three 0/1 entries).
    A flat action is unflattened back to the env's ``Dict`` before ``step``; a discrete block
    reads as its arg-max, so any real vector a policy emits (not only exact one-hots) is an action.
    """

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self._obs_dict = (
            env.observation_space if isinstance(env.observation_space, spaces.Dict) else None
        )
        self._act_dict = env.action_space if isinstance(env.action_space, spaces.Dict) else None
        if self._obs_dict is None and self._act_dict is None:
            raise TypeError(
                f"FlattenDictSpaces: {_name(env)} has no Dict observation or action space"
            )
        if self._obs_dict is not None:
            self.observation_space = spaces.flatten_space(self._obs_dict)
        if self._act_dict is not None:
            self.action_space = spaces.flatten_space(self._act_dict)

    def _obs(self, obs: Any) -> Any:
        return obs if self._obs_dict is None else spaces.flatten(self._obs_dict, obs)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._obs(obs), info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        if self._act_dict is not None:
            flat = np.asarray(action, dtype=np.float64)
            if flat.shape != self.action_space.shape:
                raise ValueError(
                    f"FlattenDictSpaces: expected a flat action of shape {self.action_space.shape} "
                    f"(keys {list(self._act_dict.spaces)}), got shape {flat.shape}"
                )
            action = _unflatten_by_argmax(self._act_dict, flat)
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._obs(obs), reward, terminated, truncated, info
