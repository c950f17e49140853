"""Studies: declaration -> trials -> store -> verdicts -> one page (with a plug-in agent)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from icml26 import benchmarks, cli
from icml26.benchmarks import report
from icml26.benchmarks.executors import LocalExecutor
from icml26.benchmarks.store import ResultsStore
from icml26.benchmarks.studies import (
    Arm,
    Block,
    Compare,
    Rate,
    Study,
    StudyData,
    Sweep,
    Untestable,
    evaluate,
    get_study,
    read_archive,
    register_study,
    study_names,
    task_variant,
    write_archive,
)
from icml26.benchmarks.study import compare_results
from icml26.protocol import Budget
from icml26.testing import tiny_point_reach_task

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

TASK = dataclasses.replace(
    tiny_point_reach_task("testing/study-reach", seeds=(0, 1)), budget=Budget(env_steps=4000)
)
benchmarks.register_task(TASK)


CLIMBER = "icml26.testing:BudgetGainLearner"  # still improving: gain = env_steps / 8000

STUDY = register_study(
    Study(
        name="testing-study",
        title="A test study",
        family="tutorial",
        page="docs/results/testing-study.md",
        blocks=(Block(TASK.id),),
        arms=(
            Arm("random", "random", exact=True),
            Arm("pd", "point-pd", exact=True),
            Arm("climber", CLIMBER, {"full_steps": 8000}),
        ),
        seeds=tuple(range(7)),  # 7 pairs: smallest sign-flip p 2/128, 0.03 after Holm over 2
        min_seeds=7,
        ladder=(0.5, 1.0),
        claims=(
            Compare("pd-random", "PD beats random", "pd", "random", TASK.id, "return"),
            # the climber is still improving: whatever its data say, no verdict may be given
            Compare(
                "random-climber", "random beats the climber", "random", "climber", TASK.id, "return"
            ),
            Untestable("heavy", "transfers to a heavier mass", "one mass only"),
        ),
        bullet="**testing**: PD {verdict_pd_random} ({estimate_pd_random:+.2f}). {link}",
    )
)
# the CLI test's study: two seeds, the same arms
SMALL = register_study(dataclasses.replace(STUDY, name="testing-small", seeds=(0, 1)))


def _run(specs: list[Any], db: Path) -> list[Any]:
    """Run in this process (no child per trial): the tests here are about studies, not isolation."""
    return benchmarks.run(specs, store=db, progress=False, executor=LocalExecutor(isolation="none"))


@pytest.fixture
def mypkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """examples/mypkg copied outside the repository and made importable, as a user's would be."""
    where = tmp_path / "user"
    shutil.copytree(EXAMPLES / "mypkg", where / "mypkg")
    monkeypatch.syspath_prepend(str(where))
    monkeypatch.chdir(where)
    return where


def test_task_variants_get_their_own_hash_and_id() -> None:
    v = task_variant(TASK, {"budget.env_steps": 123, "eval_episodes": 3}, "small")
    assert v.id == f"{TASK.id}[small]" and v.version == TASK.version
    assert v.budget.env_steps == 123 and v.eval_episodes == 3
    assert v.definition_hash != TASK.definition_hash
    assert v.extra["variant_of"]["task"] == TASK.key
    w = task_variant(TASK, {"budget.env_steps": 124}, "small")
    assert w.definition_hash != v.definition_hash
    assert [m.name for m in task_variant(TASK, {"metrics": ["return"]}, "r").metrics] == ["return"]
    with pytest.raises(KeyError, match="Task has no field 'budgett'"):
        task_variant(TASK, {"budgett": 1}, "x")
    with pytest.raises(KeyError, match="Budget has no field"):
        task_variant(TASK, {"budget.steps": 1}, "x")
    with pytest.raises(ValueError, match="label"):
        task_variant(TASK, {}, "a[b]")


