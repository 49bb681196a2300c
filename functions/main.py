"""Cloud Functions entry points of the source tree: one HTTP function per stage, and `ingest_object` (CloudEvent,
Eventarc trigger on the documents bucket) for GCS-triggered ingestion. The names come from the one stage catalog
(relayrag.catalog.entry_points()).

Serve any stage locally with `functions-framework --source functions/main.py --target <stage>` (or `cd functions
&& functions-framework --target <stage>`). A deployed function does not use this file: its upload bundle carries
a main.py of its own that imports its one stage (infra/relayrag_infra/catalog.py: `bundle_main`), so a change to
one stage rebuilds that function only. The adapters live in relayrag.stage_http and relayrag.entrypoints, so
the embedded engine dispatches to the very same functions.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # functions/ holds the relayrag package

from relayrag.entrypoints import *  # noqa: E402,F401,F403  (every name of relayrag.catalog.entry_points())
