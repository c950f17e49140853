"""The driving study (issue 36): ScenePilot-v2's adversaries on a budget ladder that reaches the
release's ~1.64M PPO steps, scored by the paper's headline metric (the collision rate of *valid*
scenarios: collisions in the feasibility boundary band at the release's k = 0.35) next to the raw
collision rate.

    icml26 study run driving --executor process --workers 2 --scales 1,4,16   # cheap rungs first
    icml26 study run driving --executor process --workers 2                   # the rest (resumes)
    icml26 study report driving --page docs/results/driving_study.md

Blocks: ``driving/attack-v2-human-s5``, ``-s6`` (on the ladder) and ``-s7`` (top rung only), one
scenario each, 50 evaluation episodes per trial. Arms: ScenePilot, the same policy evaluated by
sampling (a diagnostic), its ablation on the release's own reward (r = Phi, ``scenepilot-released``), the risk-only PPO, LC (learning-to-collide) and
the scripted SafeBench actor and random actions (the prior generators; exact: no learning). The
ladder multiplies the task's 16,384 env steps by 1, 4, 16, 64 and 100 (1.64M = the release's 100
updates of 2048 steps per k for the 8 values of k); the PPO arms walk the k curriculum once over
whatever budget they get (``k_update_every=0``). Seeds 0-2 on the lower rungs, 0-9 at the top.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml26.benchmarks.study import (
    Arm,
    Block,
    Compare,
    Evaluation,
    Study,
    StudyData,
    Untestable,
)

SCENARIOS = (5, 6, 7)
LADDER = (1.0, 4.0, 16.0, 64.0, 100.0)  # x 16,384 env steps: 1%, 4%, 16%, 64%, 100% of 1.64M
LADDER_SEEDS = (0, 1, 2)
TOP_SEEDS = tuple(range(10))
# ScenePilot's PPO at the CPU budget (lr 1e-3, 4 epochs of 512 on batches of 16 x 128 steps; the
# release: lr 1e-4, 1 epoch of 2048) with the curriculum walked once over the budget, made to pass
# the positive control of experiments/driving_notes.md (k = 0 on scenario 6, where every collision
# pays the bonus, so training must raise the collision rate): the policy std capped at 1 and the
# log-probability taken of the drawn action, not of the clamped one (the release: no cap, clamped).
# With the release's settings the std grows without bound (~900 after 128 updates), the policy
# degenerates to random full-scale actions and the control's collision rate falls in 5 of 6 seeds;
# with these two it rises in 5 of 6 (the drawn-action log-probability alone: 6 of 6; the cap is
# kept as the guard against the std's growth).
PPO_KWARGS: dict[str, Any] = {
    "lr": 1e-3,
    "update_epochs": 4,
    "minibatch_size": 512,
    "k_update_every": 0,
    "max_std": 1.0,
    "logprob_of": "sample",
}
PRIORS = ("scripted", "LC")  # the prior generators of the paper's comparison
RELEASE_STEPS = 1_638_400


def block_name(scenario: int) -> str:
    return f"scenario {scenario}"


BLOCKS = tuple(
    Block(f"driving/attack-v2-human-s{s}", label=block_name(s), ladder=s != 7) for s in SCENARIOS
)

ARMS = (
    Arm("ScenePilot", "scenepilot", PPO_KWARGS),
    # the same training as ScenePilot (same seed: the identical policy), evaluated by sampling
    # its Gaussian policy instead of acting with the tanh mean; a diagnostic arm, in no claim
    Arm("ScenePilot (sampled)", "scenepilot", {**PPO_KWARGS, "deterministic": False}),
    Arm("ScenePilot (r = Phi)", "scenepilot-released", PPO_KWARGS),
    Arm("PPO-risk", "driving-ppo-risk", PPO_KWARGS),
    Arm("LC", "driving-lc"),
    Arm("scripted", "driving-scripted", exact=True),
    Arm("random", "random", exact=True),
)


def _claims() -> tuple[Any, ...]:
    out: list[Any] = []
    for s in SCENARIOS:
        for prior in PRIORS:
            out.append(
                Compare(
                    f"valid-vs-{prior.lower()}-s{s}",
                    f"ScenePilot's valid-collision rate exceeds {prior}'s (scenario {s}; the "
                    "paper: +6.2 pp over the prior generators)",
                    a="ScenePilot",
                    b=prior,
                    block=block_name(s),
                    metric="valid_collision_rate",
                )
            )
        out.append(
            Compare(
                f"shield-s{s}",
                f"The shield raises the valid-collision rate over the risk-only PPO (scenario {s})",
                a="ScenePilot",
                b="PPO-risk",
                block=block_name(s),
                metric="valid_collision_rate",
            )
        )
    out.append(
        Untestable(
            "defense",
            "Fine-tuning the planner on ScenePilot's scenarios lowers its crash rate",
            "a trial cannot read another trial's adversary: the defense is its own task "
            "(driving/defense-v2-human, which trains its adversary in the trial) and is not laddered "
            "here",
        )
    )
    return tuple(out)


def _pooled(data: StudyData, block: str, arm: str, key: str, rung: float | None = None) -> Any:
    """Wilson interval of ``key`` (``collisions`` or ``valid_collisions``) pooled over the seeds'
    episodes, or None without trials."""
    from icml26 import benchmarks
    from icml26.stats import wilson_ci

    trials = data.trials(block, arm, rung=rung)
    if not trials:
        return None
    n_ep = benchmarks.get_task(data.study.block(block).task).eval_episodes
    k = sum(int(r.extra.get(key, 0)) for r in trials.values())
    return wilson_ci(k, n_ep * len(trials))


def _iv(iv: Any) -> str:
    from icml26.benchmarks.report import fmt_iv

    return "-" if iv is None else fmt_iv(iv.estimate, iv.low, iv.high, spec=".3f")


def pooled_difference(data: StudyData, a: str, b: str, metric: str) -> dict[str, Any] | None:
    """Per-seed mean of ``metric`` over the scenarios (seeds with every scenario at the top
    rung), ``a`` minus ``b``: the paired test of :func:`icml26.stats.paired_test` in pp."""
    from icml26.stats import paired_test

    per = []
    for s in SCENARIOS:
        va, vb = data.values(block_name(s), a, metric), data.values(block_name(s), b, metric)
        per.append((va, vb))
    seeds = sorted(set.intersection(*(set(va) & set(vb) for va, vb in per)))
    if len(seeds) < 2:
        return None
    xa = np.array([np.mean([va[i] for va, _ in per]) for i in seeds])
    xb = np.array([np.mean([vb[i] for _, vb in per]) for i in seeds])
    r = paired_test(xa, xb)
    return {
        "a": float(xa.mean()),
        "b": float(xb.mean()),
        "diff_pp": 100 * r.diff,
        "low_pp": 100 * r.low,
        "high_pp": 100 * r.high,
        "p": r.p_value,
        "n": len(seeds),
    }


def sections(data: StudyData, ev: Evaluation) -> list[str]:
    from icml26.benchmarks.report import fmt_iv, fmt_num
    from icml26.protocol import format_scale

    out = [
        "## Valid and raw collision rates (top rung, pooled over seeds; Wilson 95%)",
        "",
        "Valid: the episode ends in a collision whose minimum sigma from the reset up to 1 s "
        "before contact was >= 0.35 (the release's final k: the collision happened inside the "
        "feasibility boundary band). Raw: every collision.",
        "",
        "| scenario | arm | valid-collision rate [Wilson 95%] | collision rate [Wilson 95%] | "
        "valid share of collisions | seeds |",
        "|---|---|---|---|---|---|",
    ]
    for s in SCENARIOS:
        b = block_name(s)
        for arm in data.arms(b):
            n = len(data.trials(b, arm))
            if not n:
                out.append(f"| {s} | {arm} | - | - | - | 0 |")
                continue
            v, c = _pooled(data, b, arm, "valid_collisions"), _pooled(data, b, arm, "collisions")
            hits = sum(int(r.extra.get("collisions", 0)) for r in data.trials(b, arm).values())
            val = sum(int(r.extra.get("valid_collisions", 0)) for r in data.trials(b, arm).values())
            share = f"{val}/{hits}" if hits else "-"
            out.append(f"| {s} | {arm} | {_iv(v)} | {_iv(c)} | {share} | {n} |")
    out += [
        "",
        "## The paper's +6.2 pp: ScenePilot minus each prior generator, scenarios 5-7 pooled",
        "",
        "Per seed: the mean over the three scenarios of the trial's rate at the top rung; paired "
        "over the seeds present in every scenario (BCa 95% interval, sign-flip p; not in the "
        "claims' Holm family). The paper reports +6.2 pp in valid-collision rate over the best "
        "prior generator.",
        "",
        "| metric | prior | ScenePilot | prior's | diff (pp) [95% CI] | p | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    for metric in ("valid_collision_rate", "collision_rate"):
        for prior in PRIORS:
            d = pooled_difference(data, "ScenePilot", prior, metric)
            if d is None:
                out.append(f"| {metric} | {prior} | - | - | - | - | 0 |")
                continue
            out.append(
                f"| {metric} | {prior} | {d['a']:.3f} | {d['b']:.3f} | "
                f"{fmt_iv(d['diff_pp'], d['low_pp'], d['high_pp'], spec='+.1f')} | "
                f"{fmt_num(d['p'], 3)} | {d['n']} |"
            )
    out += [
        "",
        "## Ladder of the valid-collision rate (pooled over seeds; Wilson 95%)",
        "",
        "| scenario | arm | "
        + " | ".join(
            f"x{format_scale(r)} ({r * 16_384 / RELEASE_STEPS:.0%})" for r in data.study.ladder
        )
        + " |",
        "|---|---|" + "---|" * len(data.study.ladder),
    ]
    for s in SCENARIOS:
        b = block_name(s)
        if not data.study.block(b).ladder:
            continue
        for arm in data.arms(b):
            if data.arm(arm, b).exact:
                continue
            cells = []
            for r in data.study.ladder:
                iv = _pooled(data, b, arm, "valid_collisions", rung=r)
                n = len(data.trials(b, arm, rung=r))
                cells.append("-" if iv is None else f"{_iv(iv)} (n={n})")
            out.append(f"| {s} | {arm} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def _bullet(ev: Evaluation) -> str:
    n = ev.values()
    return (
        "**driving** (ScenePilot-v2 study, scenarios 5-7, budget ladder to the release's 1.64M "
        f"steps): {n['n_reproduced']} of {n['n_claims']} claims reproduced, "
        f"{n['n_not_reproduced']} not, {n['n_undecided']} undecided at this budget, "
        f"{n['n_untestable']} untestable here (valid-collision rate at k = 0.35 vs the scripted "
        "actor and LC, and the shield vs the risk-only PPO). [results](docs/results/driving_study.md)"
    )


DRIVING = Study(
    name="driving",
    title="Driving (ScenePilot-v2): valid-collision rates on a budget ladder to the release's budget",
    family="driving",
    page="docs/results/driving_study.md",
    blocks=BLOCKS,
    arms=ARMS,
    seeds=TOP_SEEDS,
    ladder=LADDER,
    ladder_seeds={r: LADDER_SEEDS for r in LADDER[:-1]},
    claims=_claims(),
    intro=(
        "Env `icml26/ScenePilot-v2` (the `human` ego planner, 2-D [acc, steer] adversary action, "
        "randomized scenes, traffic lights), one task per scenario (`driving/attack-v2-human-s5`, "
        "`-s6`, `-s7`: 16,384 env steps of learning, 50 evaluation episodes). The adversaries "
        "learn online (Phi trained in the run, as in the release) on the native vector env and "
        "act with their tanh mean at evaluation. The ladder multiplies the learning budget by "
        "1, 4, 16, 64 and 100: x100 is the release's 1,638,400 (1.64M) PPO steps (100 updates "
        "of 2048 steps for each of the 8 values of k); the PPO arms (`lr` 1e-3, 4 epochs of 512; the "
        "release: 1e-4, 1 epoch) walk the k curriculum once over their budget, with the policy "
        "std capped at 1 and the log-probability of the drawn (not the clamped) action: the "
        "release's settings fail the positive control of `experiments/driving_notes.md` (its std "
        "grows without bound and the collision rate falls where every collision pays), these pass "
        "it. Seeds 0-2 on "
        "the lower rungs of scenarios 5 and 6, seeds 0-9 at the top rung of 5-7 (scenario 7 "
        "has no ladder). `ScenePilot (r = Phi)` is the release's own reward (r = Phi, the "
        "shield the only feasibility term); `ScenePilot` trains on v2's reward (risk shaping "
        "plus a bonus for a boundary-band collision). `ScenePilot (sampled)` is ScenePilot's "
        "training (same seed, the identical policy) evaluated by sampling its Gaussian policy "
        "instead of acting with the tanh mean (SafeBench's evaluation): a diagnostic arm in no "
        "claim. The paper's headline is a *valid*-"
        "collision rate: collisions with minimum sigma >= 0.35 up to 1 s before contact."
    ),
    bullet=_bullet,
    paper="ScenePilot",
    methods=("scenepilot",),
    sections=sections,
    plots=("ladder",),
)

STUDIES = [DRIVING]
