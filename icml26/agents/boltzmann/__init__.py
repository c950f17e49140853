"""Boltzmann-generator agents (LDR family): spline flows with selectable objectives, an oracle.

Agents have ``reset(seed)``, ``act(observation, info)`` (a batch of samples to evaluate) and
``learn(env, budget)``; as samplers they add what the family's metrics need:
``sample(n) -> (x, log_q)`` and ``log_prob(x) -> log_q`` (numpy float64, physical coordinates;
alanine densities w.r.t. Cartesian volume modulo rigid motion).

* :class:`~icml26.agents.boltzmann.flow_agent.FlowSampler` (``flow-ldr``, ``flow-ml``,
  ``flow-lv``, ``flow-rkl``, ``flow-lv-onpolicy``, ``flow-ldr-var``, ``flow-ml-rkl``,
  ``flow-ml-reweighted``, ``flow-fab``; data objectives early-stop on a validation split);
* :class:`~icml26.agents.boltzmann.oracle.ExactSampler` (``boltzmann-oracle``).

Building blocks: :mod:`.flows` (coupling spline flows on R^a x T^b), :mod:`.coordinates`
(standardization, centre-of-mass-free basis, alanine internal coordinates), :mod:`.losses`
(NLL, dispersions, LDR, reverse KL, ML + reverse KL, reweighted NLL, bias log-weights),
:mod:`.ais` (annealed importance sampling for FAB).
"""
