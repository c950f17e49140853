"""The README's (and docs/*.md's) runnable code blocks work as written.

A fenced block preceded by ``<!-- runnable -->`` is executed; one preceded by
``<!-- runnable file=PATH -->`` is written to PATH instead (what a reader saves by hand). A
page's blocks run in order in one fresh temporary directory holding a copy of ``examples/``,
with the venv's ``bin`` first on PATH (as after ``source .venv/bin/activate``): shell blocks
under ``bash -euo pipefail``, Python blocks as a script. Any error fails the test, naming the
page and line. See CONTRIBUTING.md.

The README's families section is generated (``python -m icml26.testing.readme --write``) from
the registry and the summary blocks of docs/results/*.md; the tests below fail when it, the
registry or the pages disagree.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGS = {"", "sh", "bash", "shell", "console"}
_MARKER = re.compile(r"^<!--\s*runnable(?:\s+file=(?P<file>\S+))?\s*-->\s*$")
_FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    file: str | None  # write the block here instead of running it

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def runnable_blocks(text: str, page: str = "<md>") -> list[Block]:
    """The blocks of a Markdown ``text`` marked runnable, in order. A marker must be directly
    above an opening fence; a marker anywhere else is an error (it would silently not run)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _MARKER.match(lines[i].strip())
        if not m:
            i += 1
            continue
        fence = _FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if fence is None:
            raise ValueError(
                f"{page}:{i + 1}: a runnable marker must be directly above a ``` fence"
            )
        close = fence["fence"]
        end = next((j for j in range(i + 2, len(lines)) if lines[j].strip() == close), None)
        if end is None:
            raise ValueError(f"{page}:{i + 2}: code block never closed")
        lang = fence["lang"].lower()
        if m["file"] is None and lang not in SHELL_LANGS | {"python"}:
            raise ValueError(f"{page}:{i + 2}: cannot run a {lang!r} block (shell or python only)")
        blocks.append(Block(page, i + 2, lang, "\n".join(lines[i + 2 : end]) + "\n", m["file"]))
        i = end + 1
    return blocks


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(BIN.parent)
    env.setdefault("OMP_NUM_THREADS", "1")
    for var in ("ICML26_STORE", "ICML26_LEADERBOARD", "ICML26_LEADERBOARD_TOKEN"):
        env.pop(var, None)  # the blocks' default stores
    # this checkout's icml26 (what an editable install gives; a venv shared between checkouts
    # would import another one), and nothing else of the caller's PYTHONPATH
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_blocks(blocks: list[Block], workdir: Path, timeout: float = 300) -> None:
    env = _env()
    for n, b in enumerate(blocks):
        if b.file is not None:
            target = workdir / b.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(b.code)
            continue
        if b.lang == "python":
            script = workdir / f"_readme_block_{n}.py"
            script.write_text(b.code)
            cmd = [str(BIN / "python"), script.name]
        else:
            cmd = ["bash", "-euo", "pipefail", "-c", b.code]
        out = subprocess.run(
            cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
        )
        if out.returncode != 0:
            pytest.fail(
                f"{b.where}: block exited {out.returncode}\n--- block\n{b.code}"
                f"--- stdout (tail)\n{out.stdout[-3000:]}\n--- stderr (tail)\n{out.stderr[-3000:]}"
            )


def _pages_with_blocks() -> list[Path]:
    return [p for p in PAGES if runnable_blocks(p.read_text(), p.name)]


# ------------------------------------------------------------------ the extractor itself
def test_extractor_on_a_hand_written_page() -> None:
    page = (
        "intro\n"
        "```\nnot marked\n```\n"
        "<!-- runnable -->\n```\necho one\necho two\n```\n"
        "<!-- runnable file=pkg/m.py -->\n```python\nX = 1\n```\n"
        "<!--runnable-->\n````python\nprint('```')\n````\n"
    )
    blocks = runnable_blocks(page, "p.md")
    assert [(b.line, b.lang, b.code, b.file) for b in blocks] == [
        (6, "", "echo one\necho two\n", None),
        (11, "python", "X = 1\n", "pkg/m.py"),
        (15, "python", "print('```')\n", None),
    ]
    with pytest.raises(ValueError, match="directly above"):
        runnable_blocks("<!-- runnable -->\ntext\n```\nls\n```\n", "bad.md")
    with pytest.raises(ValueError, match="never closed"):
        runnable_blocks("<!-- runnable -->\n```\nls\n", "bad.md")
    with pytest.raises(ValueError, match="shell or python"):
        runnable_blocks("<!-- runnable -->\n```yaml\na: 1\n```\n", "bad.md")


