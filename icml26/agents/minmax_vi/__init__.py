"""Stochastic VI algorithms for ``icml26/StochasticVI-v0`` (:mod:`.algorithms`): the paper's
minibatch FBF, inexact KM and Halpern-anchored FBF, and SGDA, SEG, OGDA and SEG+ baselines.

Agents here read the problem's start, Lipschitz constant and box from reset's ``info`` (the first
``act`` after ``reset``); :func:`~icml26.agents.minmax_vi.algorithms.run_direct` runs the same
algorithms without the env for long experiments."""
