"""The stage contract: pydantic request/response, one `run(request, ctx)`, a trace entry per call.

Stages exchange references, not payloads (Cloud Workflows caps variables at 512 KB per execution): the
request names a `run_id`, the stage reads what it needs from the run record in the docstore, writes its
outputs back there, and returns small scalars the workflow can switch on (`route`, counters, scores).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, Field, ValidationError

from relayrag.context import StageContext
from relayrag.errors import RelayragError, StageError


class StageRequest(BaseModel):
    run_id: str = Field(..., min_length=1, max_length=128, description="The run this call belongs to.")


class StageResponse(BaseModel):
    run_id: str
    route: str | None = Field(None, description="What the workflow switches on next, if anything.")
    method: str = Field(..., description="Which method ran (e.g. 'llm', 'extractive', 'thompson').")
    ms: float = Field(0.0, description="Wall time of the stage, milliseconds.")
    llm_error: str | None = Field(None, description="Why the LLM call failed when the stage fell back to its "
                                                    "no-LLM method (`method` then ends in '(llm failed)').")


def llm_failure(exc: Exception) -> str:
    """The reason an LLM call failed, for `StageResponse.llm_error` (one line, at most 500 characters): an
    LLMError's message as is (it names the endpoint), a malformed reply's KeyError/ValueError by type."""
    msg = str(exc) if isinstance(exc, RelayragError) else f"unusable LLM reply ({type(exc).__name__}: {exc})"
    return " ".join(msg.split())[:500]


@dataclass(frozen=True)
class Stage:
    name: str
    request: type[StageRequest]
    response: type[StageResponse]
    fn: Callable[[Any, StageContext], StageResponse]
    summarize: Callable[[Any], dict] | None = None  # the stage's own response type -> trace outputs


def load_run(ctx: StageContext, run_id: str) -> dict:
    run = ctx.docstore.get_run(run_id)
    if run is None:
        raise StageError(f"unknown run_id {run_id!r} (classify creates the run record)")
    return run


def execute(stage: Stage, payload: Any, ctx: StageContext) -> tuple[int, dict]:
    """Validate `payload`, run the stage, record its trace entry. Returns (HTTP status, JSON body).

    400: body invalid (the error names the field); 404: unknown run or collection; 500: anything else,
    with a message but never a stack trace."""
    if not isinstance(payload, dict):
        return 400, {"error": "request body must be a JSON object", "stage": stage.name}
    try:
        req = stage.request.model_validate(payload)
    except ValidationError as exc:
        errs = [{"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()]
        return 400, {"error": "invalid request", "stage": stage.name, "details": errs}
    t0 = time.perf_counter()
    try:
        resp = stage.fn(req, ctx)
    except StageError as exc:
        return 404, {"error": str(exc), "stage": stage.name}
    except RelayragError as exc:
        return 500, {"error": str(exc), "stage": stage.name}
    except Exception as exc:  # no stack traces leave a function
        return 500, {"error": f"{type(exc).__name__}: {exc}", "stage": stage.name}
    resp.ms = round((time.perf_counter() - t0) * 1000, 2)
    entry = {"name": stage.name, "ms": resp.ms, "method": resp.method, "route": resp.route,
             "outputs": stage.summarize(resp) if stage.summarize else {}}
    if resp.llm_error:
        entry["llm_error"] = resp.llm_error
    try:
        ctx.docstore.append_trace(req.run_id, entry)
    except Exception as exc:
        return 500, {"error": f"could not record the trace: {exc}", "stage": stage.name}
    return 200, resp.model_dump(exclude={"llm_error"} if resp.llm_error is None else set())
