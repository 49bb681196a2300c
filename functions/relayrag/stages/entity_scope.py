"""Is a sentence about the very thing the question names, or about a sibling of it? Checked without an LLM.

Three classes of wording, each a sentence that shares the question's words but speaks of another thing:

- **Another name in the question's slot** (`names_another`): the sentence puts another capitalised name where the
  question has its own, in one noun phrase: "The Porto service centre opened in 2019." for "When did the Leeds
  service centre open?".
- **A sibling name in the local context** (`sibling_name`): the question names a multi-word entity ("MV Heron
  Point", "Tamarin Spirit", "Dr Anna Berg"), the sentence does not say it in full ("She has a length overall of
  64.1 metres."), and the sentence read with its local context (title, page and section heading, the sentence
  before it, a table's column names) names another entity that shares part of the name but not the question's
  distinguishing word ("MV Kestrel Point", "Tamarin Bay Ferries", "Dr Jonas Berg"); or, for a name followed by a
  head noun ("the Leeds service centre"), another name before the same head ("the Porto service centre"). The
  sentence then speaks of that sibling. A document about one entity that names it only in its title or opening
  (a report about one aircraft) keeps answering: its headings name no other entity sharing part of the name.
  Japanese: katakana names whose parts are split by ・ or a space (ヘロン・ポイント号 / ケストレル・ポイント号).
- **A contrasting modifier** (`other_kind`): the question puts a modifier on the head noun of what it asks ("air
  draught", "secondary carer", "night fare"); the sentence puts a different one on the same head ("loaded
  draught", "primary carer", "day fare") and the question's modifier is nowhere in the sentence or its local
  context: it is about another kind of that thing. Synonyms ("maximum speed" / "top speed", "annual leave" /
  "yearly leave") would be refused by that test alone, so it is restricted by a structural criterion rather than
  a word list: the question's modifier must be known to the collection as a kind of its own — either the
  collection writes the question's pair ("air draught") somewhere else (it tells the kinds of that head apart), or
  the question's modifier occurs in no chunk at all (`absent`: the documents never speak of that kind, so the
  sentence about the other kind cannot answer). Japanese (`other_kind_ja`): compounds carry no word boundary, so the
  modifier is read off kanji compounds that share a head of two or more characters (最高速力 / 航海速力, 小児運賃 /
  大人運賃), and only when the collection writes the question's compound elsewhere.
- **Another entity's section, in Japanese** (`section_sibling_ja`): a document laid out in one numbered or marked
  section per entity (「1. フェリーひのき」「4. 高速艇あおば」, each then the topic of its text: 「高速艇あおばは、…」); the
  question names one of these entities, the sentence sits under another's title or names another, and neither
  the sentence nor its context names the question's. A section about a topic (「2. 船舶に共通する安全設備」) is no
  entity's.

Shapes: `Name` is the stemmed tokens of a question's name with the head words after it; `kinds` is the set of
(modifier, head) stem pairs of the question that the collection writes (`collection_kinds`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass

from relayrag.retrieval.tokenize import tokenize
from relayrag.stages.local_context import is_heading
from relayrag.text import has_cjk, normalize

_WORD = re.compile(r"[^\W_][\w'’-]*|[^\w\s]")
_ASK_WORDS = frozenset("""what which who whom whose when where why how many much does did do is are was were be can
could would should will shall may might must have has had get gets tell me please give list name i""".split())


@dataclass(frozen=True)
class Name:
    words: tuple[tuple[str, ...], ...]  # stems of each capitalised word ("MV Heron Point" → (mv,), (heron,), (point,))
    head: tuple[str, ...]  # stems of up to two lower-case words after it ("Leeds service centre" → serv, centr)

    @property
    def tokens(self) -> frozenset[str]:
        return frozenset(t for w in self.words for t in w)


def _is_name_word(w: str) -> bool:
    """A capitalised word or a code ("B-200", "K1"); not a measure written with a digit ("12-year-old")."""
    return w[:1].isupper() or (any(ch.isdigit() for ch in w) and any(ch.isupper() for ch in w))


def _runs(text: str, skip_first: bool) -> list[tuple[list[str], list[str]]]:
    """(capitalised run, the words after it up to punctuation) for each run of name words in `text`, line by
    line; `skip_first`: a line's first word is no name (a question's "What", a sentence's "She")."""
    out = []
    for line in text.split("\n"):
        words = _WORD.findall(normalize(line))
        k = 0
        while k < len(words):
            if _is_name_word(words[k]) and not (skip_first and k == 0) and words[k].lower() not in _ASK_WORDS:
                j = k
                # a number inside a name ("Boeing 737 MAX", "Building 4") belongs to it
                while j < len(words) and (_is_name_word(words[j]) or (words[j].isdigit() and j > k)):
                    j += 1
                run = words[k:j]
                while run and not tokenize(run[0]):  # "The Porto service centre": the article is no name
                    run = run[1:]
                if run:
                    out.append((run, words[j:j + 4]))
                k = j
            else:
                k += 1
    return out


