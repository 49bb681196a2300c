"""generate: the answer, with citations to document and page — or an honest "not found".

No-LLM method `extractive` (see `extractive`): every sentence of the relevant chunks (top `context_k`
after rerank; when fewer are relevant, grade's ambiguous ones fill the rest, `context_chunks`) is read with
its local context (title, page heading, section heading, previous sentence, a table row's column names) and
scored; the answerability check (stages/answerability.py, after Google's "sufficient context", ICLR 2025)
decides whether any sentence answers the question. If one does, the best and up to two more
(MMR, λ = 0.7; Carbonell & Goldstein 1998) are quoted verbatim and cited, duplicates
once with every source (each document page once), a table cell as "row — column: value"; on
regeneration only the best one. If none does, the answer is "not found" in the question's language, naming
the closest passages as related reading (`related` in the run record). LLM method `llm`: the same evidence as
numbered passages in, an answer with [n] markers out (or NOT_FOUND); markers become citations. Chitchat: a
short reply (template without LLM). Visual route (colpali_search found the pages by their image): the answer
says so; when the pages' text does not answer the question it quotes the best page's own text and cites that
page (`page-image (extractive)`). A question about what a document is about, without an LLM: its title
and purpose statement or lead sentences, cited (stages/summary.py, method `summary (extractive)`); a question for
a document's title, name or reference number: the best-matching document's title or reference line, cited
(stages/titles.py, method `title (extractive)`), never a body sentence.
Citations and related passages carry the page image and thumbnail.

The methods live beside this module: stages/extractive.py (no LLM), stages/answer_llm.py (LLM),
stages/page_answer.py (page images), stages/answer_text.py (the fixed texts), stages/answer_parts.py (the
pieces they share); this module routes between them and writes the run record.
"""
from __future__ import annotations

from typing import Any

from relayrag.backends.llm import LLMError, accepts_images
from relayrag.context import StageContext
from relayrag.pagerefs import attach
from relayrag.stages.answer_llm import llm_answer
from relayrag.stages.answer_parts import MARKER, NOT_FOUND, split_answer  # noqa: F401  (re-exported: callers import them from here)
from relayrag.stages.page_answer import (  # noqa: F401
    PAGE_QUOTE, VISION, VISION_PAGES, by_image_note, found_by_image, page_images_for_llm, page_quote_answer,
    page_search_note, vision_answer, vision_messages)
from relayrag.stages.answer_text import (  # noqa: F401
    EXPIRED_TEXT, NOT_FOUND_TEXT, VALID_UNTIL, chitchat_text, corpus_script, expired_note, not_found_answer,
    not_found_text,
    sql_fallback_note, states_no_facts)
from relayrag.stages.answer_shape import asks_document_name
from relayrag.text import has_cjk
from relayrag.stages.answerability import asks_for_total, expected_answer_type
from relayrag.stages.base import (Stage, StageRequest, StageResponse, embedder_of, llm_failure, load_run, run_snapshot,
                                  write_run)
from relayrag.stages.summary import (SUMMARY, asks_what_document_is, covers_the_question, is_summary_question,
                                     named_document, summary_answer, which_note)
from relayrag.stages.titles import TITLE, title_answer, title_question
from relayrag.stages.extractive import (  # noqa: F401
    DUPLICATE_COSINE, EVIDENCE_K, citation, doc_openings, extractive, local_context, page_headings, table_cell,
    total_cell, total_row_chunks, with_metadata, with_table_header)


class GenerateRequest(StageRequest):
    """Only the run_id: the stage reads its inputs from the run record."""


class GenerateResponse(StageResponse):
    n_citations: int = 0
    regen_count: int = 0
    found: bool = True


