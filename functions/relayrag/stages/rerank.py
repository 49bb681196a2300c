"""rerank: re-order the candidates using sentence-level evidence (no cross-encoder ships on PyPI).

No-LLM method `sentence-evidence`: first every candidate is re-ordered by z(chunk cosine) + z(BM25), so
both signals count whichever arm retrieved it; then for the top `rerank_k` (default 100: every candidate
retrieve keeps) compute (a) the best sentence's MiniLM cosine to the question, (b) the chunk's cosine and
(c) the question's BM25 score on the chunk; z-normalise each over the candidates and sum with equal weights
(a convex combination of normalised scores, which beats rank fusion when the scores are informative: Bruch
et al., TOIS 2023). Measured on SciFact (300 test queries): top-30 of the hybrid arm 0.710 → 0.730 (the
same three signals fused by RRF gave 0.717); scoring all 100 candidates instead of the prefiltered top 30
→ 0.740, better on both halves of the queries (docs/DESIGN.md, benchmarks/RESULTS.md). With the sentence
vectors stored at ingestion the evidence costs a lookup, so the cut at 30 (set when every sentence was
embedded at query time) no longer pays. The best sentence is kept for grade and generate; the texts of
the top `grade_k` (the chunks grade judges and generate may cite) go to the run record.
Sentence vectors are looked up in the snapshot (stored at ingestion, relayrag.retrieval.sentences); the
question is embedded once per process and run (backends.embedder.query_vector).
LLM method `llm-pointwise`: a 0–3 relevance label per candidate (top 10), ties broken by evidence rank.
Candidates beyond `rerank_k` keep their prefilter order after the reranked ones.
"""

from __future__ import annotations

import numpy as np

from relayrag.backends.embedder import query_vector
from relayrag.backends.llm import LLMError, complete_json
from relayrag.context import StageContext
from relayrag.ingest.snapshot import index_text
from relayrag.retrieval.bandit import readable
from relayrag.retrieval.reward import coverage, query_idf
from relayrag.retrieval.tokenize import tokenize
from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.base import (Stage, StageRequest, StageResponse, embedder_of, llm_failure, load_run, run_snapshot,
                                  write_run)
from relayrag.stages.evidence import embed_sentences, lexical_coverage


class RerankRequest(StageRequest):
    """Only the run_id: the stage reads its inputs from the run record."""


class RerankResponse(StageResponse):
    n_reranked: int = 0
    top_chunk_id: str | None = None


def sentence_evidence(question: str, chunks: list[dict], embedder, chunk_vecs: np.ndarray,
                      bm25_scores: np.ndarray | None = None, qv: np.ndarray | None = None, *,
                      snap=None, rows: list[int] | None = None, lexical: bool = True) -> list[dict]:
    """Per chunk: {"best_sentence": [start, end], "sentence_cos", "chunk_cos", "lexical", "bm25"}.

    chunk_vecs: float32 [n_chunks, dim], the snapshot's unit vectors of these chunks; with `snap` and the
    chunks' `rows`, sentence vectors come from the snapshot where it stores them (else embedded now).
    lexical=False leaves out "lexical" (the share of the question's tokens in the chunk: grade reads it, for
    the head it judges; tokenising every chunk is most of this function's time)."""
    if qv is None:
        qv = query_vector(embedder, question)
    texts = [c["text"] for c in chunks]
    spans, svecs = embed_sentences(embedder, texts, snap=snap, rows=rows)
    qtok = tokenize(question)
    out = []
    for i, c in enumerate(chunks):
        sims = svecs[i] @ qv if len(svecs[i]) else np.zeros(1)
        j = int(np.argmax(sims))
        out.append({"best_sentence": list(spans[i][j]) if spans[i] else [0, len(c["text"])],
                    "sentence_cos": float(sims[j]), "chunk_cos": float(chunk_vecs[i] @ qv),
                    **({"lexical": chunk_lexical(qtok, c)} if lexical else {}),
                    "bm25": float(bm25_scores[i]) if bm25_scores is not None else 0.0})
    return out


def chunk_lexical(question_tokens: list[str], chunk: dict) -> float:
    """Share of the question's distinct tokens in the chunk's title, context line and text, in [0, 1]: what BM25
    and the reward judge read (`index_text`). Without the title, a passage past a document's first lines (a later
    page, the contact line at the end of a procedure) lost the words of the document's name that a question asks
    by ("… about the purchase requisition procedure?"), and grade judged it below the threshold."""
    return lexical_coverage(question_tokens, index_text(chunk))


EVIDENCE = ("sentence_cos", "chunk_cos", "bm25")
# Where the embedder cannot read the question (relayrag.retrieval.bandit.readable: the English MiniLM on
# Japanese, a quarter of its word pieces [UNK]) its cosines are noise: lexical signals alone rank — BM25 and
# the IDF-weighted share of the question's tokens in the chunk (ja-qa dev, 377 queries, top 30 of BM25:
# BM25 alone 0.944, + plain coverage 0.943, + IDF-weighted coverage 0.947 nDCG@10).
EVIDENCE_CJK = ("bm25", "idf_coverage")


