"""``icml26/ZeroSumMarkovGame-v0``: the max player's single-agent view of a zero-sum Markov game."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from icml26.envs._checks import check_render_mode
from icml26.envs.markov_games.game import TabularMarkovGame, check_policy, sample_categorical
from icml26.envs.markov_games.games import make_game

__all__ = ["ZeroSumMarkovGameEnv", "OPPONENTS", "DEFAULT_GAME"]

OPPONENTS = ("uniform", "nash", "best_response")
DEFAULT_GAME: dict[str, Any] = {
    "name": "random",
    "kwargs": {"S": 10, "A": 3, "B": 3, "H": 5, "seed": 0},
}


class ZeroSumMarkovGameEnv(gym.Env):
    """
    ## Description
    The agent is the max player of a finite-horizon two-player zero-sum Markov game
    (:class:`~icml26.envs.markov_games.game.TabularMarkovGame`: random games, matrix games,
    the 3-stage tree game, Littman's soccer) and faces a fixed opponent policy: ``uniform``,
    ``nash`` (the exact equilibrium's min player, so the expected return of any agent is at
    most the game value) or ``best_response`` (the exact best response to the policy the agent
    published with :meth:`publish_policy`, so the expected return is ``V^{mu,†}``, the
    agent's worst case). This is the view of the offline-learning benchmark
    (SOS-MD / ROSE, ICML 2026): a learned policy table is published and its worst case played.

    ## Action Space
    ``Discrete(A)``: the max player's action. Actions illegal at (h, s) (see
    ``info["action_mask"]``) raise ValueError; so do inf and non-integral numbers. Booleans and
    non-numbers raise TypeError.

    ## Observation Space
    ``MultiDiscrete([H + 1, S])``: ``[h, s]``, the step (0-based; H after the last move) and the
    state.

    ## Rewards
    ``r_h(s, a, b)`` with b the opponent's action (in ``info["opponent_action"]``); the return is
    the max player's payoff.

    ## Starting State
    ``s ~ initial``, h = 0.

    ## Episode End
    Terminated after H moves (the game's horizon).

    ## Arguments
    ``gym.make("icml26/ZeroSumMarkovGame-v0", game="random", game_kwargs={...},
    opponent="uniform" | "nash" | "best_response" | (H, S, B) array, agent_policy=None,
    player="max")``.
    ``game`` is a name (``icml26.envs.markov_games.game_names()``), a spec dict or a game.
    Publish the agent's policy (H, S, A) with ``env.unwrapped.publish_policy(mu)`` or
    ``reset(options={"policy": mu})``; until then the best response is to the uniform policy.
    The default game is ``random`` with S=10, A=B=3, H=5, seed 0 (the tasks' game).
    ``player="min"`` gives the min player's view instead (the mirror image: ``Discrete(B)``
    actions, reward ``-r_h(s, a, b)``, opponent policies over the max player's A actions,
    ``opponent="nash"`` the equilibrium's max player); the offline datasets' Minari export
    uses it for the min player's episodes.

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, icml26
    >>> env = gym.make("icml26/ZeroSumMarkovGame-v0", game="rps", opponent="nash")
    >>> obs, info = env.reset(seed=0)
    >>> print(obs, info["action_mask"])
    [0 0] [1 1 1]
    >>> obs, reward, terminated, truncated, info = env.step(0)  # rock
    >>> print(obs, reward, terminated, info["opponent_action"])
    [1 0] 0.0 True 0
    """

    metadata = {
        "render_modes": ["ansi"],
        "render_fps": 4,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        game: str | Mapping[str, Any] | TabularMarkovGame = DEFAULT_GAME["name"],
        game_kwargs: Mapping[str, Any] | None = None,
        opponent: Any = "uniform",
        agent_policy: Any | None = None,
        render_mode: str | None = None,
        player: str = "max",
    ) -> None:
        if player not in ("max", "min"):
            raise ValueError(f"ZeroSumMarkovGame-v0: player must be 'max' or 'min', got {player!r}")
        self.player = player
        self._other = "min" if player == "max" else "max"
        check_render_mode("ZeroSumMarkovGame-v0", render_mode, self.metadata["render_modes"])
        if game_kwargs is None and game == DEFAULT_GAME["name"]:
            game_kwargs = DEFAULT_GAME["kwargs"]
        self.game = make_game(game, **dict(game_kwargs or {}))
        self.render_mode = render_mode
        H, S, A, B = self.game.shape
        self.observation_space = spaces.MultiDiscrete([H + 1, S])
        self.action_space = spaces.Discrete(A if player == "max" else B)
        self._legal = self.game.legal(player)
        if isinstance(opponent, str):
            if opponent not in OPPONENTS:
                n_other = B if player == "max" else A
                raise ValueError(
                    f"ZeroSumMarkovGame-v0: opponent must be one of {OPPONENTS} or an "
                    f"(H, S, {'B' if player == 'max' else 'A'}) = {(H, S, n_other)} policy array, "
                    f"got {opponent!r}"
                )
            self.opponent_kind = opponent
            self._fixed_opponent: np.ndarray | None = None
        else:
            self.opponent_kind = "custom"
            self._fixed_opponent = check_policy(self.game, opponent, self._other, "opponent policy")
        self.agent_policy = self.game.uniform_policy(player)
        self.opponent_policy = self._make_opponent()
        if agent_policy is not None:
            self.publish_policy(agent_policy)
        self._h, self._s = H, 0  # no episode until reset()
        self._last: tuple[int, int, float] | None = None

    # ------------------------------------------------------------------ policies
    def publish_policy(self, mu: Any) -> None:
        """Publish the agent's policy table (H, S, A) (``(H, S, B)`` for ``player="min"``); a
        best-response opponent adapts to it."""
        self.agent_policy = check_policy(
            self.game, mu, self.player, "ZeroSumMarkovGame-v0 agent policy"
        )
        self.opponent_policy = self._make_opponent()

    def _make_opponent(self) -> np.ndarray:
        if self.opponent_kind == "uniform":
            return self.game.uniform_policy(self._other)
        if self.opponent_kind == "nash":
            from icml26.envs.markov_games.metrics import nash_equilibrium

            eq = nash_equilibrium(self.game)
            return np.array(eq.nu if self.player == "max" else eq.mu)
        if self.opponent_kind == "best_response":
            from icml26.envs.markov_games.metrics import best_response_to_max, best_response_to_min

            if self.player == "min":
                return best_response_to_min(self.game, self.agent_policy, validate=False)[1]
            return best_response_to_max(self.game, self.agent_policy, validate=False)[1]
        assert self._fixed_opponent is not None
        return self._fixed_opponent

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if options and "policy" in options:
            self.publish_policy(options["policy"])
        self._h = 0
        self._s = int(sample_categorical(self.game.initial[None], self.np_random.random(1))[0])
        self._last = None
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._h >= self.game.H:
            raise RuntimeError(
                "ZeroSumMarkovGame-v0: call reset() before step() (step() after the episode ended "
                "or before the first reset)"
            )
        own = self._check_action(action)
        h, s = self._h, self._s
        other = int(
            sample_categorical(self.opponent_policy[h, s][None], self.np_random.random(1))[0]
        )
        a, b = (own, other) if self.player == "max" else (other, own)
        r = float(self.game.rewards[h, s, a, b])
        self._s = int(
            sample_categorical(self.game.transitions[h, s, a, b][None], self.np_random.random(1))[0]
        )
        self._h = h + 1
        self._last = (a, b, r)
        info = self._info()
        info["opponent_action"] = other
        return self._obs(), r if self.player == "max" else -r, self._h >= self.game.H, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        from icml26.envs.markov_games.render import render_text

        return render_text(self.game, self._h, self._s, self._last)

    # ------------------------------------------------------------------ helpers
    def _obs(self) -> np.ndarray:
        return np.array([self._h, self._s], dtype=np.int64)

    def _info(self) -> dict[str, Any]:
        h = min(self._h, self.game.H - 1)
        return {
            "step": self._h,
            "state": self._s,
            "action_mask": self._legal[h, self._s].astype(np.int8),
        }

    def _check_action(self, action: Any) -> int:
        if isinstance(action, (bool, np.bool_)):
            raise TypeError(
                f"ZeroSumMarkovGame-v0: expected an int action in {self.action_space}, got the "
                f"boolean {action!r}"
            )
        try:
            a = int(action)
        except OverflowError:
            raise ValueError(
                f"ZeroSumMarkovGame-v0: expected a finite int action in {self.action_space}, got {action!r}"
            ) from None
        except (TypeError, ValueError):
            raise TypeError(
                f"ZeroSumMarkovGame-v0: expected an action in {self.action_space}, got {action!r}"
            ) from None
        if np.ndim(action) != 0 or a != action or not 0 <= a < self.action_space.n:
            raise ValueError(
                f"ZeroSumMarkovGame-v0: expected an action in {self.action_space}, got {action!r}"
            )
        if not self._legal[self._h, self._s, a]:
            raise ValueError(
                f"ZeroSumMarkovGame-v0: action {a} is illegal at step {self._h}, state {self._s}; "
                f"legal actions {np.flatnonzero(self._legal[self._h, self._s]).tolist()}"
            )
        return a