def question_names(question: str) -> list[Name]:
    """The names the question gives (runs of capitalised words or codes, not its first word) with the head words
    after each: "When did the Leeds service centre open?" → Name(leeds; serv centr); "What is the air draught of MV
    Heron Point?" → Name(mv heron point)."""
    out = []
    for run, after in _runs(question, skip_first=True):
        words = tuple(tuple(tokenize(w)) for w in run)
        words = tuple(w for w in words if w)
        if not words:
            continue
        head: list[str] = []
        for w in after:
            toks = tokenize(w)
            if not w[:1].islower() or not toks or w.lower() in _ASK_WORDS:
                break
            head.extend(toks)
            if len(head) >= 2:
                break
        out.append(Name(words, tuple(head)))
    return out


def _follows(after: list[str], head: tuple[str, ...]) -> bool:
    """Do the words right after a name say the question's head words, with nothing between ("Porto service centre";
    not "Age of record")?"""
    stems = [tokenize(w) for w in after[:len(head)]]
    return bool(head) and all(len(x) == 1 for x in stems) and [x[0] for x in stems] == list(head)


_ADDRESS = re.compile(r"\S+@\S*|\bhttps?://\S+|\bwww\.\S+")


def sibling_name(question: str, text: str, context: str = "", chunk: str = "") -> str | None:
    """The sibling of a name of the question that the sentence `text`, read with its local `context`, speaks of
    (see the module docstring), as written there; None when there is none. A name that the sentence and its
    context say in full has no sibling there, whatever else they name. `chunk`: the text around the sentence,
    where the question's name may head a section of its own (sibling_section)."""
    if has_cjk(question):
        return _katakana_sibling(question, text + "\n" + context)
    local_text = _ADDRESS.sub(" ", text + "\n" + context)  # "9-FAA-SACO-AD-Inquiry@faa.gov" names no entity
    local = set(tokenize(local_text))
    qtoks = set(tokenize(question))
    runs = None
    for name in question_names(question):
        if not name.tokens - local:  # the name, said in full
            continue
        if runs is None:
            runs = _runs(local_text, skip_first=False)
        for run, after in runs:
            rtoks = {t for w in run for t in tokenize(w)}
            new = rtoks - qtoks
            if not new:
                continue
            # "MV Kestrel Point" for "MV Heron Point": it shares a word, and the question's distinguishing word
            # (one the sibling lacks: "Heron") is not said here
            if len(name.words) >= 2 and rtoks & name.tokens and (name.tokens - rtoks) - local:
                return " ".join(run)
            if _follows(after, name.head) and not rtoks & name.tokens:  # "Porto service centre" for "Leeds …"
                return " ".join(run + after[:len(name.head)])
        if chunk:
            other = sibling_section(name, local, context, chunk)
            if other:
                return other
    return None


