"""colpali_search: page-image search (ColPali / ColQwen2 late interaction through byaldi) over the pages of the
run's snapshot version, top `page_k` pages with their MaxSim scores and image references.

Two modes (the workflow's `mode`):
- `visual` (classify routed the question `visual`: it asks what a figure, diagram, chart, photo or scanned page
  shows): the page hits become the run's candidates — the text chunks of each page found, page by page, best
  page first — and the chunks of the top pages are what generate answers from (`relevant`); route `pages`.
- `fuse` (a text question in a collection with page vectors, after retrieve): the page ranking, projected onto
  the chunks of each page, is fused with retrieve's candidate ranking by RRF (k = 60, equal weights; Cormack et
  al. 2009), so a page the text arms missed can still be cited next to text chunks; route `fused`.

When the version has no page vectors (ingested without the `colpali` extra or a model), or the index cannot be
loaded here, nothing changes and the route is `text` (the workflow goes on with text retrieval); the reason is
in the response (`reason`), the trace and the run record (`page_search`). Page candidates go to the run record
(`page_candidates`: doc, source, page, score, rank, image and thumbnail references); the response carries only
scalars.
"""

from __future__ import annotations

import enum

from pydantic import Field

from relayrag.context import StageContext
from relayrag.ingest.snapshot import RUN_PIN_TTL_S
from relayrag.pagerefs import page_refs
from relayrag.retrieval.colpali import PageSearchUnavailable
from relayrag.retrieval.fusion import rrf_fuse
from relayrag.stages.base import Stage, StageRequest, StageResponse, load_run, write_run

RRF_K = 60


class Mode(str, enum.Enum):
    visual = "visual"
    fuse = "fuse"


class ColpaliSearchRequest(StageRequest):
    mode: Mode = Field(Mode.visual, description="visual: the pages found are the candidates; fuse: RRF of the "
                                                "pages found with retrieve's candidates.")


class ColpaliSearchResponse(StageResponse):
    n_pages: int = 0
    top_score: float = 0.0
    reason: str | None = Field(None, description="Why page-image search did not run (route `text`).")


def _fallback(ctx: StageContext, req: ColpaliSearchRequest, reason: str, version: str | None
              ) -> ColpaliSearchResponse:
    patch: dict = {"page_search": {"status": "off", "mode": req.mode.value, "reason": reason}}
    if version and req.mode == Mode.visual:
        patch["snapshot_version"] = version
    write_run(ctx, req.run_id, patch)
    return ColpaliSearchResponse(run_id=req.run_id, route="text", method="text fallback", reason=reason)


def no_vectors_reason(manifest: dict) -> str:
    if not manifest.get("pages"):
        return "no page images in this collection (only PDFs and image files have pages); answered from text"
    return ("this collection's page images have no page vectors (it was ingested without page-image search: "
            "install relayrag[colpali], set RELAYRAG_COLPALI_MODEL and ingest again); answered from text")


def run(req: ColpaliSearchRequest, ctx: StageContext) -> ColpaliSearchResponse:
    run_rec = load_run(ctx, req.run_id)
    collection, question = run_rec["collection"], run_rec["question"]
    version = run_rec.get("snapshot_version")
    if not version:  # the visual route comes before retrieve: lease the version for every later stage
        version = ctx.current_version(collection)
        ctx.docstore.pin_version(collection, version, req.run_id, RUN_PIN_TTL_S)
    snap = ctx.snapshot(collection, version)
    if not snap.manifest.get("page_vectors"):
        return _fallback(ctx, req, no_vectors_reason(snap.manifest), version)
    try:
        scorer = ctx.page_scorer(collection, version)
        hits = scorer.search(question, ctx.settings.page_k)
    except PageSearchUnavailable as exc:
        return _fallback(ctx, req, f"{exc}; answered from text", version)

    rows_of_page: dict[tuple[str, int], list[int]] = {}
    for i, c in enumerate(snap.chunks):
        rows_of_page.setdefault((c["source"], c["page"]), []).append(i)
    page_candidates = []
    for rank, h in enumerate(hits, start=1):
        page_candidates.append({"doc": h.doc, "source": h.source, "sha256": h.sha256, "page": h.page,
                                "score": round(h.score, 6), "rank": rank,
                                "n_chunks": len(rows_of_page.get((h.source, h.page), [])),
                                **page_refs(ctx, snap, h.source, h.page)})
    patch: dict = {"page_candidates": page_candidates, "snapshot_version": snap.version,
                   "page_search": {"status": "on", "mode": req.mode.value, "model": scorer.model_id,
                                   "n_pages": len(hits)}}
    top = round(hits[0].score, 6) if hits else 0.0
    if req.mode == Mode.visual:
        candidates: list[dict] = []
        for rank, h in enumerate(hits, start=1):
            for r in rows_of_page.get((h.source, h.page), []):
                candidates.append({"chunk_id": snap.chunks[r]["chunk_id"], "row": r, "retrieve_score": h.score,
                                   "retrieve_rank": len(candidates) + 1, "page_rank": rank, "page_score": h.score})
        if not candidates:
            reason = "the pages found by their image have no text to answer from; answered from text retrieval"
            patch["page_search"]["reason"] = reason
            write_run(ctx, req.run_id, patch)
            return ColpaliSearchResponse(run_id=req.run_id, route="text", method="colpali (no page text)",
                                         n_pages=len(hits), top_score=top, reason=reason)
        # the chunks of the best pages are the evidence generate reads (no text reranking: the image found them)
        patch.update({"candidates": candidates, "arm": "pages",
                      "relevant": [c["chunk_id"] for c in candidates[: ctx.settings.context_k]]})
        write_run(ctx, req.run_id, patch)
        return ColpaliSearchResponse(run_id=req.run_id, route="pages", method="colpali", n_pages=len(hits),
                                     top_score=top)

    # fuse: RRF of retrieve's candidate ranking and the page ranking projected onto the pages' chunks
    cands = run_rec.get("candidates") or []
    by_row = {c["row"]: dict(c) for c in cands}
    text_rank = [c["row"] for c in cands]
    text_pos = {r: i for i, r in enumerate(text_rank)}
    page_rank: list[int] = []
    page_of_row: dict[int, tuple[int, float]] = {}
    for rank, h in enumerate(hits, start=1):
        rows = sorted(rows_of_page.get((h.source, h.page), []), key=lambda r: text_pos.get(r, len(text_pos) + r))
        for r in rows:
            if r not in page_of_row:
                page_of_row[r] = (rank, h.score)
                page_rank.append(r)
    fused = rrf_fuse([text_rank, page_rank], k=RRF_K)
    out = []
    for row, score in fused[: max(len(cands), ctx.settings.retrieve_k)]:
        c = by_row.get(row) or {"chunk_id": snap.chunks[row]["chunk_id"], "row": row}
        c["fused_score"] = round(score, 6)
        if row in page_of_row:
            c["page_rank"], c["page_score"] = page_of_row[row]
        out.append(c)
    patch["candidates"] = out
    write_run(ctx, req.run_id, patch)
    return ColpaliSearchResponse(run_id=req.run_id, route="fused", method="colpali+rrf", n_pages=len(hits),
                                 top_score=top)


STAGE = Stage("colpali_search", ColpaliSearchRequest, ColpaliSearchResponse, run,
              lambda r: {"n_pages": r.n_pages, "top_score": r.top_score, **({"reason": r.reason} if r.reason else {})})
