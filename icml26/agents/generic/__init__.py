"""Agents that work on any Gymnasium env: a seeded random policy and a Stable-Baselines3 adapter."""
