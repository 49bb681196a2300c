"""generate: the answer, with citations to document and page — or an honest "not found".

No-LLM method `extractive` (see `extractive`): every sentence of the relevant chunks (top `context_k`
after rerank) is read with its local context (title, page heading, section heading, previous sentence,
a table row's column names) and scored; the answerability check (stages/answerability.py, after Google's
"sufficient context", ICLR 2025) decides whether any sentence answers the question. If one does, the best
and up to two more (MMR, λ = 0.7; Carbonell & Goldstein 1998) are quoted verbatim and cited, duplicates
once with every source (each document page once), a table cell as "row — column: value"; on
regeneration only the best one. If none does, the answer is "not found" in the question's language, naming
the closest passages as related reading (`related` in the run record). LLM method `llm`: the same evidence as
numbered passages in, an answer with [n] markers out (or NOT_FOUND); markers become citations. Chitchat: a
short reply (template without LLM). Visual route (colpali_search found the pages by their image): the answer
says so; when the pages' text does not answer the question it quotes the best page's own text and cites that
page (`page-image (extractive)`; those answers live in relayrag.stages.page_answer). Citations and related
passages carry the page image and thumbnail.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from relayrag.backends.embedder import query_vector, reference_cosine
from relayrag.backends.llm import LLMError, accepts_images
from relayrag.context import StageContext
from relayrag.pagerefs import attach
from relayrag.metadata import DEFAULT_EXPIRING_DAYS, citation_fields
from relayrag.retrieval.tokenize import tokenize
from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.base import (Stage, StageRequest, StageResponse, embedder_of, llm_failure, load_run, run_snapshot,
                                  write_run)
from relayrag.stages.answerability import (
    addresses_the_assistant, asks_for_total, content_weights, expected_answer_type, is_header_row, is_heading,
    is_total_label, page_heading, question_numbers,
    previous_sentence, question_entities, section_heading, standalone_heading, states_answer_type, support,
    table_header_above)
from relayrag.stages.evidence import absent_tokens, query_idf, span_vectors
from relayrag.text import answer_units as _units, has_cjk, language_code
from relayrag.stages.answer_parts import NOT_FOUND, citation, split_answer
from relayrag.stages.page_answer import (PAGE_QUOTE, VISION, by_image_note, found_by_image, page_quote_answer,
                                         page_search_note, vision_answer)

DUPLICATE_COSINE = 0.95
EVIDENCE_K = 8  # numbered evidence passages given to the LLM method

class GenerateRequest(StageRequest):
    """Only the run_id: the stage reads its inputs from the run record."""


class GenerateResponse(StageResponse):
    n_citations: int = 0
    regen_count: int = 0
    found: bool = True


def sql_fallback_note(run_rec: dict) -> str:
    """A separator + why the tables could not answer, when the sql stage sent the question on to the documents
    (no LLM, no verified query), in the question's language; "" otherwise. Appended to a not-found text, which
    may end without a full stop ("… p. 2"), so the Japanese note starts a new line."""
    note = run_rec.get("sql_fallback")
    if not note:
        return ""
    if has_cjk(run_rec.get("question") or ""):
        return f"\nこのコレクションの表からも答えられませんでした: {note}"
    return f" The collection's tables could not answer either: {note}"


NOT_FOUND_TEXT = {  # language → ("not found" sentence, the related passages' label); {c}: the collection
    "en": ("I could not find an answer to this in the documents of collection '{c}'.",
           " Related passages (not an answer): {w}."),
    "ja": ("コレクション「{c}」の文書には、この質問への答えが見つかりませんでした。", " 関連する箇所（答えではありません）: {w}"),
    "zh": ("在集合「{c}」的文档中没有找到这个问题的答案。", " 相关段落（不是答案）: {w}"),
    "ko": ("컬렉션 '{c}'의 문서에서 이 질문에 대한 답을 찾지 못했습니다.", " 관련 구절(답이 아님): {w}"),
    "es": ("No encontré una respuesta a esto en los documentos de la colección '{c}'.",
           " Pasajes relacionados (no son una respuesta): {w}."),
    "fr": ("Je n'ai pas trouvé de réponse à cette question dans les documents de la collection '{c}'.",
           " Passages liés (pas une réponse) : {w}."),
    "de": ("Ich habe in den Dokumenten der Sammlung '{c}' keine Antwort darauf gefunden.",
           " Verwandte Stellen (keine Antwort): {w}."),
    "pt": ("Não encontrei uma resposta para isso nos documentos da coleção '{c}'.",
           " Trechos relacionados (não são uma resposta): {w}."),
    "it": ("Non ho trovato una risposta a questa domanda nei documenti della collezione '{c}'.",
           " Passaggi correlati (non una risposta): {w}."),
}


def not_found_text(question: str, collection: str, related: list[dict] | None = None) -> str:
    """An honest "not found" in the question's language (relayrag.text.language_code: English, Japanese,
    Chinese, Korean, Spanish, French, German, Portuguese, Italian; else English), naming the closest passages
    (related, not an answer) by document and page."""
    where = "; ".join(dict.fromkeys(f"{r['doc']} p. {r['page']}" for r in (related or [])))  # each page once
    head, rel = NOT_FOUND_TEXT[language_code(question)]
    return head.format(c=collection) + (rel.format(w=where) if where else "")


EXPIRED_TEXT = {  # language → note; {d}: the expired documents with their end dates
    "en": " Expired documents were left out and may hold the answer: {d}; ask with the filter include_expired=true "
          "to include them.",
    "ja": "\n期限切れの文書は除外されましたが、答えが含まれている可能性があります: {d}。含めるにはフィルター "
          "include_expired=true を付けて質問してください。",
    "zh": " 已过期的文档被排除在外，其中可能有答案: {d}。如需包含，请使用过滤条件 include_expired=true 提问。",
    "ko": " 만료된 문서는 제외되었으며 답이 있을 수 있습니다: {d}. 포함하려면 필터 include_expired=true로 질문하세요.",
    "es": " Se omitieron documentos vencidos que pueden contener la respuesta: {d}; pregunte con el filtro "
          "include_expired=true para incluirlos.",
    "fr": " Des documents expirés ont été écartés et peuvent contenir la réponse : {d} ; posez la question avec le "
          "filtre include_expired=true pour les inclure.",
    "de": " Abgelaufene Dokumente wurden ausgelassen und könnten die Antwort enthalten: {d}; fragen Sie mit dem "
          "Filter include_expired=true, um sie einzubeziehen.",
    "pt": " Documentos expirados foram deixados de fora e podem conter a resposta: {d}; pergunte com o filtro "
          "include_expired=true para incluí-los.",
    "it": " Documenti scaduti sono stati esclusi e potrebbero contenere la risposta: {d}; chiedi con il filtro "
          "include_expired=true per includerli.",
}


VALID_UNTIL = {"en": "valid until", "ja": "有効期限", "zh": "有效期至", "ko": "유효 기간", "es": "válido hasta",
               "fr": "valable jusqu'au", "de": "gültig bis", "pt": "válido até", "it": "valido fino al"}


def expired_note(run_rec: dict) -> str:
    """A separator + which expired documents the default validity filter left out of a run whose question
    they match (retrieve.expired_matches: among the unfiltered BM25 top hits), in the question's language,
    and how to include them; "" when there are none."""
    matches = run_rec.get("expired_matches") or []
    if not matches:
        return ""
    lang = language_code(run_rec.get("question") or "")
    until = VALID_UNTIL.get(lang, VALID_UNTIL["en"])
    docs = ", ".join(f"{m['doc']}" + (f" ({until} {m['valid_until']})" if m.get("valid_until") else "")
                     for m in matches[:3])
    return EXPIRED_TEXT[lang].format(d=docs)


def not_found_answer(run_rec: dict, related: list[dict]) -> str:
    """A run's whole "not found" answer: not_found_text, then why the tables could not answer
    (sql_fallback_note), which expired documents the validity filter left out (expired_note) and, for a visual
    question answered from text, that page-image search did not run and why (page_search_note)."""
    return (not_found_text(run_rec["question"], run_rec["collection"], related) + sql_fallback_note(run_rec)
            + expired_note(run_rec) + page_search_note(run_rec))


def chitchat_text(question: str, collection: str) -> str:
    if has_cjk(question):
        return f"こんにちは。コレクション「{collection}」の文書について質問してください。出典付きで答えます。"
    return (f"Hello! I answer questions about the documents in collection '{collection}', "
            "with citations to document and page. What would you like to know?")


def with_metadata(citations: list[dict], snap) -> list[dict]:
    """Citations with their document's title and, for a document with metadata, its validity state,
    needs_review and the fields the collection schema marks as shown (relayrag.metadata.citation_fields)."""
    schema = snap.manifest.get("schema") or {}
    shown = [n for n, f in (schema.get("fields") or {}).items() if f.get("shown") and n != "title"]
    expiring = int(schema.get("expiring_days", DEFAULT_EXPIRING_DAYS))
    out = []
    for c in citations:
        row = snap.row_of.get(c["chunk_id"])
        out.append({**c, **citation_fields(snap.chunks[row], shown, expiring)} if row is not None else c)
    return out


def with_table_header(chunk_text: str, start: int, row: str, header: str = "") -> str:
    """A table row quoted with its table's column-name row (`header`; found above the row in the chunk
    when not given): a bare row of numbers means little without its column names."""
    if " | " not in row:
        return row
    header = header or table_header_above(chunk_text, start)
    if header and " ".join(header.split()) != row:
        return " ".join(header.split()) + " / " + row
    return row


def _norm_text(t: str) -> str:
    return re.sub(r"\W+", " ", t.lower()).strip()


def page_headings(snap, chunks: list[dict]) -> dict[tuple[str, int], str]:
    """(source, page) → the page's heading lines (from the page's first chunk in the snapshot)."""
    want = {(c["source"], c["page"]) for c in chunks}
    first: dict[tuple[str, int], tuple[int, str]] = {}
    for c in (snap.chunks if snap is not None else chunks):
        key = (c["source"], c["page"])
        if key in want and (key not in first or c["start"] < first[key][0]):
            first[key] = (c["start"], c["text"])
    return {k: page_heading(first[k][1]) if k in first else "" for k in want}


def doc_openings(snap, chunks: list[dict]) -> dict[str, str]:
    """source → the text of its document's first chunk (where a report names its subject)."""
    want = {c["source"] for c in chunks}
    first: dict[str, tuple[int, int, str]] = {}
    for c in (snap.chunks if snap is not None else chunks):
        if c["source"] in want:
            key = (c["page"], c["start"])
            if c["source"] not in first or key < first[c["source"]][:2]:
                first[c["source"]] = (*key, c["text"])
    return {k: v[2] for k, v in first.items()}


