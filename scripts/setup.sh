#!/usr/bin/env bash
# Installs relayrag for local use: Debian's tesseract-ocr (OCR fallback for image-only PDF pages) when
# it is missing and we may install it, then a virtual environment .venv with relayrag (and its test tools unless RELAYRAG_EXTRAS="").
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tesseract >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "setup: installing tesseract-ocr (apt)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null
  elif command -v apt-get >/dev/null 2>&1 && command -v sudo >/dev/null 2>&1; then
    echo "setup: installing tesseract-ocr (sudo apt)" >&2
    sudo apt-get update -qq >/dev/null && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null
  else
    echo "setup: tesseract not found; image-only PDF pages will be skipped with a warning (install tesseract-ocr)" >&2
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# extras: "dev" (tests, benchmarks, MCP) by default; scripts/demo.sh installs the runtime, the assistant and the dashboard ([agent,dashboard]: `relayrag chat`, `relayrag dashboard`)
.venv/bin/python -m pip install -q -e ".${RELAYRAG_EXTRAS-[dev]}"
echo "setup: done (.venv)" >&2
