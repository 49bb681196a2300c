"""The HTTP adapter of every stage: a request with a JSON body -> the stage (relayrag.stages.base.execute) -> a
JSON response (errors as JSON, never a stack trace). One adapter for both callers: a Cloud Function (its bundle's
main.py, infra/relayrag_infra/bundle.py: `bundle_main`, and relayrag.entrypoints for functions/main.py wrap it with
`http_function`) and the embedded engine (relayrag.engine.local calls `handle` in-process with the same JSON round
trip). It imports no stage, so a bundle that holds one stage module needs no other, and no web framework at import
time: a `relayrag ask` process does not pay for flask, werkzeug or functions-framework (issue 28: ~0.3 s of CPU).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from relayrag.context import default_context
from relayrag.stages.base import Stage, execute


class JsonRequest(Protocol):
    """What the adapter reads of a request: a flask/werkzeug Request has all three."""

    method: str

    @property
    def headers(self) -> Mapping[str, str]: ...

    def get_json(self, silent: bool = False) -> Any: ...


def handle(stage: Stage, request: JsonRequest) -> tuple[str, int, dict[str, str]]:
    """Run `stage` on the request's JSON body: (JSON text, HTTP status, headers). 405 for a method other than
    POST, 400 for a body that is not JSON, else what `execute` answers (400/404/500 as JSON, never a stack trace)."""
    if request.method != "POST":
        return json_response(405, {"error": "use POST with a JSON body", "stage": stage.name})
    payload = request.get_json(silent=True)
    if payload is None:
        return json_response(400, {"error": "request body is not valid JSON", "stage": stage.name})
    status, body = execute(stage, payload, default_context(), headers=dict(request.headers))
    return json_response(status, body)


def json_response(status: int, body: dict) -> tuple[str, int, dict[str, str]]:
    """A (body, status, headers) tuple as flask/functions-framework return it: UTF-8 JSON text."""
    return json.dumps(body, ensure_ascii=False), status, {"Content-Type": "application/json"}


def http_function(stage: Stage):
    """The functions-framework HTTP function of `stage`, named after it (Cloud Functions' `--entry-point`)."""
    import functions_framework

    def handler(request):
        return handle(stage, request)
    handler.__name__ = handler.__qualname__ = stage.name
    return functions_framework.http(handler)
