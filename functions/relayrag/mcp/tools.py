"""The built-in tools' implementations (`Gateway`) over the process-wide StageContext, and the error and
thread helpers every tool uses."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlparse

import anyio
import anyio.from_thread
import anyio.to_thread
from fastmcp import Context
from fastmcp.exceptions import ToolError

from relayrag.errors import ConfigError, NotFoundError, RelayragError
from relayrag.mcp.views import (
    ANSWER_CHARS,
    MAX_COLLECTIONS,
    MAX_DOCUMENTS,
    MAX_SQL_ROWS,
    MAX_STAGES,
    best_quote,
    bounded_summary,
    cap_json,
    clip,
    iso,
    result_view,
    sql_cell,
    thumbnails,
)
from relayrag.mcp.workflow_tools import WorkflowCatalog, WorkflowToolSpec
from relayrag.service import Service

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
        result = event.get("result")
        r = result if isinstance(result, dict) else {}
        ms = r.get("ms", event.get("ms", 0)) or 0
        report(count, None, f"{event.get('step')} done ({float(ms):.0f} ms, {r.get('method') or 'step'})")
    return on_event

class Gateway:
    """The built-in tools over the service layer (relayrag.service.Service on the process-wide context):
    arguments checked for MCP (paths, roots), results bounded for clients (relayrag.mcp.views)."""

    def __init__(self, *, engine: str = "embedded", ingest_roots: list[Path] | None = None,
                 restrict_ingest: bool = False):
        if engine not in ENGINES:
            raise ConfigError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")
        self.engine = engine
        self.service = Service(engine=engine)
        self.ingest_roots = [Path(r).expanduser().resolve() for r in (ingest_roots or [])]
        self.restrict_ingest = restrict_ingest
        # the folder run_workflow reads (RELAYRAG_WORKFLOWS_DIR, else the repository's or the package's workflows/)
        self.catalog = WorkflowCatalog(self.service.workflows_dir)

    def require_embedded(self, workflow: str) -> None:
        """Workflow tools other than `rag` exist only in the embedded engine's workflows folder; the cloud
        engine runs the one deployed workflow, RELAYRAG_WORKFLOW (workflows/rag.yaml)."""
        if self.engine == "cloud" and workflow != "rag":
            raise ToolError(f"workflow tool {workflow!r} runs only on the embedded engine: the cloud engine runs "
                            "the deployed RELAYRAG_WORKFLOW (workflows/rag.yaml, the tools `ask` and `rag`); "
                            "run the gateway with RELAYRAG_ENGINE=embedded for the others")

    # ask --------------------------------------------------------------------------------------------
    def ask(self, question: str, collection: str, arm: str | None, on_event: Callable[[dict], None],
            filters: list[str] | None = None) -> dict:
        self.service.require_collection(collection, allow_warehouse=True)
        return result_view(self.service.ask(question, collection, arm=arm, on_event=on_event,
                                            filters=filters).to_dict())

    def images(self, result: dict) -> list[bytes]:
        """PNG bytes of the page thumbnails a result shows (views.thumbnails); a thumbnail that is gone (its
        document was deleted meanwhile) is left out."""
        out = []
        for ref in thumbnails(result):
            try:
                out.append(self.service.page_image(ref))
            except NotFoundError:
                continue
        return out

    # feedback ---------------------------------------------------------------------------------------
    def identity(self, access) -> tuple[str, bool]:
        """(identity, admin) of an MCP caller: a bearer token's hash (static tokens) or the JWT's client id;
        an admin when the token is in RELAYRAG_ADMIN_TOKENS. Without a token (stdio, or --no-auth on
        loopback) the local user, an admin."""
        from relayrag.feedback import is_admin_token, local_identity, token_identity
        if access is None:
            return local_identity(), True
        client = str(getattr(access, "client_id", "") or "")
        ident = token_identity("mcp", access.token) if client.startswith("static-token-") or not client \
            else f"mcp:{client}"
        return ident, is_admin_token(self.service.settings, access.token)

    def feedback(self, run_id: str, verdict: str, access, reason: str | None = None, answer: str | None = None,
                 doc: str | None = None, page: int | None = None) -> dict:
        from relayrag.feedback import give
        identity, _ = self.identity(access)
        entry = give(self.service, run_id, verdict, identity, reason=reason, answer=answer, doc=doc, page=page)
        return {k: entry[k] for k in ("run_id", "collection", "verdict", "reason", "answer", "doc", "page", "arm",
                                      "bandit", "replaced") if k in entry}

    # sql_query --------------------------------------------------------------------------------------
    def sql_query(self, question: str, collection: str) -> dict:
        """The sql stage on its own (no classify), as the service runs it; rows and texts bounded."""
        r = self.service.sql_query(question, collection)
        out: dict[str, Any] = {"run_id": r.run_id, "collection": r.collection, "question": r.question,
                               "answer": clip(r.answer, ANSWER_CHARS)}
        if r.enhanced_question is not None:
            out["enhanced_question"] = r.enhanced_question
        if r.status == "unavailable":
            return {**out, "status": r.status, "message": r.message, "reason": r.reason}
        if r.status in ("refused", "error"):
            return {**out, "status": r.status, r.status: {"reason": clip(r.error, 1000), "sql": r.sql,
                                                          "attempts": r.attempts}}
        shown = [[sql_cell(v) for v in row] for row in r.rows[:MAX_SQL_ROWS]]
        out.update({"status": "ok", "sql": r.sql, "tables": r.tables, "columns": r.columns, "rows": shown,
                    "row_count": r.row_count, "attempts": r.attempts})
        if r.row_count > len(shown):
            out["rows_omitted"] = r.row_count - len(shown)
        return out

    # classify ---------------------------------------------------------------------------------------
    def classify(self, question: str, collection: str) -> dict:
        return self.service.route(question, collection).model_dump()

    # search -----------------------------------------------------------------------------------------
    def search(self, query: str, collection: str, k: int, arm: str, doc: str | None, page: int | None,
               filters: list[str] | None = None) -> dict:
        r = self.service.search(query, collection, k=k, arm=arm, doc=doc, page=page, filters=filters)
        results = [{"rank": h.rank, "score": h.score, "doc": h.doc, "page": h.page, "chunk_id": h.chunk_id,
                    "title": clip(h.title, 200), "quote": best_quote(h.text, query),
                    **{k: v for k, v in (("image", h.image), ("thumbnail", h.thumbnail)) if v},
                    **({"validity": h.validity, "metadata": cap_json(h.metadata, 2000)}
                       if h.metadata is not None else {})} for h in r.hits]
        return {"query": r.query, "collection": r.collection, "version": r.version, "arm": r.arm,
                "filters": r.filters, "matches": r.matches, "results": results}

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

    def count_files(self, root: Path) -> int:
        return self.service.count_files(root)

    def ingest(self, path: Path, collection: str,
               on_progress: Callable[[float, float | None, str], None] | None = None) -> dict:
        # with ingest roots, every file is resolved and read only if its real path is inside them (a link in a
        # root to /etc/passwd is refused); without roots (stdio), links are skipped as on the CLI
        return bounded_summary(self.service.ingest(path, collection, on_progress=on_progress,
                                                   roots=self.ingest_roots or None).to_dict())

    def delete(self, collection: str, documents: list[str]) -> dict:
        summary = self.service.delete(collection, documents, require_match=True).to_dict()
        for key in ("deleted_paths", "files_left"):  # the tool's result is the ingest summary
            summary.pop(key, None)
        return bounded_summary(summary)

    # collections / runs -----------------------------------------------------------------------------
    def list_collections(self) -> dict:
        cols = self.service.list_collections()
        out = []
        for c in cols[:MAX_COLLECTIONS]:
            st, w = c.stats, c.warehouse
            out.append({"name": c.name, "version": c.current_version,
                        "updated_at": iso(getattr(c, "updated_at", None)),
                        "files": st.get("n_files"), "documents": st.get("n_documents"), "chunks": st.get("n_chunks"),
                        "warehouse": {"tables": len(w.tables), "sql_config": bool(w.config)} if w else None})
        res: dict[str, Any] = {"collections": out, "count": len(cols)}
        if len(cols) > MAX_COLLECTIONS:
            res["omitted"] = len(cols) - MAX_COLLECTIONS
        return res

    def list_documents(self, collection: str) -> dict:
        docs = self.service.list_documents(collection)
        schema = self.service.collection_schema(collection)
        from relayrag.metadata import BUILTIN
        specs = schema.specs() if schema is not None else BUILTIN
        shown = docs[:MAX_DOCUMENTS]
        out: dict[str, Any] = {
            "collection": collection, "count": len(docs),
            "fields": {n: {"type": f.type, "filterable": f.filterable, "shown": f.shown,
                           **({"values": f.values} if f.values else {})} for n, f in specs.items()},
            "documents": [{"name": d["name"], "title": clip(d["title"], 200), "state": d["state"],
                           "validity": d["validity"], "needs_review": d["needs_review"],
                           "metadata": cap_json(d["metadata"], 2000), "chunks": d["n_chunks"],
                           "ingested_at": iso(d["ingested_at"])} for d in shown]}
        if len(docs) > len(shown):
            out["omitted"] = len(docs) - len(shown)
        return out

    def get_run(self, run_id: str) -> dict:
        try:
            detail = self.service.get_run(run_id)
        except NotFoundError:
            raise ToolError(f"unknown run_id {run_id!r} (run ids are returned by ask and workflow tools)") from None
        rec, trace = detail.record, detail.trace
        out = result_view(detail.result.to_dict())
        out["stages"] = [{"name": t.get("name"), "ms": t.get("ms"), "method": t.get("method"),
                          "route": t.get("route"), "outputs": cap_json(t.get("outputs"), 2000)}
                         for t in trace[:MAX_STAGES]]
        if len(trace) > MAX_STAGES:
            out["stages_omitted"] = len(trace) - MAX_STAGES
        out["total_ms"] = round(sum(float(t.get("ms") or 0) for t in trace), 2)
        for key in ("arm_draws", "snapshot_version", "queries", "sql_context", "filters_applied"):
            if key in rec:
                out[key] = cap_json(rec[key], 4000)
        return out

    # workflow tools ---------------------------------------------------------------------------------
    async def run_workflow_tool(self, spec: WorkflowToolSpec, arguments: dict, ctx: Context | None) -> dict:
        self.require_embedded(spec.workflow)
        args = spec.bind(arguments)
        report = progress_from_thread(ctx)

        def run() -> dict:
            r = self.service.run_workflow(spec.workflow, args, on_event=stage_progress(report))
            out: dict[str, Any] = {"workflow": r.workflow, "run_id": r.run_id, "result": cap_json(r.value)}
            if r.result is not None:
                out["run"] = result_view(r.result.to_dict())
            return out
        return await in_thread(run)
