"""The driving family's results: ScenePilot-v1/v2 per scenario, written to docs/results/driving.md.

    OMP_NUM_THREADS=1 python experiments/driving.py run --env v2 --planner human --seeds 10 --scenarios 5,6,7 --workers 2
    python experiments/driving.py transfer --planner human --episodes 5
    python experiments/driving.py report --planner human

Per seed and scenario (one *unit*, cached in ``--store``, default ``results/driving-v1/``): Phi's own
phase (data with random/held/scripted adversaries, trained to convergence, frozen; AUROC on held-out
episodes), then ScenePilot, the risk-only PPO and LC trained with that Phi frozen for the same env
steps, then random, scripted, LC, PPO-risk, ScenePilot (and the env's reckless actor where it has
one) evaluated on the same ``--episodes`` randomized episodes (paired), then the defense phase (a
residual PPO on the ego planner fine-tuned against the trained ScenePilot adversary;
``icml26.agents.driving.defense``) with the ego's collision rate before/after on the same episodes.
``report`` pools the units into the page: collision rates with Wilson intervals, the boundary-band
share at several k, red-light violations, the shield gate's activity, Phi's AUROC, per-seed paired
tests (``icml26.stats.paired_test``) with Holm's correction, the defense result, and the verdict on
the paper's +6.2 pp. The v0 record is ``experiments/driving_v0.py`` / ``docs/results/driving_v0.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from icml26.provenance import add_allow_dirty, provenance, provenance_lines  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "results" / "driving-v1"
PAGE = ROOT / "docs" / "results" / "driving.md"
ARMS = ("random", "scripted", "lc", "ppo-risk", "scenepilot", "ppo-risk-stoch", "scenepilot-stoch")
PRIOR = ("scripted", "lc")  # the prior generators the paper's +6.2 pp is measured against
CLAIM_PP = 6.2


def unit(seed: int, scenario: int, cfg: dict[str, Any]) -> dict[str, Any]:
    """One seed x scenario: Phi phase, three learners, five evaluated arms (paired episodes)."""
    import torch

    from icml26.agents.driving.baselines import LCAgent
    from icml26.agents.driving.pipeline import (
        batched_policy,
        evaluate,
        have_v1,
        make_vector,
        phi_phase,
        set_env_version,
        train_adversary,
    )
    from icml26.protocol import Budget, derive_seed

    torch.set_num_threads(1)
    set_env_version(cfg.get("env", "v1"))
    planner, t0 = cfg["planner"], time.time()
    action = cfg.get("action", "speed")
    ekw = {"action": action}
    dim = 1 if action == "speed" else 2
    s_phi = derive_seed(seed, "phi", scenario)
    phi, phi_rep = phi_phase(
        scenario, planner, s_phi, cfg["phi_episodes"], cfg["phi_test_episodes"]
    )
    times = {"phi": time.time() - t0}
    common = dict(
        updates_per_k=cfg["updates_per_k"],
        num_envs=cfg["num_envs"],
        rollout_steps=cfg["rollout_steps"],
        env_kwargs=ekw,
        lr=cfg.get("lr", 1e-4),
        update_epochs=cfg.get("update_epochs", 1),
    )
    s_adv = derive_seed(seed, "adversary", scenario)
    sp, sp_stats = train_adversary(scenario, planner, phi, s_adv, risk_only=False, **common)
    times["scenepilot"] = time.time() - t0 - sum(times.values())
    pr, pr_stats = train_adversary(scenario, planner, phi, s_adv, risk_only=True, **common)
    times["ppo-risk"] = time.time() - t0 - sum(times.values())
    lc = LCAgent(num_envs=cfg["num_envs"])
    lc.reset(s_adv)
    venv = make_vector(cfg["num_envs"], scenario, planner, phi=phi, **ekw)
    lc.learn(venv, Budget(env_steps=int(sp_stats["env_steps"])))
    venv.close()
    times["lc"] = time.time() - t0 - sum(times.values())
    k_final = float(sp_stats["final_k"])
    s_eval = derive_seed(seed, "eval", scenario)
    policies = {
        "random": batched_policy("random", seed=derive_seed(seed, "random", scenario), dim=dim),
        "scripted": batched_policy("scripted", dim=dim),
        "lc": batched_policy("lc", lc, dim=dim),
        "ppo-risk": batched_policy("actor", pr),
        "scenepilot": batched_policy("actor", sp),
    }
    reckless = _reckless_fn(cfg.get("env", "v1"))
    if (
        reckless is not None
    ):  # the env's reckless scripted actor (v2): crashes without a boundary band
        policies["reckless"] = batched_policy("per-scene", reckless, dim=dim)
    evals = {
        arm: evaluate(pol, scenario, planner, s_eval, cfg["episodes"], k=k_final, env_kwargs=ekw)
        for arm, pol in policies.items()
    }
    if reckless is not None and dim == 2:  # its 1-D (target speed) form: timed to meet the ego
        evals["reckless-1d"] = evaluate(
            batched_policy("per-scene", reckless, dim=1),
            scenario,
            planner,
            s_eval,
            cfg["episodes"],
            k=k_final,
            env_kwargs={"action": "speed"},
        )
    for name, ag in (("ppo-risk", pr), ("scenepilot", sp)):  # the policies as trained (sampling)
        ag.args.deterministic = False
        import torch as _t

        _t.manual_seed(s_eval)
        evals[f"{name}-stoch"] = evaluate(
            batched_policy("actor", ag),
            scenario,
            planner,
            s_eval,
            cfg["episodes"],
            k=k_final,
            env_kwargs=ekw,
        )
    times["evaluation"] = time.time() - t0 - sum(times.values())
    defense = (
        _defense(seed, scenario, planner, sp, s_eval, cfg, dim)
        if cfg.get("defense_updates", 0) > 0
        else None
    )
    times["defense"] = time.time() - t0 - sum(times.values())
    return {
        "seed": seed,
        "scenario": scenario,
        "planner": planner,
        "env": cfg.get("env", "v1"),
        "v1": have_v1(),
        "defense": defense,
        "phi": phi_rep,
        "k_final": k_final,
        "train_env_steps": int(sp_stats["env_steps"]),
        "scenepilot_curve": sp_stats["curve"],
        "ppo_risk_curve": pr_stats["curve"],
        "episodes": {arm: rows for arm, rows in evals.items()},
        "seconds": time.time() - t0,
        "phase_seconds": times,
    }


def _reckless_fn(version: str) -> Any:
    """The env version's reckless scripted actor (``reckless_adversary_<version>``), if it has one."""
    import importlib

    from icml26.agents.driving.pipeline import ENV_VERSIONS

    mod = importlib.import_module(ENV_VERSIONS[version][0])
    return getattr(mod, f"reckless_adversary_{version}", None)


