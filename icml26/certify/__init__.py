"""Certified capability claims: what a finite test certifies over a task family.

A *family* is an ``(m, K)`` array of members, each a distribution over ``K`` environments (a
task's scenarios, or a discretized parametric env family); the claim "success >= tau on every
member" is certified by uniform lower bounds that hold together with probability >= 1 - delta.
See docs/methods/capability_eval.md for the derivations.

    import numpy as np
    from icml26.certify import plan_tests, certify_counts, simulate_passes
    members = np.eye(4)                                   # "every scenario" of 4
    plan = plan_tests(members, "chi2", eps=0.05, delta=0.05)
    print(plan.design.radius, plan.n_tests)               # 3.0 (= K - 1), tests to run
    passes = simulate_passes(np.random.default_rng(0), np.full(4, 0.97), plan.counts)
    print(certify_counts(plan, plan.counts, passes, tau=0.9).statement())

* :mod:`.chi2` -- chi^2-divergence, the family's radius, overlap, the optimal design.
* :mod:`.bounds` -- stratified (Hoeffding), importance-weighted (Bernstein), per-environment
  (Clopper-Pearson / Hoeffding + union) and pooled bounds; sample sizes and the Le Cam bound.
* :mod:`.protocols` -- plans and certificates for the protocols the suite compares.
* :mod:`.harness` -- claims on stored trials (``icml26 certify``) and leaderboard entries.
"""

from __future__ import annotations

from icml26.certify.bounds import (
    clopper_pearson_lower,
    iw_bounds,
    n_iw,
    n_lower,
    n_per_env,
    n_pooled,
    n_upper,
    per_env_bounds,
    pooled_bound,
    stratified_bounds,
)
from icml26.certify.chi2 import (
    Design,
    chi2_divergence,
    chi2_radius,
    optimal_design,
    uncovered_mass,
    uniform_design,
)
from icml26.certify.protocols import (
    PROTOCOLS,
    UNIFORM_PROTOCOLS,
    Certificate,
    Plan,
    allocate,
    certify_counts,
    draw_iid,
    plan_tests,
    simulate_passes,
)

__all__ = [
    "Design",
    "chi2_divergence",
    "chi2_radius",
    "optimal_design",
    "uniform_design",
    "uncovered_mass",
    "clopper_pearson_lower",
    "stratified_bounds",
    "iw_bounds",
    "per_env_bounds",
    "pooled_bound",
    "n_upper",
    "n_iw",
    "n_lower",
    "n_per_env",
    "n_pooled",
    "PROTOCOLS",
    "UNIFORM_PROTOCOLS",
    "Plan",
    "Certificate",
    "plan_tests",
    "allocate",
    "certify_counts",
    "simulate_passes",
    "draw_iid",
]
