"""Whether an answer sentence responds to the question beyond sharing its words, checked without an LLM (issue 31:
`grounded` means supported and responsive). Split from relayrag.stages.answer_shape, whose answer types and
identifiers these build on.

- The question's predicate: for who / where / when / which-thing / identifier questions, the sentence says a term of
  the question that its headings and previous sentence do not already say (`unanswered_predicate`; a role for
  another act of the same procedure does not say who answers questions); a row says the terms its date answers
  (`unsaid_by_row`); a "which …" question that names its answer by a value needs that value (`misses_the_value`).
- Qualifiers (overseas / domestic / weekend / part-time, 海外 / 国内 / 休日 …) and years the question names must be
  said by the sentence or its section when the documents say them (`missing_qualifiers`, `missing_period`).
- Acts of office ("Who chairs / approved / signed …?"): the sentence carries the act and a person or role near it
  other than the question's own subject (`office_act`, `unanswered_office_act`).
- Band rows answer questions whose number falls in the band, not its years (`band_row_label`, `band_numbers`).
"""

from __future__ import annotations

import re

from relayrag.retrieval.tokenize import tokenize
from relayrag.stages.answer_shape import _ROLE_EN, band, band_holds, quantities
from relayrag.text import has_cjk, normalize


# --- the question's predicate and qualifiers ----------------------------------------------------------------

def unanswered_predicate(question: str, text: str, context: str = "") -> bool:
    """Does the sentence `text` leave what the question asks unsaid? The question's content terms that its local
    `context` (title, headings, column names, the sentence before) does not say are what it asks beyond its
    topic — "answer", "question" in "Who can answer my questions about the locker procedure?" under the title
    "Locker Procedure"; 改定 in 「規程を改定するときは誰が承認しますか」 under 第3条（受講の承認）. True when there
    are such terms and the sentence says none of them: "Lost keys must be reported to the Site Security
    Coordinator." names a role, for another act. A term no document uses counts too: an act the collection never
    names (改定 where the rules only say 改廃) is not answered by a rule about another act. CJK bigrams of kana
    only (particles, endings) and bare numbers do not count. False when the context says every term (a heading
    that restates the question: the paragraph under it answers)."""
    from relayrag.stages.answerability import content_weights, is_function_bigram
    said_around = set(tokenize(context))
    asked = [t for t in content_weights(question) if t not in said_around and not is_function_bigram(t)
             and not t.isdigit()]
    if not asked:
        return False
    own = set(tokenize(text))
    return not any(t in own or own & _PREDICATE_SYNONYMS.get(t, frozenset()) for t in asked)


def unsaid_by_row(question: str, row: str, context: str) -> list[str]:
    """The question's content terms that neither the table row `row` ("Vrchy | PS-05 | … | August 2025") nor its
    `context` (title, column names) says: for "When was the Vrchy station built?" the row's date is another
    event's ("Last overhaul") when nothing says "built". Bare numbers and CJK kana bigrams do not count."""
    from relayrag.stages.answerability import content_weights, is_function_bigram
    said = set(tokenize(row + "\n" + context))
    return [t for t in content_weights(question) if t not in said and not t.isdigit() and not is_function_bigram(t)]


_WHICH_Q = re.compile(r"^\s*(?:(?:in|at|on|from|for|of)\s+)?which\s+[a-z]", re.I)


def misses_the_value(question: str, text: str) -> bool:
    """Does the sentence `text` leave out the value by which a "which …" question names its answer: "Which pumping
    station has a capacity of 880 m³/h?" is answered by the row or sentence that says 880 (or a band holding it),
    not by the sentence that defines capacity. Only "which" questions with numbers that are not years; False for
    others."""
    if not _WHICH_Q.search(normalize(question)):
        return False
    values = band_numbers(question)
    if not values:
        return False
    said = {n.replace(",", "") for n in re.findall(r"\d+(?:[.,]\d+)*", normalize(text))}
    if any(normalize(v).replace(",", "") in said for v in values):
        return False
    cells = text.split(" | ") if " | " in text else [text]
    return not any(band_holds(c, values) for c in cells)


# The answer types whose value a procedure states everywhere (a role, a place, a date, a name, a code): a sentence
# of the right document holding one answers only when it also says the question's predicate (unanswered_predicate).
PREDICATE_KINDS = frozenset({"person", "place", "when", "named", "identifier"})
# Verbs of the "who" questions a policy answers, written in other words by the document (stems; 承認/決裁 …):
# "Who is responsible for …" / "The People Director owns this policy."
_PREDICATE_GROUPS = [
    "respons own owner maintain", "approv sign authoris sanction", "answer question queri enquiri contact ask help",
    "承認 決裁 許可", "担当 所管 責任", "問い 問合 連絡 質問 相談",
]
_PREDICATE_SYNONYMS = {t: frozenset(g.split()) for g in _PREDICATE_GROUPS for t in g.split()}


