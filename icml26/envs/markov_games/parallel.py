"""PettingZoo ``ParallelEnv`` for any tabular zero-sum Markov game (simultaneous moves).

from icml26.envs.markov_games import parallel_env
env = parallel_env(game="soccer", game_kwargs={"horizon": 10})
obs, infos = env.reset(seed=0)
obs, rewards, terminations, truncations, infos = env.step({"max_player": 0, "min_player": 4})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from icml26.envs._checks import check_render_mode
from icml26.envs.markov_games.game import TabularMarkovGame, sample_categorical
from icml26.envs.markov_games.games import make_game

__all__ = ["ZeroSumMarkovGameParallelEnv", "parallel_env", "AGENTS"]

AGENTS = ("max_player", "min_player")


class ZeroSumMarkovGameParallelEnv(ParallelEnv):
    """
    ## Description
    Two players move simultaneously in a finite-horizon zero-sum Markov game
    (:class:`~icml26.envs.markov_games.game.TabularMarkovGame`): at step h in state s the
    ``max_player`` picks a, the ``min_player`` picks b, the max player receives
    ``r_h(s, a, b)`` and the min player its negative, and the state moves to
    ``s' ~ P_h(. | s, a, b)``.

    ## Action Space
    ``Discrete(A)`` for ``max_player`` and ``Discrete(B)`` for ``min_player``. Illegal actions
    (games with masks, e.g. the tree game) raise ValueError; the observation's
    ``action_mask`` says which are legal. Booleans, non-integral or non-finite numbers are
    refused with a ``TypeError``/``ValueError`` naming the player and the space.

    ## Observation Space
    Both players see the full state: ``Dict(observation=MultiDiscrete([H + 1, S]),
    action_mask=MultiBinary(n_actions))`` with observation ``[h, s]`` (h = H after the last
    move).

    ## Rewards
    ``r_h(s, a, b)`` to ``max_player`` and ``-r_h(s, a, b)`` to ``min_player`` (zero-sum).

    ## Starting State
    ``s_1 ~ initial``, h = 0.

    ## Episode End
    Both players terminate after H joint moves (the game's horizon); nothing is truncated.

    ## Rendering
    ``ansi``: a status line; for soccer the board (A, B, ``*`` on the ball carrier, goal mouths).
    ``rgb_array``: the soccer field, or for other games the grid of states with the current one
    highlighted; a bar shows h / H. ``human`` prints the ``ansi`` frame.

    ## Arguments
    ``parallel_env(game="rps" | spec dict | TabularMarkovGame, game_kwargs={}, render_mode=None |
    "human" | "ansi" | "rgb_array")``.

    ## Version History
    * v0: initial version.
    """

    metadata = {
        "name": "zero_sum_markov_game_v0",
        "render_modes": ["human", "ansi", "rgb_array"],
        "render_fps": 4,
        "is_parallelizable": True,
    }

    def __init__(
        self,
        game: str | Mapping[str, Any] | TabularMarkovGame = "rps",
        game_kwargs: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        check_render_mode("zero_sum_markov_game_v0", render_mode, self.metadata["render_modes"])
        self.game = make_game(game, **dict(game_kwargs or {}))
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        H, S, A, B = self.game.shape
        self._obs_spaces = {
            agent: spaces.Dict(
                {
                    "observation": spaces.MultiDiscrete([H + 1, S]),
                    "action_mask": spaces.MultiBinary(n),
                }
            )
            for agent, n in zip(AGENTS, (A, B))
        }
        self._act_spaces = {AGENTS[0]: spaces.Discrete(A), AGENTS[1]: spaces.Discrete(B)}
        self._rng = np.random.default_rng()
        self._h, self._s = 0, 0
        self._last: tuple[int, int, float] | None = None

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._act_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(AGENTS)
        self._h = 0
        self._s = int(sample_categorical(self.game.initial[None], self._rng.random(1))[0])
        self._last = None
        return self._observations(), {a: {"step": 0, "state": self._s} for a in self.agents}

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        if not self.agents:
            raise RuntimeError(
                "zero_sum_markov_game_v0: step() after the episode ended; call reset()"
            )
        a = self._check_action(actions, AGENTS[0], self.game.legal_max)
        b = self._check_action(actions, AGENTS[1], self.game.legal_min)
        h, s = self._h, self._s
        r = float(self.game.rewards[h, s, a, b])
        self._s = int(
            sample_categorical(self.game.transitions[h, s, a, b][None], self._rng.random(1))[0]
        )
        self._h = h + 1
        self._last = (a, b, r)
        done = self._h >= self.game.H
        obs = self._observations()
        rewards = {AGENTS[0]: r, AGENTS[1]: -r}
        terms = {agent: done for agent in AGENTS}
        truncs = {agent: False for agent in AGENTS}
        infos = {
            agent: {"step": self._h, "state": self._s, "joint_action": (a, b)} for agent in AGENTS
        }
        if done:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def state(self) -> np.ndarray:
        return np.array([self._h, self._s], dtype=np.int64)

    def render(self) -> str | np.ndarray | None:
        from icml26.envs.markov_games.render import render_frame

        return render_frame(self.game, self.render_mode, self._h, self._s, self._last)

    def close(self) -> None:
        pass

    # ------------------------------------------------------------------ helpers
    def _observations(self) -> dict[str, Any]:
        h = min(self._h, self.game.H - 1)
        obs = np.array([self._h, self._s], dtype=np.int64)
        return {
            AGENTS[0]: {
                "observation": obs.copy(),
                "action_mask": self.game.legal_max[h, self._s].astype(np.int8),
            },
            AGENTS[1]: {
                "observation": obs.copy(),
                "action_mask": self.game.legal_min[h, self._s].astype(np.int8),
            },
        }

    def _check_action(self, actions: Mapping[str, Any], agent: str, legal: np.ndarray) -> int:
        if not isinstance(actions, Mapping) or agent not in actions:
            got = sorted(actions) if isinstance(actions, Mapping) else type(actions).__name__
            raise ValueError(
                f"zero_sum_markov_game_v0: step() needs an action for {agent!r} "
                f"(both players move every step), got {got}"
            )
        space = self._act_spaces[agent]
        value = actions[agent]
        if isinstance(value, (bool, np.bool_)):
            raise TypeError(
                f"zero_sum_markov_game_v0: {agent} action must be an int in {space}, got the boolean "
                f"{value!r}"
            )
        try:
            act = int(value)
        except OverflowError:
            raise ValueError(
                f"zero_sum_markov_game_v0: {agent} action must be a finite int in {space}, got {value!r}"
            ) from None
        except (TypeError, ValueError):
            raise TypeError(
                f"zero_sum_markov_game_v0: {agent} action must be an int in {space}, got {value!r}"
            ) from None
        if act != value or not space.contains(np.int64(act)):
            raise ValueError(
                f"zero_sum_markov_game_v0: {agent} action must be an int in {space}, got {value!r}"
            )
        if not legal[self._h, self._s, act]:
            raise ValueError(
                f"zero_sum_markov_game_v0: {agent} action {act} is illegal at step {self._h}, "
                f"state {self._s}; legal actions {np.flatnonzero(legal[self._h, self._s]).tolist()}"
            )
        return act


def parallel_env(
    game: str | Mapping[str, Any] | TabularMarkovGame = "rps",
    game_kwargs: Mapping[str, Any] | None = None,
    render_mode: str | None = None,
    **kwargs: Any,
) -> ZeroSumMarkovGameParallelEnv:
    """A PettingZoo ParallelEnv of ``game`` (a name from :func:`game_names`, a spec, or a game).

    Extra keyword arguments are passed to the game builder, e.g.
    ``parallel_env(game="random", S=10, H=5, seed=3)``.
    """
    return ZeroSumMarkovGameParallelEnv(game, {**dict(game_kwargs or {}), **kwargs}, render_mode)