def run(req: GenerateRequest, ctx: StageContext) -> GenerateResponse:
    run_rec = load_run(ctx, req.run_id)
    question, collection = run_rec["question"], run_rec["collection"]
    regen = int(run_rec.get("regen_count", 0))
    llm_error = None
    if run_rec.get("route") == "chitchat":
        holds = run_rec.get("small_talk") or {}
        method, answer = "template", chitchat_text(question, collection, holds)
        if ctx.llm is not None:
            what = ("documents and tables" if holds.get("has_tables") and holds.get("has_documents", True)
                    else "tables" if holds.get("has_tables") else "documents")
            try:
                reply = ctx.llm.complete([
                    {"role": "system", "content": "You are relayrag, an assistant for a collection's " + what + ". "
                     "Reply briefly and kindly, in the language of the user's message: to thanks, say you're "
                     "welcome; to a goodbye, say goodbye; to a greeting, greet and offer to answer questions about "
                     f"the {what} of the collection '{collection}'. State no facts, numbers, steps or advice: facts "
                     "come only from the collection, with their sources."},
                    {"role": "user", "content": question}], temperature=0.3, max_tokens=120).strip()
                if reply and states_no_facts(reply):
                    answer, method = reply, "llm"
                else:
                    method = "template (llm reply stated facts)"
            except LLMError as exc:
                method, llm_error = "template (llm failed)", llm_failure(exc)
        write_run(ctx, req.run_id, {"answer": answer, "citations": [], "answer_sentences": [],
                                             "found": True})
        return GenerateResponse(run_id=req.run_id, method=method, llm_error=llm_error, n_citations=0,
                                regen_count=regen)

    snap = run_snapshot(ctx, run_rec)
    chunks, fill = context_chunks(run_rec, snap, ctx.settings.context_k)
    if chunks and (asks_for_total(question) or expected_answer_type(question)):
        chunks += total_row_chunks(snap, chunks)  # a table's total row, when retrieval brought only rows it sums
    summary = None
    unnamed_summary = None  # a summary of the best-matching document for a question that names none
    rows = [c["row"] for c in run_rec.get("candidates") or []]
    what_doc = asks_what_document_is(question, snap, rows) if ctx.llm is None else None  # "What is the X register?"
    if ctx.llm is None and (is_summary_question(question) or what_doc):  # "what is this document about?": its title
        named = what_doc or (named_document(question, snap, rows) if rows else None)  # and lead sentences
        top = chunks or [snap.chunks[c["row"]] for c in (run_rec.get("candidates") or [])[:1]]
        if named is not None:  # "what is the leak response policy about?": that document, whatever ranked first
            top = [c for c in top if c["source"] == named] or [snap.chunks[r] for r in rows
                                                              if snap.chunks[r]["source"] == named][:1]
        if not top and snap.chunks and len({c["source"] for c in snap.chunks}) == 1:
            top = snap.chunks[:1]  # "this document" names no word to retrieve by: a one-document collection's
        if named is None and top and not covers_the_question(question, snap, top[0]["source"]):
            top = []  # "what is the forklift policy about?" where no document says forklift: no summary
        summary = summary_answer(top, snap, citation) if top else None
        chunks = chunks or top
        if summary is not None and named is None and len({c["source"] for c in snap.chunks}) > 1:
            unnamed_summary = top[0]
    titled = None
    kind = title_question(question) if ctx.llm is None and summary is None else None
    if kind is not None:  # "what is the title / reference number of the … manual?": a document's title, cited
        rows = [c["row"] for c in run_rec.get("candidates") or []]
        titled = title_answer(question, kind, snap, rows, citation,
                              {c["row"]: float(c.get("p_relevant") or 0.0) for c in run_rec.get("candidates") or []})
        if titled is None and kind != "which":
            chunks = []  # a title is never answered by a body sentence: no document of that description
        elif titled is not None:
            chunks = chunks or [snap.chunks[snap.row_of[titled[1][0]["chunk_id"]]]]
    # a misspelt question (retrieve searched for its correction too): answered as corrected only when the
    # question as typed finds no answer; no LLM (one reads typos by itself)
    respelled = (run_rec.get("respelled") or {}).get("text") if ctx.llm is None and summary is None and kind is None \
        else None
    searched = None
    if not chunks and respelled:  # grade kept nothing for the words as typed: the corrected question's best
        chunks = [snap.chunks[c["row"]] for c in (run_rec.get("candidates") or [])[: ctx.settings.context_k]]
        question = searched = respelled
    elif summary is None and kind is None:  # a title or a summary reads its own documents, never the fill
        chunks = chunks + fill
    if not chunks:
        related = attach(ctx, snap, closest_related(run_rec, snap))
        # the gate that refused, recorded like the answerability check's (issue 31: these refusals named none):
        # grade judged no retrieved passage relevant, so no sentence was read
        write_run(ctx, req.run_id, {"answer": not_found_answer(run_rec, related, corpus_script(snap)),
                                    "citations": [], "answer_sentences": [], "found": False,
                                    "related": related, "answerability": {"failed": ["relevant"]}})
        return GenerateResponse(run_id=req.run_id, method="not-found", regen_count=regen, found=False)

    if titled is not None:
        (sentences, citations), method = titled, TITLE
        decision: dict[str, Any] = {"answerable": True, "evidence": [], "related": [], "support": {"title": kind}}
    else:
        sentences, citations, decision = extractive(question, chunks, embedder_of(ctx, snap), 1 if regen else 3,
                                                    snap.bm25, snap)
        method = "extractive"
    if respelled and searched is None and not (decision["answerable"] and sentences) and not found_by_image(run_rec):
        again = extractive(respelled, chunks, embedder_of(ctx, snap), 1 if regen else 3, snap.bm25, snap)
        if again[2]["answerable"] and again[0]:
            (sentences, citations, decision), searched = again, respelled
    if decision["answerable"] and sentences and asks_document_name(question) and titled is None:
        sentences = with_document_title(sentences, citations, snap)
    if summary is not None:
        sentences, citations = summary
        method, decision = SUMMARY, {**decision, "answerable": True}
    by_image = found_by_image(run_rec)
    seen = False
    if by_image and accepts_images(ctx.settings, ctx.llm):
        try:  # a vision-capable LLM reads the pages found by their image
            seen_answer = vision_answer(ctx, run_rec, snap, strict=bool(regen))
            if seen_answer is not None:
                sentences, citations = seen_answer
                method, decision, seen = VISION, {**decision, "answerable": True}, True
        except LLMError as exc:
            llm_error = llm_failure(exc)
    if ctx.llm is not None and decision["evidence"] and not seen:
        try:
            llm_sents, llm_cits = llm_answer(ctx.llm, question, chunks, decision["evidence"], strict=bool(regen))
            sentences, citations, method = llm_sents, llm_cits, "llm"
            decision = {**decision, "answerable": bool(llm_sents)}
        except LLMError as exc:
            method, llm_error = "extractive (llm failed)", llm_failure(exc)
    if by_image and (not decision["answerable"] or not sentences):
        quoted = page_quote_answer(run_rec, snap)
        if quoted is not None:  # the page was found by its image: show it, quoting its own text
            sentences, citations = quoted
            method, decision = PAGE_QUOTE, {**decision, "answerable": True}
    if not decision["answerable"] or not sentences:
        # no sentence of the chunks read scored (grade's ambiguous fill alone, nothing relevant): the closest
        # candidates are the related reading, as when nothing was read
        related = attach(ctx, snap, decision["related"] or closest_related(run_rec, snap))
        if decision["support"] is None and not run_rec.get("relevant"):
            decision = {**decision, "support": {"failed": ["relevant"]}}
        answer = not_found_answer(run_rec, related, corpus_script(snap))
        if by_image:
            answer += " " + by_image_note(run_rec, answered=False)
        write_run(ctx, req.run_id, {
            "answer": answer, "citations": [], "answer_sentences": [],
            "found": False, "related": related, "answerability": decision["support"], "generate_method": method,
            "context_chunk_ids": [c["chunk_id"] for c in chunks]})
        return GenerateResponse(run_id=req.run_id, method=f"{method} (not answerable)", llm_error=llm_error,
                                regen_count=regen, found=False)
    answer = " ".join(f"{s['text']}" + "".join(f" [{n}]" for n in s["cites"]) for s in sentences)
    if by_image:
        answer = by_image_note(run_rec, answered=True, cited=citations[0] if citations else None,
                               read_image=method == VISION) + " " + answer
    answer += page_search_note(run_rec)
    if searched and sentences:
        answer += f" (searched for: {searched})"
    if unnamed_summary is not None and method == SUMMARY:
        answer += " " + which_note(question, unnamed_summary)
    citations = attach(ctx, snap, with_metadata(citations, snap))
    write_run(ctx, req.run_id, {"answer": answer, "citations": citations, "answer_sentences": sentences,
                                         "found": True, "generate_method": method, "searched_for": searched,
                                         "answerability": decision["support"], "related": [],
                                         "context_chunk_ids": [c["chunk_id"] for c in chunks]})
    return GenerateResponse(run_id=req.run_id, method=method, llm_error=llm_error, n_citations=len(citations),
                            regen_count=regen)