def _defense(
    seed: int, scenario: int, planner: str, sp: Any, s_eval: int, cfg: dict[str, Any], dim: int
) -> dict[str, Any]:
    """The defense phase: a residual PPO on the ego planner fine-tuned against the trained ScenePilot
    adversary (sampling, as trained); ego episodes before (zero residual) and after, on the same
    randomized episodes as the attack evaluation, against that adversary (its mean, and sampling)
    and against the scripted actor."""
    from icml26.agents.driving.defense import (
        DefenseVectorEnv,
        ResidualEgoPPO,
        adversary_callable,
        evaluate_ego,
    )
    from icml26.agents.driving.pipeline import batched_policy, vector_class
    from icml26.envs.driving.env import driving_score
    from icml26.protocol import derive_seed

    t0 = time.time()
    kw = {"action": cfg.get("action", "acc_steer"), "vector_cls": vector_class()}
    ego = ResidualEgoPPO(seed=derive_seed(seed, "defense", scenario))
    train_adv = adversary_callable(
        sp, deterministic=False, seed=derive_seed(seed, "def-adv", scenario)
    )
    env = DefenseVectorEnv(
        cfg["num_envs"],
        scenario,
        planner,
        train_adv,
        collision_penalty=cfg.get("defense_collision_penalty", 50.0),
        speed_penalty=cfg.get("defense_speed_penalty", 10.0),
        **kw,
    )
    st = ego.learn(env, cfg["defense_updates"], 32, seed=derive_seed(seed, "defense-env", scenario))
    env.close()
    out: dict[str, Any] = {"train": st, "train_seconds": time.time() - t0}
    n = cfg["episodes"]
    for label, res in (("before", None), ("after", ego.act)):
        rows, stats = evaluate_ego(res, scenario, planner, adversary_callable(sp), s_eval, n, **kw)
        stoch = adversary_callable(sp, deterministic=False, seed=s_eval)
        rows_st, _ = evaluate_ego(res, scenario, planner, stoch, s_eval, n, **kw)
        scripted = batched_policy("scripted", dim=dim)
        scripted.start(n, scenario)
        rows_s, _ = evaluate_ego(res, scenario, planner, scripted, s_eval, n, **kw)
        out[label] = {
            "collision": [r["collision"] for r in rows],
            "route_completion": [r["route_completion"] for r in rows],
            "driving_score": driving_score(rows)["driving_score"],
            "residual": stats,
            "collision_stoch": [r["collision"] for r in rows_st],
            "route_completion_stoch": [r["route_completion"] for r in rows_st],
            "collision_scripted": [r["collision"] for r in rows_s],
        }
    return out


def _path(seed: int, scenario: int, planner: str) -> Path:
    return STORE / f"{planner}_s{scenario}_seed{seed}.json"


def _run_one(args: tuple[int, int, dict[str, Any]]) -> str:
    seed, scenario, cfg = args
    out = unit(seed, scenario, cfg)
    p = _path(seed, scenario, cfg["planner"])
    p.write_text(json.dumps(out))
    return f"seed {seed} scenario {scenario}: {out['seconds']:.0f} s"


def cmd_run(a: argparse.Namespace) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from tqdm.auto import tqdm

    STORE.mkdir(parents=True, exist_ok=True)
    cfg = {
        "planner": a.planner,
        "episodes": a.episodes,
        "phi_episodes": a.phi_episodes,
        "phi_test_episodes": a.phi_test_episodes,
        "updates_per_k": a.updates_per_k,
        "num_envs": a.num_envs,
        "rollout_steps": a.rollout_steps,
        "action": a.action,
        "lr": a.lr,
        "update_epochs": a.update_epochs,
        "env": a.env,
        "defense_updates": a.defense_updates,
        "defense_collision_penalty": a.defense_collision_penalty,
        "defense_speed_penalty": a.defense_speed_penalty,
    }
    (STORE / f"config_{a.planner}.json").write_text(json.dumps({**cfg, "prov": a.prov}))
    scen = [int(s) for s in a.scenarios.split(",")]
    todo = [
        (seed, sc, cfg)
        for seed in range(a.seeds)
        for sc in scen
        if not _path(seed, sc, a.planner).exists()
    ]
    with ProcessPoolExecutor(max_workers=a.workers) as ex:
        for msg in tqdm(ex.map(_run_one, todo), total=len(todo), desc="driving units"):
            print(msg, flush=True)


