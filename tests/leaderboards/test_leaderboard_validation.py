"""Validation of submission bundles: hand-made cases naming each rule, and hypothesis over
malformed bundles (every one rejected with a clear message, the store unchanged)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from leaderboard_helpers import rehash, valid_bundle, variant

from icml26.leaderboards.bundle import canonical_json, content_hash
from icml26.leaderboards.store import LeaderboardStore
from icml26.leaderboards.validate import LIMITS, SubmissionInvalid, validate_bundle


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return valid_bundle("point-pd", name="PD controller", description="baseline")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, base: dict[str, Any]) -> LeaderboardStore:
    s = LeaderboardStore(tmp_path_factory.mktemp("lbv") / "lb.db")
    s.submit(variant(base, 999, "already stored"))  # the store is not empty
    return s


def rejected(store: LeaderboardStore, payload: Any) -> SubmissionInvalid:
    """Submit ``payload``; assert it is rejected, every error is explained, nothing changed."""
    before = store.dump()
    with pytest.raises(SubmissionInvalid) as ei:
        store.submit(payload)
    assert ei.value.errors, "a rejection must list at least one error"
    for e in ei.value.errors:
        assert e.field and len(e.message) >= 10, e
    assert store.dump() == before, "a rejected submission changed the store"
    return ei.value


def fields(err: SubmissionInvalid) -> list[str]:
    return [e.field for e in err.errors]


# ----------------------------------------------------------------------------- valid
def test_leaderboard_valid_bundle_round_trips(base: dict[str, Any]) -> None:
    vb = validate_bundle(json.dumps(base))
    assert vb.content_hash == base["content_hash"] == content_hash(base)
    assert list(vb.trials) == ["tutorial/point-reach@v0"]
    assert [t.seed for t in vb.trials["tutorial/point-reach@v0"]] == [0, 1, 2, 3, 4]
    # the hash is over the canonical form: key order and whitespace do not matter
    shuffled = json.dumps(dict(reversed(list(base.items()))), indent=3)
    assert validate_bundle(shuffled).content_hash == base["content_hash"]


def test_leaderboard_hash_is_sha256_of_canonical_json(base: dict[str, Any]) -> None:
    import hashlib

    body = {k: v for k, v in base.items() if k != "content_hash"}
    assert base["content_hash"] == "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()
    assert canonical_json({"b": 1, "a": [1.5, "é"]}) == '{"a":[1.5,"é"],"b":1}'.encode()


def test_leaderboard_description_keeps_html_and_sql_verbatim(
    store: LeaderboardStore, base: dict[str, Any]
) -> None:
    text = "<script>alert('x')</script>\nRobert'); DROP TABLE icml26_lb_entries;--"
    b = variant(base, 1, "Free text ok")
    b["description"] = text
    receipt = store.submit(rehash(b))
    e = store.entry(receipt.entry_ids[0])
    assert e.description == text and e.status == "PENDING"
    assert store.counts()["icml26_lb_entries"] >= 2  # the table is still there


# ----------------------------------------------------------------------------- hand cases
def _mut(base: dict[str, Any], fn: Any, rehash_after: bool = True) -> dict[str, Any]:
    b = copy.deepcopy(base)
    fn(b)
    return rehash(b) if rehash_after else b


CASES = [
    ("missing name", lambda b: b.pop("name"), "name", "required field is missing"),
    ("unknown top field", lambda b: b.update(extra_field=1), "extra_field", "unknown field"),
    ("schema", lambda b: b.update(schema="other"), "schema", "expected 'icml26.submission'"),
    ("schema version", lambda b: b.update(schema_version=3), "schema_version", "reads version 2"),
    ("bool version", lambda b: b.update(schema_version=True), "schema_version", "reads version 2"),
    (
        "old schema version",
        lambda b: b.update(schema_version=1),
        "schema_version",
        "a version-1 bundle names the agent's code by a directory",
    ),
    (
        "name with script",
        lambda b: b.update(name="<script>alert(1)</script>"),
        "name",
        "is not allowed",
    ),
    (
        "name with sql",
        lambda b: b.update(name="x'); DROP TABLE icml26_lb_entries;--"),
        "name",
        "is not allowed",
    ),
    ("long name", lambda b: b.update(name="a" * 81), "name", "more than the limit of 80"),
    ("empty name", lambda b: b.update(name="  "), "name", "must not be empty"),
    (
        "long description",
        lambda b: b.update(description="d" * 2001),
        "description",
        "more than the limit",
    ),
    ("javascript url", lambda b: b.update(url="javascript:alert(1)"), "url", "not an http(s) URL"),
    (
        "bad entry point",
        lambda b: b["agent"].update(entry_point="os;rm"),
        "agent.entry_point",
        "package.module:ClassName",
    ),
    (
        "entry point mismatch",
        lambda b: b["agent"].update(entry_point="icml26.agents.generic.random_agent:RandomAgent"),
        "agent.entry_point",
        "differs from the registered agent",
    ),
    (
        "stdlib entry point",
        lambda b: b["agent"].update(name="os:system", entry_point="os:system"),
        "agent.entry_point",
        "standard-library/interpreter module 'os'",
    ),
    (
        "interpreter entry point",
        lambda b: b["agent"].update(name="builtins:exec", entry_point="builtins:exec"),
        "agent.entry_point",
        "standard-library/interpreter module 'builtins'",
    ),
    (
        "foreign distribution",
        lambda b: b["agent"].update(
            name="scipy.optimize:minimize", entry_point="scipy.optimize:minimize"
        ),
        "agent.entry_point",
        "belongs to the installed distribution(s) ['scipy'], not to the declared requirement",
    ),
    (
        "task definition hash",
        lambda b: b["results"][0].update(task_hash="0123456789ab"),
        "results[0].task_hash",
        "ran a different definition of tutorial/point-reach@v0",
    ),
    (
        "budget scale",
        lambda b: b["results"][0].update(budget_scale=4.0),
        "results[0].budget_scale",
        "at the task's own budget (scale 1) only",
    ),
    (
        "a server path",
        lambda b: b["agent"].update(path="/tmp"),
        "agent.path",
        "cannot name a directory of the verifying machine",
    ),
    (
        "both sources",
        lambda b: b["agent"].update(code={"format": "zip", "sha256": "x", "data": ""}),
        "agent",
        "exactly one of",
    ),
    (
        "URL requirement",
        lambda b: b["agent"].update(requirement="icml26-gym @ file:///tmp/evil.whl"),
        "agent.requirement",
        "is a direct reference",
    ),
    (
        "unpinned requirement",
        lambda b: b["agent"].update(requirement="icml26-gym>=0.1"),
        "agent.requirement",
        "does not pin one exact version",
    ),
    (
        "full-width name",
        lambda b: b.update(name="ＰＤ controller"),
        "name",
        "not in Unicode normal form NFKC",
    ),
    (
        "look-alike letters",
        lambda b: b.update(name="PD \u0441ontroller"),
        "name",
        "mixes letters of several scripts (CYRILLIC, LATIN)",
    ),
    ("no source", lambda b: b["agent"].update(requirement=None), "agent", "got neither"),
    (
        "bad requirement",
        lambda b: b["agent"].update(requirement="not a requirement!!"),
        "agent.requirement",
        "PEP 508",
    ),
    (
        "unknown task",
        lambda b: b.update(tasks={"tutorial/point-reech": 0}),
        "tasks['tutorial/point-reech']",
        "Did you mean",
    ),
    (
        "wrong task version",
        lambda b: (
            b.update(tasks={"tutorial/point-reach": 7}),
            [r.update(task_version=7) for r in b["results"]],
        ),
        "tasks['tutorial/point-reach']",
        "has no version 7",
    ),
    (
        "string metric",
        lambda b: b["results"][1]["metrics"].update({"return": "-20"}),
        "results[1].metrics.return",
        "expected a number",
    ),
    (
        "nan metric",
        lambda b: b["results"][2]["metrics"].update({"return": "nan"}),
        "results[2].metrics.return",
        "not a finite number",
    ),
    (
        "out of range",
        lambda b: b["results"][0]["metrics"].update(success_rate=1.5),
        "results[0].metrics.success_rate",
        "outside the metric's documented range",
    ),
    (
        "missing metric",
        lambda b: b["results"][0]["metrics"].pop("episode_length"),
        "results[0].metrics.episode_length",
        "required metric",
    ),
    (
        "extra metric",
        lambda b: b["results"][0]["metrics"].update(bonus=1.0),
        "results[0].metrics.bonus",
        "not a metric of task",
    ),
    (
        "failed trial",
        lambda b: b["results"][0].update(status="FAILED"),
        "results[0].status",
        "only FINISHED",
    ),
    (
        "wrong seeds",
        lambda b: b["results"][4].update(seed=5),
        "results (task 'tutorial/point-reach')",
        "not the task's leaderboard seeds",
    ),
    (
        "duplicate seed",
        lambda b: b["results"][4].update(seed=3),
        "results (task 'tutorial/point-reach')",
        "appear more than once",
    ),
    (
        "missing seed",
        lambda b: b["results"].pop(),
        "results (task 'tutorial/point-reach')",
        "missing [4]",
    ),
    (
        "other agent in trial",
        lambda b: b["results"][3].update(agent_name="random"),
        "results[3].agent_name",
        "differs from agent.name",
    ),
    (
        "kwargs differ",
        lambda b: b["results"][3].update(agent_kwargs={"kp": 9}),
        "results[3].agent_kwargs",
        "one agent configuration",
    ),
    (
        "negative wall time",
        lambda b: b["results"][0].update(wall_time_s=-1.0),
        "results[0].wall_time_s",
        "negative",
    ),
    (
        "bool seed",
        lambda b: b["results"][0].update(seed=True),
        "results[0].seed",
        "expected an integer",
    ),
    ("results not list", lambda b: b.update(results={"a": 1}), "results", "expected an array"),
    ("no results", lambda b: b.update(results=[]), "results", "at least one"),
    ("bad commit", lambda b: b.update(git_commit="zzz; DROP"), "git_commit", "hex commit id"),
    ("bad timestamp", lambda b: b.update(created_at="yesterday"), "created_at", "ISO 8601"),
    (
        "NUL in kwargs key",
        lambda b: b["agent"].update(kwargs={"a\x00": 1}),
        "agent.kwargs.a\x00",
        "NUL",
    ),
    (
        "deep nesting",
        lambda b: b["results"][0].update(extra={"x": json.loads("[" * 40 + "]" * 40)}),
        "results[0].extra.x",
        "nested deeper",
    ),
    (
        "many scores",
        lambda b: b["results"][0].update(scores=[0.0] * (LIMITS["scores"] + 1)),
        "results[0].scores",
        "more than the limit",
    ),
]


@pytest.mark.parametrize("label,mutate,field,message", CASES, ids=[c[0] for c in CASES])
def test_leaderboard_rejects_with_named_field(
    store: LeaderboardStore, base: dict[str, Any], label: str, mutate: Any, field: str, message: str
) -> None:
    err = rejected(store, json.dumps(_mut(base, mutate)))
    hits = [e for e in err.errors if e.field == field or e.field.startswith(field + "[")]
    assert hits, f"{label}: expected an error on {field!r}, got {fields(err)}"
    assert any(message in e.message for e in hits), f"{label}: {[e.message for e in hits]}"
    assert err.kind == "invalid"
    assert "content_hash" not in fields(err)  # re-hashed: only the real problem is reported


def test_leaderboard_forged_hash(store: LeaderboardStore, base: dict[str, Any]) -> None:
    b = copy.deepcopy(base)
    b["results"][0]["metrics"]["return"] = -1.0  # better score, same (now wrong) hash
    err = rejected(store, json.dumps(b))
    assert fields(err) == ["content_hash"]
    assert "altered after it was written" in err.errors[0].message
    b["content_hash"] = "sha256:" + "0" * 64
    assert fields(rejected(store, json.dumps(b))) == ["content_hash"]
    b["content_hash"] = "md5:abc"
    assert "64 hex digits" in rejected(store, json.dumps(b)).errors[0].message


@pytest.mark.parametrize(
    "text,needle",
    [
        ('{"a": NaN}', "NaN is not allowed"),
        ('{"a": -Infinity}', "-Infinity is not allowed"),
        ('{"a": 1e999}', "overflows to infinity"),
        ("[1, 2", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"name": "\\ud800"}', "unpaired surrogate"),
    ],
)
def test_leaderboard_rejects_bad_json(
    store: LeaderboardStore, text: str | bytes, needle: str
) -> None:
    err = rejected(store, text)
    assert any(needle in e.message for e in err.errors), err.errors


def test_leaderboard_rejects_oversized(store: LeaderboardStore, base: dict[str, Any]) -> None:
    b = copy.deepcopy(base)
    b["description"] = "x" * (LIMITS["bundle_bytes"] + 10)
    err = rejected(store, json.dumps(b))
    assert err.kind == "too_large" and "byte limit" in err.errors[0].message


def test_leaderboard_rejects_duplicates(store: LeaderboardStore, base: dict[str, Any]) -> None:
    b = variant(base, 2, "dup original")
    store.submit(b)
    err = rejected(store, json.dumps(b))  # the same file again
    assert err.kind == "duplicate" and "already submitted" in err.errors[0].message
    renamed = rehash({**copy.deepcopy(b), "name": "dup renamed", "description": "new text"})
    err = rejected(store, json.dumps(renamed))  # same agent, config and numbers
    assert err.kind == "duplicate"
    assert any("duplicate of entry" in e.message for e in err.errors)


# ----------------------------------------------------------------------------- hypothesis
PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "'; DROP TABLE icml26_lb_entries;--",
    '" OR 1=1 --',
    "Robert'); DELETE FROM icml26_lb_submissions; --",
    "</td><td>",
    "${7*7}<b>",
]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            out += _paths(v, prefix + (i,))
    return out


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


# Leaves whose type may legitimately vary (free-form dicts and optional strings) are not
# "wrong type" targets; everything else has exactly one accepted JSON type.
_FREE = (
    "extra",
    "kwargs",
    "agent_kwargs",
    "packages",
    "code",
    "requirement",
    "git_commit",
    "traceback",
)


def _typed_paths(b: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        p
        for p in _paths(b)
        if not any(isinstance(x, str) and x in _FREE for x in p)
        and not (len(p) >= 2 and p[-2] == "scores")
    ]


def _other_type(value: Any) -> st.SearchStrategy[Any]:
    options: list[st.SearchStrategy[Any]] = []
    if not isinstance(value, str):
        options.append(st.text(max_size=20))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        options.append(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5))
    if not isinstance(value, list):
        options.append(st.lists(st.integers(), max_size=3))
    if not isinstance(value, dict):
        options.append(st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
    if value is not None:
        options.append(st.none())
    if not isinstance(value, bool):
        options.append(st.booleans())
    return st.one_of(*options)


@st.composite
def malformed(draw: st.DrawFn, base: dict[str, Any]) -> tuple[str, str | bytes, str | None]:
    """(kind, payload, a field that must be named or None)."""
    b = copy.deepcopy(base)
    kind = draw(
        st.sampled_from(
            ["missing", "wrong_type", "nonfinite", "huge", "injection", "forged", "seeds", "range"]
        )
    )
    expect: str | None = None
    path: tuple[Any, ...] = ()
    if kind == "missing":
        paths = [
            p
            for p in _paths(b)
            if isinstance(p[-1], str)
            and p[-1] not in ("description", "authors", "url")
            and not any(
                x in ("extra", "kwargs", "agent_kwargs", "packages", "metrics") for x in p[:-1]
            )
            and p[-1]
            not in (
                "wall_time_s",
                "packages",
                "git_commit",
                "traceback",
                "started_at",
                "extra",
                "task_hash",
            )  # the trial's optional fields
            or (len(p) == 4 and p[2] == "metrics")
        ]
        path = draw(st.sampled_from(paths))
        del _get(b, path[:-1])[path[-1]]
    elif kind == "wrong_type":
        path = draw(st.sampled_from(_typed_paths(b)))
        old = _get(b, path)
        new = draw(_other_type(old))
        assume(not (isinstance(old, float) and isinstance(new, int) and not isinstance(new, bool)))
        _get(b, path[:-1])[path[-1]] = new
    elif kind == "nonfinite":
        i = draw(st.integers(0, 4))
        metric = draw(st.sampled_from(["return", "success_rate", "episode_length"]))
        how = draw(st.sampled_from(["string", "literal", "overflow"]))
        if how == "string":
            b["results"][i]["metrics"][metric] = draw(st.sampled_from(["nan", "inf", "-inf"]))
            expect = f"results[{i}].metrics.{metric}"
        else:
            b["results"][i]["metrics"][metric] = 12345.678
            text = json.dumps(rehash(b))
            lit = (
                draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))
                if how == "literal"
                else "1e999"
            )
            return kind, text.replace("12345.678", lit), None
    elif kind == "huge":
        where = draw(
            st.sampled_from(
                [
                    ("name",),
                    ("description",),
                    ("authors",),
                    ("agent", "name"),
                    ("agent", "version"),
                    ("url",),
                ]
            )
        )
        limit = {
            ("name",): LIMITS["name"],
            ("description",): LIMITS["description"],
            ("authors",): LIMITS["authors"],
            ("url",): LIMITS["url"],
            ("agent", "name"): LIMITS["agent_name"],
            ("agent", "version"): LIMITS["version"],
        }[where]
        n = draw(st.integers(limit + 1, limit * 5))
        _get(b, where[:-1])[where[-1]] = ("https://e.org/" if where == ("url",) else "") + "a" * n
        expect = ".".join(where)
    elif kind == "injection":
        payload = draw(st.sampled_from(PAYLOADS))
        b["name"] = draw(st.sampled_from(["", "entry "])) + payload
        expect = "name"
    elif kind == "forged":
        i = draw(st.integers(0, 4))
        b["results"][i]["metrics"]["return"] = draw(
            st.floats(-1000, 0).filter(lambda x: x != base["results"][i]["metrics"]["return"])
        )
        return kind, json.dumps(b), "content_hash"
    elif kind == "seeds":
        i = draw(st.integers(0, 4))
        b["results"][i]["seed"] = draw(
            st.integers(0, 2**31 - 1).filter(lambda s: s != b["results"][i]["seed"])
        )
        expect = "results (task 'tutorial/point-reach')"
    elif kind == "range":
        i = draw(st.integers(0, 4))
        metric, bad = draw(
            st.sampled_from(
                [
                    ("success_rate", st.floats(1.0001, 1e6)),
                    ("success_rate", st.floats(-1e6, -1e-6)),
                    ("return", st.floats(1e-9, 1e9)),
                    ("return", st.floats(-1e9, -1152.001)),
                    ("episode_length", st.floats(200.001, 1e9)),
                ]
            )
        )
        b["results"][i]["metrics"][metric] = draw(bad)
        expect = f"results[{i}].metrics.{metric}"
    if path[:1] == ("content_hash",) or not draw(st.booleans()):
        return kind, json.dumps(b), expect  # stale hash: content_hash must fail too
    return kind, json.dumps(rehash(b)), expect


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_leaderboard_hypothesis_malformed_bundles_rejected(
    store: LeaderboardStore, base: dict[str, Any], data: st.DataObject
) -> None:
    kind, payload, expect = data.draw(malformed(base))
    err = rejected(store, payload)
    if expect is not None:
        assert any(e.field == expect or e.field.startswith(expect + ".") for e in err.errors), (
            kind,
            err.errors,
        )
    # A stale hash is reported too, unless an earlier stage (JSON, schema, text) stopped the check.
    early = (
        "NUL",
        "surrogate",
        "nested",
        "object key contains",
        "reads version",
        "expected 'icml26",
    )
    if any(e.field == "bundle" or any(m in e.message for m in early) for e in err.errors):
        return
    try:
        b = json.loads(payload)
        stale = isinstance(b, dict) and b.get("content_hash") != content_hash(b)
    except (ValueError, TypeError):
        return
    if stale and isinstance(b.get("content_hash"), str):
        assert "content_hash" in fields(err), err.errors


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 .+\-_()/#@:,]{0,60}[A-Za-z0-9)]", fullmatch=True),
    description=st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=300),
    kp=st.floats(0.1, 10),
)
def test_leaderboard_hypothesis_valid_bundles_accepted(
    store: LeaderboardStore, base: dict[str, Any], name: str, description: str, kp: float
) -> None:
    b = copy.deepcopy(base)
    b["name"], b["description"] = name, description
    b["agent"]["kwargs"] = {"kp": kp}
    for r in b["results"]:
        r["agent_kwargs"] = {"kp": kp}
    before = store.counts()
    try:
        receipt = store.submit(json.dumps(rehash(b)))
    except SubmissionInvalid as e:
        assert e.kind == "duplicate", e  # hypothesis may repeat kp; nothing else may fail
        return
    e = store.entry(receipt.entry_ids[0])
    assert (e.name, e.description, e.status) == (name, description, "PENDING")
    assert e.values("return") == [r["metrics"]["return"] for r in base["results"]]
    after = store.counts()
    assert after["icml26_lb_entries"] == before["icml26_lb_entries"] + 1
    assert after["icml26_lb_submissions"] == before["icml26_lb_submissions"] + 1
    assert not math.isnan(e.values("return")[0])


def test_leaderboard_huge_integer_is_rejected_without_a_server(
    store: LeaderboardStore, base: dict[str, Any]
) -> None:
    """-10**400 parses as a JSON integer that no float can hold: a named error, not OverflowError."""
    b = copy.deepcopy(base)
    b["results"][0]["metrics"]["return"] = "__NUMBER__"
    text = json.dumps(b).replace('"__NUMBER__"', "-1" + "0" * 400)
    err = rejected(store, text)
    assert "results[0].metrics.return" in fields(err)
