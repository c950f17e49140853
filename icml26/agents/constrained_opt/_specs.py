"""Agent registrations of the constrained_opt family (one class, one name per method)."""

from __future__ import annotations

from typing import Any

_EP = "icml26.agents.constrained_opt.agent:ConstrainedOptAgent"

AGENT_SPECS: list[dict[str, Any]] = [
    {
        "name": "hom-pgd-plus",
        "entry_point": _EP,
        "kwargs": {"method": "hom_pgd_plus"},
        "description": "Hom-PGD+: INN trained per instance to map the ball into the set, PGD in ball coordinates, bisected projection.",
    },
    {
        "name": "hom-pgd-plus-amortized",
        "entry_point": "icml26.agents.constrained_opt.amortized:AmortizedHomPGDAgent",
        "kwargs": {},
        "description": "Hom-PGD+ as the paper runs it: one conditional INN trained per problem family (learn), then every instance solved with it; the release's step-size rule.",
    },
    {
        "name": "hom-pgd-gauge",
        "entry_point": _EP,
        "kwargs": {"method": "hom_pgd_gauge"},
        "description": "Hom-PGD with the exact gauge (radial) homeomorphism: the ceiling INN learning aims for.",
    },
    {
        "name": "co-pgd-exact",
        "entry_point": _EP,
        "kwargs": {"method": "pgd_exact"},
        "description": "PGD with the Euclidean projection onto the set computed by SLSQP (warm-started).",
    },
    {
        "name": "co-penalty",
        "entry_point": _EP,
        "kwargs": {"method": "penalty"},
        "description": "Gradient descent on a quadratic penalty, coefficient x10 every 50 iterations.",
    },
    {
        "name": "co-alm",
        "entry_point": _EP,
        "kwargs": {"method": "alm"},
        "description": "Augmented-Lagrangian gradient method (multiplier update every 50 iterations).",
    },
    {
        "name": "co-slsqp",
        "entry_point": _EP,
        "kwargs": {"method": "slsqp"},
        "description": "scipy SLSQP from the anchor with analytic Jacobians (general-purpose solver row).",
    },
]
