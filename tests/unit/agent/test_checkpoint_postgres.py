"""RELAYRAG_AGENT_CHECKPOINT=postgres on a real PostgreSQL server on 127.0.0.1: the checkpointer survives its
connections being closed under it (a Cloud SQL restart or failover does that to every open connection).

Needs the `agent-cloud` extra (langgraph-checkpoint-postgres, psycopg, psycopg-pool; `nox -s agent_cloud`)
and PostgreSQL's server binaries (initdb, pg_ctl); skipped with the reason where either is missing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

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


@pytest.fixture(scope="module")
def postgres_url(tmp_path_factory):
    """postgresql://... of a throwaway PostgreSQL server on 127.0.0.1 (initdb + pg_ctl; as the `postgres` OS
    user when this runs as root, because initdb refuses root); stopped after the module."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        _missing("PostgreSQL server binaries (initdb, pg_ctl) are not installed (scripts/install-postgres.sh)")
    as_user: list[str] = []
    root = tmp_path_factory.mktemp("pg")
    if os.geteuid() == 0:
        if shutil.which("runuser") is None or subprocess.run(["id", "postgres"], capture_output=True).returncode:
            _missing("running as root without a `postgres` OS user for initdb")
        as_user = ["runuser", "-u", "postgres", "--"]
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
        yield f"postgresql://relayrag@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True)


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
