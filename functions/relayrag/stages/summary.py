"""generate's no-LLM summary answer: "What is this document about?" / "この文書の概要は？".

The answer is the best-matching document's title, its purpose statement ("This policy sets out …", "本規程は
…を定める", a sentence naming its purpose) when it has one, else its lead sentences — quoted verbatim from the
document's first chunks and cited. The best-matching document is the one of the top context chunk (retrieval
ranked it first for the question's words, e.g. "the travel policy").
"""

from __future__ import annotations

import re

from relayrag.stages.answer_shape import is_question_sentence
from relayrag.text import answer_units, has_cjk, normalize

SUMMARY = "summary (extractive)"
"""generate's method for a summary answer."""

_SUMMARY_Q_EN = re.compile(
    r"\b(?:what(?:'s| is| are)\s+(?:this|that|the)\s+(?:[\w-]+\s+){0,3}(?:about|for)\s*\??\s*$|summar(?:y|ise|ize)|"
    r"overview|gist|main points?|purpose of (?:this|the) (?:[\w-]+\s*){1,3}\??\s*$|what does (?:this|the) "
    r"(?:[\w-]+\s+){0,3}(?:cover|describe|say)\s*\??\s*$)", re.I)
_SUMMARY_Q_JA = re.compile(r"概要|要約|要旨|まとめ|何について|何に関する|目的は(?:何|なん)")
_PURPOSE = re.compile(
    r"\b(?:this|the)\s+(?:[\w-]+\s+){0,3}(?:sets out|describes|explains|defines|covers|outlines|establishes|"
    r"applies to|governs|is intended|aims|summari[sz]es|provides|specifies|documents)\b|\bpurpose\b|\bscope\b"
    r"|目的|定める|定めた|について(?:説明|記載|まとめ)|適用", re.I)
LEAD_SENTENCES = 2
MAX_CHARS = 400


def is_summary_question(question: str) -> bool:
    """Does the question ask what a document is about (about / summary / overview / purpose; 概要, 要約, 目的,
    何について)?"""
    q = normalize(question)
    return bool(_SUMMARY_Q_JA.search(q) if has_cjk(q) else _SUMMARY_Q_EN.search(q))


def summary_answer(chunks: list[dict], snap, citation) -> tuple[list[dict], list[dict]] | None:
    """(sentences, citations) for a summary question: the title of the document of chunks[0], then its purpose
    statement, else its first LEAD_SENTENCES sentences that are not headings or questions, from its first
    chunks (in page and offset order); `citation(chunk, n, quote)` builds a citation. None without text."""
    if not chunks:
        return None
    source = chunks[0]["source"]
    pool = chunks if snap is None else snap.chunks
    own = sorted((c for c in pool if c["source"] == source), key=lambda c: (c["page"], c["start"]))[:3]
    if not own:
        return None
    cjk = has_cjk(" ".join(c["text"] for c in own[:1]))
    title = (own[0].get("title") or "").strip()
    picked: list[tuple[dict, str]] = []
    lead: list[tuple[dict, str]] = []
    for c in own:
        for s, e in answer_units(c["text"], cjk):
            sent = " ".join(c["text"][s:e].split())
            if len(sent) < (8 if cjk else 25) or is_question_sentence(sent) or sent == title or " | " in sent:
                continue
            if not cjk and not sent.endswith((".", "!", ":")) and len(sent) < 80:
                continue  # a heading line
            if _PURPOSE.search(sent) and not picked:
                picked.append((c, sent))
            if len(lead) < LEAD_SENTENCES:
                lead.append((c, sent))
    chosen = picked or lead
    if not chosen:
        return None
    sentences: list[dict] = []
    citations: list[dict] = []
    num_of: dict[str, int] = {}
    total = 0
    for c, sent in chosen:
        if total and total + len(sent) > MAX_CHARS:
            break
        total += len(sent)
        if c["chunk_id"] not in num_of:
            num_of[c["chunk_id"]] = len(citations) + 1
            citations.append(citation(c, num_of[c["chunk_id"]], sent))
        else:
            citations[num_of[c["chunk_id"]] - 1]["quote"] += " … " + sent
        sentences.append({"text": sent, "cites": [num_of[c["chunk_id"]]], "source": sent, "kind": "summary"})
    if title and sentences:
        head = f"「{title}」:" if cjk else f"{title}:"
        sentences[0] = {**sentences[0], "text": f"{head} {sentences[0]['text']}"}
    return sentences, citations