def cmd_transfer(a: argparse.Namespace) -> None:
    """Adversaries trained on the kinematic backend, evaluated on kinematic and MetaDrive physics."""
    import torch

    from icml26.agents.driving.baselines import LCAgent
    from icml26.agents.driving.pipeline import (
        evaluate_transfer,
        make_vector,
        phi_phase,
        set_env_version,
        train_adversary,
    )
    from icml26.protocol import Budget, derive_seed

    cfg = json.loads((STORE / f"config_{a.planner}.json").read_text())
    set_env_version(cfg.get("env", "v1"))
    ekw = {"action": cfg.get("action", "speed")}
    out: dict[str, Any] = {
        "episodes": a.episodes,
        "seed": a.seed,
        "env": cfg.get("env", "v1"),
        "planner": a.planner,
        "action": ekw["action"],
        "rows": [],
    }
    for sc in [int(s) for s in a.scenarios.split(",")]:
        phi, _ = phi_phase(
            sc,
            a.planner,
            derive_seed(a.seed, "phi", sc),
            cfg["phi_episodes"],
            cfg["phi_test_episodes"],
        )
        s_adv = derive_seed(a.seed, "adversary", sc)
        sp, st = train_adversary(
            sc,
            a.planner,
            phi,
            s_adv,
            updates_per_k=cfg["updates_per_k"],
            num_envs=cfg["num_envs"],
            rollout_steps=cfg["rollout_steps"],
            env_kwargs=ekw,
            lr=cfg.get("lr", 1e-4),
            update_epochs=cfg.get("update_epochs", 1),
        )
        sp.args.deterministic = False
        lc = LCAgent(num_envs=cfg["num_envs"])
        lc.reset(s_adv)
        venv = make_vector(cfg["num_envs"], sc, a.planner, phi=phi, **ekw)
        lc.learn(venv, Budget(env_steps=int(st["env_steps"])))
        venv.close()
        for name, ag in (("scenepilot-stoch", sp), ("lc", lc)):
            for backend in ("kinematic", "metadrive"):
                torch.manual_seed(a.seed)
                rows = evaluate_transfer(
                    ag,
                    sc,
                    a.planner,
                    derive_seed(a.seed, "transfer", sc),
                    a.episodes,
                    backend,
                    env_kwargs=ekw,
                )
                out["rows"].append(
                    {
                        "scenario": sc,
                        "arm": name,
                        "backend": backend,
                        "collisions": [r["collision"] for r in rows],
                    }
                )
                print(sc, name, backend, [r["collision"] for r in rows], flush=True)
    (STORE / f"transfer_{a.planner}.json").write_text(json.dumps(out))


def _transfer_lines(planner: str, path: str | None = None) -> list[str]:
    p = Path(path) if path else STORE / f"transfer_{planner}.json"
    if not p.exists():
        return ["No transfer run (`experiments/driving.py transfer`) was found."]
    t = json.loads(p.read_text())
    lines = [
        f"Env {t.get('env', 'v1')}, ego planner `{t.get('planner', 'idm')}`, adversary action "
        f"`{t.get('action', 'speed')}`; seed {t['seed']}; "
        f"{t['episodes']} episodes per scenario, arm and backend, the same reset seeds "
        "on both backends (paired); policies trained on the kinematic backend only.",
        "",
        "| scenario | arm | kinematic collision rate [Wilson] | MetaDrive collision rate [Wilson] | episodes differing |",
        "|---|---|---|---|---|",
    ]
    by = {(r["scenario"], r["arm"], r["backend"]): r["collisions"] for r in t["rows"]}
    for sc, arm in sorted({(r["scenario"], r["arm"]) for r in t["rows"]}):
        k, m = by[(sc, arm, "kinematic")], by[(sc, arm, "metadrive")]
        diff = sum(x != y for x, y in zip(k, m))
        lines.append(
            f"| {sc} | {arm} | {_fmt_wilson(int(sum(k)), len(k))} | {_fmt_wilson(int(sum(m)), len(m))} | {diff} |"
        )
    return lines


# ---------------------------------------------------------------------------- report


def _load(planner: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(STORE.glob(f"{planner}_s*_seed*.json"))]


