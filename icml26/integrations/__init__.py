"""Bridges to other RL libraries; each module imports its library only when used.

* :mod:`icml26.integrations.sb3` -- Stable-Baselines3 vectorized envs (``SubprocVecEnv`` with
  spawned workers) over any ``icml26/`` id.
* :mod:`icml26.integrations.rllib` -- registers every ``icml26/`` id (and the PettingZoo envs)
  with Ray Tune's registry so RLlib algorithms can train on them by name.
"""
