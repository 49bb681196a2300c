#!/usr/bin/env bash
# Installs relayrag with its test tools, then runs the test suite (slow benchmarks excluded: nox -s bench; the real local LLM: nox -s local_llm).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -q -m "not slow and not local_llm" "$@"
