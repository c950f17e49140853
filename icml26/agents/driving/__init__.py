"""Agents of the driving family (ScenePilot adversarial driving).

* ``scenepilot`` -- :class:`~icml26.agents.driving.scenepilot.ScenePilotAgent`, the paper's method.
* ``driving-ppo-risk`` -- the same PPO without the feasibility gate (risk-only ablation).
* ``driving-scripted`` -- SafeBench's hand-designed scenario behaviour.
* ``driving-lc`` -- learning-to-collide (REINFORCE over initial scenario parameters).
* ``driving-no-finetune`` -- defense control (zero residual on the base planner).
Generic ``random`` and ``sb3-ppo`` work on both driving envs.

Adversary agents read ``info["scenario"]`` in ``act(observation, info)`` when their behaviour
depends on the scenario (scripted, LC). ``ScenePilotAgent.save(path)`` writes a policy that
``ScenePilotAV-v0(adversary=path)`` loads without torch.
"""
