"""Text utilities shared by ingestion and stages: normalisation, sentence splitting, script detection."""

from __future__ import annotations

import re
import unicodedata

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\uac00-\ud7af]")
# Latin letters with and without diacritics (Zátiší, Dolní, Łódź, Müller, São, Ørsted, Nguyễn) for word patterns
# that must not split an accented name into pieces ("Zátiší" read as "Z" and "ti"); CJK is not included
LATIN_LOWER = "a-z\u00df-\u00f6\u00f8-\u00ff" + "".join(
    chr(c) for c in range(0x0100, 0x0250) if chr(c).islower()) + "".join(
    chr(c) for c in range(0x1E00, 0x1F00) if chr(c).islower())
LATIN_UPPER = "A-Z\u00c0-\u00d6\u00d8-\u00de" + "".join(
    chr(c) for c in range(0x0100, 0x0250) if chr(c).isupper()) + "".join(
    chr(c) for c in range(0x1E00, 0x1F00) if chr(c).isupper())
LATIN_LETTER = LATIN_LOWER + LATIN_UPPER
# candidate sentence ends: . ! ? before space + capital/digit/quote; CJK full stops; line breaks (kept or
# not by context in split_sentences: PDF text wraps lines mid-sentence)
_SENT_END = re.compile(r"(?<=[.!?])[ \t]+(?=[\"'(\[A-Z0-9])|(?<=[。！？])|[ \t]*\n\s*")
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|Fig|Figs|No|Nos|Dr|Mr|Mrs|Ms|St|al|approx|U\.S|Inc|Co|Corp|Ltd|Jr|Sr|Vol"
                     r"|pp|ca)\.)$")
_LINE_END_PUNCT = tuple(".!?:;。！？")


# C0 controls but tab and newline, DEL, C1 controls (ESC starts a terminal escape sequence; C1's CSI/OSC do the
# same on some terminals); what a file's text may not carry into the index
_INGEST_CONTROLS = re.compile("\r\n?|[\x0b\x0c]|[\x00-\x08\x0e-\x1f\x7f-\x9f]")
# what a terminal must not receive from data: the same (CR too) plus the bidi embeddings, overrides and isolates
# (U+202A-U+202E, U+2066-U+2069), which reorder what is shown after them
TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """`text` without control characters: CR, CRLF, vertical tab and form feed become a newline; every other C0
    control (tab and newline are kept), DEL and C1 control is removed. Used on chunk text and titles at ingest,
    so an escape sequence in a document never reaches an index, a prompt or a terminal."""
    return _INGEST_CONTROLS.sub(lambda m: "\n" if m.group()[0] in "\r\x0b\x0c" else "", text)


def terminal_safe(text: str) -> str:
    """`text` for a terminal: each TERMINAL_UNSAFE character becomes one visible character (a C0 control its
    Unicode control picture, e.g. ESC as U+241B; DEL U+2421; C1 and bidi controls U+FFFD), so nothing in the
    data can move the cursor, erase a line, open a hyperlink or reorder text, and lengths are unchanged."""
    def shown(m: re.Match) -> str:
        c = ord(m.group())
        return chr(0x2400 + c) if c < 0x20 else "\u2421" if c == 0x7F else "\ufffd"
    return TERMINAL_UNSAFE.sub(shown, text)


_KANA = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# function words and letters that tell the European languages apart in a short question (each word weighs 1,
# each letter 2); English is the default, also on a tie
_LANG_WORDS = {
    "en": "what which who whom whose how when where why the is are was were of to in for does do did a an and "
          "with from on by can should",
    "es": "qué cuál cuáles cuánto cuántos cuánta cuántas cómo dónde cuándo quién quiénes por para el los las del es "
          "son una y en se tiene puede hay cuesta",
    "fr": "quel quelle quels quelles comment où quand qui combien pourquoi le les des du est sont une et pour dans au "
          "aux est-ce il elle peut coûte",
    "de": "was wie wo wann wer warum welche welcher welches wieviel wieviele der die das ist sind ein eine einen und "
          "für von mit den dem im kann gibt kostet",
    "pt": "qual quais quanto quantos quanta quantas como onde quando quem o os do da dos das é são um uma e em no na "
          "pode tem há custa",
    "it": "quale quali quanto quanti come dove quando chi perché il lo gli del della dei è sono un una e per nel "
          "nella può ci di che costa",
}
_LANG_WORD_SETS = {lang: frozenset(words.split()) for lang, words in _LANG_WORDS.items()}
_LANG_LETTERS = {"es": "ñ¿¡", "fr": "çêëîïôœù", "de": "äöüß", "pt": "ãõç", "it": "ìòè"}


