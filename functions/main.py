"""Cloud Functions entry points: one HTTP function per stage, and `ingest_object` (CloudEvent, Eventarc
trigger on the documents bucket) for GCS-triggered ingestion. The names come from the one stage catalog
(relayrag.catalog.entry_points()).

Deploy one stage with `--entry-point <stage>`; serve locally with
`functions-framework --source functions/main.py --target <stage>` (or `cd functions && functions-framework
--target <stage>`). The adapters live in relayrag.entrypoints so the embedded engine dispatches to the
very same functions.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bundle root holds the relayrag package

from relayrag.entrypoints import *  # noqa: E402,F401,F403  (every name of relayrag.catalog.entry_points())
