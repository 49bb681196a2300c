"""generate: the answer, with citations to document and page.

No-LLM method `extractive`: from the relevant chunks (top `context_k` after rerank) score every sentence
by 0.6·cosine(question, sentence) + 0.4·lexical coverage, take the best and up to two more chosen by MMR
(λ = 0.7; Carbonell & Goldstein 1998) that score ≥ 80 % of the best; each sentence is quoted verbatim and
cited. On regeneration only the single best sentence is used. LLM method `llm`: numbered passages in,
an answer with [n] markers out; markers become citations. Nothing relevant → an honest "not found".
Chitchat: a short reply (template without LLM).
"""

from __future__ import annotations

import re


from relayrag.backends.llm import LLMError
from relayrag.context import StageContext
from relayrag.retrieval.tokenize import tokenize
from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.base import Stage, StageRequest, StageResponse, llm_failure, load_run, run_snapshot, write_run
from relayrag.stages.evidence import embed_sentences, query_idf, weighted_coverage
from relayrag.text import has_cjk

MARKER = re.compile(r"\s*\[(\d+)\]")


class GenerateRequest(StageRequest):
    """Only the run_id: the stage reads its inputs from the run record."""


class GenerateResponse(StageResponse):
    n_citations: int = 0
    regen_count: int = 0
    found: bool = True


def not_found_text(question: str, collection: str) -> str:
    if has_cjk(question):
        return f"コレクション「{collection}」の文書には、この質問への答えが見つかりませんでした。"
    return f"I could not find an answer to this in the documents of collection '{collection}'."


def chitchat_text(question: str, collection: str) -> str:
    if has_cjk(question):
        return f"こんにちは。コレクション「{collection}」の文書について質問してください。出典付きで答えます。"
    return (f"Hello! I answer questions about the documents in collection '{collection}', "
            "with citations to document and page. What would you like to know?")


def citation(chunk: dict, n: int, quote: str) -> dict:
    return {"n": n, "doc": chunk["doc"], "page": chunk["page"], "chunk_id": chunk["chunk_id"],
            "source": chunk["source"], "quote": quote}


def extractive(question: str, chunks: list[dict], embedder, max_sentences: int, bm25_index=None
               ) -> tuple[list[dict], list[dict]]:
    """Returns (answer sentences [{text, cites: [n]}], citations)."""
    spans, svecs = embed_sentences(embedder, [c["text"] for c in chunks])
    qv = embedder.embed([question], kind="query")[0]
    qtok = tokenize(question)
    weights = query_idf(qtok, bm25_index) if bm25_index is not None else {t: 1.0 for t in qtok}
    cands = []  # (score, chunk index, span, vector)
    for i, c in enumerate(chunks):
        for (s, e), v in zip(spans[i], svecs[i]):
            text = c["text"][s:e]
            if len(text) < 12:
                continue
            score = 0.6 * float(v @ qv) + 0.4 * weighted_coverage(weights, text)
            if len(text) < 30:
                score -= 0.15  # fragments ("Iowa Ethanol", headings) rarely answer anything
            cands.append((score, i, (s, e), v))
    if not cands:
        return [], []
    cands.sort(key=lambda t: -t[0])
    chosen = [cands[0]]
    while len(chosen) < max_sentences:
        best, best_val = None, -1e9
        for cand in cands[1:40]:
            if any(cand is c for c in chosen) or cand[0] < 0.8 * cands[0][0]:
                continue
            redundancy = max(float(cand[3] @ c[3]) for c in chosen)
            val = 0.7 * cand[0] - 0.3 * redundancy
            if val > best_val:
                best, best_val = cand, val
        if best is None:
            break
        chosen.append(best)
    sentences: list[dict] = []
    citations: list[dict] = []
    num_of: dict = {}
    for score, i, (s, e), _ in chosen:
        text = " ".join(chunks[i]["text"][s:e].split())
        quote = with_table_header(chunks[i]["text"], s, text, chunks[i].get("context", ""))
        if i not in num_of:
            num_of[i] = len(citations) + 1
            citations.append(citation(chunks[i], num_of[i], quote))
        elif text not in citations[num_of[i] - 1]["quote"]:
            citations[num_of[i] - 1]["quote"] += " … " + quote
        sentences.append({"text": text, "cites": [num_of[i]]})
    return sentences, citations


