"""The answer type "title": a question for a document's title, name or reference number, answered without an LLM.

"What is the title of the IT help page …?", "What is the web page with the members' questions called?", "What is
the name of the document that lists …?", "What is the reference number of the purchase procedure?",
「…のタイトルは？」「…を定めた規程の名称は？」「文書番号は？」 ask for a document's name, which its body sentences
do not say: the answer is the title of the document that best matches the rest of the question (the title the
loader extracted: HTML <title>, PDF metadata title, Markdown H1; for a file without one, its first heading-like
line, else its file name), or for a reference number the line of the document's opening that carries its code
("Document LEG-02, version 3", "Procedure PR-04: …"), cited. The document is matched on its title, file name and
text against the question's content terms (without the words that ask for a title), weighted by idf; a question
whose terms the best document does not cover well (the collection holds no such document) is not answered.

`document_match` serves summary questions too ("What is the leak response policy about?"): the document the
question names by its title or file name.
"""

from __future__ import annotations

import re

from relayrag.retrieval.reward import coverage  # IDF-weighted share of the weighted tokens a text holds
from relayrag.retrieval.tokenize import tokenize
from relayrag.text import has_cjk, normalize

TITLE = "title (extractive)"
"""generate's method for a title answer."""

# --- questions ---------------------------------------------------------------------------------------------

# things a collection holds as documents, by the name a user gives them
_DOC = (r"(?:document|doc|page|web ?page|web ?site|site|policy|procedure|handbook|manual|regulation|guide|guideline|"
        r"plan|notice|report|standard|agreement|memo|bulletin|leaflet|brochure|rulebook|charter|directive|"
        r"instruction|specification|schedule|register|faq|review|tariff|log|file|sheet|card|form|circular|"
        r"newsletter|catalogue|catalog|booklet|paper|letter|overview)")
# a word between "the" and the document's kind: not a preposition or a verb that starts a phrase about something else
_GAP = r"(?:(?!(?:in|on|of|for|from|at|by|with|under|that|which|who|whose|listed|mentioned|described|given|named)\b)[\w'’-]+\s+)"
_STRONG_DOC = (r"(?:document|policy|procedure|handbook|manual|regulation|guideline|notice|report|web ?page|page|faq|"
               r"rulebook|memo|bulletin|leaflet|brochure|booklet)")
_TITLE_EN = re.compile(r"\btitle(?:d)?\b", re.I)
_TITLE_DOC_EN = re.compile(rf"\btitle\s+of\s+(?:the|this|that|our|your|a)\s+{_GAP}{{0,4}}?{_DOC}s?\b"
                           rf"|\b{_DOC}(?:'s|’s)\s+title\b|\b{_DOC}\s+(?:\w+\s+)?titled\b"
                           rf"|^\s*what(?:'s|\s+is)\s+(?:the|its)\s+title\s*\??\s*$"
                           rf"|^\s*what\s+title\s+(?:does|do|did|is)\b", re.I)
_NAME_EN = re.compile(
    rf"\bname\s+of\s+(?:the|this|that|our|your|a)\s+{_GAP}{{0,4}}?{_DOC}s?\b"
    rf"|^\s*what(?:'s|\s+is)\s+(?:the|this|that|our)\s+{_GAP}{{0,4}}?{_DOC}s?\b.*\b(?:called|named)\s*[?.]?\s*$", re.I)
_WHICH_DOC_EN = re.compile(rf"^\s*(?:in\s+)?(?:which|what)\s+(?:[\w'’-]+\s+)?{_STRONG_DOC}s?\b"
                           rf"(?!\s+(?:number|no\.?|code|id|version|section|page)\b)", re.I)
_REF_EN = re.compile(
    rf"\b(?:reference|ref\.?|document|doc|policy|procedure|notice|form|control|publication)\s+"
    rf"(?:number|no\.?|code|id|identifier)\s+(?:of|for)\s+(?:the|this|that|our)\s+{_GAP}{{0,5}}?{_DOC}s?\b"
    rf"|\b{_DOC}(?:'s|’s)\s+(?:reference|document|ref\.?)\s+(?:number|no\.?|code)\b", re.I)
_DOC_JA = (r"(?:規程|規則|規定|要領|要綱|文書|資料|マニュアル|手順書|手引き?|方針|計画書?|通知|お知らせ|規約|基準|"
           r"ページ|サイト|FAQ|よくある(?:ご)?質問|報告書|台帳|一覧|案内|ハンドブック|ガイド|書類|様式|帳票)")
