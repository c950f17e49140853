"""Seeded simulator of spatial confounding with interference (the Spatial Deconfounder setting).

One call of :func:`simulate` draws a graph (grid, lattice with holes or random geometric graph),
a smooth latent confounder ``U`` (hidden from agents), covariates ``X``, a binary treatment
``A ~ Bernoulli(sigmoid(s (c_A U_t + X b_A + sigma_eta eta) + mu))`` and an outcome with direct
and spillover effects::

    e_i   = sum_j W_ij A_j                       (exposure mapping over the DGP radius-r ball)
    mu_i(a, e) = tau a + h a X_1 + gamma s(e) + alpha U_i s(e) + c_Y g(U_y,i) + X_i b_Y
    Y_i   = mu_i(A_i, e_i) + eps_i,   eps_i ~ N(0, sigma^2)

with ``s(e) = e + nl (e^2 - e)`` and ``g(u) = u + nl (u^2 - 1) / sqrt(2)`` (``nl`` the
nonlinearity). The method card's default: 40 x 40 queen grid, GP length-scale 8, ``c_A = c_Y = 1``,
``tau = 1``, ``gamma = 0.5``, ``h = 0.3``, ``sigma = 0.5``, ``sigma_eta = 0.5``.

Counterfactuals share each unit's noise ``eps_i`` (Spatial-CI's construction): own treatment set
to 0/1 with neighbours observed; every DGP neighbour set to 0/1 with own treatment observed; a
random half of the neighbours treated. The truth is::

    DE = mean_i [Y_i(1, A_N obs) - Y_i(0, A_N obs)]     SE = mean_i [Y_i(A_i obs, 1_N) - Y_i(A_i obs, 0_N)]
    ERF = mean_i [Y_i(A_i obs, 0_N), Y_i(A_i obs, half_N), Y_i(A_i obs, 1_N)]

(with ``erf_points = m > 3`` the ERF is scored at m shares ``q_j = j / (m - 1)`` of treated
neighbours, a random ``floor(q_j k)`` of the ``k`` treated; drawn after everything else)

averaged over the *scored* units (interior units with full neighbourhoods on lattices, as in
Spatial-CI; units with at least one neighbour on random geometric graphs). Difficulty scores:
Moran's I of ``U`` and SpaCE's confounding score (how far the direct/spillover estimates of a
flexible regression move when ``U`` is dropped, divided by sd(Y)).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from icml26.envs.spatial_causal import graphs
from icml26.envs.spatial_causal.fields import CONFOUNDER_KINDS, sample_confounder, standardize

__all__ = [
    "GRAPH_KINDS",
    "VARIANTS",
    "ERF_LEVELS",
    "SimulationConfig",
    "SpatialCausalData",
    "simulate",
    "confounding_scores",
    "config_for_variant",
    "OutcomeModel",
    "counterfactual_table",
]

GRAPH_KINDS = ("grid", "holes", "rgg")
ERF_LEVELS = ("none", "half", "all")  # neighbours treated in the three ERF counterfactuals

# Stress variants of the method card (Spatial-CI space-data/Snakefile_{asym,confmod,singlecause},
# conf/spaceenv/*sparse_*, nonlocal_*, rad2). Each maps to SimulationConfig overrides.
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "radius2": {"radius": 2},
    "nonlocal": {"nonlocal_confounding": True, "length_scale": 4.0},
    "confmod": {"confounder_modulated_spillover": 0.5},
    "asym": {"asymmetric": True},
    "sparse10": {"treated_fraction": 0.1},
    "sparse30": {"treated_fraction": 0.3},
    "sparse70": {"treated_fraction": 0.7},
    "singlecause10": {"confounder": "clustered", "cluster_fraction": 0.1},
    "singlecause20": {"confounder": "clustered", "cluster_fraction": 0.2},
    "singlecause30": {"confounder": "clustered", "cluster_fraction": 0.3},
    "misspec_radius": {"radius": 2, "reported_radius": 1},
    "nonlinear": {"nonlinearity": 1.0},
}


@dataclass(frozen=True)
class SimulationConfig:
    """Every knob of the simulator (see the module docstring for the equations)."""

    graph: str = "grid"  # grid | holes | rgg
    n_rows: int = 40
    n_cols: int = 40
    n_units: int = 1600  # rgg only
    adjacency: str = "queen"  # lattices: queen (8) or rook (4)
    hole_fraction: float = 0.15  # holes only: share of lattice cells removed
    n_holes: int = 4
    mean_degree: float = 6.0  # rgg only
    max_degree: int = 8  # rgg only
    radius: int = 1  # interference radius of the DGP (hops)
    reported_radius: int | None = None  # radius shown to agents (None = radius)
    exposure_kernel: str = "mean"  # mean | inverse_hop
    confounder: str = "auto"  # auto | gp | spde | icar | clustered
    length_scale: float = 8.0
    cluster_fraction: float = 0.1
    n_covariates: int = 2
    conf_a: float = 1.0  # strength of U in the treatment logit
    conf_y: float = 1.0  # strength of U in the outcome
    treatment_noise: float = 0.5  # sd of the logit noise
    treatment_scale: float = 1.0  # sharpness of the propensity (larger = weaker positivity)
    treated_fraction: float | None = None  # intercept solved so mean propensity equals this
    direct_effect: float = 1.0
    spillover_effect: float = 0.5
    heterogeneity: float = 0.3  # coefficient of A * X_1
    nonlinearity: float = 0.0
    noise_sd: float = 0.5
    nonlocal_confounding: bool = False  # outcome sees U averaged over the radius-max(r, 2) ball
    confounder_modulated_spillover: float = 0.0  # sd(alpha U s(e)) / sd(Y); 0.5 in 'confmod'
    asymmetric: bool = False  # DGP neighbourhood keeps only neighbours with x_j >= x_i
    erf_points: int = (
        3  # ERF levels: 3 = (none, half, all) as in v0; m > 3 = shares j/(m-1), j = 0..m-1
    )

    def __post_init__(self) -> None:  # noqa: C901
        def bad(msg: str) -> ValueError:
            return ValueError(f"SimulationConfig: {msg}")

        if self.graph not in GRAPH_KINDS:
            raise bad(f"graph must be one of {GRAPH_KINDS}, got {self.graph!r}")
        if self.confounder not in CONFOUNDER_KINDS:
            raise bad(f"confounder must be one of {CONFOUNDER_KINDS}, got {self.confounder!r}")
        if self.radius not in (1, 2, 3):
            raise bad(f"radius must be 1, 2 or 3, got {self.radius!r}")
        if self.reported_radius is not None and self.reported_radius not in (1, 2, 3):
            raise bad(f"reported_radius must be None, 1, 2 or 3, got {self.reported_radius!r}")
        if self.graph != "rgg":
            graphs.grid_max_degree(self.adjacency)
            if self.n_rows < 3 or self.n_cols < 3:
                raise bad(f"lattices need at least 3 x 3 cells, got {self.n_rows} x {self.n_cols}")
        elif self.n_units < 4:
            raise bad(f"n_units must be >= 4, got {self.n_units}")
        if not 0 <= self.hole_fraction < 0.9:
            raise bad(f"hole_fraction must lie in [0, 0.9), got {self.hole_fraction}")
        if self.n_covariates < 1:
            raise bad(
                f"n_covariates must be >= 1 (X_1 carries the heterogeneity), got {self.n_covariates}"
            )
        if self.treated_fraction is not None and not 0 < self.treated_fraction < 1:
            raise bad(
                f"treated_fraction must lie in (0, 1) or be None, got {self.treated_fraction}"
            )
        if self.noise_sd < 0 or self.treatment_noise < 0 or self.treatment_scale <= 0:
            raise bad("noise_sd and treatment_noise must be >= 0 and treatment_scale > 0")
        if self.confounder_modulated_spillover < 0:
            raise bad("confounder_modulated_spillover must be >= 0")
        if not isinstance(self.erf_points, int) or not 3 <= self.erf_points <= 21:
            raise bad(f"erf_points must be an int in [3, 21], got {self.erf_points!r}")
        if self.exposure_kernel not in ("mean", "inverse_hop"):
            raise bad(
                f"exposure_kernel must be 'mean' or 'inverse_hop', got {self.exposure_kernel!r}"
            )

    @property
    def shown_radius(self) -> int:
        return self.radius if self.reported_radius is None else self.reported_radius

    @property
    def n(self) -> int:
        """Number of units (fixed per configuration, so spaces have fixed shapes)."""
        if self.graph == "grid":
            return self.n_rows * self.n_cols
        if self.graph == "holes":
            return self.n_rows * self.n_cols - self.n_removed
        return self.n_units

    @property
    def n_removed(self) -> int:
        return (
            int(round(self.hole_fraction * self.n_rows * self.n_cols))
            if self.graph == "holes"
            else 0
        )

    @property
    def table_width(self) -> int:
        """Width of the neighbour table (the largest possible degree)."""
        return self.max_degree if self.graph == "rgg" else graphs.grid_max_degree(self.adjacency)

    @property
    def erf_levels(self) -> tuple[float, ...]:
        """Shares of treated DGP neighbours at which the ERF is scored (floor(q k) of k treated)."""
        m = self.erf_points
        return tuple(j / (m - 1) for j in range(m))

    def replace(self, **changes: Any) -> SimulationConfig:
        return dataclasses.replace(self, **changes)


def config_for_variant(variant: str = "base", **overrides: Any) -> SimulationConfig:
    """The configuration of a named stress variant, with explicit kwargs applied on top."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known variants: {sorted(VARIANTS)}")
    fields_ = {f.name for f in dataclasses.fields(SimulationConfig)}
    unknown = sorted(set(overrides) - fields_)
    if unknown:
        raise TypeError(f"unknown simulator argument(s) {unknown}; known: {sorted(fields_)}")
    return SimulationConfig(**{**VARIANTS[variant], **overrides})


