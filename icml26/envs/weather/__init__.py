"""The weather family's environments (being built; see its issue)."""
