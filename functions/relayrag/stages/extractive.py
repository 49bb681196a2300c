"""generate's no-LLM method: sentences and table rows of the context chunks, read with their local context
(title, page heading, section heading, previous sentence, a table row's column names), scored, checked by
the answerability check (stages/answerability.py) and quoted verbatim with citations (see `extractive`)."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from relayrag.backends.embedder import query_vector, reference_cosine
from relayrag.metadata import DEFAULT_EXPIRING_DAYS, citation_fields
from relayrag.retrieval.tokenize import tokenize
from relayrag.stages.answer_parts import citation
from relayrag.stages.undecided import undecided_answer
from relayrag.stages.ordinals import names_other_ordinal
from relayrag.stages.answer_shape import (
    answer_kinds, article_heading, band_holds, cjk_heading, identifiers, measured_things, names_codes, names_other_code,
    not_an_answer, quantities, record_codes, states_wh_type)
from relayrag.stages.date_bounds import misses_date_bound
from relayrag.stages.entity_scope import CollectionKinds, names_another, off_scope
from relayrag.stages.responsive import (
    PREDICATE_KINDS, missing_qualifiers, restates_person, unanswered_predicate, unanswered_yes_no, yes_no_predicate)
from relayrag.stages.answerability import (
    asks_for_total, condition_tokens, content_weights, expected_answer_type, is_header_row, is_total_label, question_entities,
    question_numbers, says_counted, states_answer_type, support)
from relayrag.stages.local_context import (
    addresses_the_assistant, is_heading, page_heading, previous_sentence, section_heading, standalone_heading,
    table_caption, table_header_above)
from relayrag.stages.evidence import absent_tokens, query_idf, span_vectors
from relayrag.text import answer_units as _units, has_cjk, header_over

DUPLICATE_COSINE = 0.95
EVIDENCE_K = 8  # numbered evidence passages given to the LLM method
ROW_COLUMNS = 6  # a named row of a table this narrow answers with all its cells named by their columns


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


def page_key(c: dict) -> tuple[str, str, int]:
    """(source file, document, page) of a chunk: one file can hold many documents (a BEIR corpus.jsonl is one
    source whose lines are documents, each on its page 1), so a page is known by all three."""
    return (c["source"], c.get("doc", ""), c["page"])


def doc_key(c: dict) -> tuple[str, str]:
    """(source file, document) of a chunk; see page_key."""
    return (c["source"], c.get("doc", ""))


def page_headings(snap, chunks: list[dict]) -> dict[tuple[str, str, int], str]:
    """page_key → the page's heading lines (from the page's first chunk in the snapshot)."""
    want = {page_key(c) for c in chunks}
    first: dict[tuple[str, str, int], tuple[int, str]] = {}
    for c in (snap.chunks if snap is not None else chunks):
        key = page_key(c)
        if key in want and (key not in first or c["start"] < first[key][0]):
            first[key] = (c["start"], c["text"])
    return {k: page_heading(first[k][1]) if k in first else "" for k in want}


def doc_openings(snap, chunks: list[dict]) -> dict[tuple[str, str], str]:
    """doc_key → the text of its document's first chunk (where a report names its subject)."""
    want = {doc_key(c) for c in chunks}
    first: dict[tuple[str, str], tuple[int, int, str]] = {}
    for c in (snap.chunks if snap is not None else chunks):
        doc = doc_key(c)
        if doc in want:
            key = (c["page"], c["start"])
            if doc not in first or key < first[doc][:2]:
                first[doc] = (*key, c["text"])
    return {k: v[2] for k, v in first.items()}


