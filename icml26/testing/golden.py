"""Version guard: golden hashes of every task definition and a short seeded rollout of every env.

    python -m icml26.testing.golden            # check this checkout against tests/golden/versions.json
    python -m icml26.testing.golden --update   # rewrite the golden file (a deliberate act, see docs/versions.md)

``tests/test_versions_golden.py`` fails when a registered task's definition (``Task.to_dict()``
without its description) or an env id's seeded rollout (observations, rewards, termination
flags and info keys over a few steps with seeded random actions) differs from the golden file.
An env whose numbers come from a single-precision engine whose summation order depends on the
CPU (OpenMM's CPU platform picks its SIMD width at run time) declares ``golden_rtol`` in its
registration record: its hash then covers everything but the float values (shapes, flags, info
keys, episode boundaries), and per step its reward and two checksums of every float array in the
observation (sum of magnitudes, a fixed signed projection) are compared within that tolerance.
The fix is a version bump (``-v1`` -> ``-v2``, ``Task.version`` + 1) with the old version kept
registered and unchanged, after which ``--update`` records the new entry; regenerating the
file without a bump is for changes that cannot alter any result (and the commit says why).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "GOLDEN_PATH",
    "ROLLOUT_STEPS",
    "package_tasks",
    "task_digest",
    "env_digest",
    "parallel_env_digest",
    "compute",
    "compare",
    "load",
    "main",
]

GOLDEN_PATH = Path(__file__).resolve().parents[2] / "tests" / "golden" / "versions.json"
ROLLOUT_STEPS = 6
ROLLOUT_SEED = 1234


class _Hasher:
    """Feeds a structure into sha256: floats rounded to 7 significant digits (binary mantissa
    rounded to 2**-23), so last-bit differences between BLAS builds do not count. With
    ``floats=False`` a float array contributes only its shape (the tolerant digest's hash)."""

    def __init__(self, floats: bool = True) -> None:
        self.h = hashlib.sha256()
        self.floats = floats

    def _w(self, s: str) -> None:
        self.h.update(s.encode())

    def add(self, x: Any) -> None:
        if isinstance(x, Mapping):
            self._w("{")
            for k in sorted(x, key=str):
                self._w(f"{k}:")
                self.add(x[k])
            self._w("}")
        elif isinstance(x, (list, tuple)):
            self._w(f"[{len(x)}")
            for v in x:
                self.add(v)
            self._w("]")
        elif isinstance(x, (bool, np.bool_)):
            self._w(f"b{bool(x)}")
        elif isinstance(x, (int, np.integer)):
            self._w(f"i{int(x)}")
        elif isinstance(x, (float, np.floating)) or (
            isinstance(x, np.ndarray) and x.dtype.kind in "fc"
        ):
            self._add_floats(np.asarray(x))
        elif isinstance(x, np.ndarray):
            self._w(f"a{x.dtype.str}{x.shape}")
            if x.dtype.kind == "O":
                for v in x.ravel():
                    self.add(v)
            else:
                self.h.update(np.ascontiguousarray(x).tobytes())
        elif isinstance(x, (str, bytes)):
            self._w(f"s{x!s}")
        elif x is None:
            self._w("N")
        elif hasattr(x, "__array__"):
            self.add(np.asarray(x))
        else:
            self._w(f"o{type(x).__name__}")

    def _add_floats(self, a: np.ndarray) -> None:
        if a.dtype.kind == "c":
            self._w("c")
            self.add(a.real)
            self.add(a.imag)
            return
        self._w(f"f{a.shape}")
        if not self.floats:
            return
        m, e = np.frexp(a.astype(np.float64))
        m = np.round(m * 2.0**23)
        self.h.update(np.ascontiguousarray(m).tobytes())
        self.h.update(np.ascontiguousarray(e.astype(np.int64)).tobytes())

    def hexdigest(self) -> str:
        return self.h.hexdigest()[:16]


def _digest(x: Any) -> str:
    h = _Hasher()
    h.add(x)
    return h.hexdigest()


def task_digest(task: Any) -> str:
    """The task's definition hash (:attr:`icml26.protocol.Task.definition_hash`)."""
    return str(task.definition_hash)


def env_digest(
    env_id: str,
    kwargs: Mapping[str, Any] | None = None,
    steps: int = ROLLOUT_STEPS,
    seed: int = ROLLOUT_SEED,
    rtol: float | None = None,
) -> dict[str, Any]:
    """Hash of a seeded rollout of ``gym.make(env_id, **kwargs)`` with seeded random actions;
    with ``rtol`` the tolerant digest (module docstring): the hash without float values, plus
    ``values`` and ``rtol``."""
    import gymnasium as gym

    env = gym.make(env_id, disable_env_checker=True, **dict(kwargs or {}))
    try:
        return _rollout(env.reset, env.step, env.action_space, steps, seed, rtol)
    finally:
        env.close()


def _checksums(x: Any) -> list[float]:
    """``[sum |v|, sum v * cos(i)]`` over the float leaves of ``x`` (dict keys in sorted order)."""
    leaves: list[np.ndarray] = []

    def walk(v: Any) -> None:
        if isinstance(v, Mapping):
            for k in sorted(v, key=str):
                walk(v[k])
        elif isinstance(v, (list, tuple)):
            for u in v:
                walk(u)
        else:
            a = np.asarray(v)
            if a.dtype.kind == "f":
                leaves.append(a.astype(np.float64).ravel())

    walk(x)
    flat = np.concatenate(leaves) if leaves else np.zeros(0)
    return [float(np.abs(flat).sum()), float(flat @ np.cos(np.arange(flat.size)))]


def _rollout(
    reset: Callable[..., Any],
    step: Callable[..., Any],
    space: Any,
    steps: int,
    seed: int,
    rtol: float | None = None,
) -> dict[str, Any]:
    tolerant = rtol is not None
    h = _Hasher(floats=not tolerant)
    obs, info = reset(seed=seed)
    space.seed(seed)
    h.add(["reset", obs, sorted(info)])
    values = [_checksums(obs)] if tolerant else []
    rewards, info_keys = [], set(info)
    for _ in range(steps):
        obs, reward, terminated, truncated, info = step(space.sample())
        rewards.append(float(reward))
        info_keys |= set(info)
        h.add(["step", obs, float(reward), bool(terminated), bool(truncated), sorted(info)])
        if tolerant:
            values.append([float(reward), *_checksums(obs)])
        if terminated or truncated:
            obs, info = reset()
            h.add(["reset", obs, sorted(info)])
            if tolerant:
                values.append(_checksums(obs))
    out: dict[str, Any] = {
        "hash": h.hexdigest(),
        "steps": steps,
        "reward_sum": round(float(np.sum(rewards)), 6),
        "info_keys": sorted(str(k) for k in info_keys),
    }
    if tolerant:
        out["rtol"] = rtol
        out["values"] = values
    return out


def _values_close(old: Any, new: Any, rtol: float) -> bool:
    """Per row: a reward (rows of three) within ``rtol * max(|r|, 1)``; both checksums within
    ``rtol`` times the old row's sum of magnitudes (the projection can cancel to near zero)."""
    if not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new):
        return False
    for a, b in zip(old, new, strict=True):
        if len(a) != len(b):
            return False
        if len(a) == 3:
            if abs(a[0] - b[0]) > rtol * max(abs(a[0]), 1.0):
                return False
            a, b = a[1:], b[1:]
        scale = rtol * max(abs(a[0]), 1e-12)
        if abs(a[0] - b[0]) > scale or abs(a[1] - b[1]) > scale:
            return False
    return True


