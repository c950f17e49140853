"""Learned force fields for ``icml26/MDForceField-v0`` and the offline S2EF tasks: DKMP (the
paper's dilated shell message passing, :mod:`.models`), SchNet- and PaiNN-style baselines, and
the OpenMM oracle. Agents here also expose ``predict(positions) -> (energies, forces)`` and take
the labelled frames of the task in ``learn(frames, budget, val)``."""
