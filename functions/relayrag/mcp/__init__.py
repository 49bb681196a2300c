"""MCP gateway package (FastMCP): `server` builds and serves it, `tools` implements the built-in tools,
`workflow_tools` turns declared workflow YAMLs into tools, `auth` checks HTTP bearer tokens, `views` bounds
results. Importing it without the `mcp` extra raises ConfigError naming the extra."""

from relayrag.errors import ConfigError

try:
    import anyio  # noqa: F401
    import fastmcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError("the MCP gateway needs fastmcp: pip install 'relayrag[mcp]' "
                      f"({type(exc).__name__}: {exc})") from exc
