"""Agent registrations of the looplm family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

_EP = "icml26.agents.looplm.agent:LoopLMAgent"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "looplm-rltt-exit-pdf",
        "entry_point": _EP,
        "kwargs": {"algo": "rltt", "omega": "exit_pdf"},
        "description": "RLTT: per-loop log-probs weighted by the model's own exit distribution (paper).",
    },
    {
        "name": "looplm-rltt-uniform",
        "entry_point": _EP,
        "kwargs": {"algo": "rltt", "omega": "uniform"},
        "description": "RLTT with uniform loop weights 1/T (paper).",
    },
    {
        "name": "looplm-rltt-progressive",
        "entry_point": _EP,
        "kwargs": {"algo": "rltt", "omega": "progressive"},
        "description": "RLTT with progressive loop weights t^alpha / sum s^alpha (paper).",
    },
    {
        "name": "looplm-rltt-learned",
        "entry_point": _EP,
        "kwargs": {"algo": "rltt", "omega": "learned"},
        "description": "RLTT with learned loop weights softmax(w / tau), w at 10x the lr (paper).",
    },
    {
        "name": "looplm-grpo",
        "entry_point": _EP,
        "kwargs": {"algo": "grpo"},
        "description": "GRPO on the final loop (clipped ratio, same KL placement as RLTT): the baseline.",
    },
    {
        "name": "looplm-reinforce",
        "entry_point": _EP,
        "kwargs": {"algo": "reinforce"},
        "description": "Plain REINFORCE with a group-mean baseline on the final loop.",
    },
    {
        "name": "looplm-sft",
        "entry_point": _EP,
        "kwargs": {"algo": "sft"},
        "description": "The supervised Ouro-loss warm start alone (no RL): the common starting point.",
    },
]
