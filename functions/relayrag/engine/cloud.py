"""Run the RAG workflow on Cloud Workflows (RELAYRAG_ENGINE=cloud): the path a dashboard uses.

`ask` starts an execution of RELAYRAG_WORKFLOW (projects/P/locations/L/workflows/NAME, the deployed
workflows/rag.yaml) through the Workflows Executions API with the argument JSON the embedded engine passes
(question, collection, run_id, arm; the stage URLs come from the deployment's RELAYRAG_STAGE_URLS), polls
`get_execution` with exponential backoff until the execution ends, and returns the same result as the
embedded engine (relayrag.records.build_result), read from the docstore the stages write: so the
caller's RELAYRAG_DOCSTORE must be the deployment's (firestore, same project, database and prefix).

While it runs, the run's trace is read from the docstore, one entry per finished stage; each new entry
becomes an event shaped like the embedded interpreter's (`{"event": "step", "step", "ms", "result":
{"ms", "method", "route"}}`), so `--stream` and MCP progress work the same on both engines.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from relayrag import tracing
from relayrag.context import StageContext, default_context
from relayrag.errors import ConfigError, RelayragError, WorkflowError

WORKFLOW_PATTERN = re.compile(r"^projects/[^/]+/locations/[^/]+/workflows/[A-Za-z][A-Za-z0-9_-]{0,63}$")
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED", "UNAVAILABLE")
POLL_INITIAL_S = 0.5
POLL_MAX_S = 5.0
POLL_MULTIPLIER = 1.5
DEFAULT_TIMEOUT_S = 900.0  # an execution of rag.yaml is minutes at most (stage timeouts are 300 s)


class ExecutionTimeout(WorkflowError):
    """The execution did not finish within the client's timeout (it keeps running on Cloud Workflows)."""


def executions_client() -> Any:
    """A google-cloud-workflows ExecutionsClient (Application Default Credentials). Raises ConfigError
    naming the extra when the library is not installed."""
    try:
        from google.cloud.workflows import executions_v1
    except ImportError as exc:
        raise ConfigError("RELAYRAG_ENGINE=cloud needs google-cloud-workflows: pip install 'relayrag[gcp]'") from exc
    import google.auth.exceptions
    try:
        return executions_v1.ExecutionsClient()
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise ConfigError("no Google credentials for the Workflows Executions API: run `gcloud auth "
                          "application-default login` or set GOOGLE_APPLICATION_CREDENTIALS") from exc


def require_workflow(workflow: str | None) -> str:
    """The Workflows resource name, checked; ConfigError says what to set when it is missing or malformed."""
    if not workflow:
        raise ConfigError("RELAYRAG_WORKFLOW is not set: the cloud engine needs the deployed workflow's resource "
                          "name, projects/PROJECT/locations/REGION/workflows/NAME (the `workflow` output of "
                          "`pulumi up` in infra/)")
    if not WORKFLOW_PATTERN.match(workflow):
        raise ConfigError(f"RELAYRAG_WORKFLOW {workflow!r} is not a workflow resource name: expected "
                          "projects/PROJECT/locations/REGION/workflows/NAME")
    return workflow


def _state_name(execution: Any) -> str:
    state = getattr(execution, "state", None)
    name = getattr(state, "name", None)
    return name if isinstance(name, str) else str(state or "STATE_UNSPECIFIED").rsplit(".", 1)[-1]


def _error_message(execution: Any) -> str:
    """The execution's error as one line: a stage's HTTP error body ("stage: message") when the payload
    carries one, else the Workflows error message, plus the failing step when the stack trace names it."""
    err = getattr(execution, "error", None)
    payload = getattr(err, "payload", "") or ""
    context = getattr(err, "context", "") or ""
    msg = payload
    try:
        data = json.loads(payload)
    except (TypeError, ValueError):
        data = None
    if isinstance(data, dict):
        body = data.get("body")
        if isinstance(body, dict) and body.get("error"):
            msg = f"{body['stage']}: {body['error']}" if body.get("stage") else str(body["error"])
            if data.get("code"):
                msg += f" (HTTP {data['code']})"
        elif data.get("message"):
            msg = str(data["message"])
            if data.get("tags"):
                msg += f" [{', '.join(map(str, data['tags']))}]"
    steps = getattr(getattr(err, "stack_trace", None), "elements", None) or []
    where = [getattr(e, "step", "") for e in steps if getattr(e, "step", "")]
    if where:
        msg += f" (at step {where[0]})"
    elif not msg and context:
        msg = context.splitlines()[0]
    return msg or "no error details"


