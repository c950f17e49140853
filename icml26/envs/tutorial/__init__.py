"""The tutorial family: one small, real environment that exercises the whole suite.

``icml26/PointReach-v0`` is a damped 2-D double integrator; see
:class:`icml26.envs.tutorial.point_reach.PointReachEnv` and ``docs/envs/point_reach.md``.
"""
