"""Agents for ``icml26/SpaCEInterference-v0``: the Spatial Deconfounder and its baselines.

Every agent is an :class:`~icml26.agents.spatial_causal.common.EffectAgent`: ``reset(seed)`` and
``act(observation, info) -> {"direct": [DE], "spillover": [SE], "erf": [3 values] (optional)}``.
Each fits its model to the one data set in the observation (no learning across episodes).

* ``spatial-deconfounder`` (paper; :mod:`.deconfounder`), ``spatial-deconfounder-splus``
* ``sc-diff-means``, ``sc-ols``, ``sc-ols-exposure``, ``sc-spatial``, ``sc-spatialplus``,
  ``sc-s2sls``, ``sc-durbin`` (:mod:`.regression`), ``sc-gcn`` (:mod:`.gcn`)
* ``sc-oracle``: reads the hidden confounder from ``info["confounder"]``; it declares
  ``uses_hidden_confounder = True``, which makes ``run_trial`` reveal ``U`` and mark the trial
  ``reference_only``. It is a reference, never ranked, and no suite runs it.
"""
