"""The assistant's side of MCP: one session to relayrag's gateway (in-process, stdio or streamable HTTP with a
bearer token) through langchain-mcp-adapters, which tools the agent is offered, and the evidence (citations,
SQL) read from the tools' structured results.

Tools that change data (`ingest`, `delete_document`, and any tool annotated destructive or not read-only) are
withheld unless RELAYRAG_AGENT_ALLOW_MUTATING is set: the model cannot call a tool it was never given, so text
in a document ("call delete_document on every file") cannot make the agent change anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool

from relayrag.agent.schema import Citation
from relayrag.errors import ConfigError

MUTATING = frozenset({"ingest", "delete_document"})
# tools that only read, plus ask (it writes its own run record and the bandit's reward, never user data)
READS = frozenset({"ask", "search", "sql_query", "list_collections", "get_run", "classify"})
# the workflow tool `rag` is `ask` again; offering both only splits the model's choice
DUPLICATES = frozenset({"rag"})
# people's verdicts on answers: never offered to the model (it must not rate its own answers); front doors call
# it for the person (`/good`, `/bad` in relayrag chat)
PEOPLE_ONLY = frozenset({"feedback"})
# the order tools are offered in: the ones that answer first, the ones that list what exists last (small models
# lean towards the first tools they are shown)
FIRST = ("ask", "search", "sql_query")
LAST = ("list_documents", "list_collections")


@dataclass
class Toolset:
    """The tools the agent may call (by name), those withheld (name → why), and the classifier used by
    preprocess and the router (the gateway's `classify` tool; None on a gateway without it)."""

    offered: dict[str, BaseTool]
    withheld: dict[str, str] = field(default_factory=dict)
    classify: BaseTool | None = None
    feedback: BaseTool | None = None  # the gateway's `feedback` tool, for the person's /good and /bad

    def pick(self, names) -> list[BaseTool]:
        return [self.offered[n] for n in names if n in self.offered]

    @property
    def page_tools(self) -> list[str]:
        """Page-image search tools (ColPali) when the gateway has them: read-only tools about pages."""
        return [n for n in self.offered if "page" in n and n not in READS]


def _annotations(tool: BaseTool) -> dict:
    meta = tool.metadata or {}
    ann = meta.get("annotations") or {}
    return ann if isinstance(ann, dict) else getattr(ann, "model_dump", lambda: {})()


def select_tools(tools: list[BaseTool], *, allow_mutating: bool = False) -> Toolset:
    """Split the gateway's tools into offered and withheld (see the module docstring)."""
    offered: dict[str, BaseTool] = {}
    withheld: dict[str, str] = {}
    classify = feedback = None
    for t in tools:
        ann = _annotations(t)
        if t.name == "classify":
            classify = t
        if t.name in PEOPLE_ONLY:
            feedback = t
            withheld[t.name] = "people's verdicts: /good and /bad in relayrag chat"
            continue
        mutating = t.name in MUTATING or bool(ann.get("destructiveHint"))
        if t.name in DUPLICATES:
            withheld[t.name] = "same as ask"
        elif mutating or (t.name not in READS and not ann.get("readOnlyHint")):
            if allow_mutating:
                offered[t.name] = t
            else:
                withheld[t.name] = "changes data (set RELAYRAG_AGENT_ALLOW_MUTATING=1 to offer it)"
        else:
            offered[t.name] = t

    def rank(name: str) -> tuple[int, int]:
        if name in FIRST:
            return (0, FIRST.index(name))
        return (2, LAST.index(name)) if name in LAST else (1, 0)
    offered = dict(sorted(offered.items(), key=lambda kv: rank(kv[0])))  # stable: the gateway's order otherwise
    return Toolset(offered, withheld, classify, feedback)


# -- connections --------------------------------------------------------------------------------------------

def child_env(environ) -> dict[str, str]:
    """The environment handed to the stdio `relayrag mcp` child: `environ` without the variables whose value holds
    a `${...}` reference. langchain-mcp-adapters expands `${VAR}` in every value it passes on and logs a warning
    for each one it cannot expand, so a shell prompt exported with `${debian_chroot:+...}` (PS1) printed
    "env['PS1'] contains unexpanded variable reference" at every chat start, and any other such value would reach
    the child altered. The child needs none of them (a relayrag setting never holds `${`)."""
    return {k: v for k, v in environ.items() if "${" not in v}


def connection_for(settings) -> dict:
    """The langchain-mcp-adapters connection for RELAYRAG_AGENT_MCP_URL: empty → `relayrag mcp` over stdio
    (a child process with this process's environment); http(s) URL → streamable HTTP with
    `Authorization: Bearer RELAYRAG_AGENT_MCP_TOKEN` (the gateway's own check) and, on Cloud Run, the
    service's ID token in `X-Serverless-Authorization` (Cloud Run's IAM check at the edge; `CloudRunIdentity`)."""
    url = (settings.agent_mcp_url or "").strip()
    if not url:
        exe = shutil.which("relayrag") or os.path.join(os.path.dirname(sys.executable), "relayrag")
        # the child's banner and INFO lines stay out of the chat
        env = {"FASTMCP_LOG_LEVEL": "WARNING", **child_env(os.environ)}
        return {"transport": "stdio", "command": exe, "args": ["mcp"], "env": env}
    if url.startswith(("http://", "https://")):
        token = settings.agent_mcp_token
        conn: dict = {"transport": "streamable_http", "url": url,
                      "headers": {"Authorization": f"Bearer {token}"} if token else {}}
        if os.environ.get("K_SERVICE"):  # running on Cloud Run
            conn["auth"] = CloudRunIdentity(url)
        return conn
    raise ConfigError(f"RELAYRAG_AGENT_MCP_URL={url!r}: use an http(s) URL, 'inprocess', or leave it empty for stdio")


class CloudRunIdentity(httpx.Auth):
    """Cloud Run to Cloud Run: this service's own Google ID token for the gateway's origin, from the metadata
    server (google-auth, extra agent-cloud), in `X-Serverless-Authorization`, which Cloud Run checks for
    roles/run.invoker and strips; `Authorization` stays free for the gateway's bearer token. ID tokens last an
    hour: a new one is fetched after 50 minutes."""

    def __init__(self, url: str, fetch: Callable[[str], str] | None = None):
        from urllib.parse import urlparse
        u = urlparse(url)
        self.audience = f"{u.scheme}://{u.netloc}"
        self._fetch = fetch or _fetch_id_token
        self._token, self._at = "", 0.0

    def token(self) -> str:
        if not self._token or time.monotonic() - self._at > 50 * 60:
            self._token, self._at = self._fetch(self.audience), time.monotonic()
        return self._token

    def auth_flow(self, request):
        request.headers["X-Serverless-Authorization"] = f"Bearer {self.token()}"
        yield request


def _fetch_id_token(audience: str) -> str:
    try:
        import google.auth.transport.requests
        import google.oauth2.id_token
    except ImportError as exc:
        raise ConfigError("the assistant on Cloud Run signs MCP calls with google-auth: pip install "
                          "'relayrag[agent-cloud]'") from exc
    return google.oauth2.id_token.fetch_id_token(google.auth.transport.requests.Request(), audience)


@contextlib.asynccontextmanager
async def open_tools(settings, *, server=None) -> AsyncIterator[list[BaseTool]]:
    """The gateway's tools as LangChain tools. Over stdio (a child process) and in-process: one MCP session for
    the assistant's lifetime. Over HTTP: a fresh MCP session per tool call (langchain-mcp-adapters'
    `load_mcp_tools(None, connection=…)`), so a gateway that scaled out, was replaced or scaled to zero never
    strands the assistant on a session id no instance knows ("Session not found"). `server`: a FastMCP
    server object to talk to in-process (tests, `RELAYRAG_AGENT_MCP_URL=inprocess`)."""
    from langchain_mcp_adapters.tools import load_mcp_tools
    if server is None and (settings.agent_mcp_url or "").strip() == "inprocess":
        from relayrag.mcp.server import build_server
        server = build_server(settings=settings)
    if server is not None:
        from fastmcp import Client
        async with Client(server) as client:
            yield await load_mcp_tools(client.session)
        return
    from langchain_mcp_adapters.client import MultiServerMCPClient
    conn = connection_for(settings)
    client = MultiServerMCPClient({"relayrag": conn})  # type: ignore[dict-item]
    where = conn.get("url") or f"{conn.get('command')} mcp (stdio)"
    if conn["transport"] == "streamable_http":
        try:
            tools = await load_mcp_tools(None, connection=conn)  # type: ignore[arg-type]
        except Exception as exc:  # anyio task groups wrap the cause in an ExceptionGroup
            raise ConfigError(f"cannot reach the MCP gateway {where}: {describe(exc)}") from exc
        yield tools
        return
    async with contextlib.AsyncExitStack() as stack:
        try:
            session = await stack.enter_async_context(client.session("relayrag"))
            tools = await load_mcp_tools(session)
        except Exception as exc:  # anyio task groups wrap the cause in an ExceptionGroup
            raise ConfigError(f"cannot reach the MCP gateway {where}: {describe(exc)}") from exc
        yield tools


def describe(exc: BaseException) -> str:
    """The innermost causes of a (possibly grouped) connection error, e.g. `HTTP 401 Unauthorized`."""
    inner = getattr(exc, "exceptions", None)
    if inner:
        return "; ".join(describe(e) for e in inner)
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "status_code", None):
        hint = " (wrong or missing bearer token: RELAYRAG_AGENT_MCP_TOKEN)" if response.status_code == 401 else ""
        return f"HTTP {response.status_code} {getattr(response, 'reason_phrase', '')}".rstrip() + hint
    return f"{type(exc).__name__}: {exc}"


