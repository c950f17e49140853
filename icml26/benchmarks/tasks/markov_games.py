"""Tasks of the offline zero-sum Markov games family (SOS-MD / ROSE, ICML 2026).

A trial collects n = ``budget.dataset_size`` trajectories under the task's behavior regime
(seeded by ``derive_seed(seed, "data")``), lets the agent learn from them, reads its policy
tables ``agent.policy() -> (mu, nu)`` and computes exactly (backward induction, no sampling):

* ``gap`` -- the duality gap in the NashConv convention, ``V^{†,nu} - V^{mu,†}`` at the
  initial distribution (OpenSpiel's exploitability is half of it);
* ``reg_gap`` -- the beta-regularized NashConv w.r.t. the data's exact marginal behavior
  policy (the paper's reference; the paper's agents regularize toward its behavior-cloning
  estimate by default), beta = ``task.extra["beta"]`` (not on the Nash-only task, whose
  reference has partial support so any policy leaving it has an infinite regularized gap).
  On the restricted-support task an agent that leaves the support fails the trial.

``scores`` are the returns of ``eval_episodes`` episodes of ``icml26/ZeroSumMarkovGame-v0``
where the agent's max policy plays the exact best response to it (a Monte-Carlo check of
``V^{mu,†}``, reported exactly in ``extra["br_min_value"]``).

``extra`` also records the regularized gap even where it is no metric (``"reg_gap"``, ``"inf"``
when the policy leaves the reference's support), the CPU seconds of ``learn``
(``"learn_cpu_s"``), and for an agent that keeps policy snapshots (SOS-MD's ``snapshots``) the
optimization error (its regularized gap in the estimated game) and the true regularized gap at
each snapshot (``"snapshots": {t: {"opt": ..., "true_reg": ...}}``), plus ``"optimization_gap"``
when the agent reports one. Task extras a study's variants may set (absent from the registered
tasks, whose trials they do not change):

* ``dataset_pool``: draw this many trajectories and learn from the first n (nested data sets:
  every n of a sweep sees a prefix of the same pool, drawn once per machine and kept in
  ``$ICML26_CACHE/markov_games/datasets``);
* ``data_seed``: the keys of the data's seed, ``derive_seed(seed, *keys)`` (default ``["data"]``);
* ``openspiel_check``: ``{"seeds": [...], "n": [...]}``: on those trials of an OpenSpiel game,
  also OpenSpiel's own NashConv of the learned policies (``"openspiel_abs_diff"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.benchmarks import SuiteEntry
from icml26.protocol import Budget, Metric, Task, TrialOutcome, derive_seed

__all__ = ["TASKS", "SUITES", "run_trial"]

_RANDOM = {"name": "random", "kwargs": {"S": 10, "A": 3, "B": 3, "H": 5, "seed": 0}}
_BETA = 0.1
_GAP = Metric(
    "gap",
    "min",
    0.0,
    float("inf"),
    "duality gap (NashConv = sum of both best-response gains; exploitability = gap / 2)",
)
_REG_GAP = Metric(
    "reg_gap",
    "min",
    0.0,
    float("inf"),
    "beta-regularized NashConv w.r.t. the data's marginal behavior policy",
)


def _task(
    name: str,
    game: dict[str, Any],
    regime: str,
    n: int,
    description: str,
    eps: float = 0.2,
    reg: bool = True,
    eval_episodes: int = 20,
    beta: float = _BETA,
    env: dict[str, Any] | None = None,
) -> Task:
    return Task(
        id=f"markov_games/{name}",
        version=0,
        family="markov_games",
        env_id="icml26/ZeroSumMarkovGame-v0",
        run_trial="icml26.benchmarks.tasks.markov_games:run_trial",
        metrics=(_GAP, _REG_GAP) if reg else (_GAP,),
        primary_metric="gap",
        env_kwargs=env
        if env is not None
        else {"game": game["name"], "game_kwargs": dict(game["kwargs"])},
        budget=Budget(dataset_size=n),
        seeds=(0, 1, 2, 3, 4),
        eval_episodes=eval_episodes,
        description=description,
        tolerance=0.2,
        extra={"regime": regime, "eps": eps, "beta": beta},
    )


TASKS = [
    _task(
        "random-uniform",
        _RANDOM,
        "uniform",
        1000,
        "Random game S=10, A=B=3, H=5; 1000 trajectories of the uniform behavior pair.",
    ),
    _task(
        "random-eps-nash",
        _RANDOM,
        "eps_nash",
        1000,
        "Random game S=10, A=B=3, H=5; 1000 trajectories of 0.8 Nash + 0.2 uniform.",
    ),
    _task(
        "random-unilateral",
        _RANDOM,
        "unilateral",
        1000,
        "Random game S=10, A=B=3, H=5; 1000 trajectories, half (mu*, uniform), half (uniform, nu*).",
    ),
    _task(
        "random-nash-only",
        _RANDOM,
        "nash",
        1000,
        "Random game S=10, A=B=3, H=5; 1000 Nash-only trajectories (unilateral coverage fails).",
        reg=False,
    ),
    _task(
        "random-reg-unilateral",
        _RANDOM,
        "reg_unilateral",
        1000,
        "Random game S=10, A=B=3, H=5; 1000 trajectories, half (mu_beta, uniform), half (uniform, "
        "nu_beta) around the beta-regularized equilibrium of the data's own marginal behavior "
        "(unilateral coverage of the regularized target; C* = 12.5).",
    ),
    _task(
        "random-reg-unilateral-restricted",
        _RANDOM,
        "reg_unilateral_restricted",
        1000,
        "As random-reg-unilateral with every policy restricted to a seeded support (one action per "
        "player removed at each (h, s)): the data never cover A x B, the Nash equilibrium is not "
        "covered, the regularized target is (C* = 7.1).",
    ),
    _task(
        "tree-game",
        {"name": "tree", "kwargs": {}},
        "tree",
        1000,
        "3-stage tree game (2x2, 2x2, then RPS-fire-water); 1000 trajectories of the card's "
        "behavior; beta = 0.3 (payoffs span [-2, 4]).",
        beta=0.3,
    ),
    _task(
        "low-rank",
        {"name": "low_rank", "kwargs": {"S": 50, "A": 3, "B": 3, "H": 5, "d": 5, "seed": 0}},
        "uniform",
        300,
        "Linear (rank-5) game S=50, A=B=3, H=5; 300 uniform trajectories (linear features help).",
    ),
    _task(
        "goofspiel",
        {"name": "openspiel", "kwargs": {}},
        "uniform",
        1000,
        "OpenSpiel goofspiel (3 cards, random point order, public bids) converted to tabular form "
        "(H=2, S=55, A=B=3); 1000 uniform trajectories. Needs open_spiel.",
        env={
            "game": "openspiel",
            "game_kwargs": {
                "openspiel_game": "goofspiel",
                "params": {"num_cards": 3, "points_order": "random", "imp_info": False},
            },
        },
    ),
    _task(
        "oshi-zumo",
        {"name": "openspiel", "kwargs": {}},
        "uniform",
        1000,
        "OpenSpiel oshi-zumo (4 coins, field size 1, horizon 6, min bid 1) converted to tabular "
        "form (H=4, S=16, A=B=5); 1000 uniform trajectories. Needs open_spiel.",
        env={
            "game": "openspiel",
            "game_kwargs": {
                "openspiel_game": "oshi_zumo",
                "params": {"coins": 4, "size": 1, "horizon": 6, "min_bid": 1},
            },
        },
    ),
    _task(
        "soccer",
        {"name": "soccer", "kwargs": {"horizon": 10}},
        "uniform",
        10_000,
        "Littman's soccer (4x5, 760 states) truncated to 10 steps; 10k uniform trajectories.",
        eval_episodes=10,
    ),
]


def _policy_tables(agent: Any) -> tuple[np.ndarray, np.ndarray]:
    get = getattr(agent, "policy", None)
    if not callable(get):
        raise TypeError(
            f"markov_games tasks need an agent exposing policy() -> (mu (H, S, A), nu (H, S, B)) so the "
            f"gap can be computed exactly; {type(agent).__name__} has no policy()"
        )
    out = get()
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(
            f"{type(agent).__name__}.policy() must return a tuple (mu, nu), got {type(out).__name__}"
        )
    return out


def _dataset(task: Task, game: Any, seed: int) -> Any:
    """The trial's data: ``budget.dataset_size`` trajectories seeded by ``derive_seed(seed,
    *extra["data_seed"])``, the first of a pool of ``extra["dataset_pool"]`` when given."""
    from icml26.envs.markov_games import cached_dataset, collect_dataset

    n = task.budget.dataset_size
    if n is None:
        raise ValueError(
            f"task {task.id!r}: budget.dataset_size (the number of trajectories) is required"
        )
    pool = int(task.extra.get("dataset_pool") or n)
    if pool < n:
        raise ValueError(f"task {task.id!r}: dataset_pool {pool} is smaller than n = {n}")
    keys = [str(k) for k in task.extra.get("data_seed", ["data"])]
    args = (game, pool, task.extra["regime"], derive_seed(seed, *keys))
    eps, beta = float(task.extra.get("eps", 0.2)), float(task.extra["beta"])
    if pool == n:
        return collect_dataset(*args, eps=eps, beta=beta)
    # a pool serves every n of a sweep: drawn once per machine ($ICML26_CACHE), then read
    return cached_dataset(*args, eps=eps, beta=beta).head(int(n))


def _learner_diagnostics(game: Any, agent: Any, data: Any, beta: float) -> dict[str, Any]:
    """SOS-MD's optimization error and true regularized gap at each policy snapshot, and the
    agent's own optimization gap, when it has them."""
    from icml26.envs.markov_games.metrics import regularized_gap

    out: dict[str, Any] = {}
    snaps = getattr(agent, "snapshots", None)
    est, refs = getattr(agent, "estimator", None), getattr(agent, "references", None)
    if isinstance(snaps, dict) and snaps and est is not None and refs is not None:
        from icml26.agents.markov_games.estimation import empirical_regularized_gap

        out["snapshots"] = {
            str(t): {
                "opt": float(empirical_regularized_gap(est, m, v, agent.beta, *refs)),
                "true_reg": float(
                    regularized_gap(game, m, v, beta, data.reference_mu, data.reference_nu)
                ),
            }
            for t, (m, v) in sorted(snaps.items())
        }
    if callable(getattr(agent, "optimization_gap", None)):
        out["optimization_gap"] = float(agent.optimization_gap())
    return out


