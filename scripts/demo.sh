#!/usr/bin/env bash
# Installs relayrag, ingests the bundled public-domain PDFs (examples/pdfs) and asks cited questions.
set -euo pipefail
cd "$(dirname "$0")/.."
RELAYRAG_EXTRAS="${RELAYRAG_EXTRAS-}" bash scripts/setup.sh
export RELAYRAG_HOME=${RELAYRAG_HOME:-$PWD/.relayrag}
RR=.venv/bin/relayrag
$RR ingest examples/pdfs --collection examples
for q in \
  "What is the estimated cost of the required actions per airplane?" \
  "How many handgun background checks were there in Texas?" \
  "What are self-locking nuts used for?" \
  "What does the pilot do if the stabilizer trim runs away?"; do
  echo
  $RR ask "$q" --collection examples
done