def _env_entries_differ(old: Any, new: Any) -> list[str]:
    """The fields of two env digests that differ (the tolerant ones compared within ``rtol``)."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return [] if old == new else ["entry"]
    rtol = old.get("rtol")
    out = []
    for f in sorted(set(old) | set(new)):
        a, b = old.get(f), new.get(f)
        if rtol is not None and f == "values":
            if not _values_close(a, b, float(rtol)):
                out.append(f)
        elif rtol is not None and f == "reward_sum" and a is not None and b is not None:
            if abs(a - b) > float(rtol) * max(abs(a), 1.0):
                out.append(f)
        elif a != b:
            out.append(f)
    return out


def parallel_env_digest(
    spec: Mapping[str, Any], steps: int = ROLLOUT_STEPS, seed: int = ROLLOUT_SEED
) -> dict[str, Any]:
    """Hash of a seeded rollout of a PettingZoo ParallelEnv factory (every agent acts at random)."""
    module, _, attr = spec["entry_point"].partition(":")
    factory = getattr(importlib.import_module(module), attr)
    env = factory(**dict(spec.get("test_kwargs", spec.get("kwargs", {}))))
    h = _Hasher()
    obs, info = env.reset(seed=seed)
    for i, a in enumerate(sorted(env.possible_agents)):
        env.action_space(a).seed(seed + i)
    h.add(["reset", obs, {k: sorted(v) for k, v in info.items()}])
    total = 0.0
    for _ in range(steps):
        if not env.agents:
            obs, info = env.reset()
            h.add(["reset", obs, {k: sorted(v) for k, v in info.items()}])
        actions = {a: env.action_space(a).sample() for a in sorted(env.agents)}
        obs, rew, term, trunc, info = env.step(actions)
        total += float(sum(rew.values()))
        h.add(
            [
                "step",
                obs,
                {k: float(v) for k, v in rew.items()},
                term,
                trunc,
                {k: sorted(v) for k, v in info.items()},
            ]
        )
    env.close()
    return {"hash": h.hexdigest(), "steps": steps, "reward_sum": round(total, 6)}


def package_tasks() -> list[Any]:
    """Every task version the package's families define (their ``TASKS`` lists, old versions
    included), not whatever else a process has registered (tests register their own)."""
    import icml26

    out = []
    for fam in icml26.FAMILIES:
        mod = importlib.import_module(f"icml26.benchmarks.tasks.{fam}")
        out.extend(getattr(mod, "TASKS", ()))
    return sorted(out, key=lambda t: t.key)


def compute(*, envs: bool = True, only: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The current digests: every registered task version, env id and PettingZoo factory."""
    import icml26

    keep = only or (lambda _: True)
    out: dict[str, Any] = {
        "about": "icml26 version guard; regenerate deliberately with `python -m icml26.testing.golden --update` "
        "(docs/versions.md)",
        "rollout": {"steps": ROLLOUT_STEPS, "seed": ROLLOUT_SEED},
        "tasks": {t.key: task_digest(t) for t in package_tasks() if keep(t.key)},
    }
    if envs:
        out["envs"] = {
            s["id"]: env_digest(s["id"], s.get("test_kwargs"), rtol=s.get("golden_rtol"))
            for s in icml26.env_specs()
            if keep(s["id"])
        }
        out["parallel_envs"] = {
            s["name"]: parallel_env_digest(s)
            for s in icml26.parallel_env_specs()
            if keep(s["name"])
        }
    return out