def _openspiel_diff(task: Task, mu: Any, nu: Any, gap: float) -> dict[str, float]:
    """|OpenSpiel's NashConv - ours| of the policies (OpenSpiel's turn-based conversion)."""
    from open_spiel.python.algorithms import exploitability

    from icml26.envs.markov_games.openspiel import from_openspiel, openspiel_policy

    gk = task.env_kwargs["game_kwargs"]
    conv = from_openspiel(gk["openspiel_game"], dict(gk.get("params", {})))
    tb, pol = openspiel_policy(conv, mu, nu)
    theirs = float(exploitability.nash_conv(tb, pol))
    return {"openspiel_nash_conv": theirs, "openspiel_abs_diff": abs(theirs - gap)}


def run_trial(task: Task, agent: Any, seed: int) -> TrialOutcome:
    """Collect data (seeded), learn, evaluate the exact gaps and play best-response episodes."""
    import time

    import gymnasium as gym

    from icml26.benchmarks.generic import bind_agent, learn_if_learner
    from icml26.envs.markov_games import make_game
    from icml26.envs.markov_games.game import check_policy
    from icml26.envs.markov_games.metrics import gap_parts, nash_equilibrium, regularized_gap

    game = make_game(task.env_kwargs["game"], **dict(task.env_kwargs.get("game_kwargs", {})))
    regime, beta = task.extra["regime"], float(task.extra["beta"])
    data = _dataset(task, game, seed)
    n = data.n
    if callable(getattr(agent, "bind", None)):  # the spaces before reset(), as in every task
        spaces_env = gym.make(task.env_id, **task.env_kwargs)
        bind_agent(agent, spaces_env)
        spaces_env.close()
    agent.reset(seed)
    import scipy.sparse  # noqa: F401  (the estimators' lazy import, done before the clock starts:
    # learn_cpu_s times the fit, not a process's first import; a Ray trial forks a fresh child)

    cpu0 = time.process_time()
    stats = learn_if_learner(agent, data, task)
    learn_cpu_s = time.process_time() - cpu0
    mu, nu = _policy_tables(agent)
    mu = check_policy(game, mu, "max", f"{type(agent).__name__} mu")
    nu = check_policy(game, nu, "min", f"{type(agent).__name__} nu")

    parts = gap_parts(game, mu, nu)
    metrics = {"gap": parts["gap"]}
    reg = regularized_gap(game, mu, nu, beta, data.reference_mu, data.reference_nu)
    if any(m.name == "reg_gap" for m in task.metrics):
        if not np.isfinite(reg):
            raise ValueError(
                f"{type(agent).__name__}'s policy puts mass on actions the behavior never takes, so its "
                f"{beta}-regularized gap is infinite on task {task.id!r}"
            )
        metrics["reg_gap"] = reg

    env = gym.make(task.env_id, **task.env_kwargs, opponent="best_response", agent_policy=mu)
    bind_agent(agent, env)
    returns = []
    for i in range(task.eval_episodes):
        obs, info = env.reset(seed=derive_seed(seed, "eval", i))
        total, done = 0.0, False
        while not done:
            obs, r, term, trunc, info = env.step(agent.act(obs, info))
            total += float(r)
            done = term or trunc
        returns.append(total)
    env.close()
    extra: dict[str, Any] = {
        "n": int(n),
        "regime": regime,
        "beta": beta,
        "br_min_value": parts["br_min"],
        "br_max_value": parts["br_max"],
        "pair_value": parts["value"],
        "game_value": nash_equilibrium(game).value,
        "reg_gap": float(reg),
        "learn_cpu_s": learn_cpu_s,
        "game_shape": {"H": game.H, "S": game.S, "A": game.A, "B": game.B},
        **_learner_diagnostics(game, agent, data, beta),
    }
    check = task.extra.get("openspiel_check")
    if check and seed in check["seeds"] and n in check["n"]:
        extra.update(_openspiel_diff(task, mu, nu, parts["gap"]))
    if game.S <= 100:
        extra["concentrability"] = data.concentrability()
        extra["concentrability_regularized"] = data.concentrability(beta)
    if stats:
        extra["learn"] = stats
    return TrialOutcome(metrics=metrics, scores=returns, extra=extra)


