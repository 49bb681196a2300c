"""hallucination_check: is every answer sentence supported by the passage it cites?

Two questions, both of which must be yes for `grounded`:
1. Is every sentence supported by its citation? No-LLM method `sentence-support`: it appears verbatim
   (whitespace-normalised; a table-cell answer is checked through the row it came from) in a cited chunk,
   or its best MiniLM cosine against the cited chunks' sentences is >= 0.80, or >= 80 % of its BM25 tokens
   occur in one cited sentence. A sentence with no citation is unsupported.
2. Does the answer answer the question? No-LLM: the question's content terms and named entities must be
   covered by the answer sentences read with their local context (stages/answerability.py) — so a verbatim
   quote about something else fails. LLM method `llm`: one JSON verdict, claim by claim, listing the
   unsupported sentences and whether the answer is about the exact thing asked.
   Whichever method judged it, the answer must also be responsive (`responsive`): no sentence that asks or
   only restates the question, and a value of the type asked (who → a person or role, when → a date or
   time, how long → a duration, …; stages/answer_shape.py). A summary answer ("what is this document
   about?", generate's `summary` method) is responsive by construction: it quotes the document's title and
   lead sentences; so is a title answer (generate's `title` method, stages/titles.py: the document was matched
   to the question's description there), whose sentence is supported when it is the cited chunk's title.
Routes: `grounded` (end); `not_found` (end: generate found no answer, so `grounded` is false: a refusal is
not a grounded answer); `no_claims` (end: a chitchat reply, which cites nothing and is not grounded); an
answer that does not answer the question → `refuse` at once with an honest "not found" that lists the cited
passages as related reading (regenerating from the same evidence cannot help); unsupported sentences →
`regenerate` while regen_count < max_regenerations, then `refuse`.
A visual question answered by quoting the page found by its image (`page-image (extractive)`) is checked the same
way: a page ranked by its image alone proves nothing in words, so when its text does not answer the question the
refusal names that page as the best match by its image. A visual question answered from text because page-image
search did not run keeps the sentence saying so (relayrag.stages.page_answer.page_search_note) on a refusal too.
"""

from __future__ import annotations

from collections.abc import Container

from relayrag.backends.embedder import reference_cosine
from relayrag.backends.llm import LLMError, complete_json
from relayrag.context import StageContext
from relayrag.retrieval.tokenize import tokenize
from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.base import (Stage, StageRequest, StageResponse, embedder_of, llm_failure, load_run, run_snapshot,
                                  write_run)
from relayrag.stages.undecided import undecided_answer
from relayrag.stages.ordinals import names_other_ordinal
from relayrag.stages.answer_shape import (
    answer_kinds, asks_document_name, band_holds, names_codes, names_other_code, not_an_answer, record_codes,
    says_document_title, states_wh_type, wh_answer_type)
from relayrag.stages.date_bounds import misses_date_bound
from relayrag.stages.entity_scope import CollectionKinds, names_another, off_scope
from relayrag.stages.responsive import (
    PREDICATE_KINDS, band_numbers, band_row_label, misses_the_value, missing_period, missing_qualifiers,
    restates_person, unanswered_office_act, unanswered_predicate, unanswered_yes_no, unsaid_by_row)
from relayrag.stages.answerability import (
    Support, content_weights, expected_answer_type, question_entities, question_numbers, says_counted,
    states_answer_type, support)
from relayrag.stages.evidence import absent_tokens, lexical_coverage, query_idf, span_vectors
from relayrag.stages.generate import SUMMARY, doc_openings, not_found_text
from relayrag.stages.titles import TITLE, states_title
from relayrag.stages.page_answer import PAGE_QUOTE, VISION, by_image_note, page_search_note
from relayrag.text import has_cjk, language_code, sentences as split_sents, split_sentences

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


