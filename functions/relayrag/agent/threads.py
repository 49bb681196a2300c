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
  checks a connection before lending it, so a database restart costs a reconnect, not every later chat. With
  RELAYRAG_AGENT_POSTGRES_IAM_AUTH the URL holds no password: each new connection logs in as the IAM database
  user with a fresh OAuth2 access token (`IamLoginPassword`; infra/ deploys it that way, over private IP);
- `memory`: langgraph's InMemorySaver (tests, throwaway sessions).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from relayrag.errors import ConfigError

CHECKPOINTS = ("sqlite", "firestore", "postgres", "memory")
POSTGRES_POOL_SIZE = 4             # connections per process (Cloud Run: 20 concurrent requests, short queries)
POSTGRES_CONNECT_TIMEOUT_S = 30.0
SQL_LOGIN_SCOPE = "https://www.googleapis.com/auth/sqlservice.login"


class IamLoginPassword:
    """The password of a Cloud SQL IAM database login: an OAuth2 access token (str) of `credentials`
    (google-auth credentials; default: Application Default Credentials with the sqlservice.login scope, on
    Cloud Run the service's identity), refreshed when expired or close to it (google-auth's `valid` keeps a
    margin of a few minutes). The server checks the token only when a connection logs in, so a pooled
    connection outlives its token; each new connection asks for a current one
    (https://cloud.google.com/sql/docs/postgres/iam-logins, "manual IAM database authentication").

    Calling it raises google.auth.exceptions.GoogleAuthError when no credentials or no token can be had."""

    def __init__(self, credentials: Any = None):
        self._credentials = credentials
        self._lock = asyncio.Lock()

    async def __call__(self) -> str:
        async with self._lock:
            if self._credentials is None:
                import google.auth
                self._credentials, _ = await asyncio.to_thread(google.auth.default, scopes=[SQL_LOGIN_SCOPE])
            creds = self._credentials
            if not creds.valid:
                import google.auth.transport.requests
                await asyncio.to_thread(creds.refresh, google.auth.transport.requests.Request())
            return creds.token


def threads_path(settings) -> Path:
    return Path(settings.home) / "agent" / "threads.sqlite3"


@contextlib.asynccontextmanager
async def open_checkpointer(settings, *, credentials: Any = None) -> AsyncIterator:
    """The checkpointer RELAYRAG_AGENT_CHECKPOINT names, open for the block. `credentials`: the Google
    credentials whose tokens log in to Postgres with RELAYRAG_AGENT_POSTGRES_IAM_AUTH (default: Application
    Default Credentials). Raises ConfigError for an unknown kind, a missing URL, a password in the URL with IAM
    login, no token for the IAM login, or a missing package."""
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
                              "(postgresql://USER:PASSWORD@HOST/DB, or postgresql://IAM_USER@HOST/DB with "
                              "RELAYRAG_AGENT_POSTGRES_IAM_AUTH=true)")
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            from psycopg.conninfo import conninfo_to_dict
            from psycopg.rows import dict_row
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:
            raise ConfigError("RELAYRAG_AGENT_CHECKPOINT=postgres needs langgraph-checkpoint-postgres: "
                              "pip install 'relayrag[agent-cloud]'") from exc
        base = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        kwargs: Any = base
        if settings.agent_postgres_iam_auth:
            kwargs = await _iam_login_kwargs(settings.agent_postgres_url, base, credentials, conninfo_to_dict)
        # a pool that checks each connection before lending it: one connection for the process lifetime
        # (AsyncPostgresSaver.from_conn_string) breaks every later chat once Cloud SQL restarts or fails over
        async with AsyncConnectionPool(
                settings.agent_postgres_url, min_size=1, max_size=POSTGRES_POOL_SIZE, open=False,
                kwargs=kwargs, check=AsyncConnectionPool.check_connection) as pool:
            await pool.open(wait=True, timeout=POSTGRES_CONNECT_TIMEOUT_S)
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
            yield saver
    elif kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver
        yield InMemorySaver()
    else:
        raise ConfigError(f"RELAYRAG_AGENT_CHECKPOINT={kind!r}: valid: {', '.join(CHECKPOINTS)}")


async def _iam_login_kwargs(url: str, base: dict, credentials: Any, conninfo_to_dict) -> Any:
    """The pool's connection kwargs for an IAM database login: an async callable the pool calls for each new
    connection, adding a current token as the password. The first token is fetched here, so missing credentials
    fail the start with the reason instead of 30 s of failed connection attempts."""
    if conninfo_to_dict(url).get("password"):
        raise ConfigError("RELAYRAG_AGENT_POSTGRES_URL holds a password but RELAYRAG_AGENT_POSTGRES_IAM_AUTH logs "
                          "in with an access token: remove the password from the URL")
    import google.auth.exceptions
    password = IamLoginPassword(credentials)
    try:
        await password()
    except google.auth.exceptions.GoogleAuthError as exc:
        raise ConfigError(f"RELAYRAG_AGENT_POSTGRES_IAM_AUTH: no access token for the Cloud SQL login ({exc}); the "
                          "process needs Google credentials (on Cloud Run: the service's identity, which needs "
                          "roles/cloudsql.instanceUser and an IAM database user)") from exc

    async def kwargs() -> dict:
        return {**base, "password": await password()}
    return kwargs
