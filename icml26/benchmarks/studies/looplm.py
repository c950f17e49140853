"""The looplm study: GRPO, RLTT's four loop weightings and REINFORCE on a looped transformer, on
a task where loop depth matters (docs/results/looplm.md).

    icml26 study run looplm --executor process --workers 2
    icml26 study report looplm

Every arm starts from the same shipped warm start (the task's calibrated checkpoint) and differs
only in its RL step; the warm start itself (``looplm-sft``) does no RL, so it has no learning
budget (exact: its trial is the same at every budget scale). The budget ladder scales the RL
steps (``Budget.learning_extra = ("rl_steps",)``: 120 and 240 steps; 120 on ``LADDER_SEEDS``). A second block puts the
looped model next to a non-looped 4-layer model of the same parameter count and training
(``FLAT``), its own warm start and GRPO, on fewer seeds (``DEPTH_SEEDS``: its trials are the
costliest). The trials of the task's default budget (scale 1) are those of the committed archive
``docs/results/raw/looplm_cpu.jsonl.gz`` (the RL arms' reference bundles), reused by key.

A trial stores what the page's own tables read (``TrialResult.extra``): greedy accuracy of the
model truncated at each loop (``eval.per_loop_accuracy``), the per-problem outcomes
(``TrialResult.scores``, the same problems for every arm of a seed, so (seed, problem) pairs
are paired), the weights kept at 1/8, 1/4 and 1/2 of the RL steps (``eval.ladder``) and the
per-step training curves (``learn.curves``: reward, clip fraction, KL to the warm start).

The CUDA comparison at twice the budget (480 RL steps, 5 seeds) stays a script
(experiments/looplm.py, docs/results/looplm_cuda.md): it also reads the RL sweep, the depth probe
and the warm-start calibration, which are not trials.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from icml26.benchmarks.report import fmt_iv, fmt_num
from icml26.benchmarks.study import Arm, Block, Compare, Evaluation, Study, StudyData

__all__ = ["FLAT", "LOOPLM", "STUDIES"]

TASK = "looplm/permutation-hops-8x3"
# the non-looped baseline: 4 distinct blocks, one pass, width chosen for the looped model's
# parameter count (63,819 vs 62,337; d 32 with 4 heads would have 56,993); its warm start is
# shipped like the looped model's (same steps, seed and problem stream)
FLAT: dict[str, Any] = {"n_layers": 4, "n_loops": 1, "d_model": 34, "n_heads": 2}
DEPTH = "looped-vs-4-layer"
DEPTH_SEEDS = (0, 1, 2)
# the ladder's lower rung (120 RL steps) runs on these seeds only: the shared 2-core machine gave
# the study about an hour of CPU, and a 120-step trial took 160 s of wall time on it
LADDER_SEEDS = (0, 1, 2)

WARM = Arm("warm start", "looplm-sft", exact=True)
GRPO = Arm("GRPO", "looplm-grpo")
RLTT = {
    w: Arm(f"RLTT {w}", f"looplm-rltt-{w.replace('_', '-')}")
    for w in ("uniform", "progressive", "exit_pdf", "learned")
}
REINFORCE = Arm("REINFORCE", "looplm-reinforce")
FLAT_WARM = Arm("4-layer warm start", "looplm-sft", FLAT, exact=True)
FLAT_GRPO = Arm("4-layer GRPO", "looplm-grpo", FLAT)
RL_ARMS = ("GRPO", *(a.label for a in RLTT.values()), "REINFORCE", "4-layer GRPO")

CLAIMS = (
    Compare(
        "grpo-trains",
        "The RL step trains the model: GRPO beats its warm start",
        a="GRPO",
        b="warm start",
        block=TASK,
        metric="accuracy",
    ),
    *(
        Compare(
            f"rltt-{w.replace('_', '-')}-beats-grpo",
            f"RLTT ({w} loop weights) beats GRPO (the paper's claim)",
            a=arm.label,
            b="GRPO",
            block=TASK,
            metric="accuracy",
        )
        for w, arm in RLTT.items()
    ),
    Compare(
        "grpo-beats-reinforce",
        "GRPO's group-normalised advantage beats plain REINFORCE",
        a="GRPO",
        b="REINFORCE",
        block=TASK,
        metric="accuracy",
    ),
    Compare(
        "looped-beats-4-layer",
        "Looping pays: after GRPO the looped model beats a 4-layer model of the same size",
        a="GRPO",
        b="4-layer GRPO",
        block=DEPTH,
        metric="accuracy",
    ),
)


# ----------------------------------------------------------------------------- the page's tables
def _ordered(trials: dict[int, Any], seeds: Sequence[int]) -> list[Any]:
    return [trials[s] for s in seeds]


def _curve(rs: Sequence[Any], key: str) -> np.ndarray | None:
    """(seeds, steps) of a training curve, None for arms without RL."""
    if not rs or "curves" not in rs[0].extra.get("learn", {}):
        return None
    return np.array([r.extra["learn"]["curves"][key] for r in rs], dtype=float)


def arm_table(data: StudyData, block: str) -> list[str]:
    """Per arm at the top rung: final-loop accuracy, accuracy per exit loop (the warm start's row
    is the model before RL), pass@8 and the training diagnostics (reward, clip fraction, KL)."""
    from icml26.stats import mean_ci

    lines = [
        "| arm | seeds | final-loop acc [95% CI] | loop 1 | loop 2 | loop 3 | loop 4 | pass@8 | "
        "training reward (first / last tenth) | clip frac | zero-spread groups | KL (last tenth) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm in data.arms(block):
        trials = data.trials(block, arm)
        if not trials:
            lines.append(f"| {arm} | 0 |" + " - |" * 10)
            continue
        rs = _ordered(trials, sorted(trials))
        acc = mean_ci([r.metrics["accuracy"] for r in rs], seed=0)
        pl = np.array([r.extra["eval"]["per_loop_accuracy"] for r in rs]).mean(0)
        # the 4-layer model has one exit: its answer stands in the loop-4 column
        loops = ["-"] * (4 - pl.size) + [f"{x:.3f}" for x in pl]
        rew = _curve(rs, "reward")
        if rew is None:
            tail = "- | - | - | -"
        else:
            k = max(1, rew.shape[1] // 10)
            clip, zero, kl = (_curve(rs, n) for n in ("clip_frac", "zero_spread_frac", "kl"))
            assert clip is not None and zero is not None and kl is not None
            tail = (
                f"{rew[:, :k].mean():.3f} / {rew[:, -k:].mean():.3f} | {clip.mean():.4f} | "
                f"{zero.mean():.2f} | {kl[:, -k:].mean():.4f}"
            )
        lines.append(
            f"| {arm} | {len(rs)} | {fmt_iv(acc.estimate, acc.low, acc.high, spec='.3f')} | "
            + " | ".join(loops)
            + f" | {np.mean([r.metrics['pass_at_8'] for r in rs]):.3f} | {tail} |"
        )
    return lines + [""]


def problem_pairs(data: StudyData, ev: Evaluation) -> list[str]:
    """Each claim again at the problem level: exact McNemar over the (seed, problem) pairs of
    its two arms at the top rung, Holm over the claims (a second family, next to the claims
    table's seed-level one)."""
    from icml26.stats import holm, mcnemar_exact

    rows = []
    for c in ev.claims:
        cl = c.claim
        if not isinstance(cl, Compare):
            continue
        ta, tb = data.trials(cl.block, cl.a), data.trials(cl.block, cl.b)
        seeds = sorted(set(ta) & set(tb))
        if not seeds:
            continue
        sa = np.array([np.array(ta[s].scores) == 1.0 for s in seeds])
        sb = np.array([np.array(tb[s].scores) == 1.0 for s in seeds])
        if sa.shape != sb.shape:
            raise ValueError(
                f"claim {cl.id}: {cl.a} and {cl.b} scored different numbers of problems "
                f"({sa.shape} vs {sb.shape}); the pairs need the same problems per seed"
            )
        b, cc = int(np.sum(sa & ~sb)), int(np.sum(~sa & sb))
        p = mcnemar_exact(sa.ravel(), sb.ravel()) if b > cc else 1.0  # one-sided as the claim
        rows.append((cl, len(seeds), sa.size, b, cc, p))
    if not rows:
        return []
    adj = holm([r[-1] for r in rows])
    lines = [
        "| claim | seeds | (seed, problem) pairs | b: first arm right, second wrong | c: the "
        "reverse | McNemar p (Holm) |",
        "|---|---|---|---|---|---|",
    ]
    for (cl, n, pairs, b, cc, p), q in zip(rows, adj):
        lines.append(
            f"| {cl.a} vs {cl.b} | {n} | {pairs} | {b} | {cc} | {fmt_num(p, 2)} "
            f"({fmt_num(float(q), 2)}) |"
        )
    return lines + [""]


def snapshot_table(data: StudyData, block: str) -> list[str]:
    """Held-out accuracy of the weights every top-rung trial keeps on its way (after 1/8, 1/4
    and 1/2 of the RL steps) and at its end, and whether the x0.5 trials reproduce the
    half-way weights of the x1 trials (with a constant lr they are the same run)."""
    from icml26.stats import plateau_test

    study = data.study
    lines: list[str] = []
    rows = []
    steps_all: set[int] = set()
    for arm in data.arms(block):
        if data.arm(arm, block).exact:
            continue
        top = data.trials(block, arm)
        if not top:
            continue
        seeds = sorted(top)
        per: dict[int, list[float]] = {}
        halfway: dict[int, float] = {}
        for s in seeds:
            r = top[s]
            steps = int(r.extra["learn"]["rl_steps"])
            for snap in r.extra["eval"].get("ladder", []):
                per.setdefault(int(snap["rl_steps"]), []).append(float(snap["accuracy"]))
                if 2 * int(snap["rl_steps"]) == steps:
                    halfway[s] = float(snap["accuracy"])
            per.setdefault(steps, []).append(r.metrics["accuracy"])
        # the plateau test of the study's last step, on the kept weights of every seed
        pl = plateau_test(
            {0.5: halfway, 1.0: {s: top[s].metrics["accuracy"] for s in seeds}},
            tolerance=study.plateau_tolerance,
            relative=study.plateau_relative,
        )
        steps_all |= set(per)
        half = data.trials(block, arm, rung=study.ladder[0])
        equal = [
            s
            for s in sorted(set(half) & set(top))
            for snap in top[s].extra["eval"].get("ladder", [])
            if int(snap["rl_steps"]) == int(half[s].extra["learn"]["rl_steps"])
            and snap["scores"] == half[s].scores
        ]
        both = len(set(half) & set(top))
        rows.append((arm, len(seeds), per, pl.reading, f"{len(equal)} of {both}" if both else "-"))
    if not rows:
        return []
    cols = sorted(steps_all)
    lines += [
        "| arm | seeds | "
        + " | ".join(f"{k} steps" for k in cols)
        + " | half-way to the end, every seed (plateau test) | x0.5 trial = the x1 trial's "
        "half-way weights (per-problem outcomes) |",
        "|---|---|" + "---|" * (len(cols) + 2),
    ]
    for arm, n, per, reading, check in rows:
        cells = [f"{np.mean(per[k]):.3f}" if len(per.get(k, [])) == n else "-" for k in cols]
        lines.append(f"| {arm} | {n} | " + " | ".join(cells) + f" | {reading} | {check} |")
    return lines + [""]


def sections(data: StudyData, ev: Evaluation) -> list[str]:
    top = data.study.top
    out = [
        "## Per arm (top rung)",
        "",
        f"Greedy held-out accuracy of the model truncated at each exit loop, mean over seeds (the "
        f"final loop with a BCa 95% interval); the warm start's row is the model before RL. "
        f"Training reward at temperature 1 over the first and last tenth of the RL steps; clip "
        f"fraction and the share of groups without reward spread averaged over training; KL (k3, "
        f"final loop, to the warm start) over the last tenth. x{top:g} of the task's budget.",
        "",
    ]
    for b in data.study.blocks:
        out += [f"### {b.name}", "", *arm_table(data, b.name)]
    out += [
        "## The claims at the problem level",
        "",
        "The claims' arms score the same held-out problems on each seed, so their per-problem "
        "outcomes pair over (seed, problem). Exact McNemar on the discordant pairs, one-sided as "
        "the claim (p = 1 when b <= c), Holm over the claims. Descriptive next to the claims "
        "table: the verdicts use the seed-level test, whose unit (a seed's RL run) is the one "
        "that is replicated.",
        "",
        *problem_pairs(data, ev),
        "## The weights kept along each trial",
        "",
        "Every trial scores its weights after 1/8, 1/4 and 1/2 of its RL steps "
        '(`extra["eval"]["ladder"]`): a finer ladder than the study\'s two rungs, on the '
        "top rung's seeds. The plateau test of the study's last step (x0.5 to x1, "
        "`icml26.stats.plateau_test`, same tolerance) is read here on the half-way weights of "
        "every seed: descriptive, since the verdicts read the x0.5 trials, which run on fewer "
        "seeds. The last column checks that the x0.5 trials (a run of half the steps) give the "
        "same per-problem outcomes as the half-way weights of the x1 trials on the same seed.",
        "",
        *snapshot_table(data, TASK),
    ]
    return out


# ----------------------------------------------------------------------------- the README bullet
def _bullet(ev: Evaluation) -> str:
    by = {c.claim.id: c for c in ev.claims}

    def iv(cid: str) -> str:
        c = by[cid]
        return fmt_iv(c.estimate, c.low, c.high, 3, signed=True)

    rltt = [by[f"rltt-{w.replace('_', '-')}-beats-grpo"] for w in RLTT]
    verdicts = sorted({c.verdict for c in rltt})
    g = by["grpo-trains"]
    d = by["looped-beats-4-layer"]
    return (
        "**looplm** (RLTT vs GRPO on a looped transformer, one block looped 4 times, on "
        f"`{TASK}` v1, a task where depth matters; 240 RL steps, CPU, {g.n} seeds): GRPO "
        f"beats its warm start by {iv('grpo-trains')} accuracy ({g.verdict}); RLTT minus GRPO, "
        + ", ".join(f"{w} {iv(c.claim.id)}" for w, c in zip(RLTT, rltt))
        + f" ({', '.join(verdicts)}); GRPO minus REINFORCE {iv('grpo-beats-reinforce')} "
        f"({by['grpo-beats-reinforce'].verdict}); looped minus a 4-layer model of the same size "
        f"after GRPO {iv('looped-beats-4-layer')} ({d.n} seeds, {d.verdict}). CUDA run at 480 "
        "steps: [supplement](docs/results/looplm_cuda.md). [results](docs/results/looplm.md)"
    )


INTRO = f"""`{TASK}` v1 asks for p^3(x): three look-ups in a permutation p of 8 letters (the orbit
x, p(x), p^2(x), p^3(x) distinct, so no short cut such as "answer x" works). The model is an
Ouro-style looped transformer: ONE block (d = 64, 4 heads, 62,337 parameters) applied T = 4
times with the embedded prompt injected before every loop, and an exit gate. Depth matters here:
truncated after loop 1 the warm start is near chance, and a 1-loop model with the same
parameters stays at chance, so the loops do the look-ups one after another. That is what RLTT
acts on: GRPO credits only the final loop's tokens, RLTT spreads the policy gradient over every
loop's prediction with weights omega_t (uniform, progressive t/10, the model's exit distribution,
learned), which the paper reports beating GRPO under identical conditions.

Every arm starts from the same calibrated warm start (2,000 supervised steps, shipped), then runs
the task's RL budget: 240 steps of 64 prompts x 8 completions, one update per batch, lr 1e-3, KL
beta 1e-3 (chosen on a validation split, issue 35); the ladder's lower rung is 120 steps. Seeds
differ in RL sampling and in the 256 held-out test problems. The lower rung runs on seeds
{", ".join(map(str, LADDER_SEEDS))} only (the plateau test pairs them with the same seeds at 240 steps), for want of
CPU time: its trials took 160 s each on the shared 2-core machine. The x1 trials of the six RL arms and
the warm start's seeds 0-2 are the committed archive `docs/results/raw/looplm_cpu.jsonl.gz`
(run for the task's reference bundles; same keys, reused), the rest was run by `icml26 study run
looplm`. The non-looped 4-layer model (4 distinct blocks, one pass, d = 34, 2 heads, 63,819
parameters, trained like the looped one) runs on seeds {", ".join(map(str, DEPTH_SEEDS))} only
(block `{DEPTH}`): its trials were the costliest left.

The GPU comparison at twice the budget (480 RL steps, 5 seeds, with the RL sweep, the depth
probe and the warm-start calibration) is the supplement
[looplm_cuda.md](looplm_cuda.md) (`experiments/looplm.py report`, from its raw archive)."""


LOOPLM = Study(
    name="looplm",
    title="looplm: GRPO vs RLTT on a looped transformer where loop depth matters",
    family="looplm",
    page="docs/results/looplm.md",
    blocks=(
        Block(TASK, arms=(WARM, GRPO, *RLTT.values(), REINFORCE)),
        Block(TASK, label=DEPTH, arms=(WARM, GRPO, FLAT_WARM, FLAT_GRPO), seeds=DEPTH_SEEDS),
    ),
    seeds=tuple(range(10)),
    ladder=(0.5, 1.0),
    ladder_seeds={0.5: LADDER_SEEDS},
    claims=CLAIMS,
    intro=INTRO,
    bullet=_bullet,
    paper="RLTT",
    methods=tuple(f"looplm-rltt-{w}" for w in ("exit-pdf", "uniform", "progressive", "learned")),
    sections=sections,
    plots=("ladder", "profile"),
)

STUDIES = [LOOPLM]
