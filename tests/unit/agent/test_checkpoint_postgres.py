"""RELAYRAG_AGENT_CHECKPOINT=postgres on a real PostgreSQL server on 127.0.0.1: the checkpointer survives its
connections being closed under it (a Cloud SQL restart or failover does that to every open connection), and
with RELAYRAG_AGENT_POSTGRES_IAM_AUTH it logs in with an access token as the password, a current one for each
new connection (Cloud SQL's IAM database login; here a role that only logs in with its password stands in).

Needs the `agent-cloud` extra (langgraph-checkpoint-postgres, psycopg, psycopg-pool; `nox -s agent_cloud`)
and PostgreSQL's server binaries (initdb, pg_ctl); skipped with the reason where either is missing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.emulators import free_port
from tests.unit.agent.conftest import settings_for

REQUIRED = os.environ.get("RELAYRAG_REQUIRE_POSTGRES") == "1"  # nox -s agent_cloud: missing = failure


def _missing(why: str):
    if REQUIRED:
        pytest.fail(f"RELAYRAG_REQUIRE_POSTGRES=1 but {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)


try:
    import langgraph.checkpoint.postgres.aio  # noqa: F401
    import psycopg_pool  # noqa: F401
except ImportError as exc:
    _missing(f"the agent-cloud extra is not installed ({exc}; nox -s agent_cloud)")

PG_START_TIMEOUT_S = 60.0


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (d / name).is_file():
            return str(d / name)
    return None


@dataclass
class PgServer:
    url: str          # postgresql://relayrag@127.0.0.1:PORT/postgres (superuser, trust)
    port: int
    data: Path

    def reload(self) -> None:
        """Reread pg_hba.conf, through SQL: running pg_ctl as the server's user again would need the path to
        the data directory, and a concurrent pytest resets /tmp/pytest-of-<user> to mode 0700."""
        import psycopg
        with psycopg.connect(self.url, autocommit=True) as conn:
            assert conn.execute("SELECT pg_reload_conf()").fetchone()[0] is True


@pytest.fixture(scope="module")
def postgres_url(postgres_server) -> str:
    return postgres_server.url


@pytest.fixture(scope="module")
def postgres_server():
    """A throwaway PostgreSQL server on 127.0.0.1 (initdb + pg_ctl; as the `postgres` OS user when this runs as
    root, because initdb refuses root); stopped and removed after the module. Its folder is not under pytest's
    basetemp: another pytest of the same user resets /tmp/pytest-of-<user> to mode 0700 when it starts, and
    the server's OS user could then no longer reach its data directory."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        _missing("PostgreSQL server binaries (initdb, pg_ctl) are not installed (scripts/install-postgres.sh)")
    as_user: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None or subprocess.run(["id", "postgres"], capture_output=True).returncode:
            _missing("running as root without a `postgres` OS user for initdb")
        as_user = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="relayrag-pg-"))
    if as_user:
        os.chmod(root, 0o777)
        for parent in root.parents:   # the server's user must reach its data directory
            if parent == Path("/"):
                break
            os.chmod(parent, os.stat(parent).st_mode | 0o011)
    data, port = root / "data", free_port()
    subprocess.run([*as_user, initdb, "-D", str(data), "-U", "relayrag", "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True)
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-l", str(root / "log"), "-w", "-t", str(int(PG_START_TIMEOUT_S)),
                    "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"], check=True, capture_output=True)
    try:
        yield PgServer(f"postgresql://relayrag@127.0.0.1:{port}/postgres", port, data)
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _terminate_other_connections(url: str) -> int:
    import psycopg
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
    return len(rows)


def test_the_postgres_checkpointer_survives_its_connections_being_closed(home, postgres_url):
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata

    from relayrag.agent.threads import open_checkpointer

    async def go():
        settings = settings_for(home, agent_checkpoint="postgres", agent_postgres_url=postgres_url)
        async with open_checkpointer(settings) as saver:
            first = await saver.aput(generate_config("t"), generate_checkpoint(channel_values={"m": "one"},
                                                                                channel_versions={"m": 1}),
                                     generate_metadata(step=0), {"m": 1})
            killed = await asyncio.to_thread(_terminate_other_connections, postgres_url)  # as a restart does
            second = await saver.aput(first, generate_checkpoint(channel_values={"m": "two"},
                                                                 channel_versions={"m": 2}),
                                      generate_metadata(step=1), {"m": 2})
            latest = await saver.aget_tuple(generate_config("t"))
            return killed, latest, second
    killed, latest, second = asyncio.run(go())
    assert killed >= 1   # the checkpointer's connection was among them
    assert latest.checkpoint["id"] == second["configurable"]["checkpoint_id"]
    assert latest.checkpoint["channel_values"] == {"m": "two"} and latest.metadata["step"] == 1


# ------------------------------------------------------------------------------ IAM database login
IAM_USER = "relayrag-assistant@demo-project.iam"  # how Cloud SQL names a service account's IAM database user
LOGIN_READY_S = 30.0


