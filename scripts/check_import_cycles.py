"""Fail when the import graph of a package has a cycle (nox -s lint).

Every `import` / `from ... import` in every module counts, including imports inside functions (a deferred
import still ties the two modules together: it only hides the cycle until the call) and imports under
`if TYPE_CHECKING:` (never executed, but the two modules still depend on each other's design: the
mcp.tools <-> mcp.workflow_tools cycle hid there; a Protocol in the lower module breaks such a cycle).
`from pkg import name` is an edge to `pkg.name` when
that is a module, else to `pkg`. A package's `__init__` re-exporting its submodules is not a cycle with them:
edges from a package to its own submodules are left out.

Usage: python scripts/check_import_cycles.py [ROOT [PACKAGE]]   (default: functions relayrag)
Exit code 1 and one line per cycle (the modules of each strongly connected component, in a cycle order).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    files = {module_name(root, p): p for p in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_pkg = path.name == "__init__.py"
        base = mod if is_pkg else mod.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = node.module or ""
                if node.level:
                    anchor = base.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    src = ".".join([*anchor, src] if src else anchor)
                for a in node.names:
                    full = f"{src}.{a.name}"
                    targets.append(full if full in files else src)
            for t in targets:
                while t and t not in files:  # `import a.b.c` of a name inside a module
                    t = t.rpartition(".")[0]
                if not t or t == mod:
                    continue
                if is_pkg and t.startswith(mod + "."):
                    continue  # a package importing its own submodules
                graph[mod].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as a cycle through them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("functions")
    package = argv[2] if len(argv) > 2 else "relayrag"
    graph = import_graph(root, package)
    found = cycles(graph)
    for comp in found:
        edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
        print(f"import cycle among {len(comp)} modules: {', '.join(comp)}\n    " + "\n    ".join(edges))
    if not found:
        print(f"no import cycles in {package} ({len(graph)} modules, {sum(map(len, graph.values()))} edges)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
