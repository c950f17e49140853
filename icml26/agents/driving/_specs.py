"""Agent registrations of the driving family (entry-point strings only; no heavy imports)."""

from __future__ import annotations

from typing import Any

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "scenepilot",
        "entry_point": "icml26.agents.driving.scenepilot:ScenePilotAgent",
        "description": "ScenePilot (ICML 2026): PPO with risk and feasibility critics, step-level gate, k curriculum.",
    },
    {
        "name": "driving-ppo-risk",
        "entry_point": "icml26.agents.driving.scenepilot:ScenePilotAgent",
        "kwargs": {"risk_only": True},
        "description": "Unshielded risk-only PPO (ScenePilot without the feasibility gate; the paper's ablation).",
    },
    {
        "name": "scenepilot-released",
        "entry_point": "icml26.agents.driving.scenepilot:ScenePilotAgent",
        "kwargs": {"reward": "released"},
        "description": "ScenePilot on the release's own reward r = Phi (the shield is the only feasibility term; ablation arm).",
    },
    {
        "name": "driving-scripted",
        "entry_point": "icml26.agents.driving.baselines:ScriptedAdversary",
        "description": "SafeBench's hand-designed scenario behaviour (CS): trigger distance, scripted speed.",
    },
    {
        "name": "driving-lc",
        "entry_point": "icml26.agents.driving.baselines:LCAgent",
        "description": "Learning-to-collide: REINFORCE over each episode's initial scenario parameters.",
    },
    {
        "name": "driving-no-finetune",
        "entry_point": "icml26.agents.driving.baselines:NoFinetuneEgo",
        "description": "Defense control: the base planner with a zero residual, no fine-tuning.",
    },
]