def sibling_section(name: Name, local: set[str], context: str, chunk: str) -> str | None:
    """A document laid out in one section per entity: the question's name heads a section of the chunk ("MV Tamarin
    Spirit"), the sentence's context holds another heading of the same pattern — sharing a word with that heading
    which is not the question's ("MV Heron Point": MV), or the head words after the name — and the sentence and
    its context lack the question's distinguishing words: the sentence is in the other entity's section. A
    one-entity document ("Skylark Seven" over "Flight details") has no heading of the same pattern."""
    own = [ln.strip() for ln in chunk.split("\n") if is_heading(ln) and name.tokens <= set(tokenize(ln))]
    if not own:
        return None
    for ln in context.split("\n"):
        if not is_heading(ln):
            continue
        htoks = set(tokenize(ln))
        if not htoks or name.tokens <= htoks or not (name.tokens - htoks) - local:
            continue
        for mine in own:
            pattern = set(tokenize(mine)) - name.tokens
            if htoks & pattern and htoks - set(tokenize(mine)):
                return ln.strip()
    return None


_KANA = r"[\u30a1-\u30fa\u30fc-\u30ff\uff66-\uff9f]"  # katakana and ー, not the separator ・ (U+30FB)
_KATAKANA_NAME = re.compile(rf"{_KANA}+(?:[・･\s]{_KANA}+)+")
_KATAKANA_PART = re.compile(rf"{_KANA}+")


def _katakana_sibling(question: str, local: str) -> str | None:
    """Japanese: a katakana name of several parts (ヘロン・ポイント) some part of which the local text lacks, while it
    names another katakana name sharing a part (ケストレル・ポイント)."""
    for m in _KATAKANA_NAME.finditer(normalize(question)):
        parts = [p for p in _KATAKANA_PART.findall(m.group(0)) if p != "ー"]
        if all(p in local for p in parts):
            continue
        for r in _KATAKANA_NAME.finditer(normalize(local)):
            rparts = _KATAKANA_PART.findall(r.group(0))
            if set(rparts) & set(parts) and set(rparts) - set(parts):
                return r.group(0)
    return None


# --- contrasting modifiers -----------------------------------------------------------------------------------

# where a noun phrase starts: an article, a possessive, a quantifier or a preposition ("the air draught", "of paid
# parental leave", "a secondary carer"); a run of lower-case words after one of them is a noun phrase whose last word
# is its head. Grammar words, not a list of contrasts: a verb and its object ("visitors borrow safety shoes") or a
# question word and the attribute it asks ("what colour vests") start no noun phrase.
_NP_START = frozenset("""a an the my your our their his her its this that these those of for on in at to with from by
about per each every any""".split())
_CARDINALS = frozenset("""one two three four five six seven eight nine ten eleven twelve each every any some all no other
same such own more most less least""".split())


_ADVERBS = frozenset("am not just also only very so too ever still really already yet".split())
_AUXILIARY = frozenset("do does did can could will would should shall may might must".split())


def _np_word(w: str) -> bool:
    return (w[:1].islower() and w.isalpha() and w not in _ASK_WORDS and w not in _CARDINALS and w not in _NP_START
            and w not in _ADVERBS and len(tokenize(w)) == 1)


def modifier_pairs(question: str) -> list[tuple[str, str]]:
    """(modifier, head) stem pairs of the question's noun phrases: after an article, possessive or preposition, a run
    of lower-case content words whose last is the head ("the air draught" → (air, draught); "of paid parental leave"
    → (paid, leav), (parent, leav); "a secondary carer" → (secondari, carer)); not question words, numbers or
    names."""
    words = _WORD.findall(normalize(question))
    out: list[tuple[str, str]] = []
    for i, w in enumerate(words):
        if w.lower() not in _NP_START:
            continue
        run: list[str] = []
        end = i + 1
        for x in words[i + 1:i + 5]:
            if not _np_word(x):
                break
            run.append(tokenize(x)[0])
            end += 1
        # "What colour vests do the fire wardens wear?": the run that ends the question after an auxiliary ends with
        # the main verb, which heads no noun phrase
        if run and end < len(words) and words[end] in "?？" and any(x.lower() in _AUXILIARY for x in words[:i]):
            run = run[:-1]
        if len(run) >= 2:
            out.extend((m, run[-1]) for m in run[:-1] if m != run[-1] and (m, run[-1]) not in out)
    return out