STAGE = Stage("generate", GenerateRequest, GenerateResponse, run,
              lambda r: {"n_citations": r.n_citations, "regen_count": r.regen_count, "found": r.found})


def closest_related(run_rec: dict, snap) -> list[dict]:
    """Up to 3 of rerank's first candidates as related reading for a "not found": [{"doc", "page", "chunk_id",
    "quote" (the best sentence, ≤ 300 characters)}], without page images (`attach` adds them)."""
    related = []
    for c in (run_rec.get("candidates") or [])[:3]:
        ch = snap.chunks[c["row"]]
        bs = c.get("best_sentence") or [0, min(300, len(ch["text"]))]
        related.append({"doc": ch["doc"], "page": ch["page"], "chunk_id": ch["chunk_id"],
                        "quote": " ".join(ch["text"][bs[0]:bs[1]].split())[:300]})
    return related


def context_chunks(run_rec: dict, snap, k: int) -> tuple[list[dict], list[dict]]:
    """(the relevant chunks, at most k, in rerank's order; the ambiguous chunks that fill the rest up to k).

    Grade's relevant set is P(relevant) >= 0.5; the passage that answers in other words than the question's often
    scores just below (grade.AMBIGUOUS), and with nothing relevant the answer step read nothing at all. Reading the
    ambiguous ones after the relevant ones costs nothing in precision that the answerability check does not guard:
    it decides on the sentence, whatever the passage's P."""
    cands = run_rec.get("candidates") or []
    relevant = set(run_rec.get("relevant") or [])
    chunks = [snap.chunks[c["row"]] for c in cands if c["chunk_id"] in relevant][:k]
    ambiguous = set(run_rec.get("ambiguous") or []) - relevant
    fill = [snap.chunks[c["row"]] for c in cands if c["chunk_id"] in ambiguous][: max(0, k - len(chunks))]
    return chunks, fill


def with_document_title(sentences: list[dict], citations: list[dict], snap) -> list[dict]:
    """The answer to "which document …?" / 「…規程の名称は」: its first sentence led by the title of the document it
    cites ("Leak Response Policy: 1. Purpose This policy sets …"), the way a summary answer is; the sentence's
    `source` (what the check verifies against the passage) stays the quoted sentence. Unchanged when the chunk has
    no title or the sentence already says it."""
    first = sentences[0]
    cited = {c["n"]: c for c in citations}
    cit = cited.get(first["cites"][0]) if first.get("cites") else None
    row = snap.row_of.get(cit["chunk_id"]) if cit is not None else None
    title = " ".join((snap.chunks[row].get("title") or "").split()) if row is not None else ""
    if not title or title.lower() in first["text"].lower():
        return sentences
    head = f"「{title}」:" if has_cjk(title) else f"{title}:"
    return [{**first, "text": f"{head} {first['text']}", "source": first.get("source") or first["text"]},
            *sentences[1:]]
