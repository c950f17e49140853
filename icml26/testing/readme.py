"""Generate the README's families section from the registry and the results pages.

    python -m icml26.testing.readme --write    # rewrite the section in README.md
    python -m icml26.testing.readme --check    # exit 1 when README.md is stale (what CI runs)

The section between ``<!-- section:families -->`` and ``<!-- /section:families -->`` is made of

* a table with one row per family of :data:`icml26.FAMILIES`: its registered env ids and
  PettingZoo envs, the latest version of each of its tasks, and its agents (the family's own plus
  the generic ones its suites run), the paper's method(s) in bold;
* one bullet per results page (``docs/results/*.md``) that opens with a summary block;
* the optional extras of ``pyproject.toml``, each with the comment above it.

A summary block is an HTML comment at the top of a results page holding one JSON object::

    <!-- icml26-summary
    {"family": "driving", "paper": "ScenePilot", "methods": ["scenepilot"],
     "bullet": "**driving**: ... [results](docs/results/driving.md)"}
    -->

``family`` and ``bullet`` are required; ``paper`` (the short name shown next to the family) and
``methods`` (the agents that are the paper's method) are optional, as is anything else
(``title``, ``headline_task``, ``numbers``: kept for other readers). The bullet is one line of
Markdown that links to its page; every number in it (outside code spans and link targets) must
appear on the page itself, as written or (a number with decimals) rounded from one the page writes
with more decimals (``1.03`` from ``1.031``), so a bullet cannot drift from what the page measured. A new family
needs no change here: its registry entries and its page's block are enough.
``tests/test_readme.py`` fails when README.md differs from what this module generates.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

__all__ = [
    "ROOT",
    "COMMAND",
    "Summary",
    "FamilyRow",
    "parse_summary",
    "read_summaries",
    "summary_problems",
    "numbers",
    "on_page",
    "family_rows",
    "extras",
    "render_section",
    "replace_section",
    "problems",
    "render_readme",
    "main",
]

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "python -m icml26.testing.readme --write"
BEGIN, END = "<!-- section:families -->", "<!-- /section:families -->"
WIDTH = 100  # the README's line length (bullets are wrapped to it)
_BLOCK = re.compile(r"<!--\s*icml26-summary[ \t]*\n(?P<body>.*?)\n[ \t]*-->", re.S)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CODE = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_DECIMAL = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")  # 1,000.5 or 1000.5


@dataclass(frozen=True)
class Summary:
    """The summary block of one results page."""

    page: str  # the page's path relative to the repository, e.g. docs/results/driving.md
    family: str
    bullet: str
    paper: str = ""
    methods: tuple[str, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)  # the whole JSON object


@dataclass(frozen=True)
class FamilyRow:
    """What the table says about one family (all from the registry but ``paper``/``methods``)."""

    family: str
    env_ids: tuple[str, ...]
    pettingzoo: tuple[str, ...]
    tasks: tuple[str, ...]
    agents: tuple[str, ...]
    paper: str = ""
    methods: tuple[str, ...] = ()


# ----------------------------------------------------------------------------- summary blocks
def parse_summary(text: str, page: str) -> Summary | None:
    """The summary block of a page's ``text`` (None when it has none); ``ValueError`` naming
    ``page`` for a malformed one or for more than one."""
    found = list(_BLOCK.finditer(text))
    if not found:
        return None
    if len(found) > 1:
        raise ValueError(f"{page}: {len(found)} icml26-summary blocks; a page has at most one")
    try:
        data = json.loads(found[0]["body"])
    except json.JSONDecodeError as e:
        raise ValueError(f"{page}: the icml26-summary block is not one JSON object: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{page}: the icml26-summary block must hold a JSON object")
    for key in ("family", "bullet"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ValueError(f"{page}: the icml26-summary block needs a non-empty string {key!r}")
    methods = data.get("methods", [])
    if not isinstance(methods, list) or not all(isinstance(m, str) for m in methods):
        raise ValueError(f"{page}: 'methods' must be a list of agent names, got {methods!r}")
    if "\n" in data["bullet"]:
        raise ValueError(f"{page}: the bullet must be one line (the README wraps it)")
    return Summary(
        page=page,
        family=data["family"],
        bullet=" ".join(data["bullet"].split()),
        paper=str(data.get("paper", "")),
        methods=tuple(methods),
        data=data,
    )


def read_summaries(root: Path = ROOT) -> list[Summary]:
    """The summary blocks of ``root/docs/results/*.md``, in family order then page name."""
    from icml26 import FAMILIES

    out = []
    for path in sorted((root / "docs" / "results").glob("*.md")):
        s = parse_summary(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())
        if s is not None:
            out.append(s)
    order = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(out, key=lambda s: (order.get(s.family, len(order)), s.page))


def numbers(text: str) -> list[str]:
    """The numbers written in ``text`` outside code spans and link targets (as written)."""
    return _NUMBER.findall(_LINK_TARGET.sub("]", _CODE.sub(" ", text)))


def _decimal(n: str) -> tuple[Decimal, int] | None:
    """``n``'s value and number of decimals (None for a list such as ``0,1,2``)."""
    if not _DECIMAL.fullmatch(n):
        return None
    plain = n.replace(",", "")
    return Decimal(plain), len(plain.partition(".")[2])


def on_page(n: str, page_numbers: Iterable[str]) -> bool:
    """Whether a bullet's number ``n`` is one of ``page_numbers``, or (``n`` written with decimals)
    one of them rounded to ``n``'s decimals: ``1.03`` and ``1.0`` from ``1.031``, never ``1``."""
    written = set(page_numbers)
    if n in written:
        return True
    value = _decimal(n)
    if value is None or value[1] == 0:
        return False
    x, places = value
    half = Decimal(5) / Decimal(10) ** (places + 1)
    for p in written:
        pv = _decimal(p)
        if pv is not None and pv[1] > places and abs(pv[0] - x) <= half:
            return True
    return False


def summary_problems(
    s: Summary, page_text: str, families: Sequence[str], agents: Iterable[str]
) -> list[str]:
    """What is wrong with summary ``s`` of a page whose text is ``page_text``: an unknown family,
    a bullet that does not link to its page or quotes a number the page does not hold, a method
    that is not a registered agent."""
    problems = []
    if s.family not in families:
        problems.append(f"{s.page}: family {s.family!r} is not one of icml26.FAMILIES")
    if f"]({s.page})" not in s.bullet:
        problems.append(f"{s.page}: the bullet does not link to its page ([results]({s.page}))")
    body = _BLOCK.sub("", page_text)
    written = set(_NUMBER.findall(body))
    missing = [n for n in numbers(s.bullet) if not on_page(n, written)]
    if missing:
        problems.append(
            f"{s.page}: the bullet quotes numbers the page does not hold: {', '.join(missing)}"
        )
    known = set(agents)
    for m in s.methods:
        if m not in known:
            problems.append(f"{s.page}: method {m!r} is not a registered agent")
    return problems


# ----------------------------------------------------------------------------- the registry
TEST_PREFIX = "testing/"  # task ids the test suite registers for itself


def family_rows(summaries: Sequence[Summary] = ()) -> list[FamilyRow]:
    """One row per family of ``icml26.FAMILIES``, from the registry (and the summaries' paper
    names and methods)."""
    import icml26
    from icml26 import agents, benchmarks

    rows = []
    for fam in icml26.FAMILIES:
        # tasks under ``testing/`` are the tests' own (registered by test modules): never listed
        tasks = [t for t in benchmarks.list_tasks(fam) if not t.id.startswith(TEST_PREFIX)]
        task_ids = {t.id for t in tasks}
        generic = {
            a
            for suite in benchmarks.suite_names()
            for e in benchmarks.get_suite(suite)
            if e.task in task_ids
            for a in e.agents
            if agents.spec(a).family == "any"
        }
        own = [n for n in agents.names(fam) if agents.spec(n).family == fam]
        mine = [s for s in summaries if s.family == fam]
        methods = tuple(dict.fromkeys(m for s in mine for m in s.methods))
        rows.append(
            FamilyRow(
                family=fam,
                env_ids=tuple(s["id"] for s in icml26.env_specs(fam)),
                pettingzoo=tuple(s["name"] for s in icml26.parallel_env_specs(fam)),
                tasks=tuple(t.id for t in tasks),
                agents=(*methods, *sorted((set(own) | generic) - set(methods))),
                paper=next((s.paper for s in mine if s.paper), ""),
                methods=methods,
            )
        )
    return rows


def extras(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """Every optional extra of ``pyproject`` with the comment lines written just above it."""
    text = pyproject.read_text(encoding="utf-8")
    names = tomllib.loads(text)["project"].get("optional-dependencies", {})
    lines = text.splitlines()
    out = {}
    for name in names:
        at = next(i for i, line in enumerate(lines) if re.match(rf"{re.escape(name)}\s*=", line))
        comment: list[str] = []
        for line in reversed(lines[:at]):
            if not line.startswith("#"):
                break
            comment.insert(0, line.lstrip("# ").strip())
        out[name] = " ".join(comment)
    return out


# ----------------------------------------------------------------------------- rendering
def _code(items: Iterable[str]) -> str:
    return ", ".join(f"`{x}`" for x in items)


def _row(r: FamilyRow) -> str:
    from icml26.testing.envdocs import PAGE_NAMES

    family = f"[{r.family}](docs/envs/{PAGE_NAMES.get(r.family, r.family)}.md)"
    family += f" ({r.paper})" if r.paper else ""
    envs = _code(r.env_ids) + (f"; PettingZoo: {_code(r.pettingzoo)}" if r.pettingzoo else "")
    agents = ", ".join(f"**`{a}`**" if a in r.methods else f"`{a}`" for a in r.agents)
    return f"| {family} | {envs} | {_code(r.tasks) or '-'} | {agents or '-'} |"


def _bullet(s: Summary) -> str:
    return textwrap.fill(
        s.bullet,
        width=WIDTH,
        initial_indent="- ",
        subsequent_indent="  ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def _extras_table(found: Mapping[str, str]) -> list[str]:
    lead = (
        'Optional backends, data and tools, each an extra (`pip install -e ".[NAME]"`; generated '
        "data is cached under `$ICML26_CACHE`, default `~/.cache/icml26`):"
    )
    return [
        textwrap.fill(lead, width=WIDTH, break_long_words=False, break_on_hyphens=False),
        "",
        "| extra | what it adds |",
        "|---|---|",
        *(f"| `{n}` | {c or '-'} |" for n, c in found.items()),
    ]


def render_section(
    rows: Sequence[FamilyRow], summaries: Sequence[Summary], found_extras: Mapping[str, str]
) -> str:
    """The families section, markers included."""
    table = [
        "| family (paper) | env ids | tasks | agents (the paper's method in bold) |",
        "|---|---|---|---|",
        *(_row(r) for r in rows),
    ]
    intro = textwrap.fill(
        "`icml26 envs`, `icml26 agents` and `icml26 tasks` list everything registered, with "
        "descriptions; each family has a page under [docs/envs/](docs/envs/) and its measured "
        "results under [docs/results/](docs/results/) (what we measured, with seeds and "
        "intervals, including where it disagrees with the paper). In brief:",
        width=WIDTH,
        break_long_words=False,
        break_on_hyphens=False,
    )
    parts = [
        BEGIN,
        "## Environments and tasks",
        "",
        f"<!-- Generated by `{COMMAND}` from the registry and the summary blocks of "
        "docs/results/*.md; do not edit by hand. -->",
        "",
        *table,
        "",
        intro,
        "",
        *(_bullet(s) for s in summaries),
        "",
        *_extras_table(found_extras),
        END,
    ]
    return "\n".join(parts)


def replace_section(readme: str, section: str) -> str:
    """``readme`` with its families section replaced by ``section``."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README: no {BEGIN} ... {END} section to replace")
    return readme[:start] + section + readme[end + len(END) :]


def problems(root: Path = ROOT) -> list[str]:
    """Every problem of the results pages' summary blocks (see :func:`summary_problems`)."""
    from icml26 import FAMILIES, agents

    names = agents.names()
    return [
        p
        for s in read_summaries(root)
        for p in summary_problems(s, (root / s.page).read_text(encoding="utf-8"), FAMILIES, names)
    ]


def render_readme(root: Path = ROOT) -> str:
    """README.md as it should be: the current file with the families section regenerated;
    ``ValueError`` listing the problems when a summary block is wrong."""
    found = problems(root)
    if found:
        raise ValueError("summary blocks of docs/results:\n  " + "\n  ".join(found))
    summaries = read_summaries(root)
    section = render_section(family_rows(summaries), summaries, extras(root / "pyproject.toml"))
    return replace_section((root / "README.md").read_text(encoding="utf-8"), section)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite README.md's families section")
    mode.add_argument("--check", action="store_true", help="exit 1 when README.md is stale")
    args = p.parse_args(argv)
    path = ROOT / "README.md"
    try:
        new = render_readme()
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    if args.write:
        path.write_text(new, encoding="utf-8")
        print(f"wrote {path}")
        return 0
    if path.read_text(encoding="utf-8") != new:
        print(f"{path} is stale: run `{COMMAND}`")
        return 1
    print(f"{path} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
