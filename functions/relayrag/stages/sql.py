"""sql: Text-to-SQL over the collection's warehouse — not available in this release.

The route exists so the workflow topology is complete; the stage answers clearly instead of failing.
"""

from __future__ import annotations

from relayrag.context import StageContext
from relayrag.stages.base import Stage, StageRequest, StageResponse, load_run

NOT_AVAILABLE = ("Text-to-SQL is not available yet: this release answers from documents only. "
                 "Ask about the documents in the collection instead.")


class SqlRequest(StageRequest):
    pass


class SqlResponse(StageResponse):
    available: bool = False


def run(req: SqlRequest, ctx: StageContext) -> SqlResponse:
    load_run(ctx, req.run_id)
    ctx.docstore.update_run(req.run_id, {"answer": NOT_AVAILABLE, "citations": [], "grounded": True,
                                         "found": False})
    return SqlResponse(run_id=req.run_id, method="unavailable", available=False)


STAGE = Stage("sql", SqlRequest, SqlResponse, run, lambda r: {"available": r.available})