def language_code(text: str) -> str:
    """The language to answer a question's "not found" or refusal in. CJK text (has_cjk): "ja" (any kana),
    "ko" (hangul), "zh" (Han characters without kana); else by function words and letters "es", "fr", "de",
    "pt", "it" or "en" (the default, also on a tie). A rule on the question's script and its commonest words,
    not a language model: enough to say "not found" in the asker's language."""
    if has_cjk(text):
        if _KANA.search(text):
            return "ja"
        if _HANGUL.search(text):
            return "ko"
        if _HAN.search(text):
            return "zh"
    words = re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)?", text.lower())
    scores = {lang: sum(1 for w in words if w in vocab) for lang, vocab in _LANG_WORD_SETS.items()}
    for lang, letters in _LANG_LETTERS.items():
        scores[lang] += 2 * sum(1 for ch in text.lower() if ch in letters)
    best = max(scores, key=lambda k: scores[k])
    return best if scores[best] > scores["en"] else "en"


def normalize(text: str) -> str:
    """NFKC (full-width → ASCII, ligatures split) and collapsed horizontal whitespace."""
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"[ \t\u00a0]+", " ", text)


def has_cjk(text: str, min_share: float = 0.1) -> bool:
    """True if at least `min_share` of the non-space characters are CJK/kana/hangul."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return False
    return sum(1 for c in chars if _CJK.match(c)) / len(chars) >= min_share


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans [(start, end)] in character offsets of `text`; each table row is a sentence.

    Rule-based: . ! ? followed by a capital/digit/quote (minus a small abbreviation list), CJK full
    stops, blank lines, and single line breaks only where the line ends with punctuation or either line
    is a table row (" | "): PDF text wraps lines mid-sentence. Empty spans are dropped; offsets make quotes
    exact substrings of the text."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END.finditer(text):
        end = m.start()
        sep = m.group(0)
        if "\n" in sep:
            before = text[text.rfind("\n", 0, end) + 1:end].rstrip()
            nxt_end = text.find("\n", m.end())
            after = text[m.end():nxt_end if nxt_end >= 0 else len(text)]
            blank = sep.count("\n") >= 2
            if not (blank or " | " in before or " | " in after or before.endswith(_LINE_END_PUNCT)):
                continue  # a wrapped line: the sentence goes on
        elif _ABBREV.search(text[start:end]):
            continue  # "e.g. X" is not a sentence end
        spans.append((start, end))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e - s >= 2:
            out.append((s, e))
    return out


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def sentence_spans(text: str, max_sentences: int = 40) -> list[tuple[int, int]]:
    """The first `max_sentences` sentence spans of `text` (split_sentences); the whole text if it has none."""
    spans = split_sentences(text)
    return spans[:max_sentences] if spans else [(0, len(text))]


def answer_units(text: str, cjk: bool) -> list[tuple[int, int]]:
    """The units generate reads and quotes (relayrag.stages.generate): sentence spans of a chunk; in CJK
    text a sentence whose brackets are still open is joined to the next one; in English a short non-row
    sentence (under 20 characters: a caption "Figure 7-26." and its title "Self-locking nuts.") or one ending
    with ":" (it introduces what follows) is joined to the next one."""
    spans = sentence_spans(text, max_sentences=80)
    rows: list[tuple[int, int]] = []
    for s, e in spans:  # a table row is one unit even where a cell holds ". " ("Up to $6,715. | Up to …")
        if rows and "\n" not in text[rows[-1][1]:s] and " | " in text[rows[-1][0]:e]:
            rows[-1] = (rows[-1][0], e)
        else:
            rows.append((s, e))
    spans = rows
    if cjk:  # a 。 inside 「…」 or （…） does not end the sentence: join until the brackets close
        joined: list[tuple[int, int]] = []
        for s, e in spans:
            if joined and open_brackets(text[joined[-1][0]:joined[-1][1]]) > 0:
                joined[-1] = (joined[-1][0], e)
            else:
                joined.append((s, e))
        return joined
    spans = [part for s, e in spans for part in _heading_apart(text, s, e)]
    spans = [part for s, e in spans for part in _fields_apart(text, s, e)]
    spans = _wrapped_joined(text, spans)
    out: list[tuple[int, int]] = []
    k = 0
    while k < len(spans):
        s, e = spans[k]
        if ((e - s < 20 or text[s:e].rstrip().endswith(":")) and " | " not in text[s:e] and k + 1 < len(spans)
                and (text[s:e].rstrip().endswith(":") or "\n\n" not in text[e:spans[k + 1][0]])  # a heading
                # that is a paragraph of its own stays apart; a line ending with ":" introduces what follows
                and not _heading_line(text[s:e])
                and " | " not in text[spans[k + 1][0]:spans[k + 1][1]]):
            e = spans[k + 1][1]
            k += 1
        out.append((s, e))
        k += 1
    return out


_OPEN_END = re.compile(r"[^\W_][,]?$|,$")
_CONTINUES = re.compile(r"^[a-z]")


def _wrapped_joined(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Lines of one sentence that a scan or a PDF's layout broke apart ("Do not open any chamber door" /
    "for longer than 2 minutes."), joined again: a unit that ends without punctuation, directly followed
    by one that starts in lower case, continues there. A row is never joined."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and _OPEN_END.search(text[out[-1][0]:out[-1][1]].rstrip()) and _CONTINUES.match(text[s:e].lstrip()) \
                and " | " not in text[out[-1][0]:e]:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


_HEADING_WORD = re.compile(r"[^\W\d_][\w\-/']*")


_MINOR_WORDS = frozenset("a an and as at by for from in into of on or the to with".split())


def _heading_line(line: str) -> bool:
    """A line that reads as a title-case heading: at most 80 characters, at least two words, no table cells,
    no comma, no closing punctuation, no digit besides a leading section number, and every word capitalised
    but the minor ones (of, and, the …): "Costs of Compliance", "3. Refund Policy"; not "On November 7, 2018,
    the FAA issued" (the first line of a wrapped sentence)."""
    line = re.sub(r"^\(?\d+(?:\.\d+)*[.)]?\s+", "", line.strip())
    if (not line or len(line) > 80 or " | " in line or "\n" in line or "," in line or line.endswith(tuple(".;:!?"))
            or any(ch.isdigit() for ch in line)):
        return False
    words = _HEADING_WORD.findall(line)
    return len(words) >= 2 and words[0][0].isupper() and all(
        w[0].isupper() for w in words if w.lower() not in _MINOR_WORDS)


