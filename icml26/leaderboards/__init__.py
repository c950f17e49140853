"""Leaderboards: submission bundles, validation, verification by re-run, ranking and pages."""
