"""Representation learners for ``icml26/PhysioProbe-v0``: PULSE and its baselines.

Every agent is a :class:`~icml26.agents.pulse.base.RepresentationLearner` on the same small
encoder (:class:`~icml26.agents.pulse.encoder.TSEncoder`): ``learn(data, budget)`` pretrains it
on a :class:`~icml26.envs.pulse.simulator.PhysioData` (recordings x windows x channels x
samples; labels hidden unless the agent declares ``uses_labels``) for ``budget.updates``
gradient updates, and ``act(windows, info) -> embeddings`` returns the pooled representation
(n_windows, embedding_dim). The env's evaluator fits the probe, never the agent.

* ``pulse`` (:mod:`.pulse`): the paper's objective as released -- the within-window relaxation
  of cross-reconstruction; ``pulse-cross``: cross-reconstruction between different windows of
  one recording (the objective of the theory).
* ``pulse-simclr``, ``pulse-mae``, ``pulse-svae`` (:mod:`.baselines`): contrastive, masked
  autoencoding, sequential VAE.
* ``pulse-supervised``: cross-entropy on the pretraining labels (``uses_labels = True``: the
  trial is marked ``reference_only``, an upper bound, never ranked); ``pulse-random``: the
  untrained encoder (the null).

Family additions to the protocol: ``encode(windows) -> (n, emb_dim)`` and ``uses_labels``.
"""
