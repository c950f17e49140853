"""The markov_games family's environments (being built; see its issue)."""
