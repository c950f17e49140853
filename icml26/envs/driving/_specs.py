"""Gymnasium registration records of the driving family: every id is one engine with one config
(:mod:`.versions`); no heavy imports here."""

from __future__ import annotations

from typing import Any

from icml26.envs.driving.versions import ROLE_EGO, VERSIONS

_ADVERSARY = {
    "v0": "ScenePilot adversarial driving: the agent is the adversary in 8 SafeBench scenarios (risk reward, sigma in info).",
    "v1": "ScenePilot-v1: adversary rewarded for avoidable (boundary-band) collisions, RSS sigma, 2 s collision-horizon Phi, randomized scenes, traffic lights.",
    "v2": "ScenePilot-v2: v1 with a sigma that flags crossing conflicts (RSS routes of different geometry), scenarios 1-4 re-tuned, human-like ego.",
}
_EGO = {
    "v0": "ScenePilot adversarial fine-tuning: the agent drives the ego car against an adversary policy.",
    "v1": "ScenePilotAV-v1: the agent drives the ego in the v1 scenes (randomized, traffic lights) against an adversary policy.",
    "v2": "ScenePilotAV-v2: the agent drives the ego in the v2 scenes against an adversary policy.",
}
_TEST_KWARGS = {"v0": ({"scenario": 1}, {"scenario": 5, "base_planner": "idm"}),
                "v1": ({"scenario": 5}, {"scenario": 7, "base_planner": "idm"}),
                "v2": ({"scenario": 5}, {"scenario": 7, "base_planner": "human"})}  # fmt: skip


def spec(v: str, ego: bool = False) -> dict[str, Any]:
    """The registration record of ``icml26/ScenePilot-v`` (``ScenePilotAV-v`` with ``ego``)."""
    return {"id": f"icml26/ScenePilot{'AV' if ego else ''}-{v}",
            "entry_point": "icml26.envs.driving.env:ScenePilotEnv",
            **({} if ego else {"vector_entry_point": "icml26.envs.driving.env:make_vector_env"}),
            "kwargs": {**VERSIONS[v], **(ROLE_EGO if ego else {})}, "max_episode_steps": 300,
            "doc": (_EGO if ego else _ADVERSARY)[v], "test_kwargs": _TEST_KWARGS[v][ego]}  # fmt: skip


ENV_SPECS: list[dict[str, Any]] = [spec(v, ego) for v in VERSIONS for ego in (False, True)]