def local_context(chunk: dict, spans: list[tuple[int, int]], k: int, heading: str) -> tuple[str, str, str]:
    """(context text, column-name row or "", the preceding sentence or "") of unit k. The context holds
    the title, page heading, section heading, and for a table row its table's column-name row; a prose
    sentence's preceding sentence comes apart (answerability.support reads it as `near`)."""
    text = chunk["text"]
    s, e = spans[k]
    row = " | " in text[s:e]
    header = data_row_header(text, s, e, chunk.get("context", "")) if row else ""
    parts = [chunk.get("title", ""), heading, section_heading(text, s), header, table_caption(text, s) if header else ""]
    return "\n".join(p for p in parts if p), header, "" if row else previous_sentence(text, spans, k)


def data_row_header(text: str, s: int, e: int, fallback: str = "") -> str:
    """The column-name row that the table row text[s:e] reads under, or "" when the row is itself a table's
    column-name row or a row of labels with no fuller label row above it (an address block is its own table).
    A row of labels under the column names ("up to 10 kg | Courier Rapide | same day") is data."""
    header = table_header_above(text, s, fallback)
    if is_header_row(text[s:e]) and not header_over(text[s:e], header):
        return ""
    return header


_FIELD_LABEL = re.compile(r"^[-*•]?\s*([A-Z][\w /&'-]{1,30})\s*[:：]\s*\S")


# "Which hydraulic oil should …", "What colour are …": the noun after which / what is what is asked; a sentence that
# only names the question's entity ("The RT-20 cab heater …") says nothing of it
_WHICH_NOUN = re.compile(r"^\s*(?:which|what)\s+(?:[\w-]+\s+){0,2}?(?!(?:is|are|was|were|do|does|did)\b)[a-z][\w-]*\s+"
                         r"(?:should|must|is|are|was|were|does|do|did|can|could|will|would|has|have)\b", re.I)


def field_label_named(line: str, question_tokens: set[str]) -> bool:
    """Is `line` a "Label: value" field ("Approved by: Dana Whitfield", "Effective date: 1 May 2026") whose label
    names a word of the question?"""
    m = _FIELD_LABEL.match(line)
    return m is not None and bool(set(tokenize(m.group(1))) & question_tokens)


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.split("|")]


def table_cell(question_tokens: set[str], row: str, header: str, named_row: bool = False) -> str | None:
    """A table-cell answer "row label — column label: value" when the question names one column of the
    row's table (its column-name row aligned cell for cell with the row; ties go to the leftmost column);
    else, for a row the question names (its label, or a band holding the question's number) in a table of
    at most ROW_COLUMNS columns, the row's other cells named by their columns ("10-15 years — Category: B;
    Retention: 7 years"); else None (the row is quoted as it is)."""
    if not header:
        return None
    cells, labels = _cells(row), _cells(header)
    if len(cells) != len(labels) or len(cells) < 2:
        return None
    best, best_key = None, (0.0, 0)
    for j in range(1, len(labels)):
        toks = tokenize(labels[j])
        if not toks or not cells[j]:
            continue
        own = tokenize(cells[j])  # "Trailer: TR-14" for "What temperature is trailer TR-14 set to?": the question
        if own and all(t in question_tokens for t in own):  # names the row by this cell; it is not what is asked
            continue
        hit = sum(1 for t in toks if t in question_tokens)
        key = (hit / len(toks), hit)
        if hit and key > best_key:
            best, best_key = j, key
    if best is not None and best_key[0] >= 0.5:
        return f"{cells[0]} — {labels[best]}: {cells[best]}"
    if not named_row or len(cells) > ROW_COLUMNS:
        return None
    named = [f"{labels[j]}: {cells[j]}" if labels[j] else cells[j] for j in range(1, len(cells)) if cells[j]]
    return f"{cells[0]} — " + "; ".join(named) if named else None


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
    table_text: dict[tuple[str, str, int], str] = {}  # page_key -> the context chunks' rows and column names
    for c in chunks:
        if " | " in c["text"]:
            key = page_key(c)
            table_text[key] = table_text.get(key, "") + "\n" + c.get("context", "") + "\n" + c["text"]
    have = {c["chunk_id"] for c in chunks}
    out = []
    for c in snap.chunks:
        text = table_text.get(page_key(c))
        header = (c.get("context") or "").strip()
        if text is None or c["chunk_id"] in have or not header or header not in text:
            continue
        if any(is_total_label(_row_label(ln)) for ln in c["text"].split("\n")):
            out.append(c)
    return out