@dataclass
class SpatialCausalData:
    """A simulated (or loaded) data set: what agents see, what stays hidden, and the truth."""

    coords: np.ndarray  # (n, 2)
    adjacency: sp.csr_matrix  # radius-1 graph shown to agents
    covariates: np.ndarray  # (n, p)
    treatment: np.ndarray  # (n,) int8 in {0, 1}
    outcome: np.ndarray  # (n,)
    scored: np.ndarray  # (n,) bool: units the estimands average over
    radius: int  # radius shown to agents
    table_width: int
    # hidden
    confounder: np.ndarray | None = None  # (n,) U (None for loaded data)
    propensity: np.ndarray | None = None
    y_own: np.ndarray | None = None  # (n, 2): Y_i(a, A_N obs), a = 0, 1
    y_nbr: np.ndarray | None = None  # (n, 2): Y_i(A_i obs, a 1_N)
    y_half: np.ndarray | None = None  # (n,): Y_i(A_i obs, random half of neighbours treated)
    y_erf: np.ndarray | None = None  # (n, m): Y_i(A_i obs, random floor(q_j k) neighbours treated)
    erf_levels: tuple[float, ...] = (
        0.0,
        0.5,
        1.0,
    )  # q_j of the ERF (ERF_LEVELS when y_erf is None)
    dgp_radius: int = 1
    noise: np.ndarray | None = None  # (n,) eps shared by every counterfactual
    scores: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.outcome.size)

    @property
    def sd_y(self) -> float:
        """sd(Y) over the scored units (over all units if that is 0): the scale every error is
        divided by (SpaCE divides by the sd of the outcome over the units it scores)."""
        return outcome_scale(self.outcome, self.scored)

    def truth(self) -> dict[str, Any]:
        """DE, SE and the ERF over the scored units (from the counterfactuals)."""
        if self.y_own is None or self.y_nbr is None:
            raise ValueError("this data set carries no counterfactuals, so it has no ground truth")
        s = self.scored
        de = float(np.mean(self.y_own[s, 1] - self.y_own[s, 0]))
        se = float(np.mean(self.y_nbr[s, 1] - self.y_nbr[s, 0]))
        out: dict[str, Any] = {"direct": de, "spillover": se}
        if self.y_erf is not None:
            out["erf"] = self.y_erf[s].mean(axis=0)
        elif self.y_half is not None:
            out["erf"] = np.array(
                [self.y_nbr[s, 0].mean(), self.y_half[s].mean(), self.y_nbr[s, 1].mean()]
            )
        return out

    def observation(self) -> dict[str, Any]:
        """The agent's view: graph, coordinates, covariates, treatment, outcome (no U)."""
        return {
            "coords": self.coords.astype(np.float64),
            "covariates": self.covariates.astype(np.float64),
            "treatment": self.treatment.astype(np.int8),
            "outcome": self.outcome.astype(np.float64),
            "neighbors": graphs.neighbor_table(self.adjacency, self.table_width),
            "scored": self.scored.astype(np.int8),
            "radius": np.int64(self.radius),
        }


