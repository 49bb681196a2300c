"""The assistant: a LangGraph agent over relayrag's MCP tools (extra `agent`).

It is a front end like the CLI and the MCP gateway: it reaches relayrag only through the MCP tools
(langchain-mcp-adapters: the gateway in-process, `relayrag mcp` over stdio, or the deployed gateway over
streamable HTTP with a bearer token) and, for settings and the configured LLM, relayrag.service.

- `schema`: the structured result (summary, insights, recommendations, citations, sql) and turn events;
- `mcp_tools`: the MCP connection, which tools are offered (mutating ones only when a setting allows) and the
  evidence (citations, SQL) read from tool results;
- `models`: the chat model from RELAYRAG_LLM (OpenAI-compatible, Vertex Gemini, llama.cpp through JSON
  tool calls, or none: the deterministic router);
- `graph`: the StateGraph (preprocess, summarize, analysis ReAct loop, structure with one repair round,
  supervisor + specialists + aggregator, deterministic router, direct replies);
- `threads`: checkpointers (SQLite under RELAYRAG_HOME, Cloud SQL Postgres, memory);
- `assistant`: `Assistant`, which streams one turn's events; `http`: POST /chat as Server-Sent Events.

Importing it without the `agent` extra raises ConfigError naming the extra.
"""

from relayrag.errors import ConfigError

try:
    import langchain_core  # noqa: F401
    import langchain_mcp_adapters  # noqa: F401
    import langgraph  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError("the assistant needs LangGraph: pip install 'relayrag[agent]' "
                      f"({type(exc).__name__}: {exc})") from exc