def test_a_failing_block_fails_naming_its_line(tmp_path: Path) -> None:
    blocks = runnable_blocks("<!-- runnable -->\n```\ntrue\nfalse\necho never\n```\n", "x.md")
    with pytest.raises(pytest.fail.Exception, match=r"x\.md:2: block exited 1"):
        run_blocks(blocks, tmp_path)
    py = runnable_blocks("<!-- runnable -->\n```python\nraise SystemExit(3)\n```\n", "y.md")
    with pytest.raises(pytest.fail.Exception, match=r"y\.md:2: block exited 3"):
        run_blocks(py, tmp_path)


def test_readme_covers_the_three_uses() -> None:
    """The README's runnable blocks include the quick start, the plug-in agent and the whole
    submission walk-through, and the plug-in agent is the file in examples/."""
    blocks = runnable_blocks((ROOT / "README.md").read_text(), "README.md")
    code = "".join(b.code for b in blocks if b.file is None)
    for needle in (
        'gym.make("icml26/PointReach-v0")',
        "--agent mypkg.agents:MyController",
        "icml26.agents.make(",
        "--out mine.json",
        "leaderboard submit mine.json",
        "leaderboard verify",
        "leaderboard show",
        "leaderboard render",
        "examples/ppo_scenepilot.py",
        # "Use it with your tools"
        "from icml26.integrations.sb3 import wrap",
        "PPO(",
        'gym.make_vec("icml26/ScenePilot-v2"',
        'phi="ttc"',
        "parallel_to_aec(",
        "render_test(",
        'game="openspiel", openspiel_game="goofspiel"',
        "icml26_rllib.register_envs()",
        "multi_agent_ppo_config(",
        ".to_minari(",
    ):
        assert needle in code, f"no runnable README block contains {needle!r}"
    files = {b.file: b.code for b in blocks if b.file is not None}
    assert files.get("mypkg/agents.py") == (ROOT / "examples" / "mypkg" / "agents.py").read_text()


# ------------------------------------------------------------------ the generated families section
def test_families_section_is_generated_from_registry_and_pages() -> None:
    """README.md is what the generator makes of the registry and the pages' summary blocks
    (which also checks each block: its family, its link, its numbers, its methods)."""
    from icml26.testing.readme import COMMAND, render_readme

    assert (ROOT / "README.md").read_text() == render_readme(), (
        f"README.md is stale: run `{COMMAND}`"
    )


def test_every_registered_id_task_and_agent_is_in_the_readme() -> None:
    import icml26
    from icml26 import agents, benchmarks
    from icml26.testing.readme import TEST_PREFIX

    readme = (ROOT / "README.md").read_text()
    names = (
        [s["id"] for s in icml26.env_specs()]
        + [s["name"] for s in icml26.parallel_env_specs()]
        + [t for t in benchmarks.task_ids() if not t.startswith(TEST_PREFIX)]
        + agents.names()
    )
    missing = [n for n in names if f"`{n}`" not in readme]
    assert not missing, f"registered but not in README.md: {missing}"


def test_every_id_and_task_in_the_readme_is_registered() -> None:
    import icml26
    from icml26 import benchmarks

    readme = (ROOT / "README.md").read_text()
    envs = {s["id"] for s in icml26.env_specs()}
    found_envs = set(re.findall(r"icml26/[A-Z][A-Za-z0-9]*-v\d+", readme))
    assert found_envs and found_envs <= envs, f"not registered: {sorted(found_envs - envs)}"
    known = set(benchmarks.task_ids()) | {s["name"] for s in icml26.parallel_env_specs()}
    family = "|".join(icml26.FAMILIES)
    found = set(re.findall(rf"`((?:{family})/[A-Za-z0-9_.-]+)`", readme))
    assert found and found <= known, f"not registered: {sorted(found - known)}"


def test_each_summary_bullet_is_in_the_readme_as_its_page_says() -> None:
    from icml26.testing.readme import read_summaries

    readme = " ".join((ROOT / "README.md").read_text().split())
    summaries = read_summaries()
    assert {s.family for s in summaries} >= {"driving", "looplm", "weather", "md_forcefields"}
    for s in summaries:
        assert f"- {s.bullet}" in readme, f"{s.page}: its bullet is not in README.md"


