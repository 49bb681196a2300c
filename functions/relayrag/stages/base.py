"""The stage contract: pydantic request/response, one `run(request, ctx)`, a trace entry per call.

Stages exchange references, not payloads (Cloud Workflows caps variables at 512 KB per execution): the
request names a `run_id`, the stage reads what it needs from the run record in the docstore, writes its
outputs back there, and returns small scalars the workflow can switch on (`route`, counters, scores).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Callable

from pydantic import BaseModel, Field, ValidationError

from relayrag import tracing
from relayrag.context import StageContext
from relayrag.errors import BadRequestError, RelayragError, StageError, validation_errors

log = logging.getLogger(__name__)


class StageRequest(BaseModel):
    run_id: str = Field(..., min_length=1, max_length=128, description="The run this call belongs to.")
    attempt: int | None = Field(None, ge=0, le=1000, description="Which occurrence of this stage in the run "
                                "(the workflow's loop round). A repeated (run_id, stage, attempt) — an HTTP "
                                "retry after a lost response — replays the stored response and writes nothing.")


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


class FallbackCounter:
    """Per process and stage: how many calls in a row fell back to the no-LLM method because the LLM failed.

    A stage whose LLM path is dead (a wrong model, a thinking model that spends its whole output cap, no
    quota) would otherwise answer on every call with its fallback and look healthy: the count goes into each
    trace entry (`llm_fallbacks`), and a warning is logged on the WARN_AT-th fallback in a row and every
    WARN_EVERY-th after it. A call whose method used the LLM resets the count."""

    WARN_AT, WARN_EVERY = 3, 50

    def __init__(self):
        self._lock = threading.Lock()
        self._streak: dict[str, int] = {}

    def record(self, stage: str, fell_back: bool, used_llm: bool) -> int:
        with self._lock:
            if fell_back:
                n = self._streak[stage] = self._streak.get(stage, 0) + 1
            elif used_llm:
                n = self._streak[stage] = 0
            else:
                n = self._streak.get(stage, 0)
        if fell_back and (n == self.WARN_AT or (n > self.WARN_AT and (n - self.WARN_AT) % self.WARN_EVERY == 0)):
            log.warning("stage %s: the LLM failed on each of its last %d calls; it answers with its no-LLM method "
                        "(see the trace's llm_error)", stage, n)
        return n

    def streak(self, stage: str) -> int:
        with self._lock:
            return self._streak.get(stage, 0)


FALLBACKS = FallbackCounter()


@dataclass(frozen=True)
class Stage:
    name: str
    request: type[StageRequest]
    response: type[StageResponse]
    fn: Callable[[Any, StageContext], StageResponse]
    summarize: Callable[[Any], dict] | None = None  # the stage's own response type -> trace outputs


def write_run(ctx: StageContext, run_id: str, patch: dict) -> None:
    """The one path by which stages write the run record: the patch is checked against the typed record
    (relayrag.records.check_patch: known keys typed, unknown keys kept, size within a Firestore document) and
    merged by `DocStore.update_run`."""
    from relayrag.records import check_patch
    ctx.docstore.update_run(run_id, check_patch(patch))


def load_run(ctx: StageContext, run_id: str) -> dict:
    run = ctx.docstore.get_run(run_id)
    if run is None:
        raise StageError(f"unknown run_id {run_id!r} (classify creates the run record)")
    return run


def run_snapshot(ctx: StageContext, run: dict, *, rows_only: bool = True):
    """The index snapshot this run's candidates index into: the version retrieve pinned in the run record
    (`snapshot_version`), so an ingest committed mid-run never shifts the rows later stages read; the
    current version before retrieve has run. A run retrieved on the distributed backend reads the snapshot of
    its candidates only (relayrag.retrieval.distributed.run_candidates), never the whole collection.

    An embedded collection's run reads the whole version when this process already holds it (one process runs
    every stage: retrieve loaded it), else — with `rows_only` — only the rows its record names and their
    documents (relayrag.retrieval.view.run_view: same rows, same scores, global row numbers kept), so a stage
    instance of its own never loads the collection. rows_only=False (hyde's pseudo-relevance feedback, which
    ranks the whole version) loads it whole."""
    if run.get("candidate_ids") is not None and run.get("snapshot_version"):
        from relayrag.retrieval.distributed import run_candidates
        key = f"{run['collection']}:{run['snapshot_version']}:{hash(tuple(run['candidate_ids']))}"
        return run_candidates(ctx, key, run)
    version = run.get("snapshot_version")
    if rows_only and version and ctx.loaded_snapshot(run["collection"], version) is None:
        from relayrag.retrieval.view import run_view
        view = run_view(ctx, run)
        if view is not None:
            return view
    return ctx.snapshot(run["collection"], version=version)


def embedder_of(ctx: StageContext, snap) -> Any:
    """The embedder that reads `snap` (the one its manifest names: a collection may have been ingested with
    another embedder than this process's default), ctx.embedder for a snapshot that does not say."""
    emb = getattr(snap, "embedder", None)
    return emb if emb is not None else ctx.embedder


def execute(stage: Stage, payload: Any, ctx: StageContext, headers: Mapping[str, str] | None = None
            ) -> tuple[int, dict]:
    """Validate `payload`, run the stage, record its trace entry. Returns (HTTP status, JSON body).

    400: body invalid (the error names the field) or an argument that cannot be honoured (BadRequestError,
    e.g. a filter on an unknown field); 404: unknown run or collection; 500: anything else,
    with a message but never a stack trace. The call is one OpenTelemetry span (relayrag.tracing), a child of
    the request's `traceparent` header when `headers` has one."""
    run_id = str(payload.get("run_id", "")) if isinstance(payload, dict) else ""
    with tracing.stage_span(stage.name, run_id, headers) as span:
        status, body, extra = _execute(stage, payload, ctx)
        tracing.record_stage(span, status, body, extra)
    return status, body


def _execute(stage: Stage, payload: Any, ctx: StageContext) -> tuple[int, dict, dict]:
    """execute's work: (status, body, extra attributes for the span: the LLM fallback streak)."""
    if not isinstance(payload, dict):
        return 400, {"error": "request body must be a JSON object", "stage": stage.name}, {}
    try:
        req = stage.request.model_validate(payload)
    except ValidationError as exc:
        errs = [{"field": where, "message": msg} for where, msg in validation_errors(exc)]
        return 400, {"error": "invalid request", "stage": stage.name, "details": errs}, {}
    # classify creates (or re-creates) the run record: repeating it is idempotent by itself
    key = f"{stage.name}:{req.attempt}" if req.attempt is not None and stage.name != "classify" else None
    if key is not None:
        try:
            done = (ctx.docstore.get_run(req.run_id) or {}).get("stage_results", {}).get(key)
        except Exception as exc:
            return 500, {"error": f"could not read the run: {exc}", "stage": stage.name}, {}
        if done is not None:  # this very call already ran to completion: same answer, no second write
            return 200, done, {}
    t0 = time.perf_counter()
    try:
        resp = stage.fn(req, ctx)
    except StageError as exc:
        return 404, {"error": str(exc), "stage": stage.name}, {}
    except BadRequestError as exc:
        return 400, {"error": str(exc), "stage": stage.name}, {}
    except RelayragError as exc:
        return 500, {"error": str(exc), "stage": stage.name}, {}
    except Exception as exc:  # no stack traces leave a function
        return 500, {"error": f"{type(exc).__name__}: {exc}", "stage": stage.name}, {}
    resp.ms = round((time.perf_counter() - t0) * 1000, 2)
    entry = {"name": stage.name, "ms": resp.ms, "method": resp.method, "route": resp.route,
             "outputs": stage.summarize(resp) if stage.summarize else {}}
    streak = FALLBACKS.record(stage.name, fell_back=bool(resp.llm_error),
                              used_llm=resp.method.startswith("llm") and not resp.llm_error)
    if resp.llm_error:
        entry["llm_error"] = resp.llm_error
        entry["llm_fallbacks"] = streak  # this stage's fallbacks in a row in this process, this one included
    body = resp.model_dump(exclude={"llm_error"} if resp.llm_error is None else set())
    try:
        ctx.docstore.append_trace(req.run_id, entry)
        if key is not None:  # stages of one run are sequential: this read-modify-write has no competitor
            results = dict((ctx.docstore.get_run(req.run_id) or {}).get("stage_results") or {})
            ctx.docstore.update_run(req.run_id, {"stage_results": {**results, key: body}})
    except Exception as exc:
        return 500, {"error": f"could not record the trace: {exc}", "stage": stage.name}, {}
    return 200, body, ({"llm_fallbacks": streak} if resp.llm_error else {})
