"""Walk ctxbench's import graph (module-level imports, not those under TYPE_CHECKING or inside
functions) and report every cycle between modules and between subpackages (ctxbench.layers
importing ctxbench.strategies and back is a cycle even when no two modules close it), and any
ctxbench import of ctxbench.core, which must stand alone. Exit 1 on any; CI runs it through
tests/test_import_graph.py. Usage: python scripts/check_imports.py [package_dir]"""

from __future__ import annotations

import ast
import sys
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


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: module body, try/if blocks, not TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if "TYPE_CHECKING" not in test:
                stack += node.body
            stack += node.orelse
        elif isinstance(node, ast.Try):
            stack += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package modules it imports at import time."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, file in modules.items():
        is_package = file.name == "__init__.py"
        for node in _top_level_imports(ast.parse(file.read_text("utf-8"), str(file))):
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


def problems(root: Path, contract: str = "core") -> list[str]:
    """Every module cycle, subpackage cycle, and import the contract module makes of its package."""
    graph = import_graph(root)
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
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "ctxbench"
    found = problems(root)
    for problem in found:
        print(problem)
    if not found:
        print(f"no import cycle in {root.name} ({len(module_names(root))} modules)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
