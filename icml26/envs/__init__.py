"""Environments, one sub-package per method family (see ``icml26.FAMILIES``).

Each family folder holds the problem, its simulator and its exact metrics. Family
``__init__`` modules stay cheap to import: heavy simulators load inside the function or class
that needs them.
"""
