"""Run the RAG workflow embedded: the YAML interpreted in-process, each `local://<stage>` POST dispatched
to the stage's HTTP entry point (relayrag.entrypoints, re-exported by functions/main.py) as a real
werkzeug request with a JSON body, so the HTTP contract is exercised on every local run.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Callable

import httpx
from werkzeug.test import EnvironBuilder

from relayrag import entrypoints
from relayrag.context import StageContext, default_context
from relayrag.engine.interpreter import Interpreter, load_workflow
from relayrag.stages import STAGES


def workflows_dir() -> Path:
    """RELAYRAG_WORKFLOWS_DIR, else the repo's workflows/ (source of truth for the topology)."""
    env = os.environ.get("RELAYRAG_WORKFLOWS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "workflows"


def local_urls() -> dict[str, str]:
    return {name: f"local://{name}" for name in STAGES}


def local_transport(method: str, url: str, body: Any, timeout: float) -> tuple[int, Any]:
    """local://<stage> → the entry point in-process (JSON round trip); http(s):// → httpx."""
    if url.startswith("local://"):
        name = url[len("local://"):].strip("/")
        fn = getattr(entrypoints, name, None)
        if name not in STAGES or fn is None:
            return 404, {"error": f"no stage {name!r}"}
        request = EnvironBuilder(method=method, path=f"/{name}", data=json.dumps(body),
                                 content_type="application/json").get_request()
        text, status, _headers = fn(request)
        return status, json.loads(text)
    try:
        resp = httpx.request(method, url, json=body, timeout=timeout)
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
        on_event: Callable[[dict], None] | None = None, ctx: StageContext | None = None,
        urls: dict[str, str] | None = None, transport=local_transport) -> dict:
    """Run workflows/rag.yaml for one question and return the assembled result (see `build_result`).
    `urls`: stage -> URL (default local://<stage>), given to the workflow as its deployment environment."""
    run_id = run_id or uuid.uuid4().hex
    run_workflow("rag", rag_args(question, collection, run_id=run_id, arm=arm), on_event=on_event,
                 transport=transport, urls=urls)
    return build_result(ctx or default_context(), run_id)


def rag_args(question: str, collection: str, *, run_id: str, arm: str | None = None) -> dict:
    """The `args` map of workflows/rag.yaml, one builder for both engines. Stage URLs are not an argument:
    the workflow reads them from its environment (RELAYRAG_STAGE_URLS, set by the deployment)."""
    return {"question": question, "collection": collection, "run_id": run_id, "arm": arm or ""}


def build_result(ctx: StageContext, run_id: str) -> dict:
    """The user-facing result of a run, from its record and trace in the docstore."""
    run = ctx.docstore.get_run(run_id) or {}
    trace = ctx.docstore.get_trace(run_id)
    return {
        "run_id": run_id,
        "question": run.get("question"),
        "collection": run.get("collection"),
        "route": run.get("route"),
        "answer": run.get("answer", ""),
        "citations": [{k: c[k] for k in ("n", "doc", "page", "chunk_id", "quote") if k in c}
                      for c in run.get("citations", [])],
        "arm": run.get("arm"),
        "grounded": bool(run.get("grounded", False)),
        "refused": bool(run.get("refused", False)),
        "found": bool(run.get("found", True)),
        "reward": run.get("reward"),
        "retry_count": run.get("retry_count", 0),
        "regen_count": run.get("regen_count", 0),
        # llm_error: why a stage's LLM call failed and it fell back to its no-LLM method (only then)
        # llm_fallbacks: that stage's fallbacks in a row in the serving process (a dead LLM path keeps growing)
        "stages": [{"name": t["name"], "ms": t["ms"], "method": t["method"],
                    **({"llm_error": t["llm_error"]} if t.get("llm_error") else {}),
                    **({"llm_fallbacks": t["llm_fallbacks"]} if t.get("llm_fallbacks") else {})} for t in trace],
        "llm_fallbacks": sum(1 for t in trace if t.get("llm_error")),
        # sql route: the query that answered, its rows (capped) and how many it returned
        "sql": run.get("sql"),
        "rows": run.get("rows", []),
        "row_count": run.get("row_count", 0),
    }
