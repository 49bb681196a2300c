"""`ingest_object`: the CloudEvent function of GCS-triggered ingestion (Eventarc, documents bucket), the entry point
of the ingest bundle (infra/relayrag_infra/catalog.py) and of relayrag.entrypoints."""

from __future__ import annotations

import functions_framework

from relayrag.ingest.events import handle_event, log_outcome


@functions_framework.cloud_event
def ingest_object(cloud_event) -> None:
    """Ingest or remove the one object a Cloud Storage CloudEvent names (relayrag.ingest.events).

    Returns normally (HTTP 200: Eventarc does not retry) for every outcome a retry cannot change, including
    poison objects, which are dead-lettered; raises (HTTP 500: Eventarc retries) for transient failures.
    Logs one structured JSON line per event on stdout."""
    log_outcome(handle_event(cloud_event))
