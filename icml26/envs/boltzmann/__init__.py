"""The boltzmann family's environments (being built; see its issue)."""