def collection_kinds(question: str, texts: Iterable[str]) -> frozenset[tuple[str, str]]:
    """The question's (modifier, head) pairs that some text of the collection writes next to each other ("air
    draught" in one ship's particulars): the collection tells those kinds of the head apart."""
    pairs = modifier_pairs(question)
    if not pairs:
        return frozenset()
    found: set[tuple[str, str]] = set()
    rx = re.compile(r"\b(?:" + "|".join(re.escape(m) for m, _ in pairs) + r")\w*[\s-]+\w+", re.I)
    for t in texts:
        for m in rx.finditer(t):
            toks = tokenize(m.group(0))
            if len(toks) == 2 and (toks[0], toks[1]) in pairs:
                found.add((toks[0], toks[1]))
        if len(found) == len(pairs):
            break
    return frozenset(found)


class CollectionKinds:
    """`collection_kinds(question, texts())` computed on the first membership test and kept: the scan reads every
    chunk of the collection, which costs ~1.4 s on 50,000 chunks when a pair is never found, and other_kind needs
    it only for a sentence that puts another modifier on the question's head (rare), not for every ask. Likewise
    `section_subjects` (Japanese questions only)."""

    def __init__(self, question: str, texts: Callable[[], Iterable[str]]):
        self._question, self._texts = question, texts
        self._kinds: frozenset[tuple[str, str]] | None = None
        self._subjects: frozenset[str] | None = None
        self._written: dict[str, bool] = {}

    def __contains__(self, pair: object) -> bool:
        if self._kinds is None:
            self._kinds = collection_kinds(self._question, self._texts())
        return pair in self._kinds

    def writes(self, phrase: str) -> bool:
        """Does some chunk of the collection write `phrase` (normalized)? Cached per phrase."""
        if phrase not in self._written:
            self._written[phrase] = any(phrase in normalize(t) for t in self._texts())
        return self._written[phrase]

    @property
    def section_subjects(self) -> frozenset[str]:
        if self._subjects is None:
            self._subjects = section_subjects(self._texts())
        return self._subjects


# --- Japanese documents laid out in one section per entity ---------------------------------------------------

_SECTION_MARK_JA = re.compile(r"^\s*(?:#{1,6}\s*|[■◆]\s*|[0-9０-９]{1,2}[.．](?![0-9０-９])\s*|"
                              r"第[0-9０-９一二三四五六七八九十]+[章節]\s*)+")
_TRAILING_NOTE = re.compile(r"\s*[（(][^）)]*[）)]\s*$")


def heading_subject(line: str) -> str:
    """The subject a Japanese section title names, without its number or mark and a trailing note in brackets:
    "1. フェリーひのき（船舶コードHK-01）" → "フェリーひのき"."""
    return _TRAILING_NOTE.sub("", _SECTION_MARK_JA.sub("", normalize(line).strip())).strip()


def section_subjects(texts: Iterable[str]) -> frozenset[str]:
    """The entities a collection gives a section of their own: the subject of a Japanese section title (2-20
    characters, heading_subject) that the section's text then takes as its topic or subject (the subject followed
    by は or が: 「フェリーひのきは、平成21年4月に就航した」). A section about a topic (「2. 船舶に共通する安全設備」) is
    not one: its text never says 「船舶に共通する安全設備は」."""
    out: set[str] = set()
    for text in texts:
        if not has_cjk(text):
            continue
        lines = text.split("\n")
        for i, ln in enumerate(lines):
            if not is_heading(ln) or not _SECTION_MARK_JA.match(ln):
                continue
            subject = heading_subject(ln)
            if not 2 <= len(subject) <= 20 or not has_cjk(subject):
                continue
            body = normalize("\n".join(lines[i + 1:i + 8]))
            if re.search(re.escape(subject) + r"(?:は|が)", body):
                out.add(subject)
    return frozenset(out)