def run_execution(workflow: str, argument: dict, *, client: Any = None,
                  on_state: Callable[[str, float], None] | None = None,
                  poll: Callable[[], None] | None = None,
                  timeout_s: float = DEFAULT_TIMEOUT_S, sleep: Callable[[float], None] = time.sleep,
                  clock: Callable[[], float] = time.monotonic) -> Any:
    """Start one execution of `workflow` with `argument` (a JSON object) and wait for it.

    Polls get_execution every 0.5 s, growing ×1.5 up to 5 s; calls `on_state(state, elapsed_s)` when the
    state changes and `poll()` after every poll (to read progress elsewhere). Returns the workflow's return
    value (the execution's `result`, JSON-decoded). Raises ConfigError (library missing / workflow not set),
    WorkflowError for FAILED / CANCELLED / UNAVAILABLE with the execution's error, ExecutionTimeout after
    `timeout_s` seconds (the execution is not cancelled; its name is in the message). API errors
    (google.api_core exceptions: permission, not found, network) propagate as they are."""
    workflow = require_workflow(workflow)
    client = client if client is not None else executions_client()
    try:
        from google.cloud.workflows.executions_v1 import Execution
        execution = Execution(argument=json.dumps(argument, ensure_ascii=False))
    except ImportError:  # a test double without the library installed
        execution = {"argument": json.dumps(argument, ensure_ascii=False)}  # type: ignore[assignment]
    started = client.create_execution(parent=workflow, execution=execution)
    name = started.name
    t0 = clock()
    last_state, delay, current = None, POLL_INITIAL_S, started
    while True:
        state = _state_name(current)
        elapsed = clock() - t0
        if state != last_state:
            last_state = state
            if on_state:
                on_state(state, elapsed)
        if poll:
            poll()
        if state in TERMINAL:
            break
        if elapsed >= timeout_s:
            raise ExecutionTimeout(f"execution {name} still {state} after {timeout_s:.0f} s; it keeps running "
                                   f"(see `gcloud workflows executions describe {name}`)")
        sleep(min(delay, max(0.0, timeout_s - elapsed)))
        delay = min(POLL_MAX_S, delay * POLL_MULTIPLIER)
        current = client.get_execution(name=name)
    if state == "SUCCEEDED":
        raw = getattr(current, "result", "") or ""
        try:
            return json.loads(raw) if raw else None
        except ValueError as exc:
            raise WorkflowError(f"execution {name} succeeded but its result is not JSON: {raw[:200]!r}") from exc
    if state == "CANCELLED":
        raise WorkflowError(f"execution {name} was cancelled" + (f": {_error_message(current)}"
                                                                 if getattr(current, "error", None) else ""))
    raise WorkflowError(f"execution {name} {state.lower()}: {_error_message(current)}")


class TraceFollower:
    """Turns new trace entries of one run (docstore) into interpreter-shaped step events."""

    def __init__(self, ctx: StageContext, run_id: str, on_event: Callable[[dict], None]):
        self.ctx, self.run_id, self.on_event = ctx, run_id, on_event
        self.seen = 0

    def __call__(self) -> None:
        trace = self.ctx.docstore.get_trace(self.run_id)
        for entry in trace[self.seen:]:
            self.on_event({"event": "step", "step": entry.get("name"), "ms": entry.get("ms"),
                           "result": {"ms": entry.get("ms"), "method": entry.get("method"),
                                      "route": entry.get("route")}})
        self.seen = max(self.seen, len(trace))


def ask(question: str, collection: str, *, run_id: str | None = None, arm: str | None = None,
        filters: list[str] | None = None, on_event: Callable[[dict], None] | None = None,
        on_state: Callable[[str, float], None] | None = None, ctx: StageContext | None = None,
        workflow: str | None = None, client: Any = None, timeout_s: float = DEFAULT_TIMEOUT_S,
        sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> dict:
    """Answer one question on Cloud Workflows; returns what relayrag.engine.local.ask returns.

    `workflow` defaults to RELAYRAG_WORKFLOW; `client` to a google-cloud-workflows ExecutionsClient.
    on_event gets one event per finished stage (from the run's trace in the docstore, so only when the
    docstore is the deployment's); on_state(state, elapsed_s) gets the execution's state changes.
    Raises like `run_execution`, and WorkflowError if the run record is not in this docstore."""
    from relayrag.engine.local import rag_args
    from relayrag.records import build_result
    ctx = ctx or default_context()
    workflow = require_workflow(workflow if workflow is not None else ctx.settings.workflow)
    run_id = run_id or uuid.uuid4().hex
    follow = TraceFollower(ctx, run_id, on_event) if on_event else None
    with tracing.run_span(run_id, collection, engine="cloud") as span:
        value = run_execution(workflow, rag_args(question, collection, run_id=run_id, arm=arm, filters=filters,
                                                 traceparent=tracing.traceparent()),
                              client=client,
                              on_state=on_state, poll=follow, timeout_s=timeout_s, sleep=sleep, clock=clock)
        if span is not None and isinstance(value, dict):
            span.set_attribute("relayrag.route", str(value.get("route") or ""))
    returned = value.get("run_id") if isinstance(value, dict) else None
    if returned and returned != run_id:
        raise WorkflowError(f"the workflow returned run_id {returned!r}, not the {run_id!r} it was given")
    if ctx.docstore.get_run(run_id) is None:
        raise WorkflowError(f"the execution succeeded (returned {json.dumps(value)[:200]}) but run {run_id!r} is "
                            f"not in this docstore (RELAYRAG_DOCSTORE={ctx.settings.docstore}); point "
                            "RELAYRAG_DOCSTORE / RELAYRAG_GCP_PROJECT / RELAYRAG_FIRESTORE_DATABASE at the "
                            "deployment's Firestore to read the answer")
    if follow:
        follow()  # entries written between the last poll and the end
    return build_result(ctx, run_id)


def describe_error(exc: BaseException) -> str | None:
    """A one-line message for Executions API errors (google.api_core), None for other exceptions."""
    try:
        from google.api_core import exceptions as gexc
    except ImportError:
        return None
    if isinstance(exc, gexc.GoogleAPICallError):
        return f"Workflows Executions API: {getattr(exc.code, 'name', exc.code)}: {exc.message}"
    if isinstance(exc, RelayragError):
        return str(exc)
    return None
