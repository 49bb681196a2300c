"""Where threads live (RELAYRAG_AGENT_CHECKPOINT): LangGraph checkpointers.

- `sqlite` (default): langgraph-checkpoint-sqlite's AsyncSqliteSaver on RELAYRAG_HOME/agent/threads.sqlite3,
  so `relayrag chat --thread ID` resumes a thread after a restart;
- `postgres`: langgraph-checkpoint-postgres's AsyncPostgresSaver on RELAYRAG_AGENT_POSTGRES_URL (Cloud SQL for
  PostgreSQL in the cloud; extra `agent-cloud`). Chosen over Firestore: it is the checkpointer LangGraph's
  maintainers ship and test with every release (the Firestore savers are third-party), it writes a
  checkpoint and its pending writes in one transaction, and the Cloud Run service reaches it through the
  Cloud SQL connector socket; see docs/DESIGN.md;
- `memory`: langgraph's InMemorySaver (tests, throwaway sessions).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from relayrag.errors import ConfigError

CHECKPOINTS = ("sqlite", "postgres", "memory")


def threads_path(settings) -> Path:
    return Path(settings.home) / "agent" / "threads.sqlite3"


@contextlib.asynccontextmanager
async def open_checkpointer(settings) -> AsyncIterator:
    """The checkpointer RELAYRAG_AGENT_CHECKPOINT names, open for the block. Raises ConfigError for an unknown
    kind, a missing URL or a missing package."""
    kind = (settings.agent_checkpoint or "sqlite").strip().lower()
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        path = threads_path(settings)
        path.parent.mkdir(parents=True, exist_ok=True)
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            yield saver
    elif kind == "postgres":
        if not settings.agent_postgres_url:
            raise ConfigError("RELAYRAG_AGENT_CHECKPOINT=postgres needs RELAYRAG_AGENT_POSTGRES_URL "
                              "(postgresql://USER:PASSWORD@HOST/DB, or host=/cloudsql/PROJECT:REGION:INSTANCE)")
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        except ImportError as exc:
            raise ConfigError("RELAYRAG_AGENT_CHECKPOINT=postgres needs langgraph-checkpoint-postgres: "
                              "pip install 'relayrag[agent-cloud]'") from exc
        async with AsyncPostgresSaver.from_conn_string(settings.agent_postgres_url) as saver:
            await saver.setup()
            yield saver
    elif kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver
        yield InMemorySaver()
    else:
        raise ConfigError(f"RELAYRAG_AGENT_CHECKPOINT={kind!r}: valid: {', '.join(CHECKPOINTS)}")