def _rate(rows: list[dict[str, float]], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


def _fmt_wilson(k: int, n: int) -> str:
    from icml26.stats import wilson_ci

    iv = wilson_ci(k, n)
    return f"{k / n:.3f} [{iv.low:.3f}, {iv.high:.3f}]"


def _arms(units: list[dict[str, Any]]) -> list[str]:
    """The arms every unit evaluated (``reckless`` only where the env version has that actor)."""
    return [a for a in (*ARMS, "reckless", "reckless-1d") if all(a in u["episodes"] for u in units)]


def _pre_sigma(r: dict[str, float]) -> float:
    """The pre-collision minimum sigma: the env's (up to 1 s, the ego's response time, before the
    end), else the minimum over all states before the last step."""
    return float(r.get("min_sigma_pre_collision_env", r["min_sigma_pre"]))


def _band(rows: list[dict[str, float]], k: float, key: Any = _pre_sigma) -> str:
    coll = [r for r in rows if r["collision"]]
    if not coll:
        return "n/a"
    return _fmt_wilson(int(sum(key(r) >= k for r in coll)), len(coll))


def _band_tests(units: list[dict[str, Any]], scen: list[int], k: float = 0.0) -> list[str]:
    """Does the band share tell the reckless actor from the scripted one? Fisher's exact test on the
    collisions' band counts at ``k``, per scenario, Holm over the rows."""
    from scipy.stats import fisher_exact

    from icml26.stats import holm

    arms = [a for a in ("reckless", "reckless-1d") if a in _arms(units)]
    if not arms:
        return []
    rows, ps = [], []
    for sc in scen:
        us = [u for u in units if u["scenario"] == sc]

        def counts(arm: str, us: list[dict[str, Any]] = us) -> tuple[int, int]:
            coll = [r for u in us for r in u["episodes"][arm] if r["collision"]]
            return int(sum(_pre_sigma(r) >= k for r in coll)), len(coll)

        b0, n0 = counts("scripted")
        for arm in arms:
            b1, n1 = counts(arm)
            if n0 == 0 or n1 == 0:
                continue
            p = float(fisher_exact([[b0, n0 - b0], [b1, n1 - b1]])[1])
            rows.append((sc, arm, b0, n0, b1, n1, p))
            ps.append(p)
    if not rows:
        return []
    adj = holm(ps)
    lines = [
        "",
        f"Band share at k = {k:g}, scripted vs the reckless actor (Fisher's exact test on the collisions, Holm over the rows):",
        "",
        "| scenario | arm | scripted: band / collisions | arm: band / collisions | p | Holm p |",
        "|---|---|---|---|---|---|",
    ]
    for (sc, arm, b0, n0, b1, n1, p), ap in zip(rows, adj):
        lines.append(
            f"| {sc} | {arm} | {b0}/{n0} = {b0 / n0:.2f} | {b1}/{n1} = {b1 / n1:.2f} | {p:.3g} | {ap:.3g} |"
        )
    return lines


def _band_rate_tests(units: list[dict[str, Any]], scen: list[int], k: float) -> list[str]:
    """The paper's mechanism: the rate of boundary-band collisions (per episode: collision with a
    pre-collision minimum sigma >= k), ScenePilot minus PPO-risk and minus scripted, per seed."""
    from icml26.stats import holm, paired_test

    def rate(u: dict[str, Any], arm: str) -> float:
        return float(np.mean([r["collision"] and _pre_sigma(r) >= k for r in u["episodes"][arm]]))

    rows, ps = [], []
    for sc in scen:
        us = sorted((u for u in units if u["scenario"] == sc), key=lambda u: u["seed"])
        sp = [rate(u, "scenepilot") for u in us]
        for arm in ("ppo-risk", "scripted"):
            r = paired_test(sp, [rate(u, arm) for u in us], seed=sc)
            rows.append(
                (sc, arm, float(np.mean(sp)), float(np.mean([rate(u, arm) for u in us])), r)
            )
            ps.append(r.p_value)
    adj = holm(ps)
    lines = [
        "",
        f"Boundary-band collision rate (share of episodes ending in a collision with pre-collision minimum sigma >= {k:g}), "
        "ScenePilot minus PPO-risk and minus scripted (per-seed paired, Holm over the rows):",
        "",
        "| scenario | ScenePilot minus | ScenePilot | other | diff (pp) [95% CI] | p | Holm p |",
        "|---|---|---|---|---|---|---|",
    ]
    for (sc, arm, a, b, r), ap in zip(rows, adj):
        lines.append(
            f"| {sc} | {arm} | {a:.3f} | {b:.3f} | {100 * r.diff:+.1f} [{100 * r.low:+.1f}, {100 * r.high:+.1f}] | {r.p_value:.3g} | {ap:.3g} |"
        )
    return lines


def _table_rates(units: list[dict[str, Any]], scen: list[int], k: float) -> list[str]:
    lines = [
        f"| scenario | arm | collision rate [Wilson 95%] | boundary-band share at k = {k:g} | same, sigma up to contact | red-light violations | episodes |",
        "|---|---|---|---|---|---|---|",
    ]
    for sc in scen:
        us = [u for u in units if u["scenario"] == sc]
        for arm in _arms(units):
            rows = [r for u in us for r in u["episodes"][arm]]
            n, c = len(rows), int(sum(r["collision"] for r in rows))
            red = int(sum(r["run_red_light"] > 0 for r in rows))
            lines.append(
                f"| {sc} | {arm} | {_fmt_wilson(c, n)} | {_band(rows, k)} | "
                f"{_band(rows, k, key=lambda r: r['min_sigma_pre'])} | {_fmt_wilson(red, n)} | {n} |"
            )
    return lines


BAND_KS = (0.0, 0.1, 0.2, 0.35, 0.5)


def _band_k_table(units: list[dict[str, Any]], scen: list[int]) -> list[str]:
    arms = _arms(units)
    lines = [
        "| k | " + " | ".join(arms) + " |",
        "|---|" + "---|" * len(arms),
    ]
    for k in BAND_KS:
        cells = [_band([r for u in units for r in u["episodes"][a]], k) for a in arms]
        lines.append(f"| {k:g} | " + " | ".join(cells) + " |")
    return lines


def _paired(units: list[dict[str, Any]], scen: list[int]) -> tuple[list[str], dict[str, Any]]:
    from icml26.stats import holm, paired_test

    tests = []
    for sc in scen:
        us = sorted((u for u in units if u["scenario"] == sc), key=lambda u: u["seed"])
        sp = [_rate(u["episodes"]["scenepilot"], "collision") for u in us]
        for arm in [
            a
            for a in _arms(units)
            if a in ("random", "scripted", "lc", "ppo-risk", "scenepilot-stoch")
        ]:
            other = [_rate(u["episodes"][arm], "collision") for u in us]
            tests.append((sc, arm, paired_test(sp, other, seed=sc)))
    # pooled over scenarios: the per-seed mean over the reported scenarios
    seeds = sorted({u["seed"] for u in units})
    full = [
        s
        for s in seeds
        if all(any(u["seed"] == s and u["scenario"] == sc for u in units) for sc in scen)
    ]

    def per_seed(arm: str) -> list[float]:
        return [
            float(
                np.mean([_rate(u["episodes"][arm], "collision") for u in units if u["seed"] == s])
            )
            for s in full
        ]

    best_prior = max(PRIOR, key=lambda a: np.mean(per_seed(a)))
    pooled = paired_test(per_seed("scenepilot"), per_seed(best_prior), seed=99)
    adj = holm([t[2].p_value for t in tests] + [pooled.p_value])
    lines = [
        "| scenario | ScenePilot minus | diff (pp) [95% CI] | p | Holm p | seeds |",
        "|---|---|---|---|---|---|",
    ]
    for (sc, arm, r), ap in zip(tests, adj[:-1]):
        lines.append(
            f"| {sc} | {arm} | {100 * r.diff:+.1f} [{100 * r.low:+.1f}, {100 * r.high:+.1f}] | {r.p_value:.3g} | {ap:.3g} | {r.n} |"
        )
    lines.append(
        f"| all ({','.join(map(str, scen))}) | best prior ({best_prior}) | {100 * pooled.diff:+.1f} "
        f"[{100 * pooled.low:+.1f}, {100 * pooled.high:+.1f}] | {pooled.p_value:.3g} | {adj[-1]:.3g} | {pooled.n} |"
    )
    return lines, {"pooled": pooled, "holm": float(adj[-1]), "best_prior": best_prior}


def _verdict(v: dict[str, Any]) -> str:
    r = v["pooled"]
    d, lo, hi = 100 * r.diff, 100 * r.low, 100 * r.high
    inside = lo <= CLAIM_PP <= hi
    sig = v["holm"] < 0.05
    if sig and d > 0:
        head = f"ScenePilot beats the best prior generator ({v['best_prior']}) by {d:+.1f} pp [{lo:+.1f}, {hi:+.1f}] (Holm p = {v['holm']:.3g})"
    elif sig and d < 0:
        head = f"ScenePilot is *below* the best prior generator ({v['best_prior']}) by {d:+.1f} pp [{lo:+.1f}, {hi:+.1f}] (Holm p = {v['holm']:.3g})"
    else:
        head = f"the difference to the best prior generator ({v['best_prior']}) is {d:+.1f} pp [{lo:+.1f}, {hi:+.1f}], not detectable at this n (Holm p = {v['holm']:.3g})"
    tail = (
        f"the paper's +{CLAIM_PP} pp lies inside the interval (consistent with it)"
        if inside
        else f"the paper's +{CLAIM_PP} pp lies outside the interval (not reproduced here)"
    )
    return f"**Verdict on the +{CLAIM_PP} pp claim:** {head}; {tail}."


def _phi_table(units: list[dict[str, Any]], scen: list[int]) -> list[str]:
    from icml26.stats import mean_ci

    lines = [
        "| scenario | Phi AUROC, held-out episodes (mean [95% CI] over seeds) | epochs to early stop (median) | converged (early stop fired) | positive share | test episodes / seed |",
        "|---|---|---|---|---|---|",
    ]
    for sc in scen:
        us = [u for u in units if u["scenario"] == sc]
        au = [u["phi"]["auroc_test"] for u in us if np.isfinite(u["phi"]["auroc_test"])]
        iv = mean_ci(au, method="t") if len(au) > 1 else None
        au_s = f"{iv.estimate:.3f} [{iv.low:.3f}, {iv.high:.3f}]" if iv else "n/a"
        lines.append(
            f"| {sc} | {au_s} | {np.median([u['phi']['epochs'] for u in us]):.0f} | "
            f"{sum(u['phi']['converged'] for u in us)}/{len(us)} | "
            f"{np.mean([u['phi']['positive_share'] for u in us]):.3f} | {us[0]['phi']['test_episodes']} |"
        )
    return lines


def _training_table(units: list[dict[str, Any]], scen: list[int]) -> list[str]:
    lines = [
        "| scenario | ScenePilot gate share (alpha = 1), mean over training | feasible ratio (sigma_{t+1} >= k): mean / min over updates | updates with feasible ratio < 1 | ScenePilot and PPO-risk deterministic policies identical (seeds) | training-time collision rate, first / last quarter |",
        "|---|---|---|---|---|---|",
    ]
    for sc in scen:
        us = [u for u in units if u["scenario"] == sc]
        cs = [u["scenepilot_curve"] for u in us]
        gate = np.mean([np.mean(c.get("gate_share", [np.nan])) for c in cs])
        feas = np.mean([np.mean(c["feasible_ratio"]) for c in cs])
        fmin = np.min([np.min(c["feasible_ratio"]) for c in cs])
        closed = np.mean([np.mean(np.asarray(c["feasible_ratio"]) < 1.0) for c in cs])
        same = sum(
            [r["collision"] for r in u["episodes"]["scenepilot"]]
            == [r["collision"] for r in u["episodes"]["ppo-risk"]]
            and u["scenepilot_curve"]["collision_rate"] == u["ppo_risk_curve"]["collision_rate"]
            for u in us
        )
        q = [len(c["collision_rate"]) // 4 for c in cs]
        first = np.mean([np.mean(c["collision_rate"][:n]) for c, n in zip(cs, q)])
        last = np.mean([np.mean(c["collision_rate"][-n:]) for c, n in zip(cs, q)])
        lines.append(
            f"| {sc} | {gate:.3f} | {feas:.3f} / {fmin:.3f} | {closed:.2f} | {same}/{len(us)} | {first:.3f} / {last:.3f} |"
        )
    return lines


DEFENSE_VS = (
    ("collision", "ScenePilot (mean action)"),
    ("collision_stoch", "ScenePilot (sampling, as trained against)"),
    ("collision_scripted", "scripted actor"),
)


def _defense_lines(units: list[dict[str, Any]], scen: list[int], cfg: dict[str, Any]) -> list[str]:
    """Ego collision rate before vs after the residual fine-tuning (paired), route completion,
    driving score and the residual's statistics."""
    from icml26.stats import holm, mcnemar_exact, paired_test

    us_all = [u for u in units if u.get("defense")]
    if not us_all:
        return ["No defense phase in these units (run with `--defense-updates` > 0)."]
    d0 = us_all[0]["defense"]
    lines = [
        f"Per seed and scenario: a residual [acc, steer] policy on the ego planner (PPO, zero-initialized mean: "
        f"before training it is the planner alone) fine-tuned for {d0['train']['updates']} updates "
        f"({d0['train']['env_steps']} env steps) against that unit's trained ScenePilot adversary (sampling), "
        f"reward SafeBench's ego reward with a collision penalty of {cfg.get('defense_collision_penalty', 50.0):g} "
        f"and {cfg.get('defense_speed_penalty', 10.0):g} per step above 8 m/s (SafeBench: 1 and 10; "
        "`icml26/agents/driving/defense.py`). "
        "Before = zero residual, after = the residual's mean action; both on the same randomized evaluation "
        "episodes as the attack tables (paired; against the sampling adversary with the same noise stream).",
        "",
        "| scenario | adversary | ego collision rate before [Wilson] | after [Wilson] | after - before, per-seed mean (pp) [95% CI] | p (sign-flip) | Holm p | McNemar p (episodes) | route completion before / after | driving score before / after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows, ps = [], []
    for sc in scen:
        us = sorted((u for u in us_all if u["scenario"] == sc), key=lambda u: u["seed"])
        for key, label in DEFENSE_VS:
            b = [np.asarray(u["defense"]["before"][key]) for u in us]
            a = [np.asarray(u["defense"]["after"][key]) for u in us]
            r = paired_test([x.mean() for x in a], [x.mean() for x in b], seed=sc)
            B, A = np.concatenate(b), np.concatenate(a)
            mc = mcnemar_exact((1 - A).astype(int), (1 - B).astype(int)) if (A != B).any() else 1.0
            rc_key = {
                "collision": "route_completion",
                "collision_stoch": "route_completion_stoch",
            }.get(key)
            rc = (
                f"{np.mean([np.mean(u['defense']['before'][rc_key]) for u in us]):.3f} / "
                f"{np.mean([np.mean(u['defense']['after'][rc_key]) for u in us]):.3f}"
                if rc_key
                else "-"
            )
            ds = (
                f"{np.mean([u['defense']['before']['driving_score'] for u in us]):.3f} / "
                f"{np.mean([u['defense']['after']['driving_score'] for u in us]):.3f}"
                if key == "collision"
                else "-"
            )
            rows.append((sc, label, B, A, r, mc, rc, ds))
            ps.append(r.p_value)
    adj = holm(ps)
    for (sc, label, B, A, r, mc, rc, ds), ap in zip(rows, adj):
        lines.append(
            f"| {sc} | {label} | {_fmt_wilson(int(B.sum()), len(B))} | {_fmt_wilson(int(A.sum()), len(A))} | "
            f"{100 * r.diff:+.1f} [{100 * r.low:+.1f}, {100 * r.high:+.1f}] | {r.p_value:.3g} | {ap:.3g} | {mc:.3g} | {rc} | {ds} |"
        )
    lines += [
        "",
        "The residual before and after fine-tuning (its action on the states visited in the evaluation "
        "episodes against the ScenePilot mean action; 1 = 3 m/s^2 or 0.3 rad):",
        "",
        "| scenario | mean abs(acc) before / after | mean acc after | mean abs(steer) before / after | share of steps with a residual > 0.05, after | training-time ego collision rate, first / last quarter | seconds (defense phase) |",
        "|---|---|---|---|---|---|---|",
    ]
    for sc in scen:
        us = [u for u in us_all if u["scenario"] == sc]

        def m(which: str, key: str, us: list[dict[str, Any]] = us) -> float:
            return float(np.mean([u["defense"][which]["residual"][key] for u in us]))

        cs = [u["defense"]["train"]["curve"]["collision_rate"] for u in us]
        q = [max(len(c) // 4, 1) for c in cs]
        first = np.mean([np.mean(c[:n]) for c, n in zip(cs, q)])
        last = np.mean([np.mean(c[-n:]) for c, n in zip(cs, q)])
        secs = np.mean(
            [u["phase_seconds"]["defense"] for u in us if "phase_seconds" in u] or [np.nan]
        )
        lines.append(
            f"| {sc} | {m('before', 'mean_abs_acc'):.3f} / {m('after', 'mean_abs_acc'):.3f} | {m('after', 'mean_acc'):+.3f} | "
            f"{m('before', 'mean_abs_steer'):.3f} / {m('after', 'mean_abs_steer'):.3f} | {m('after', 'share_active'):.2f} | "
            f"{first:.3f} / {last:.3f} | {secs:.0f} |"
        )
    return lines


def _figures(units: list[dict[str, Any]], scen: list[int], page: Path) -> list[str]:
    """Three figures next to the page: collision rate and band share per arm, the gate during
    training, the defense before/after. Returns the markdown that shows them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from icml26.stats import wilson_ci

    fig_dir = page.parent / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    arms = _arms(units)
    names = []
    # 1. collision rate (Wilson) and boundary-band share at k = 0 per arm and scenario
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    w = 0.8 / len(scen)
    for j, sc in enumerate(scen):
        rows = {
            a: [r for u in units if u["scenario"] == sc for r in u["episodes"][a]] for a in arms
        }
        for ax, which in zip(axes, ("rate", "band")):
            est, lo, hi = [], [], []
            for a in arms:
                rr = rows[a] if which == "rate" else [r for r in rows[a] if r["collision"]]
                k = (
                    sum(r["collision"] for r in rr)
                    if which == "rate"
                    else sum(_pre_sigma(r) >= 0.0 for r in rr)
                )
                if not rr:
                    est.append(np.nan), lo.append(0.0), hi.append(0.0)
                    continue
                iv = wilson_ci(int(k), len(rr))
                (
                    est.append(k / len(rr)),
                    lo.append(k / len(rr) - iv.low),
                    hi.append(iv.high - k / len(rr)),
                )
            x = np.arange(len(arms)) + (j - (len(scen) - 1) / 2) * w
            ax.bar(x, est, w, yerr=[lo, hi], capsize=2, label=f"scenario {sc}")
    for ax, title in zip(
        axes,
        ("ego collision rate (Wilson 95%)", "boundary-band share of collisions at k = 0"),
    ):
        ax.set_xticks(np.arange(len(arms)))
        ax.set_xticklabels(arms, rotation=40, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(title)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    names.append(("driving_v2_rates.png", "collision rate and boundary-band share per arm"))
    fig.savefig(fig_dir / names[-1][0], dpi=110)
    plt.close(fig)
    # 2. the gate during training
    fig, axes = plt.subplots(1, len(scen), figsize=(4 * len(scen), 3.2), squeeze=False)
    for ax, sc in zip(axes[0], scen):
        cs = [u["scenepilot_curve"] for u in units if u["scenario"] == sc]
        for key in ("feasible_ratio", "gate_share", "collision_rate"):
            ax.plot(np.mean([c[key] for c in cs], axis=0), label=key)
        ax.plot(cs[0]["k"], "k--", lw=0.8, label="k")
        ax.set_title(f"ScenePilot training, scenario {sc} (mean over seeds)", fontsize=9)
        ax.set_xlabel("PPO update")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    names.append(
        ("driving_v2_training.png", "feasible ratio, gate share and collision rate during training")
    )
    fig.savefig(fig_dir / names[-1][0], dpi=110)
    plt.close(fig)
    # 3. the defense: ego collision rate before and after, per scenario and adversary
    us = [u for u in units if u.get("defense")]
    if us:
        fig, ax = plt.subplots(figsize=(8, 3.5))
        labels, xb = [], 0
        for sc in scen:
            for key, label in DEFENSE_VS:
                for t, col in (("before", "tab:gray"), ("after", "tab:green")):
                    v = np.concatenate([u["defense"][t][key] for u in us if u["scenario"] == sc])
                    iv = wilson_ci(int(v.sum()), len(v))
                    off = -0.2 if t == "before" else 0.2
                    ax.bar(
                        xb + off,
                        v.mean(),
                        0.4,
                        color=col,
                        yerr=[[v.mean() - iv.low], [iv.high - v.mean()]],
                        capsize=2,
                    )
                labels.append(
                    f"{sc}: {label.split(' (')[0]}{' (s)' if 'sampling' in label else ''}"
                )
                xb += 1
        ax.set_xticks(np.arange(len(labels)))
        ax.set_xticklabels(labels, rotation=40, ha="right", fontsize=7)
        ax.set_ylabel("ego collision rate")
        ax.set_title("defense: before (grey) / after (green) fine-tuning the residual", fontsize=9)
        fig.tight_layout()
        names.append(("driving_v2_defense.png", "ego collision rate before/after the defense"))
        fig.savefig(fig_dir / names[-1][0], dpi=110)
        plt.close(fig)
    return [f"![{alt}](figures/{n})" for n, alt in names]


ENV_TEXT = {
    "v1": "`icml26/ScenePilot-v1` (reward `collision`, sigma `rss` = RSS distances with the 'both axes unsafe' rule, "
    "randomized scenarios, traffic lights)",
    "v2": "`icml26/ScenePilot-v2` (reward `collision`, sigma `rss` of v2 = v1's RSS rule for near-parallel cars plus a "
    "conflict-window rule for crossing routes, randomized scenarios, traffic lights)",
}


def _cost_line(units: list[dict[str, Any]]) -> str:
    line = (
        f"Mean wall time per unit (seed x scenario: Phi phase, three learners, the evaluations, the defense): "
        f"{np.mean([u['seconds'] for u in units]):.0f} s on the shared 2-core machine"
    )
    ph = [u["phase_seconds"] for u in units if "phase_seconds" in u]
    if ph:
        line += " (" + ", ".join(f"{k} {np.mean([p[k] for p in ph]):.0f} s" for k in ph[0]) + ")"
    return line + "."


def cmd_report(a: argparse.Namespace) -> None:
    units = _load(a.planner)
    if not units:
        raise SystemExit(f"no units in {STORE}; run `experiments/driving.py run` first")
    cfg = json.loads((STORE / f"config_{a.planner}.json").read_text())
    prov = provenance(allow_dirty=a.allow_dirty)
    scen = sorted({u["scenario"] for u in units})
    seeds = sorted({u["seed"] for u in units})
    version = cfg.get("env", "v1")
    k_final = float(np.max([u["k_final"] for u in units]))
    eps = cfg["episodes"]
    paired_lines, verdict = _paired(units, scen)
    draft = (
        ["draft: generated from uncommitted tree", ""]
        if cfg["prov"].get("dirty")
        and not prov.get("dirty")  # provenance_lines marks a dirty report
        else []
    )
    lines = [
        f"# Driving (ScenePilot-{version}) results",
        "",
        *draft,
        provenance_lines(prov),
        "",
        f"Generated on {dt.date.today()} by `experiments/driving.py run` (command and commit of the run: "
        f"`{cfg['prov'].get('command')}` at `{cfg['prov'].get('commit')}`) and `experiments/driving.py report`.",
        f"Env: {ENV_TEXT.get(version, version)}; "
        f"ego planner `{a.planner}`; scenarios {scen}; seeds {seeds[0]}-{seeds[-1]} (n = {len(seeds)}); "
        f"{eps} distinct randomized evaluation episodes per seed and scenario, the same episodes for every arm (paired).",
        "The v0 page is kept as a record: [driving_v0.md](driving_v0.md).",
        "",
        "## Protocol (the release's two phases, per scenario)",
        f"1. Phi phase: {cfg['phi_episodes']} episodes (random, held-random and scripted adversaries), label = ego "
        "collision within the next 2 s (20 steps), MLP 6-128-128-1 trained by class-balanced BCE until the validation "
        f"loss (20% of the episodes) stops improving for 10 epochs, then frozen; AUROC on {cfg['phi_test_episodes']} further held-out episodes.",
        f"2. Adversary phase with Phi frozen: ScenePilot (shielded PPO, two critics, gate alpha) and the risk-only PPO, "
        f"one policy per scenario; the k curriculum [0, .02, .05, .09, .14, .2, .27, .35] walked once with equal spacing, "
        f"{cfg['updates_per_k']} updates per k of {cfg['num_envs']} x {cfg['rollout_steps']} steps "
        f"({8 * cfg['updates_per_k']} updates, {8 * cfg['updates_per_k'] * cfg['num_envs'] * cfg['rollout_steps']} env steps). "
        f"Adversary action `{cfg.get('action', 'speed')}`, lr {cfg.get('lr', 1e-4)}, {cfg.get('update_epochs', 1)} epoch(s) per update "
        "(the release: lr 1e-4, 1 epoch, 100 updates of 2048 steps per k; ~100x this budget, which does not fit the shared 2-core CPU). "
        "LC (learning-to-collide, REINFORCE over trigger distance and speed) gets the same env steps.",
        "3. Evaluation: learned policies act with their tanh mean (`ppo-risk`, `scenepilot`, the release's evaluation) and, "
        "as trained, by sampling (`*-stoch`); random = i.i.d. uniform actions; scripted = SafeBench's trigger-and-speed "
        "behaviour (nominal trigger distance); LC = its learned mean parameters"
        + (
            "; reckless = the env's reckless scripted actor (`reckless_adversary_v2`: with the 2-D action it rams the ego; "
            "with the 1-D target-speed action, `reckless-1d`, it times its speed to meet the ego at the crossing), there to "
            "show whether the boundary-band share tells a reckless actor from the others"
            if "reckless" in _arms(units)
            else ""
        )
        + ".",
        "4. Defense: the ego's residual fine-tuned against the trained ScenePilot adversary (section below).",
        "",
        f"Boundary band: a collision counts as boundary-band at k when the minimum sigma over the episode's states up to "
        f"1 s (the ego's RSS response time) before the collision was >= k: the collision was still avoidable 1 s before. "
        f"The main table uses k = {k_final:g} (the curriculum's final value); the next column takes the minimum over all "
        "states up to contact instead; a table below gives the share at several k.",
        "",
        "## Collision rate, boundary band and red lights (pooled over seeds; Wilson 95% intervals)",
        "",
        *_table_rates(units, scen, k_final),
        "",
        "Boundary-band share of collisions at several k (all reported scenarios pooled; Wilson 95%):",
        "",
        *_band_k_table(units, scen),
        *_band_tests(units, scen),
        *_band_rate_tests(units, scen, k_final),
        "",
        "## Paired tests (per-seed collision rates, ScenePilot minus each arm; bootstrap CI, sign-flip p, Holm over all rows)",
        "",
        *paired_lines,
        "",
        _verdict(verdict),
        "",
        "## Training (ScenePilot's gate and the curriculum)",
        "",
        *_training_table(units, scen),
        "",
        "When the gate never closes (alpha = 0 on every step) ScenePilot's update is exactly the risk-only PPO's "
        "(same seed, same samples): the two arms then coincide and their difference is 0 by construction; the column "
        "'identical' counts the seeds where that happened.",
        "",
        "## Phi (the frozen risk predictor)",
        "",
        *_phi_table(units, scen),
        "",
        "## Defense: adversarial fine-tuning of the ego's residual",
        "",
        *_defense_lines(units, scen, cfg),
        "",
        "## Cost",
        "",
        _cost_line(units),
    ]
    if a.figures:
        lines += ["", "## Figures", "", *_figures(units, scen, Path(a.page))]
    lines += [
        "",
        "## Transfer: kinematic-trained adversaries on MetaDrive physics",
        "",
        *_transfer_lines(a.planner, a.transfer),
    ]
    extra = STORE / "extra.md"
    if extra.exists():
        lines += ["", extra.read_text().rstrip()]
    page = Path(a.page)
    page.write_text("\n".join(lines) + "\n")
    print(f"wrote {page}")


def main() -> None:
    global STORE
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--scenarios", default="5,6,7")
    r.add_argument("--planner", default="idm")
    r.add_argument("--episodes", type=int, default=50)
    r.add_argument("--phi-episodes", type=int, default=150)
    r.add_argument("--phi-test-episodes", type=int, default=60)
    r.add_argument("--updates-per-k", type=int, default=8)
    r.add_argument("--num-envs", type=int, default=16)
    r.add_argument("--rollout-steps", type=int, default=16)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--action", default="acc_steer", choices=("speed", "acc_steer"))
    r.add_argument("--lr", type=float, default=1e-3)
    r.add_argument("--update-epochs", type=int, default=4)
    r.add_argument("--env", default="v1", choices=("v1", "v2"))
    r.add_argument("--defense-updates", type=int, default=40)
    r.add_argument("--defense-collision-penalty", type=float, default=50.0)
    r.add_argument("--defense-speed-penalty", type=float, default=10.0)
    add_allow_dirty(r)
    t = sub.add_parser("transfer")
    t.add_argument("--planner", default="idm")
    t.add_argument("--scenarios", default="5,6,7")
    t.add_argument("--episodes", type=int, default=6)
    t.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("report")
    p.add_argument("--planner", default="idm")
    p.add_argument("--page", default=str(PAGE))
    p.add_argument("--transfer", default=None, help="transfer json (default: the store's)")
    p.add_argument("--figures", action="store_true", help="write figures next to the page")
    add_allow_dirty(p)
    for sp_ in (r, t, p):
        sp_.add_argument("--store", default=str(STORE), help="folder of the cached units")
    a = ap.parse_args()
    STORE = Path(a.store)
    if a.cmd == "run":
        a.prov = provenance(allow_dirty=a.allow_dirty)
        cmd_run(a)
    elif a.cmd == "transfer":
        cmd_transfer(a)
    else:
        cmd_report(a)


if __name__ == "__main__":
    main()