def test_plan_sweeps_ladders_and_exact_arms() -> None:
    s = Study(
        name="p",
        title="p",
        family="tutorial",
        page="p.md",
        blocks=(Block(TASK.id, sweep=Sweep("steps", "budget.env_steps", (1000, 2000))),),
        arms=(
            Arm("random", "random", exact=True),
            Arm("c", CLIMBER, kwargs={"x": 1}, scaled_kwargs=("x",)),
            Arm("d", CLIMBER),
        ),
        seeds=(0, 1, 2),
        ladder=(0.25, 1.0),
        ladder_seeds={0.25: (0, 1)},
        ladder_at="last",
    )
    plan = s.plan()
    # per point: random 3 (top only) + c, d: 3 at the top, plus 2 at x0.25 on the last point only
    assert len(plan) == 2 * (3 + 3 + 3) + 2 + 2
    ids = {p.spec.task_id for p in plan}
    assert ids == {f"{TASK.id}[steps=1000]", f"{TASK.id}[steps=2000]"}
    low = [p for p in plan if p.rung == 0.25]
    assert {p.point for p in low} == {2000} and {p.spec.seed for p in low} == {0, 1}
    c_low = [p.spec for p in low if p.arm == "c"]
    assert all(sp.agent_kwargs == {"x": 0} or sp.agent_kwargs == {"x": 1} for sp in c_low)
    assert {sp.budget_scale for sp in c_low} == {1.0}  # scaled kwargs, not the task budget
    assert {p.spec.budget_scale for p in low if p.arm == "d"} == {0.25}
    assert benchmarks.get_task(f"{TASK.id}[steps=1000]").budget.env_steps == 1000


def test_a_study_with_a_plug_in_agent_runs_renders_and_archives(
    mypkg: Path, tmp_path: Path
) -> None:
    assert "testing-study" in study_names() and "tutorial" in study_names()
    mine = Arm("mine", "mypkg.agents:MyController", {"gain": 2.0})
    db = tmp_path / "study.db"
    results = _run(STUDY.trials([mine]), db)
    assert len(results) == 7 + 7 + 14 + 14 and all(r.status == "FINISHED" for r in results)
    data = StudyData(STUDY, results, [mine])
    assert data.missing == 0 and sorted(data.values(TASK.id, "mine", "return")) == list(range(7))
    ev = evaluate(data)
    by = {c.claim.id: c for c in ev.claims}
    assert by["pd-random"].verdict == "reproduced" and by["pd-random"].estimate > 0
    assert by["heavy"].verdict == "untestable here"
    mine_pl = [p for p in ev.plateaus if p.arm == "mine"][0]
    assert mine_pl.at_plateau  # a fixed rule: the same score at both rungs

    page = tmp_path / "page.md"
    report.write_page(STUDY, results, page=page, extra_arms=[mine], source="a test")
    text = page.read_text()
    summary = report.read_summary(text)
    assert summary is not None and summary["family"] == "tutorial"
    assert summary["bullet"].startswith("**testing**: PD reproduced (+")
    assert summary["bullet"].endswith("[results](docs/results/testing-study.md)")
    assert (
        "| mine |" in text and "## Claims" in text and "**untestable here**: one mass only" in text
    )
    assert "## Budget ladders" in text and "still improving" in text
    for stem in (
        "testing-study_testing_study-reach_ladder",
        "testing-study_testing_study-reach_curves",
    ):
        assert (tmp_path / "figures" / f"{stem}.png").exists()
        assert (tmp_path / "figures" / f"{stem}.svg").exists()
        assert f"figures/{stem}.png" in text

    # the committed archive alone renders the same page
    archive = tmp_path / "raw.jsonl.gz"
    assert write_archive(results, archive) == len(results)
    first = archive.read_bytes()
    write_archive(reversed(results), archive)
    assert archive.read_bytes() == first  # byte-reproducible
    again = tmp_path / "again.md"
    report.write_page(STUDY, read_archive(archive), page=again, extra_arms=[mine], source="a test")
    assert again.read_text() == text


