"""The driving family's environments (being built; see its issue)."""
