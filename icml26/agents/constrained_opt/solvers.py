"""Hom-PGD+ and its baselines, each a generator that yields its current iterate ``x`` once per
iteration; :func:`run` drives one against an oracle and records ``(seconds, x)`` per iterate.

The oracle is a :class:`~icml26.envs.constrained_opt.problems.Problem` or the env's counting
oracle (same methods: ``f``, ``grad``, ``g``, ``jac``, ``radial``, ``radial_grad``, ...).

Step rules (``rule=``, one for all gradient methods of a comparison):

* ``"monotone"`` (default; the v0 tasks): an accept/reject rule on the method's merit function;
  a trial step that does not decrease it is rejected and halves the step, an accepted one grows
  it by 1.5. The first step moves 10% of the set's median radius (x-space methods) or 0.1 in
  the ball (ball-coordinate methods).
* ``"release"``: the homopt release's ``stepsize_rule="adaptive"`` (its first-order loop and
  INN-PGD/PGD optimizers, read at the stored commit; paraphrased): every step is taken,
  ``z <- z - lr grad``, ``lr0 = 0.1``, ``lr <- max(0.999 lr, 1e-6)`` after a step that raised the
  objective. Ball-coordinate methods do not project onto the ball: a trial point whose image
  violates a constraint by more than 1e-5 is bisected back towards the current (feasible)
  iterate (10 halvings, the lower end kept), so the learned map may also be used outside the
  ball. Exact-projection PGD projects only an infeasible trial point and stops when a feasible
  step changes the objective by at most 1e-5; the ball-coordinate methods run ``iters`` steps.

* ``hom_pgd_gauge``: PGD in ball coordinates through the exact gauge map (no learning).
* ``hom_pgd_plus``: Hom-PGD+: an INN trained on the instance maps B into K; PGD in ball
  coordinates with the gradient by a vector-Jacobian product through the INN, and the card's
  bisected projection (BP): a trial point whose image violates a constraint by more than 1e-5 is
  pulled back along the segment from the latent anchor (20 halvings), so iterates stay feasible.
* ``pgd_exact``: PGD in x with the Euclidean projection onto K computed by SLSQP
  (``min |y - v|^2 s.t. g(y) <= 0``, warm-started at the current iterate).
* ``penalty``: gradient steps on ``f + mu/2 sum [g]_+^2``, mu x10 every ``inner`` iterations.
* ``alm``: augmented Lagrangian ``f + (1/2 rho) sum([lam + rho g]_+^2 - lam^2)``, multipliers
  ``lam <- [lam + rho g]_+`` every ``inner`` iterations, rho x2.
* ``slsqp``: scipy's SLSQP from ``x0`` with analytic Jacobians and the box as bounds (the
  general-purpose solver row); one yield, its final point.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import minimize

from icml26.agents.constrained_opt.maps import GaugeMap, INNMap, ball_project

METHODS = ("hom_pgd_plus", "hom_pgd_gauge", "pgd_exact", "penalty", "alm", "slsqp")
RULES = ("monotone", "release", "release-unprojected")
FEAS_TOL = 1e-5
SolverGen = Generator[np.ndarray, None, None]
# the homopt release's INN-PGD defaults (scripts/inn_pgd/_configs.py at the stored commit)
RELEASE_LR0 = 0.1  # learning_rate
RELEASE_DECAY = 0.999  # lr_decay, applied when the objective rose ("adaptive" rule)
RELEASE_MIN_LR = 1e-6  # min_lr
RELEASE_BP_STEPS = 10  # proj_max_steps of the bisected projection
RELEASE_CONV = 1e-5  # convergence_threshold (PGD's objective-change stop)


def _check_rule(rule: str) -> None:
    if rule not in RULES:
        raise ValueError(f"constrained_opt: rule must be one of {RULES}, got {rule!r}")


def _typical_radius(o: Any, seed: int = 0) -> float:
    U = np.random.default_rng([seed, 5]).normal(size=(64, int(o.n)))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return float(np.median(o.radial(U)))


class _Step:
    """The shared accept/reject step-size rule."""

    def __init__(self, eta: float) -> None:
        self.eta = eta
        self.eta0 = eta

    def accept(self) -> None:
        self.eta *= 1.5

    def reject(self) -> None:
        self.eta *= 0.5

    @property
    def stalled(self) -> bool:
        return self.eta < 1e-10 * self.eta0


def _ball_pgd(
    o: Any,
    psi: Any,
    iters: int,
    z0: np.ndarray,
    feasible: Callable[[np.ndarray], np.ndarray] | None,
) -> SolverGen:
    """PGD on ``h(z) = f(psi(z))`` over the unit ball; ``feasible`` maps a trial latent point to
    the latent point actually taken (the bisected projection), or None for an exact map."""
    z = ball_project(z0)
    x = psi.forward(z)
    fx = o.f(x)
    gz = psi.vjp(z, o.grad(x))
    step = _Step(0.1 / max(float(np.linalg.norm(gz)), 1e-12))
    for _ in range(iters):
        zt = ball_project(z - step.eta * gz)
        if feasible is not None:
            zt = feasible(zt)
        xt = psi.forward(zt)
        ft = o.f(xt)
        if ft < fx:
            z, x, fx = zt, xt, ft
            gz = psi.vjp(z, o.grad(x))
            step.accept()
        else:
            step.reject()
        yield x
        if step.stalled:
            return


def _bisect(o: Any, psi: Any, a: np.ndarray, b: np.ndarray, steps: int) -> np.ndarray:
    """The last point found feasible by ``steps`` halvings of ``t`` along ``a -> b`` (``a``
    feasible): ``a + t (b - a)`` with ``psi`` of it within 1e-5 of the set."""
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if o.violation(psi.forward(a + mid * (b - a))) <= FEAS_TOL:
            lo = mid
        else:
            hi = mid
    return a + lo * (b - a)


def _ball_pgd_release(
    o: Any,
    psi: Any,
    iters: int,
    z0: np.ndarray,
    stats: dict[str, Any] | None = None,
    project: bool = True,
) -> SolverGen:
    """The release's step-size rule in latent coordinates (see the module doc): every step
    taken, the trial point projected onto the ball (``project``), then bisected back towards the
    current iterate if its image is infeasible."""
    st = stats if stats is not None else {}
    st.setdefault("bp_calls", 0)
    st.setdefault("bp_triggered", 0)
    z = np.asarray(z0, float).copy()
    x = psi.forward(z)
    fx = o.f(x)
    lr = RELEASE_LR0
    for _ in range(iters):
        zt = z - lr * psi.vjp(z, o.grad(x))
        if project:
            zt = ball_project(zt)
        xt = psi.forward(zt)
        st["bp_calls"] += 1
        if not o.violation(xt) <= FEAS_TOL:  # NaN counts as infeasible
            st["bp_triggered"] += 1
            zt = _bisect(o, psi, z, zt, RELEASE_BP_STEPS)
            xt = psi.forward(zt)
        ft = o.f(xt)
        if ft > fx:
            lr = max(lr * RELEASE_DECAY, RELEASE_MIN_LR)
        z, x, fx = zt, xt, ft
        yield x


def hom_pgd_gauge(o: Any, iters: int = 500, rule: str = "monotone", **_: Any) -> SolverGen:
    """Hom-PGD with the exact radial (gauge) homeomorphism."""
    _check_rule(rule)
    if rule != "monotone":
        z0 = np.zeros(int(o.n))
        yield from _ball_pgd_release(o, GaugeMap(o), iters, z0, project=rule == "release")
        return
    yield from _ball_pgd(o, GaugeMap(o), iters, np.zeros(int(o.n)), None)


def bisected_projection(
    o: Any, psi: Any, anchor: np.ndarray, steps: int = 20, stats: dict[str, Any] | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """The card's BP: keep ``zt`` if ``psi(zt)`` is feasible within 1e-5, else bisect on
    ``t in [0, 1]`` along ``anchor -> zt`` and keep the last feasible point. ``stats`` counts
    ``bp_calls`` and ``bp_triggered`` (how often bisection was needed)."""
    st = stats if stats is not None else {}
    st.setdefault("bp_calls", 0)
    st.setdefault("bp_triggered", 0)

    def proj(zt: np.ndarray) -> np.ndarray:
        st["bp_calls"] += 1
        if o.violation(psi.forward(zt)) <= FEAS_TOL:
            return zt
        st["bp_triggered"] += 1
        return _bisect(o, psi, anchor, zt, steps)

    return proj


def hom_pgd_plus(
    o: Any,
    iters: int = 500,
    inn: INNMap | None = None,
    train_iters: int = 600,
    layers: int = 4,
    hidden: int = 64,
    seed: int = 0,
    info: dict[str, Any] | None = None,
    rule: str = "monotone",
    quality: bool = True,
    **_: Any,
) -> SolverGen:
    """Hom-PGD+ (INN map + bisected projection); trains the INN first unless one is given (a
    per-instance :class:`~icml26.agents.constrained_opt.maps.INNMap`, or a conditional map bound
    to this instance, :meth:`~icml26.agents.constrained_opt.maps.CondINNMap.bind`).
    ``info`` (a dict) receives ``train_time``, the held-out map quality (``eps_inn``; skipped
    with ``quality=False``) and ``setup_time`` (everything before the first iteration)."""
    _check_rule(rule)
    n = int(o.n)
    t0 = time.perf_counter()
    if inn is None:
        inn = INNMap(n, np.asarray(o.x0), layers=layers, hidden=hidden, seed=seed)
        inn.fit(o, iters=train_iters, seed=seed)
    anchor = np.zeros(n)
    if o.violation(inn.forward(anchor)) > FEAS_TOL:  # fall back on the preimage of x0
        anchor = ball_project(inn.inverse(np.asarray(o.x0, float)))
    if info is not None:
        info["train_time"] = inn.train_time
        if quality:
            info["eps_inn"] = inn.quality(o)
        info["anchor_feasible"] = bool(o.violation(inn.forward(anchor)) <= FEAS_TOL)
        info["setup_time"] = time.perf_counter() - t0  # training + the eps_inn estimate
    if not o.violation(inn.forward(anchor)) <= FEAS_TOL:
        yield np.asarray(o.x0, float).copy()  # no feasible anchor: the map is unusable
        return
    if rule != "monotone":
        yield from _ball_pgd_release(o, inn, iters, anchor, info, project=rule == "release")
        return
    yield from _ball_pgd(o, inn, iters, anchor, bisected_projection(o, inn, anchor, stats=info))


def project_exact(o: Any, v: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v`` onto K by SLSQP warm-started at ``start`` (local for
    non-convex K)."""
    res = minimize(
        lambda y: 0.5 * float((y - v) @ (y - v)),
        start,
        jac=lambda y: y - v,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda y: -o.g(y), "jac": lambda y: -o.jac(y)}],
        options={"maxiter": 200, "ftol": 1e-12},
    )
    y = np.asarray(res.x, float)
    return y if o.violation(y) <= FEAS_TOL else start


