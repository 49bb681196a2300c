#!/usr/bin/env bash
# Installs relayrag, ingests the bundled public-domain PDFs (examples/pdfs) and asks cited questions.
set -euo pipefail
cd "$(dirname "$0")/.."
RELAYRAG_EXTRAS="${RELAYRAG_EXTRAS-[agent,dashboard]}" bash scripts/setup.sh
export RELAYRAG_HOME=${RELAYRAG_HOME:-$PWD/.relayrag}
RR=.venv/bin/relayrag
$RR ingest examples/pdfs --collection examples
for q in \
  "What is the labor cost of the stabilizer wiring change?" \
  "How many airplanes of U.S. registry does the proposed AD affect?" \
  "What should the pilot do if the autopilot is engaged when airspeed is unreliable?" \
  "How do self-locking nuts stay tight?"; do
  echo
  $RR ask "$q" --collection examples
done
