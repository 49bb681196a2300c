"""One stage as a functions-framework HTTP function: JSON body -> stage request -> stage -> JSON response
(errors as JSON, never a stack trace). Generic: it imports no stage, so a function's bundle that holds one stage
module (infra/relayrag_infra/catalog.py: `bundle_main`) needs no other; relayrag.entrypoints builds every stage's
function with it for the embedded engine and functions/main.py."""

from __future__ import annotations

import json

import functions_framework

from relayrag.context import default_context
from relayrag.stages.base import Stage, execute


def _json(status: int, body: dict):
    return json.dumps(body, ensure_ascii=False), status, {"Content-Type": "application/json"}


def handle(stage: Stage, request):
    """Answer one HTTP request to `stage`: (JSON text, status, headers). 405 unless POST; 400 for a body that is
    not JSON; otherwise the stage's own status and body (relayrag.stages.base.execute)."""
    if request.method != "POST":
        return _json(405, {"error": "use POST with a JSON body", "stage": stage.name})
    payload = request.get_json(silent=True)
    if payload is None:
        return _json(400, {"error": "request body is not valid JSON", "stage": stage.name})
    status, body = execute(stage, payload, default_context(), headers=dict(request.headers))
    return _json(status, body)


def http_function(stage: Stage):
    """The functions-framework HTTP function of `stage`, named after it (Cloud Functions' `--entry-point`)."""
    def handler(request):
        return handle(stage, request)
    handler.__name__ = handler.__qualname__ = stage.name
    return functions_framework.http(handler)