def _heading_apart(text: str, s: int, e: int) -> list[tuple[int, int]]:
    """A sentence span whose first line is a heading ("Costs of Compliance\nThe FAA estimates …", as PDF
    text lines come) split into the heading and the sentence, so the heading is not glued to the sentence."""
    nl = text.find("\n", s, e)
    if nl < 0 or not _heading_line(text[s:nl]):
        return [(s, e)]
    rest = nl + 1
    while rest < e and text[rest].isspace():
        rest += 1
    if rest >= e or not text[rest].isupper() or " | " in text[rest:e]:
        return [(s, e)]
    return [(s, nl), (rest, e)]


_FIELD = re.compile(r"^[A-Z][\w /&'-]{1,30}:\s*\S")
_ITEM = re.compile(r"^(?:[-*•·]\s+)\S")


def _fields_apart(text: str, s: int, e: int) -> list[tuple[int, int]]:
    """A span of lines of which at least two are "Label: value" fields or list items ("Document LEG-02, version
    3\nApproved by: Dana Whitfield\nEffective date: 1 May 2026", a document's header block; "- Headquarters: Lyon
    - Employees: 1,340") split into one unit per field or item (a line that starts neither continues the one
    before): each states one fact. A line ending with ":" introduces the lines as one list: kept whole."""
    lines = text[s:e].split("\n")
    starts = [bool(_FIELD.match(ln.strip()) or _ITEM.match(ln.strip())) for ln in lines]
    if len(lines) < 2 or sum(starts) < 2 or any(ln.rstrip().endswith(":") for ln in lines) or \
            text[:s].rstrip().endswith(":"):
        return [(s, e)]
    out: list[tuple[int, int]] = []
    pos = s
    for ln, new in zip(lines, starts):
        a, b = pos + len(ln) - len(ln.lstrip()), pos + len(ln.rstrip())
        if ln.strip():
            if new or not out:
                out.append((a, b))
            else:
                out[-1] = (out[-1][0], b)
        pos += len(ln) + 1
    return out


def open_brackets(t: str) -> int:
    return sum(t.count(o) - t.count(c) for o, c in ("「」", "『』", "（）", "()"))


# --- table rows ("cell | cell", as the loaders render tables) ------------------------------------------


