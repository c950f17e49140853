"""Version guard: task definitions and seeded env rollouts match tests/golden/versions.json.

A failure here means an env's dynamics/reward/observations/info or a task's definition changed
under the same version: bump the version (keep the old one registered and unchanged) and run
``python -m icml26.testing.golden --update`` (docs/versions.md).
"""

from __future__ import annotations

import dataclasses

import pytest

import icml26
from icml26.protocol import Budget
from icml26.testing import golden

GOLDEN = golden.load()
ENV_SPECS = icml26.env_specs()
PARALLEL_SPECS = icml26.parallel_env_specs()


def test_task_definitions_match_golden() -> None:
    current = {"tasks": {t.key: golden.task_digest(t) for t in golden.package_tasks()}}
    problems = golden.compare(GOLDEN, current)
    assert not problems, "\n".join(problems)


def test_every_env_id_is_in_the_golden_file() -> None:
    current = {
        "envs": {s["id"]: GOLDEN.get("envs", {}).get(s["id"]) for s in ENV_SPECS},
        "parallel_envs": {
            s["name"]: GOLDEN.get("parallel_envs", {}).get(s["name"]) for s in PARALLEL_SPECS
        },
    }
    missing = [k for sec in current.values() for k, v in sec.items() if v is None]
    removed = sorted(set(GOLDEN.get("envs", {})) - {s["id"] for s in ENV_SPECS})
    assert not missing, (
        f"env ids not in the golden file: {missing}; run `python -m icml26.testing.golden --update`"
    )
    assert not removed, f"env ids removed (old versions must stay registered): {removed}"


@pytest.mark.parametrize("spec", ENV_SPECS, ids=[s["id"] for s in ENV_SPECS])
def test_env_rollout_matches_golden(spec: dict) -> None:
    want = GOLDEN["envs"].get(spec["id"])
    if want is None:
        pytest.fail(
            f"{spec['id']} is not in the golden file: run `python -m icml26.testing.golden --update`"
        )
    got = golden.env_digest(spec["id"], spec.get("test_kwargs"), rtol=spec.get("golden_rtol"))
    problems = golden.compare({"envs": {spec["id"]: want}}, {"envs": {spec["id"]: got}})
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("spec", PARALLEL_SPECS, ids=[s["name"] for s in PARALLEL_SPECS])
def test_parallel_env_rollout_matches_golden(spec: dict) -> None:
    want = GOLDEN["parallel_envs"].get(spec["name"])
    got = golden.parallel_env_digest(spec)
    assert want == got, golden.compare(
        {"parallel_envs": {spec["name"]: want or {}}}, {"parallel_envs": {spec["name"]: got}}
    )


def test_compare_names_each_kind_of_change() -> None:
    old = {
        "tasks": {"a/x@v0": "111", "a/y@v0": "222"},
        "envs": {"icml26/X-v0": {"hash": "h", "reward_sum": 1.0}},
    }
    new = {
        "tasks": {"a/x@v0": "999", "a/z@v0": "333"},
        "envs": {"icml26/X-v0": {"hash": "k", "reward_sum": 2.0}},
    }
    problems = golden.compare(old, new)
    assert any(
        "task a/x@v0 changed without a version bump" in p and "111 -> 999" in p for p in problems
    )
    assert any("a/y@v0 is in the golden file but no longer registered" in p for p in problems)
    assert any("a/z@v0 is new" in p for p in problems)
    assert any("env icml26/X-v0 changed" in p and "reward_sum 1.0 -> 2.0" in p for p in problems)
    assert golden.compare(old, old) == []


def test_rollout_hash_sees_a_reward_change() -> None:
    import gymnasium as gym

    class Scaled(gym.Wrapper):  # the same env with every reward scaled by 1.001
        def step(self, action):  # type: ignore[no-untyped-def]
            obs, r, term, trunc, info = self.env.step(action)
            return obs, 1.001 * r, term, trunc, info

    env = gym.make("icml26/PointReach-v0")
    a = golden._rollout(env.reset, env.step, env.action_space, 6, 1234)
    w = Scaled(gym.make("icml26/PointReach-v0"))
    b = golden._rollout(w.reset, w.step, w.action_space, 6, 1234)
    assert a["hash"] == GOLDEN["envs"]["icml26/PointReach-v0"]["hash"] and a["hash"] != b["hash"]


def test_definition_hash_follows_the_definition_not_the_prose() -> None:
    task = golden.package_tasks()[0]
    assert task.definition_hash == golden.task_digest(task) and len(task.definition_hash) == 12
    assert dataclasses.replace(task, description="reworded").definition_hash == task.definition_hash
    assert (
        dataclasses.replace(task, budget=Budget(env_steps=7)).definition_hash
        != task.definition_hash
    )
    assert dataclasses.replace(task, seeds=(9,)).definition_hash != task.definition_hash


def test_tolerant_digest_compares_values_within_rtol_and_structure_exactly() -> None:
    """An env with ``golden_rtol`` (OpenMM's single-precision CPU platform): values within the
    tolerance match, a value beyond it, a different step structure or info keys do not."""
    old = {
        "hash": "h",
        "steps": 2,
        "reward_sum": -31040.449846,
        "info_keys": ["energy"],
        "rtol": 1e-5,
        "values": [[221.96, 8.13], [-5249.2254, 224.94, 10.06], [221.96, 8.13]],
    }
    near = dict(old, reward_sum=-31040.448796)  # the two machines' sums: 3.4e-8 apart
    near["values"] = [[221.9601, 8.1301], [-5249.2263, 224.9401, 10.0601], [221.96, 8.13]]
    assert golden.compare({"envs": {"X": old}}, {"envs": {"X": near}}) == []
    far = dict(old, values=[[221.96, 8.13], [-5249.4, 224.94, 10.06], [221.96, 8.13]])
    (p,) = golden.compare({"envs": {"X": old}}, {"envs": {"X": far}})
    assert "values beyond rtol 1e-05" in p
    for changed in (dict(old, hash="k"), dict(old, info_keys=["energy", "rg"])):
        assert golden.compare({"envs": {"X": old}}, {"envs": {"X": changed}})
    assert golden.compare(
        {"envs": {"X": old}}, {"envs": {"X": dict(old, values=old["values"][:2])}}
    )
    # the projection checksum may cancel to ~0: its tolerance scales with the magnitudes' sum
    cancel = dict(old, values=[[221.96, 0.0], old["values"][1], [221.96, 0.0]])
    moved = dict(cancel, values=[[221.96, 0.0021], old["values"][1], [221.96, -0.0021]])
    assert golden.compare({"envs": {"X": cancel}}, {"envs": {"X": moved}}) == []


def test_tolerant_rollout_hash_ignores_float_values_only() -> None:
    """``floats=False`` hashes a float array's shape, not its values; an int array still counts."""
    import numpy as np

    def digest(x: object, floats: bool) -> str:
        h = golden._Hasher(floats=floats)
        h.add(x)
        return h.hexdigest()

    a, b = np.array([1.0, 2.0]), np.array([1.0, 2.5])
    assert digest(a, False) == digest(b, False) and digest(a, True) != digest(b, True)
    assert digest(np.zeros(3), False) != digest(np.zeros(2), False)
    assert digest(np.array([1, 2]), False) != digest(np.array([1, 3]), False)
