"""relayrag's MCP gateway, deployable from this folder: the same server as `relayrag mcp`.

    python mcp_gateway/server.py                       # stdio (stdout carries only JSON-RPC)
    python mcp_gateway/server.py --http --port 8765    # streamable HTTP, bearer tokens from RELAYRAG_MCP_TOKENS

The implementation lives in the relayrag package (functions/relayrag/mcp/) so that the installed
`relayrag` command can serve it; this file only launches it with the CLI's flags and safety checks (HTTP
refuses to start without a token unless --no-auth). See README.md here for client configurations.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    from relayrag.cli import app
    app(["mcp", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
