"""The boltzmann family's agents (being built; see its issue)."""
