"""Where threads live (RELAYRAG_AGENT_CHECKPOINT): LangGraph checkpointers.

- `sqlite` (default): langgraph-checkpoint-sqlite's AsyncSqliteSaver on RELAYRAG_HOME/agent/threads.sqlite3,
  so `relayrag chat --thread ID` resumes a thread after a restart;
- `firestore`: relayrag's own FirestoreSaver (relayrag.agent.checkpoint_firestore; extra `gcp`) in the Firestore
  database RELAYRAG_FIRESTORE_DATABASE of RELAYRAG_GCP_PROJECT, under RELAYRAG_FIRESTORE_PREFIX, keeping the
  RELAYRAG_AGENT_CHECKPOINT_KEEP newest checkpoints per thread. The cloud
  assistant's default (infra/): Firestore bills per operation and stored byte, so an idle assistant costs
  nothing, where a Cloud SQL instance bills every hour it exists; see docs/DESIGN.md;
- `postgres`: langgraph-checkpoint-postgres's AsyncPostgresSaver on RELAYRAG_AGENT_POSTGRES_URL (Cloud SQL for
  PostgreSQL; extra `agent-cloud`), for a deployment that already runs a database; over a psycopg pool that
  checks a connection before lending it, so a database restart costs a reconnect, not every later chat;
- `memory`: langgraph's InMemorySaver (tests, throwaway sessions).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from relayrag.errors import ConfigError

CHECKPOINTS = ("sqlite", "firestore", "postgres", "memory")
POSTGRES_POOL_SIZE = 4             # connections per process (Cloud Run: 20 concurrent requests, short queries)
POSTGRES_CONNECT_TIMEOUT_S = 30.0


def threads_path(settings) -> Path:
    return Path(settings.home) / "agent" / "threads.sqlite3"


@contextlib.asynccontextmanager
async def open_checkpointer(settings) -> AsyncIterator:
    """The checkpointer RELAYRAG_AGENT_CHECKPOINT names, open for the block. Raises ConfigError for an unknown
    kind, a missing URL or a missing package."""
    kind = (settings.agent_checkpoint or "sqlite").strip().lower()
    if kind == "sqlite":
        from relayrag.agent.checkpoint_sqlite import BoundedSqliteSaver
        path = threads_path(settings)
        path.parent.mkdir(parents=True, exist_ok=True)
        async with BoundedSqliteSaver.from_conn_string(str(path)) as saver:
            saver.keep_last = settings.agent_checkpoint_keep
            yield saver
    elif kind == "firestore":
        from relayrag.agent.checkpoint_firestore import FirestoreSaver, firestore_client
        client = firestore_client(settings.gcp_project, settings.firestore_database)
        try:
            yield FirestoreSaver(client, prefix=settings.firestore_prefix, keep_last=settings.agent_checkpoint_keep)
        finally:
            client._firestore_api.transport.close()  # the gRPC channel (the client has no close())
    elif kind == "postgres":
        if not settings.agent_postgres_url:
            raise ConfigError("RELAYRAG_AGENT_CHECKPOINT=postgres needs RELAYRAG_AGENT_POSTGRES_URL "
                              "(postgresql://USER:PASSWORD@HOST/DB, or host=/cloudsql/PROJECT:REGION:INSTANCE)")
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            from psycopg.rows import dict_row
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:
            raise ConfigError("RELAYRAG_AGENT_CHECKPOINT=postgres needs langgraph-checkpoint-postgres: "
                              "pip install 'relayrag[agent-cloud]'") from exc
        # a pool that checks each connection before lending it: one connection for the process lifetime
        # (AsyncPostgresSaver.from_conn_string) breaks every later chat once Cloud SQL restarts or fails over
        async with AsyncConnectionPool(
                settings.agent_postgres_url, min_size=1, max_size=POSTGRES_POOL_SIZE, open=False,
                kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
                check=AsyncConnectionPool.check_connection) as pool:
            await pool.open(wait=True, timeout=POSTGRES_CONNECT_TIMEOUT_S)
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
            yield saver
    elif kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver
        yield InMemorySaver()
    else:
        raise ConfigError(f"RELAYRAG_AGENT_CHECKPOINT={kind!r}: valid: {', '.join(CHECKPOINTS)}")