def unsupported_sentences(answer_sentences: list[dict], cited: dict[int, dict], embedder, snap=None) -> list[int]:
    """Indices of answer sentences not supported by their cited chunks. With `snap` (the run's snapshot, which
    the cited chunks come from), the chunks' sentence vectors are looked up there instead of embedded."""
    bad = []
    for k, s in enumerate(answer_sentences):
        chunks = [cited[n] for n in s["cites"] if n in cited]
        if not chunks:
            bad.append(k)
            continue
        text = s.get("source") or s["text"]  # a table-cell answer is checked against the row it came from
        if any(_norm(text) in _norm(c["text"]) for c in chunks):
            continue
        if s.get("kind") == "title" and any(states_title(text, c) for c in chunks):
            continue  # a title answer says its document's title (HTML <title>, PDF metadata), not a body line
        toks = tokenize(text)
        cand_sents = [cs for c in chunks for cs in split_sents(c["text"])]
        if toks and any(lexical_coverage(toks, cs) >= SUPPORT_LEXICAL for cs in cand_sents):
            continue
        row_of = getattr(snap, "row_of", {})
        vecs = span_vectors(embedder, snap, [(row_of.get(c.get("chunk_id")), c["text"], split_sentences(c["text"]))
                                             for c in chunks])
        sv = embedder.embed([text], kind="document")[0]
        if any(len(v) and reference_cosine(embedder, float((v @ sv).max())) >= SUPPORT_COSINE for v in vecs):
            continue
        bad.append(k)
    return bad


def responsive(question: str, sentences: list[dict], absent: set[str] | frozenset = frozenset(),
               kinds: Container[tuple[str, str]] = frozenset(), cited: dict[int, str] | None = None) -> bool:
    """Is the answer shaped like an answer to `question`, whoever wrote it: no sentence asks or only restates the
    question (answer_shape.not_an_answer), and some sentence states a value of the type the question asks for
    (answerability.states_answer_type: money, duration, count, date, number; answer_shape.states_wh_type:
    person, place, when, year, frequency), read with its table row's column names, and answers the question's
    own predicate and qualifiers (`on_the_question`). A band row ("4 or more | EUR 90") answers only a question
    whose number falls in its band (answer_shape.band_numbers: not its years); a question for a document's name
    ("which document …?", 「…規程の名称は」) only a sentence that says its document's title.
    No sentence may speak of a sibling of the question's entity or of another kind of what it asks
    (entity_scope.off_scope: "MV Kestrel Point" for "MV Heron Point", "loaded draught" for "air draught").
    `absent`: the question's tokens that no chunk of the
    collection contains (a word the documents never use cannot be asked of them); `kinds`: the question's
    (modifier, head) pairs the collection writes (entity_scope.CollectionKinds); `cited`: citation number → the
    cited chunk's text, where the question's entity may head a section of its own (entity_scope.sibling_section)."""
    if not sentences:
        return False
    if any(not_an_answer(question, s.get("source") or s["text"]) is not None for s in sentences):
        return False
    if any(off_scope(question, s.get("source") or s["text"], s.get("context") or "", kinds, absent,
                     "\n".join((cited or {}).get(n, "") for n in s.get("cites") or [])) is not None
           for s in sentences):
        return False
    codes = record_codes(question)  # "AY-1043": an answer about AY-1042 answers another record's question
    if codes and not any(names_codes(codes, (s.get("source") or s["text"]) + "\n" + (s.get("context") or ""))
                         for s in sentences):
        return False
    if any(names_other_ordinal(question, s.get("source") or s["text"]) for s in sentences):
        return False  # 「1番のりば、3番のりば」 answers nothing about 2番のりば
    if any(names_other_code(codes, s.get("source") or s["text"]) for s in sentences):
        return False  # "The RT-20 heater …" under a heading naming both models answers nothing about the RT-16
    cjk = has_cjk(question)
    kind, wh = answer_kinds(question, expected_answer_type(question))
    own = question_numbers(question)
    doc_name = asks_document_name(question)
    for s in sentences:
        text = s.get("source") or s["text"]
        unit = (s.get("context") or "") if " | " in text else ""
        label = band_row_label(text)
        if label is not None and not band_holds(label, band_numbers(question)):
            continue  # a band row answers a question whose number falls in its band, not one about the banded thing
        if doc_name and s.get("context") and not says_document_title(s["text"] + "\n" + text, s["context"]):
            continue  # "which document …?" is answered by the document's title, not by a sentence of its body
        if states_answer_type(kind, text, cjk, s.get("context") or "", own, question) and \
                (kind != "count" or says_counted(question, text + "\n" + (s.get("context") or ""))) and \
                states_wh_type(wh, text + ("\n" + unit if unit else ""), cjk, question) and \
                not (wh == "person" and restates_person(question, text)) and \
                not undecided_answer(question, text) and \
                on_the_question(question, s, absent):
            return True
    return False


