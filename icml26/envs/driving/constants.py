"""The simulator's constants and tables under their former module name (:mod:`.scenarios`)."""

from icml26.envs.driving.scenarios import DT, LIMITS, MAX_STEER, N_BODIES, TABLES  # noqa: F401
