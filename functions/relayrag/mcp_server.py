"""MCP gateway: relayrag's tools for agent clients (FastMCP), over stdio or authenticated streamable HTTP.

Built-in tools: `ask`, `search`, `ingest`, `delete_document`, `list_collections`, `get_run`. On top of these,
every `workflows/*.yaml` that declares itself a tool in machine-readable comment lines (see
`parse_tool_spec`; the YAML itself is untouched, so it still deploys on Cloud Workflows) becomes a tool.
The workflows folder is re-scanned on every `tools/list` and `tools/call` (cached by mtime and size), so a
new or changed file is picked up without a restart. Nothing from a workflow file is ever executed as
Python: the declaration is parsed as data and the YAML is run by the embedded interpreter, whose
expressions are whitelisted (relayrag.engine.expr).

Every tool error comes back as an MCP tool error (`ToolError`) with a message meant for the user; an
unexpected exception is logged to stderr with its traceback and reported by type and message. Results are
bounded (quotes, answers, counts) so a client is never flooded.

`relayrag mcp` (relayrag.cli) calls `serve`; `mcp_gateway/server.py` exposes `build_server()` for
`fastmcp run` and other hosts.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hmac
import ipaddress
import json
import logging
import os
import re
import sys
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Callable, Literal
from urllib.parse import unquote, urlparse

from pydantic import Field

from relayrag.naming import COLLECTION_PATTERN
from relayrag.errors import ConfigError, RelayragError

try:
    import anyio
    import anyio.from_thread
    import anyio.to_thread
    from fastmcp import Context, FastMCP
    from fastmcp.exceptions import ToolError
    from fastmcp.server.auth import AccessToken, TokenVerifier
    from fastmcp.server.dependencies import get_context
    from fastmcp.server.providers import Provider
    from fastmcp.tools import Tool
    from fastmcp.tools.base import ToolResult
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError("the MCP gateway needs fastmcp: pip install 'relayrag[mcp]' "
                      f"({type(exc).__name__}: {exc})") from exc

log = logging.getLogger("relayrag.mcp")

# -- limits: what one tool result may carry ------------------------------------------------------------
QUOTE_CHARS = 300          # a citation / search quote
ANSWER_CHARS = 4000        # an answer
MAX_CITATIONS = 10
MAX_SEARCH_K = 20
MAX_FAILED = 50            # per-file errors listed by ingest / delete
MAX_COLLECTIONS = 200
MAX_STAGES = 60            # trace entries returned by get_run
MAX_JSON_CHARS = 20_000    # a workflow's return value, a stage's outputs
MAX_SQL_ROWS = 50          # rows returned by sql_query (the run record keeps up to 100)
CELL_CHARS = 300           # a text cell of an sql_query row

BUILTIN_TOOLS = ("ask", "search", "ingest", "delete_document", "list_collections", "get_run", "sql_query")
ENGINES = ("embedded", "cloud")
RESERVED_ARGS = ("run_id", "urls")  # set by the gateway, never by a client (see DESIGN.md)

CollectionName = Annotated[str, Field(
    description="Collection name (letters, digits, '_', '-', '.'; up to 64 characters), as given to ingest.",
    pattern=COLLECTION_PATTERN)]
ArmName = Literal["dense", "bm25", "hybrid"]

INSTRUCTIONS = """relayrag answers questions from ingested documents with citations (document and page) and a
grounding check. Typical use: list_collections → ask (or search for raw ranked chunks) → get_run for the
trace of a run. ingest adds a file or folder to a collection; delete_document removes documents.
Collections with a warehouse (tables) also answer sql_query: one guarded read-only SELECT, its rows and
a sentence; ask routes table questions there too.
Workflow tools (from the server's workflows folder) may also be listed."""


# -- small helpers ------------------------------------------------------------------------------------

def clip(text: Any, limit: int) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def cap_json(value: Any, limit: int = MAX_JSON_CHARS) -> Any:
    """`value` if its JSON is at most `limit` characters, else a marker with a clipped JSON preview."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    if len(text) <= limit:
        return value
    return {"truncated": True, "chars": len(text), "preview": clip(text, limit)}


def iso(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds") if ts else None


def _error_message(exc: BaseException) -> str:
    """The user-facing message of an exception raised by relayrag (stage errors carry an HTTP body)."""
    from relayrag.engine.expr import WorkflowsRuntimeError
    if isinstance(exc, WorkflowsRuntimeError):
        body = exc.payload.get("body")
        if isinstance(body, dict) and body.get("error"):
            stage = body.get("stage")
            return f"{stage}: {body['error']}" if stage else str(body["error"])
        return str(exc.payload.get("message") or exc)
    return str(exc)


def to_tool_error(exc: BaseException) -> ToolError:
    from relayrag.engine.expr import WorkflowsRuntimeError
    if isinstance(exc, ToolError):
        return exc
    if isinstance(exc, (RelayragError, WorkflowsRuntimeError)):
        return ToolError(_error_message(exc))
    log.error("unexpected error in a tool:\n%s", "".join(traceback.format_exception(exc)))
    return ToolError(f"internal error ({type(exc).__name__}): {clip(exc, 500)}")


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run blocking relayrag code in a worker thread; any failure becomes a ToolError."""
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except Exception as exc:
        raise to_tool_error(exc) from exc


def progress_from_thread(ctx: Context | None) -> Callable[[float, float | None, str], None]:
    """A callback usable inside `in_thread` that sends MCP progress notifications (best effort)."""
    def report(progress: float, total: float | None, message: str) -> None:
        if ctx is None:
            return
        try:
            anyio.from_thread.run(ctx.report_progress, progress, total, message)
        except Exception:  # a client that went away must not fail the work
            log.debug("progress notification failed", exc_info=True)
    return report


def stage_progress(report: Callable[[float, float | None, str], None]) -> Callable[[dict], None]:
    """Workflow interpreter events (one per stage call) → progress notifications."""
    count = 0

    def on_event(event: dict) -> None:
        nonlocal count
        count += 1
        r = event.get("result") if isinstance(event.get("result"), dict) else {}
        ms = r.get("ms", event.get("ms", 0)) or 0
        report(count, None, f"{event.get('step')} done ({float(ms):.0f} ms, {r.get('method') or 'step'})")
    return on_event


def citation_view(c: dict) -> dict:
    out = {k: c[k] for k in ("n", "doc", "page", "chunk_id") if k in c}
    out["quote"] = clip(c.get("quote", ""), QUOTE_CHARS)
    return out


def result_view(result: dict) -> dict:
    """A run's user-facing result (relayrag.engine.local.build_result), bounded."""
    cites = result.get("citations") or []
    out = dict(result)
    out["answer"] = clip(result.get("answer", ""), ANSWER_CHARS)
    out["citations"] = [citation_view(c) for c in cites[:MAX_CITATIONS]]
    if len(cites) > MAX_CITATIONS:
        out["citations_omitted"] = len(cites) - MAX_CITATIONS
    return out


def known_collections(ctx) -> list[str]:
    from relayrag.sql.warehouse import list_warehouses
    names = {c["name"] for c in ctx.docstore.list_collections()}
    return sorted(names | {w["collection"] for w in list_warehouses(ctx.settings.home)})


def require_collection(ctx, name: str, *, allow_warehouse: bool = False) -> dict:
    """The collection's metadata; with `allow_warehouse`, a collection that only has a warehouse passes
    too (returns {}). Raises ToolError naming the known collections."""
    from relayrag.sql.warehouse import warehouse_record
    meta = ctx.docstore.get_collection(name)
    if meta is None or not meta.get("current_version"):
        if allow_warehouse and warehouse_record(ctx.settings.home, name) is not None:
            return meta or {}
        known = ", ".join(known_collections(ctx)[:20]) or "none yet"
        raise ToolError(f"unknown collection {name!r} (collections: {known}); ingest documents into it first"
                        + (" or load tables with `relayrag warehouse load`" if allow_warehouse else ""))
    return meta


def sql_cell(v: Any) -> Any:
    return clip(v, CELL_CHARS) if isinstance(v, str) else v


# -- workflow tools: declarations in comment lines ---------------------------------------------------

PARAM_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict,
               "array": list}
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_DIRECTIVE = re.compile(r"^\s*#\s*mcp-(tool|description|param)\s*:\s*(.*?)\s*$")
_DESC_SEP = re.compile(r"\s+(?:—|--)(?:\s+|$)")