_KANJI_RUN = re.compile(r"[\u4e00-\u9fff々]{3,}")


def other_kind_ja(question: str, text: str, context: str, writes: Callable[[str], bool]) -> str | None:
    """Japanese: the question asks for a kind of a thing written as one kanji compound, modifier + head of two or
    more characters each (最高速力, 小児運賃, 目標復旧時間), and the sentence writes another modifier on the same head
    (航海速力, 大人運賃, 所要時間) but neither the sentence nor its local `context` writes the question's compound, which
    the collection does write elsewhere (`writes`: it tells the two kinds apart). The Japanese counterpart of
    other_kind, read off kanji compounds instead of words. Returns the sentence's compound, or None."""
    local = normalize(text + "\n" + context)
    said = _KANJI_RUN.findall(normalize(text))
    for q in dict.fromkeys(_KANJI_RUN.findall(normalize(question))):
        if q in local:
            continue
        for run in dict.fromkeys(said):
            n = 0
            while n < min(len(q), len(run)) and q[-1 - n] == run[-1 - n]:
                n += 1
            mod, other = q[:len(q) - n], run[:len(run) - n]
            if n >= 2 and len(mod) >= 2 and len(other) >= 2 and other not in q and mod not in run and writes(q):
                return run
    return None


def section_sibling_ja(question: str, text: str, context: str, subjects: Container[str] | Iterable[str]) -> str | None:
    """Japanese: the sentence sits in the section of another entity than the one the question names. The question
    names an entity that has a section of its own (`subjects`, section_subjects), the sentence's section title
    (in its local `context`) names another such entity, and neither the sentence nor its context names the
    question's: 「推進装置は…最高速力は32ノットである。」 under 「4. 高速艇あおば」 does not answer
    「フェリーひのきの最高速力は」;
    or the sentence itself names another such entity and not the question's. Returns the other entity, or None."""
    q = normalize(question)
    named = [s for s in subjects if s in q] if isinstance(subjects, Iterable) else []
    if not named:
        return None
    local = normalize(text + "\n" + context)
    if any(s in local for s in named):
        return None
    for ln in context.split("\n"):
        if not is_heading(ln) or not _SECTION_MARK_JA.match(ln):
            continue
        other = heading_subject(ln)
        if other in subjects and not any(other in s or s in other for s in named):
            return other
    # the sentence itself names another of them (「フェリーひのきの定期検査を…実施する」 for フェリーしらさぎ)
    said = normalize(text)
    for other in sorted(subjects, key=len, reverse=True) if isinstance(subjects, Iterable) else []:
        if other in said and not any(other in s or s in other for s in named):
            return other
    return None


def other_kind(question: str, text: str, context: str = "", kinds: Container[tuple[str, str]] = frozenset(),
               absent: set[str] | frozenset = frozenset()) -> str | None:
    """The other kind the sentence `text` speaks of ("loaded draught" for "the air draught"), as written, or None.
    The question's modifier must be missing from the sentence and its local `context`, the sentence must put
    another lower-case content word right before the question's head, and the question's pair must be in `kinds`
    (the collection writes it elsewhere) or its modifier in `absent` (no chunk has it); see the module docstring."""
    if has_cjk(question):
        return None
    pairs = modifier_pairs(question)
    if not pairs:
        return None
    local = set(tokenize(text + "\n" + context))
    qtoks = set(tokenize(question))
    words = _WORD.findall(normalize(text))
    stems = [tokenize(w) for w in words]
    for m, h in pairs:
        if m in local:
            continue
        at = [j for j in range(len(words)) if stems[j] == [h]]
        # every mention of the head carries another modifier that starts its noun phrase ("her loaded draught", "A
        # primary carer"); a bare mention ("your last 8 passwords") may be the question's kind
        others = [f"{words[j - 1]} {words[j]}" for j in at if j >= 1 and _other_modifier(words, stems, j - 1, qtoks)]
        # the collection tells the kinds apart (read last: `kinds` may scan every chunk, see CollectionKinds)
        if at and len(others) == len(at) and (m in absent or (m, h) in kinds):
            return others[0]
    return None


