#!/usr/bin/env bash
# Installs what the dashboard's browser tests drive (nox -s browser): Debian's chromium and chromium-driver
# (apt; as root or with sudo). The tests never download a browser.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-browser: no apt-get; install chromium and its chromedriver, or set RELAYRAG_CHROMIUM and RELAYRAG_CHROMEDRIVER" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
echo "install-browser: installing chromium chromium-driver (apt)" >&2
$SUDO apt-get update -qq >/dev/null
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
