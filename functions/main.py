"""Cloud Functions entry points: one HTTP function per stage, and `ingest_object` (CloudEvent, Eventarc
trigger on the documents bucket) for GCS-triggered ingestion.

Deploy one stage with `--entry-point <stage>`; serve locally with
`functions-framework --source functions/main.py --target <stage>` (or `cd functions && functions-framework
--target <stage>`). The adapters live in relayrag.entrypoints so the embedded engine dispatches to the
very same functions.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bundle root holds the relayrag package

from relayrag.entrypoints import (  # noqa: E402,F401
    classify,
    generate,
    grade,
    hallucination_check,
    hyde,
    ingest_object,
    rerank,
    retrieve,
    sql,
)

ENTRY_POINTS = ["classify", "hyde", "retrieve", "rerank", "grade", "generate", "hallucination_check", "sql"]
EVENT_ENTRY_POINTS = ["ingest_object"]  # CloudEvent functions (Eventarc: documents bucket finalized / deleted)