_TITLE_JA = re.compile(r"タイトル|題名|表題|文書名|資料名|規程名|件名")
_NAME_JA = re.compile(rf"{_DOC_JA}[^。？?]{{0,6}}(?:名称|名前)|何という(?:{_DOC_JA})")
_WHICH_JA = re.compile(rf"どの(?:{_DOC_JA})")
_REF_JA = re.compile(rf"(?:{_DOC_JA})[^。？?]{{0,8}}(?:文書番号|管理番号|規程番号|整理番号|参照番号|番号)"
                     r"|文書番号|管理番号|規程番号")
# words that ask for the title and name no content of the document
_ASKING = frozenset(tokenize(
    "title titled name named called call reference ref number no code id identifier which what whats 's does "
    "document doc"))
_ASKING_JA = re.compile(r"タイトル|題名|表題|文書名|資料名|規程名|件名|名称|名前|文書番号|管理番号|規程番号|整理番号|"
                        r"参照番号|番号|何という|何ですか|なんですか|は何|でしょうか")


def title_question(question: str) -> str | None:
    """"reference" for a question for a document's reference or document number, "title" for one for its
    title or name (what is the title of the … manual?, what is the … page called?, タイトル, 題名, 名称), "which"
    for "which document / policy / manual …?" (answered by a body sentence too when no document matches
    well), None for any other. A job title or a person's name is not a document's title."""
    q = normalize(question)
    if has_cjk(q):
        if _REF_JA.search(q):
            return "reference"
        if _TITLE_JA.search(q) or _NAME_JA.search(q):
            return "title"
        return "which" if _WHICH_JA.search(q) else None
    if _REF_EN.search(q):
        return "reference"
    if _TITLE_DOC_EN.search(q) or _NAME_EN.search(q):
        return "title"
    if _WHICH_DOC_EN.search(q):
        return "which"
    return None


def topic_text(question: str, asking: re.Pattern[str] | None = None) -> str:
    """The question without the words that ask for a title (CJK): what the document is about."""
    q = normalize(question)
    return (asking or _ASKING_JA).sub(" ", q) if has_cjk(q) else q


# --- documents -----------------------------------------------------------------------------------------------

_CODE = re.compile(r"(?<![\w/])(?=[A-Z0-9/.-]*\d)[A-Z][A-Z0-9]{0,9}(?:[-/.][A-Z0-9]{1,10})+(?![\w/])"
                   r"|第\s*[0-9０-９]+\s*号")
_REF_LABEL = re.compile(r"\b(?:ref|reference|document|doc|policy|procedure|notice|form|no|number|code)\b|番号|第.+号",
                        re.I)
_DOC_WORD = re.compile(rf"\b{_DOC}s?\b|{_DOC_JA}", re.I)
_SENTENCE_END = re.compile(r"[.!?。！？]\s*$")


def file_stem(doc: str) -> str:
    """A file name as words: "supply-interruption-notice.pdf" → "supply interruption notice"."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", doc.rsplit("/", 1)[-1])
    return " ".join(re.split(r"[-_.\s]+", stem)).strip()


def _heading_lines(text: str, limit: int = 6) -> list[str]:
    """The first short lines of a document's opening that read like headings (no sentence end, ≤ 12 words)."""
    out: list[str] = []
    for line in text.split("\n"):
        line = " ".join(line.split())
        if not line:
            continue
        if len(out) >= limit:
            break
        if len(line) <= 100 and len(line.split()) <= 12 and not _SENTENCE_END.search(line) and " | " not in line:
            out.append(line)
        else:
            break  # the body begins
    return out


def display_title(chunks: list[dict]) -> str:
    """A document's title: the loader's (HTML <title>, PDF metadata, Markdown H1) unless that is only the file
    name, else its first heading-like line that names a kind of document ("NOTICE OF PLANNED … INTERRUPTION"),
    else its first heading-like line, else the file name. `chunks`: the document's chunks in reading order."""
    if not chunks:
        return ""
    first = chunks[0]
    title = " ".join((first.get("title") or "").split())
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", first["doc"].rsplit("/", 1)[-1])
    if title and title != stem:
        return title
    heads = _heading_lines(first["text"])
    for h in heads:
        if _DOC_WORD.search(h):
            return h
    return heads[0] if heads else (title or first["doc"])


