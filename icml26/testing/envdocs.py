"""Generate ``docs/envs/<page>.md`` from the env class docstrings (as Gymnasium builds its pages).

Each family page is made of the family intro (the module docstring of
``icml26/envs/<family>/__init__.py``), one section per env class (its docstring, with the ids that
use it), and generated tables of the family's tasks and agents. Regenerate with::

    python -m icml26.testing.envdocs --write     # rewrite the pages
    python -m icml26.testing.envdocs --check     # list stale pages, exit 1 if any

``tests/test_envdocs.py`` fails when a page on disk differs from what this module produces, and
runs the ``>>>`` example of every env class docstring.
"""

from __future__ import annotations

import argparse
import doctest
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "PAGE_NAMES",
    "pages",
    "DOCS_DIR",
    "env_classes",
    "render_page",
    "render_all",
    "stale_pages",
    "write_pages",
    "run_examples",
]

# page name under docs/envs/ where it is not the family's name (the tutorial keeps its env's name)
PAGE_NAMES: dict[str, str] = {"tutorial": "point_reach"}
DOCS_DIR = Path(__file__).resolve().parents[2] / "docs" / "envs"
COMMAND = "python -m icml26.testing.envdocs --write"
_BANNER = f"<!-- Generated from the env docstrings by `{COMMAND}`; do not edit by hand. -->"


def pages() -> dict[str, str]:
    """Family -> page name, for every family in ``icml26.FAMILIES``."""
    import icml26

    return {fam: PAGE_NAMES.get(fam, fam) for fam in icml26.FAMILIES}


def _resolve(entry_point: str) -> Any:
    module, _, name = entry_point.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def env_classes(family: str) -> list[tuple[type, list[dict[str, Any]]]]:
    """The env classes of ``family`` in registration order, each with the specs that use it."""
    import icml26

    if family not in icml26.FAMILIES:
        raise ValueError(
            f"envdocs: unknown family {family!r}; expected one of {list(icml26.FAMILIES)}"
        )
    out: dict[str, tuple[type, list[dict[str, Any]]]] = {}
    for spec in icml26.env_specs(family):
        ep = spec["entry_point"]
        if ep not in out:
            cls = _resolve(ep)
            if not inspect.isclass(cls):
                raise TypeError(f"envdocs: entry point {ep!r} of {spec['id']} is not a class")
            out[ep] = (cls, [])
        out[ep][1].append(spec)
    return list(out.values())


def _shift_headings(text: str, by: int = 1) -> str:
    """Demote markdown headings by ``by`` levels (skipping fenced code)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" * by + line
        lines.append(line)
    return "\n".join(lines)


def _fence_doctests(text: str) -> str:
    """Wrap each run of ``>>>`` lines (and their expected output) in a ```pycon fence."""
    out: list[str] = []
    in_block = False
    for line in text.splitlines():
        if not in_block and line.lstrip().startswith(">>>"):
            out.append("```pycon")
            in_block = True
        elif in_block and not line.strip():
            out.append("```")
            in_block = False
        out.append(line)
    if in_block:
        out.append("```")
    return "\n".join(out)


_ROLE = re.compile(r":(?:class|mod|func|meth|attr|data|obj):`~?\.?([^`]+)`")


def _clean(doc: str | None, shift: int = 1) -> str:
    text = _fence_doctests(_ROLE.sub(r"``\1``", inspect.cleandoc(doc or "")))
    return (_shift_headings(text, shift) if shift else text).strip()


def _module_doc(family: str) -> str:
    mod = importlib.import_module(f"icml26.envs.{family}")
    return _clean(mod.__doc__, shift=0)


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _budget(budget: Any) -> str:
    parts = []
    for key in ("env_steps", "episodes", "dataset_size", "energy_evals", "updates", "wall_clock_s"):
        val = getattr(budget, key, None)
        if val is not None:
            parts.append(f"{key}={val}")
    for key, val in sorted(dict(getattr(budget, "extra", {}) or {}).items()):
        parts.append(f"{key}={val}")
    return ", ".join(parts) or "-"


