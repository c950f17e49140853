"""The looplm family's environments (being built; see its issue)."""
