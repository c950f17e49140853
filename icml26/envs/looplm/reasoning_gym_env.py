"""``icml26/ReasoningGym-v0``: any reasoning-gym task as a one-step text env (for real pretrained LMs).

reasoning-gym (PyPI ``reasoning-gym``, optional extra ``looplm``) generates its problems
procedurally and offline: ``create_dataset(name, size, seed, **config)`` and
``dataset.score_answer(answer, entry)``. Its English prompts suit a pretrained LM with a real
tokenizer, not the character model of :mod:`icml26.agents.looplm.model`.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from icml26._entry_points import require
from icml26.envs._checks import check_render_mode
from icml26.envs.looplm.tasks import SPLITS

ANSWER_CHARSET = string.printable


class ReasoningGymEnv(gym.Env):
    """
    ## Description
    One reasoning-gym problem per episode: ``reset(seed=s)`` draws an entry of the dataset's split,
    ``step(answer)`` returns reasoning-gym's own score of the answer and ends the episode.
    The dataset ``name`` of size ``2 * size`` is generated once (seeded by ``dataset_seed``):
    entries ``[0, size)`` form the train split and ``[size, 2 size)`` the test split, less any test
    entry whose question also occurs in the train split (so the splits share no question).

    ## Action Space
    ``Text(max_answer_len, min_length=0, charset=string.printable)``: the answer text. Any string
    is scored; one the scorer cannot read scores 0 (never an error).

    ## Observation Space
    ``Text(longest question, charset=the characters of the dataset's questions)``.

    ## Rewards
    ``dataset.score_answer(answer, entry)`` in [0, 1] (1 for a correct answer; some tasks give
    partial credit).

    ## Starting State
    An entry of the split drawn uniformly with ``self.np_random``.

    ## Episode End
    Terminated after one ``step``; ``info`` holds ``gold`` (the dataset's answer) and ``index``.

    ## Arguments
    ``gym.make("icml26/ReasoningGym-v0", name="basic_arithmetic", size=500, dataset_seed=0,
    split="train", max_answer_len=256, config=None)``; ``config`` is passed to ``create_dataset``.

    ## Ecosystem
    ``icml26.integrations.sb3.wrap(env)`` applies ``TokenizedText``: question and answer become
    ``MultiDiscrete`` arrays of character ids (0 ends the text).
    Needs the ``looplm`` extra (reasoning-gym, offline procedural problems). With
    ``gym.make_vec(..., vectorization_mode="async")`` pass ``vector_kwargs={"shared_memory":
    False}``: shared memory loses ``Text`` observations (a Gymnasium limitation).

    ## Version History
    * v0: initial version.

    ## Example
    >>> import gymnasium as gym, icml26
    >>> env = gym.make("icml26/ReasoningGym-v0", name="basic_arithmetic", size=40)
    >>> obs, info = env.reset(seed=0)
    >>> print(type(obs).__name__, info["split"], info["index"] < 40)
    str train True
    >>> obs, reward, terminated, truncated, info = env.step("no idea")  # unreadable: scores 0
    >>> print(reward, terminated, sorted(info))
    0.0 True ['correct', 'gold', 'index']
    """

    metadata = {
        "render_modes": ["ansi"],
        "render_fps": 1,
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }

    def __init__(
        self,
        name: str = "basic_arithmetic",
        size: int = 500,
        dataset_seed: int = 0,
        split: str = "train",
        max_answer_len: int = 256,
        config: dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"ReasoningGym-v0: split must be one of {SPLITS}, got {split!r}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"ReasoningGym-v0: size must be a positive int, got {size!r}")
        check_render_mode("ReasoningGym-v0", render_mode, self.metadata["render_modes"])
        rg = require("reasoning_gym", "looplm", "icml26/ReasoningGym-v0")
        self.name, self.split, self.render_mode = name, split, render_mode
        self.dataset = rg.create_dataset(
            name, size=2 * size, seed=dataset_seed, **dict(config or {})
        )
        entries = [self.dataset[i] for i in range(2 * size)]
        train_q = {e["question"] for e in entries[:size]}
        self._indices = (
            list(range(size))
            if split == "train"
            else [i for i in range(size, 2 * size) if entries[i]["question"] not in train_q]
        )
        if not self._indices:
            raise RuntimeError(
                f"ReasoningGym-v0: {name!r} has no test question outside the train split"
            )
        self._entries = {i: entries[i] for i in self._indices}
        questions = [self._entries[i]["question"] for i in self._indices]
        charset = "".join(sorted(set("".join(questions)) | set(ANSWER_CHARSET)))
        self.observation_space = spaces.Text(
            max(len(q) for q in questions), min_length=0, charset=charset
        )
        self.action_space = spaces.Text(int(max_answer_len), min_length=0, charset=ANSWER_CHARSET)
        self._index: int | None = None
        self._done = True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._index = self._indices[int(self.np_random.integers(0, len(self._indices)))]
        self._done = False
        return self._entries[self._index]["question"], {
            "task": self.name,
            "split": self.split,
            "index": self._index,
        }

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._index is None or self._done:
            raise RuntimeError(
                "ReasoningGym-v0: call reset() before step() (episodes last one step)"
            )
        if not isinstance(action, str):
            raise TypeError(
                f"ReasoningGym-v0: expected an answer string from {self.action_space}, "
                f"got {type(action).__name__}"
            )
        entry = self._entries[self._index]
        reward = self._score(action, entry)
        self._done = True
        return (
            entry["question"],
            reward,
            True,
            False,
            {"gold": str(entry["answer"]), "index": self._index, "correct": bool(reward == 1.0)},
        )

    def sample_group(self, n: int, seed: int | None = None) -> list[int]:
        """``n`` entry indices of this split: from ``seed`` if given, else from ``self.np_random``."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"ReasoningGym-v0.sample_group: n must be a positive int, got {n!r}")
        rng = self.np_random if seed is None else np.random.default_rng(seed)
        return [int(self._indices[i]) for i in rng.integers(0, len(self._indices), size=int(n))]

    def question(self, index: int) -> str:
        """The question text of split entry ``index``."""
        return self._entries[index]["question"]

    def score(self, completions: Sequence[str], indices: Sequence[int]) -> np.ndarray:
        """reasoning-gym scores of ``completions[i]`` for split entry ``indices[i]``."""
        if len(completions) != len(indices):
            raise ValueError(
                f"ReasoningGym-v0.score: {len(completions)} completions for {len(indices)} entries"
            )
        return np.array([self._score(c, self._entries[i]) for c, i in zip(completions, indices)])

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._index is None:
            return None
        return self._entries[self._index]["question"]

    def _score(self, answer: Any, entry: dict[str, Any]) -> float:
        if not isinstance(answer, str):
            return 0.0
        try:
            s = float(self.dataset.score_answer(answer, entry))
        except Exception:  # a scorer that chokes on a malformed answer: the answer is wrong
            return 0.0
        return s if np.isfinite(s) else 0.0
