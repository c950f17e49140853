"""Optional simulator backends of ScenePilot-v0: MetaDrive (physics) and CARLA (server)."""