def _timed_projection(
    o: Any, info: dict[str, Any] | None
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """:func:`project_exact`, counting calls and their CPU / wall seconds into ``info``."""
    st = info if info is not None else {}
    st.setdefault("proj_calls", 0)
    st.setdefault("proj_cpu", [])
    st.setdefault("proj_wall", [])

    def proj(v: np.ndarray, start: np.ndarray) -> np.ndarray:
        c0, t0 = time.process_time(), time.perf_counter()
        y = project_exact(o, v, start)
        st["proj_calls"] += 1
        st["proj_cpu"].append(time.process_time() - c0)
        st["proj_wall"].append(time.perf_counter() - t0)
        return y

    return proj


def _pgd_exact_release(o: Any, iters: int, info: dict[str, Any] | None = None) -> SolverGen:
    proj = _timed_projection(o, info)
    x = np.asarray(o.x0, float).copy()
    fx = o.f(x)
    lr = RELEASE_LR0
    for _ in range(iters):
        xt = x - lr * o.grad(x)
        if not o.violation(xt) <= FEAS_TOL:  # the release projects infeasible points only
            xt = proj(xt, x)
        ft = o.f(xt)
        if ft > fx:
            lr = max(lr * RELEASE_DECAY, RELEASE_MIN_LR)
        done = abs(ft - fx) <= RELEASE_CONV and o.violation(xt) <= FEAS_TOL
        x, fx = xt, ft
        yield x
        if done:
            return


def pgd_exact(
    o: Any,
    iters: int = 500,
    rule: str = "monotone",
    info: dict[str, Any] | None = None,
    skip_feasible: bool = False,
    **_: Any,
) -> SolverGen:
    """PGD with the exact projection; ``info`` (a dict) receives ``proj_calls`` and the CPU /
    wall seconds of every projection (``proj_cpu``, ``proj_wall``). ``skip_feasible``: a
    feasible trial point is its own projection, so it is not passed to SLSQP (the release rule
    always does this)."""
    _check_rule(rule)
    if rule != "monotone":
        yield from _pgd_exact_release(o, iters, info)
        return
    proj = _timed_projection(o, info)
    x = np.asarray(o.x0, float).copy()
    fx, g = o.f(x), o.grad(x)
    step = _Step(0.1 * _typical_radius(o) / max(float(np.linalg.norm(g)), 1e-12))
    for _ in range(iters):
        xt = x - step.eta * g
        if not (skip_feasible and o.violation(xt) <= FEAS_TOL):
            xt = proj(xt, x)
        ft = o.f(xt)
        if ft < fx:
            x, fx = xt, ft
            g = o.grad(x)
            step.accept()
        else:
            step.reject()
        yield x
        if step.stalled:
            return


def _merit_descent(
    o: Any,
    iters: int,
    inner: int,
    merit: Callable[[np.ndarray], tuple[float, np.ndarray]],
    outer: Callable[[np.ndarray], None],
) -> SolverGen:
    x = np.asarray(o.x0, float).copy()
    mx, g = merit(x)
    step = _Step(0.1 * _typical_radius(o) / max(float(np.linalg.norm(g)), 1e-12))
    for k in range(iters):
        xt = x - step.eta * g
        mt, gt = merit(xt)
        if mt < mx:
            x, mx, g = xt, mt, gt
            step.accept()
        else:
            step.reject()
        yield x
        if (k + 1) % inner == 0:
            outer(x)
            mx, g = merit(x)
            step.eta = max(step.eta, 1e-3 * step.eta0)


def penalty(o: Any, iters: int = 500, inner: int = 50, mu0: float = 10.0, **_: Any) -> SolverGen:
    mu = [mu0]

    def merit(x: np.ndarray) -> tuple[float, np.ndarray]:
        gv = np.maximum(o.g(x), 0.0)
        return o.f(x) + 0.5 * mu[0] * float(gv @ gv), o.grad(x) + mu[0] * (o.jac(x).T @ gv)

    def outer(_: np.ndarray) -> None:
        mu[0] *= 10.0

    yield from _merit_descent(o, iters, inner, merit, outer)


def alm(o: Any, iters: int = 500, inner: int = 50, rho0: float = 10.0, **_: Any) -> SolverGen:
    m = len(o.g(np.asarray(o.x0, float)))
    lam, rho = [np.zeros(m)], [rho0]

    def merit(x: np.ndarray) -> tuple[float, np.ndarray]:
        s = np.maximum(lam[0] + rho[0] * o.g(x), 0.0)
        val = o.f(x) + (float(s @ s) - float(lam[0] @ lam[0])) / (2 * rho[0])
        return val, o.grad(x) + o.jac(x).T @ s

    def outer(x: np.ndarray) -> None:
        lam[0] = np.maximum(lam[0] + rho[0] * o.g(x), 0.0)
        rho[0] *= 2.0

    yield from _merit_descent(o, iters, inner, merit, outer)


def slsqp(o: Any, iters: int = 500, timed: bool = False, **_: Any) -> SolverGen:
    """SLSQP from ``x0``; one yield (its final point), or with ``timed=True`` every SLSQP
    iterate as ``(x, wall, cpu)`` stamped when SLSQP reached it (:func:`run` reads the stamps),
    then the final point."""
    stamps: list[tuple[np.ndarray, float, float]] = []

    def cb(xk: np.ndarray) -> None:
        stamps.append((np.array(xk, float), time.perf_counter(), time.process_time()))

    res = minimize(
        o.f,
        np.asarray(o.x0, float),
        jac=o.grad,
        method="SLSQP",
        bounds=list(zip(np.asarray(o.lb, float), np.asarray(o.ub, float))),
        constraints=[{"type": "ineq", "fun": lambda x: -o.g(x), "jac": lambda x: -o.jac(x)}],
        options={"maxiter": iters, "ftol": 1e-10},
        callback=cb if timed else None,
    )
    if timed:
        yield from stamps  # type: ignore[misc]
    yield np.asarray(res.x, float)


SOLVERS: dict[str, Callable[..., SolverGen]] = {
    "hom_pgd_plus": hom_pgd_plus,
    "hom_pgd_gauge": hom_pgd_gauge,
    "pgd_exact": pgd_exact,
    "penalty": penalty,
    "alm": alm,
    "slsqp": slsqp,
}


def start(method: str, oracle: Any, params: dict[str, Any]) -> SolverGen:
    if method not in SOLVERS:
        raise ValueError(f"constrained_opt: method must be one of {METHODS}, got {method!r}")
    return SOLVERS[method](oracle, **params)


@dataclass
class Trace:
    """One :func:`run`: wall seconds (``times``) and CPU seconds of this process (``cpu``) since
    the start, and the iterate, per yielded iterate."""

    times: list[float] = field(default_factory=list)
    xs: list[np.ndarray] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    cpu: list[float] = field(default_factory=list)

    @property
    def x(self) -> np.ndarray:
        return self.xs[-1]


def run(
    method: str, oracle: Any, params: dict[str, Any] | None = None, max_seconds: float = np.inf
) -> Trace:
    """Drive a solver to the end (or ``max_seconds``), recording every iterate with its time."""
    tr = Trace()
    params = dict(params or {})
    if method in ("hom_pgd_plus", "pgd_exact"):
        params["info"] = tr.info
    return drive(lambda: start(method, oracle, params), max_seconds, tr)


def drive(
    make: Callable[[], Any], max_seconds: float = np.inf, trace: Trace | None = None
) -> Trace:
    """Run the iterate generator ``make()`` (its creation timed too) to the end or past
    ``max_seconds`` of wall time, stamping each iterate with wall and CPU seconds."""
    tr = trace if trace is not None else Trace()
    c0, t0 = time.process_time(), time.perf_counter()
    for x in make():
        if isinstance(x, tuple):  # an iterate stamped by the solver itself (timed SLSQP)
            x, t, c = x[0], x[1] - t0, x[2] - c0
        else:
            t, c = time.perf_counter() - t0, time.process_time() - c0
        tr.cpu.append(c)
        tr.times.append(t)
        tr.xs.append(np.array(x, float))
        if t > max_seconds:
            break
    return tr


def time_to_gap(
    trace: Trace, oracle: Any, f_best: float, gap: float, tol: float = FEAS_TOL
) -> float:
    """First time a feasible iterate (violation <= tol) is within relative ``gap`` of ``f_best``
    (inf if never)."""
    thr = f_best + gap * max(abs(f_best), 1e-8)
    for t, x in zip(trace.times, trace.xs):
        if oracle.violation(x) <= tol and oracle.f(x) <= thr:
            return t
    return float("inf")
