"""``icml26/SpaCEInterference-v0``: estimate direct and spillover effects under spatial confounding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from icml26.envs.spatial_causal.simulator import (
    ERF_LEVELS,
    VARIANTS,
    SimulationConfig,
    SpatialCausalData,
    config_for_variant,
    simulate,
)

__all__ = ["SpaCEInterferenceEnv", "score_estimates"]

ENV_NAME = "SpaCEInterference-v0"
ESTIMATE_BOUND = 1e6  # action Box bounds: estimates are in outcome units, finite and |v| <= 1e6
DATA_BOUND = 1e12  # observation Box bounds for coordinates, covariates and outcomes


def score_estimates(
    data: SpatialCausalData, direct: float, spillover: float, erf: np.ndarray | None = None
) -> dict[str, Any]:
    """Errors of the estimates against the data set's truth, each divided by sd(Y) (SpaCE).

    ``error`` (the negative reward) is the mean of the absolute direct and spillover errors.
    """
    truth = data.truth()
    sd = data.sd_y
    out: dict[str, Any] = {
        "truth": {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in truth.items()},
        "sd_y": sd,
        "direct_bias": (direct - truth["direct"]) / sd,
        "spillover_bias": (spillover - truth["spillover"]) / sd,
    }
    out["direct_error"] = abs(out["direct_bias"])
    out["spillover_error"] = abs(out["spillover_bias"])
    out["error"] = 0.5 * (out["direct_error"] + out["spillover_error"])
    if erf is not None and "erf" in truth:
        out["erf_error"] = float(np.mean(np.abs(erf - truth["erf"]))) / sd
    return out


class SpaCEInterferenceEnv(gym.Env):
    """
    ## Description
    Spatial causal inference with interference, after the Spatial Deconfounder paper (arXiv
    2510.08762) and its SpaCE extension (Spatial-CI). Each episode is one data set on a spatial
    graph: an unmeasured, spatially smooth confounder ``U`` drives both a binary treatment and the
    outcome, and each unit's outcome also responds to its neighbours' treatments through an
    exposure mapping (share of treated neighbours within ``radius`` hops). The agent sees the
    graph, coordinates, covariates, treatment and outcome -- never ``U`` -- and reports the
    direct effect and the spillover effect (optionally the exposure-response curve). The episode
    ends after that single step, and the reward is minus the error normalized by sd(Y).

    Estimands, averaged over the scored units (interior units with full neighbourhoods on
    lattices): ``DE = mean_i [Y_i(1, A_N obs) - Y_i(0, A_N obs)]``,
    ``SE = mean_i [Y_i(A_i obs, 1_N) - Y_i(A_i obs, 0_N)]``, ``ERF = mean_i [Y_i(A_i obs, 0_N),
    Y_i(A_i obs, half_N), Y_i(A_i obs, 1_N)]``. The counterfactuals share each unit's noise.

    ## Action Space
    ``Dict(direct=Box(-1e6, 1e6, (1,), float64), spillover=Box(-1e6, 1e6, (1,), float64),
    erf=Box(-1e6, 1e6, (m,), float64))`` in outcome units, ``m = erf_points`` (3 by default: no,
    half, all neighbours treated; ``m > 3``: shares ``j / (m - 1)``, listed in ``info["erf_levels"]``). ``erf`` may be left out (or ``None``); ``direct`` and
    ``spillover`` may be plain floats. Missing keys, unknown keys, NaN/inf, values beyond 1e6 or wrong shapes raise
    ``ValueError``/``TypeError`` before anything changes.

    ## Observation Space
    ``Dict`` with ``n`` units and ``p`` covariates fixed by the configuration:
    ``coords`` Box (n, 2) float64 (all data Boxes bounded by +-1e12) (grid: column, row); ``covariates`` Box (n, p) float64;
    ``treatment`` MultiBinary(n); ``outcome`` Box (n,) float64; ``neighbors`` Box (n, K) int64,
    each unit's radius-1 neighbours padded with -1 (K = 8 for queen lattices, 4 for rook,
    ``max_degree`` for random geometric graphs); ``scored`` MultiBinary(n), the units the
    estimands average over; ``radius`` Discrete(3, start=1), the interference radius the agent is
    told (the ``misspec_radius`` variant tells 1 while the data use 2).

    ## Rewards
    ``-(|DE^ - DE| + |SE^ - SE|) / (2 sd(Y))`` with sd(Y) over the scored units. ``info`` after
    the step holds the truth, each normalized error and signed bias, and ``erf_error`` (mean
    absolute ERF error / sd(Y)) when an ERF was given: ``truth`` (``direct``, ``spillover``,
    ``erf``), ``direct_error``, ``spillover_error``, ``direct_bias``, ``spillover_bias`` (signed,
    / sd(Y)), ``error``, ``erf_error``, ``sd_y``, ``dgp_radius``.

    ## Starting State
    ``reset(seed)`` draws a new data set from the simulator (graph for random graphs and
    lattices with holes, ``U``, ``X``, ``A``, noise) with ``self.np_random``; ``info`` holds the
    difficulty scores (``smoothness`` = Moran's I of ``U``, ``confounding_score``,
    ``confounding_score_direct``/``_spillover``, ``extreme_propensity_share``,
    ``treated_share``). With
    ``space_dir`` the env serves a SpaCE env folder read from disk (the same data set each reset).

    ## Episode End
    Terminated after the single step.

    ## Arguments
    ``gym.make("icml26/SpaCEInterference-v0", variant="base", space_dir=None, missing_group=None,
    reveal_confounder=False, **simulator_kwargs)``: ``variant`` is one of ``base``, ``radius2``,
    ``nonlocal``, ``confmod``, ``asym``, ``sparse10/30/70``, ``singlecause10/20/30``,
    ``misspec_radius``, ``nonlinear``; any :class:`SimulationConfig` field (``graph`` = grid |
    holes | rgg, ``n_rows``, ``n_cols``, ``n_units``, ``radius``, ``length_scale``, ``conf_a``,
    ``conf_y``, ``treatment_scale``, ``treated_fraction``, ...) overrides it.
    ``reveal_confounder=True`` adds ``U`` to the reset ``info`` (for the oracle reference only).
    ``render_mode`` is accepted for API uniformity; only ``None`` is valid.

    ## Ecosystem
    ``icml26.integrations.sb3.wrap(env)`` applies ``FlattenDictSpaces``: the observation becomes
    one flat ``Box`` (``radius`` one-hot) and the action a ``Box(5)`` ``[direct, erf(3),
    spillover]`` (keys in sorted order).

    ## Version History
    * v0: initial version. ``erf_points`` (default 3, the original behaviour) added later: ``m > 3``
      scores the ERF at m neighbour shares; data sets for the same seed are unchanged.

    ## Example
    >>> import gymnasium as gym, icml26
    >>> env = gym.make("icml26/SpaCEInterference-v0", n_rows=8, n_cols=8, confounder="gp",
    ...                length_scale=3.0)
    >>> obs, info = env.reset(seed=0)
    >>> print(obs["outcome"].shape, int(obs["scored"].sum()), obs["radius"])
    (64,) 36 1
    >>> obs, reward, terminated, truncated, info = env.step({"direct": 1.0, "spillover": 0.5})
    >>> print(round(float(reward), 4), terminated, round(float(info["truth"]["direct"]), 4))
    -0.0045 True 0.9848
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        variant: str = "base",
        space_dir: str | None = None,
        missing_group: str | None = None,
        reveal_confounder: bool = False,
        render_mode: str | None = None,
        **simulator_kwargs: Any,
    ) -> None:
        if render_mode is not None:
            raise ValueError(
                f"{ENV_NAME}: no render modes are supported, got render_mode={render_mode!r}"
            )
        if variant not in VARIANTS:
            raise ValueError(
                f"{ENV_NAME}: unknown variant {variant!r}; known variants: {sorted(VARIANTS)}"
            )
        self.variant = variant
        self.reveal_confounder = bool(reveal_confounder)
        self._fixed: SpatialCausalData | None = None
        self.config: SimulationConfig | None = None
        if space_dir is not None:
            if simulator_kwargs or variant != "base":
                raise ValueError(
                    f"{ENV_NAME}: space_dir serves a SpaCE folder as is; simulator arguments "
                    f"{sorted(simulator_kwargs)} and variant {variant!r} do not apply"
                )
            from icml26.envs.spatial_causal.space_folder import load_space_folder

            self._fixed = load_space_folder(space_dir, missing_group=missing_group)
            n, p, width = self._fixed.n, self._fixed.covariates.shape[1], self._fixed.table_width
            self.source = f"space:{space_dir}"
        else:
            self.config = config_for_variant(variant, **simulator_kwargs)
            n, p, width = self.config.n, self.config.n_covariates, self.config.table_width
            self.source = "simulator"
        self.erf_points = self.config.erf_points if self.config is not None else len(ERF_LEVELS)
        self.n_units, self.n_covariates = n, p
        inf = DATA_BOUND
        self.observation_space = spaces.Dict(
            {
                "coords": spaces.Box(-inf, inf, (n, 2), np.float64),
                "covariates": spaces.Box(-inf, inf, (n, p), np.float64),
                "treatment": spaces.MultiBinary(n),
                "outcome": spaces.Box(-inf, inf, (n,), np.float64),
                "neighbors": spaces.Box(-1, n - 1, (n, width), np.int64),
                "scored": spaces.MultiBinary(n),
                "radius": spaces.Discrete(3, start=1),
            }
        )
        b = ESTIMATE_BOUND
        self.action_space = spaces.Dict(
            {
                "direct": spaces.Box(-b, b, (1,), np.float64),
                "spillover": spaces.Box(-b, b, (1,), np.float64),
                "erf": spaces.Box(-b, b, (self.erf_points,), np.float64),
            }
        )
        self._data: SpatialCausalData | None = None
        self._done = True

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        if self._fixed is not None:
            data = self._fixed
        else:
            assert self.config is not None
            data = simulate(self.config, self.np_random)
        self._data, self._done = data, False
        info: dict[str, Any] = {
            "n_units": data.n,
            "n_scored": int(data.scored.sum()),
            "variant": self.variant,
            "source": self.source,
            "erf_levels": tuple(float(q) for q in data.erf_levels),
            **{k: float(v) for k, v in data.scores.items()},
        }
        if self.reveal_confounder:
            if data.confounder is None:
                raise ValueError(f"{ENV_NAME}: this data source has no confounder to reveal")
            info["confounder"] = data.confounder.copy()
        return data.observation(), info

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._data is None or self._done:
            raise RuntimeError(f"{ENV_NAME}: call reset() before step() (episodes last one step)")
        direct, spillover, erf = self._check_action(action)
        data = self._data
        result = score_estimates(data, direct, spillover, erf)
        info = {**result, "dgp_radius": data.dgp_radius}
        self._done = True
        return data.observation(), -float(result["error"]), True, False, info

    # ------------------------------------------------------------------ helpers
    def _check_action(self, action: Any) -> tuple[float, float, np.ndarray | None]:
        expected = (
            f"a dict like {{'direct': float, 'spillover': float, 'erf': None | {self.erf_points} floats}} "
            f"({self.action_space})"
        )
        if not isinstance(action, Mapping):
            raise TypeError(
                f"{ENV_NAME}: expected {expected}, got {type(action).__name__} {action!r:.80}"
            )
        unknown = sorted(set(map(str, action)) - {"direct", "spillover", "erf"})
        if unknown:
            raise ValueError(f"{ENV_NAME}: unknown action key(s) {unknown}; expected {expected}")
        missing = [k for k in ("direct", "spillover") if k not in action or action[k] is None]
        if missing:
            raise ValueError(
                f"{ENV_NAME}: action is missing the estimate(s) {missing}; expected {expected}"
            )
        vals: dict[str, np.ndarray] = {}
        for key, size in (("direct", 1), ("spillover", 1), ("erf", self.erf_points)):
            if key not in action or action[key] is None:
                continue
            try:
                v = np.asarray(action[key], dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(
                    f"{ENV_NAME}: action[{key!r}] must be numeric, got {action[key]!r:.80}"
                ) from None
            if v.size != size or v.ndim > 1:
                want = (
                    "a float or shape (1,)"
                    if size == 1
                    else f"shape ({size},) (levels {self._data.erf_levels})"
                )
                raise ValueError(f"{ENV_NAME}: action[{key!r}] must be {want}, got shape {v.shape}")
            if not np.all(np.isfinite(v)) or np.any(np.abs(v) > ESTIMATE_BOUND):
                raise ValueError(
                    f"{ENV_NAME}: action[{key!r}] must be finite with |value| <= {ESTIMATE_BOUND:g}, "
                    f"got {v.tolist()}"
                )
            vals[key] = v.reshape(-1)
        return float(vals["direct"][0]), float(vals["spillover"][0]), vals.get("erf")
