"""The one stage catalog: which stages exist, their entry points, and what each one's code uses.

Everything that lists stages derives from here: `relayrag.stage_registry.STAGES`, the HTTP entry points
(`relayrag.entrypoints`, re-exported by `functions/main.py`), and the deployment (`infra/relayrag_infra/
catalog.py`: each function's environment, IAM grants and requirements follow from its *uses*).

A stage's uses are read from its code, not kept by hand: the stage module and, transitively, the functions
it imports from relayrag (only those, and the module-level functions they call) are scanned with `ast` for
`ctx.<attribute>` on the StageContext:

| ctx attribute                    | use                 | what the deployment must provide            |
|----------------------------------|---------------------|---------------------------------------------|
| docstore                         | docstore            | Firestore                                   |
| snapshot(...)                    | snapshots, embedder | the snapshots bucket; the query embedder    |
| embedder                         | embedder            | the embedder's settings and packages        |
| llm                              | llm                 | the LLM's settings and packages             |
| warehouse(...)                   | warehouse           | BigQuery                                    |
| warehouse_record(...)            | warehouse_routing   | which collections have a warehouse          |
| sql_config(...), sql_configs     | sql_config          | read access to sql-config/ in the bucket    |
| page_scorer(...)                 | snapshots, colpali  | the page-image model (extra `colpali`), large memory |
| schemas                          | schema              | read access to collections/ in the bucket   |
| index_backend(...)               | distributed_index   | the BigQuery index dataset (when configured)|

`snapshot` implies `embedder`: a snapshot is checked against the embedder that built it.

`ingest` (the CloudEvent entry point `ingest_object`) is not a stage of the workflow; its uses are declared.
Standard library only: infra loads this file without installing relayrag.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent

HTTP_STAGES: tuple[str, ...] = ("classify", "hyde", "retrieve", "colpali_search", "rerank", "grade", "generate",
                                "hallucination_check", "sql")
"""The workflow's stages, in workflow order; each is `relayrag.stages.<name>` with a `STAGE` and an HTTP
entry point of the same name."""
EVENT_ENTRY_POINTS: dict[str, str] = {"ingest": "ingest_object"}
"""CloudEvent functions: catalog name -> entry point (Eventarc, documents bucket)."""
EVENT_USES: dict[str, frozenset[str]] = {
    "ingest": frozenset({"docstore", "snapshots_write", "documents", "embedder", "dead_letter",
                         "distributed_index_write"}),
}

CTX_USES: dict[str, tuple[str, ...]] = {
    "docstore": ("docstore",),
    "snapshot": ("snapshots", "embedder"),
    "embedder": ("embedder",),
    "llm": ("llm",),
    "warehouse": ("warehouse",),
    "warehouse_record": ("warehouse_routing",),
    "sql_config": ("sql_config",),
    "sql_configs": ("sql_config",),
    "page_scorer": ("snapshots", "colpali"),
    "schemas": ("schema",),
    "index_backend": ("distributed_index",),
}
# modules that define the context and the backends themselves (their `ctx`/`self` code is not a stage's use)
_NOT_FOLLOWED = ("relayrag.context", "relayrag.backends", "relayrag.settings", "relayrag.errors")


def entry_points() -> list[str]:
    """Every function name `functions/main.py` exposes: the HTTP stages, then the CloudEvent entry points."""
    return [*HTTP_STAGES, *EVENT_ENTRY_POINTS.values()]


def _module_path(module: str, package_dir: Path) -> Path | None:
    parts = module.split(".")
    if parts[0] != "relayrag":
        return None
    base = package_dir.joinpath(*parts[1:])
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


@lru_cache(maxsize=None)
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _ctx_uses(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "ctx":
            out.update(CTX_USES.get(n.attr, ()))
    return out


def _imports(node: ast.AST) -> list[tuple[str, str | None]]:
    """(module, name) for `from module import name`; (module, None) for `import module`."""
    out: list[tuple[str, str | None]] = []
    for n in ast.walk(node):
        if isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out += [(n.module, a.name) for a in n.names]
        elif isinstance(n, ast.Import):
            out += [(a.name, None) for a in n.names]
    return out


def _definitions(tree: ast.Module) -> dict[str, ast.AST]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def stage_uses(stage: str, package_dir: Path = PACKAGE_DIR) -> frozenset[str]:
    """What the code of `stage` uses (see the module docstring), read from relayrag/stages/<stage>.py and the
    relayrag functions it reaches. Raises KeyError for an unknown stage."""
    if stage in EVENT_USES:
        return EVENT_USES[stage]
    if stage not in HTTP_STAGES:
        raise KeyError(f"unknown stage {stage!r}; valid: {', '.join(HTTP_STAGES + tuple(EVENT_USES))}")
    uses: set[str] = set()
    seen: set[tuple[str, str | None]] = set()
    todo: list[tuple[str, str | None]] = [(f"relayrag.stages.{stage}", None)]  # None: the whole module
    while todo:
        module, name = todo.pop()
        if (module, name) in seen or module.startswith(_NOT_FOLLOWED):
            continue
        seen.add((module, name))
        path = _module_path(module, package_dir)
        if path is None:
            sub = f"{module}.{name}" if name else None  # `from relayrag.stages import sql`
            if sub and _module_path(sub, package_dir):
                todo.append((sub, None))
            continue
        tree = _parse(path)
        if name is None:
            nodes: list[ast.AST] = [tree]
        else:
            if _module_path(f"{module}.{name}", package_dir):  # a submodule imported by name
                todo.append((f"{module}.{name}", None))
                continue
            defs = _definitions(tree)
            if name not in defs:
                continue  # a constant or a re-export: nothing that touches ctx
            nodes, queue = [], [name]
            local: set[str] = set()
            while queue:  # the definition and the module-level functions it calls by name
                n = queue.pop()
                if n in local or n not in defs:
                    continue
                local.add(n)
                nodes.append(defs[n])
                queue += [x.id for x in ast.walk(defs[n]) if isinstance(x, ast.Name)]
        for node in nodes:
            uses |= _ctx_uses(node)
            todo += [(m, n) for m, n in _imports(node) if m.startswith("relayrag")]
        if name is not None:  # module-level imports the definitions rely on
            todo += [(m, n) for m, n in _imports(tree) if m.startswith("relayrag") and
                     any(isinstance(x, ast.Name) and x.id == n for node in nodes for x in ast.walk(node))]
    return frozenset(uses)
