"""The markov_games family's agents (being built; see its issue)."""
