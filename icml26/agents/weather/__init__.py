"""The weather family's agents (being built; see its issue)."""