class WorkflowSpecError(RelayragError):
    """A workflow's `# mcp-...` declaration lines are malformed."""


@dataclass(frozen=True)
class WorkflowParam:
    name: str
    type: str
    required: bool
    description: str = ""
    default: Any = None
    enum: tuple | None = None

    def schema(self) -> dict:
        s: dict[str, Any] = {"type": self.type}
        if self.description:
            s["description"] = self.description
        if self.enum:
            s["enum"] = list(self.enum)
        if self.default is not None:
            s["default"] = self.default
        return s


@dataclass(frozen=True)
class WorkflowToolSpec:
    name: str                      # tool name
    workflow: str                  # file stem, as relayrag.engine.local.run_workflow takes it
    description: str
    params: tuple[WorkflowParam, ...] = field(default_factory=tuple)

    def input_schema(self) -> dict:
        return {"type": "object", "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required], "additionalProperties": False}

    def bind(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate a client's arguments against the declaration; defaults applied. Raises ToolError."""
        arguments = dict(arguments or {})
        by_name = {p.name: p for p in self.params}
        unknown = sorted(set(arguments) - set(by_name))
        if unknown:
            raise ToolError(f"{self.name}: unknown argument(s) {unknown}; accepted: {sorted(by_name) or 'none'}")
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name not in arguments or arguments[p.name] is None:
                if p.required:
                    raise ToolError(f"{self.name}: missing required argument {p.name!r} ({p.type})")
                if p.default is not None:
                    out[p.name] = p.default
                continue
            v = arguments[p.name]
            ok = isinstance(v, PARAM_TYPES[p.type]) and not (p.type in ("integer", "number") and isinstance(v, bool))
            if not ok:
                raise ToolError(f"{self.name}: argument {p.name!r} must be {p.type}, got {type(v).__name__}")
            if p.enum and v not in p.enum:
                raise ToolError(f"{self.name}: argument {p.name!r} must be one of {list(p.enum)}, got {v!r}")
            out[p.name] = v
        return out


def _parse_value(raw: str, type_: str, where: str) -> Any:
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw  # a bare word: a string
    if type_ != "string" and isinstance(value, str):
        raise WorkflowSpecError(f"{where}: default {raw!r} is not a JSON {type_}")
    if type_ == "string" and not isinstance(value, str):
        value = raw
    return value


def parse_param(text: str, where: str) -> WorkflowParam:
    head, *rest = _DESC_SEP.split(text, maxsplit=1)
    description = rest[0].strip() if rest else ""
    tokens = head.split()
    if len(tokens) < 2:
        raise WorkflowSpecError(f"{where}: expected `# mcp-param: NAME TYPE [required|optional] [default=VALUE] "
                                f"[enum=A|B] — description`, got {text!r}")
    name, type_, *opts = tokens
    if not PARAM_NAME.match(name):
        raise WorkflowSpecError(f"{where}: invalid parameter name {name!r}")
    if name in RESERVED_ARGS:
        raise WorkflowSpecError(f"{where}: {name!r} is set by the gateway and cannot be a tool parameter "
                                f"(reserved: {', '.join(RESERVED_ARGS)})")
    if type_ not in PARAM_TYPES:
        raise WorkflowSpecError(f"{where}: unknown type {type_!r}; valid: {', '.join(PARAM_TYPES)}")
    required, default, enum = False, None, None
    for opt in opts:
        if opt in ("required", "optional"):
            required = opt == "required"
        elif opt.startswith("default="):
            default = _parse_value(opt[len("default="):], type_, where)
        elif opt.startswith("enum="):
            enum = tuple(_parse_value(v, type_, where) for v in opt[len("enum="):].split("|") if v)
            if not enum:
                raise WorkflowSpecError(f"{where}: empty enum")
        else:
            raise WorkflowSpecError(f"{where}: unknown option {opt!r} (use required, optional, default=…, enum=…)")
    if required and default is not None:
        raise WorkflowSpecError(f"{where}: parameter {name!r} is required and has a default")
    return WorkflowParam(name, type_, required, description, default, enum)


def parse_tool_spec(text: str, workflow: str) -> WorkflowToolSpec | None:
    """The tool declared by a workflow file's comment lines, or None if it declares none.

    Grammar (full-line YAML comments, anywhere in the file; everything else is ignored):
        # mcp-tool: NAME [— one-line description]
        # mcp-description: more description (repeatable; lines are joined with spaces)
        # mcp-param: NAME TYPE [required|optional] [default=VALUE] [enum=A|B|C] [— description]
    TYPE is a JSON Schema type: string, integer, number, boolean, object, array. VALUE is JSON or a bare
    word (a string). `--` may stand for `—`. Raises WorkflowSpecError naming the file and line."""
    name = None
    description: list[str] = []
    params: list[WorkflowParam] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        kind, rest = m.groups()
        where = f"{workflow}.yaml line {lineno}"
        if kind == "tool":
            if name is not None:
                raise WorkflowSpecError(f"{where}: a second `# mcp-tool:` line (one tool per workflow)")
            head, *desc = _DESC_SEP.split(rest, maxsplit=1)
            name = head.strip()
            if not TOOL_NAME.match(name):
                raise WorkflowSpecError(f"{where}: invalid tool name {name!r} (letters, digits, '_', '-'; "
                                        "starting with a letter; max 64)")
            if desc and desc[0].strip():
                description.insert(0, desc[0].strip())
        elif kind == "description":
            description.append(rest)
        else:
            p = parse_param(rest, where)
            if any(q.name == p.name for q in params):
                raise WorkflowSpecError(f"{where}: parameter {p.name!r} declared twice")
            params.append(p)
    if name is None:
        if params or description:
            raise WorkflowSpecError(f"{workflow}.yaml: `# mcp-param:`/`# mcp-description:` lines without a "
                                    "`# mcp-tool: NAME` line")
        return None
    desc = " ".join(d for d in description if d) or f"Run the {workflow}.yaml workflow."
    return WorkflowToolSpec(name=name, workflow=workflow, description=desc, params=tuple(params))


def load_tool_spec(path: Path) -> WorkflowToolSpec | None:
    """Parse the declaration and check that the YAML is a workflow that can take the arguments."""
    from relayrag.engine.interpreter import load_workflow
    text = path.read_text(encoding="utf-8")
    spec = parse_tool_spec(text, path.stem)
    if spec is None:
        return None
    try:
        wf = load_workflow(text)
    except RelayragError as exc:
        raise WorkflowSpecError(f"{path.name}: {exc}") from exc
    main = wf.get("main")
    params = main.get("params") if isinstance(main, dict) else None
    if not isinstance(main, dict) or not isinstance(main.get("steps"), list):
        raise WorkflowSpecError(f"{path.name}: `main` has no steps list")
    if spec.params and (not isinstance(params, list) or len(params) != 1):
        raise WorkflowSpecError(f"{path.name}: declares tool parameters, so `main` must take exactly one "
                                "runtime-argument map, e.g. `params: [args]`")
    return spec


class WorkflowCatalog:
    """The tools declared in a folder of workflow YAMLs, re-read when a file's mtime or size changes."""

    def __init__(self, folder: Callable[[], Path], reserved: tuple[str, ...] = BUILTIN_TOOLS):
        self._folder = folder
        self._reserved = set(reserved)
        self._cache: dict[Path, tuple[tuple[int, int], WorkflowToolSpec | None, str | None]] = {}

    def scan(self) -> dict[str, WorkflowToolSpec]:
        folder = self._folder()
        tools: dict[str, WorkflowToolSpec] = {}
        seen = set()
        paths = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
        for path in paths:
            seen.add(path)
            try:
                st = path.stat()
            except OSError:
                continue
            key = (st.st_mtime_ns, st.st_size)
            cached = self._cache.get(path)
            if cached is None or cached[0] != key:
                try:
                    spec, error = load_tool_spec(path), None
                except (RelayragError, OSError, UnicodeDecodeError) as exc:
                    spec, error = None, str(exc)
                    log.warning("workflow %s is not offered as a tool: %s", path.name, error)
                self._cache[path] = (key, spec, error)
            _, spec, _ = self._cache[path]
            if spec is None:
                continue
            if spec.name in self._reserved:
                if cached is None or cached[0] != key:
                    log.warning("workflow %s declares tool %r, a built-in tool name: skipped", path.name, spec.name)
                continue
            if spec.name in tools:
                log.warning("workflow %s declares tool %r, already declared by %s.yaml: skipped",
                            path.name, spec.name, tools[spec.name].workflow)
                continue
            tools[spec.name] = spec
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        return tools

    def errors(self) -> dict[str, str]:
        """File name → why it is not offered (malformed declarations), for diagnostics."""
        return {p.name: err for p, (_, _, err) in self._cache.items() if err}


class WorkflowTool(Tool):
    """A tool backed by one workflow file; runs it with the gateway's engine."""

    spec: Annotated[Any, Field(exclude=True)] = None
    gateway: Annotated[Any, Field(exclude=True)] = None

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            ctx = get_context()
        except RuntimeError:
            ctx = None
        result = await self.gateway.run_workflow_tool(self.spec, arguments, ctx)
        return self.convert_result(result)


class WorkflowToolProvider(Provider):
    """Lists and resolves workflow tools by scanning the folder on every request (no restart needed)."""

    def __init__(self, gateway: "Gateway"):
        super().__init__()
        self.gateway = gateway

    def _tool(self, spec: WorkflowToolSpec) -> WorkflowTool:
        return WorkflowTool(name=spec.name, description=spec.description, parameters=spec.input_schema(),
                            tags={"workflow"}, meta={"relayrag": {"workflow": f"{spec.workflow}.yaml"}},
                            spec=spec, gateway=self.gateway)

    async def _list_tools(self) -> list[Tool]:
        return [self._tool(s) for s in self.gateway.catalog.scan().values()]

    async def _get_tool(self, name: str, version=None) -> Tool | None:
        spec = self.gateway.catalog.scan().get(name)
        return self._tool(spec) if spec else None


# -- the gateway --------------------------------------------------------------------------------------

class Gateway:
    """Tool implementations over the process-wide StageContext (relayrag.context.default_context)."""

    def __init__(self, *, engine: str = "embedded", ingest_roots: list[Path] | None = None,
                 restrict_ingest: bool = False):
        if engine not in ENGINES:
            raise ConfigError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")
        from relayrag.engine.local import workflows_dir
        self.engine = engine
        self.ingest_roots = [Path(r).expanduser().resolve() for r in (ingest_roots or [])]
        self.restrict_ingest = restrict_ingest
        # the folder run_workflow reads (RELAYRAG_WORKFLOWS_DIR, else the repository's workflows/)
        self.catalog = WorkflowCatalog(workflows_dir)

    @staticmethod
    def ctx():
        from relayrag.context import default_context
        return default_context()

    def require_embedded(self, workflow: str) -> None:
        """Workflow tools other than `rag` exist only in the embedded engine's workflows folder; the cloud
        engine runs the one deployed workflow, RELAYRAG_WORKFLOW (workflows/rag.yaml)."""
        if self.engine == "cloud" and workflow != "rag":
            raise ToolError(f"workflow tool {workflow!r} runs only on the embedded engine: the cloud engine runs "
                            "the deployed RELAYRAG_WORKFLOW (workflows/rag.yaml, the tools `ask` and `rag`); "
                            "run the gateway with RELAYRAG_ENGINE=embedded for the others")

    # ask --------------------------------------------------------------------------------------------
    def ask(self, question: str, collection: str, arm: str | None, on_event: Callable[[dict], None]) -> dict:
        from relayrag.engine.local import ask as run_ask
        ctx = self.ctx()
        if self.engine == "cloud":
            from relayrag.engine.cloud import ask as run_ask  # noqa: F811 - same signature, Cloud Workflows
        require_collection(ctx, collection, allow_warehouse=True)
        return result_view(run_ask(question, collection, arm=arm, on_event=on_event, ctx=ctx))

    # sql_query --------------------------------------------------------------------------------------
    def sql_query(self, question: str, collection: str) -> dict:
        """The sql stage on its own (no classify): a run record with route sql, the stage through the generic
        adapter (relayrag.stages.base.execute, trace included), and its outcome as a structured result."""
        import time

        from relayrag.sql.warehouse import list_warehouses, warehouse_record
        from relayrag.stages import STAGES
        from relayrag.stages.base import execute
        ctx = self.ctx()
        if warehouse_record(ctx.settings.home, collection) is None:
            have = ", ".join(w["collection"] for w in list_warehouses(ctx.settings.home)[:20]) or "none yet"
            raise ToolError(f"collection {collection!r} has no warehouse (collections with one: {have}); load "
                            f"tables with `relayrag warehouse load PATH --collection {collection}`")
        run_id = uuid.uuid4().hex
        ctx.docstore.create_run(run_id, {"run_id": run_id, "question": question, "collection": collection,
                                         "created_at": time.time(), "retry_count": 0, "regen_count": 0,
                                         "route": "sql", "route_method": "mcp:sql_query"})
        status, body = execute(STAGES["sql"], {"run_id": run_id}, ctx)
        if status != 200:
            raise ToolError(f"sql: {body.get('error')}")
        rec = ctx.docstore.get_run(run_id) or {}
        out: dict[str, Any] = {"run_id": run_id, "collection": collection, "question": question,
                               "answer": clip(rec.get("answer", ""), ANSWER_CHARS)}
        attempts = rec.get("sql_attempts") or []
        sctx = rec.get("sql_context") or {}
        if sctx.get("rewritten"):
            out["enhanced_question"] = sctx.get("enhanced_question")
        if not body.get("available"):
            return {**out, "status": "unavailable", "message": rec.get("answer", ""),
                    "reason": "no-llm" if body.get("method") == "no-llm" else body.get("method")}
        if not body.get("ok"):
            last = attempts[-1] if attempts else {}
            error = str(last.get("error") or "no query was generated")
            key = "refused" if body.get("refused") else "error"
            return {**out, "status": key, key: {"reason": clip(error.removeprefix("refused: "), 1000),
                                                "sql": last.get("sql"), "attempts": len(attempts)}}
        rows = rec.get("rows") or []
        shown = [[sql_cell(v) for v in r] for r in rows[:MAX_SQL_ROWS]]
        out.update({"status": "ok", "sql": rec.get("sql"), "tables": rec.get("sql_tables") or [],
                    "columns": rec.get("columns") or [], "rows": shown, "row_count": rec.get("row_count", 0),
                    "attempts": len(attempts)})
        if rec.get("row_count", 0) > len(shown):
            out["rows_omitted"] = rec["row_count"] - len(shown)
        return out

    # search -----------------------------------------------------------------------------------------
    def search(self, query: str, collection: str, k: int, arm: str, doc: str | None, page: int | None) -> dict:
        from relayrag.stages.retrieve import arm_ranking
        ctx = self.ctx()
        require_collection(ctx, collection)
        snap = ctx.snapshot(collection)
        filtered = doc is not None or page is not None
        depth = len(snap) if filtered else max(100, k)
        ranking = arm_ranking(snap, ctx.embedder, [{"text": query, "kind": "original", "weight": 1.0}], arm,
                              depth=depth)

        def keep(c: dict) -> bool:
            if page is not None and c.get("page") != page:
                return False
            if doc is not None and not (fnmatch.fnmatchcase(c.get("doc", ""), doc) or c.get("source") == doc):
                return False
            return True

        hits = [(r, s) for r, s in ranking if keep(snap.chunks[r])]
        results = []
        for rank, (row, score) in enumerate(hits[:k], 1):
            c = snap.chunks[row]
            results.append({"rank": rank, "score": round(score, 6), "doc": c["doc"], "page": c["page"],
                            "chunk_id": c["chunk_id"], "title": clip(c.get("title", ""), 200),
                            "quote": best_quote(c["text"], query)})
        return {"query": query, "collection": collection, "version": snap.version, "arm": arm,
                "filters": {k_: v for k_, v in (("doc", doc), ("page", page)) if v is not None},
                "matches": len(hits), "results": results}

    # ingest / delete --------------------------------------------------------------------------------
    def resolve_ingest_path(self, path: str) -> Path:
        if "://" in path:
            uri = urlparse(path)
            if uri.scheme.lower() != "file" or uri.netloc not in ("", "localhost"):
                raise ToolError(f"URI {path!r} is not readable by the embedded gateway (gs:// needs the cloud "
                                "backends, issue 3); pass a local path or a file:///absolute/path URI")
            path = unquote(uri.path)
        p = Path(path).expanduser()
        if not p.is_absolute():
            raise ToolError(f"path must be absolute (the server's working directory is not the client's): {path!r}")
        p = p.resolve()
        if self.restrict_ingest and not self.ingest_roots:
            raise ToolError("ingest over HTTP is disabled until the server sets RELAYRAG_MCP_INGEST_ROOTS "
                            "(comma-separated folders clients may ingest from)")
        if self.ingest_roots and not any(p == r or r in p.parents for r in self.ingest_roots):
            roots = ", ".join(str(r) for r in self.ingest_roots)
            raise ToolError(f"path {str(p)!r} is outside the folders this server may ingest from ({roots})")
        if not p.exists():
            raise ToolError(f"path does not exist on the server: {str(p)!r}")
        return p

    @staticmethod
    def count_files(root: Path) -> int:
        from relayrag.ingest.pipeline import discover
        return len(discover(root)) if root.is_dir() else 1

    def ingest(self, path: Path, collection: str,
               on_progress: Callable[[float, float | None, str], None] | None = None) -> dict:
        from relayrag.ingest.pipeline import ingest as run_ingest
        return bounded_summary(run_ingest(self.ctx(), path, collection, on_progress=on_progress).to_dict())

    def delete(self, collection: str, documents: list[str]) -> dict:
        from relayrag.ingest.pipeline import ingest as run_ingest
        ctx = self.ctx()
        require_collection(ctx, collection)
        summary = run_ingest(ctx, ".", collection, remove_paths=documents).to_dict()
        if summary["files"]["deleted"] == 0:
            names = sorted({r.get("name") or Path(r["path"]).name for r in ctx.docstore.list_files(collection)})
            shown = ", ".join(names[:20]) + (f", … ({len(names)} in all)" if len(names) > 20 else "")
            raise ToolError(f"no document matched {documents!r} in collection {collection!r}; it holds: "
                            f"{shown or 'no documents'} (pass a file name or the ingested path)")
        return bounded_summary(summary)

    # collections / runs -----------------------------------------------------------------------------
    def list_collections(self) -> dict:
        from relayrag.sql.warehouse import list_warehouses
        ctx = self.ctx()
        cols = [dict(c) for c in ctx.docstore.list_collections()]
        warehouses = {w["collection"]: w for w in list_warehouses(ctx.settings.home)}
        names = {c["name"] for c in cols}
        cols += [{"name": n} for n in warehouses if n not in names]  # warehouse only: no documents
        cols.sort(key=lambda c: c["name"])
        out = []
        for c in cols[:MAX_COLLECTIONS]:
            st = c.get("stats") or {}
            w = warehouses.get(c["name"])
            out.append({"name": c["name"], "version": c.get("current_version"), "updated_at": iso(c.get("updated_at")),
                        "files": st.get("n_files"), "documents": st.get("n_documents"), "chunks": st.get("n_chunks"),
                        "warehouse": {"tables": len(w["tables"]), "sql_config": bool(w["config"])} if w else None})
        res: dict[str, Any] = {"collections": out, "count": len(cols)}
        if len(cols) > MAX_COLLECTIONS:
            res["omitted"] = len(cols) - MAX_COLLECTIONS
        return res

    def get_run(self, run_id: str) -> dict:
        from relayrag.engine.local import build_result
        ctx = self.ctx()
        rec = ctx.docstore.get_run(run_id)
        if rec is None:
            raise ToolError(f"unknown run_id {run_id!r} (run ids are returned by ask and workflow tools)")
        trace = ctx.docstore.get_trace(run_id)
        out = result_view(build_result(ctx, run_id))
        out["stages"] = [{"name": t.get("name"), "ms": t.get("ms"), "method": t.get("method"),
                          "route": t.get("route"), "outputs": cap_json(t.get("outputs"), 2000)}
                         for t in trace[:MAX_STAGES]]
        if len(trace) > MAX_STAGES:
            out["stages_omitted"] = len(trace) - MAX_STAGES
        out["total_ms"] = round(sum(float(t.get("ms") or 0) for t in trace), 2)
        for key in ("arm_draws", "snapshot_version", "queries", "sql_context"):
            if key in rec:
                out[key] = cap_json(rec[key], 4000)
        return out

    # workflow tools ---------------------------------------------------------------------------------
    async def run_workflow_tool(self, spec: WorkflowToolSpec, arguments: dict, ctx: Context | None) -> dict:
        self.require_embedded(spec.workflow)
        args = spec.bind(arguments)
        report = progress_from_thread(ctx)

        def run() -> dict:
            from relayrag.engine.local import build_result, local_urls, run_workflow
            run_id = uuid.uuid4().hex
            if self.engine == "cloud":  # rag.yaml as deployed: stage URLs come from the deployment
                from relayrag.engine.cloud import TraceFollower, run_execution
                value = run_execution(self.ctx().settings.workflow, {**args, "run_id": run_id},
                                      poll=TraceFollower(self.ctx(), run_id, stage_progress(report)))
            else:
                value = run_workflow(spec.workflow, {**args, "run_id": run_id}, urls=local_urls(),
                                     on_event=stage_progress(report))
            out: dict[str, Any] = {"workflow": f"{spec.workflow}.yaml", "run_id": run_id, "result": cap_json(value)}
            if self.ctx().docstore.get_run(run_id) is not None:
                out["run"] = result_view(build_result(self.ctx(), run_id))
            return out
        return await in_thread(run)


def best_quote(text: str, query: str, limit: int = QUOTE_CHARS) -> str:
    """The part of a chunk that best matches the query: starts at the sentence with most query terms."""
    if len(text) <= limit:
        return text
    from relayrag.retrieval.tokenize import tokenize
    from relayrag.text import split_sentences
    terms = set(tokenize(query))
    spans = split_sentences(text)
    if not terms or not spans:
        return clip(text, limit)
    best = max(range(len(spans)), key=lambda i: (len(terms & set(tokenize(text[spans[i][0]:spans[i][1]]))), -i))
    start = spans[best][0]
    prefix = "…" if start > 0 else ""
    return prefix + clip(text[start:], limit - len(prefix))


def bounded_summary(summary: dict) -> dict:
    failed = summary.get("failed") or []
    warnings = summary.get("warnings") or []
    out = dict(summary)
    out["failed"] = [{"path": f.get("path"), "error": clip(f.get("error"), 500)} for f in failed[:MAX_FAILED]]
    out["warnings"] = [{"path": w.get("path"), "warning": clip(w.get("warning"), 300)} for w in warnings[:MAX_FAILED]]
    if len(failed) > MAX_FAILED:
        out["failed_omitted"] = len(failed) - MAX_FAILED
    if len(warnings) > MAX_FAILED:
        out["warnings_omitted"] = len(warnings) - MAX_FAILED
    return out


# -- auth ----------------------------------------------------------------------------------------------

class GatewayTokenVerifier(TokenVerifier):
    """Static bearer tokens (constant-time comparison), then an optional JWT verifier."""

    def __init__(self, tokens: list[str], jwt: TokenVerifier | None = None):
        super().__init__()
        self._tokens = [t.encode("utf-8") for t in tokens if t]
        self._jwt = jwt

    async def verify_token(self, token: str) -> AccessToken | None:
        given = (token or "").encode("utf-8")
        match = None
        for i, t in enumerate(self._tokens):  # no early exit: timing does not reveal which token matched
            if hmac.compare_digest(given, t) and match is None:
                match = i
        if match is not None:
            return AccessToken(token=token, client_id=f"static-token-{match + 1}", scopes=[], expires_at=None)
        if self._jwt is not None:
            return await self._jwt.verify_token(token)
        return None


def split_list(value: str) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def build_auth(settings) -> GatewayTokenVerifier | None:
    """The HTTP auth from settings (RELAYRAG_MCP_TOKENS, RELAYRAG_MCP_JWT_*), or None if none is configured."""
    tokens = split_list(settings.mcp_tokens)
    jwt = None
    if settings.mcp_jwt_public_key:
        from fastmcp.server.auth.providers.jwt import JWTVerifier
        jwt = JWTVerifier(public_key=settings.mcp_jwt_public_key, issuer=settings.mcp_jwt_issuer or None,
                          audience=settings.mcp_jwt_audience or None, algorithm=settings.mcp_jwt_algorithm or None)
    if not tokens and jwt is None:
        return None
    return GatewayTokenVerifier(tokens, jwt)


# -- the server ----------------------------------------------------------------------------------------

def build_server(*, engine: str | None = None, http: bool = False, auth: TokenVerifier | None = None,
                 settings=None) -> FastMCP:
    """The FastMCP server. `http=True` restricts ingest to RELAYRAG_MCP_INGEST_ROOTS (required there);
    `auth` is only enforced on HTTP transports."""
    from relayrag.settings import load_settings
    s = settings or load_settings()
    gw = Gateway(engine=engine or s.engine, ingest_roots=[Path(r) for r in split_list(s.mcp_ingest_roots)],
                 restrict_ingest=http)
    mcp = FastMCP("relayrag", instructions=INSTRUCTIONS, auth=auth, providers=[WorkflowToolProvider(gw)],
                  mask_error_details=False)
    mcp.gateway = gw  # for tests and hosts

    @mcp.tool(annotations={"readOnlyHint": False, "openWorldHint": False})
    async def ask(
        question: Annotated[str, Field(description="The question, in any language.", min_length=1, max_length=4000)],
        collection: CollectionName,
        arm: Annotated[ArmName | None, Field(description="Force a retrieval arm; default: the per-collection "
                                                         "bandit chooses.")] = None,
        ctx: Context = None,
    ) -> dict:
        """Answer a question from a collection with the RAG workflow (workflows/rag.yaml): classify, expand,
        retrieve, rerank, grade, generate, hallucination check. Returns the answer, citations (document,
        page, a short quote), `grounded` (every sentence supported by its cited chunk), `refused`, the
        retrieval arm, per-stage timings and the run_id (see get_run)."""
        report = progress_from_thread(ctx)
        return await in_thread(gw.ask, question, collection, arm, stage_progress(report))

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def search(
        query: Annotated[str, Field(description="What to look for (a question or keywords).", min_length=1,
                                    max_length=4000)],
        collection: CollectionName,
        k: Annotated[int, Field(description=f"How many chunks to return (1-{MAX_SEARCH_K}).", ge=1,
                                le=MAX_SEARCH_K)] = 5,
        arm: Annotated[ArmName, Field(description="Retrieval method: dense (embeddings), bm25 (keywords) or "
                                                  "hybrid (reciprocal-rank fusion of both).")] = "hybrid",
        doc: Annotated[str | None, Field(description="Only chunks of this document: a file name as cited "
                                                     "(e.g. report.pdf), a glob (*.pdf) or the ingested path.",
                                         max_length=1000)] = None,
        page: Annotated[int | None, Field(description="Only chunks from this page (1-based).", ge=1)] = None,
    ) -> dict:
        """Retrieval only (no answer generation, no LLM): the top-k chunks of a collection for a query, best
        first, each with its fused rank score, document, page, chunk_id and a short quote. Optional filters
        by document name and page."""
        return await in_thread(gw.search, query, collection, k, arm, doc, page)

    @mcp.tool(annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                           "openWorldHint": False})
    async def ingest(
        path: Annotated[str, Field(description="Absolute path on the server (or file:// URI) of a file or folder "
                                               "(walked recursively): PDF, Markdown, text, HTML, or a BEIR "
                                               "corpus.jsonl.", min_length=1, max_length=4096)],
        collection: CollectionName,
        ctx: Context = None,
    ) -> dict:
        """Ingest a file or folder into a collection incrementally: unchanged files are skipped, embeddings are
        reused, files that disappeared from the folder are removed. Returns the summary: files ingested /
        skipped / deleted / failed, per-file errors (a bad file never blocks the others), chunks embedded and
        total, and the new index version. Sends progress notifications while it runs."""
        root = gw.resolve_ingest_path(path)
        n_files = await in_thread(gw.count_files, root)
        total = float(n_files + 1)  # the pipeline counts files + 1 (embedding and snapshot)
        if ctx is not None:
            await ctx.report_progress(0, total, f"ingesting {n_files} file(s) from {root}")
        failure: ToolError | None = None
        try:
            summary = await in_thread(gw.ingest, root, collection, progress_from_thread(ctx))
        except ToolError as exc:
            failure = exc
        if failure is not None:
            raise failure
        if ctx is not None:
            f = summary["files"]
            await ctx.report_progress(total, total, f"done: {f['ingested']} ingested, {f['skipped']} unchanged, "
                                                    f"{f['deleted']} deleted, {f['failed']} failed")
        return summary

    @mcp.tool(annotations={"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True,
                           "openWorldHint": False})
    async def delete_document(
        collection: CollectionName,
        documents: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(
            description="Documents to remove: file names as cited (e.g. report.pdf) or ingested paths "
                        "(a folder path removes everything under it).", min_length=1, max_length=100)],
    ) -> dict:
        """Remove documents from a collection: their chunks, BM25 terms, vectors and ingestion records, in a new
        index version. Returns the summary; names that matched nothing are listed under `failed`."""
        return await in_thread(gw.delete, collection, documents)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def list_collections() -> dict:
        """The collections with their current index version, last update, and file / document / chunk counts;
        `warehouse` gives a collection's table count and whether it has an SQL config (null: no tables).
        Collections with only a warehouse are listed with a null version."""
        return await in_thread(gw.list_collections)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def sql_query(
        question: Annotated[str, Field(description="A question about the collection's tables, in any language "
                                                   "(e.g. 'How many customers are in Brazil?').",
                                       min_length=1, max_length=4000)],
        collection: CollectionName,
    ) -> dict:
        """Answer a question from a collection's warehouse with ONE read-only SELECT written by the configured
        LLM (temperature 0, schema JSON + the collection's glossary, filter sets and similar examples) and
        checked by the SQL guard before it runs. `status` says what happened: `ok` gives `sql`, `tables`,
        `columns`, `rows` (at most 50; `rows_omitted` counts the rest), `row_count` and a one-
        or two-sentence `answer` in the question's language; `refused` gives the guard's reason (nothing
        ran); `error` the database error after one repair round; `unavailable` says how to configure an LLM.
        Also returns the run_id (see get_run) and, when glossary terms were mapped, `enhanced_question`."""
        return await in_thread(gw.sql_query, question, collection)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def get_run(
        run_id: Annotated[str, Field(description="A run_id returned by ask or a workflow tool.", min_length=1,
                                     max_length=200)],
    ) -> dict:
        """The record and trace of a run: question, route, answer, citations, retrieval arm (and the bandit's
        draws), reward, grounded / refused, retry and regeneration counts, and each stage with its method,
        route, milliseconds and outputs."""
        return await in_thread(gw.get_run, run_id)

    return mcp