def with_table_header(chunk_text: str, start: int, row: str, context: str = "") -> str:
    """A table row quoted with its table's first row (the header): from the chunk if it holds it, else the
    chunk's `context` (the header of a table continued from an earlier chunk). A bare row of numbers means
    little without its column names."""
    if " | " not in row:
        return row
    lines = chunk_text[:start].split("\n")
    above = lines[:-1] if lines and not lines[-1].strip() else lines
    header = None
    for k in range(len(above) - 1, -1, -1):
        if " | " not in above[k]:
            break
        header = above[k]
    else:  # the table runs up to the chunk's first line: it started in an earlier chunk
        header = context or header
    if header and " ".join(header.split()) != row:
        return " ".join(header.split()) + " / " + row
    return row


def split_answer(answer: str) -> list[dict]:
    """LLM answer → [{text, cites}] by sentence; markers [n] attach to the sentence they end."""
    from relayrag.text import sentences
    out = []
    for sent in sentences(answer):
        cites = [int(m) for m in MARKER.findall(sent)]
        text = MARKER.sub("", sent).strip()
        if text:
            out.append({"text": text, "cites": cites})
    return out


def run(req: GenerateRequest, ctx: StageContext) -> GenerateResponse:
    run_rec = load_run(ctx, req.run_id)
    question, collection = run_rec["question"], run_rec["collection"]
    regen = int(run_rec.get("regen_count", 0))
    llm_error = None
    if run_rec.get("route") == "chitchat":
        method, answer = "template", chitchat_text(question, collection)
        if ctx.llm is not None:
            try:
                answer = ctx.llm.complete([
                    {"role": "system", "content": "You are relayrag, a document assistant. Reply briefly and "
                     f"kindly; offer to answer questions about the collection '{collection}'."},
                    {"role": "user", "content": question}], temperature=0.3, max_tokens=120).strip() or answer
                method = "llm"
            except LLMError as exc:
                method, llm_error = "template (llm failed)", llm_failure(exc)
        write_run(ctx, req.run_id, {"answer": answer, "citations": [], "answer_sentences": [],
                                             "found": True})
        return GenerateResponse(run_id=req.run_id, method=method, llm_error=llm_error, n_citations=0,
                                regen_count=regen)

    snap = run_snapshot(ctx, run_rec)
    relevant = set(run_rec.get("relevant") or [])
    chunks = [snap.chunks[c["row"]] for c in run_rec.get("candidates") or [] if c["chunk_id"] in relevant]
    chunks = chunks[: ctx.settings.context_k]
    if not chunks:
        write_run(ctx, req.run_id, {"answer": not_found_text(question, collection), "citations": [],
                                             "answer_sentences": [], "found": False})
        return GenerateResponse(run_id=req.run_id, method="not-found", regen_count=regen, found=False)

    method = "extractive"
    sentences, citations = [], []
    if ctx.llm is not None:
        try:
            ctx_text = "\n\n".join(quote_document(c["text"], n=n, doc=c["doc"], page=c["page"])
                                   for n, c in enumerate(chunks, start=1))
            strict = " Copy sentences from the passages where you can; add nothing they do not state." if regen else ""
            answer = ctx.llm.complete([
                {"role": "system", "content": with_data_rule(
                    "Answer the question using only the numbered passages (their n attribute). End every "
                    "sentence with the number of the passage that supports it, like [1]. If the passages do not "
                    "contain the answer, say you don't know. Answer in the question's language." + strict)},
                {"role": "user", "content": f"Passages:\n{ctx_text}\n\nQuestion: {question}"}],
                temperature=0.0, max_tokens=400)
            sentences = [s for s in split_answer(answer)]
            used = sorted({n for s in sentences for n in s["cites"] if 1 <= n <= len(chunks)})
            cand_by_id = {c["chunk_id"]: c for c in run_rec["candidates"]}
            for n in used:
                ch = chunks[n - 1]
                bs = cand_by_id.get(ch["chunk_id"], {}).get("best_sentence") or [0, min(300, len(ch["text"]))]
                citations.append(citation(ch, n, ch["text"][bs[0]:bs[1]]))
            method = "llm"
        except LLMError as exc:
            method, llm_error = "extractive (llm failed)", llm_failure(exc)
    if method != "llm":
        sentences, citations = extractive(question, chunks, ctx.embedder, 1 if regen else 3, snap.bm25)
    answer = " ".join(f"{s['text']}" + "".join(f" [{n}]" for n in s["cites"]) for s in sentences)
    write_run(ctx, req.run_id, {"answer": answer, "citations": citations, "answer_sentences": sentences,
                                         "found": True, "generate_method": method,
                                         "context_chunk_ids": [c["chunk_id"] for c in chunks]})
    return GenerateResponse(run_id=req.run_id, method=method, llm_error=llm_error, n_citations=len(citations),
                            regen_count=regen)


STAGE = Stage("generate", GenerateRequest, GenerateResponse, run,
              lambda r: {"n_citations": r.n_citations, "regen_count": r.regen_count, "found": r.found})
