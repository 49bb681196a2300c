"""HTTP entry points, one per stage, shared by `functions/main.py` (Cloud Functions / functions-framework)
and the embedded engine (which calls these very functions in-process through a JSON round trip).

Each adapter is generic: JSON body -> stage request -> stage -> JSON response (errors as JSON, never a
stack trace). The functions are registered with functions-framework's `http` decorator.
"""

from __future__ import annotations

import json

import functions_framework

from relayrag.context import default_context
from relayrag.stages import STAGES
from relayrag.stages.base import execute


def _handle(stage_name: str, request):
    if request.method != "POST":
        return _json(405, {"error": "use POST with a JSON body", "stage": stage_name})
    payload = request.get_json(silent=True)
    if payload is None:
        return _json(400, {"error": "request body is not valid JSON", "stage": stage_name})
    status, body = execute(STAGES[stage_name], payload, default_context())
    return _json(status, body)


def _json(status: int, body: dict):
    return json.dumps(body, ensure_ascii=False), status, {"Content-Type": "application/json"}


@functions_framework.http
def classify(request):
    return _handle("classify", request)


@functions_framework.http
def hyde(request):
    return _handle("hyde", request)


@functions_framework.http
def retrieve(request):
    return _handle("retrieve", request)


@functions_framework.http
def rerank(request):
    return _handle("rerank", request)


@functions_framework.http
def grade(request):
    return _handle("grade", request)


@functions_framework.http
def generate(request):
    return _handle("generate", request)


@functions_framework.http
def hallucination_check(request):
    return _handle("hallucination_check", request)


@functions_framework.http
def sql(request):
    return _handle("sql", request)
