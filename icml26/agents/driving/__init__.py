"""The driving family's agents (being built; see its issue)."""
