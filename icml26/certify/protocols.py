"""Evaluation protocols: plan the tests (design, sample size, allocation), then certify.

    from icml26.certify import plan_tests, certify_counts
    plan = plan_tests(members, "chi2", eps=0.05, delta=0.05, budget=20_000)
    passes = ...                                   # run plan.counts[e] tests on each environment e
    cert = certify_counts(plan, plan.counts, passes, tau=0.9)
    print(cert.statement())

Protocols (docs/methods/capability_eval.md, "Protocols in the suite"):

``chi2``               optimal design (min chi^2-radius), n = n_upper, stratified certificate
                       (i.i.d. draws and importance weights when the budget is below the
                       number of environments the design uses)
``iw``                 the optimal design drawn i.i.d., importance weights, Bernstein certificate
``uniform``            the stratified certificate on the uniform design
``per-env``            equal tests per environment, Clopper-Pearson at delta / K' (union bound)
``per-env-hoeffding``  the same with Hoeffding bounds
``pooled``             tests from the uniform design, one pooled Clopper-Pearson bound reported
                       for every member (NOT a uniform certificate)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26.certify.bounds import (
    check_level,
    iw_bounds,
    n_iw,
    n_per_env,
    n_pooled,
    n_upper,
    per_env_bounds,
    pooled_bound,
    stratified_bounds,
)
from icml26.certify.chi2 import Design, as_family, optimal_design, uniform_design

__all__ = [
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

PROTOCOLS = ("chi2", "iw", "uniform", "per-env", "per-env-hoeffding", "pooled")
#: protocols whose bounds hold for every member at once with probability >= 1 - delta
UNIFORM_PROTOCOLS = ("chi2", "iw", "uniform", "per-env", "per-env-hoeffding")


@dataclass(frozen=True)
class Plan:
    """What a protocol will do: its ``design`` (with the family's chi^2-radius), the tests its
    sample-size rule asks for (``n_needed``; ``None`` when overlap fails for the whole
    family), the tests it runs (``n_tests``, capped by the budget) and, for stratified
    protocols, their allocation ``counts`` (K,). ``iid`` protocols draw their environments from
    ``design.p`` instead (``counts`` is then the expected allocation)."""

    protocol: str
    members: np.ndarray
    design: Design
    n_needed: int | None
    n_tests: int
    counts: np.ndarray
    eps: float
    delta: float
    iid: bool = False

    @property
    def capped(self) -> bool:
        """True when the budget is below what the sample-size rule asks for."""
        return self.n_needed is None or self.n_tests < self.n_needed


@dataclass(frozen=True)
class Certificate:
    """Lower bounds on every member's success rate and what they certify.

    ``bounds`` (m,) hold together with probability >= 1 - delta when ``uniform``; the claim
    "success >= tau on every member" is ``certified`` when ``min(bounds) >= tau``.
    ``uncovered`` (m,) is each member's mass on environments no test reached."""

    protocol: str
    bounds: np.ndarray
    tau: float
    delta: float
    n_tests: int
    radius: float
    uncovered: np.ndarray
    uniform: bool

    @property
    def certified(self) -> bool:
        return bool(self.bounds.min() >= self.tau)

    @property
    def overlap(self) -> bool:
        return bool(np.all(self.uncovered <= 1e-9))

    @property
    def certifiable(self) -> bool:
        """False when some member's untested mass alone keeps it below tau: no finite test on
        this design certifies the claim."""
        return bool(np.all(1.0 - self.uncovered >= self.tau - 1e-12))

    def statement(self, names: list[str] | None = None) -> str:
        names = names or [f"member {j}" for j in range(len(self.bounds))]
        j = int(np.argmin(self.bounds))
        how = (
            f"{self.protocol} protocol, delta = {self.delta:g}, {self.n_tests:,} tests, "
            f"chi^2-radius {self.radius:.4g}"
        )
        if not self.certifiable:
            bad = [names[i] for i in np.flatnonzero(1.0 - self.uncovered < self.tau - 1e-12)]
            return (
                f"overlap fails: {', '.join(bad)} put mass up to {self.uncovered.max():.3g} on "
                f"environments no test reaches; no finite test certifies success >= {self.tau:g} "
                f"on every member ({how})"
            )
        if not self.uniform:
            kind = "NOT a uniform certificate: the bound holds for the pooled design only"
            verdict = "claims" if self.certified else "does not claim"
            return (
                f"{verdict} success >= {self.tau:g} on every member (pooled lower bound "
                f"{self.bounds.min():.4f}; {kind}; {how})"
            )
        if self.certified:
            return (
                f"certified: success >= {self.tau:g} on every member with probability >= "
                f"{1 - self.delta:g} (smallest lower bound {self.bounds[j]:.4f}, {names[j]}; {how})"
            )
        return (
            f"not certified: smallest lower bound {self.bounds[j]:.4f} < {self.tau:g} "
            f"({names[j]}; {how})"
        )


def allocate(p: np.ndarray, n: int, budget: int | None = None) -> np.ndarray:
    """Stratified allocation ``ceil(n p(e))``; when that exceeds ``budget``, the largest-remainder
    allocation of exactly ``budget`` tests."""
    p = np.asarray(p, dtype=np.float64)
    counts = np.ceil(n * p - 1e-9).astype(np.int64)
    if budget is None or counts.sum() <= budget:
        return counts
    raw = budget * p
    counts = np.floor(raw).astype(np.int64)
    rest = int(budget - counts.sum())
    if rest > 0:
        order = np.argsort(-(raw - counts), kind="stable")
        counts[order[:rest]] += 1
    return counts


def _check_budget(budget: int | None) -> int | None:
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ValueError(f"budget: expected an int >= 1 or None, got {budget!r}")
    return int(budget)


def plan_tests(
    members: np.ndarray,
    protocol: str = "chi2",
    *,
    eps: float = 0.05,
    delta: float = 0.05,
    budget: int | None = None,
    testable: np.ndarray | None = None,
) -> Plan:
    """The protocol's design, sample size for margin ``eps`` at level ``delta``, and allocation.

    ``testable`` (K,) marks the environments a test may use (default all); members with mass
    elsewhere lack overlap, and their radius is infinite."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol: expected one of {PROTOCOLS}, got {protocol!r}")
    q = as_family(members)
    delta = check_level(delta)
    budget = _check_budget(budget)
    m, k = q.shape
    if protocol in ("chi2", "iw"):
        design = optimal_design(q, testable)
    elif protocol in ("uniform", "pooled"):
        design = uniform_design(q, testable)
    else:  # per-env: every testable environment some member uses, equally
        mask = np.ones(k, dtype=bool) if testable is None else np.asarray(testable, dtype=bool)
        support = mask & (q.sum(axis=0) > 0)
        design = uniform_design(q, support if support.any() else mask)
    cover = 1.0 + design.covered_radius  # the variance factor of the tested parts
    if protocol in ("chi2", "uniform"):
        needed: int | None = n_upper(cover - 1.0, m, eps, delta)
    elif protocol == "iw":
        pos = design.p > 0
        wmax = float((q[:, pos] / design.p[pos]).max())
        needed = n_iw(cover - 1.0, m, eps, delta, wmax)
    elif protocol in ("per-env", "per-env-hoeffding"):
        needed = n_per_env(int((design.p > 0).sum()), eps, delta)
    else:
        needed = n_pooled(eps, delta)
    if not np.any(1.0 - design.uncovered > 0):
        needed = None
    n = needed if needed is not None else (budget or 0)
    if budget is not None:
        n = min(n, budget)
    counts = allocate(design.p, n, budget)
    iid = protocol == "iw"
    if protocol == "chi2" and design.p[counts == 0].sum() > 0.01:
        # fewer tests than strata: a stratified allocation would leave over 1% of the design
        # untested (counted as failures); draw i.i.d. from the design and weight instead
        iid, counts = True, allocate(design.p, n, n)
    return Plan(
        protocol=protocol,
        members=q,
        design=design,
        n_needed=needed,
        n_tests=int(counts.sum()),
        counts=counts,
        eps=float(eps),
        delta=delta,
        iid=iid,
    )


def certify_counts(
    plan: Plan, tests: np.ndarray, passes: np.ndarray, tau: float
) -> Certificate | list[Certificate]:
    """The plan's certificate from the tests run and passed per environment (``(K,)``, or
    ``(S, K)`` for S hidden systems at once: then a list of S certificates)."""
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 0 <= tau <= 1:
        raise ValueError(f"tau: expected a success level in [0, 1], got {tau!r}")
    q, delta = plan.members, plan.delta
    s = np.asarray(passes, dtype=np.float64)
    t = np.broadcast_to(np.asarray(tests, dtype=np.float64), np.broadcast(tests, s).shape)
    s = np.broadcast_to(s, t.shape)
    proto = plan.protocol
    if proto == "iw" or (proto == "chi2" and plan.iid):
        bounds = iw_bounds(q, plan.design.p, t, s, delta)
    elif proto in ("chi2", "uniform"):
        bounds = stratified_bounds(q, t, s, delta)
    elif proto in ("per-env", "per-env-hoeffding"):
        method = "hoeffding" if proto.endswith("hoeffding") else "clopper-pearson"
        bounds = per_env_bounds(q, t, s, delta, method)
    else:
        pooled = pooled_bound(t, s, delta)
        bounds = np.repeat(np.asarray(pooled)[..., None], q.shape[0], axis=-1)
    reached = (t > 0).astype(np.float64)
    uncovered = np.clip(1.0 - reached @ q.T, 0.0, 1.0)
    n_tests = t.sum(axis=-1)

    def one(b: np.ndarray, u: np.ndarray, n: float) -> Certificate:
        return Certificate(
            protocol=proto,
            bounds=b,
            tau=float(tau),
            delta=delta,
            n_tests=int(n),
            radius=plan.design.radius,
            uncovered=u,
            uniform=proto in UNIFORM_PROTOCOLS,
        )

    if bounds.ndim == 1:
        return one(bounds, uncovered, float(n_tests))
    return [one(b, u, n) for b, u, n in zip(bounds, uncovered, n_tests)]


def simulate_passes(
    rng: np.random.Generator, profiles: np.ndarray, tests: np.ndarray
) -> np.ndarray:
    """Binomial passes of ``tests`` (K,) or (S, K) tests on systems with success ``profiles``
    (S, K) or (K,): the stochastic regime's outcome model."""
    f = np.asarray(profiles, dtype=np.float64)
    t = np.asarray(tests, dtype=np.int64)
    return rng.binomial(np.broadcast_to(t, np.broadcast(t, f).shape), f).astype(np.int64)


def draw_iid(
    rng: np.random.Generator, p: np.ndarray, n: int, size: int | None = None
) -> np.ndarray:
    """Multinomial counts of ``n`` i.i.d. draws from design ``p`` (the ``iw`` protocol)."""
    return rng.multinomial(n, np.asarray(p, dtype=np.float64), size=size).astype(np.int64)
