"""``icml26 certify`` on stored trials, the family's run_trial, and certified claims on entries."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from icml26 import agents, benchmarks
from icml26.certify.harness import Claim, certified_claims, certify_stored, parse_claim
from icml26.cli import main
from icml26.protocol import TrialResult

TUTORIAL = "tutorial/point-reach"


def test_parse_claim() -> None:
    assert parse_claim(">= 0.9 on every scenario") == Claim(
        0.9, "every", ">= 0.9 on every scenario"
    )
    assert parse_claim("success >= .95 on average").scope == "average"
    assert parse_claim(">= 0.8").scope == "average"
    for bad in ("> 0.9 always", ">= 1.5 on every scenario", "0.9"):
        with pytest.raises(ValueError, match="claim"):
            parse_claim(bad)


def _trials(task_id: str, rates: list[float], agent: str = "point-pd") -> list[TrialResult]:
    task = benchmarks.get_task(task_id)
    return [
        TrialResult(
            task_id=task.id,
            task_version=task.version,
            agent_name=agent,
            agent_version="1",
            seed=i,
            status="FINISHED",
            metrics={"success_rate": r, "return": 0.0, "episode_length": 1.0},
            task_hash=task.definition_hash,
        )
        for i, r in enumerate(rates)
    ]


def test_certify_stored_by_hand() -> None:
    task = benchmarks.get_task(TUTORIAL)
    res = _trials(TUTORIAL, [1.0] * 10)  # 100 episodes, all successful
    cert = certify_stored([task], res, parse_claim(">= 0.9 on every scenario"))
    assert cert.unit == "episode" and "does not learn" in cert.unit_reason
    hoeff, cp = cert.methods.values()
    assert hoeff["min_bound"] == pytest.approx(1 - math.sqrt(math.log(20) / 200))  # 0.8776
    assert not hoeff["certified"]
    # Hoeffding reaches 0.9 at n >= log(20) / (2 * 0.1^2) = 149.8 episodes: 5 more trials of 10
    assert hoeff["more_trials"] == 5
    assert cp["min_bound"] == pytest.approx(0.05 ** (1 / 100)) and cp["certified"]
    assert cert.certified


def test_unregistered_agents_replicate_by_seed() -> None:
    task = benchmarks.get_task(TUTORIAL)
    res = _trials(TUTORIAL, [1.0, 0.9, 1.0, 1.0], agent="mypkg.mod:Agent")
    cert = certify_stored([task], res, parse_claim(">= 0.5"))
    assert cert.unit == "seed" and "not a registered agent" in cert.unit_reason
    (hoeff,) = cert.methods.values()  # no Clopper-Pearson on per-seed rates
    assert hoeff["min_bound"] == pytest.approx(0.975 - math.sqrt(math.log(20) / 8))


def test_rate_below_the_claim_is_never_certified() -> None:
    task = benchmarks.get_task(TUTORIAL)
    cert = certify_stored(
        [task], _trials(TUTORIAL, [0.8] * 10), parse_claim(">= 0.9 on every scenario")
    )
    assert not cert.certified
    assert all(m["more_trials"] is None for m in cert.methods.values())
    assert "no number of trials certifies it" in "\n".join(cert.lines())


def test_run_trial_scores_validity_of_each_protocol() -> None:
    from icml26.benchmarks.tasks.capability_eval import run_trial

    task = dataclasses.replace(benchmarks.get_task("capability_eval/bumps"), eval_episodes=30)

    good = run_trial(task, agents.make("certify-chi2"), 0)
    bad = run_trial(task, agents.make("certify-pooled"), 0)
    assert good.metrics["validity"] == 1.0 and good.metrics["false_certification"] == 0.0
    assert good.metrics["tests"] == pytest.approx(24_854)  # 2 (1 + R*) log(8 / 0.05) / 0.05^2
    assert bad.metrics["false_certification"] > 0.2 and bad.metrics["validity"] < 0.5
    assert good.metrics["utility"] > bad.metrics["utility"]
    assert len(good.extra["successes"]) == 30


def test_cli_certifies_a_tutorial_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "x.db")
    assert (
        main(["run", "--task", TUTORIAL, "--agent", "point-pd", "--seeds", "0-9", "--store", db])
        == 0
    )
    capsys.readouterr()
    claim = ">= 0.9 on every scenario"
    assert (
        main(
            ["certify", "--task", TUTORIAL, "--agent", "point-pd", "--claim", claim, "--store", db]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "unit of replication: episode" in out
    assert "smallest lower bound 0.9705 -> CERTIFIED" in out  # Clopper-Pearson, 100/100
    assert "smallest lower bound 0.8776 -> not certified" in out  # Hoeffding
    assert "about 5 more trials" in out
    # bad usage: exit code 2 with a message
    assert (
        main(["certify", "--task", TUTORIAL, "--agent", "nobody", "--claim", claim, "--store", db])
        == 2
    )
    assert (
        main(
            ["certify", "--task", TUTORIAL, "--agent", "point-pd", "--claim", "most", "--store", db]
        )
        == 2
    )


def test_cli_certifies_a_family_of_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The validity of circuit-span's certificates on the affine task, and on the general one."""
    db = str(tmp_path / "y.db")
    for t in ("capability_eval/circuits-affine", "capability_eval/circuits-adaptive"):
        assert (
            main(["run", "--task", t, "--agent", "circuit-span", "--seeds", "0-1", "--store", db])
            == 0
        )
    capsys.readouterr()
    args = [
        "certify",
        "--agent",
        "circuit-span",
        "--store",
        db,
        "--claim",
        ">= 0.9 on every scenario",
    ]
    assert main([*args, "--task", "capability_eval/circuits-affine"]) == 0
    assert "-> CERTIFIED" in capsys.readouterr().out  # 200 valid certificates of 200
    both = "capability_eval/circuits-affine,capability_eval/circuits-adaptive"
    assert main([*args, "--task", both]) == 0
    out = capsys.readouterr().out
    assert "(2 scenarios)" in out and "-> CERTIFIED" not in out
    assert "no number of trials certifies it" in out  # validity 0 on general circuits


