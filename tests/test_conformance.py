"""Every registered icml26/ id (and every PettingZoo env) passes the shipped conformance checks."""

from __future__ import annotations

import importlib

import pytest

import icml26
from icml26.testing import check_env_conformance, check_parallel_env_conformance

ENV_SPECS = icml26.env_specs()
PARALLEL_SPECS = icml26.parallel_env_specs()


def test_some_envs_registered() -> None:
    assert any(s["id"] == "icml26/PointReach-v0" for s in ENV_SPECS)


@pytest.mark.parametrize("spec", ENV_SPECS, ids=[s["id"] for s in ENV_SPECS])
def test_gymnasium_conformance(spec: dict) -> None:
    check_env_conformance(spec["id"], spec.get("test_kwargs"))


@pytest.mark.parametrize("spec", PARALLEL_SPECS, ids=[s["name"] for s in PARALLEL_SPECS])
def test_pettingzoo_conformance(spec: dict) -> None:
    module, _, attr = spec["entry_point"].partition(":")
    factory = getattr(importlib.import_module(module), attr)
    kwargs = dict(spec.get("test_kwargs", spec.get("kwargs", {})))
    check_parallel_env_conformance(lambda: factory(**kwargs))