# Qualifiers that split one rule into variants: the answer for the qualified variant says the qualifier (or a
# word of its group) in its sentence or local context. Groups of synonyms, each as written in the question.
_QUALIFIERS_EN = [
    ("overseas", r"overseas|international|abroad|foreign|another country|other countries"),
    ("domestic", r"domestic|inland|in-country"),
    ("weekend", r"weekends?|saturdays?|sundays?"),
    ("part-time", r"part[- ]time(?:rs?)?"),
    ("full-time", r"full[- ]time(?:rs?)?"),
    ("temporary", r"temporary|fixed[- ]term"),
    ("contractor", r"contractors?"),
    ("intern", r"interns?|internships?|trainees?|apprentices?"),
]
_QUALIFIERS_JA = [
    ("海外", "海外|国外|外国"), ("国内", "国内"), ("休日", "休日|祝日|土日|週末|土曜|日曜"), ("平日", "平日"),
    ("夜間", "夜間|深夜"), ("臨時", "臨時"), ("パート", "パート|アルバイト|短時間"), ("派遣", "派遣"),
    ("契約社員", "契約社員|有期"), ("新入社員", "新入社員|新卒|入社1年目"), ("試用", "試用"),
]


def _qualifier_groups(question: str) -> list[tuple[str, str]]:
    q = normalize(question)
    if has_cjk(q):
        return [(name, rx) for name, rx in _QUALIFIERS_JA if re.search(rx, q)]
    return [(name, rf"\b(?:{rx})\b") for name, rx in _QUALIFIERS_EN if re.search(rf"\b(?:{rx})\b", q, re.I)]


def qualifiers(question: str) -> list[str]:
    """The qualifiers the question states that split a rule into variants (overseas, domestic, weekend,
    part-time, temporary, contractor, intern; 海外, 国内, 休日, 夜間, 臨時, パート, 派遣 …), by group name."""
    return [name for name, _ in _qualifier_groups(question)]


def missing_qualifiers(question: str, text: str, context: str = "", absent: set[str] | frozenset = frozenset()
                       ) -> list[str]:
    """The question's qualifiers (`qualifiers`) that neither the sentence `text` nor its local `context`
    (title, headings, column names) says, by any word of their group, while the documents say them somewhere
    (their tokens are not all in `absent`): 「海外研修の日当」 answered by the article on the 日当 of training at
    home; "the allowance for overseas training" by the allowance paid per training day. An answer for the
    unqualified rule is not the qualified one's when the documents distinguish the two."""
    q = normalize(question)
    said = normalize(text + "\n" + context)
    out = []
    for name, rx in _qualifier_groups(question):
        asked = re.search(rx, q, re.I)
        toks = tokenize(asked.group(0)) if asked else []
        if toks and all(t in absent for t in toks):
            continue
        if not re.search(rx, said, re.I):
            out.append(name)
    return out


# --- the question's period (issue 31, third round) ----------------------------------------------------------

_YEAR4 = re.compile(r"(?<![0-9A-Za-z/.,-])(?:19|20)\d\d(?![0-9])")


def question_years(question: str) -> list[str]:
    """The calendar years (1900–2099, four digits) the question states: "in 2025", 「2025年度の」. Numbers that
    are not years ("CZK 2,500", "1,900 m³", "DN 2000"-like codes) are left out: a year stands alone."""
    return list(dict.fromkeys(_YEAR4.findall(normalize(question))))


def missing_period(question: str, text: str, context: str = "") -> list[str]:
    """The question's years (question_years) that the answer sentence `text` and its local `context` (title,
    headings, column names, the sentence before) do not say, while they say another year: "the price per m³ in
    2025" answered from the "Tariff 2026" table. [] when every asked year is said, or when no other year is
    said (a rule stated without a date may hold in any year)."""
    asked = question_years(question)
    if not asked:
        return []
    said = set(_YEAR4.findall(normalize(text + "\n" + context)))
    if not said or said & set(asked):
        return []
    return asked


# --- who did the act the question names ---------------------------------------------------------------------

_WHO_PREDICATE = re.compile(
    r"^\s*(?:(?:to|by|from|for|with) )?(?:who|whom)\s+(?:(?:is|are|was|were|does|did|do|will|would|can|could|must|"
    r"should|has|have|had|shall)\s+(?:(?:currently|formally|officially|actually|also)\s+)?)?([a-z][a-z-]+)\b", re.I)