class RotatingCredentials:
    """A google-auth credentials double: `valid` until expire(); refresh() hands out the next token."""

    def __init__(self, tokens):
        self._tokens = iter(tokens)
        self.token, self.valid, self.refreshed = None, False, 0

    def refresh(self, request) -> None:
        self.token, self.valid = next(self._tokens), True
        self.refreshed += 1

    def expire(self) -> None:
        self.valid = False


def _on(url: str, database: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + database


def _set_password(admin_url: str, password: str) -> None:
    import psycopg
    from psycopg import sql
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(IAM_USER), sql.Literal(password)))


@pytest.fixture(scope="module")
def iam_login_url(postgres_server) -> str:
    """postgresql://IAM_USER@127.0.0.1:PORT/threads, no password: a role that logs in over TCP only with its
    password (scram-sha-256), owning the database `threads` (infra/ makes the Cloud SQL IAM user a member of
    cloudsqlsuperuser for the same reason: the checkpointer creates its tables)."""
    import psycopg
    from psycopg import sql
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'token-1'").format(sql.Identifier(IAM_USER)))
        conn.execute(sql.SQL("CREATE DATABASE threads OWNER {}").format(sql.Identifier(IAM_USER)))
    hba = postgres_server.data / "pg_hba.conf"
    hba.write_text(f'host all "{IAM_USER}" 127.0.0.1/32 scram-sha-256\n' + hba.read_text())
    postgres_server.reload()
    url = f"postgresql://{quote(IAM_USER, safe='')}@127.0.0.1:{postgres_server.port}/threads"
    deadline = time.monotonic() + LOGIN_READY_S
    while True:  # the server rereads pg_hba.conf after the reload signal: wait until it asks for the password
        try:
            psycopg.connect(url, connect_timeout=5).close()
        except psycopg.OperationalError:
            break
        if time.monotonic() > deadline:
            pytest.fail("the server still lets the IAM role in without a password after reloading pg_hba.conf")
        time.sleep(0.05)
    return url


def test_iam_login_logs_in_with_a_current_token_for_each_new_connection(home, postgres_server, iam_login_url):
    """No password in the URL: the first connection logs in with token-1; the token expires, the database now
    accepts only token-2, and a restart closes every connection: the pool's next connection logs in with the
    refreshed token and the thread goes on."""
    import psycopg
    from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_config, generate_metadata

    from relayrag.agent.threads import open_checkpointer

    admin = _on(postgres_server.url, "threads")
    creds = RotatingCredentials(["token-1", "token-2"])

    async def go():
        settings = settings_for(home, agent_checkpoint="postgres", agent_postgres_url=iam_login_url,
                                agent_postgres_iam_auth=True)
        async with open_checkpointer(settings, credentials=creds) as saver:
            first = await saver.aput(generate_config("t"), generate_checkpoint(channel_values={"m": "one"},
                                                                                channel_versions={"m": 1}),
                                     generate_metadata(step=0), {"m": 1})
            await asyncio.to_thread(_set_password, admin, "token-2")
            creds.expire()
            killed = await asyncio.to_thread(_terminate_other_connections, admin)
            second = await saver.aput(first, generate_checkpoint(channel_values={"m": "two"},
                                                                 channel_versions={"m": 2}),
                                      generate_metadata(step=1), {"m": 2})
            return killed, await saver.aget_tuple(generate_config("t")), second
    killed, latest, second = asyncio.run(go())
    assert killed >= 1 and creds.refreshed == 2
    assert latest.checkpoint["id"] == second["configurable"]["checkpoint_id"]
    assert latest.checkpoint["channel_values"] == {"m": "two"}
    with pytest.raises(psycopg.OperationalError):  # the old token no longer logs in: the new one did
        psycopg.connect(iam_login_url, password="token-1", connect_timeout=5).close()


def test_iam_login_refuses_a_password_in_the_url_and_reports_missing_credentials(home):
    import google.auth.exceptions

    from relayrag.agent.threads import open_checkpointer
    from relayrag.errors import ConfigError

    class NoToken(RotatingCredentials):
        def refresh(self, request) -> None:
            raise google.auth.exceptions.RefreshError("metadata server unreachable")

    async def open_with(url: str, creds) -> None:
        settings = settings_for(home, agent_checkpoint="postgres", agent_postgres_url=url,
                                agent_postgres_iam_auth=True)
        async with open_checkpointer(settings, credentials=creds):
            pytest.fail("opened")

    with pytest.raises(ConfigError, match="remove the password"):
        asyncio.run(open_with("postgresql://u:secret@127.0.0.1:1/threads", RotatingCredentials(["t"])))
    with pytest.raises(ConfigError, match="metadata server unreachable.*cloudsql.instanceUser"):
        asyncio.run(open_with("postgresql://u@127.0.0.1:1/threads", NoToken([])))
