"""colpali_search: page-image search (ColPali / ColQwen2 late interaction through byaldi) over the pages of the
run's snapshot version, top `page_k` pages with their MaxSim scores and image references.

Two modes (the workflow's `mode`):
- `visual` (classify routed the question `visual`: it asks what a figure, diagram, chart, photo or scanned page
  shows): the page hits become the run's candidates — the text chunks of each page found, page by page, best
  page first — and the chunks of the top pages are what generate answers from (`relevant`); route `pages`.
- `fuse` (a text question, after retrieve, only when retrieve said page-image search can serve the snapshot:
  a model is configured here and the snapshot has page vectors from it): the page ranking, projected onto the
  chunks of each page, is fused with retrieve's candidate ranking by RRF (k = 60, equal weights; Cormack et
  al. 2009), so a page the text arms missed can still be cited next to text chunks; route `fused`. Every text
  candidate stays, and text retrieval's best candidate keeps first place unless a chunk fused ahead of it covers
  the question's terms better by its own text (`anchor_text_top`): a page ranked high by its image alone never
  pushes the best text passage down.

Cost only when used: without a configured model (RELAYRAG_COLPALI_MODEL unset, the extra missing, a test model
refused) the stage reads and loads nothing and answers route `text` (text questions never call it: retrieve says
page_vectors 0); with one, it reads the version's manifest first and loads neither the snapshot nor the page index
when the version has no page vectors from that model. The model is loaded once per process, the page index once
per version (StageContext.page_scorer).

When page-image search cannot run, nothing changes and the route is `text` (the workflow goes on with text
retrieval); the cause (`no_model`, `no_images`, `no_vectors`, `other_model`, `unavailable`) and the reason are in
the response (`reason`), the trace and the run record (`page_search`), and generate adds a sentence saying so to
the answer (relayrag.stages.page_answer). Page candidates go to the run record (`page_candidates`: doc, source,
page, score, rank, image and thumbnail references); the response carries only scalars.
"""

from __future__ import annotations

import enum

from pydantic import Field

from relayrag.context import StageContext
from relayrag.ingest.snapshot import RUN_PIN_TTL_S, index_text, read_manifest
from relayrag.pagerefs import page_refs
from relayrag.retrieval.colpali import PageSearchUnavailable
from relayrag.retrieval.fusion import rrf_fuse
from relayrag.retrieval.page_model import vectors_reason
from relayrag.retrieval.reward import coverage, query_idf
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


def _fallback(ctx: StageContext, req: ColpaliSearchRequest, cause: str, reason: str, version: str | None
              ) -> ColpaliSearchResponse:
    patch: dict = {"page_search": {"status": "off", "mode": req.mode.value, "cause": cause,
                                   "reason": f"{reason}; answered from text"}}
    if version and req.mode == Mode.visual:
        patch["snapshot_version"] = version
    write_run(ctx, req.run_id, patch)
    return ColpaliSearchResponse(run_id=req.run_id, route="text", method="text fallback",
                                 reason=patch["page_search"]["reason"])


def page_search_reason(ctx: StageContext, manifest: dict) -> tuple[str, str] | None:
    """(cause, reason) when page-image search cannot serve a question on the snapshot version of `manifest` in
    this process — `no_model` (none configured, the extra missing, a test model refused) or a manifest cause
    (relayrag.retrieval.page_model.vectors_reason) — else None. Loads nothing."""
    off = ctx.page_search_off()
    if off:
        return "no_model", off
    return vectors_reason(manifest, ctx.page_model())


def run(req: ColpaliSearchRequest, ctx: StageContext) -> ColpaliSearchResponse:
    run_rec = load_run(ctx, req.run_id)
    collection, question = run_rec["collection"], run_rec["question"]
    version = run_rec.get("snapshot_version")
    off = ctx.page_search_off()
    if off:  # no model here: nothing is read or loaded, the text route answers
        return _fallback(ctx, req, "no_model", off, version)
    if not version:  # the visual route comes before retrieve: lease the version for every later stage
        version = ctx.current_version(collection)
        ctx.docstore.pin_version(collection, version, req.run_id, RUN_PIN_TTL_S)
    why = vectors_reason(read_manifest(ctx.blobstore, collection, version), ctx.page_model())
    if why:  # the version's manifest says it has no usable page vectors: the snapshot is not loaded
        return _fallback(ctx, req, why[0], why[1], version)
    try:
        scorer = ctx.page_scorer(collection, version)
        hits = scorer.search(question, ctx.settings.page_k)
    except PageSearchUnavailable as exc:
        return _fallback(ctx, req, "unavailable", str(exc), version)
    snap = ctx.snapshot(collection, version)

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
    order = anchor_text_top(question, [row for row, _ in fused], text_rank, snap)
    score_of = dict(fused)
    out = []
    for row in order:  # every text candidate stays; the pages' chunks the text arms missed join them
        c = by_row.get(row) or {"chunk_id": snap.chunks[row]["chunk_id"], "row": row}
        c["fused_score"] = round(score_of[row], 6)
        if row in page_of_row:
            c["page_rank"], c["page_score"] = page_of_row[row]
        out.append(c)
    patch["candidates"] = out
    write_run(ctx, req.run_id, patch)
    return ColpaliSearchResponse(run_id=req.run_id, route="fused", method="colpali+rrf", n_pages=len(hits),
                                 top_score=top)


def anchor_text_top(question: str, order: list[int], text_rank: list[int], snap) -> list[int]:
    """`order` (fused rows, best first) with text retrieval's best candidate moved back to first place unless a
    row fusion put ahead of it is better supported by its own text: its IDF-weighted coverage of the question's
    terms (relayrag.retrieval.reward.coverage) is higher than the text top's. So a page ranked high by its image
    alone — a weak or random page scorer — never pushes the passage text retrieval found best down; only a page
    whose text says more of what was asked may precede it."""
    if not text_rank or text_rank[0] not in order:
        return order
    top = text_rank[0]
    at = order.index(top)
    if at == 0:
        return order
    idf = query_idf(question, snap.bm25)
    top_cov = coverage(idf, index_text(snap.chunks[top]))
    ahead = [r for r in order[:at] if coverage(idf, index_text(snap.chunks[r])) > top_cov]
    return ahead + [top] + [r for r in order if r != top and r not in ahead]


STAGE = Stage("colpali_search", ColpaliSearchRequest, ColpaliSearchResponse, run,
              lambda r: {"n_pages": r.n_pages, "top_score": r.top_score, **({"reason": r.reason} if r.reason else {})})