# ----------------------------------------------------------------------------- simulation


def outcome_scale(outcome: np.ndarray, scored: np.ndarray) -> float:
    sd = float(np.std(outcome[scored])) if scored.sum() > 1 else 0.0
    return sd if sd > 0 else float(np.std(outcome)) or 1.0


def _build_graph(
    cfg: SimulationConfig, rng: np.random.Generator
) -> tuple[np.ndarray, sp.csr_matrix]:
    if cfg.graph == "grid":
        return graphs.grid_graph(cfg.n_rows, cfg.n_cols, cfg.adjacency)
    if cfg.graph == "holes":
        return graphs.lattice_with_holes(
            cfg.n_rows, cfg.n_cols, cfg.n_removed, cfg.n_holes, rng, cfg.adjacency
        )
    return graphs.random_geometric_graph(cfg.n_units, rng, cfg.mean_degree, cfg.max_degree)


def _scored_units(cfg: SimulationConfig, adj: sp.csr_matrix) -> np.ndarray:
    r = max(cfg.radius, cfg.shown_radius)
    ball = graphs.hop_ball(adj, r)
    size = np.diff(ball.indptr)
    if cfg.graph == "rgg":
        return np.diff(adj.indptr) > 0
    full = (2 * r + 1) ** 2 - 1 if cfg.adjacency == "queen" else 2 * r * (r + 1)
    mask = size == full
    if not mask.any():
        raise ValueError(
            f"no unit of the {cfg.n_rows} x {cfg.n_cols} {cfg.graph} lattice has a full radius-{r} "
            "neighbourhood; use a larger lattice"
        )
    return mask