class _ProtocolStdout:
    """`sys.stdout` while serving stdio: text writes (print) go to stderr; `.buffer`, which the MCP SDK wraps
    when the stdio transport starts, is the real stdout."""

    def __init__(self, buffer, text_sink):
        self.buffer = buffer
        self._sink = text_sink

    def write(self, s: str) -> int:
        return self._sink.write(s)

    def flush(self) -> None:
        self._sink.flush()

    def __getattr__(self, name: str):
        return getattr(self._sink, name)


@contextlib.contextmanager
def stdout_reserved_for_protocol():
    """Keep stdout for JSON-RPC only: the protocol gets a private duplicate of fd 1, fd 1 itself points at
    stderr (so stray output of C libraries and subprocesses lands there) and Python-level prints go to
    stderr too. Restored on exit."""
    sys.stdout.flush()
    saved, restore_fd, proto_fd = sys.stdout, os.dup(1), os.dup(1)
    os.dup2(2, 1)
    proto = os.fdopen(proto_fd, "wb")  # the SDK may close it when its wrapper is collected
    sys.stdout = _ProtocolStdout(proto, sys.stderr)
    try:
        yield proto
    finally:
        sys.stdout = saved
        with contextlib.suppress(OSError, ValueError):
            proto.close()
        os.dup2(restore_fd, 1)
        os.close(restore_fd)