_ADVICE = (
    "bump the version (keep the old one registered and unchanged) and run "
    "`python -m icml26.testing.golden --update`; see docs/versions.md"
)


def compare(golden: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Human-readable differences (empty when the checkout matches the golden file)."""
    problems = []
    for section, what in (("tasks", "task"), ("envs", "env"), ("parallel_envs", "PettingZoo env")):
        if section not in current:
            continue
        old, new = golden.get(section, {}), current[section]
        for k in sorted(set(old) | set(new)):
            if k not in new:
                problems.append(
                    f"{what} {k} is in the golden file but no longer registered: old versions must stay "
                    f"registered ({_ADVICE})"
                )
            elif k not in old:
                problems.append(
                    f"{what} {k} is new: record it with `python -m icml26.testing.golden --update`"
                )
            elif fields := _env_entries_differ(old[k], new[k]):
                if isinstance(new[k], Mapping) and isinstance(old[k], Mapping):
                    diff = ", ".join(
                        f"{f} {old[k].get(f)!r} -> {new[k].get(f)!r}"
                        if f != "values"
                        else f"values beyond rtol {old[k].get('rtol')}"
                        for f in fields
                    )
                else:
                    diff = f"definition hash {old[k]} -> {new[k]}"
                problems.append(f"{what} {k} changed without a version bump ({diff}): {_ADVICE}")
    return problems


def load(path: Path = GOLDEN_PATH) -> dict[str, Any]:
    if not path.exists():
        raise FileNotFoundError(
            f"no golden file at {path}: create it with `python -m icml26.testing.golden --update`"
        )
    return json.loads(path.read_text())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--update", action="store_true", help="rewrite the golden file with the current digests"
    )
    p.add_argument("--path", type=Path, default=GOLDEN_PATH)
    args = p.parse_args(argv)
    current = compute()
    old = json.loads(args.path.read_text()) if args.path.exists() else {}
    problems = compare(old, current)
    for line in problems:
        print(line)
    if args.update:
        args.path.parent.mkdir(parents=True, exist_ok=True)
        args.path.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
        print(
            f"wrote {args.path} ({len(current['tasks'])} tasks, {len(current['envs'])} envs, "
            f"{len(current['parallel_envs'])} PettingZoo envs; {len(problems)} entries changed)"
        )
        return 0
    print("OK" if not problems else f"{len(problems)} difference(s) from {args.path}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
