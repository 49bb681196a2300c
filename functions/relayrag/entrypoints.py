"""HTTP entry points, one per stage, shared by `functions/main.py` (Cloud Functions / functions-framework)
and the embedded engine (which calls the same adapter, relayrag.stages.http.handle, in-process through a JSON
round trip; functions-framework's `http` decorator only registers the function and passes the call through).

Each adapter is generic: JSON body -> stage request -> stage -> JSON response (errors as JSON, never a
stack trace). The functions are registered with functions-framework's `http` decorator.

`ingest_object` is the CloudEvent function for Cloud Storage `object.v1.finalized` / `.deleted` events
(Eventarc): see relayrag.ingest.events for how each case is answered (it raises only to be retried).
"""

from __future__ import annotations

import functions_framework

from relayrag.catalog import HTTP_STAGES, entry_points
from relayrag.stages.http import handle


def _entry(stage_name: str):
    """The functions-framework HTTP function for one stage (named after it, as Cloud Functions expects)."""
    def handler(request):
        return handle(stage_name, request)
    handler.__name__ = handler.__qualname__ = stage_name
    return functions_framework.http(handler)


# one HTTP function per stage of the catalog (relayrag.catalog.HTTP_STAGES), named after it
for _name in HTTP_STAGES:
    globals()[_name] = _entry(_name)
__all__ = entry_points()  # what functions/main.py exposes to functions-framework / Cloud Functions


@functions_framework.cloud_event
def ingest_object(cloud_event) -> None:
    """Ingest or remove the one object a Cloud Storage CloudEvent names (relayrag.ingest.events).

    Returns normally (HTTP 200: Eventarc does not retry) for every outcome a retry cannot change, including
    poison objects, which are dead-lettered; raises (HTTP 500: Eventarc retries) for transient failures.
    Logs one structured JSON line per event on stdout."""
    from relayrag.ingest.events import handle_event, log_outcome
    log_outcome(handle_event(cloud_event))