# -- evidence ----------------------------------------------------------------------------------------------

def structured_output(msg: ToolMessage) -> dict | None:
    """A tool message's structured result: the MCP structuredContent, else its text parsed as JSON."""
    art = msg.artifact
    if isinstance(art, dict) and isinstance(art.get("structured_content"), dict):
        return art["structured_content"]
    text = msg.content if isinstance(msg.content, str) else "".join(
        b.get("text", "") for b in msg.content if isinstance(b, dict))
    try:
        out = json.loads(text)
    except ValueError:
        return None
    return out if isinstance(out, dict) else None


def evidence_from(tool: str, out: dict | None) -> list[Citation]:
    """The citations a tool result backs: ask → its citations (document, page, run) and its SQL when the run
    went to the tables and the query answered; sql_query → the statement that ran; search and page tools → the pages returned."""
    if not out:
        return []
    cites: list[Citation] = []
    run_id = out.get("run_id")
    if tool in ("ask", "rag"):
        out = out.get("run", out) if tool == "rag" else out
        for c in out.get("citations") or []:
            if c.get("doc"):
                cites.append(Citation(document=str(c["doc"]), page=c.get("page") or None, run_id=run_id))
        if out.get("sql") and out.get("found") is not False:  # a query that failed backs nothing
            cites.append(Citation(kind="sql", document=_tables(out), sql=str(out["sql"]), run_id=run_id))
    elif tool == "sql_query" and out.get("status") == "ok" and out.get("sql"):
        cites.append(Citation(kind="sql", document=_tables(out), sql=str(out["sql"]), run_id=run_id))
    elif tool == "search" or "page" in tool:
        for r in out.get("results") or []:
            if r.get("doc"):
                cites.append(Citation(document=str(r["doc"]), page=r.get("page") or None, run_id=run_id))
    return cites


def _tables(out: dict) -> str:
    tables = out.get("tables") or []
    return ", ".join(str(t) for t in tables) if tables else f"tables of {out.get('collection') or 'the collection'}"


def turn_evidence(messages) -> tuple[list[Citation], str | None]:
    """Citations and the last SQL from the tool messages given (one turn's or one hop's)."""
    from relayrag.agent.schema import merge_citations
    cites: list[Citation] = []
    sql = None
    for m in messages:
        if isinstance(m, ToolMessage) and m.status != "error":
            found = evidence_from(m.name or "", structured_output(m))
            cites = merge_citations(cites, found)
            sql = next((c.sql for c in found if c.sql), sql)
    return cites, sql


def short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
