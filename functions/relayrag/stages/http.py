"""The HTTP adapter of every stage: a request with a JSON body -> the stage (relayrag.stages.base.execute) -> a
JSON response. One adapter for both callers: the Cloud Functions entry points (relayrag.entrypoints wraps it
with functions-framework's `http` decorator, a pass-through) and the embedded engine (relayrag.engine.local
calls it in-process with the same JSON round trip). It imports no web framework: a `relayrag ask` process does
not pay for flask, werkzeug or functions-framework (issue 28: ~0.3 s of CPU per process).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from relayrag.context import default_context
from relayrag.stages import STAGES
from relayrag.stages.base import execute


class JsonRequest(Protocol):
    """What the adapter reads of a request: a flask/werkzeug Request has all three."""

    method: str

    @property
    def headers(self) -> Mapping[str, str]: ...

    def get_json(self, silent: bool = False) -> Any: ...


def handle(stage_name: str, request: JsonRequest) -> tuple[str, int, dict[str, str]]:
    """Run stage `stage_name` on the request's JSON body: (JSON text, HTTP status, headers). 405 for a method
    other than POST, 400 for a body that is not JSON, else what `execute` answers (400/404/500 as JSON, never a
    stack trace). Raises KeyError for a name that is not a stage of the catalog (relayrag.catalog)."""
    if request.method != "POST":
        return json_response(405, {"error": "use POST with a JSON body", "stage": stage_name})
    payload = request.get_json(silent=True)
    if payload is None:
        return json_response(400, {"error": "request body is not valid JSON", "stage": stage_name})
    status, body = execute(STAGES[stage_name], payload, default_context(), headers=dict(request.headers))
    return json_response(status, body)


def json_response(status: int, body: dict) -> tuple[str, int, dict[str, str]]:
    """A (body, status, headers) tuple as flask/functions-framework return it: UTF-8 JSON text."""
    return json.dumps(body, ensure_ascii=False), status, {"Content-Type": "application/json"}
