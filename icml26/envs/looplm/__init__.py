"""The looplm family: verifiable reasoning problems for looped language models (RLTT, Ouro).

* ``icml26/LoopReasoning-v0`` (:class:`icml26.envs.looplm.env.LoopReasoningEnv`): one-step
  episodes of seeded arithmetic, parity, counting and word problems, with character token ids,
  disjoint train/test problems and batched group entry points (``sample_group``, ``score_group``).
* ``icml26/ReasoningGym-v0`` (:class:`icml26.envs.looplm.reasoning_gym_env.ReasoningGymEnv`):
  reasoning-gym tasks in the same one-step form, for a real pretrained LM.
* :mod:`icml26.envs.looplm.tasks`: the generators and the split; :mod:`.tokenizer`: the vocabulary.

See ``docs/envs/looplm.md``.
"""