def is_loopback(host: str) -> bool:
    """True for a loopback bind address: localhost, 127.0.0.0/8, ::1 (brackets allowed). 0.0.0.0, ::, other
    names and addresses are not."""
    h = host.strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = 8765, path: str = "/mcp",
          no_auth: bool = False, engine: str | None = None, log_level: str = "WARNING") -> None:
    """Run the gateway: stdio (stdout carries only JSON-RPC, logs go to stderr) or streamable HTTP."""
    from relayrag.settings import load_settings
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    s = load_settings()
    if not http:
        server = build_server(engine=engine, settings=s)
        with stdout_reserved_for_protocol():
            server.run(transport="stdio", show_banner=False)
        return
    auth = build_auth(s)
    if no_auth and not is_loopback(host):
        raise ConfigError(f"refusing --no-auth on --host {host}, which is not a loopback address: without "
                          f"authentication anyone who can reach port {port} of this machine could ask, ingest and "
                          "delete documents. --no-auth is only for a loopback "
                          "address (127.0.0.1, ::1, localhost); to serve other hosts set RELAYRAG_MCP_TOKENS "
                          "(comma-separated bearer tokens) or RELAYRAG_MCP_JWT_PUBLIC_KEY")
    if no_auth:
        bar = "!" * 78
        sys.stderr.write(f"\n{bar}\n!! relayrag mcp --no-auth: the HTTP endpoint accepts EVERY request without a "
                         f"token.\n!! Anyone who can reach {host}:{port} can read, ingest and delete documents.\n"
                         f"!! Never do this on a shared network; set RELAYRAG_MCP_TOKENS instead.\n{bar}\n\n")
        auth = None
    elif auth is None:
        raise ConfigError("refusing to serve MCP over HTTP without authentication: set RELAYRAG_MCP_TOKENS "
                          "(comma-separated bearer tokens) or RELAYRAG_MCP_JWT_PUBLIC_KEY, or pass --no-auth "
                          "(unsafe) for a throwaway local test")
    if not is_loopback(host):
        log.warning("listening on %s: bearer tokens travel in clear text unless a TLS proxy is in front", host)
    sys.stderr.write(f"relayrag MCP gateway on http://{host}:{port}{path} "
                     f"({'NO AUTH' if auth is None else 'bearer-token auth'})\n")
    build_server(engine=engine, http=True, auth=auth, settings=s).run(
        transport="http", host=host, port=port, path=path, show_banner=False, log_level=log_level.lower())
