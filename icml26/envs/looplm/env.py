"""``icml26/LoopReasoning-v0``: one-step verifiable reasoning problems for (looped) language models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from icml26.envs._checks import check_render_mode
from icml26.envs.looplm.tasks import Problem, ProblemSampler, make_generator
from icml26.envs.looplm.tokenizer import CHARSET, CharTokenizer

ANSWER_SLACK = 4  # the action space admits answers this many characters longer than any gold one


class LoopReasoningEnv(gym.Env):
    """
    ## Description
    Each episode is one problem and one answer. ``reset(seed=s)`` draws a problem of the chosen
    task (addition in the reversed-digit format, multiplication, chained sums, parity, counting or
    a short word problem) from the chosen split; ``step(answer)`` scores the answer with an exact,
    verifiable reward and ends the episode. Train and held-out test problems are disjoint (a
    stable hash of the prompt decides the split; see :mod:`icml26.envs.looplm.tasks`).

    GRPO-style training needs groups: :meth:`sample_group` draws ``G`` problems at once,
    :meth:`score_group` scores ``G`` completions of the current prompt, :meth:`score` scores
    completions against any problems, and :meth:`encode` pads prompts into token arrays.

    ## Action Space
    ``Text(max_answer_len + 4, min_length=0, charset=CHARSET)``: the answer text. ``step`` also
    accepts a sequence of token ids (decoded up to the first EOS). ``step`` checks the answer
    against this space first: one longer than ``max_length`` or with characters outside
    ``CHARSET`` raises ``ValueError`` and the episode stays open. Any answer in the space is
    scored; a malformed one (empty, non-numeric) scores 0. (:meth:`score` and
    :meth:`score_group` score any string, out-of-space ones included, and never raise.)

    ## Observation Space
    ``Dict(tokens=Box(0, vocab_size - 1, (max_prompt_len,), int64), length=Discrete(max_prompt_len
    + 1))``: the prompt as character token ids (``CharTokenizer``: PAD 0, EOS 1, then
    ``0-9 + - * = ? . , space a-z '``; right-padded with PAD; ``length`` real tokens).
    The prompt text is ``info["prompt"]`` (from ``reset`` and ``step``); it stays out of the
    observation because Gymnasium's shared-memory vector envs do not round-trip ``Text`` values.

    ## Rewards
    1.0 when the answer (surrounding spaces stripped) equals the gold answer text exactly, else 0.

    ## Starting State
    A problem drawn with ``self.np_random`` from the split, rejecting the other split's problems.

    ## Episode End
    Terminated after the one ``step``; ``info`` then holds ``gold`` (answer text), ``value`` (its
    number), ``correct``, ``malformed`` (the answer is not a number) and ``parsed`` (the number the
    answer states, -1 when malformed).

    ## Arguments
    ``gym.make("icml26/LoopReasoning-v0", task="addition", split="train", test_fraction=0.2,
    render_mode=None | "ansi", **knobs)`` with the task's difficulty knobs, e.g. ``digits=3``,
    ``terms=3``, ``digits_a=2, digits_b=2``, ``length=12``, ``max_value=50, ops="+-*"``,
    ``reverse=False``.

    ## Ecosystem
    ``icml26.integrations.sb3.wrap(env)`` applies ``TokenizedText``: the answer becomes a
    ``MultiDiscrete`` array of character ids (0 ends it); the observation is already numeric.

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, icml26
    >>> env = gym.make("icml26/LoopReasoning-v0", task="addition", digits=2)
    >>> obs, info = env.reset(seed=0)
    >>> info["prompt"]
    '56+34='
    >>> obs, reward, terminated, truncated, info = env.step("09")  # 56 + 34 = 90, digits reversed
    >>> print(reward, info["gold"], info["value"], terminated)
    1.0 09 90 True
    """

    metadata = {
        "render_modes": ["ansi"],
        "render_fps": 1,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        task: str = "addition",
        split: str = "train",
        test_fraction: float = 0.2,
        render_mode: str | None = None,
        **knobs: Any,
    ) -> None:
        check_render_mode("LoopReasoning-v0", render_mode, self.metadata["render_modes"])
        self.render_mode = render_mode
        self.task_name = task
        self.generator = make_generator(task, **knobs)
        self.sampler = ProblemSampler(self.generator, split, test_fraction)
        self.split = split
        self.tokenizer = CharTokenizer()
        self.max_prompt_len = self.generator.max_prompt_len
        self.max_answer_len = self.generator.max_answer_len
        v = self.tokenizer.vocab_size
        self.observation_space = spaces.Dict(
            {
                "tokens": spaces.Box(0, v - 1, shape=(self.max_prompt_len,), dtype=np.int64),
                "length": spaces.Discrete(self.max_prompt_len + 1),
            }
        )
        self.action_space = spaces.Text(
            self.max_answer_len + ANSWER_SLACK, min_length=0, charset=CHARSET
        )
        self._problem: Problem | None = None
        self._done = True
        self._last_answer: str | None = None

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self._problem = self.sampler.sample(self.np_random)
        self._done, self._last_answer = False, None
        return self._obs(self._problem), {
            "prompt": self._problem.prompt,
            "task": self.task_name,
            "split": self.split,
        }

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._problem is None or self._done:
            raise RuntimeError(
                "LoopReasoning-v0: call reset() before step() (episodes last one step)"
            )
        answer = self._answer_text(action)
        space = self.action_space
        if len(answer) > space.max_length:
            raise ValueError(
                f"LoopReasoning-v0: the answer has {len(answer)} characters, more than the "
                f"{space.max_length} of the action space {space} (the episode stays open)"
            )
        foreign = sorted(set(answer) - space.character_set)
        if foreign:
            raise ValueError(
                f"LoopReasoning-v0: the answer has characters {foreign[:10]} outside the charset "
                f"of the action space {space} (the episode stays open)"
            )
        problem = self._problem
        reward = self.generator.score(answer, problem)
        self._done, self._last_answer = True, answer
        parsed = self.generator.parse(answer)
        info = {
            "gold": problem.answer,
            "value": problem.value,
            "correct": bool(reward == 1.0),
            "malformed": parsed is None,
            "parsed": -1 if parsed is None else parsed,
            "prompt": problem.prompt,
        }
        return self._obs(problem), float(reward), True, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._problem is None:
            return None
        ans = "" if self._last_answer is None else self._last_answer
        return f"{self._problem.prompt}{ans}"

    # ------------------------------------------------------------------ batched entry points
    @property
    def problem(self) -> Problem | None:
        """The current problem (None before the first reset)."""
        return self._problem

    def sample_group(self, n: int, seed: int | None = None) -> list[Problem]:
        """``n`` problems of this env's task and split: from ``seed`` if given, else from
        ``self.np_random`` (which then advances)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"LoopReasoning-v0.sample_group: n must be a positive int, got {n!r}")
        rng = self.np_random if seed is None else np.random.default_rng(seed)
        return self.sampler.batch(int(n), rng)

    def score(self, completions: Sequence[Any], problems: Sequence[Problem]) -> np.ndarray:
        """Rewards of ``completions[i]`` (text or token ids) for ``problems[i]``, shape (n,)."""
        if len(completions) != len(problems):
            raise ValueError(
                f"LoopReasoning-v0.score: {len(completions)} completions for {len(problems)} problems"
            )
        return np.array(
            [self.generator.score(self._answer_text(c), p) for c, p in zip(completions, problems)],
            dtype=np.float64,
        )

    def score_group(self, completions: Sequence[Any], problem: Problem | None = None) -> np.ndarray:
        """Rewards of ``G`` completions of one prompt (default: the current problem), shape (G,)."""
        p = self._problem if problem is None else problem
        if p is None:
            raise RuntimeError(
                "LoopReasoning-v0.score_group: no current problem; call reset() first"
            )
        return self.score(completions, [p] * len(completions))

    def encode(
        self, problems: Sequence[Problem], side: str = "left"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Prompt token ids padded to ``max_prompt_len``: ``(ids (n, L) int64, mask (n, L) bool)``."""
        return self.tokenizer.pad_batch(
            [self.tokenizer.encode(p.prompt) for p in problems], self.max_prompt_len, side=side
        )

    # ------------------------------------------------------------------ helpers
    def _obs(self, problem: Problem) -> dict[str, Any]:
        ids = self.tokenizer.encode(problem.prompt)
        tokens = np.zeros(self.max_prompt_len, dtype=np.int64)
        tokens[: len(ids)] = ids
        return {"tokens": tokens, "length": len(ids)}

    def _answer_text(self, action: Any) -> str:
        if isinstance(action, str):
            return action
        if isinstance(action, (bytes, bytearray)):
            return action.decode("utf-8", errors="replace")
        if isinstance(action, (list, tuple, np.ndarray)) or _is_tensor(action):
            ids = np.asarray(action)
            if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
                raise ValueError(
                    "LoopReasoning-v0: expected an answer string from "
                    f"{self.action_space} or a 1-D sequence of int token ids, got shape {ids.shape} "
                    f"dtype {ids.dtype}"
                )
            return self.tokenizer.decode(ids.tolist())
        raise TypeError(
            f"LoopReasoning-v0: expected an answer string from {self.action_space} or a sequence of "
            f"token ids, got {type(action).__name__} {action!r:.60}"
        )


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "tolist")