def _intercept_for_fraction(logit: np.ndarray, target: float) -> float:
    """Intercept ``c`` with ``mean(sigmoid(logit + c)) = target`` (bisection; monotone in c)."""
    from scipy.special import expit

    lo, hi = -30.0, 30.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if expit(logit + mid).mean() < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _half_exposure(w: sp.csr_matrix, rng: np.random.Generator, share: float = 0.5) -> np.ndarray:
    """Exposure when a random floor(share k) (default: half) of each unit's k DGP neighbours
    is treated."""
    w = sp.csr_matrix(w)
    deg = np.diff(w.indptr)
    rows = np.repeat(np.arange(w.shape[0]), deg)
    order = np.lexsort((rng.random(rows.size), rows))  # random order within each row
    rank = np.empty(rows.size, dtype=np.int64)
    rank[order] = np.arange(rows.size) - np.repeat(w.indptr[:-1], deg)
    n_treated = deg // 2 if share == 0.5 else np.floor(share * deg + 1e-9).astype(np.int64)
    treated = rank < np.repeat(n_treated, deg)
    return np.bincount(rows, weights=w.data * treated, minlength=w.shape[0])


@dataclass
class OutcomeModel:
    """``mu(a, e) = tau a + h a X_1 + gamma s(e) + alpha U s(e) + c_Y g(U_y) + X b_Y`` with
    ``s(e) = e + nl (e^2 - e)`` and ``g(u) = u + nl (u^2 - 1) / sqrt(2)``."""

    direct_effect: float
    heterogeneity: float
    spillover_effect: float
    conf_y: float
    nonlinearity: float
    beta_y: np.ndarray
    alpha: float = 0.0

    @classmethod
    def from_config(cls, cfg: SimulationConfig, n_covariates: int) -> OutcomeModel:
        return cls(
            cfg.direct_effect,
            cfg.heterogeneity,
            cfg.spillover_effect,
            cfg.conf_y,
            cfg.nonlinearity,
            np.full(n_covariates, 0.5),
        )

    def s(self, e: np.ndarray) -> np.ndarray:
        return e + self.nonlinearity * (e**2 - e)

    def mu(
        self, a: np.ndarray, e: np.ndarray, x: np.ndarray, u: np.ndarray, u_y: np.ndarray
    ) -> np.ndarray:
        g = u_y + self.nonlinearity * (u_y**2 - 1.0) / np.sqrt(2.0)
        return (
            self.direct_effect * a
            + self.heterogeneity * a * x[:, 0]
            + (self.spillover_effect + self.alpha * u) * self.s(e)
            + self.conf_y * g
            + x @ self.beta_y
        )


