"""The common language of the suite: agents, budgets, tasks and trial results.

Everything here is a plain, typed dataclass (or a ``typing.Protocol``) with an exact JSON
round-trip, so results can be stored, shipped to a leaderboard and read back unchanged.

* :class:`Agent` -- ``reset(seed)`` and ``act(observation, info) -> action``.
* :class:`Learner` -- an agent that also has ``learn(env_or_dataset, budget)``.
* :class:`Budget` -- what a learner may spend (env steps, data, energy evaluations, time).
* :class:`Metric` / :class:`Task` -- what is measured and how a trial is run.
* :class:`TrialOutcome` -- what a family's ``run_trial`` returns.
* :class:`TrialResult` -- what the runner stores: the outcome plus provenance.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "Agent",
    "Learner",
    "Budget",
    "Metric",
    "Task",
    "TrialOutcome",
    "TrialResult",
    "TrialStatus",
    "derive_seed",
    "config_hash",
    "trial_key",
    "check_budget_scale",
    "format_scale",
]

TrialStatus = Literal["FINISHED", "FAILED"]
Direction = Literal["max", "min"]


@runtime_checkable
class Agent(Protocol):
    """Anything that acts: ``reset(seed)`` then ``act(observation, info)`` each step.

    Optional attributes read by the harness: ``version`` (str, default ``"0"``).
    """

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, observation: Any, info: Mapping[str, Any] | None = None) -> Any: ...


@runtime_checkable
class Learner(Agent, Protocol):
    """An agent that learns from an environment or a data set within a :class:`Budget`.

    ``learn`` may return a dict of training statistics (curves, losses); the runner stores it
    in ``TrialResult.extra["learn"]`` when it is JSON-serializable.
    """

    def learn(self, env_or_dataset: Any, budget: Budget) -> Mapping[str, Any] | None: ...


def _check_nonnegative(name: str, value: float | int | None) -> None:
    if value is not None and (not isinstance(value, (int, float)) or value < 0):
        raise ValueError(f"Budget.{name}: expected a non-negative number or None, got {value!r}")


@dataclass(frozen=True)
class Budget:
    """What a learner may spend. ``None`` means "not limited on this axis".

    ``extra`` holds family-specific limits (for example ``{"rl_steps": 150}``);
    ``learning_extra`` names the numeric ``extra`` entries that bound learning, so that
    :meth:`scaled` multiplies them too (``Budget(extra={"rl_steps": 150, "group_size": 8},
    learning_extra=("rl_steps",))``). The declaration is not part of the task's definition
    hash: it changes nothing at scale 1.
    """

    env_steps: int | None = None
    episodes: int | None = None
    dataset_size: int | None = None
    energy_evals: int | None = None
    updates: int | None = None
    wall_clock_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    learning_extra: tuple[str, ...] = ()

    #: the fields a budget scale multiplies: what the learner may *spend* on learning.
    #: ``dataset_size`` is not one of them: the data are the problem a task poses (vary them
    #: with a study's sweep), not the learner's effort.
    LEARNING_FIELDS: ClassVar[tuple[str, ...]] = (
        "env_steps",
        "episodes",
        "energy_evals",
        "updates",
        "wall_clock_s",
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name not in ("extra", "learning_extra"):
                _check_nonnegative(f.name, getattr(self, f.name))
        object.__setattr__(self, "extra", dict(self.extra))
        if isinstance(self.learning_extra, str):
            raise TypeError(
                f"Budget.learning_extra: expected a tuple of extra keys, got the string "
                f"{self.learning_extra!r} (write ({self.learning_extra!r},))"
            )
        keys = tuple(self.learning_extra)
        for k in keys:
            v = self.extra.get(k, None)
            if k not in self.extra or isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(
                    f"Budget.learning_extra names {k!r}, which must be a numeric entry of extra; "
                    f"extra is {dict(self.extra)!r}"
                )
            _check_nonnegative(f"extra[{k!r}]", v)
        object.__setattr__(self, "learning_extra", keys)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}
        if not self.learning_extra:  # absent when empty: old budgets serialize as before
            d.pop("learning_extra")
        return d

    def scaled(self, scale: float) -> Budget:
        """This budget with every learning bound multiplied by ``scale``.

        Multiplied: :attr:`LEARNING_FIELDS` (``env_steps``, ``episodes``, ``energy_evals``,
        ``updates``, ``wall_clock_s``) and the ``extra`` entries named in ``learning_extra``.
        Unchanged: ``dataset_size`` and every other ``extra`` entry (batch sizes, model
        shapes). Integers are rounded half up and stay >= 1 when they were >= 1 (0 stays 0,
        ``None`` stays ``None``); floats are multiplied exactly. ``scaled(1)`` is ``self``.

        Raises ValueError for a scale that is not a finite number > 0, and for a scale other
        than 1 on a budget with nothing to scale (no learning field set, no learning extra):
        the ladder would silently repeat the same trial.
        """
        s = check_budget_scale(scale)
        if s == 1.0:
            return self
        changes: dict[str, Any] = {
            f: _scale_value(getattr(self, f), s) for f in self.LEARNING_FIELDS
        }
        if all(getattr(self, f) is None for f in self.LEARNING_FIELDS) and not self.learning_extra:
            raise ValueError(
                f"Budget.scaled({scale!r}): this budget bounds no learning "
                f"({', '.join(self.LEARNING_FIELDS)} are all unset and learning_extra is empty), "
                "so a budget scale cannot change it; declare the extra entries that bound "
                "learning in Budget.learning_extra, or scale the agent's own iteration count"
            )
        extra = dict(self.extra)
        for k in self.learning_extra:
            extra[k] = _scale_value(extra[k], s)
        return dataclasses.replace(self, **changes, extra=extra)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Budget:
        return cls(**_known_fields(cls, d, "Budget"))

    def replace(self, **changes: Any) -> Budget:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Metric:
    """A measured quantity: name, direction (``"max"`` or ``"min"``) and its documented range."""

    name: str
    direction: Direction = "max"
    lower: float = -math.inf
    upper: float = math.inf
    description: str = ""

    def __post_init__(self) -> None:
        if self.direction not in ("max", "min"):
            raise ValueError(
                f"Metric {self.name!r}: direction must be 'max' or 'min', got {self.direction!r}"
            )
        if not self.lower <= self.upper:
            raise ValueError(f"Metric {self.name!r}: lower {self.lower} > upper {self.upper}")

    def better(self, a: float, b: float) -> bool:
        """True when value ``a`` is strictly better than ``b``."""
        return a > b if self.direction == "max" else a < b

    def in_range(self, value: float) -> bool:
        return math.isfinite(value) and self.lower <= value <= self.upper

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "direction": self.direction,
            "lower": _float_to_json(self.lower),
            "upper": _float_to_json(self.upper),
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Metric:
        d = dict(_known_fields(cls, d, "Metric"))
        for k in ("lower", "upper"):
            if k in d:
                d[k] = _float_from_json(d[k])
        return cls(**d)


@dataclass(frozen=True)
class Task:
    """One benchmark problem: an env (or data set) plus a budget, seeds and metrics.

    ``run_trial`` is the entry point (``"module:function"``) of the family function
    ``run_trial(task, agent, seed) -> TrialOutcome``; the runner knows nothing else about the
    family. ``seeds`` are the public seeds; leaderboards keep their own held-out seeds.
    """

    id: str
    version: int
    family: str
    env_id: str
    run_trial: str
    metrics: tuple[Metric, ...]
    primary_metric: str
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    eval_episodes: int = 10
    description: str = ""
    # Relative tolerance a leaderboard re-run must meet on the primary metric's IQM.
    tolerance: float = 0.1
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id or "/" not in self.id:
            raise ValueError(f"Task id must look like '<family>/<name>', got {self.id!r}")
        if not isinstance(self.version, int) or self.version < 0:
            raise ValueError(f"Task {self.id!r}: version must be an int >= 0, got {self.version!r}")
        if ":" not in self.run_trial:
            raise ValueError(
                f"Task {self.id!r}: run_trial must be 'module:function', got {self.run_trial!r}"
            )
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        object.__setattr__(self, "env_kwargs", dict(self.env_kwargs))
        object.__setattr__(self, "extra", dict(self.extra))
        names = [m.name for m in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"Task {self.id!r}: duplicate metric names {names}")
        if self.primary_metric not in names:
            raise ValueError(
                f"Task {self.id!r}: primary metric {self.primary_metric!r} is not one of {names}"
            )

    @property
    def key(self) -> str:
        """``id@version``, the name results are stored under."""
        return f"{self.id}@v{self.version}"

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        raise KeyError(
            f"Task {self.id!r} has no metric {name!r}; it has {[m.name for m in self.metrics]}"
        )

    @property
    def primary(self) -> Metric:
        return self.metric(self.primary_metric)

    @functools.cached_property
    def definition_hash(self) -> str:
        """A 12-hex-digit hash of the definition (``to_dict()`` without the description).

        Stored in every :class:`TrialResult` and in its key, so a resumed run never reuses a
        trial of another definition; ``tests/golden/versions.json`` pins it per ``id@vN``.
        """
        d = self.to_dict()
        d.pop("description", None)
        d["budget"].pop("learning_extra", None)  # changes nothing at scale 1 (Budget.scaled)
        blob = json.dumps(d, sort_keys=True, allow_nan=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "version": self.version,
            "family": self.family,
            "env_id": self.env_id,
            "run_trial": self.run_trial,
            "metrics": [m.to_dict() for m in self.metrics],
            "primary_metric": self.primary_metric,
            "env_kwargs": _jsonable(self.env_kwargs),
            "budget": self.budget.to_dict(),
            "seeds": list(self.seeds),
            "eval_episodes": self.eval_episodes,
            "description": self.description,
            "tolerance": self.tolerance,
            "extra": _jsonable(self.extra),
        }

    def scaled(self, scale: float) -> Task:
        """This task with its budget multiplied by ``scale`` (:meth:`Budget.scaled`): same id,
        version and evaluation. Trials record the scale, never a new version."""
        if check_budget_scale(scale) == 1.0:
            return self
        try:
            budget = self.budget.scaled(scale)
        except ValueError as e:
            raise ValueError(f"task {self.key}: {e}") from None
        return dataclasses.replace(self, budget=budget)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Task:
        d = dict(_known_fields(cls, d, "Task"))
        d["metrics"] = tuple(Metric.from_dict(m) for m in d.get("metrics", ()))
        if "budget" in d:
            d["budget"] = Budget.from_dict(d["budget"])
        if "seeds" in d:
            d["seeds"] = tuple(d["seeds"])
        return cls(**d)


@dataclass
class TrialOutcome:
    """What a family's ``run_trial`` returns: metrics, raw per-episode scores, extras.

    ``metrics`` are the task's metrics for this seed (finite floats); ``scores`` are the raw
    per-episode values of the primary metric (or the closest per-episode quantity);
    ``extra`` holds anything JSON-serializable worth keeping (curves, diagnostics).
    """

    metrics: dict[str, float]
    scores: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrialResult:
    """One (task, agent, seed) trial as stored: outcome plus full provenance."""

    task_id: str
    task_version: int
    agent_name: str
    agent_version: str
    seed: int
    status: TrialStatus
    metrics: dict[str, float] = field(default_factory=dict)
    scores: list[float] = field(default_factory=list)
    wall_time_s: float = 0.0
    packages: dict[str, str] = field(default_factory=dict)
    git_commit: str | None = None
    traceback: str | None = None
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    started_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # Task.definition_hash of the task that ran ("" in results stored before it existed)
    task_hash: str = ""
    # the multiplier of the task's learning budget (Budget.scaled); 1.0 = the task as defined
    budget_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.status not in ("FINISHED", "FAILED"):
            raise ValueError(f"TrialResult.status must be FINISHED or FAILED, got {self.status!r}")
        if self.status == "FAILED" and not self.traceback:
            raise ValueError("a FAILED TrialResult must carry the traceback")
        self.budget_scale = check_budget_scale(self.budget_scale)

    @property
    def key(self) -> str:
        """Identity of the trial: task, version, definition hash, agent, agent config and seed."""
        return trial_key(
            self.task_id,
            self.task_version,
            self.agent_name,
            self.agent_kwargs,
            self.seed,
            self.task_hash,
            self.budget_scale,
        )

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if self.budget_scale == 1.0:  # absent at scale 1: results and bundles read as before
            d.pop("budget_scale")
        d["metrics"] = {k: _float_to_json(float(v)) for k, v in self.metrics.items()}
        d["scores"] = [_float_to_json(float(v)) for v in self.scores]
        d["agent_kwargs"] = _jsonable(self.agent_kwargs)
        d["extra"] = _jsonable(self.extra)
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrialResult:
        d = dict(_known_fields(cls, d, "TrialResult"))
        d["metrics"] = {k: _float_from_json(v) for k, v in d.get("metrics", {}).items()}
        d["scores"] = [_float_from_json(v) for v in d.get("scores", [])]
        return cls(**d)

    @classmethod
    def from_json(cls, s: str) -> TrialResult:
        return cls.from_dict(json.loads(s))


# ----------------------------------------------------------------------------- helpers


def trial_key(
    task_id: str,
    task_version: int,
    agent_name: str,
    agent_kwargs: Mapping[str, Any],
    seed: int,
    task_hash: str = "",
    budget_scale: float = 1.0,
) -> str:
    """``task@vN~<definition hash>|agent#<config hash>|seed=S``, plus ``|x<scale>`` when the
    trial ran at a budget scale other than 1 (``|x0.25``, ``|x4``): a scale-1 key is the key
    trials had before scales existed. Without a hash (results stored before hashes existed)
    the ``~...`` part is absent, so such keys never match a new trial."""
    h = f"~{task_hash}" if task_hash else ""
    key = f"{task_id}@v{task_version}{h}|{agent_name}#{config_hash(agent_kwargs)}|seed={int(seed)}"
    s = check_budget_scale(budget_scale)
    return key if s == 1.0 else f"{key}|x{format_scale(s)}"


def check_budget_scale(scale: Any) -> float:
    """``scale`` as a float, or a ValueError unless it is a finite number > 0."""
    if (
        isinstance(scale, bool)
        or not isinstance(scale, (int, float, np.integer, np.floating))
        or not math.isfinite(float(scale))
        or float(scale) <= 0
    ):
        raise ValueError(f"budget scale: expected a finite number > 0, got {scale!r}")
    return float(scale)


def format_scale(scale: float) -> str:
    """``0.25`` -> ``"0.25"``, ``4.0`` -> ``"4"``: the shortest exact text of a scale."""
    s = float(scale)
    return str(int(s)) if s.is_integer() else repr(s)


def _scale_value(value: Any, scale: float) -> Any:
    """``value * scale``: None stays None; an int is rounded half up and stays >= 1 if it was."""
    if value is None:
        return None
    if isinstance(value, float):
        return value * scale
    v = int(value)
    if v == 0:
        return 0
    return max(1, math.floor(v * scale + 0.5))


def config_hash(config: Mapping[str, Any]) -> str:
    """A short stable hash of a JSON-able config (sorted keys)."""
    blob = json.dumps(_jsonable(dict(config)), sort_keys=True, allow_nan=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def derive_seed(seed: int, *keys: int | str) -> int:
    """A 32-bit seed derived deterministically from ``seed`` and any number of keys.

    Used to give each evaluation episode, worker or stage its own independent stream, e.g.
    ``derive_seed(seed, "eval", episode)``.
    """
    ints: list[int] = [int(seed) & 0xFFFFFFFF]
    for k in keys:
        if isinstance(k, str):
            ints.append(int.from_bytes(hashlib.sha256(k.encode()).digest()[:4], "little"))
        else:
            ints.append(int(k) & 0xFFFFFFFF)
    return int(np.random.SeedSequence(ints).generate_state(1)[0])


def _float_to_json(x: float) -> float | str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _float_from_json(x: Any) -> float:
    if isinstance(x, str):
        if x in ("nan", "inf", "-inf"):
            return float(x)
        raise ValueError(f"expected a number or 'nan'/'inf'/'-inf', got the string {x!r}")
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"expected a number, got {type(x).__name__} {x!r}")
    return float(x)


def _jsonable(x: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-finite floats into plain JSON values."""
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    if isinstance(x, float):
        return _float_to_json(x)
    if x is None or isinstance(x, (str, int, bool)):
        return x
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _jsonable(dataclasses.asdict(x))
    raise TypeError(f"value of type {type(x).__name__} is not JSON-serializable: {x!r:.80}")


def jsonable(x: Any) -> Any:
    """Public alias of the JSON conversion used by results (numpy, tuples, nan/inf)."""
    return _jsonable(x)


def _known_fields(cls: type, d: Mapping[str, Any], what: str) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise TypeError(f"{what}: expected a JSON object, got {type(d).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(
            f"{what}: unknown field(s) {unknown}; expected a subset of {sorted(names)}"
        )
    return dict(d)


def as_seed_list(seeds: Sequence[int] | str) -> list[int]:
    """Parse ``"0,1,2"``, ``"0-4"`` or a list of ints into a list of seeds."""
    if isinstance(seeds, str):
        out: list[int] = []
        for part in seeds.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                if "-" in part:
                    lo, hi = part.split("-", 1)
                    out.extend(range(int(lo), int(hi) + 1))
                else:
                    out.append(int(part))
            except ValueError:
                raise ValueError(
                    f"bad seed {part!r} in {seeds!r}; expected non-negative integers like '0,1,2' or '0-4'"
                ) from None
        if not out:
            raise ValueError(f"no seeds in {seeds!r}; expected e.g. '0,1,2' or '0-4'")
        return out
    return [int(s) for s in seeds]
