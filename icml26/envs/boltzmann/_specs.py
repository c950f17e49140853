"""Gymnasium registration records of the boltzmann family (no heavy imports here)."""

from __future__ import annotations

from typing import Any

_ENTRY = "icml26.envs.boltzmann.env:BoltzmannEnv"
_CHEAP = {"dataset_size": 64, "energy_budget": 256, "batch_size": 8}


def _spec(
    name: str,
    target: str,
    doc: str,
    test_extra: dict[str, Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    version: int = 0,
) -> dict[str, Any]:
    return {
        "id": f"icml26/Boltzmann{name}-v{version}",
        "entry_point": _ENTRY,
        "kwargs": {"target": target, **(kwargs or {})},
        "doc": doc,
        "test_kwargs": {**_CHEAP, **(test_extra or {})},
    }


ENV_SPECS: list[dict[str, Any]] = [
    _spec(
        "GMM40", "gmm40", "Boltzmann sampling (LDR): 40-mode Gaussian mixture in 2-D, log Z = 0."
    ),
    _spec(
        "ManyWell32",
        "many_well32",
        "Boltzmann sampling (LDR): Many-Well-32, 2^16 modes, log Z known.",
    ),
    _spec("Funnel10", "funnel10", "Boltzmann sampling (LDR): Neal's funnel in 10-D, log Z = 0."),
    _spec(
        "DW4",
        "dw4",
        "Boltzmann sampling (LDR): 4 particles, double-well pair potential (MALA data).",
        {"target_kwargs": {"data_preset": "tiny"}},
    ),
    _spec(
        "LJ13",
        "lj13",
        "Boltzmann sampling (LDR): 13 Lennard-Jones particles in a trap (MALA data).",
        {"target_kwargs": {"data_preset": "tiny"}},
    ),
    _spec(
        "AlanineDipeptide",
        "aldp",
        "Boltzmann sampling (LDR): alanine dipeptide, Amber via OpenMM, 300 K, MD data.",
        {"target_kwargs": {"backend": "openmm", "data_preset": "tiny"}},
        kwargs={"target_kwargs": {"backend": "openmm"}, "batch_size": 256},
    ),
    # v1: decorrelated MD data (independent runs, training frames thinned by the autocorrelation
    # time, convergence diagnostics); v0 keeps the v1-era single-run pools ("full" preset)
    _spec(
        "AlanineDipeptide",
        "aldp",
        "Boltzmann sampling (LDR): alanine dipeptide, Amber via OpenMM, 300 K, decorrelated MD data.",
        {
            "target_kwargs": {"backend": "openmm", "data_preset": "tiny-decorrelated"},
            "dataset_size": 16,
        },
        kwargs={
            "target_kwargs": {"backend": "openmm", "data_preset": "decorrelated"},
            "batch_size": 256,
        },
        version=1,
    ),
    # v2 (issue 40): the "converged" preset -- a hotter replica-exchange ladder (300-947 K) and
    # 8 + 4 independent 7.5 ns runs: >= 10^4 decorrelated training configurations from runs
    # whose phi > 0 shares agree with their own standard errors
    _spec(
        "AlanineDipeptide",
        "aldp",
        "Boltzmann sampling (LDR): alanine dipeptide, Amber via OpenMM, 300 K, converged MD data (>= 10^4 configurations).",
        {
            "target_kwargs": {"backend": "openmm", "data_preset": "tiny-decorrelated"},
            "dataset_size": 16,
        },
        kwargs={
            "target_kwargs": {"backend": "openmm", "data_preset": "converged"},
            "batch_size": 256,
        },
        version=2,
    ),
]