def counterfactual_table(
    model: OutcomeModel,
    w: sp.csr_matrix,
    a: np.ndarray,
    x: np.ndarray,
    u: np.ndarray,
    u_y: np.ndarray,
    eps: np.ndarray,
    e_half: np.ndarray,
) -> dict[str, np.ndarray]:
    """Observed outcome and every counterfactual the truth needs, all sharing the noise ``eps``.

    ``y_own[:, v] = Y_i(v, A_N obs)``, ``y_nbr[:, v] = Y_i(A_i obs, v 1_N)`` (every DGP neighbour
    set to v) and ``y_half = Y_i(A_i obs, half_N)`` (exposure ``e_half``).
    """
    af = a.astype(np.float64)
    e = w @ af
    e_all = np.asarray(w.sum(axis=1)).ravel()  # every DGP neighbour treated (1 unless isolated)
    n = af.size
    zeros, ones = np.zeros(n), np.ones(n)

    def mu(av: np.ndarray, ev: np.ndarray) -> np.ndarray:
        return model.mu(av, ev, x, u, u_y)

    return {
        "y": mu(af, e) + eps,
        "y_own": np.stack([mu(zeros, e), mu(ones, e)], axis=1) + eps[:, None],
        "y_nbr": np.stack([mu(af, zeros), mu(af, e_all)], axis=1) + eps[:, None],
        "y_half": mu(af, e_half) + eps,
    }


def simulate(
    config: SimulationConfig | Mapping[str, Any], rng: np.random.Generator
) -> SpatialCausalData:
    """Draw one data set (graph, U, X, A, Y, counterfactuals, truth, scores) from ``rng``."""
    from scipy.special import expit

    cfg = config if isinstance(config, SimulationConfig) else SimulationConfig(**dict(config))
    coords, adj = _build_graph(cfg, rng)
    n = coords.shape[0]
    u = sample_confounder(cfg.confounder, coords, adj, rng, cfg.length_scale, cfg.cluster_fraction)
    x = rng.standard_normal((n, cfg.n_covariates))
    beta_a = 0.5 * (-1.0) ** np.arange(cfg.n_covariates)

    # DGP neighbourhood, exposure and the confounder each side sees
    ball = graphs.hop_ball(adj, cfg.radius)
    if cfg.asymmetric:  # Spatial-CI Snakefile_asym: only neighbours with column offset dc >= 0
        b = ball.tocoo()
        keep = coords[b.col, 0] >= coords[b.row, 0]
        ball = sp.csr_matrix((b.data[keep], (b.row[keep], b.col[keep])), shape=ball.shape)
    w = graphs.exposure_weights(ball, cfg.exposure_kernel)
    u_t, u_y = u, u
    if cfg.nonlocal_confounding:  # the outcome responds to U of the units around it, not its own
        ring = graphs.exposure_weights(graphs.hop_ball(adj, max(cfg.radius, 2)), "mean")
        u_y = standardize(ring @ u)

    # treatment
    logit = cfg.treatment_scale * (
        cfg.conf_a * u_t + x @ beta_a + cfg.treatment_noise * rng.standard_normal(n)
    )
    if cfg.treated_fraction is not None:
        logit = logit + _intercept_for_fraction(logit, cfg.treated_fraction)
    prop = expit(logit)
    a = (rng.random(n) < prop).astype(np.int8)
    e = w @ a
    e_half = _half_exposure(w, rng)
    eps = cfg.noise_sd * rng.standard_normal(n)
    model = OutcomeModel.from_config(cfg, x.shape[1])
    if cfg.confounder_modulated_spillover > 0:  # Spatial-CI Snakefile_confmod: sd(term) = 0.5 sd(Y)
        term_sd = float(np.std(u * model.s(e)))
        y_sd = float(np.std(model.mu(a, e, x, u, u_y) + eps))
        model.alpha = cfg.confounder_modulated_spillover * y_sd / term_sd if term_sd > 0 else 0.0
    table = counterfactual_table(model, w, a, x, u, u_y, eps, e_half)

    y_erf = None
    if cfg.erf_points > 3:  # drawn after everything else, so U, X, A, Y match erf_points = 3
        y_erf = np.column_stack(
            [
                model.mu(a.astype(np.float64), _half_exposure(w, rng, q), x, u, u_y) + eps
                for q in cfg.erf_levels
            ]
        )
    scored = _scored_units(cfg, adj)
    data = SpatialCausalData(
        coords=coords,
        adjacency=adj,
        covariates=x,
        treatment=a,
        outcome=table["y"],
        scored=scored,
        radius=cfg.shown_radius,
        table_width=cfg.table_width,
        confounder=u,
        propensity=prop,
        y_own=table["y_own"],
        y_nbr=table["y_nbr"],
        y_half=table["y_half"],
        dgp_radius=cfg.radius,
        noise=eps,
        meta={"alpha": model.alpha, "graph": cfg.graph},
        y_erf=y_erf,
        erf_levels=cfg.erf_levels if y_erf is not None else (0.0, 0.5, 1.0),
    )
    data.scores = difficulty_scores(data)
    return data


