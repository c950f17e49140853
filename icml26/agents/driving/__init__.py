"""Agents of the driving family (ScenePilot adversarial driving).

* ``scenepilot`` -- :class:`~icml26.agents.driving.scenepilot.ScenePilotAgent`, the paper's method.
* ``driving-ppo-risk`` -- the same PPO without the feasibility gate (risk-only ablation).
* ``scenepilot-released`` -- ScenePilot on the release's reward r = Phi (``reward="released"``): the
  shield is its only feasibility term (ablation arm).
* ``driving-scripted`` -- SafeBench's hand-designed scenario behaviour.
* ``driving-lc`` -- learning-to-collide (REINFORCE over initial scenario parameters).
* ``driving-no-finetune`` -- defense control (zero residual on the base planner).
Generic ``random`` and ``sb3-ppo`` work on both driving envs.

The v1 protocol of the release (per scenario): :mod:`~icml26.agents.driving.phi_pretrain` is Phi's
own phase (states labelled "ego collision within the next 2 s", trained to convergence, frozen,
AUROC on held-out episodes); :mod:`~icml26.agents.driving.pipeline` runs it, trains one adversary per
scenario with the k curriculum walked once, and evaluates adversaries on the same randomized
episodes (collision, pre-collision minimum sigma, boundary band, red lights);
:mod:`~icml26.agents.driving.defense` is the defense phase (a residual PPO on the ego planner,
fine-tuned against a trained adversary in a batched v1/v2 vector env).

Adversary agents read ``info["scenario"]`` in ``act(observation, info)`` when their behaviour
depends on the scenario (scripted, LC). ``ScenePilotAgent.save(path)`` writes a policy that
``ScenePilotAV-v0(adversary=path)`` loads without torch.
"""