def _other_modifier(words: list[str], stems: list[list[str]], k: int, qtoks: set[str]) -> bool:
    """Is words[k] a modifier the question does not use, at the start of its noun phrase (after an article,
    possessive or preposition, or opening the sentence)?"""
    w = words[k]
    if not (_np_word(w.lower()) and (w[:1].islower() or k == 0)) or stems[k][0] in qtoks:
        return False
    return k == 0 or words[k - 1].lower() in _NP_START


def off_scope(question: str, text: str, context: str = "", kinds: Container[tuple[str, str]] = frozenset(),
              absent: set[str] | frozenset = frozenset(), chunk: str = "") -> str | None:
    """Why the sentence is about something other than what the question names: "sibling: MV Kestrel Point" or
    "other kind: loaded draught"; None when it is about the question's own thing as far as these checks see.
    `chunk`: the sentence's chunk text (sibling_section)."""
    sib = sibling_name(question, text, context, chunk)
    if sib:
        return "sibling: " + sib
    if has_cjk(question):
        section = section_sibling_ja(question, text, context, getattr(kinds, "section_subjects", frozenset()))
        if section:
            return "sibling section: " + section
        writes = getattr(kinds, "writes", None)
        compound = other_kind_ja(question, text, context, writes) if writes is not None else None
        if compound:
            return "other kind: " + compound
    kind = other_kind(question, text, context, kinds, absent)
    return "other kind: " + kind if kind else None


# --- another name in the question's slot (moved from answer_shape.py) -------------------------------------------

_CAPITALISED = re.compile(r"(?<![\w-])[A-Z][\w-]*")
_SLOT_STOP = frozenset("the a an of in on at for to from by with and or is are was were did does do".split())
SLOT_WORDS = 3  # "the Antwerp sales and service office": the other name heads the noun phrase of "service"


def names_another(question: str, text: str, sup, context: str = "") -> bool:
    """Is the sentence about another named thing in the place of the question's? When a name the question gives
    (an entity) is missing from the sentence and its local context (support credit below 1), and the sentence
    puts another capitalised name where the question has it — before the question's next word or after its
    previous one, within SLOT_WORDS lower-case words of one noun phrase ("the Porto service centre", "the Osaka
    sales and service office" for "When did the Leeds service centre open?") — it speaks of that other thing."""
    if not sup.n_entities or sup.entity_min >= 1.0:
        return False
    local = set(tokenize(text + "\n" + context))
    qwords = re.findall(r"[\w-]+", normalize(question))
    sent = re.findall(r"[\w-]+", " ".join(text.split()))
    stems = [tokenize(w) for w in sent]
    for k, w in enumerate(qwords):
        toks = tokenize(w)
        if k == 0 or not w[:1].isupper() or not toks or all(t in local for t in toks):
            continue
        nxt = next((tokenize(x) for x in qwords[k + 1:k + 2] if x.lower() not in _SLOT_STOP), [])
        prev = next((tokenize(x) for x in qwords[k - 1:k] if x.lower() not in _SLOT_STOP), [])
        for j, x in enumerate(sent):
            if not _CAPITALISED.fullmatch(x) or j == 0 or set(tokenize(x)) & set(toks):
                continue
            if (nxt and _in_phrase(sent, stems, range(j + 1, min(j + 1 + SLOT_WORDS, len(sent))), nxt)) or \
                    (prev and _in_phrase(sent, stems, range(j - 1, max(j - 1 - SLOT_WORDS, -1), -1), prev)):
                return True
    return False


def _in_phrase(words: list[str], stems: list[list[str]], positions: range, wanted: list[str]) -> bool:
    """Is `wanted` (a word's stems) at one of `positions` of the sentence, with only lower-case words between it
    and where the walk started (one noun phrase: "Antwerp sales and service", not "Antwerp. The service")?"""
    for p in positions:
        if stems[p] == wanted:
            return True
        if not words[p][:1].islower():
            return False
    return False
