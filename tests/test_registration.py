"""Registration: cheap import, both gym.make forms, idempotence, registries by name."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import pytest

import icml26
from icml26 import agents, benchmarks


def test_import_is_light() -> None:
    code = (
        "import sys, time; t = time.perf_counter(); import icml26; dt = time.perf_counter() - t;"
        "heavy = [m for m in ('torch', 'openmm', 'ray', 'stable_baselines3', 'xarray', 'scipy', "
        "'sqlalchemy', 'matplotlib') if m in sys.modules]; print(dt); print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    dt, heavy = out.stdout.splitlines()[0], out.stdout.splitlines()[1:]
    assert heavy in ([], [""]), f"import icml26 pulled in heavy modules: {heavy}"
    # The import takes ~0.2 s on an idle 2-core machine; speed is measured in perf/harness.py, not
    # asserted here (a timed assertion fails on a loaded machine without any change in the code).
    assert float(dt) > 0


def test_every_family_registers_and_ids_follow_the_convention() -> None:
    ids = [s["id"] for s in icml26.env_specs()]
    assert len(ids) == len(set(ids)), "duplicate env ids"
    for s in icml26.env_specs():
        assert s["id"].startswith("icml26/") and s["id"].rsplit("-v", 1)[1].isdigit(), s["id"]
        assert s.get("doc"), f"{s['id']} has no one-line doc"
        assert s["id"] in gym.registry


def test_both_make_forms_and_idempotent_registration() -> None:
    before = set(gym.registry)
    assert icml26.register_envs() == [s["id"] for s in icml26.env_specs()]
    assert set(gym.registry) == before
    e1 = gym.make("icml26/PointReach-v0")
    e2 = gym.make("icml26:icml26/PointReach-v0")
    assert e1.spec.id == e2.spec.id == "icml26/PointReach-v0"
    code = (
        "import gymnasium as gym; env = gym.make('icml26:icml26/PointReach-v0'); print(env.spec.id)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "icml26/PointReach-v0"


def test_agent_registry_by_name_and_entry_point() -> None:
    pd = agents.make("point-pd")
    assert agents.agent_version(pd) == "1"
    user = agents.make("icml26.agents.tutorial.pd:PDController", kp=3.0)
    assert user.kp == 3.0
    with pytest.raises(KeyError, match="Did you mean 'point-pd'"):
        agents.make("point-p")
    with pytest.raises(ImportError, match="no attribute"):
        agents.make("icml26.agents.tutorial.pd:Nope")
    with pytest.raises(TypeError, match="cannot construct"):
        agents.make("point-pd", nonsense=1)
    with pytest.raises(ValueError, match="already registered"):
        agents.register("point-pd", "somewhere.else:Agent")


def test_task_registry() -> None:
    t = benchmarks.get_task("tutorial/point-reach")
    assert benchmarks.get_task("tutorial/point-reach", t.version) is t
    assert benchmarks.get_task(t.key) is t
    with pytest.raises(KeyError, match="Did you mean 'tutorial/point-reach'"):
        benchmarks.get_task("tutorial/point-rech")
    assert "smoke" in benchmarks.suite_names() and "full" in benchmarks.suite_names()


def test_every_registered_entry_point_resolves() -> None:
    """Catch typos in any family's specs: every env, agent and run_trial entry point imports."""
    from icml26._entry_points import load_entry_point

    for s in icml26.env_specs():
        load_entry_point(s["entry_point"])
        if s.get("vector_entry_point"):
            load_entry_point(s["vector_entry_point"])
    for s in icml26.parallel_env_specs():
        load_entry_point(s["entry_point"])
    for name, spec in agents.all_specs().items():
        assert callable(load_entry_point(spec.entry_point)), name
    for t in benchmarks.list_tasks():
        assert callable(load_entry_point(t.run_trial)), t.id
        assert t.env_id in gym.registry or t.env_id.startswith("dataset:"), (t.id, t.env_id)


def test_suites_name_existing_tasks_and_agents() -> None:
    known_agents = set(agents.all_specs())
    for suite in benchmarks.suite_names():
        for entry in benchmarks.get_suite(suite):
            task = benchmarks.get_task(entry.task)
            assert entry.agents, f"{suite}: {entry.task} lists no agents"
            for a in entry.agents:
                assert a in known_agents or ":" in a, f"{suite}: unknown agent {a!r} on {task.id}"
    smoke_families = {benchmarks.get_task(e.task).family for e in benchmarks.get_suite("smoke")}
    assert "tutorial" in smoke_families


def test_one_family_list_matches_the_folders_and_the_guide() -> None:
    """``icml26.FAMILIES`` is the one family list: envs, agents and tasks folders agree with it,
    and docs/adding_a_family.md tells a new family to add itself there."""
    from pathlib import Path

    root = Path(icml26.__file__).parent
    env_dirs = {p.name for p in (root / "envs").iterdir() if (p / "_specs.py").exists()}
    agent_dirs = {p.name for p in (root / "agents").iterdir() if (p / "_specs.py").exists()}
    task_files = {
        p.stem for p in (root / "benchmarks" / "tasks").glob("*.py") if p.stem != "__init__"
    }
    fams = set(icml26.FAMILIES)
    assert env_dirs == fams
    assert agent_dirs == fams | {"generic"}
    assert task_files == fams
    assert {t.family for t in benchmarks.list_tasks()} <= fams
    assert {s.family for s in agents.all_specs().values()} <= fams | {"any"}
    guide = (root.parent / "docs" / "adding_a_family.md").read_text()
    assert "icml26.FAMILIES" in guide
