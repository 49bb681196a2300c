"""generate's no-LLM summary answer: "What is this document about?" / "この文書の概要は？".

The answer is the best-matching document's title, its purpose statement ("This policy sets out …", "本規程は
…を定める", a sentence naming its purpose) when it has one, else its lead sentences — quoted verbatim from the
document's first chunks and cited. The document is the one the question names by its title or file name
("What is the leak response policy about?", matched by stages/titles.document_match), else the one of the top
context chunk (retrieval ranked it first for the question's words); a question that names no document, in a
collection of several, gets an answer that says which document it summarises (`which_note`).
"""

from __future__ import annotations

import re

from relayrag.stages.answer_shape import is_question_sentence
from relayrag.retrieval.tokenize import tokenize
from relayrag.text import answer_units, has_cjk, normalize

SUMMARY = "summary (extractive)"
"""generate's method for a summary answer."""

_SUMMARY_Q_EN = re.compile(
    r"\b(?:what(?:'s| is| are)\s+(?:this|that|the|our)\s+(?:[\w'’-]+\s+){0,5}(?:about|for)\s*\??\s*$|summar(?:y|ise|ize)|"
    r"overview|gist|main points?|purpose of (?:this|the|our) (?:[\w'’-]+\s*){1,5}\??\s*$|what does (?:this|the|our) "
    r"(?:[\w'’-]+\s+){0,8}(?:cover|describe|say|set out|deal with)\s*\??\s*$|what kind of document is\b)", re.I)
_SUMMARY_Q_JA = re.compile(r"概要|要約|要旨|まとめ|何について|何に関する|目的は(?:何|なん)|"
                           r"(?:どんな|どのような|何の)(?:文書|資料|規程|ページ)")
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


# words that ask for a summary and name nothing of the document
_ASKING = frozenset(tokenize("about summary summarise summarize overview gist main point points purpose cover covers "
                             "describe describes say says set out deal explain kind document doc this that what"))
_ASKING_JA = re.compile(r"この|その|あの|本(?=文書|規程|資料)|文書|資料|ファイル|ドキュメント|概要|要約|要旨|まとめ|"
                        r"目的|内容|何について|何に関する|"
                        r"(?:どんな|どのような|何の)|教えて(?:ください)?|ですか|でしょうか|は何|なん|[はのをにで]|[？?。、]")
NAMED_MIN = 0.5
"""The least idf-weighted share of a summary question's content terms a document's title or file name must hold
for the question to name that document ("What is the leak response policy about?")."""


_WHAT_IS_EN = re.compile(r"^\s*what(?:'s|\s+is|\s+are)\s+(?:the|our|this|that)\s+(?:[\w'’&-]+\s*){1,8}\??\s*$", re.I)
_WHAT_IS_JA = re.compile(r"^.{2,40}?(?:とは(?:何|なん)(?:ですか|でしょうか)?|って何(?:ですか)?|とは)[？?]?$")
NAME_ALL = 0.9
"""The share of a "what is the <name>?" question's content terms a document's title or file name must hold for the
question to ask what that document is."""


def asks_what_document_is(question: str, snap, rows: list[int]) -> str | None:
    """The source of the document a "What is the <its name>?" question names by (almost) all its words — "What is
    the cold room register?", "What is the visitor policy?", 「安全衛生規程とは何ですか」: the question asks what that
    document is, which its title and purpose statement answer (summary_answer); None otherwise."""
    from relayrag.stages.titles import document_match, title_question
    q = normalize(question)
    if not (_WHAT_IS_JA.match(q) if has_cjk(q) else _WHAT_IS_EN.match(q)) or not rows or title_question(q):
        return None
    if not has_cjk(q) and re.search(r"\b(?:of|in|for|on|at|from|by|with|under|about)\b", q, re.I):
        return None  # "What is the reference number of the manual?" asks a thing of the document, not what it is
    if has_cjk(q):
        q = _ASKING_JA.sub(" ", re.sub(r"とは|って", " ", q))
    ranked = document_match(q, snap, rows, drop=_ASKING)
    if not ranked:
        return None
    best = max(ranked, key=lambda d: (d[1], d[2], d[0]))
    return best[3] if best[1] >= NAME_ALL else None


