"""Agent registrations of the pulse family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

_P = "icml26.agents.pulse"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "pulse",
        "entry_point": f"{_P}.pulse:PULSE",
        "description": "PULSE (paper, as released): pooled context + local initial condition + GRU "
        "rollout reconstructing the window from random starts (within-window relaxation).",
    },
    {
        "name": "pulse-cross",
        "entry_point": f"{_P}.pulse:PULSE",
        "description": "PULSE cross-reconstruction: the context of one window reconstructs another "
        "window of the same recording from that window's own initial condition.",
        "kwargs": {"pairing": "recording"},
    },
    {
        "name": "pulse-simclr",
        "entry_point": f"{_P}.baselines:SimCLR",
        "description": "Contrastive (SimCLR as in the PULSE release): shifted / scaled / jittered "
        "positive, NT-Xent on pooled embeddings.",
    },
    {
        "name": "pulse-mae",
        "entry_point": f"{_P}.baselines:MaskedAutoencoder",
        "description": "Masked autoencoding: 60% of 16-sample segments zeroed, reconstructed from "
        "per-time features by a linear head.",
    },
    {
        "name": "pulse-svae",
        "entry_point": f"{_P}.baselines:SequentialVAE",
        "description": "Sequential VAE (DSVAE-style): static and dynamic latents, learned GRU prior, "
        "ELBO.",
    },
    {
        "name": "pulse-supervised",
        "entry_point": f"{_P}.baselines:Supervised",
        "description": "REFERENCE ONLY, upper bound: encoder trained with cross-entropy on the "
        "pretraining labels.",
    },
    {
        "name": "pulse-random",
        "entry_point": f"{_P}.baselines:RandomEncoder",
        "description": "Null: the shared encoder at its seeded random initialization.",
    },
]
