"""LoopReasoning-v0 and ReasoningGym-v0: exact rewards, malformed answers, splits, groups."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

import icml26  # noqa: F401
from icml26.envs.looplm.env import LoopReasoningEnv
from icml26.envs.looplm.tasks import Problem, ProblemSampler, make_generator, split_of
from icml26.envs.looplm.tokenizer import EOS_ID, CharTokenizer


def _env(**kw):
    return gym.make("icml26/LoopReasoning-v0", **kw).unwrapped


def _force(env: LoopReasoningEnv, prompt: str, answer: str, value: int) -> None:
    env.reset(seed=0)
    env._problem = Problem(prompt, answer, value, env.task_name)


@pytest.mark.parametrize(
    "answer, reward", [("64", 1.0), (" 64 ", 1.0), ("46", 0.0), ("640", 0.0), ("", 0.0)]
)
def test_addition_hand_case(answer: str, reward: float) -> None:
    env = _env()
    _force(env, "12+34=", "64", 46)  # 12 + 34 = 46, written reversed
    _, r, term, trunc, info = env.step(answer)
    assert r == reward and term and not trunc
    assert info["gold"] == "64" and info["value"] == 46 and info["correct"] == (reward == 1.0)


def test_sampled_gold_answers_match_an_independent_computation() -> None:
    checks = {
        "addition": ({"digits": 3}, lambda p: sum(map(int, p[:-1].split("+")))),
        "chained_sum": ({"terms": 4}, lambda p: sum(map(int, p[:-1].split("+")))),
        "multiplication": (
            {"digits_a": 2, "digits_b": 2},
            lambda p: int(p[:-1].split("*")[0]) * int(p[:-1].split("*")[1]),
        ),
        "parity": ({"length": 9}, lambda p: p.split()[1][:-1].count("1") % 2),
        "counting": ({"length": 12}, lambda p: p.split()[3][:-1].count(p.split()[1])),
    }
    for task, (kw, solve) in checks.items():
        env = _env(task=task, **kw)
        reverse = task not in ("parity",)
        for s in range(40):
            obs, info = env.reset(seed=s)
            value = solve(info["prompt"])
            gold = str(value)[::-1] if reverse else str(value)
            assert CharTokenizer().decode(obs["tokens"][: obs["length"]]) == info["prompt"]
            _, r, *_, step_info = env.step(gold)
            assert r == 1.0 and step_info["value"] == value, (task, info["prompt"], gold)


def test_word_problems_follow_their_story() -> None:
    env = _env(task="word_problem", max_value=30, ops="+-*", reverse=False)
    seen = set()
    for s in range(60):
        _, info = env.reset(seed=s)
        a, b = map(int, re.findall(r"\d+", info["prompt"]))
        op = "+" if "more" in info["prompt"] else "-" if "away" in info["prompt"] else "*"
        seen.add(op)
        want = {"+": a + b, "-": a - b, "*": a * b}[op]
        assert want >= 0
        assert env.step(str(want))[1] == 1.0
    assert seen == {"+", "-", "*"}


@pytest.mark.parametrize("bad", ["abc", "6 4", "64x", "-46", "0x40", "4.6", ""])
def test_malformed_answers_score_zero_without_raising(bad: str) -> None:
    env = _env()
    _force(env, "12+34=", "64", 46)
    _, r, term, _, info = env.step(bad)
    assert (
        r == 0.0 and term and info["malformed"] is (not bad.strip().isdigit() or not bad.isascii())
    )


@pytest.mark.parametrize(
    "bad, why",
    [
        ("∞", "charset"),
        ("6\n4", "charset"),
        ("٦٤", "charset"),
        ("9" * 200, "more than"),
        ("1" * 5000, "more than"),
    ],
)
def test_answers_outside_the_text_space_are_refused_and_the_episode_stays_open(
    bad: str, why: str
) -> None:
    env = _env()
    _force(env, "12+34=", "64", 46)
    with pytest.raises(ValueError, match=f"LoopReasoning-v0: the answer .*{why}"):
        env.step(bad)
    _, r, term, _, _ = env.step("64")  # the rejected step changed nothing
    assert r == 1.0 and term
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("64")


def test_token_answers_and_bad_types() -> None:
    env = _env()
    tok = CharTokenizer()
    _force(env, "12+34=", "64", 46)
    assert env.step(np.array(tok.encode("64") + [EOS_ID, 5, 5]))[1] == 1.0  # stops at EOS
    _force(env, "12+34=", "64", 46)
    assert env.step([])[1] == 0.0
    _force(env, "12+34=", "64", 46)
    with pytest.raises(TypeError, match="LoopReasoning-v0: expected an answer string"):
        env.step(46.0)
    with pytest.raises(ValueError, match="1-D sequence of int token ids"):
        env.step(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        env.step([999])
    assert env.step("64")[1] == 1.0  # rejected actions left the episode intact
    with pytest.raises(RuntimeError, match="call reset"):
        env.step("64")


def test_train_and_test_problems_are_disjoint_and_sized() -> None:
    gen = make_generator("addition", digits=2)
    every = [f"{a}+{b}=" for a in range(10, 100) for b in range(10, 100)]
    frac = np.mean([split_of(p, 0.2) == "test" for p in every])
    assert abs(frac - 0.2) < 0.02  # 8100 problems, hash split
    rng = np.random.default_rng(0)
    train = {p.prompt for p in ProblemSampler(gen, "train").batch(3000, rng)}
    test = {p.prompt for p in ProblemSampler(gen, "test").batch(1000, rng)}
    assert train and test and not train & test
    assert all(split_of(p, 0.2) == "test" for p in test)
    tiny = ProblemSampler(
        make_generator("parity", length=1), "test", test_fraction=0.01, max_tries=50
    )
    with pytest.raises(RuntimeError, match="too small"):
        tiny.batch(5, 0)


def test_group_entry_points_are_seeded_and_agree_with_step() -> None:
    env = _env(task="multiplication")
    g1, g2 = env.sample_group(8, seed=3), env.sample_group(8, seed=3)
    assert g1 == g2 and len({p.prompt for p in g1}) > 1
    obs, _ = env.reset(seed=11)
    p = env.problem
    comps = [p.answer, "1", "", "zz", p.answer + " ", tuple(CharTokenizer().encode(p.answer))]
    r = env.score_group(comps)
    np.testing.assert_array_equal(r, [1, 0, 0, 0, 1, 1] if p.answer != "1" else [1, 1, 0, 0, 1, 1])
    ids, mask = env.encode(g1)
    assert ids.shape == (8, env.max_prompt_len) and mask.sum(1).tolist() == [
        len(q.prompt) for q in g1
    ]
    assert env.score([q.answer for q in g1], g1).tolist() == [1.0] * 8
    with pytest.raises(ValueError, match="3 completions for 8 problems"):
        env.score(["1"] * 3, g1)


def test_seeding_and_bad_knobs() -> None:
    a, b = _env(task="counting"), _env(task="counting")
    assert a.reset(seed=5)[1]["prompt"] == b.reset(seed=5)[1]["prompt"]
    with pytest.raises(ValueError, match="unknown task 'divide'"):
        _env(task="divide")
    with pytest.raises(ValueError, match="'digits': expected an int in"):
        _env(task="addition", digits=0)
    with pytest.raises(ValueError, match="split must be one of"):
        _env(split="validation")
    with pytest.raises(TypeError, match="bad knobs"):
        _env(task="parity", digits=3)


def test_reasoning_gym_adapter_scores_with_reasoning_gym() -> None:
    pytest.importorskip("reasoning_gym")
    train = gym.make("icml26/ReasoningGym-v0", name="basic_arithmetic", size=30).unwrapped
    test = gym.make(
        "icml26/ReasoningGym-v0", name="basic_arithmetic", size=30, split="test"
    ).unwrapped
    q, info = train.reset(seed=0)
    assert train.observation_space.contains(q)
    gold = train._entries[info["index"]]["answer"]
    assert train.step(gold)[1] == 1.0
    train.reset(seed=0)
    _, r, _, _, inf = train.step("not a number {[")
    assert r == 0.0 and inf["gold"] == gold
    train_q = {e["question"] for e in train._entries.values()}
    assert not train_q & {e["question"] for e in test._entries.values()}
