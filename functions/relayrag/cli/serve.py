"""`relayrag mcp`: serve the MCP gateway (relayrag.mcp) over stdio or streamable HTTP; `relayrag dashboard`:
serve the web dashboard (relayrag.dashboard)."""

from __future__ import annotations

from typing import Optional

import typer

from relayrag.cli.app import (
    _user_errors,
    app,
)


@app.command()
def mcp(http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
        host: str = typer.Option("127.0.0.1", "--host", help="HTTP bind address (loopback by default)."),
        port: int = typer.Option(8765, "--port", help="HTTP port."),
        path: str = typer.Option("/mcp", "--path", help="HTTP endpoint path."),
        no_auth: bool = typer.Option(False, "--no-auth", help="Serve HTTP WITHOUT authentication (unsafe; local "
                                     "throwaway tests only)."),
        engine: Optional[str] = typer.Option(None, "--engine", help="embedded | cloud (default: RELAYRAG_ENGINE)."),
        log_level: str = typer.Option("WARNING", "--log-level", help="Log level (logs go to stderr).")):
    """Serve relayrag as an MCP server (tools: ask, search, ingest, delete_document, list_collections,
    list_documents, get_run, sql_query, plus one per workflows/*.yaml that declares `# mcp-tool:`). stdio by
    default (stdout carries only JSON-RPC); --http serves streamable HTTP with bearer tokens from RELAYRAG_MCP_TOKENS."""
    with _user_errors():
        from relayrag.mcp.server import serve
        serve(http=http, host=host, port=port, path=path, no_auth=no_auth, engine=engine, log_level=log_level)


@app.command()
def dashboard(port: int = typer.Option(8780, "--port", help="HTTP port."),
              host: str = typer.Option("127.0.0.1", "--host", help="Bind address (loopback by default)."),
              no_auth: bool = typer.Option(False, "--no-auth", help="Serve WITHOUT tokens (loopback hosts only; "
                                           "local throwaway use)."),
              log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level (logs go to stderr).")):
    """Serve the web dashboard (extra `dashboard`): ask with live stages and clickable citations, runs as
    waterfalls, collections (upload, ingest, delete, dead letters), the bandit's posteriors, evaluations and
    the warehouse. Tokens from RELAYRAG_DASHBOARD_TOKENS (comma-separated); it refuses to start without
    them unless --no-auth on a loopback host. Stored evaluation sets: RELAYRAG_DASHBOARD_DATASETS."""
    with _user_errors():
        try:
            from relayrag.dashboard.app import serve as serve_dashboard
        except ImportError as exc:
            from relayrag.errors import ConfigError
            raise ConfigError(f"the dashboard needs its extra: pip install 'relayrag[dashboard]' ({exc})") from None
        serve_dashboard(host=host, port=port, no_auth=no_auth, log_level=log_level)