def on_the_question(question: str, sentence: dict, absent: set[str] | frozenset = frozenset()) -> bool:
    """Does the answer sentence (`text`/`source`, and `context`: its title, headings and the sentence before, as
    generate's no-LLM method records them) answer the question's own predicate and qualifiers: it says something of
    what is asked beyond its headings (answer_shape.unanswered_predicate: a role for another act of the same
    procedure does not say who answers questions), the question's qualifiers (answer_shape.missing_qualifiers:
    海外, overseas), the question's years (answer_shape.missing_period: "in 2025" is not answered from the 2026
    tariff), the act of office a "who" question names with a person or role beside it
    (answer_shape.unanswered_office_act: "Who chairs …?" is not answered by what the committee reviews), and no
    other named thing stands where the question's is (answer_shape.names_another). A
    sentence without a recorded context (an LLM's) is held to the qualifiers only: its words are its own."""
    text = sentence.get("source") or sentence["text"]
    context = sentence.get("context")
    if missing_qualifiers(question, text, context or "", absent):
        return False
    if missing_period(question, text, context or ""):
        return False  # "in 2025" answered from the 2026 tariff
    if misses_date_bound(question, text):
        return False  # "the shutdown after August 2026" is not the one on 16 August 2026
    if misses_the_value(question, text):
        return False  # "which station has a capacity of 880 m³/h?" needs the sentence that says 880
    if " | " not in text and unanswered_office_act(question, text):
        return False  # "who chairs …?" needs a sentence that says who chairs it
    if context and " | " in text and wh_answer_type(question) in ("when", "year") and \
            unsaid_by_row(question, text, context):
        return False  # a row's date answers "when was it built" only when the row or its columns say "built"
    if not context or " | " in text:
        return True
    if unanswered_yes_no(question, text, context):
        return False  # "can members transfer their share?" is not answered by what members may sell
    if wh_answer_type(question) in PREDICATE_KINDS and unanswered_predicate(question, text, context):
        return False
    if has_cjk(question):
        return True
    sup = support(content_weights(question), question_entities(question), text, context)
    return not names_another(question, text, sup, context)


def question_support(question: str, sentences: list[dict], citations: list[dict], bm25_index=None,
                     wider: str = "") -> Support:
    """Does the answer, read with its sentences' local context, cover what the question asks?
    (stages/answerability.py). A sentence without a stored context (an LLM answer) is read with the quotes
    of the citations it names. `wider`: the cited chunks and their documents' opening chunks."""
    quotes = {c["n"]: c.get("quote", "") for c in citations}
    text = " ".join(s.get("source") or s["text"] for s in sentences)
    context = "\n".join(s.get("context") or " ".join(quotes.get(n, "") for n in s["cites"]) for s in sentences)
    qtok = tokenize(question)
    idf = query_idf(qtok, bm25_index) if bm25_index is not None else None
    absent = absent_tokens(qtok, bm25_index) if bm25_index is not None else set()
    entities = question_entities(question)
    sup = support(content_weights(question, idf, absent), entities, text, context, wider)
    # the conditional clause weighs half to spare an answer that omits the asker's case, not one that says it
    alt = support(content_weights(question, idf, absent, conditions=False), entities, text, context, wider)
    return alt if alt.coverage > sup.coverage else sup


VERDICT = {"type": "object", "properties": {"unsupported": {"type": "array", "items": {"type": "integer"}},
                                            "answers_question": {"type": "boolean"}},
           "required": ["unsupported", "answers_question"], "additionalProperties": False}


