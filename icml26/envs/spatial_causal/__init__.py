"""The spatial_causal family's environments (being built; see its issue)."""