def local_context(chunk: dict, spans: list[tuple[int, int]], k: int, heading: str) -> tuple[str, str, str]:
    """(context text, column-name row or "", the preceding sentence or "") of unit k. The context holds
    the title, page heading, section heading, and for a table row its table's column-name row; a prose
    sentence's preceding sentence comes apart (answerability.support reads it as `near`)."""
    text = chunk["text"]
    s, e = spans[k]
    row = " | " in text[s:e]
    # only a data row (one with a numeric cell) reads under a column-name row: rows of labels only (an
    # address block) are their own table
    header = table_header_above(text, s, chunk.get("context", "")) if row and not is_header_row(text[s:e]) else ""
    parts = [chunk.get("title", ""), heading, section_heading(text, s), header]
    return "\n".join(p for p in parts if p), header, "" if row else previous_sentence(text, spans, k)


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.split("|")]


def table_cell(question_tokens: set[str], row: str, header: str) -> str | None:
    """A table-cell answer "row label — column label: value" when the question names one column of the
    row's table (its column-name row aligned cell for cell with the row); else None. Ties go to the
    leftmost column."""
    if not header:
        return None
    cells, labels = _cells(row), _cells(header)
    if len(cells) != len(labels) or len(cells) < 3:
        return None
    best, best_key = None, (0.0, 0)
    for j in range(1, len(labels)):
        toks = tokenize(labels[j])
        if not toks or not cells[j]:
            continue
        hit = sum(1 for t in toks if t in question_tokens)
        key = (hit / len(toks), hit)
        if hit and key > best_key:
            best, best_key = j, key
    if best is None or best_key[0] < 0.5:
        return None
    return f"{cells[0]} — {labels[best]}: {cells[best]}"