def zsum(columns: list[np.ndarray]) -> np.ndarray:
    """Σ of z-scores: float64 [n]; each column float [n] is standardised over the n candidates."""
    total = np.zeros(len(columns[0]) if columns else 0)
    for v in columns:
        v = np.asarray(v, dtype=np.float64)
        total += (v - v.mean()) / (v.std() + 1e-9)
    return total


def evidence_order(ev: list[dict], keys: tuple[str, ...] = EVIDENCE) -> list[tuple[int, float]]:
    """[(candidate index, score)] best first; score = Σ z-scores of `keys` over the candidates."""
    if not ev:
        return []
    total = zsum([np.array([e[key] for e in ev]) for key in keys])
    order = np.argsort(-total, kind="stable")
    return [(int(i), round(float(total[i]), 4)) for i in order]


def prefilter(cands: list[dict], snap, qv: np.ndarray, bm25: np.ndarray, dense: bool = True) -> list[dict]:
    """All candidates re-ordered by z(chunk cosine) + z(BM25): whatever arm retrieved them, both signals
    count before the expensive sentence evidence is computed for the head."""
    if len(cands) < 2:
        return cands
    rows = [c["row"] for c in cands]
    cos = snap.dense.rows(rows) @ qv
    bm = bm25[rows] if len(bm25) else np.zeros(len(rows))
    total = zsum([cos, bm] if dense else [bm])
    return [cands[i] for i in np.argsort(-total, kind="stable")]


LABEL_SCHEMA = {"type": "object", "properties": {"relevance": {"type": "integer", "minimum": 0, "maximum": 3}},
                "required": ["relevance"], "additionalProperties": False}


def run(req: RerankRequest, ctx: StageContext) -> RerankResponse:
    run_rec = load_run(ctx, req.run_id)
    snap = run_snapshot(ctx, run_rec)
    bm = snap.bm25.scores(run_rec["question"])
    embedder = embedder_of(ctx, snap)
    qv = query_vector(embedder, run_rec["question"])
    lexical_only = not readable(embedder, run_rec["question"])
    cands = prefilter(run_rec.get("candidates") or [], snap, qv, bm, dense=not lexical_only)
    head, tail = cands[: ctx.settings.rerank_k], cands[ctx.settings.rerank_k:]
    chunks = [snap.chunks[c["row"]] for c in head]
    rows = [c["row"] for c in head]
    ev = sentence_evidence(run_rec["question"], chunks, embedder, snap.dense.rows(rows),
                           np.array([bm[r] for r in rows]) if len(bm) else None, qv=qv, snap=snap, rows=rows,
                           lexical=False)
    if lexical_only:
        idf = query_idf(run_rec["question"], snap.bm25)
        for e, c in zip(ev, chunks):
            e["idf_coverage"] = round(coverage(idf, index_text(c)), 4)
    order = evidence_order(ev, EVIDENCE_CJK if lexical_only else EVIDENCE)
    qtok = tokenize(run_rec["question"])
    for i, _ in order[: ctx.settings.grade_k]:  # grade's head: its P(relevant) reads lexical coverage
        ev[i]["lexical"] = chunk_lexical(qtok, chunks[i])
    method, llm_error = "sentence-evidence", None
    if ctx.llm is not None and head:
        try:
            labels = {}
            for i, _ in order[:10]:
                out = complete_json(ctx.llm, [
                    {"role": "system", "content": with_data_rule("Rate how well the passage answers the "
                     "question: 0 = unrelated, 1 = related, 2 = partially answers, 3 = answers it.")},
                    {"role": "user", "content": f"Question: {run_rec['question']}\n\n"
                     f"Passage:\n{quote_document(chunks[i]['text'][:2000])}"}],
                    LABEL_SCHEMA, max_tokens=20)
                labels[i] = int(out["relevance"])
            pos = {i: p for p, (i, _) in enumerate(order)}
            order = sorted(order, key=lambda t: (-labels.get(t[0], -1), pos[t[0]]))
            for i, lab in labels.items():
                ev[i]["llm_label"] = lab
            method = "llm-pointwise"
        except (LLMError, KeyError, ValueError) as exc:
            method, llm_error = "sentence-evidence (llm failed)", llm_failure(exc)
    # the graded head carries its chunk texts, so later stages that need only those texts
    # (hallucination_check: it checks cited chunks, which grade found relevant) read them from the run record
    # instead of loading the whole snapshot
    keep_text = ctx.settings.grade_k
    reranked = [{**head[i], **ev[i], "rerank_score": s, **({"text": chunks[i]["text"]} if n < keep_text else {})}
                for n, (i, s) in enumerate(order)] + tail
    write_run(ctx, req.run_id, {"candidates": reranked, "reranked_k": len(head)})
    return RerankResponse(run_id=req.run_id, method=method, llm_error=llm_error, n_reranked=len(head),
                          top_chunk_id=reranked[0]["chunk_id"] if reranked else None)


STAGE = Stage("rerank", RerankRequest, RerankResponse, run,
              lambda r: {"n_reranked": r.n_reranked, "top_chunk_id": r.top_chunk_id})