REFUSAL_TEXT = {
    "en": "I can't give an answer that the retrieved passages support. Please check the cited sources directly.",
    "ja": "取得した文書だけでは、根拠のある回答を作れませんでした。引用した出典を直接ご確認ください。",
    "zh": "仅凭检索到的文档，无法给出有依据的回答。请直接查看引用的出处。",
    "ko": "검색된 문서만으로는 근거 있는 답을 드릴 수 없습니다. 인용된 출처를 직접 확인해 주세요.",
    "es": "No puedo dar una respuesta respaldada por los pasajes recuperados. Consulte directamente las fuentes citadas.",
    "fr": "Je ne peux pas donner de réponse étayée par les passages retrouvés. Consultez directement les sources citées.",
    "de": "Ich kann keine Antwort geben, die die gefundenen Stellen stützen. Bitte prüfen Sie die zitierten Quellen direkt.",
    "pt": "Não posso dar uma resposta apoiada pelos trechos recuperados. Consulte diretamente as fontes citadas.",
    "it": "Non posso dare una risposta supportata dai passaggi recuperati. Consulta direttamente le fonti citate.",
}


def refusal_text(question: str) -> str:
    """The refusal of an answer the check found unsupported, in the question's language (language_code)."""
    return REFUSAL_TEXT[language_code(question)]


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


def cited_page_images(ctx: StageContext, run_rec: dict) -> list[bytes]:
    """PNG bytes of the cited pages, in citation order, when generate answered from page images with a vision LLM
    and this LLM takes images; [] otherwise."""
    from relayrag.backends.llm import accepts_images
    from relayrag.pagerefs import blob_key
    if run_rec.get("generate_method") != VISION or not accepts_images(ctx.settings, ctx.llm):
        return []
    out = []
    for c in sorted(run_rec.get("citations", []), key=lambda c: c["n"]):
        key = blob_key(ctx, c.get("image") or "")
        if key is not None and ctx.blobstore.exists(key):
            out.append(ctx.blobstore.get_bytes(key))
    return out