def reference_line(chunks: list[dict]) -> tuple[dict, str] | None:
    """(chunk, line) of a document's opening that carries its reference code ("Document LEG-02, version 3",
    "Ref. OVWC/N/2026/118 …", "Procedure PR-04: Purchase …", 規程第12号): a labelled line first, then the
    first line with a code. None when its first 800 characters have none."""
    found: list[tuple[int, dict, str]] = []
    for c in chunks[:2]:
        if c is not chunks[0] and c["page"] != chunks[0]["page"]:
            break
        text = c["text"] if c is chunks[0] else c["text"][:400]
        for line in text[:800].split("\n"):
            line = " ".join(line.split())
            if not line or not _CODE.search(line):
                continue
            m = _CODE.search(line)
            labelled = bool(_REF_LABEL.search(line[: m.start()])) if m else False
            found.append((0 if labelled else 1, c, line))
    if not found:
        return None
    found.sort(key=lambda f: f[0])
    _, c, line = found[0]
    return c, line


def documents_of(snap, rows: list[int]) -> dict[str, list[dict]]:
    """source → its chunks in reading order, for the documents of `rows` (retrieval's candidates), in the order
    they first appear."""
    sources = list(dict.fromkeys(snap.chunks[r]["source"] for r in rows))
    out: dict[str, list[dict]] = {s: [] for s in sources}
    for c in snap.chunks:
        if c["source"] in out:
            out[c["source"]].append(c)
    for s in out:
        out[s].sort(key=lambda c: (c["page"], c["start"]))
    return out


_HIRAGANA = re.compile(r"[\u3040-\u309f]")


def _weights(question: str, bm25, drop: frozenset[str] = frozenset()) -> dict[str, float]:
    from relayrag.stages.answerability import content_weights
    from relayrag.stages.evidence import absent_tokens, query_idf
    topic = topic_text(question)
    toks = tokenize(topic)
    idf = query_idf(toks, bm25) if bm25 is not None else None
    absent = absent_tokens(toks, bm25) if bm25 is not None else set()
    w = content_weights(topic, idf, absent)
    # CJK: the bigrams of content words only (制服, 返却), not those across a particle (の返, て定), which no title
    # or text need say
    return {t: v for t, v in w.items() if t not in _ASKING and t not in drop and t not in _GENERIC_KINDS
            and not _HIRAGANA.search(t)}


def document_match(question: str, snap, rows: list[int], drop: frozenset[str] = frozenset(),
                   relevance: dict[int, float] | None = None) -> list[tuple]:
    """The documents of `rows` ranked for a question about a document: (score, name coverage, text coverage,
    source, chunks, relevance), best first. Name coverage: the idf-weighted share of the question's content terms (without
    the words that ask for a title, and `drop`) in the document's title, display title and file name; text
    coverage: in those and the document's text. Score = name + text coverage + the best relevance (`relevance`:
    row → rerank's P(relevant), which reads sentence cosines: "help page that lists common questions" for
    "Frequently Asked Questions") of its rows; a rank among retrieval's candidates breaks ties."""
    weights = _weights(question, getattr(snap, "bm25", None), drop)
    best_p: dict[str, float] = {}
    for r, p in (relevance or {}).items():
        src = snap.chunks[r]["source"]
        best_p[src] = max(best_p.get(src, 0.0), p)
    out = []
    for rank, (source, chunks) in enumerate(documents_of(snap, rows).items()):
        if not chunks:
            continue
        name = " ".join(dict.fromkeys([chunks[0].get("title") or "", display_title(chunks), file_stem(chunks[0]["doc"])]))
        name_cov = coverage(weights, name)
        text_cov = coverage(weights, name + "\n" + "\n".join(c["text"] for c in chunks))
        out.append((name_cov + text_cov + best_p.get(source, 0.0) - 0.001 * rank, name_cov, text_cov, source, chunks,
                    best_p.get(source, 0.0)))
    out.sort(key=lambda d: -d[0])
    return out


# a document's kind as a question names it ("FAQページ", "web page"): what it is, not a word it says
_KIND_TOKENS = frozenset(tokenize("page web site faq ページ サイト"))

TEXT_MIN = {"en": 0.6, "cjk": 0.5}
"""The least idf-weighted share of the question's content terms the chosen document must say (title, file name or
text) for a title answer: below it the collection holds no document of that description."""


def _entities_in(question: str, text: str) -> bool:
    from relayrag.stages.answerability import question_entities
    toks = set(tokenize(text))
    for group in question_entities(topic_text(question)):
        group = [t for t in group if t not in _ASKING and t not in _KIND_TOKENS]
        if group and not all(t in toks for t in group):
            return False
    return True