def _seeds(seeds: tuple[int, ...]) -> str:
    s = list(seeds)
    if len(s) > 2 and s == list(range(s[0], s[0] + len(s))):
        return f"{s[0]}-{s[-1]} ({len(s)})"
    return ", ".join(map(str, s)) + f" ({len(s)})"


def _tasks_table(family: str) -> str:
    from icml26 import benchmarks

    tasks = benchmarks.list_tasks(family)
    if not tasks:
        return "No registered tasks."
    rows = [
        "| task | version | env | primary metric | budget | seeds |",
        "|---|---|---|---|---|---|",
    ]
    for t in tasks:
        metric = next((m for m in t.metrics if m.name == t.primary_metric), None)
        direction = f" ({metric.direction})" if metric is not None else ""
        rows.append(
            f"| `{t.id}` | {t.version} | `{t.env_id}` | {_cell(t.primary_metric)}{direction} "
            f"| {_cell(_budget(t.budget))} | {_seeds(tuple(t.seeds))} |"
        )
    return "\n".join(rows)


def _agents_table(family: str) -> str:
    from icml26 import agents

    names = agents.names(family)
    if not names:
        return "No registered agents."
    rows = ["| agent | description |", "|---|---|"]
    for name in names:
        rows.append(f"| `{name}` | {_cell(agents.spec(name).description)} |")
    return "\n".join(rows)


def _kwargs(spec: dict[str, Any]) -> str:
    kw = spec.get("kwargs") or {}
    return ", ".join(f"{k}={v!r}" for k, v in kw.items())


def render_page(family: str) -> str:
    """The markdown text of the family's page."""
    parts = [_BANNER, "", f"# {family}", "", _module_doc(family), ""]
    classes = env_classes(family)
    parts += [
        "## Environments",
        "",
        "| id | class | registered kwargs | summary |",
        "|---|---|---|---|",
    ]
    for cls, specs in classes:
        for spec in specs:
            parts.append(
                f"| `{spec['id']}` | `{cls.__name__}` | {_cell(_kwargs(spec)) or '-'} "
                f"| {_cell(spec.get('doc', ''))} |"
            )
    parts.append("")
    for cls, specs in classes:
        ids = ", ".join(f"`{s['id']}`" for s in specs)
        parts += [
            f"## {cls.__name__}",
            "",
            f"`{cls.__module__}.{cls.__qualname__}`, registered as {ids}.",
            "",
            _clean(cls.__doc__),
            "",
        ]
    parts += ["## Tasks", "", _tasks_table(family), "", "## Agents", "", _agents_table(family), ""]
    return "\n".join(parts)


def render_all() -> dict[Path, str]:
    """Every page path with its generated text."""
    return {DOCS_DIR / f"{page}.md": render_page(fam) for fam, page in pages().items()}


def stale_pages() -> list[Path]:
    """Pages whose file on disk differs from the generated text (or is missing)."""
    stale = []
    for path, text in render_all().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def write_pages() -> list[Path]:
    """Rewrite the pages that changed; returns their paths."""
    written = []
    for path, text in render_all().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def run_examples(cls: type, *, verbose: bool = False) -> doctest.TestResults:
    """Run the ``>>>`` examples of one env class docstring; raises if it has none."""
    doc = cls.__doc__ or ""
    name = f"{cls.__module__}.{cls.__qualname__}"
    test = doctest.DocTestParser().get_doctest(doc, {}, name, inspect.getsourcefile(cls), 0)
    if not test.examples:
        raise ValueError(f"envdocs: {name} has no '>>>' example in its docstring")
    runner = doctest.DocTestRunner(
        verbose=verbose, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    runner.run(test)
    return runner.summarize(verbose=verbose)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m icml26.testing.envdocs", description=(__doc__ or "").splitlines()[0]
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="rewrite stale pages")
    group.add_argument("--check", action="store_true", help="list stale pages; exit 1 if any")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_pages():
            print(f"wrote {path}")
        return 0
    stale = stale_pages()
    for path in stale:
        print(f"stale: {path}")
    if stale:
        print(f"run `{COMMAND}` to regenerate", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