# Acts of office a document records with the person or role who did them: the question's verb, when it is one of
# these, must be in the answer sentence itself (or a word of its group), with a person or role beside it
_OFFICE_ACTS = [
    "chair chairs chaired chairing chairman chairwoman chairperson presid presides presided",
    "approv approve approves approved approval sign signs signed signatory authoris authorised authorized sanction",
    "manag manage manages managed manager",
    "appoint appoints appointed",
    "elect elects elected",
    "issu issue issues issued",
    "author authored wrote written",
    "lead leads led",
    "head heads headed",
    "audit audits audited auditor",
    "inspect inspects inspected inspector",
]
_OFFICE_WORDS = {w: frozenset(g.split()) for g in _OFFICE_ACTS for w in g.split()}
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_MORE_ROLES = frozenset("treasurer trustee trustees governor mayor founder partner principal registrar steward warden "
                        "captain members member directors".split())
_NOT_A_NAME = frozenset("the a an this that these those it its our their his her we they all each every in on at of for "
                        "to by and or from with".split())


_WHICH_PERSON_ACT = re.compile(r"^\s*(?:which|what)\s+[a-z-]+\b", re.I)
_CALENDAR = frozenset("january february march april may june july august september october november december monday "
                      "tuesday wednesday thursday friday saturday sunday".split())
OFFICE_ACT_WINDOW = 6  # words between the act and the person or role who did it ("was approved by the club treasurer")


def office_act(question: str) -> frozenset[str] | None:
    """The act of office a "who" question asks about, as the words that say it ("Who chairs the Technical
    Committee?" → chair, chaired, chairs …; "Who approved the plan?", "Which board member signed the plan?" →
    approve, signed …), or None when the question's verb is no act of office ("Who can answer my questions?")."""
    q = normalize(question)
    m = _WHO_PREDICATE.search(q)
    if m:
        return _OFFICE_WORDS.get(m.group(1).lower())
    m = _WHICH_PERSON_ACT.search(q)  # "which <person noun> <act>": the act is a word after one or two nouns
    if not m:
        return None
    for w in q[m.end():].split()[:3]:
        if w.lower() in _OFFICE_WORDS:
            return _OFFICE_WORDS[w.lower()]
    return None


def _own_phrases(words: list[str], q_words: set[str]) -> set[int]:
    """Positions of the words of capitalised phrases ("Board of Directors") one of whose words the question says:
    the question's own subject, however the sentence extends its name."""
    own: set[int] = set()
    k = 0
    while k < len(words):
        if not words[k][0].isupper():
            k += 1
            continue
        j = k + 1
        while j < len(words) and (words[j][0].isupper() or (words[j] in ("of", "and", "for") and j + 1 < len(words)
                                                             and words[j + 1][0].isupper())):
            j += 1
        if any(w.lower() in q_words for w in words[k:j]):
            own.update(range(k, j))
        k = j
    return own


def unanswered_office_act(question: str, text: str) -> bool:
    """Does the sentence `text` fail to say who did the act of office the question asks about (office_act)?
    True when the sentence does not say the act (a word of its group), or names no person or role but the
    question's own within OFFICE_ACT_WINDOW words of it: "The Technical Committee reviews this policy every 2
    years." for "Who chairs the Technical Committee?"; "The cooperative is managed by the General Manager." for
    "Who chaired the Board?"; "Approved by the Board of Directors" for "Which board member signed it?". The
    sentence before (a heading, a restating line) does not count: the answer sentence itself carries the act."""
    act = office_act(question)
    if act is None:
        return False
    words = _WORD.findall(normalize(text))
    at = [k for k, w in enumerate(words) if w.lower() in act]
    if not at:
        return True
    q_words = {w.lower() for w in _WORD.findall(normalize(question))}
    own = _own_phrases(words, q_words)
    for k, w in enumerate(words):
        lw = w.lower()
        if k in own or lw in q_words or lw in act or lw in _NOT_A_NAME or lw in _CALENDAR:
            continue
        if not any(abs(k - a) <= OFFICE_ACT_WINDOW for a in at):
            continue
        if w[0].isupper() or _ROLE_EN.fullmatch(lw) or lw in _MORE_ROLES:
            return False
    return True


# --- band rows and the numbers they hold ------------------------------------------------------------------

def band_row_label(source: str) -> str | None:
    """The first cell of a table row ("4 or more | CZK 2,600") when it states a numeric band (band), else None."""
    if " | " not in source:
        return None
    first = source.split(" | ", 1)[0]
    return first if band(first) is not None else None


def band_numbers(question: str) -> tuple[str, ...]:
    """The question's quantities (quantities) a band row may hold, without its calendar years ("in 2025" names
    a period, not a quantity in a band of call-outs)."""
    years = set(question_years(question))
    return tuple(n for n in quantities(question) if normalize(n).replace(",", "") not in years)