def total_cell(row: str, header: str) -> str | None:
    """The total row's cell in the table's total column ("Totals — Totals: 2,236,457"), for a question that
    names no column; None when no column is a total's (the whole row is quoted then)."""
    cells, labels = _cells(row), _cells(header)
    if len(cells) != len(labels):
        return None
    for j in range(len(labels) - 1, 0, -1):
        if is_total_label(labels[j]) and cells[j]:
            return f"{cells[0]} — {labels[j]}: {cells[j]}"
    return None


def _row_label(line: str) -> str:
    return line.split("|", 1)[0].strip() if " | " in line else ""


def total_row_chunks(snap, chunks: list[dict]) -> list[dict]:
    """For a question that asks for a total: the snapshot's chunks that hold the total row ("Totals | …") of a
    table some context chunk holds rows of (same document and page; a chunk of the table's later rows carries
    the column-name row as its `context`, which the first chunk holds in its text), when no context chunk holds
    one. A long table is chunked by rows, and a question naming only the table's title ("total for November
    2015") retrieves its first rows, not its last (the Totals row)."""
    if snap is None:
        return []
    if any(is_total_label(_row_label(ln)) for c in chunks for ln in c["text"].split("\n")):
        return []
    table_text: dict[tuple[str, int], str] = {}  # (source, page) -> the context chunks' rows and column names
    for c in chunks:
        if " | " in c["text"]:
            key = (c["source"], c["page"])
            table_text[key] = table_text.get(key, "") + "\n" + c.get("context", "") + "\n" + c["text"]
    have = {c["chunk_id"] for c in chunks}
    out = []
    for c in snap.chunks:
        text = table_text.get((c["source"], c["page"]))
        header = (c.get("context") or "").strip()
        if text is None or c["chunk_id"] in have or not header or header not in text:
            continue
        if any(is_total_label(_row_label(ln)) for ln in c["text"].split("\n")):
            out.append(c)
    return out


