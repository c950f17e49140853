"""The driving family: ScenePilot adversarial driving scenarios (ICML 2026).

* ``icml26/ScenePilot-v0`` (:class:`~icml26.envs.driving.env.ScenePilotEnv`): the agent is the
  adversary in one of the 8 SafeBench pre-crash scenarios, the ego is a planner under test.
* ``icml26/ScenePilotAV-v0`` (:class:`~icml26.envs.driving.env.ScenePilotAVEnv`): the agent is the
  ego car facing an adversary policy (adversarial fine-tuning).

Backends: ``kinematic`` (default, vectorized NumPy), ``metadrive`` and ``carla`` (optional).
sigma lives in :mod:`.feasibility`, Phi in :mod:`.risk`, the layouts in :mod:`.scenarios`.
This module stays cheap to import; the classes load lazily.
"""

from __future__ import annotations

from icml26._lazy import lazy_exports

_LAZY = {
    "ScenePilotEnv": "icml26.envs.driving.env",
    "ScenePilotAVEnv": "icml26.envs.driving.env",
    "ScenePilotVectorEnv": "icml26.envs.driving.env",
    "driving_score": "icml26.envs.driving.env",
    "attack_score": "icml26.envs.driving.env",
    "FeasibilityParams": "icml26.envs.driving.feasibility",
    "sigma_reference": "icml26.envs.driving.feasibility",
    "RiskPredictor": "icml26.envs.driving.risk",
    "LAYOUTS": "icml26.envs.driving.scenarios",
    "scripted_adversary_action": "icml26.envs.driving.scenarios",
}

__getattr__, __all__ = lazy_exports(__name__, _LAZY)
