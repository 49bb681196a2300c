"""Front ends go through the service layer: no module of the CLI (relayrag.cli), the MCP gateway (relayrag.mcp,
mcp_gateway/), the dashboard (relayrag.dashboard) or the assistant (relayrag.agent) imports a stage, a concrete
backend, the stage context or the pipelines behind the service (read from the source with ast, so imports inside
functions count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "functions" / "relayrag"
FRONT_ENDS = [*sorted((PKG / "cli").glob("*.py")), *sorted((PKG / "mcp").glob("*.py")),
              *sorted((PKG / "dashboard").glob("*.py")), *sorted((PKG / "agent").glob("*.py")),
              *sorted((REPO / "mcp_gateway").glob("*.py"))]
# what only relayrag.service (and the engine and stages under it) may reach
FORBIDDEN = ("relayrag.stages", "relayrag.backends", "relayrag.context", "relayrag.ingest", "relayrag.sql",
             "relayrag.retrieval.bandit", "relayrag.retrieval.dense", "relayrag.retrieval.bm25",
             "relayrag.retrieval.fusion", "relayrag.engine.local", "relayrag.evaluation", "relayrag.entrypoints",
             "relayrag.stage_registry", "relayrag.stage_http")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, relative imports resolved against relayrag."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path}:{node.lineno}: relative import; the project uses absolute imports")
            out += [(node.lineno, node.module or "")]
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


def violations(path: Path, root: Path = REPO) -> list[str]:
    return [f"{path.relative_to(root)}:{line}: imports {mod}" for line, mod in imported_modules(path)
            if any(mod == f or mod.startswith(f + ".") for f in FORBIDDEN)]


def test_front_ends_are_found():
    names = {p.relative_to(REPO).as_posix() for p in FRONT_ENDS}
    assert {"functions/relayrag/cli/ask.py", "functions/relayrag/mcp/tools.py", "functions/relayrag/dashboard/backend.py",
            "functions/relayrag/agent/graph.py", "mcp_gateway/server.py"} <= names


@pytest.mark.parametrize("path", FRONT_ENDS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_front_end_imports_only_the_service_layer(path):
    assert violations(path) == []


def test_the_check_sees_imports_inside_functions(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from relayrag.stages.retrieve import arm_ranking\n    import relayrag.backends.gcs\n")
    assert violations(probe, tmp_path) == ["probe.py:2: imports relayrag.stages.retrieve",
                                           "probe.py:2: imports relayrag.stages.retrieve.arm_ranking",
                                           "probe.py:3: imports relayrag.backends.gcs"]
