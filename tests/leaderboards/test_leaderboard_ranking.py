"""Ranking statistics on hand-worked entries: IQM order, ties with the leader's interval,
probability of improvement between neighbours, normalization, performance profiles, figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from icml26.leaderboards.figures import profile_figure, task_figure
from icml26.leaderboards.ranking import cross_task, intervals_overlap, normalization, rank_task
from icml26.leaderboards.store import Entry
from icml26.protocol import Metric, Task, TrialResult

REPS = 300


def make_task(
    tid: str = "lbtest/a",
    family: str = "lbtest",
    direction: str = "max",
    lower: float = 0.0,
    upper: float = 10.0,
    **extra: object,
) -> Task:
    return Task(
        id=tid,
        version=0,
        family=family,
        env_id="icml26/None-v0",
        run_trial="x:y",
        metrics=(Metric("score", direction, lower, upper), Metric("aux", "max")),
        primary_metric="score",
        seeds=(0, 1, 2, 3, 4),
        extra=extra,
    )


def make_entry(
    eid: int,
    values: list[float],
    status: str = "VERIFIED",
    task: Task | None = None,
    agent: str = "agent",
    name: str | None = None,
) -> Entry:
    task = task or make_task()
    trials = [
        TrialResult(
            task.id, task.version, agent, "1", s, "FINISHED", metrics={"score": v, "aux": 2 * v}
        )
        for s, v in enumerate(values)
    ]
    return Entry(
        id=eid,
        submission_id=eid,
        task_id=task.id,
        task_version=task.version,
        status=status,
        reason="r",
        updated_at="t",
        name=name or f"entry {eid}",
        description="",
        authors="",
        url="",
        agent={"name": agent, "entry_point": f"pkg.{agent}:A", "kwargs": {}},
        packages={},
        git_commit=None,
        content_hash=f"sha256:{eid}",
        created_at="c",
        submitted_at=f"2026-01-0{eid % 9 + 1}",
        submitter="t",
        trials=trials,
    )


def test_leaderboard_rank_iqm_ties_and_poi() -> None:
    task = make_task()
    a = make_entry(1, [10, 11, 12, 13, 14])  # IQM 12
    b = make_entry(2, [9, 10, 11, 12, 13])  # IQM 11, interval overlaps a's
    c = make_entry(3, [0, 1, 2, 3, 4])  # IQM 2
    out = make_entry(4, [1, 2, 3, 4, 5.5])  # IQM 3 = mean(2, 3, 4): 5.5 is trimmed
    r = rank_task([c, a, out, b], task, reps=REPS)
    assert [x.entry.id for x in r.verified] == [1, 2, 4, 3]
    assert [x.rank for x in r.verified] == [1, 2, 3, 4]
    assert [x.iqm for x in r.verified] == pytest.approx([12, 11, 3, 2])
    assert [x.tied for x in r.verified] == [True, True, False, False]
    lead = r.verified[0]
    assert lead.low <= 12 <= lead.high and lead.low >= 10 and lead.high <= 14
    # P(a > b) by hand: pairs with x > y, ties count half: (1.5+2.5+3.5+4.5+5)/25 = 0.68
    assert r.verified[0].p_better_next[0] == pytest.approx(0.68)
    assert r.verified[1].p_better_next[0] == pytest.approx(1.0)  # 9..13 vs 1..5.5
    assert r.verified[2].p_better_next[0] == pytest.approx(0.68)  # 1,2,3,4,5.5 vs 0..4
    assert r.verified[-1].p_better_next is None
    assert r.verified[0].metrics == {"score": pytest.approx(12), "aux": pytest.approx(24)}


def test_leaderboard_rank_min_direction_and_statuses() -> None:
    task = make_task(direction="min")
    low = make_entry(1, [1, 1.1, 1.2, 1.3, 1.4])
    high = make_entry(2, [5, 5.1, 5.2, 5.3, 5.4])
    pending = make_entry(3, [0.1, 0.1, 0.1, 0.1, 0.1], status="PENDING")
    rejected = make_entry(4, [0.0] * 5, status="REJECTED")
    failed = make_entry(5, [0.0] * 5, status="FAILED")
    r = rank_task([high, pending, rejected, low, failed], task, reps=REPS)
    assert [x.entry.id for x in r.verified] == [1, 2]  # lower is better
    assert r.verified[0].p_better_next[0] == pytest.approx(1.0)  # 1 is better than 2 for sure
    assert not r.verified[1].tied
    assert [x.entry.id for x in r.unverified] == [3]  # shown apart, never ranked
    assert [e.id for e in r.closed] == [4, 5]
    assert r.leader is r.verified[0]


def test_leaderboard_equal_iqm_earlier_entry_first() -> None:
    r = rank_task([make_entry(7, [3] * 5), make_entry(2, [3] * 5)], make_task(), reps=REPS)
    assert [x.entry.id for x in r.verified] == [2, 7]
    assert all(x.tied for x in r.verified) and r.verified[0].p_better_next[0] == pytest.approx(0.5)


def test_leaderboard_intervals_overlap() -> None:
    assert intervals_overlap((0, 1), (1, 2)) and intervals_overlap((0, 3), (1, 2))
    assert not intervals_overlap((0, 1), (1.01, 2))


def test_leaderboard_normalization_sources() -> None:
    assert normalization(make_task(), [3.0]) == (0.0, 10.0, "metric range")
    assert normalization(make_task(direction="min", lower=1, upper=200), [5.0]) == (
        200,
        1,
        "metric range",
    )
    assert normalization(make_task(score_range=(2.0, 8.0)), [0.0]) == (2.0, 8.0, "task score_range")
    unbounded = make_task(lower=-np.inf, upper=np.inf)
    assert normalization(unbounded, [4.0, -1.0, 3.0]) == (-1.0, 4.0, "range of verified entries")
    # the tutorial task: return in [-1152, 0], so a return of -20 normalizes to 1 - 20/1152
    from icml26 import benchmarks

    w, b, _ = normalization(benchmarks.get_task("tutorial/point-reach"), [])
    assert (-20 - w) / (b - w) == pytest.approx(1 - 20 / 1152)


def test_leaderboard_cross_task_profiles_hand_worked(tmp_path: Path) -> None:
    t1, t2 = make_task("lbtest/a"), make_task("lbtest/b")
    t3 = make_task("other/c", family="other")
    entries = [
        (
            t1,
            [
                make_entry(1, [2, 4, 6, 8, 10], task=t1, agent="A"),
                make_entry(2, [1, 1, 1, 1, 1], task=t1, agent="B"),
            ],
        ),
        (
            t2,
            [
                make_entry(3, [10, 10, 10, 10, 10], task=t2, agent="A"),
                make_entry(4, [0, 0, 5, 5, 5], task=t2, agent="B"),
            ],
        ),
        (t3, [make_entry(5, [5, 5, 5, 5, 5], task=t3, agent="A")]),
    ]
    rankings = [rank_task(es, t, reps=REPS) for t, es in entries]
    views = {v.name: v for v in cross_task(rankings, reps=REPS)}
    assert set(views) == {"lbtest", "other", "all tasks"}
    v = views["lbtest"]
    assert v.task_keys == ["lbtest/a@v0", "lbtest/b@v0"]
    agents = {a.agent_key.split("#")[0]: a for a in v.agents}
    a, b = agents["pkg.A:A"], agents["pkg.B:A"]
    np.testing.assert_allclose(a.normalized, [[0.2, 1], [0.4, 1], [0.6, 1], [0.8, 1], [1, 1]])
    # IQM over the 10 normalized runs of A: trim 2 lowest and 2 highest -> mean(.6,.8,1,1,1,1)
    assert a.iqm == pytest.approx(np.mean([0.6, 0.8, 1, 1, 1, 1]))
    i = int(np.argmin(np.abs(v.taus - 0.5)))
    assert v.taus[i] == pytest.approx(0.5)
    assert v.profiles[a.label][i] == pytest.approx(8 / 10)  # .6 .8 1 and five 1.0 exceed 0.5
    assert v.profiles[b.label][i] == pytest.approx(0.0)  # .1 x5, 0, 0, .5, .5, .5 (not > .5)
    lo, hi = v.profile_cis[a.label][:, i]
    assert lo <= 0.8 <= hi
    assert [x.agent_key for x in v.agents][0] == a.agent_key  # best aggregate first
    # in "all tasks" only A covers every task; B is listed as incomplete
    allv = views["all tasks"]
    assert [x.agent_key.split("#")[0] for x in allv.agents] == ["pkg.A:A"]
    assert [n for _, n in allv.incomplete] == [2]

    paths = profile_figure(v, tmp_path / "profile-lbtest") + task_figure(
        rankings[0], tmp_path / "task-a.v0"
    )
    assert [p.name for p in paths] == [
        "profile-lbtest.png",
        "profile-lbtest.svg",
        "task-a.v0.png",
        "task-a.v0.svg",
    ]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" if p.suffix == ".png" else b"<svg" in data[:400]
    assert "entry 1" in (tmp_path / "task-a.v0.svg").read_text()
