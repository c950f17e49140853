"""Hom-PGD+ and baselines for ``icml26/ConstrainedOpt-v0``: :mod:`.maps` (ball projection, the
exact gauge map, the INN), :mod:`.solvers` (each method a generator of iterates; :func:`run`
drives one without the env and records times) and :mod:`.agent` (the suite agent).

Agents read ``info["oracle"]`` from reset's info (the first ``act`` after ``reset``) and then
propose one iterate per step, setting ``stop`` after their last one."""
