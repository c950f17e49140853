"""The looplm family's agents (being built; see its issue)."""
