"""Stochastic min-max games and variational inequalities (arXiv 2602.05531: VIs without bounded
variance). :mod:`.problems` holds the operators, boxes, residuals and noise models; :mod:`.env`
the oracle env ``icml26/StochasticVI-v0``; see ``docs/envs/minmax_vi.md``."""
