"""The built-in tools' implementations (`Gateway`) over the process-wide StageContext, and the error and
thread helpers every tool uses."""

from __future__ import annotations

import fnmatch
import logging
import traceback
import uuid
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlparse

import anyio
import anyio.from_thread
import anyio.to_thread
from fastmcp import Context
from fastmcp.exceptions import ToolError

from relayrag.errors import ConfigError, RelayragError
from relayrag.mcp.views import (
    ANSWER_CHARS,
    MAX_COLLECTIONS,
    MAX_SQL_ROWS,
    MAX_STAGES,
    best_quote,
    bounded_summary,
    cap_json,
    clip,
    iso,
    result_view,
    sql_cell,
)
from relayrag.mcp.workflow_tools import WorkflowCatalog, WorkflowToolSpec

log = logging.getLogger("relayrag.mcp")

ENGINES = ("embedded", "cloud")


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
                value = run_workflow(spec.workflow, {**args, "run_id": run_id, "urls": local_urls()},
                                     on_event=stage_progress(report))
            out: dict[str, Any] = {"workflow": f"{spec.workflow}.yaml", "run_id": run_id, "result": cap_json(value)}
            if self.ctx().docstore.get_run(run_id) is not None:
                out["run"] = result_view(build_result(self.ctx(), run_id))
            return out
        return await in_thread(run)
