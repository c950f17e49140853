"""Agents for ``icml26/SpaCEInterference-v0``: the Spatial Deconfounder and its baselines.

Every agent is an :class:`~icml26.agents.spatial_causal.common.EffectAgent`: ``reset(seed)`` and
``act(observation, info) -> {"direct": [DE], "spillover": [SE], "erf": [m values] (optional)}``
(m = ``len(info["erf_levels"])``, 3 by default).
Each fits its model to the one data set in the observation (no learning across episodes).

* ``spatial-deconfounder`` (paper, graph adaptation; :mod:`.deconfounder`),
  ``spatial-deconfounder-splus``, ``spatial-deconfounder-ref`` (the reference patch model on
  lattices; :mod:`.reference`)
* ``sc-ols`` (the null estimator: SE = 0), ``sc-diff-means``, ``sc-ols-exposure``, ``sc-spatial``,
  ``sc-spatialplus``, ``sc-s2sls``, ``sc-durbin``, ``sc-gm-error`` (:mod:`.regression`),
  ``sc-ipw``, ``sc-aipw``, ``sc-ht`` (:mod:`.weighting`), ``sc-gcn`` (:mod:`.gcn`)
* :mod:`.diagnostics`: R^2 of the hidden confounder on a substitute confounder and on proxies
  (agents that build one expose it as ``latent``, shape (n, d), NaN where undefined)
* ``sc-oracle``: reads the hidden confounder from ``info["confounder"]``; it declares
  ``uses_hidden_confounder = True``, which makes ``run_trial`` reveal ``U`` and mark the trial
  ``reference_only``. It is a reference, never ranked, and no suite runs it.
"""