def test_a_claim_over_an_arm_not_at_plateau_cannot_read_not_reproduced(tmp_path: Path) -> None:
    results = _run(STUDY.trials(), tmp_path / "s.db")
    ev = evaluate(StudyData(STUDY, results))
    (claim,) = [c for c in ev.claims if c.claim.id == "random-climber"]
    # on its own data the claim would be "not reproduced" (the climber beats random) ...
    assert claim.estimate < 0 and claim.p_holm > 0.05
    # ... but the climber is still improving (gain 0.25 -> 0.5): the verdict must wait
    assert claim.verdict == "undecided at this budget"
    assert "climber: still improving" in claim.why
    text = report.render(STUDY, results)
    row = [line for line in text.splitlines() if line.startswith("| random beats the climber")]
    assert len(row) == 1 and "not reproduced" not in row[0] and "undecided at this budget" in row[0]
    # with too few paired seeds even arms at plateau get no verdict
    few = dataclasses.replace(STUDY, min_seeds=10)
    ev_few = evaluate(StudyData(few, results))
    assert {c.claim.id: c.verdict for c in ev_few.claims}["pd-random"] == "undecided at this budget"


def test_rate_claims_fit_a_slope_over_a_sweep(tmp_path: Path) -> None:
    s = Study(
        name="rate",
        title="rate",
        family="tutorial",
        page="r.md",
        blocks=(Block(TASK.id, sweep=Sweep("eps", "eval_episodes", (1, 2))),),
        arms=(Arm("pd", "point-pd", exact=True),),
        seeds=(0, 1, 2, 3),
        min_seeds=4,
        claims=(
            Rate("len", "episode length falls like 1/eps", "pd", TASK.id, "episode_length", -1.0),
        ),
    )
    results = _run(s.trials(), tmp_path / "s.db")
    ev = evaluate(StudyData(s, results))
    (c,) = ev.claims
    assert c.n == 4 and np.isfinite(c.estimate)
    # a PD controller's episode length does not fall like 1/eps: not reproduced, at plateau
    assert c.verdict == "not reproduced" and c.plateaus[0].at_plateau


