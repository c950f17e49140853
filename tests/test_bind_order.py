"""Every task calls an agent's ``bind(observation_space, action_space)`` before its first
``reset`` (the README promises it to plug-in agents), checked with a recording subclass of a
cheap registered agent on one task per family whose run_trial had its own order."""

from __future__ import annotations

from typing import Any

import pytest

from icml26 import agents, benchmarks
from icml26._entry_points import load_entry_point


def _recording(name: str, calls: list[str], **kwargs: Any) -> Any:
    base = load_entry_point(agents.spec(name).entry_point)

    class Recording(base):  # type: ignore[misc, valid-type]
        def bind(self, observation_space: Any, action_space: Any) -> None:
            calls.append("bind")
            parent = getattr(super(), "bind", None)
            if parent is not None:
                parent(observation_space, action_space)

        def reset(self, seed: int | None = None) -> None:
            calls.append("reset")
            super().reset(seed)

    return Recording(**{**agents.spec(name).kwargs, **kwargs})


@pytest.mark.parametrize(
    "task_id, agent",
    [
        ("tutorial/point-reach", "point-pd"),
        ("markov_games/random-uniform", "mg-bc"),
        ("spatial_causal/grid-r1", "sc-diff-means"),
    ],
)
def test_bind_comes_before_reset(task_id: str, agent: str) -> None:
    task = benchmarks.get_task(task_id)
    calls: list[str] = []
    outcome = load_entry_point(task.run_trial)(task, _recording(agent, calls), 0)
    assert outcome.metrics and "bind" in calls and "reset" in calls
    assert calls.index("bind") < calls.index("reset"), calls[:5]