def test_leaderboard_entry_shows_its_certified_claims(tmp_path: Path) -> None:
    from icml26.leaderboards.bundle import make_bundle
    from icml26.leaderboards.site import render_site
    from icml26.leaderboards.store import LeaderboardStore

    task = benchmarks.get_task(TUTORIAL)
    res = benchmarks.run(
        benchmarks.trials_for(task, "point-pd"), store=tmp_path / "r.db", progress=False
    )
    claims = certified_claims(task, res, entry_point="icml26.agents.tutorial.pd:PDController")
    assert any("success_rate >= 0.942" in c and "Clopper-Pearson, 50 episodes" in c for c in claims)
    # another entry point under the same name is not trusted to be non-learning: seeds
    other = certified_claims(task, res, entry_point="mypkg:PD")
    assert other and all("5 seeds" in c for c in other)
    store = LeaderboardStore(str(tmp_path / "lb.db"))
    store.submit(json.dumps(make_bundle(res)).encode())
    out = render_site(store, tmp_path / "site", reps=200, include_registered=False)
    page = (out / "entries" / "1.html").read_text()
    assert 'id="certified-claims"' in page and "success_rate &gt;= 0.942" in page


def test_success_rule_on_per_episode_scores() -> None:
    task = benchmarks.get_task(TUTORIAL)
    res = _trials(TUTORIAL, [0.0] * 4)
    for i, r in enumerate(res):
        r.scores = [-10.0] * 9 + [-50.0 if i == 0 else -20.0]  # one episode of 40 below -30
    cert = certify_stored([task], res, parse_claim(">= 0.9"), success="score >= -30")
    s = cert.scenarios[0]
    assert (s.tests, s.passes) == (40.0, 39.0)
    with pytest.raises(ValueError, match="score >= -30"):
        certify_stored([task], res, parse_claim(">= 0.9"), success="return above -30")


def test_certified_claims_of_a_verified_entry_come_from_its_rerun() -> None:
    """A VERIFIED entry's page certifies what the verifier re-ran, not the submitted claim:
    10 held-out trials (the unit: the re-run keeps no per-episode flags) that all succeed give
    Hoeffding's one-sided bound 1 - sqrt(log(1 / 0.05) / 20) = 0.613, whatever the submitted
    trials say."""
    task = benchmarks.get_task(TUTORIAL)
    claimed = _trials(TUTORIAL, [0.0] * 4)
    for r in claimed:
        r.metrics["success_rate"] = 0.0  # the claim: never succeeds
    rerun = [{"success_rate": 1.0, "return": -5.0} for _ in range(10)]
    claims = certified_claims(task, claimed, rerun=rerun)
    assert claims == [
        "success_rate >= 0.613 with probability >= 0.95 (Hoeffding, 10 held-out re-run trials)"
    ]
    assert certified_claims(task, claimed) == []  # the claim alone certifies nothing
