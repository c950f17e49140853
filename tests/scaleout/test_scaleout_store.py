"""The results store on SQLite and on PostgreSQL (set ICML26_TEST_POSTGRES_URL; .ci/run does).

Every test runs on both back ends with the same assertions; the PostgreSQL runs each get a
fresh database on the server, dropped afterwards.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import sqlalchemy as sa
from scaleout_helpers import PG_ENV, fresh_postgres_database

from icml26 import benchmarks
from icml26.benchmarks.executors import LocalExecutor
from icml26.benchmarks.runner import TrialSpec
from icml26.benchmarks.store import ResultsStore
from icml26.protocol import TrialResult

BACKENDS = [
    "sqlite",
    pytest.param(
        "postgresql",
        marks=pytest.mark.skipif(
            not os.environ.get(PG_ENV),
            reason=f"{PG_ENV} is not set (.ci/run starts a server and sets it)",
        ),
    ),
]


@pytest.fixture(params=BACKENDS)
def new_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """A factory of URLs of new, empty stores on the back end under test."""
    made: list[str] = []
    with ExitStack() as stack:

        def make() -> str:
            if request.param == "sqlite":
                made.append(f"sqlite:///{tmp_path / f'store{len(made)}.db'}")
            else:
                made.append(stack.enter_context(fresh_postgres_database(os.environ[PG_ENV])))
            return made[-1]

        yield make


@pytest.fixture
def store_url(new_store_url: Callable[[], str]) -> str:
    return new_store_url()


def _result(
    agent: str = "random",
    seed: int = 0,
    status: str = "FINISHED",
    task: str = "tutorial/point-reach",
    **kw: object,
) -> TrialResult:
    base: dict = dict(
        task_id=task,
        task_version=0,
        agent_name=agent,
        agent_version="1",
        seed=seed,
        status=status,
        packages={"python": "3.11"},
        started_at="2026-01-01T00:00:00+00:00",
    )
    if status == "FINISHED":
        base.update(metrics={"return": -20.5, "success_rate": 1.0}, scores=[-20.0, -21.0])
    else:
        base.update(traceback="Traceback (most recent call last):\nRuntimeError: boom")
    base.update(kw)
    return TrialResult(**base)


def test_round_trip_is_exact(store_url: str) -> None:
    r = _result(
        agent="агент-π ✓",
        seed=2**40 + 3,
        agent_kwargs={"lr": 3e-4, "layers": [64, 64], "x": None},
        scores=[-1.5, float("nan"), float("inf"), -1e-300],
        extra={"curve": [0.1, 0.2], "note": "é\u2028"},
        metrics={"return": -1.25, "success_rate": 0.0},
    )
    failed = _result(agent="crash", status="FAILED", traceback="x" * 200_000 + "\nboom \x01 end")
    with ResultsStore(store_url) as st:
        st.put(r)
        st.put(failed)
        back = st.get(r.key)
        assert back is not None
        assert back.to_dict() == r.to_dict()
        assert back.seed == 2**40 + 3 and math.isnan(back.scores[1]) and back.scores[2] == math.inf
        assert st.get(failed.key).traceback == failed.traceback  # type: ignore[union-attr]
        assert st.get("no such key") is None


def test_replace_filters_order_count_delete(store_url: str) -> None:
    with ResultsStore(store_url) as st:
        st.put(_result(agent="b", seed=1, status="FAILED"))
        st.put(_result(agent="b", seed=1))  # a re-run replaces the failed trial
        for seed in (10, 2, 1):
            st.put(_result(agent="a", seed=seed))
        st.put(_result(agent="a", seed=3, task="tutorial/other"))
        st.put(_result(agent="c", seed=0, status="FAILED"))
        assert st.count() == 6 and st.count("FINISHED") == 5 and st.count("FAILED") == 1
        rows = st.results(task_id="tutorial/point-reach")
        # ordered by task, agent, then seed numerically (10 after 2)
        assert [(r.agent_name, r.seed) for r in rows] == [
            ("a", 1),
            ("a", 2),
            ("a", 10),
            ("b", 1),
            ("c", 0),
        ]
        # "tutorial/other" sorts before "tutorial/point-reach"
        assert [r.seed for r in st.results(agent_name="a")] == [3, 1, 2, 10]
        assert [r.agent_name for r in st.results(status="FAILED")] == ["c"]
        keys = st.finished_keys()
        assert (
            _result(agent="b", seed=1).key in keys
            and _result(agent="c", status="FAILED").key not in keys
        )
        assert st.delete([_result(agent="a", seed=s).key for s in (1, 2)]) == 2
        assert st.delete([]) == 0 and st.count() == 4


def test_concurrent_writers_same_keys(store_url: str) -> None:
    """Eight writers (each its own store, as separate drivers would be) racing on the same 20
    keys: no error, exactly one row per key, each row one of the versions written."""
    ResultsStore(store_url).close()  # the schema exists before the race
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        try:
            with ResultsStore(store_url) as st:
                barrier.wait()
                for seed in range(20):
                    st.put(_result(seed=seed, agent_version=f"writer{i}"))
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[0]
    with ResultsStore(store_url) as st:
        assert st.count() == 20
        assert {r.agent_version for r in st.results()} <= {f"writer{i}" for i in range(8)}
        assert sorted(r.seed for r in st.results()) == list(range(20))


def test_concurrent_schema_creation(new_store_url: Callable[[], str]) -> None:
    """Eight openers of a brand-new store at once (a leaderboard server's workers, two drivers)
    all succeed; five rounds, as the race does not show every time."""
    for _ in range(5):
        url = new_store_url()
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)

        def opener(
            url: str = url,
            barrier: threading.Barrier = barrier,
            errors: list[BaseException] = errors,
        ) -> None:
            try:
                barrier.wait()
                with ResultsStore(url) as st:
                    assert st.count() == 0
            except BaseException as e:  # noqa: BLE001 - collected and asserted below
                errors.append(e)

        threads = [threading.Thread(target=opener) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors[0]
        engine = sa.create_engine(url)
        assert "icml26_trials" in sa.inspect(engine).get_table_names()
        engine.dispose()


def test_runner_resumes_on_store(store_url: str) -> None:
    """The runner writes each trial and a second run only runs what is not FINISHED."""
    crash = "icml26.testing.faulty_agents:CrashingAgent"
    specs = [
        TrialSpec("tutorial/point-reach", 0, a, {}, s) for a in ("point-pd", crash) for s in (0, 1)
    ]
    first = benchmarks.run(specs, store=store_url, progress=False)
    assert [r.status for r in first] == ["FINISHED", "FINISHED", "FAILED", "FAILED"]
    ran: list[str] = []

    class Counting(LocalExecutor):
        def run(self, todo):  # type: ignore[no-untyped-def]
            ran.extend(s.agent for s in todo)
            yield from super().run(todo)

    second = benchmarks.run(specs, store=store_url, executor=Counting(), progress=False)
    assert ran == [crash, crash]
    assert [r.to_dict() for r in second[:2]] == [r.to_dict() for r in first[:2]]


def test_budget_scale_column_migrates_and_filters(store_url: str) -> None:
    """A schema-2 store (no budget_scale column) is migrated on open; rows keep scale 1."""
    with ResultsStore(store_url) as st:
        st.put(_result(seed=0))
    engine = sa.create_engine(store_url)
    with engine.begin() as conn:  # back to schema 2: the column did not exist
        conn.execute(sa.text("ALTER TABLE icml26_trials DROP COLUMN budget_scale"))
        conn.execute(sa.text("UPDATE icml26_schema_version SET version = 2"))
    engine.dispose()
    with ResultsStore(store_url) as st:
        assert st.schema_version == 3
        (old,) = st.results()
        assert old.budget_scale == 1.0 and old.key == _result(seed=0).key
        st.put(_result(seed=0, budget_scale=0.5))
        st.put(_result(seed=1, budget_scale=4))
        assert [r.budget_scale for r in st.results()] == [0.5, 1.0, 4.0]  # then by seed
        assert [r.seed for r in st.results(budget_scale=4)] == [1]
        assert _result(seed=0, budget_scale=0.5).key in st.finished_keys()
