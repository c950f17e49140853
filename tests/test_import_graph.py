"""No import cycles among icml26's modules.

The graph has an edge A -> B for every ``import`` of B in A, module-level and function-level
(lazy) alike; a package ``__init__`` importing its own submodules (re-exports) is left out.
``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``. The
runtime graph leaves out imports under ``if TYPE_CHECKING:`` (they never run); a second test
counts them too, so that no two modules need each other even for their annotations (a cycle
hidden there is one ``TYPE_CHECKING`` away from a runtime one).
"""

from __future__ import annotations

import ast
from pathlib import Path

import icml26

ROOT = Path(icml26.__file__).parent


def _module_names() -> dict[str, Path]:
    mods = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(  # noqa: C901
    tree: ast.AST, module: str, is_package: bool, known: set[str], typing: bool = False
) -> set[str]:
    out: set[str] = set()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST) -> None:  # noqa: C901
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not typing:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("icml26"):
                    target = resolve(alias.name)
                    if target:
                        out.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if mod.startswith("icml26"):
                for alias in node.names:
                    sub = f"{mod}.{alias.name}"
                    target = sub if sub in known else resolve(mod)
                    if target:
                        out.add(target)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            arg = node.args[0] if node.args else None
            if (
                isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and arg.value.startswith("icml26")
            ):
                target = resolve(arg.value)
                if target:
                    out.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out.discard(module)
    if is_package:  # a package re-exporting its own submodules
        out = {t for t in out if not t.startswith(module + ".")}
    return out


def import_graph(typing: bool = False) -> dict[str, set[str]]:
    """Module -> the icml26 modules it imports (``typing``: also under ``if TYPE_CHECKING:``)."""
    mods = _module_names()
    known = set(mods)
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        graph[name] = _imports(tree, name, path.name == "__init__.py", known, typing)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); components with more than one module are cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comps: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                comps.append(sorted(comp))
    return comps


def test_graph_finds_a_known_edge_and_a_planted_cycle() -> None:
    graph = import_graph()
    assert "icml26.envs.driving.lanes" in graph["icml26.envs.driving.sim"]
    assert "icml26.protocol" in graph["icml26.benchmarks.runner"]
    planted = {k: set(v) for k, v in graph.items()}
    planted["icml26.protocol"].add("icml26.benchmarks.runner")
    assert any(len(c) > 1 for c in strongly_connected(planted))


def test_no_import_cycles() -> None:
    cycles = [c for c in strongly_connected(import_graph()) if len(c) > 1]
    assert cycles == [], f"import cycles among icml26 modules: {cycles}"


def test_function_level_and_type_only_imports_are_edges() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from icml26.protocol import Task\n"
        "def f():\n    from icml26.stats import iqm_ci\n"
    )
    known = {"icml26.protocol", "icml26.stats", "icml26.x"}
    assert _imports(tree, "icml26.x", False, known) == {"icml26.stats"}
    assert _imports(tree, "icml26.x", False, known, typing=True) == known - {"icml26.x"}


def test_no_import_cycles_even_through_type_only_imports() -> None:
    cycles = [c for c in strongly_connected(import_graph(typing=True)) if len(c) > 1]
    assert cycles == [], f"import cycles among icml26 modules (TYPE_CHECKING included): {cycles}"
