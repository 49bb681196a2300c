"""MCP gateway: relayrag's tools for agent clients (FastMCP), over stdio or authenticated streamable HTTP.

Built-in tools: `ask`, `search`, `ingest`, `delete_document`, `list_collections`, `get_run`, `feedback` (a
person's verdict on a run: relayrag.feedback). On top of these,
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
import json
import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Literal

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import TokenVerifier
from fastmcp.tools.tool import ToolResult
from fastmcp.utilities.types import Image
from mcp.types import ImageContent, TextContent
from pydantic import Field

from relayrag.errors import ConfigError
from relayrag.mcp.auth import build_auth, is_loopback, split_list
from relayrag.mcp.tools import Gateway, in_thread, progress_from_thread, stage_progress
from relayrag.mcp.views import MAX_SEARCH_K
from relayrag.mcp.workflow_tools import WorkflowToolProvider
from relayrag.naming import MAX_QUESTION_CHARS
from relayrag.naming import COLLECTION_PATTERN

log = logging.getLogger("relayrag.mcp")

CollectionName = Annotated[str, Field(
    description="Collection name (letters, digits, '_', '-', '.'; up to 64 characters), as given to ingest.",
    pattern=COLLECTION_PATTERN)]
ArmName = Literal["dense", "bm25", "hybrid"]
Filters = Annotated[list[Annotated[str, Field(min_length=3, max_length=300)]] | None, Field(
    description="Metadata filters, all must hold: 'field=value' ('a|b' any of; a list field: contains), "
                "'field>=value', 'field<=value', 'field=from..to' (dates, numbers), 'valid_on=YYYY-MM-DD', "
                "'include_expired=true'. By default documents whose valid_until is past are left out; documents "
                "without validity dates are kept and their citations say so. Fields: list_documents.",
    max_length=20)]

INSTRUCTIONS = """relayrag answers questions from ingested documents with citations (document and page) and a
grounding check. Typical use: list_collections → ask (or search for raw ranked chunks) → get_run for the
trace of a run. list_documents shows a collection's documents with their metadata and validity; ask and
search take metadata `filters` (expired documents are left out unless filters include them). ingest adds a
file or folder to a collection; delete_document removes documents.
Collections with a warehouse (tables) also answer sql_query: one guarded read-only SELECT, its rows and
a sentence; ask routes table questions there too.
After an answer, offer the user to rate it: feedback(run_id, up|down, reason, correct answer or document)
records their verdict (one per run and user; a new one replaces it) and teaches the retrieval bandit.
Workflow tools (from the server's workflows folder) may also be listed."""


# -- the server ----------------------------------------------------------------------------------------

async def with_images(gw: Gateway, result: dict) -> ToolResult | dict:
    """`result` as the tool's structured content, plus one MCP image content block (PNG) per page thumbnail it
    shows (citations, pages found by their image, search hits; at most views.MAX_IMAGES) — the multimodal answer
    when a page image hits. A result without page images is returned as it is."""
    images = await in_thread(gw.images, result)
    if not images:
        return result
    blocks: list[TextContent | ImageContent] = [TextContent(type="text", text=json.dumps(result, ensure_ascii=False))]
    blocks += [Image(data=png, format="png").to_image_content() for png in images]
    return ToolResult(content=blocks, structured_content=result)


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
    mcp.gateway = gw  # type: ignore[attr-defined]  # for tests and hosts

    @mcp.tool(annotations={"readOnlyHint": False, "openWorldHint": False})
    async def ask(
        question: Annotated[str, Field(description="The question, in any language.", min_length=1,
                                       max_length=MAX_QUESTION_CHARS)],
        collection: CollectionName,
        arm: Annotated[ArmName | None, Field(description="Force a retrieval arm; default: the per-collection "
                                                         "bandit chooses.")] = None,
        filters: Filters = None,
        ctx: Context = None,  # type: ignore[assignment]  # fastmcp injects it by annotation
    ) -> dict:
        """Answer a question from a collection with the RAG workflow (workflows/rag.yaml): classify, expand,
        retrieve, rerank, grade, generate, hallucination check. Returns the answer, citations (document,
        page, a short quote, the document's title and, with metadata, its validity and shown fields),
        `notes` (unknown validity, needs review), `grounded` (true only for an answer from the documents whose
        every sentence its cited chunk supports; false for a "not found" and small talk), `found` (false when the documents
        do not answer: the answer says so in the question's language), `refused`, the retrieval arm,
        per-stage timings and the run_id (see get_run)."""
        report = progress_from_thread(ctx)
        result = await in_thread(gw.ask, question, collection, arm, stage_progress(report), filters)
        return await with_images(gw, result)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def search(
        query: Annotated[str, Field(description="What to look for (a question or keywords).", min_length=1,
                                    max_length=MAX_QUESTION_CHARS)],
        collection: CollectionName,
        k: Annotated[int, Field(description=f"How many chunks to return (1-{MAX_SEARCH_K}).", ge=1,
                                le=MAX_SEARCH_K)] = 5,
        arm: Annotated[ArmName, Field(description="Retrieval method: dense (embeddings), bm25 (keywords) or "
                                                  "hybrid (reciprocal-rank fusion of both).")] = "hybrid",
        doc: Annotated[str | None, Field(description="Only chunks of this document: a file name as cited "
                                                     "(e.g. report.pdf), a glob (*.pdf) or the ingested path.",
                                         max_length=1000)] = None,
        page: Annotated[int | None, Field(description="Only chunks from this page (1-based).", ge=1)] = None,
        filters: Filters = None,
    ) -> dict:
        """Retrieval only (no answer generation, no LLM): the top-k chunks of a collection for a query, best
        first, each with its fused rank score, document, page, chunk_id and a short quote. Optional filters
        by document name, page and metadata (applied inside retrieval, before the top-k)."""
        return await with_images(gw, await in_thread(gw.search, query, collection, k, arm, doc, page, filters))

    @mcp.tool(annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                           "openWorldHint": False})
    async def ingest(
        path: Annotated[str, Field(description="Absolute path on the server (or file:// URI) of a file or folder "
                                               "(walked recursively): PDF, Markdown, text, HTML, or a BEIR "
                                               "corpus.jsonl.", min_length=1, max_length=4096)],
        collection: CollectionName,
        ctx: Context = None,  # type: ignore[assignment]  # fastmcp injects it by annotation
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
    async def list_documents(collection: CollectionName) -> dict:
        """The documents of a collection with their title, metadata and validity state (current, expiring,
        expired, not yet valid, unknown; `needs_review` beside it), and the collection's metadata fields
        (type, filterable, shown) for building filters."""
        return await in_thread(gw.list_documents, collection)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def sql_query(
        question: Annotated[str, Field(description="A question about the collection's tables, in any language "
                                                   "(e.g. 'How many customers are in Brazil?').",
                                       min_length=1, max_length=MAX_QUESTION_CHARS)],
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
    async def classify(
        question: Annotated[str, Field(description="The question, in any language.", min_length=1,
                                       max_length=MAX_QUESTION_CHARS)],
        collection: CollectionName,
    ) -> dict:
        """Where relayrag would route a question, without an LLM and without answering it (the same no-LLM
        classifier `ask` runs): `rag` (the collection's documents: use ask or search), `visual` (what a figure,
        chart, photo or scanned page shows: use ask, which searches pages by their image when a page-image model
        is configured, else answers from text), `sql` (its tables: use sql_query) or `chitchat` (small
        talk: no tool needed); with the classifier's confidence and whether the collection has documents and a
        warehouse. Nothing is recorded."""
        return await in_thread(gw.classify, question, collection)

    @mcp.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    async def get_run(
        run_id: Annotated[str, Field(description="A run_id returned by ask or a workflow tool.", min_length=1,
                                     max_length=200)],
    ) -> dict:
        """The record and trace of a run: question, route, answer, citations, retrieval arm (and the bandit's
        draws), reward, grounded / refused, retry and regeneration counts, and each stage with its method,
        route, milliseconds and outputs."""
        return await in_thread(gw.get_run, run_id)

    @mcp.tool(annotations={"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                           "openWorldHint": False})
    async def feedback(
        run_id: Annotated[str, Field(description="The run_id of the answer being rated (from ask).", min_length=1,
                                     max_length=200)],
        verdict: Annotated[Literal["up", "down"], Field(description="up: the answer was right; down: it was not.")],
        reason: Annotated[Literal["wrong", "not_answered", "wrong_source", "outdated", "other"] | None, Field(
            description="With down: why.")] = None,
        answer: Annotated[str | None, Field(description="With down: the correct answer, as the user gave it "
                                                        "(short: the key fact).", max_length=2000)] = None,
        doc: Annotated[str | None, Field(description="With down: the document that answers.", max_length=512)] = None,
        page: Annotated[int | None, Field(description="With doc: its 1-based page.", ge=1)] = None,
    ) -> dict:
        """Record the user's verdict on an answer: one per run and user (a new one replaces the earlier one
        and its effect). up rewards the retrieval arm the run used; down with reason wrong / wrong_source (or
        none) punishes it; not_answered on a refusal does not; a down with the correct answer or document
        becomes a test case (`relayrag eval export-feedback`). Returns the stored verdict."""
        from fastmcp.server.dependencies import get_access_token
        return await in_thread(gw.feedback, run_id, verdict, get_access_token(), reason, answer, doc, page)

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

class CapLogRecords(logging.Filter):
    """Log a record's size and a prefix instead of the whole text once it exceeds `max_chars` (message and
    traceback together): a rejected 1 MB tool argument was logged in full, about 29,000 lines."""

    def __init__(self, max_chars: int = 4000, prefix_chars: int = 500):
        super().__init__()
        self.max_chars, self.prefix_chars = max_chars, prefix_chars

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: leave the record to logging's own handling
            return True
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        extra = record.exc_text or ""
        if len(text) + len(extra) <= self.max_chars:
            return True
        whole = text + ("\n" + extra if extra else "")
        head = whole[: self.prefix_chars].replace("\n", "\\n")
        record.msg = f"{head}… [{len(whole):,} characters in {whole.count(chr(10)) + 1:,} lines; the rest not logged]"
        record.args, record.exc_info, record.exc_text = (), None, None
        return True


_capped_factory = False


def install_log_caps() -> None:
    """Cap every log record of this process (CapLogRecords, applied in the record factory, so handlers that
    uvicorn or FastMCP add later are covered too). Idempotent."""
    global _capped_factory
    if _capped_factory:
        return
    cap, base = CapLogRecords(), logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        record = base(*args, **kwargs)
        cap.filter(record)
        return record
    logging.setLogRecordFactory(factory)
    _capped_factory = True


def serve(*, http: bool = False, host: str = "127.0.0.1", port: int = 8765, path: str = "/mcp",
          no_auth: bool = False, engine: str | None = None, log_level: str = "WARNING") -> None:
    """Run the gateway: stdio (stdout carries only JSON-RPC, logs go to stderr) or streamable HTTP."""
    from relayrag.settings import load_settings
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_log_caps()
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
    # stateless streamable HTTP: no session lives in this process's memory, so any instance answers any request
    # (Cloud Run scales the gateway out and to zero without affinity for Mcp-Session-Id; modelcontextprotocol/
    # python-sdk "stateless_http" for multi-replica servers). Progress notifications still stream within a call.
    build_server(engine=engine, http=True, auth=auth, settings=s).run(
        transport="http", host=host, port=port, path=path, show_banner=False, log_level=log_level.lower(),
        stateless_http=True)
