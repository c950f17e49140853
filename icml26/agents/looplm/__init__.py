"""The looplm family's agents: a looped transformer trained with RLTT, GRPO or REINFORCE.

* :mod:`.model`: :class:`~.model.LoopedTransformer` (Ouro-style: shared blocks looped T times,
  per-loop logits, exit gate), :func:`~.model.exit_distribution`, :func:`~.model.ouro_loss`.
* :mod:`.policy`: decoding (fixed loop, exit threshold, exit-weighted mix; per-loop KV cache) and
  :class:`~.policy.LoopedPolicy`, the loop-policy interface the trainers use.
* :mod:`.rl`: :class:`~.rl.LoopRLTrainer` (GRPO, RLTT with uniform/progressive/exit_pdf/learned
  omega, REINFORCE on one rollout path) and the loss functions.
* :mod:`.sft`: the supervised Ouro-loss warm start, cached on disk.
* :mod:`.evaluation`: final-loop and per-loop accuracy, accuracy vs expected depth, pass@k.
* :mod:`.hf`: :class:`~.hf.HFLoopedPolicy` for a local Hugging Face checkpoint (extra ``looplm``).
* :mod:`.agent`: :class:`~.agent.LoopLMAgent`, the protocol agent (registered as
  ``looplm-rltt-{exit-pdf,uniform,progressive,learned}``, ``looplm-grpo``, ``looplm-reinforce``,
  ``looplm-sft``). Beyond ``reset``/``act``/``learn`` it has ``evaluate(env, problems)`` (every
  family metric, batched), which the family's ``run_trial`` uses when present.
"""
