"""The tutorial study (the worked example of docs/studies.md): PPO, a PD controller and random
actions on ``tutorial/point-reach``, with PPO on a budget ladder.

    icml26 study run tutorial --executor process --workers 2
    icml26 study report tutorial                 # docs/results/tutorial.md
    icml26 study run tutorial --agent mypkg.agents:MyController     # your agent as one more arm
"""

from __future__ import annotations

from icml26.benchmarks.study import Arm, Block, Compare, Evaluation, Study, Untestable


def _bullet(ev: Evaluation) -> str:
    by = {c.claim.id: c for c in ev.claims}
    pd, ppo = by["pd-beats-random"], by["ppo-matches-pd"]
    return (
        "**tutorial** (point-reach, 10 seeds): the PD controller beats random actions by "
        f"{pd.estimate:.3g} return ({pd.verdict}); PPO at 20k env steps against the PD "
        f"controller: {ppo.estimate:+.3g} [{ppo.low:+.3g}, {ppo.high:+.3g}] ({ppo.verdict}). "
        "[results](docs/results/tutorial.md)"
    )


TUTORIAL = Study(
    name="tutorial",
    title="Tutorial: reaching a goal with a point mass (PPO, a PD controller, random actions)",
    family="tutorial",
    page="docs/results/tutorial.md",
    blocks=(Block("tutorial/point-reach"),),
    arms=(
        Arm("random", "random", exact=True),
        Arm("point-pd", "point-pd", exact=True),
        # SB3's PPO with its defaults; the ladder gives it 5k, 10k and 20k env steps
        Arm("PPO", "sb3-ppo"),
    ),
    seeds=tuple(range(10)),
    ladder=(0.25, 0.5, 1.0),
    claims=(
        Compare(
            "pd-beats-random",
            "A PD controller beats random actions",
            a="point-pd",
            b="random",
            block="tutorial/point-reach",
            metric="return",
        ),
        Compare(
            "ppo-beats-random",
            "PPO learns to beat random actions within 20k steps",
            a="PPO",
            b="random",
            block="tutorial/point-reach",
            metric="return",
        ),
        Compare(
            "ppo-matches-pd",
            "PPO at 20k steps beats the PD controller",
            a="PPO",
            b="point-pd",
            block="tutorial/point-reach",
            metric="return",
        ),
        Untestable(
            "ppo-transfers",
            "PPO's policy transfers to a heavier point mass",
            "the task has one mass and no variant changes the dynamics",
        ),
    ),
    intro=(
        "The worked example of docs/studies.md. `random` and `point-pd` do not learn (exact: "
        "they run once, at the top rung, and count as at plateau); PPO (`sb3-ppo`, SB3's "
        "defaults) runs on a budget ladder of 5k, 10k and 20k env steps (x0.25, x0.5, x1 of "
        "the task's 20k), so its verdicts wait for its plateau."
    ),
    bullet=_bullet,
)

STUDIES = [TUTORIAL]
