"""Every entry point in one module, for `functions/main.py` (functions-framework serving any stage from the
source tree; the embedded engine calls the same adapter, relayrag.stage_http.handle, in-process through a JSON
round trip): one HTTP function per stage (relayrag.stage_http, named after the stage) and `ingest_object`, the CloudEvent
function for Cloud Storage `object.v1.finalized` / `.deleted` events (relayrag.ingest.cloud_function).

A deployed function does not import this module: its bundle's main.py imports its own stage, or
`ingest_object`, alone (infra/relayrag_infra/bundle.py: `bundle_main`).
"""

from __future__ import annotations

from relayrag.catalog import entry_points
from relayrag.stage_http import http_function
from relayrag.stage_registry import STAGES

# one HTTP function per stage of the catalog (relayrag.catalog.HTTP_STAGES), named after it
for _name, _stage in STAGES.items():
    globals()[_name] = http_function(_stage)
__all__ = entry_points()  # what functions/main.py exposes to functions-framework / Cloud Functions


def __getattr__(name: str):
    """`ingest_object`, imported when first asked for (the ingestion pipeline is not loaded by the stages)."""
    if name == "ingest_object":
        from relayrag.ingest.cloud_function import ingest_object
        return ingest_object
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