def test_summary_block_parsing_and_checks() -> None:
    from icml26.testing.readme import numbers, on_page, parse_summary, summary_problems

    page = (
        "<!-- icml26-summary\n"
        '{"family": "toy", "bullet": "**toy**: 0.25 [0.20, 0.31] over `toy/task-2x3` '
        '(10 seeds). [results](docs/results/toy.md)", "methods": ["toy-method"]}\n'
        "-->\n# Toy\n\n| arm | rate |\n|---|---|\n| toy-method | 0.25 [0.20, 0.31] |\n"
        "Seeds 0-9 (10 seeds).\n"
    )
    s = parse_summary(page, "docs/results/toy.md")
    assert s is not None and s.family == "toy" and s.methods == ("toy-method",)
    assert numbers(s.bullet) == ["0.25", "0.20", "0.31", "10"]  # not the task id's, not the link's
    assert summary_problems(s, page, ["toy"], ["toy-method"]) == []
    drifted = page.replace("| 0.25 [0.20, 0.31] |", "| 0.26 [0.20, 0.31] |")
    assert summary_problems(s, drifted, ["toy"], ["toy-method"]) == [
        "docs/results/toy.md: the bullet quotes numbers the page does not hold: 0.25"
    ]
    # a bullet may round what the page writes with more decimals, never invent or move a number
    precise = page.replace("| 0.25 [0.20, 0.31] |", "| 0.2513 [0.2049, 0.31] |")
    assert summary_problems(s, precise, ["toy"], ["toy-method"]) == []
    assert on_page("1.03", ["1.031"]) and on_page("1.0", ["1.031"]) and on_page("0.6", ["0.62"])
    assert on_page("1,000.5", ["1000.49"]) and on_page("48", ["48"])
    assert not on_page("1.04", ["1.031"]) and not on_page("1", ["1.031"])
    assert not on_page("1.031", ["1.03"]) and not on_page("0,1", ["0.1"])
    problems = summary_problems(s, page, ["other"], [])
    assert any("family 'toy'" in p for p in problems) and any("'toy-method'" in p for p in problems)
    unlinked = parse_summary(
        page.replace("docs/results/toy.md)", "elsewhere.md)"), "docs/results/toy.md"
    )
    assert unlinked is not None
    assert any("does not link" in p for p in summary_problems(unlinked, page, ["toy"], []))
    assert parse_summary("# no block here\n", "p.md") is None
    for bad, message in [
        ("<!-- icml26-summary\n{not json}\n-->", "not one JSON object"),
        ('<!-- icml26-summary\n{"family": "toy"}\n-->', "'bullet'"),
        ('<!-- icml26-summary\n["toy"]\n-->', "JSON object"),
        ('<!-- icml26-summary\n{"family": "t", "bullet": "b", "methods": "m"}\n-->', "methods"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_summary(bad, "docs/results/bad.md")


def test_a_new_family_needs_no_generator_change() -> None:
    """A family the generator has never seen (its registry rows and its page's block) renders."""
    from icml26.testing.readme import FamilyRow, Summary, render_section

    row = FamilyRow(
        family="pulse",
        env_ids=("icml26/Pulse-v0",),
        pettingzoo=(),
        tasks=("pulse/quick",),
        agents=("pulse-method", "random"),
        paper="PULSE",
        methods=("pulse-method",),
    )
    bullet = "**pulse**: measured 0.5 [0.4, 0.6]. [results](docs/results/pulse.md)"
    summary = Summary("docs/results/pulse.md", "pulse", bullet, "PULSE", ("pulse-method",))
    section = render_section([row], [summary], {"pulse": "the pulse simulator"})
    assert (
        "| [pulse](docs/envs/pulse.md) (PULSE) | `icml26/Pulse-v0` | `pulse/quick` | "
        "**`pulse-method`**, `random` |"
    ) in section
    assert f"- {bullet}" in section and "| `pulse` | the pulse simulator |" in section


# ------------------------------------------------------------------ the pages
@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_blocks(), ids=lambda p: p.name)
def test_runnable_blocks(page: Path, tmp_path: Path) -> None:
    assert (BIN / "icml26").exists(), (
        f"no icml26 script next to {sys.executable}: install the package"
    )
    shutil.copytree(
        ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__")
    )
    run_blocks(runnable_blocks(page.read_text(), page.name), tmp_path)
