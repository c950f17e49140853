"""The looplm study's declaration: the trials it plans, that the committed CPU trials of the
task's default budget are reused by key, and that its page renders from an archive."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from icml26 import benchmarks
from icml26.benchmarks import report
from icml26.benchmarks.studies import get_study
from icml26.benchmarks.studies.looplm import DEPTH, DEPTH_SEEDS, FLAT, LADDER_SEEDS, TASK
from icml26.benchmarks.study import StudyData, evaluate, read_archive

ROOT = Path(__file__).resolve().parents[2]
CPU_ARCHIVE = ROOT / "docs" / "results" / "raw" / "looplm_cpu.jsonl.gz"
RL = ("GRPO", "RLTT uniform", "RLTT progressive", "RLTT exit_pdf", "RLTT learned", "REINFORCE")


def test_the_study_plans_every_arm_on_its_seeds_and_rungs() -> None:
    study = get_study("looplm")
    plan = study.plan()
    main = Counter((p.arm, p.rung) for p in plan if p.block == TASK)
    low = len(LADDER_SEEDS)
    assert main == {
        ("warm start", 1.0): 10,
        **{(a, 1.0): 10 for a in RL},
        **{(a, 0.5): low for a in RL},
    }
    depth = Counter((p.arm, p.rung) for p in plan if p.block == DEPTH)
    n = len(DEPTH_SEEDS)
    assert depth == {
        ("warm start", 1.0): n,
        ("GRPO", 0.5): len(set(LADDER_SEEDS)),
        ("GRPO", 1.0): n,
        ("4-layer warm start", 1.0): n,
        ("4-layer GRPO", 0.5): len(set(LADDER_SEEDS)),
        ("4-layer GRPO", 1.0): n,
    }
    # the depth block's looped arms are the main block's trials (same keys), not new ones
    keys = {p.spec.key for p in plan}
    assert len(keys) == 10 + 6 * (10 + low) + 2 * n + low
    # the ladder scales the task's RL steps (budget_scale), never the warm start: the warm
    # starts run at scale 1 only, and the task scales nothing but rl_steps
    for p in plan:
        assert p.spec.budget_scale == p.rung
        assert p.spec.task_id == TASK and p.spec.task_version == 1
        if p.spec.agent == "looplm-sft":
            assert p.rung == 1.0
        assert p.spec.agent_kwargs == (FLAT if p.arm.startswith("4-layer") else {})
    budget = benchmarks.get_task(TASK).budget
    assert budget.learning_extra == ("rl_steps",)
    half = budget.scaled(0.5).extra
    assert half["rl_steps"] == 120 and half["warm_start_steps"] == budget.extra["warm_start_steps"]


def test_the_committed_cpu_trials_are_the_studys_own() -> None:
    """The 63 trials of the reference bundles' archive are planned trials of the study (same
    keys), so `icml26 study run looplm` reuses them and runs only the rest."""
    study = get_study("looplm")
    rows = read_archive(CPU_ARCHIVE)
    assert len(rows) == 63
    place = {p.spec.key: p for p in study.plan() if p.block == TASK}
    assert {r.key for r in rows} <= set(place)
    by_arm = Counter(place[r.key].arm for r in rows)
    assert by_arm == {"warm start": 3, **dict.fromkeys(RL, 10)}
    assert all(place[r.key].rung == 1.0 for r in rows)


def test_the_page_renders_from_an_archive(tmp_path: Path) -> None:
    study = get_study("looplm")
    rows = read_archive(CPU_ARCHIVE)
    ev = evaluate(StudyData(study, rows))
    by = {c.claim.id: c for c in ev.claims}
    rltt = by["rltt-uniform-beats-grpo"]
    assert rltt.n == 10 and rltt.verdict == "undecided at this budget"  # no x0.5 rung here
    assert by["looped-beats-4-layer"].n == 0
    text = report.render(study, rows, source="the archive")
    assert "## The claims at the problem level" in text
    assert "| RLTT uniform vs GRPO | 10 | 2560 |" in text  # 10 seeds x 256 problems
    summary = report.read_summary(text)
    assert summary is not None and summary["family"] == "looplm"
    assert "[results](docs/results/looplm.md)" in summary["bullet"]


@pytest.mark.skipif(
    not (ROOT / "docs/results/raw/looplm.jsonl.gz").exists(), reason="no study archive yet"
)
def test_the_study_archive_holds_the_cpu_trials_unchanged() -> None:
    from icml26.benchmarks.study import compare_results

    study = read_archive(ROOT / "docs/results/raw/looplm.jsonl.gz")
    both, only_cpu, _, differ = compare_results(read_archive(CPU_ARCHIVE), study)
    assert both == 63 and not only_cpu and not differ