# ----------------------------------------------------------------------------- difficulty


def _flex_design(a: np.ndarray, e: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones_like(e), a, e, x, a[:, None] * x, e[:, None] * x])


def confounding_scores(
    outcome: np.ndarray,
    treatment: np.ndarray,
    covariates: np.ndarray,
    confounder: np.ndarray,
    w: sp.csr_matrix,
    scored: np.ndarray,
) -> dict[str, float]:
    """SpaCE's confounding score for our estimands: |estimate without U - estimate with U| / sd(Y).

    Both estimates are g-formula plug-ins of a least-squares outcome model with treatment,
    exposure, covariates and their treatment/exposure interactions; "with U" adds a cubic in U
    and its interactions with treatment and exposure (SpaCE refits its outcome model leaving the
    masked covariate group out and compares the counterfactuals the same way).
    """
    a = treatment.astype(np.float64)
    e = w @ a
    e_all = np.asarray(w.sum(axis=1)).ravel()
    s = scored
    sd = outcome_scale(outcome, s)
    uu = np.column_stack([confounder, confounder**2, confounder**3])
    out: dict[str, float] = {}
    ests = {}
    for name, extra in (("without", None), ("with", uu)):

        def design(av: np.ndarray, ev: np.ndarray, extra: np.ndarray | None = extra) -> np.ndarray:
            d = _flex_design(av, ev, covariates)
            if extra is None:
                return d
            return np.column_stack([d, extra, av * confounder, ev * confounder])

        coef, *_ = np.linalg.lstsq(design(a, e), outcome, rcond=None)
        de = float(np.mean((design(np.ones_like(a), e) - design(np.zeros_like(a), e))[s] @ coef))
        se = float(np.mean((design(a, e_all) - design(a, np.zeros_like(e)))[s] @ coef))
        ests[name] = (de, se)
    out["confounding_score_direct"] = abs(ests["without"][0] - ests["with"][0]) / sd
    out["confounding_score_spillover"] = abs(ests["without"][1] - ests["with"][1]) / sd
    out["confounding_score"] = 0.5 * (
        out["confounding_score_direct"] + out["confounding_score_spillover"]
    )
    return out


def difficulty_scores(data: SpatialCausalData) -> dict[str, float]:
    """Moran's I of U (smoothness), confounding scores and the share of extreme propensities."""
    if data.confounder is None:
        return {}
    w = graphs.exposure_weights(graphs.hop_ball(data.adjacency, data.radius), "mean")
    out = {"smoothness": graphs.morans_i(data.confounder, data.adjacency)}
    out.update(
        confounding_scores(
            data.outcome, data.treatment, data.covariates, data.confounder, w, data.scored
        )
    )
    if data.propensity is not None:
        p = data.propensity
        out["extreme_propensity_share"] = float(np.mean((p < 0.05) | (p > 0.95)))
        out["treated_share"] = float(np.mean(data.treatment))
    return out
