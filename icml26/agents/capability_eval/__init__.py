"""Evaluators for ``icml26/CapabilityEval-v0`` (:mod:`.evaluators`): the chi^2 protocol of
docs/methods/capability_eval.md, its baselines (IW, uniform design, per-environment
Clopper-Pearson/Hoeffding with a union bound, pooled testing) and the black-box circuit testers.

Agents here read the family, tau, delta and the test budget from reset's ``info`` (the first
``act`` after ``reset``); they act twice per episode: one batch of tests, then the certificate.
:mod:`icml26.certify` runs the same protocols without the env (vectorized over many hidden
systems) for the results page."""
