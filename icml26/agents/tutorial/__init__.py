"""Tutorial agents for ``icml26/PointReach-v0`` (a PD controller, the env's exact solution)."""