def run(req: CheckRequest, ctx: StageContext) -> CheckResponse:
    run_rec = load_run(ctx, req.run_id)
    regen = int(run_rec.get("regen_count", 0))
    sents = run_rec.get("answer_sentences") or []
    asked = run_rec.get("searched_for") or run_rec["question"]
    if not run_rec.get("found", True):
        # generate said "not found": nothing to check, and nothing grounded either (a refusal is not an answer
        # the documents support); the workflow ends
        write_run(ctx, req.run_id, {"grounded": False, "unsupported": []})
        return CheckResponse(run_id=req.run_id, route="not_found", method="skipped (not found)", grounded=False,
                             regen_count=regen)
    if run_rec.get("route") == "chitchat":
        # a greeting claims nothing from the documents: nothing to check, and not a grounded answer either
        write_run(ctx, req.run_id, {"grounded": False, "unsupported": []})
        return CheckResponse(run_id=req.run_id, route="no_claims", method="skipped (no claims)", grounded=False,
                             regen_count=regen)
    by_id = cited_chunks(ctx, run_rec)
    cited = {c["n"]: by_id[c["chunk_id"]] for c in run_rec.get("citations", []) if c["chunk_id"] in by_id}
    method, llm_error = "sentence-support", None
    bad, answers = None, None
    absent: set[str] = set()  # the question's words no chunk contains (read from the index when it is loaded)
    kinds: Container[tuple[str, str]] = frozenset()  # its "modifier head" pairs the collection writes (idem)
    if ctx.llm is not None and sents:
        try:
            numbered = "\n".join(f"{k}: {s['text']} (cites {s['cites']})" for k, s in enumerate(sents))
            passages = "\n\n".join(quote_document(c["text"], n=n) for n, c in sorted(cited.items()))
            images = cited_page_images(ctx, run_rec)  # an answer read off page images is checked against them
            seen = (" Page images follow in the order of the passages' n; a sentence is supported when the page "
                    "image or the passage it cites shows it.") if images else ""
            out = complete_json(ctx.llm, [
                {"role": "system", "content": with_data_rule(
                    "Check the answer claim by claim. For each numbered answer sentence, decide whether the "
                    "passages it cites (by their n attribute) state it. Return the numbers of sentences that are "
                    "NOT supported, and whether the answer actually answers the question (about the exact thing "
                    "asked: same name, same year, same item)." + seen)},
                {"role": "user", "content": f"Question: {run_rec['question']}\n\nPassages:\n{passages}\n\n"
                 f"Answer sentences:\n{numbered}", **({"images": images} if images else {})}],
                VERDICT, max_tokens=120)
            llm_bad = sorted({int(k) for k in out["unsupported"] if 0 <= int(k) < len(sents)})
            bad, answers, method = llm_bad, bool(out["answers_question"]), "llm"
        except (LLMError, KeyError, ValueError, TypeError) as exc:
            method, llm_error = "sentence-support (llm failed)", llm_failure(exc)
    if bad is None:
        # question support reads whole chunks (source, page), page openings and BM25 idf: the pinned version
        snap = run_snapshot(ctx, run_rec)
        cited = {c["n"]: snap.chunks[snap.row_of[c["chunk_id"]]] for c in run_rec.get("citations", [])
                 if c["chunk_id"] in snap.row_of}
        bad = unsupported_sentences(sents, cited, embedder_of(ctx, snap), snap)
        openings = doc_openings(snap, list(cited.values()))
        wider = "\n".join([c["text"] for c in cited.values()] + list(openings.values()))
        # the question the answer was found for: as typed, or its spelling correction (generate's `searched_for`)
        sup = question_support(asked, sents, run_rec.get("citations", []), snap.bm25, wider)
        absent = absent_tokens(tokenize(asked), snap.bm25)
        kinds = CollectionKinds(asked, lambda: (c["text"] for c in snap.chunks))
        answers = bool(sents) and sup.answers(has_cjk(asked))
    # supported is not enough: an answer that restates the question or lacks the type of value it asks for (a
    # title line for "who signed it off?") does not answer it, whichever method wrote it or judged it
    if answers and run_rec.get("generate_method") not in (SUMMARY, TITLE):
        answers = responsive(asked, sents, absent, kinds, {n: c["text"] for n, c in cited.items()})
    patch: dict = {}
    if run_rec.get("generate_method") in (SUMMARY, TITLE) and not bad:
        # "what is this document about?": its title and lead sentences, quoted and cited, are the answer; the
        # question names no content term for them to cover
        answers = True
    page_quote = run_rec.get("generate_method") == PAGE_QUOTE
    if page_quote and not answers:
        # a visual question answered with the page found by its image, quoting its text: grounded only when that
        # text answers the question (a page ranked by its image alone proves nothing in words); otherwise the
        # answer says the documents do not say it and points to the page as the best match by its image
        patch["answers_question_note"] = "visual route: the page found by its image does not answer in its text"
    grounded = bool(sents) and not bad and answers
    patch.update({"grounded": grounded, "unsupported": [sents[k]["text"] for k in bad],
                  "answers_question": answers})
    if grounded:
        route = "grounded"
    elif not answers:
        # quoting is not the problem, the evidence does not answer the question: regenerating from the same
        # evidence cannot fix that, so say so now, offering the cited passages as related reading
        related = [{k: c[k] for k in ("doc", "page", "chunk_id", "quote", "image", "thumbnail") if k in c}
                   for c in run_rec.get("citations", [])]
        route = "refuse"
        answer = not_found_text(run_rec["question"], run_rec["collection"], related) + page_search_note(run_rec)
        if page_quote:
            answer += " " + by_image_note(run_rec, answered=False)
        patch.update({"answer": answer, "refused": True, "related": related, "draft_answer": run_rec.get("answer")})
    elif regen < ctx.settings.max_regenerations:
        route, regen = "regenerate", regen + 1
        patch["regen_count"] = regen
    else:
        route = "refuse"
        patch.update({"answer": refusal_text(run_rec["question"]) + page_search_note(run_rec), "refused": True,
                      "draft_answer": run_rec.get("answer")})
    write_run(ctx, req.run_id, patch)
    return CheckResponse(run_id=req.run_id, route=route, method=method, llm_error=llm_error, grounded=grounded,
                         n_sentences=len(sents), n_unsupported=len(bad), regen_count=regen)


STAGE = Stage("hallucination_check", CheckRequest, CheckResponse, run,
              lambda r: {"grounded": r.grounded, "n_unsupported": r.n_unsupported, "regen_count": r.regen_count})