def test_cli_study_run_report_export_with_a_user_agent(
    mypkg: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    db = str(tmp_path / "cli.db")
    argv = ["study", "run", "testing-small", "--store", db]
    assert cli.main([*argv, "--agent", "mypkg.agents:MyController", "--label", "mine"]) == 0
    assert "next: icml26 study report testing-small --agent" in capsys.readouterr().out
    page = tmp_path / "mine.md"
    assert (
        cli.main(
            ["study", "report", "testing-small", "--store", db, "--page", str(page)]
            + ["--agent", "mypkg.agents:MyController", "--label", "mine"]
        )
        == 0
    )
    assert "| mine |" in page.read_text()
    out = tmp_path / "raw.jsonl.gz"
    assert cli.main(["study", "export", "testing-small", "--store", db, "--out", str(out)]) == 0
    assert len(read_archive(out)) == 8  # the study's own trials, not the user's arm
    page2 = tmp_path / "from-archive.md"
    assert (
        cli.main(["study", "report", "testing-small", "--archive", str(out), "--page", str(page2)])
        == 0
    )
    assert "the archive" in page2.read_text()
    assert cli.main(["study", "list"]) == 0
    assert "testing-small" in capsys.readouterr().out
    figs = tmp_path / "plots"
    assert cli.main(["plot", "--store", db, "--out", str(figs), "--task", TASK.id]) == 0
    assert sorted(p.name for p in figs.iterdir()) == [
        "testing_study-reach_v0_curves.png",
        "testing_study-reach_v0_curves.svg",
        "testing_study-reach_v0_ladder.png",
        "testing_study-reach_v0_ladder.svg",
        "testing_study-reach_v0_profile.png",
        "testing_study-reach_v0_profile.svg",
    ]
    assert cli.main(["study", "report", "no-such-study"]) == 2
    with ResultsStore(db) as st:
        assert st.count("FINISHED") == 8 + 4  # plus the user's arm at two rungs


def test_cli_study_run_a_subset_then_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    db = str(tmp_path / "subset.db")
    argv = ["study", "run", "testing-small", "--store", db]
    assert cli.main([*argv, "--seeds", "1", "--task", "testing/*"]) == 0
    assert "4 of 8 trials" in capsys.readouterr().err
    with ResultsStore(db) as st:
        first = {r.key: r.started_at for r in st.results()}
    assert {k.rsplit("seed=", 1)[1].split("|")[0] for k in first} == {"1"}
    assert len(first) == 4  # random, pd, the climber at two rungs
    assert cli.main([*argv, "--task", "no-such/*"]) == 2
    assert cli.main(argv) == 0  # the rest; seed 1's trials are skipped, not re-run
    with ResultsStore(db) as st:
        after = {r.key: r.started_at for r in st.results()}
    assert len(after) == 8 and all(after[k] == t for k, t in first.items())


def test_cli_study_run_by_arm_and_rung(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = str(tmp_path / "rungs.db")
    argv = ["study", "run", "testing-small", "--store", db]
    assert cli.main([*argv, "--arms", "climber", "--scales", "0.5"]) == 0
    assert "2 of 8 trials" in capsys.readouterr().err
    with ResultsStore(db) as st:
        got = {(r.agent_name, r.budget_scale, r.seed) for r in st.results()}
    assert got == {
        ("icml26.testing:BudgetGainLearner", 0.5, 0),
        ("icml26.testing:BudgetGainLearner", 0.5, 1),
    }
    assert cli.main([*argv, "--arms", "random,pd"]) == 0  # exact arms: the top rung only
    assert "4 of 8 trials" in capsys.readouterr().err
    assert cli.main([*argv, "--arms", "nope"]) == 2
    assert "unknown arm(s) ['nope']" in capsys.readouterr().err
    assert cli.main([*argv, "--scales", "0.25"]) == 2  # no such rung: nothing matches
    assert cli.main([*argv, "--scales", "-1"]) == 2


def test_study_compare_executors_and_what_counts_as_a_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    local, proc = str(tmp_path / "local.db"), str(tmp_path / "process.db")
    assert cli.main(["study", "run", "testing-small", "--store", local]) == 0
    argv = ["study", "run", "testing-small", "--store", proc, "--executor", "process"]
    assert cli.main([*argv, "--workers", "2"]) == 0
    capsys.readouterr()
    assert cli.main(["study", "compare", "testing-small", local, proc]) == 0
    assert "8 in both, 0 of them differ" in capsys.readouterr().out
    out = tmp_path / "raw.jsonl.gz"
    assert cli.main(["study", "export", "testing-small", "--store", proc, "--out", str(out)]) == 0
    assert cli.main(["study", "compare", "testing-small", local, str(out)]) == 0

    rows = read_archive(out)
    # where and when it ran, and timing entries, do not count
    moved = [
        dataclasses.replace(
            r,
            wall_time_s=r.wall_time_s + 1,
            git_commit="0" * 40,
            started_at="2000-01-01",
            extra={**r.extra, "learn_cpu_s": 99.0},
        )
        for r in rows
    ]
    n, only_a, only_b, differ = compare_results(rows, moved)
    assert (n, only_a, only_b, differ) == (8, [], [], [])
    # an outcome does: one metric, one extra entry, a missing trial
    name = next(iter(rows[0].metrics))
    changed = [dataclasses.replace(rows[0], metrics={**rows[0].metrics, name: 1e9})]
    changed.append(dataclasses.replace(rows[1], extra={**rows[1].extra, "note": "x"}))
    n, only_a, only_b, differ = compare_results(rows, changed + rows[2:-1])
    assert n == 7 and only_a == [rows[-1].key] and only_b == []
    assert differ == sorted([(rows[0].key, ["metrics"]), (rows[1].key, ["extra"])])
    # NaN equals NaN
    nan = [dataclasses.replace(rows[0], metrics={name: float("nan")})]
    assert compare_results(nan, list(nan))[3] == []
    other = str(tmp_path / "other.db")
    with ResultsStore(other) as st:
        for r in changed + rows[2:]:
            st.put(r)
    assert cli.main(["study", "compare", "testing-small", str(out), other]) == 1
    assert "differs: " in capsys.readouterr().out
    assert cli.main(["study", "compare", "testing-small", str(out), str(tmp_path / "no.db")]) == 2


def test_the_summary_block_is_json_in_an_html_comment() -> None:
    ev = evaluate(StudyData(STUDY, []))
    block = report.summary_block(STUDY, ev)
    assert block.startswith("<!-- icml26-summary\n") and block.endswith("\n-->")
    parsed = json.loads(block.split("\n", 1)[1].rsplit("\n", 1)[0])
    assert set(parsed) == {"family", "bullet"}
    with_paper = dataclasses.replace(STUDY, paper="A Paper", methods=("point-pd",))
    parsed = report.read_summary(report.summary_block(with_paper, ev))
    assert parsed == {
        "family": "tutorial",
        "paper": "A Paper",
        "methods": ["point-pd"],
        "bullet": parsed["bullet"],
    }


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["tutorial", "markov_games", "spatial_causal", "looplm"])
def test_a_committed_study_page_holds_every_number_of_its_bullet(name: str) -> None:
    """The README generator quotes the bullet; each of its numbers must stand on the page."""
    import re

    text = (ROOT / get_study(name).page).read_text()
    summary = report.read_summary(text)
    assert summary is not None and summary["family"] == get_study(name).family
    body = text[text.index("-->") + 3 :]
    number = re.compile(r"\d+(?:[.,]\d+)*")
    bullet = re.sub(r"\]\([^)]*\)", "]", re.sub(r"`[^`]*`", " ", summary["bullet"]))
    missing = set(number.findall(bullet)) - set(number.findall(body))
    assert not missing, f"{name}: the bullet quotes {sorted(missing)}, not on the page"


def test_the_tutorial_study_is_declared() -> None:
    t = get_study("tutorial")
    plan = t.plan()
    assert len(plan) == 10 + 10 + 3 * 10
    assert {p.spec.budget_scale for p in plan if p.arm == "PPO"} == {0.25, 0.5, 1.0}


def test_reference_bundles_from_a_study_store_use_scale_1_trials_only(tmp_path: Path) -> None:
    from icml26.leaderboards import reference

    db = tmp_path / "small.db"
    _run(SMALL.trials(), db)
    paths = reference.build(db, tmp_path / "ref", prov={"commit": "abc"})
    bundles = [json.loads(p.read_text()) for p in paths]
    assert sorted(b["agent"]["name"] for b in bundles) == sorted(["point-pd", "random", CLIMBER])
    for b in bundles:
        assert {r["seed"] for r in b["results"]} == {0, 1}
        assert all("budget_scale" not in r for r in b["results"])  # the task's own budget
    assert reference.main(["build", "--study", "testing-small", "--allow-dirty"]) == 1


def test_one_trial_serving_two_arms_fills_both(tmp_path: Path) -> None:
    s = Study(
        name="twins",
        title="t",
        family="tutorial",
        page="t.md",
        blocks=(Block(TASK.id),),
        arms=(Arm("a", "point-pd", exact=True), Arm("b", "point-pd", exact=True)),
        seeds=(0, 1),
    )
    assert len(s.trials()) == 4 and len({t.key for t in s.trials()}) == 2
    data = StudyData(s, _run(s.trials(), tmp_path / "s.db"))
    assert data.missing == 0 and data.values(TASK.id, "a", "return") == data.values(
        TASK.id, "b", "return"
    )
    assert len(data.values(TASK.id, "b", "return")) == 2
