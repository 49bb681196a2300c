"""Run the RAG workflow embedded: the YAML interpreted in-process, each `local://<stage>` POST dispatched
to the stage's HTTP adapter (relayrag.stage_http.handle, the function the entry points of relayrag.entrypoints
and functions/main.py wrap) with its body as JSON text, so the HTTP contract (JSON in, status and JSON out)
is exercised on every local run. No web framework is imported for it (flask, werkzeug, functions-framework
and httpx cost ~0.5 s of CPU per `relayrag ask` process); httpx is imported only for an http(s):// URL.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable

from relayrag import tracing
from relayrag.context import StageContext, default_context
from relayrag.engine.interpreter import Interpreter, load_workflow
from relayrag.records import build_result
from relayrag.stage_registry import STAGES
from relayrag.stage_http import handle


def workflows_dir() -> Path:
    """The folder of workflow YAMLs: RELAYRAG_WORKFLOWS_DIR; else, in a source checkout (editable install),
    the repository's workflows/ (the source of truth for the topology); else the copy a wheel ships inside
    the package (relayrag/workflows/, put there by setup.py's build step)."""
    env = os.environ.get("RELAYRAG_WORKFLOWS_DIR")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parents[1]
    repo = package.parents[1] / "workflows"
    if (package.parent.name == "functions") and repo.is_dir():
        return repo
    return package / "workflows"


def local_urls() -> dict[str, str]:
    return {name: f"local://{name}" for name in STAGES}


class LocalRequest:
    """An HTTP request as the stage adapter reads it (relayrag.stage_http.JsonRequest), for a local:// call:
    the method (upper case), the headers (Content-Type: application/json and those the step sends) and the
    body as JSON text, parsed by get_json as a web framework would parse it."""

    def __init__(self, method: str, body: str, headers: dict[str, str] | None = None):
        self.method = method.upper()
        self.headers = {"Content-Type": "application/json", "Content-Length": str(len(body.encode("utf-8"))),
                        **(headers or {})}
        self._body = body

    def get_json(self, silent: bool = False) -> Any:
        """The parsed body; None when it is not JSON and `silent` (else ValueError)."""
        try:
            return json.loads(self._body)
        except ValueError:
            if silent:
                return None
            raise


def local_transport(method: str, url: str, body: Any, timeout: float,
                    headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """local://<stage> → the stage's HTTP adapter in-process (JSON round trip, `headers` included); http(s):// →
    httpx."""
    if url.startswith("local://"):
        name = url[len("local://"):].strip("/")
        if name not in STAGES:
            return 404, {"error": f"no stage {name!r}"}
        text, status, _headers = handle(STAGES[name], LocalRequest(method, json.dumps(body), headers))
        return status, json.loads(text)
    import httpx
    try:
        resp = httpx.request(method, url, json=body, timeout=timeout, headers=headers or None)
    except httpx.TimeoutException:
        from relayrag.engine.expr import WorkflowsRuntimeError
        raise WorkflowsRuntimeError({"tags": ["TimeoutError"], "message": f"timeout calling {url}"})
    except httpx.HTTPError as exc:
        from relayrag.engine.expr import WorkflowsRuntimeError
        raise WorkflowsRuntimeError({"tags": ["ConnectionError"], "message": f"{url}: {exc}"})
    try:
        return resp.status_code, resp.json()
    except ValueError:
        return resp.status_code, resp.text


def run_workflow(name: str, args: dict, *, on_event: Callable[[dict], None] | None = None,
                 transport=local_transport, urls: dict[str, str] | None = None) -> Any:
    """Run workflows/<name>.yaml embedded with the runtime argument `args`. Stage URLs reach the workflow as
    a deployment gives them, through `sys.get_env("RELAYRAG_STAGE_URLS")` (`urls`, default: the local://
    entry points), never through `args`: a deployed workflow ignores any `urls` argument."""
    source = (workflows_dir() / f"{name}.yaml").read_text(encoding="utf-8")
    env = {"RELAYRAG_STAGE_URLS": json.dumps(urls if urls is not None else local_urls())}
    return Interpreter(load_workflow(source), transport, on_event=on_event).run(args, env=env)


def ask(question: str, collection: str, *, run_id: str | None = None, arm: str | None = None,
        filters: list[str] | None = None, on_event: Callable[[dict], None] | None = None, ctx: StageContext | None = None,
        urls: dict[str, str] | None = None, transport=local_transport) -> dict:
    """Run workflows/rag.yaml for one question and return the assembled result (see `build_result`).
    `urls`: stage -> URL (default local://<stage>), given to the workflow as its deployment environment."""
    run_id = run_id or uuid.uuid4().hex
    with tracing.run_span(run_id, collection, engine="local") as span:
        run_workflow("rag", rag_args(question, collection, run_id=run_id, arm=arm, filters=filters,
                                     traceparent=tracing.traceparent()),
                     on_event=on_event, transport=transport, urls=urls)
        result = build_result(ctx or default_context(), run_id)
        tracing.record_run(span, result)
    return result


def rag_args(question: str, collection: str, *, run_id: str, arm: str | None = None,
             filters: list[str] | None = None, traceparent: str = "") -> dict:
    """The `args` map of workflows/rag.yaml, one builder for both engines. Stage URLs are not an argument:
    the workflow reads them from its environment (RELAYRAG_STAGE_URLS, set by the deployment). `filters`
    (metadata filters, relayrag.metadata) is added only when given."""
    return {"question": question, "collection": collection, "run_id": run_id, "arm": arm or "",
            **({"filters": list(filters)} if filters else {}), **({"traceparent": traceparent} if traceparent else {})}
