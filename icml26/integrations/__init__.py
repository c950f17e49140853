"""Bridges to other RL libraries; each module imports its library only when used.

* :mod:`icml26.integrations.sb3` -- Stable-Baselines3 vectorized envs (``SubprocVecEnv`` with
  spawned workers) over any ``icml26/`` id, and ``wrap(env)``: any env with the spaces SB3's
  algorithms accept (unchanged where it already does).
* :mod:`icml26.integrations.wrappers` -- the wrappers ``wrap`` applies: ``NormalizedAction``
  (unbounded Box actions onto documented bounds), ``TokenizedText`` (Text spaces as token
  arrays), ``FlattenDictSpaces`` (Dict spaces as flat Boxes).
* :mod:`icml26.integrations.rllib` -- registers every ``icml26/`` id (and the PettingZoo envs)
  with Ray Tune's registry so RLlib algorithms can train on them by name; Markov games get a
  flat (or action-masked) observation and ``multi_agent_ppo_config`` trains one policy per player.
"""
