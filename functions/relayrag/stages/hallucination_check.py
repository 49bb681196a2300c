"""hallucination_check: is every answer sentence supported by the passage it cites?

No-LLM method `sentence-support`: a sentence is supported if it appears verbatim (whitespace-normalised)
in a cited chunk, or its best MiniLM cosine against the cited chunks' sentences is >= 0.80, or >= 80 % of
its BM25 tokens occur in one cited sentence. A sentence with no citation is unsupported. LLM method `llm`:
a JSON verdict listing unsupported claims. Routes: `grounded` (end); `regenerate` while regen_count <
max_regenerations; then `refuse` — the answer is replaced by an honest refusal that keeps the citations
found, so the user can read the sources.
"""

from __future__ import annotations

from relayrag.backends.llm import LLMError, complete_json
from relayrag.context import StageContext
from relayrag.retrieval.tokenize import tokenize
from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.base import Stage, StageRequest, StageResponse, llm_failure, load_run, run_snapshot, write_run
from relayrag.stages.evidence import embed_sentences, lexical_coverage
from relayrag.text import has_cjk, sentences as split_sents

SUPPORT_COSINE = 0.80
SUPPORT_LEXICAL = 0.80


class CheckRequest(StageRequest):
    """Only the run_id: the stage reads its inputs from the run record."""


class CheckResponse(StageResponse):
    grounded: bool = False
    n_sentences: int = 0
    n_unsupported: int = 0
    regen_count: int = 0


def _norm(t: str) -> str:
    return " ".join(t.split()).lower()


def unsupported_sentences(answer_sentences: list[dict], cited: dict[int, dict], embedder) -> list[int]:
    """Indices of answer sentences not supported by their cited chunks."""
    bad = []
    for k, s in enumerate(answer_sentences):
        chunks = [cited[n] for n in s["cites"] if n in cited]
        if not chunks:
            bad.append(k)
            continue
        text = s["text"]
        if any(_norm(text) in _norm(c["text"]) for c in chunks):
            continue
        toks = tokenize(text)
        cand_sents = [cs for c in chunks for cs in split_sents(c["text"])]
        if toks and any(lexical_coverage(toks, cs) >= SUPPORT_LEXICAL for cs in cand_sents):
            continue
        _, vecs = embed_sentences(embedder, ["\n".join(cand_sents)], max_sentences=200)
        sv = embedder.embed([text], kind="document")[0]
        if len(vecs[0]) and float((vecs[0] @ sv).max()) >= SUPPORT_COSINE:
            continue
        bad.append(k)
    return bad


VERDICT = {"type": "object", "properties": {"unsupported": {"type": "array", "items": {"type": "integer"}}},
           "required": ["unsupported"], "additionalProperties": False}


def refusal_text(question: str) -> str:
    if has_cjk(question):
        return "取得した文書だけでは、根拠のある回答を作れませんでした。引用した出典を直接ご確認ください。"
    return ("I can't give an answer that the retrieved passages support. "
            "Please check the cited sources directly.")


def cited_chunks(ctx: StageContext, run_rec: dict) -> dict[str, dict]:
    """chunk_id -> {"text": ...} of every cited chunk: from the texts rerank stored with the candidates when
    they cover all citations (no snapshot load: this stage's memory does not grow with the collection), else
    from the snapshot version the run pinned."""
    wanted = {c["chunk_id"] for c in run_rec.get("citations", [])}
    texts = {c["chunk_id"]: {"text": c["text"]} for c in run_rec.get("candidates") or []
             if c.get("chunk_id") in wanted and isinstance(c.get("text"), str)}
    if wanted <= set(texts):
        return texts
    snap = run_snapshot(ctx, run_rec)
    return {cid: snap.chunks[snap.row_of[cid]] for cid in wanted if cid in snap.row_of}


def run(req: CheckRequest, ctx: StageContext) -> CheckResponse:
    run_rec = load_run(ctx, req.run_id)
    regen = int(run_rec.get("regen_count", 0))
    sents = run_rec.get("answer_sentences") or []
    if run_rec.get("route") == "chitchat" or not run_rec.get("found", True):
        # nothing claimed from documents: a greeting or an explicit "not found" cannot be ungrounded
        write_run(ctx, req.run_id, {"grounded": True, "unsupported": []})
        return CheckResponse(run_id=req.run_id, route="grounded", method="skipped (no claims)", grounded=True,
                             regen_count=regen)
    by_id = cited_chunks(ctx, run_rec)
    cited = {c["n"]: by_id[c["chunk_id"]] for c in run_rec.get("citations", []) if c["chunk_id"] in by_id}
    method, llm_error = "sentence-support", None
    bad = None
    if ctx.llm is not None and sents:
        try:
            numbered = "\n".join(f"{k}: {s['text']} (cites {s['cites']})" for k, s in enumerate(sents))
            passages = "\n\n".join(quote_document(c["text"], n=n) for n, c in sorted(cited.items()))
            out = complete_json(ctx.llm, [
                {"role": "system", "content": with_data_rule(
                    "For each numbered answer sentence, check whether the passages it cites (by their n "
                    "attribute) state it. Return the numbers of sentences that are NOT supported.")},
                {"role": "user", "content": f"Passages:\n{passages}\n\nAnswer sentences:\n{numbered}"}],
                VERDICT, max_tokens=100)
            bad = sorted({int(k) for k in out["unsupported"] if 0 <= int(k) < len(sents)})
            method = "llm"
        except (LLMError, KeyError, ValueError) as exc:
            method, llm_error = "sentence-support (llm failed)", llm_failure(exc)
    if bad is None:
        bad = unsupported_sentences(sents, cited, ctx.embedder)
    grounded = bool(sents) and not bad
    patch: dict = {"grounded": grounded, "unsupported": [sents[k]["text"] for k in bad]}
    if grounded:
        route = "grounded"
    elif regen < ctx.settings.max_regenerations:
        route, regen = "regenerate", regen + 1
        patch["regen_count"] = regen
    else:
        route = "refuse"
        patch.update({"answer": refusal_text(run_rec["question"]), "refused": True,
                      "draft_answer": run_rec.get("answer")})
    write_run(ctx, req.run_id, patch)
    return CheckResponse(run_id=req.run_id, route=route, method=method, llm_error=llm_error, grounded=grounded,
                         n_sentences=len(sents), n_unsupported=len(bad), regen_count=regen)


STAGE = Stage("hallucination_check", CheckRequest, CheckResponse, run,
              lambda r: {"grounded": r.grounded, "n_unsupported": r.n_unsupported, "regen_count": r.regen_count})