def covers_the_question(question: str, snap, source: str) -> bool:
    """Does the document `source` say what a summary question says of its document besides asking ("What is the
    forklift policy about?" needs a document that says forklift)? True for a question that says nothing else
    ("What is this document about?")."""
    from relayrag.retrieval.reward import coverage
    from relayrag.stages.titles import TEXT_MIN, _weights, display_title, file_stem
    q = normalize(question)
    if has_cjk(q):
        q = _ASKING_JA.sub(" ", q)
    weights = _weights(q, getattr(snap, "bm25", None), drop=_ASKING)
    if not weights:
        return True
    own = [c for c in snap.chunks if c["source"] == source]
    if not own:
        return False
    text = "\n".join([own[0].get("title") or "", display_title(own), file_stem(own[0]["doc"])] + [c["text"] for c in own])
    return coverage(weights, text) >= TEXT_MIN["cjk" if has_cjk(question) else "en"]


def named_document(question: str, snap, rows: list[int]) -> str | None:
    """The source of the document a summary question names by its title or file name ("Summarise the leak
    response policy", 「検針業務規程の概要は？」), among the documents of `rows` (retrieval's candidates): the one
    whose name covers most of the question's content terms, at least NAMED_MIN. None when it names none."""
    from relayrag.stages.titles import document_match
    q = normalize(question)
    if has_cjk(q):  # 「この文書の概要は？」 names no document: its asking words are not its name
        q = _ASKING_JA.sub(" ", q)
    ranked = document_match(q, snap, rows, drop=_ASKING)
    if not ranked:
        return None
    best = max(ranked, key=lambda d: (d[1], d[2], d[0]))
    return best[3] if best[1] >= NAMED_MIN else None


def summary_answer(chunks: list[dict], snap, citation, source: str | None = None
                   ) -> tuple[list[dict], list[dict]] | None:
    """(sentences, citations) for a summary question: the title of the document `source` (default: of
    chunks[0]), then its purpose statement, else its first LEAD_SENTENCES sentences that are not headings or
    questions, from its first chunks (in page and offset order); `citation(chunk, n, quote)` builds a citation.
    None without text."""
    if not chunks and source is None:
        return None
    source = source or chunks[0]["source"]
    pool = chunks if snap is None else snap.chunks
    own = sorted((c for c in pool if c["source"] == source), key=lambda c: (c["page"], c["start"]))[:3]
    if not own:
        return None
    cjk = has_cjk(" ".join(c["text"] for c in own[:1]))
    from relayrag.stages.titles import display_title
    title = display_title(own).strip()  # the loader's title, else a text file's heading line ("REMOTE WORK POLICY")
    picked: list[tuple[dict, str]] = []
    lead: list[tuple[dict, str]] = []
    for c in own:
        for s, e in answer_units(c["text"], cjk):
            sent = " ".join(c["text"][s:e].split())
            short = len(sent) < (8 if cjk else 25) and (cjk or not (sent.endswith(".") and len(sent.split()) >= 4))
            if short or is_question_sentence(sent) or sent == title or " | " in sent:  # "One record per room." leads
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
    sub = subtitle(own[0]["text"], title, cjk) if title else ""
    if sub:
        title = f"{title} — {sub}"
    if title and sentences:
        head = f"「{title}」:" if cjk else f"{title}:"
        sentences[0] = {**sentences[0], "text": f"{head} {sentences[0]['text']}"}
    return sentences, citations


def subtitle(text: str, title: str, cjk: bool) -> str:
    """The heading line right under the document's title line at its start, which names its subject when the title
    is a banner ("NOTICE TO ALL STAFF" / "Ammonia Plant Shutdown for Annual Inspection", 「お知らせ」 /
    「年末年始の営業時間について」): a line of at least three words (CJK: 6 characters) without a sentence's end, a
    number or a question; "" when the document goes on with a sentence, a numbered section or a single word."""
    units = [" ".join(text[s:e].split()) for s, e in answer_units(text, cjk)]
    if len(units) < 2 or units[0] != " ".join(title.split()):
        return ""
    line = units[1]
    if line.endswith((".", "。", "!", "?", "？", ":", "：")) or " | " in line or is_question_sentence(line) or \
            re.match(r"^(?:\d|第|§|section\b|chapter\b|article\b|contents\b|table of contents\b)", line, re.I) or \
            len(line) > 80:
        return ""
    return line if (len(line) >= 6 if cjk else len(line.split()) >= 3) else ""


def which_note(question: str, chunk: dict) -> str:
    """The sentence after a summary answer to a question that names no document, in a collection of several:
    which document it summarises (its title and file name)."""
    from relayrag.stages.titles import display_title
    title = display_title([chunk]) or chunk["doc"]
    if has_cjk(question):
        return f"（コレクションの文書のうち、質問に最も合う「{title}」（{chunk['doc']}）の概要です。）"
    return f"(This summarises “{title}” ({chunk['doc']}), the collection's document that best matches the question.)"