def extractive(question: str, chunks: list[dict], embedder, max_sentences: int, bm25_index=None,
               snap=None) -> tuple[list[dict], list[dict], dict]:
    """Returns (answer sentences [{text, cites: [n], source, context}], citations, decision).

    Every sentence (English: short ones joined to the next) of the context chunks is scored with its local
    context: English 0.5·cosine(question, sentence) + 0.5·lexical, CJK lexical only (the English MiniLM
    is noise on Japanese), where lexical = 0.7·coverage of the non-entity terms (what is asked) by the
    sentence + 0.3·coverage of all terms by sentence + context (the entity may sit in a heading), minus
    0.3·(1 − entity coverage) (stages/answerability.py). The best sentence that answers the question
    (answerability.Support.answers) leads; up to max_sentences − 1 more that also answer it and score
    >= 80 % of it (CJK: its neighbouring sentences at >= 30 %) are added by MMR (λ = 0.7). Near-duplicates
    (same normalised text, or cosine >= DUPLICATE_COSINE) are quoted once, citing every chunk that says
    them (each document page once: overlapping chunks of one page are one source). A table row whose
    question names one of its columns answers as "row — column: cell".

    decision: {"answerable": bool, "support": the best sentence's support signals, "related": up to 3
    closest passages [{doc, page, chunk_id, quote}]}. Not answerable → no sentences, no citations."""
    cjk = has_cjk(question)
    qtok = tokenize(question)
    idf = query_idf(qtok, bm25_index) if bm25_index is not None else None
    absent = absent_tokens(qtok, bm25_index) if bm25_index is not None else set()
    weights = content_weights(question, idf, absent)
    entities = question_entities(question)
    kind = expected_answer_type(question)  # money, duration, date, number or None
    own_numbers = question_numbers(question)
    qset = set(weights)
    ent_toks = {t for g in entities for t in g}
    asked = {t: w for t, w in weights.items() if t not in ent_toks} or weights  # what is asked about it
    total = asks_for_total(question)
    headings = page_headings(snap, chunks)
    openings = doc_openings(snap, chunks)
    units = [_units(c["text"], cjk) for c in chunks]
    flat = [(i, k) for i in range(len(chunks)) for k in range(len(units[i]))]
    texts = [chunks[i]["text"][units[i][k][0]:units[i][k][1]] for i, k in flat]
    vecs, cos = None, [0.0] * len(texts)
    if not cjk and texts:  # unit vectors stored at ingestion (looked up by chunk row and span), else embedded now
        row_of = getattr(snap, "row_of", {})
        per_chunk = span_vectors(embedder, snap, [(row_of.get(c.get("chunk_id")), c["text"], u)
                                                  for c, u in zip(chunks, units)])
        vecs = np.concatenate(per_chunk) if per_chunk else np.zeros((0, embedder.dim), np.float32)
        cos = reference_cosine(embedder, vecs @ query_vector(embedder, question))  # on MiniLM's scale
    headers_of = [{" ".join(c.get("context", "").split())} | {
        table_header_above(c["text"], s) for s, e in units[i]
        if " | " in c["text"][s:e] and not is_header_row(c["text"][s:e])} for i, c in enumerate(chunks)]
    cands: list[dict[str, Any]] = []
    for idx, ((i, k), text) in enumerate(zip(flat, texts)):
        c = chunks[i]
        stripped = " ".join(text.split())
        if len(stripped) < (2 if cjk else 12):
            continue
        is_row = " | " in text
        cells = _cells(text)
        if is_row and (sum(1 for x in cells if x) < max(2, len(cells) / 2) or stripped in headers_of[i]):
            continue  # a column-name row or a group row ("| | Pre-Pawn | |") names columns; it answers nothing
        context, header, prev = local_context(c, units[i], k, headings.get((c["source"], c["page"]), ""))
        wider = c["text"] + "\n" + openings.get(c["source"], "")
        # the decision reads the sentence before as `near` (what is asked must be said here, not only there);
        # the ranking reads it in full (a Japanese answer often follows the sentence restating the question)
        sup = support(weights, entities, text, context, wider, near=prev)
        context = "\n".join(p for p in (context, prev) if p)  # as recorded and read by the check
        ranked = support(weights, entities, text, context, wider) if prev else sup
        own = text  # a table row is read with its column names, section line and the page's caption
        unit_context = ""  # where a table row's unit is written: its column names and section line
        if is_row:
            unit_context = header + "\n" + section_heading(c["text"], units[i][k][0])
            own += "\n".join(["", header, section_heading(c["text"], units[i][k][0]),
                               headings.get((c["source"], c["page"]), "")])
        lex = 0.7 * support(asked, [], own).coverage + 0.3 * ranked.coverage
        score = (lex if cjk else 0.5 * float(cos[idx]) + 0.5 * lex) - 0.3 * (1.0 - ranked.entity_coverage)
        named = False  # does the question name this row (its label)?
        if is_row and header:  # a table row is picked by its label: "Kentucky", "Totals"
            label = tokenize(cells[0])
            named = bool(label) and sum(1 for t in label if t in qset or t in ent_toks) >= len(label) / 2
            if label and all(t in qset or t in ent_toks for t in label):
                score += 0.15
        # a question for a total ("total checks in November 2015") is not answered by a row it sums (a state's
        # row): only by the total row, or by a row the question names ("the total for Florida")
        total_row = is_row and bool(header) and is_total_label(cells[0])
        summand = total and is_row and bool(header) and not named and not total_row
        # a data row none of whose words the question mentions (a state's row for "How many checks were run
        # in November 2015?") was matched by its column names alone: it answers for its own label, not for
        # what was asked; a question that names no row of a table is about the whole table (its total row)
        mentioned = is_row and bool(header) and any(
            t in qset or t in ent_toks for cell in cells if re.search(r"[^\W\d_]", cell) for t in tokenize(cell))
        if not cjk and not is_row and (len(stripped) < 30 or is_heading(stripped) or stripped == c.get("title")):
            score -= 0.15  # fragments ("Iowa Ethanol") and headings rarely answer anything
        heading = not cjk and not is_row and standalone_heading(c["text"], *units[i][k])  # read as context only
        heading = heading or addresses_the_assistant(text)  # an injected instruction states no fact
        cands.append({"score": score, "i": i, "k": k, "span": units[i][k], "idx": idx, "text": stripped,
                      "context": context, "header": header, "support": sup, "table": (c["source"], c["page"]),
                      "row": is_row and bool(header), "mentioned": mentioned, "total_row": total_row,
                      "ok": not heading and not summand and sup.answers(cjk)
                      and states_answer_type(kind, text, cjk, unit_context, own_numbers, question)})
    if not cands:
        return [], [], {"answerable": False, "support": None, "related": [], "evidence": []}
    named_tables = {t["table"] for t in cands if t["row"] and t["mentioned"]}
    for t in cands:  # rows of a table: the rows the question mentions; else (it names none) the total row
        if t["row"] and not t["mentioned"] and (not t["total_row"] or (t["table"] in named_tables and not total)):
            t["ok"] = False
    cands.sort(key=lambda t: (-t["ok"], -t["score"]))
    related: list[dict] = []
    for cand in sorted(cands, key=lambda t: -t["score"]):
        ch = chunks[cand["i"]]
        if len(related) < 3 and all(r["chunk_id"] != ch["chunk_id"] for r in related):
            related.append({"doc": ch["doc"], "page": ch["page"], "chunk_id": ch["chunk_id"],
                            "quote": cand["text"][:300]})
    evidence = [{"i": c["i"], "context": c["context"],
                 "text": with_table_header(chunks[c["i"]]["text"], c["span"][0], c["text"], c["header"])}
                for c in sorted(cands, key=lambda t: -t["score"])[:EVIDENCE_K]]
    best = cands[0]
    decision = {"answerable": best["ok"], "support": best["support"].as_dict(), "related": related,
                "evidence": evidence}
    if not best["ok"]:
        return [], [], decision

    def same(a: dict, b: dict) -> bool:
        if _norm_text(a["text"]) == _norm_text(b["text"]):
            return True
        return vecs is not None and reference_cosine(embedder, float(vecs[a["idx"]] @ vecs[b["idx"]])) >= DUPLICATE_COSINE

    chosen = [best]
    # CJK: the sentences next to the best one also qualify at 30 % of its score (a Japanese answer often sits
    # in the sentence before or after the one that restates the question)
    # a sentence added to the best one names the question's entities as closely as it does: "Customers in the
    # USA …" next to "Customers in Canada …" for a question about Canada mixes the entities up (not CJK: there
    # the sentence next to the best one often holds the answer without repeating the entity)
    ent_floor = best["support"].entity_coverage if entities and not cjk else 0.0
    pool = [c for c in cands[1:60] if c["ok"] and c["support"].entity_coverage >= ent_floor and (
        c["score"] >= 0.8 * best["score"]
        or (cjk and c["i"] == best["i"] and abs(c["k"] - best["k"]) == 1 and c["score"] >= 0.3 * best["score"]))]
    while len(chosen) < max_sentences:
        pick, pick_val = None, -1e9
        for cand in pool:
            if any(cand is c or same(cand, c) for c in chosen):
                continue
            redundancy = (max(reference_cosine(embedder, float(vecs[cand["idx"]] @ vecs[c["idx"]])) for c in chosen)
                          if vecs is not None else 0.0)
            val = 0.7 * cand["score"] - 0.3 * redundancy
            if val > pick_val:
                pick, pick_val = cand, val
        if pick is None:
            break
        chosen.append(pick)
    sentences: list[dict] = []
    citations: list[dict] = []
    num_of: dict[int, int] = {}

    def cite(cand: dict) -> int:
        i = cand["i"]
        ch = chunks[i]
        quote = with_table_header(ch["text"], cand["span"][0], cand["text"], cand["header"])
        if i not in num_of:
            num_of[i] = len(citations) + 1
            citations.append(citation(ch, num_of[i], quote))
        elif cand["text"] not in citations[num_of[i] - 1]["quote"]:
            citations[num_of[i] - 1]["quote"] += " … " + quote
        return num_of[i]

    for cand in chosen:
        cites = [cite(cand)]
        pages = {(chunks[cand["i"]]["doc"], chunks[cand["i"]]["page"])}
        for dup in cands:  # the same sentence in other chunks: quoted once, every source cited
            if dup is not cand and dup["i"] != cand["i"] and same(dup, cand):
                where = (chunks[dup["i"]]["doc"], chunks[dup["i"]]["page"])
                if where in pages:  # overlapping chunks of one page: that page is cited already
                    continue
                pages.add(where)
                n = cite(dup)
                if n not in cites:
                    cites.append(n)
        text = cand["text"]
        if cand["header"]:
            text = table_cell(qset, cand["text"], cand["header"]) or (
                cand["total_row"] and total_cell(cand["text"], cand["header"])) or text
        sentences.append({"text": text, "cites": cites, "source": cand["text"], "context": cand["context"]})
    return sentences, citations, decision


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
    if chunks and (asks_for_total(question) or expected_answer_type(question)):
        chunks += total_row_chunks(snap, chunks)  # a table's total row, when retrieval brought only rows it sums
    if not chunks:
        related = []
        for c in (run_rec.get("candidates") or [])[:3]:  # nothing relevant: the closest, as related reading
            ch = snap.chunks[c["row"]]
            bs = c.get("best_sentence") or [0, min(300, len(ch["text"]))]
            related.append({"doc": ch["doc"], "page": ch["page"], "chunk_id": ch["chunk_id"],
                            "quote": " ".join(ch["text"][bs[0]:bs[1]].split())[:300]})
        related = attach(ctx, snap, related)
        write_run(ctx, req.run_id, {"answer": not_found_answer(run_rec, related),
                                    "citations": [], "answer_sentences": [], "found": False,
                                    "related": related})
        return GenerateResponse(run_id=req.run_id, method="not-found", regen_count=regen, found=False)

    sentences, citations, decision = extractive(question, chunks, embedder_of(ctx, snap), 1 if regen else 3, snap.bm25,
                                                  snap)
    method = "extractive"
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
        related = attach(ctx, snap, decision["related"])
        answer = not_found_answer(run_rec, related)
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
    citations = attach(ctx, snap, with_metadata(citations, snap))
    write_run(ctx, req.run_id, {"answer": answer, "citations": citations, "answer_sentences": sentences,
                                         "found": True, "generate_method": method,
                                         "answerability": decision["support"], "related": [],
                                         "context_chunk_ids": [c["chunk_id"] for c in chunks]})
    return GenerateResponse(run_id=req.run_id, method=method, llm_error=llm_error, n_citations=len(citations),
                            regen_count=regen)