_WEB_KINDS = frozenset(tokenize("page webpage web site faq ページ サイト"))
_GENERIC_KINDS = frozenset(tokenize("document doc file paper 文書 資料 書類"))


def kinds_named(question: str) -> set[str]:
    """The kinds of document the question names ("manual", "policy", "page", 規程), as tokens; not "document"."""
    q = normalize(question)
    return set(tokenize(" ".join(m.group(0) for m in _DOC_WORD.finditer(q)))) - _GENERIC_KINDS - _ASKING


def names_its_kind(question: str, chunks: list[dict]) -> bool | None:
    """Does the question name the document's kind — a word of its title or file name ("the … manual" for
    "Service Manual - …"), or a web page / FAQ page for an HTML file? None for a question that names no kind
    but "document"."""
    kinds = kinds_named(question)
    if not kinds:
        return None
    first = chunks[0]
    name = set(tokenize(" ".join([first.get("title") or "", display_title(chunks), file_stem(first["doc"])])))
    web = first["doc"].lower().endswith((".html", ".htm"))
    return any(k in name or (web and k in _WEB_KINDS) for k in kinds)


RELEVANT_MIN = 0.5
"""A document whose words cover less than TEXT_MIN still answers when rerank found one of its passages relevant
(P >= RELEVANT_MIN: a paraphrase of its topic), its title says one of the question's terms and the question
names its kind (`names_its_kind`)."""


def title_answer(question: str, kind: str, snap, rows: list[int], citation,
                 relevance: dict[int, float] | None = None) -> tuple[list[dict], list[dict]] | None:
    """(sentences, citations) answering a title question (`kind` from `title_question`) with the title — or for
    "reference", the code line — of the best-matching document among those of `rows` (retrieval's candidates),
    citing its first chunk (or the chunk with the code line); `citation(chunk, n, quote)` builds a citation.
    None when no document matches well enough (TEXT_MIN, and every named entity of the question in it) or a
    reference question's document carries no code."""
    # a question that names a kind of document ("the … policy", "FAQページ") is about a document of that kind
    ranked = [d for d in document_match(question, snap, rows, relevance=relevance)
              if names_its_kind(question, d[4]) is not False]
    if not ranked:
        return None
    _, name_cov, text_cov, _, chunks, p = ranked[0]
    cjk = has_cjk(question)
    kinds = kinds_named(question)
    if kinds:  # "the … policy": its title or file name says a term of the question's besides "policy"
        first = chunks[0]
        own = {t: w for t, w in _weights(question, getattr(snap, "bm25", None)).items() if t not in kinds}
        name = " ".join([first.get("title") or "", display_title(chunks), file_stem(first["doc"])])
        if own and coverage(own, name) <= 0:
            return None
    if text_cov < TEXT_MIN["cjk" if cjk else "en"]:
        # a paraphrase of its topic ("help page that lists common questions" for "Frequently Asked Questions"):
        # rerank found it relevant, the question names its kind and its title says a term of the question's own
        kinds = kinds_named(question)
        weights = {t: w for t, w in _weights(question, getattr(snap, "bm25", None)).items() if t not in kinds}
        first = chunks[0]
        if not (p >= RELEVANT_MIN and names_its_kind(question, chunks) and
                coverage(weights, (first.get("title") or "") + "\n" + display_title(chunks)) > 0):
            return None
    if not _entities_in(question, chunks[0].get("title", "") + "\n" + file_stem(chunks[0]["doc"]) + "\n"
                        + "\n".join(c["text"] for c in chunks)):
        return None
    if kind == "reference":
        ref = reference_line(chunks)
        if ref is None:
            return None
        chunk, line = ref
        text = source = line
    else:
        chunk, text = chunks[0], display_title(chunks)
        source = text
        if has_cjk(text):
            text = f"「{text}」"
    if not text:
        return None
    sentence = {"text": text, "cites": [1], "source": source, "kind": "title", "doc": chunk["doc"]}
    return [sentence], [citation(chunk, 1, source)]


def states_title(text: str, chunk: dict) -> bool:
    """Does a title answer's `text` say the cited chunk's title (the loader's, or its display title's first
    heading line) or a line of its text?"""
    t = " ".join(text.split()).strip("「」").lower()
    if not t:
        return False
    if t == " ".join((chunk.get("title") or "").split()).lower():
        return True
    return t in " ".join(chunk.get("text", "").split()).lower()
