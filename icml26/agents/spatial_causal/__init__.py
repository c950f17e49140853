"""The spatial_causal family's agents (being built; see its issue)."""
