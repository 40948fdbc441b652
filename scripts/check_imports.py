"""Walk ctxbench's import graph (every import that can run: at module level and inside functions and
classes, not those under TYPE_CHECKING, which never run) and report every cycle between modules and
between subpackages (ctxbench.layers importing ctxbench.strategies and back is a cycle even when no
two modules close it), and any ctxbench import of ctxbench.core, which must stand alone. Exit 1 on
any; CI runs it through tests/test_import_graph.py. ``--pending IMPORTER=IMPORTED`` leaves out one
known edge that an open issue removes (the test names the issue). Usage:
python scripts/check_imports.py [--pending IMPORTER=IMPORTED ...] [package_dir]"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package at ``root``."""
    names = {}
    for file in sorted(root.rglob("*.py")):
        parts = list(file.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = file
    return names


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that can run: anywhere in the module (a function-level import is a dependency too, only
    a later one), except under ``if TYPE_CHECKING:``, which never runs."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack += node.orelse
        else:
            stack += ast.iter_child_nodes(node)
    return found


Edge = tuple[str, str]  # (importing module, imported module as the import names it)


def import_graph(root: Path, pending: frozenset[Edge] = frozenset()) -> dict[str, set[str]]:
    """Module -> the package modules it imports (at import time or later, in a function), but for
    the ``pending`` edges."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, file in modules.items():
        is_package = file.name == "__init__.py"
        for node in _runtime_imports(ast.parse(file.read_text("utf-8"), str(file))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                if (name, target) in pending:
                    continue
                # Importing a.b.c also runs a and a.b: count those, except the importer's own packages.
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    dep = ".".join(parts[:i])
                    if dep in modules and dep != name and not name.startswith(dep + "."):
                        graph[name].add(dep)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def subpackage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph collapsed to top-level parts (``ctxbench.layers``, ``ctxbench.core``, ...)."""

    def part(module: str) -> str:
        return ".".join(module.split(".")[:2])

    collapsed: dict[str, set[str]] = {}
    for module, deps in graph.items():
        collapsed.setdefault(part(module), set()).update(part(d) for d in deps if part(d) != part(module))
    return collapsed


def problems(root: Path, contract: str = "core", pending: frozenset[Edge] = frozenset()) -> list[str]:
    """Every module cycle, subpackage cycle, and import the contract module makes of its package;
    a ``pending`` edge that is no longer in the graph is a problem too (its mark must go)."""
    graph = import_graph(root, pending)
    gone = sorted(pending - set(edges(root)))
    module_cycles = cycles(graph)
    found = [f"import cycle among modules: {', '.join(c)}" for c in module_cycles]
    found += [
        f"import cycle among subpackages: {', '.join(c)}"
        for c in cycles(subpackage_graph(graph))
        if c not in module_cycles  # already named above
    ]
    own = sorted(graph.get(f"{root.name}.{contract}", set()) - {root.name})
    if own:
        found.append(f"{root.name}.{contract} must import nothing of {root.name}, imports {', '.join(own)}")
    found += [f"pending edge {a} -> {b} is gone: remove its mark" for a, b in gone]
    return found


def edges(root: Path) -> Iterator[Edge]:
    """(importing module, imported module as named) of every runtime import inside the package."""
    modules = module_names(root)
    for name, deps in import_graph(root).items():
        yield from ((name, dep) for dep in deps if dep in modules)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent / "ctxbench")
    parser.add_argument("--pending", action="append", default=[], metavar="IMPORTER=IMPORTED")
    args = parser.parse_args(argv)
    root = args.root
    found = problems(root, pending=frozenset(tuple(edge.split("=", 1)) for edge in args.pending))
    for problem in found:
        print(problem)
    if not found:
        print(f"no import cycle in {root.name} ({len(module_names(root))} modules)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