def also_in_note(n: int, cjk: bool) -> str:
    """The note after a sentence that other documents repeat word for word (cited once, counted here)."""
    if cjk:
        return f"（ほか{n}件の文書にも同じ記載があります）"
    return f" (also in {n} other document{'s' if n != 1 else ''})"


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
    # a conditional clause weighs half only for a sentence about the asker's case (it says one of its terms)
    cond = condition_tokens(question)
    full = content_weights(question, idf, absent, conditions=False) if cond else weights
    entities = question_entities(question)
    # money, duration, count, date, number or None; and who → person, where → place, when, which year, how often
    kind, wh = answer_kinds(question, expected_answer_type(question))
    yes_no = yes_no_predicate(question) is not None  # "Can members transfer …?": the answer says the verb
    qids = identifiers(question)  # K1, 1234, RX-7: a sentence about K2 or 123 is about another record
    qcodes = record_codes(question)  # AY-1043, K1: the answer names the very record
    own_numbers = question_numbers(question)
    qset = set(weights)
    ent_toks = {t for g in entities for t in g}
    asked = {t: w for t, w in weights.items() if t not in ent_toks} or weights  # what is asked about it
    total = asks_for_total(question)
    headings = page_headings(snap, chunks)
    # the question's "modifier head" pairs ("air draught") that the collection writes: it tells those kinds apart
    kinds = CollectionKinds(question, lambda: (c["text"] for c in (snap.chunks if snap is not None else chunks)))
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
        data_row_header(c["text"], s, e) for s, e in units[i] if " | " in c["text"][s:e]} for i, c in enumerate(chunks)]
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
        context, header, prev = local_context(c, units[i], k, headings.get(page_key(c), ""))
        if _FIELD_LABEL.match(stripped):  # a list item or field states its own fact: the one before is another's
            prev = ""
        # a band in a row ("6-10 | 30 days", "11 or more") holds the question's number ("7 years of service")
        held = [n for n in quantities(question) if is_row and any(band_holds(x, [n]) for x in cells)]
        if held:  # the band stands for the question's quantity and the thing it measures ("a 75 kg crate")
            context += "\n" + " ".join(held + measured_things(question))
        wider = c["text"] + "\n" + openings.get(doc_key(c), "")
        # the decision reads the sentence before as `near` (what is asked must be said here, not only there);
        # the ranking reads it in full (a Japanese answer often follows the sentence restating the question)
        w_here = weights if not cond or cond & set(tokenize("\n".join((text, context, prev)))) else full
        sup = support(w_here, entities, text, context, wider, near=prev)
        if w_here is not full:  # halving the asker's case spares a sentence that omits it, never one that says it
            alt = support(full, entities, text, context, wider, near=prev)
            if alt.coverage > sup.coverage:
                sup, w_here = alt, full
        around = context  # title, headings, column names: the sentence's section, which its qualifiers may be in
        context = "\n".join(p for p in (context, prev) if p)  # as recorded and read by the check
        ranked = support(w_here, entities, text, context, wider) if prev else sup
        own = text  # a table row is read with its column names, section line and the page's caption
        unit_context = ""  # where a table row's unit is written: its column names and section line
        if is_row:
            unit_context = header + "\n" + section_heading(c["text"], units[i][k][0])
            own += "\n".join(["", header, section_heading(c["text"], units[i][k][0]),
                               headings.get(page_key(c), "")])
        said_here = support(asked, [], own).coverage  # what is asked, said by the sentence itself
        lex = 0.7 * said_here + 0.3 * ranked.coverage
        score = (lex if cjk else 0.5 * float(cos[idx]) + 0.5 * lex) - 0.3 * (1.0 - ranked.entity_coverage)
        named = False  # does the question name this row (its label)?
        if is_row and header:  # a table row is picked by its label: "Kentucky", "Totals"
            label = tokenize(cells[0])
            named = bool(held) or (bool(label) and sum(1 for t in label if t in qset or t in ent_toks) >= len(label) / 2)
            if held or (label and all(t in qset or t in ent_toks for t in label)):
                score += 0.15
            if held:  # the band holding the question's number is the row it asks about: above prose that only
                score += 0.15  # describes the table ("The mailroom chooses the carrier by the parcel's weight")
        # a question for a total ("total checks in November 2015") is not answered by a row it sums (a state's
        # row): only by the total row, or by a row the question names ("the total for Florida")
        total_row = is_row and bool(header) and is_total_label(cells[0])
        summand = total and is_row and bool(header) and not named and not total_row
        # a data row none of whose words the question mentions (a state's row for "How many checks were run
        # in November 2015?") was matched by its column names alone: it answers for its own label, not for
        # what was asked; a question that names no row of a table is about the whole table (its total row)
        # a row whose label is one of the question's numbers ("2024 | EUR 197 million" for "revenue in 2024") is named
        # by it; other cells of bare numbers are not (a state's count is no mention of the question's year)
        mentioned = is_row and bool(header) and (bool(held) or any(
            t in qset or t in ent_toks for cell in cells if re.search(r"[^\W\d_]", cell) for t in tokenize(cell))
            or (bool(cells[0]) and cells[0].strip() in own_numbers))
        if not cjk and not is_row and (len(stripped) < 30 or is_heading(stripped) or stripped == c.get("title")):
            score -= 0.15  # fragments ("Iowa Ethanol") and headings rarely answer anything
        if not is_row and field_label_named(stripped, qset):  # "Approved by: Dana Whitfield" for "Who approved …?":
            score += 0.3  # a field whose label the question names is read like a table cell under its column
        heading = not is_row and (cjk_heading(stripped) if cjk else (
            standalone_heading(c["text"], *units[i][k]) or article_heading(stripped)))
        heading = heading or addresses_the_assistant(text)  # an injected instruction states no fact
        # a question-shaped sentence (an FAQ's heading), a restatement of the question or the title line asks or
        # names what the section is about; the answer is what follows it
        shape = None if is_row else not_an_answer(question, stripped, c.get("title", ""))
        ids = identifiers(text)
        gates = {  # each must hold for the sentence to answer; the best sentence's failed ones are recorded
            "not_heading": not heading, "not_summand": not summand, "answer_shape": shape is None,
            "coverage": sup.answers(cjk),
            "names_codes": names_codes(qcodes, text + "\n" + context) and not names_other_code(qcodes, text)
            and not names_other_ordinal(question, text),  # 「1番のりば、3番のりば」 for 2番のりば
            # a prose sentence says something of what is asked itself, not only its title and neighbours
            # ("Comments may be sent to the marina office." does not say what the notice proposes), when
            # no type of value (a date, a code, a name …) shows that it answers
            "says_asked": (cjk or is_row or said_here > 0 or asked is weights or kind is not None or wh is not None
                           or (bool(entities) and all(t in set(tokenize(text)) for g in entities for t in g)
                               and not _WHICH_NOUN.match(question))),  # "Which oil …?" asks for an oil
            "not_another": not (not cjk and not is_row and names_another(question, text, sup, context)),
            # about the question's own entity, not a sibling ("MV Kestrel Point" under whose heading the
            # sentence sits, for "MV Heron Point") nor another kind of what is asked ("loaded draught")
            "entity_scope": off_scope(question, text, context, kinds, absent, c["text"]) is None,
            # it says what is asked beyond its title and headings ("answer my questions", 改定), not
            # another act of the same procedure, and the question's qualifiers (overseas, 海外)
            "predicate": not (not is_row and wh in PREDICATE_KINDS and unanswered_predicate(question, text, context)),
            # a yes/no question's verb ("can members transfer …"), not another act on the same thing
            "yes_no": not (not is_row and yes_no and unanswered_yes_no(question, text, context)),
            "qualifiers": not missing_qualifiers(question, text, around, absent),
            "date_bound": not misses_date_bound(question, text),  # "after August 2026": not a date in August 2026
            "answer_type": states_answer_type(kind, text, cjk, unit_context, own_numbers, question),
            "counted": kind != "count" or says_counted(question, text + "\n" + around),
            "wh_type": states_wh_type(wh, text + ("\n" + unit_context if is_row else ""), cjk, question),
            # "who will replace Catriona Vell?": a sentence naming only her restates the question's subject
            "names_someone_else": not (wh == "person" and restates_person(question, text)),
            # 「後任については人選中であり、決定しなかった」 says the value asked is not decided: no answer but to yes/no
            "decided": not undecided_answer(question, text, section_heading(c["text"], units[i][k][0]))}
        cands.append({"score": score, "i": i, "k": k, "span": units[i][k], "idx": idx, "text": stripped,
                      "context": context, "header": header, "support": sup, "table": page_key(c),
                      "row": is_row and bool(header), "mentioned": mentioned, "total_row": total_row,
                      "named": named,
                      "ids": ids, "own_ids": sum(1 for q in qids if q in ids),
                      "gates": gates, "ok": all(gates.values())})
    if not cands:
        return [], [], {"answerable": False, "support": None, "related": [], "evidence": []}
    named_tables = {t["table"] for t in cands if t["row"] and t["mentioned"]}
    for t in cands:  # rows of a table: the rows the question mentions; else (it names none) the total row
        if t["row"] and not t["mentioned"] and (not t["total_row"] or (t["table"] in named_tables and not total)):
            t["ok"] = False
            t["gates"]["row_mentioned"] = False
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
    why = [g for g, held in best["gates"].items() if not held]
    decision = {"answerable": best["ok"], "support": {**best["support"].as_dict(), **({"failed": why} if why else {})},
                "related": related,
                "evidence": evidence}
    if not best["ok"]:
        return [], [], decision

    def same(a: dict, b: dict) -> bool:
        if a["ids"] != b["ids"]:  # "clerk 123" and "clerk 1234", "K1" and "K2": different records, however alike
            return False
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
    # and names the question's identifiers as exactly as it does ("clerk 1234", not "clerk 123")
    pool = [c for c in cands[1:60] if c["ok"] and c["support"].entity_coverage >= ent_floor
            and c["own_ids"] >= best["own_ids"] and (
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
        doc = chunks[cand["i"]]["doc"]
        pages = {(doc, chunks[cand["i"]]["page"])}
        also: list[str] = []  # other documents that say the same sentence (a contact line at every policy's foot)
        for dup in cands:  # the same sentence elsewhere: quoted once; other pages of its document cited too
            if dup is not cand and dup["i"] != cand["i"] and same(dup, cand):
                where = (chunks[dup["i"]]["doc"], chunks[dup["i"]]["page"])
                if where in pages:  # overlapping chunks of one page: that page is cited already
                    continue
                pages.add(where)
                if where[0] != doc:
                    if where[0] not in also:
                        also.append(where[0])
                    continue
                n = cite(dup)
                if n not in cites:
                    cites.append(n)
        text = cand["text"]
        if cand["header"]:
            text = table_cell(qset, cand["text"], cand["header"], cand["named"]) or (
                cand["total_row"] and total_cell(cand["text"], cand["header"])) or text
        sent = {"text": text, "cites": cites, "source": cand["text"], "context": cand["context"]}
        if also:
            sent["also_in"] = also
            sent["text"] = text + also_in_note(len(also), cjk)
        sentences.append(sent)
    return sentences, citations, decision