def is_header_row(row: str) -> bool:
    """A table row of labels: at least two filled cells, none of them a bare number ("37,499.96", "$0"),
    and at most half of them holding digits at all (a data row "Stabilizer wiring change | Up to 79
    work-hours … | Up to $3,790 | …" has numbers in words; a header "W/E 02/24/17 | Last Week | …" has one)."""
    cells = [c.strip() for c in row.split("|")]
    filled = [c for c in cells if c]
    if len(filled) < 2:
        return False
    if any(re.fullmatch(r"[\d\s,.$%()\-–+*/]+", c) and re.search(r"\d", c) for c in filled):
        return False
    return sum(1 for c in filled if re.search(r"\d", c)) <= len(filled) / 2


def filled_cells(row: str) -> int:
    """How many cells of a table row ("a | b | | d") hold text."""
    return sum(1 for c in row.split("|") if c.strip())


def column_header(rows: list[str]) -> str:
    """Of a table's leading label rows (top to bottom), the one that names the columns: the first that fills
    at least half of the widest row's cells (a group row "| | | Pre-Pawn | | |" spans several columns and
    leaves most cells empty), else the one with most filled cells. The first such row, not a later one: a
    data row of labels only ("up to 10 kg | Courier Rapide | same day") fills as many cells as the column
    names above it and is read under them."""
    if not rows:
        return ""
    width = max(len(r.split("|")) for r in rows)
    for r in rows:
        n = filled_cells(r)
        if n >= 2 and n >= width / 2:
            return " ".join(r.split())
    best = max(rows, key=filled_cells)
    return " ".join(best.split())


def header_over(row: str, header: str) -> bool:
    """Is `header` (the column-name row found above `row` in its table) the column names of `row`, when
    `row` itself is a row of labels? Yes when it fills at least as many cells: a group row ("| | Pre-Pawn |
    |") above a column-name row does not make that row data."""
    return bool(header) and " ".join(header.split()) != " ".join(row.split()) and \
        filled_cells(header) >= filled_cells(row) and names_columns(header)


def names_columns(row: str) -> bool:
    """Does a label row read as column names: no digit, e-mail, web address or "field: value" in any cell? An
    address block ("210 Walnut Street, Room 767 | Email: desk@example.org") is a table of its own, its lines
    are not a column-name row and the rows under them."""
    return not re.search(r"\d|@|www\.|https?://|\w:\s", row)


_CLAUSE_END = re.compile(r"(?<=[.!?;])\s+(?=\S)|(?<=[。！？])")


def asking_clause(question: str) -> str:
    """The sentence of a question that asks ("I joined a year ago. How much annual leave …?" → "How much annual
    leave …?"): the last one ending in a question mark, else the last one; the question's type words are read
    there (the clauses before it give circumstances)."""
    q = normalize(question)
    parts = [p for p in _CLAUSE_END.split(q) if p.strip()]
    if len(parts) < 2:
        return q
    asking = [p for p in parts if p.rstrip().endswith(("?", "？"))]
    return (asking or parts)[-1].strip()


_WH_EN = (r"(?:how\s+(?:much|many|long|often|far|old|soon|big|large|heavy|tall|high|cold|hot|warm)|"
          r"what|which|who|whom|whose|when|where)\b")
# "During the shutdown, how long …?", "For a part-timer, what …?": a leading phrase of circumstances before the wh-word
_LEADING_PHRASE = re.compile(rf"^[^,?]{{2,80}},\s+(?={_WH_EN})", re.I)
# "Is there a fee for X, and how much?", "Do I need a permit, and who issues it?": a yes/no clause, then the wh-part
_TRAILING_WH = re.compile(rf"^(?P<head>[^?]+?),?\s+and\s+(?P<wh>{_WH_EN}.*)$", re.I)


def typed_clause(question: str) -> str:
    """The part of the question whose wh-words give the type of value it asks for: its asking clause
    (asking_clause) without a leading phrase of circumstances ("During the shutdown, how long may a door stay
    open?" → "how long may a door stay open?"), and for a yes/no clause followed by a wh-part ("Is there a fee
    for late returns, and how much?") the wh-part first, then the clause it asks about ("how much — Is there a
    fee for late returns?"): a value of that type answers it, a sentence that only says yes does not."""
    q = asking_clause(question)
    if has_cjk(q):
        return q
    m = _TRAILING_WH.match(q)
    if m and not re.match(_WH_EN, m.group("head").strip(), re.I):
        wh = m.group("wh").strip().rstrip("?").strip()
        return f"{wh} — {m.group('head').strip()}?"
    return _LEADING_PHRASE.sub("", q, count=1)