def llm_answer(llm, question: str, chunks: list[dict], evidence: list[dict], strict: bool = False
               ) -> tuple[list[dict], list[dict]]:
    """The LLM method: the extractive evidence (best sentences and table rows with their column names and
    local context) as numbered passages in, an answer with [n] markers out. Returns ([], []) when the LLM
    says the passages do not answer the question (NOT_FOUND) or cites no passage. Raises LLMError."""
    passages = "\n\n".join(
        quote_document(e["text"], n=n, doc=chunks[e["i"]]["doc"], page=chunks[e["i"]]["page"],
                       context=" / ".join(e["context"].splitlines()[:3]))
        for n, e in enumerate(evidence, start=1))
    rule = " Copy the passages' words where you can; add nothing they do not state." if strict else ""
    answer = llm.complete([
        {"role": "system", "content": with_data_rule(
            "Answer the question using only the numbered passages (their n attribute). A passage answers only if "
            "it is about the exact thing asked (same name, same year, same item). End every sentence with the "
            "number of the passage that supports it, like [1]. If no passage answers the question, reply exactly "
            f"{NOT_FOUND}. Answer briefly, in the question's language." + rule)},
        {"role": "user", "content": f"Passages:\n{passages}\n\nQuestion: {question}"}],
        temperature=0.0, max_tokens=400)
    if NOT_FOUND in answer:
        return [], []
    sentences = [s for s in split_answer(answer) if s["cites"]]
    cited = sorted({n for s in sentences for n in s["cites"] if 1 <= n <= len(evidence)})
    if not cited:
        return [], []
    renumber: dict[int, int] = {}
    citations: list[dict] = []
    for n in cited:  # one citation per chunk, numbered in order of first use
        ch = chunks[evidence[n - 1]["i"]]
        hit = next((c for c in citations if c["chunk_id"] == ch["chunk_id"]), None)
        if hit is None:
            hit = citation(ch, len(citations) + 1, evidence[n - 1]["text"])
            citations.append(hit)
        elif evidence[n - 1]["text"] not in hit["quote"]:
            hit["quote"] += " … " + evidence[n - 1]["text"]
        renumber[n] = hit["n"]
    out = []
    for s in sentences:
        cites = list(dict.fromkeys(renumber[n] for n in s["cites"] if n in renumber))
        if cites:
            out.append({"text": s["text"], "cites": cites})
    return out, citations


STAGE = Stage("generate", GenerateRequest, GenerateResponse, run,
              lambda r: {"n_citations": r.n_citations, "regen_count": r.regen_count, "found": r.found})