_PAPER: dict[str, dict[str, Any]] = {"sos-md": {}, "rose": {}}
_BASELINES: dict[str, dict[str, Any]] = {
    "mg-nash-vi": {},
    "mg-pnvi": {},
    "mg-vi-lcb-game": {},
    "mg-pessimistic-vi": {},
    "mg-bc": {},
    "mg-selfplay-md-avg": {},
}
_OTHERS: dict[str, dict[str, Any]] = {
    "mg-selfplay-md-last": {},
    "mg-nash-oracle": {},
    "rose-oracle-ref": {},
    "sos-md-stagewise": {},
}
# the paper's agents regularize with the task's beta (tree game: 0.3); soccer has 760 states,
# so SOS-MD takes 300 self-play steps per stage there (its regularized gap at T = 300 is ~1e-7).
_TREE = {"sos-md": {"beta": 0.3}, "rose": {"beta": 0.3}}
_TREE_OTHERS = {
    **_OTHERS,
    "rose-oracle-ref": {"beta": 0.3},
    "sos-md-stagewise": {"beta": 0.3},
}
_SOCCER = {"sos-md": {"T": 300}, "rose": {}}

SUITES = {
    "smoke": [
        SuiteEntry("markov_games/random-uniform", {**_PAPER, **_BASELINES}, seeds=(0, 1)),
        SuiteEntry("markov_games/random-unilateral", {**_PAPER, **_BASELINES}, seeds=(0, 1)),
        SuiteEntry("markov_games/random-reg-unilateral", {**_PAPER, **_BASELINES}, seeds=(0, 1)),
        SuiteEntry(
            "markov_games/low-rank",
            {"sos-md": {}, "sos-md-linear": {}, "mg-nash-vi": {}},
            seeds=(0, 1),
        ),
        SuiteEntry(
            "markov_games/random-nash-only", {**_PAPER, "mg-nash-vi": {}, "mg-bc": {}}, seeds=(0, 1)
        ),
        SuiteEntry(
            "markov_games/tree-game", {**_TREE, "mg-nash-vi": {}, "mg-bc": {}}, seeds=(0, 1)
        ),
    ],
    "full": [
        *(
            SuiteEntry(t, {**_PAPER, **_BASELINES, **_OTHERS})
            for t in (
                "markov_games/random-uniform",
                "markov_games/random-eps-nash",
                "markov_games/random-unilateral",
                "markov_games/random-reg-unilateral",
                "markov_games/random-nash-only",
            )
        ),
        # Nash-VI-type baselines leave the restricted support (infinite regularized gap; the
        # trial fails by design), so only the agents that stay on it are listed
        SuiteEntry(
            "markov_games/random-reg-unilateral-restricted",
            {**_PAPER, "mg-bc": {}, "rose-oracle-ref": {}, "sos-md-stagewise": {}},
        ),
        SuiteEntry("markov_games/tree-game", {**_TREE, **_BASELINES, **_TREE_OTHERS}),
        SuiteEntry(
            "markov_games/low-rank",
            {**_PAPER, "sos-md-linear": {}, "rose-linear": {}, **_BASELINES, **_OTHERS},
        ),
        SuiteEntry("markov_games/soccer", {**_SOCCER, **_BASELINES, **_OTHERS}),
        *(
            SuiteEntry(t, {**_PAPER, **_BASELINES, "mg-nash-oracle": {}})
            for t in ("markov_games/goofspiel", "markov_games/oshi-zumo")
        ),
    ],
}
