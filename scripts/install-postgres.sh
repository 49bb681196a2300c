#!/usr/bin/env bash
# Installs Debian's PostgreSQL server binaries (initdb, pg_ctl) for the assistant's Postgres checkpointer test
# (nox -s agent_cloud): the test starts a throwaway server on 127.0.0.1 in a temp folder; nothing is left running.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-postgres: no apt-get; install PostgreSQL's server binaries (initdb, pg_ctl)" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
echo "install-postgres: installing postgresql (apt)" >&2
$SUDO apt-get update -qq >/dev/null
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
