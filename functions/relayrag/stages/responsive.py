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
- A who-question about a named person ("Who will replace Catriona Vell?", 「田中さんの後任は誰ですか」) is not
  answered by a sentence whose only person is that one, named again, referred to (she, they) or given her own title
  ("Catriona Vell (Managing Director) informed …"): `restates_person`.
- Band rows answer questions whose number falls in the band, not its years (`band_row_label`, `band_numbers`).
"""

from __future__ import annotations

import re

from relayrag.retrieval.tokenize import tokenize
from relayrag.stages.date_bounds import western_dates
from relayrag.stages.answer_shape import _ROLE_EN, _ROLE_JA, band, band_holds, quantities
from relayrag.text import LATIN_LETTER, has_cjk, normalize


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
    if any(normalize(v).strip("+-°").replace(",", "") in said for v in values):
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
    asked = question_years(western_dates(question))  # 令和7年 is 2025
    if not asked:
        return []
    said = set(_YEAR4.findall(western_dates(text + "\n" + context)))
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
    "replac replace replaces replaced replacing replacement succeed succeeds succeeded succeeding successor succession",
]
_OFFICE_WORDS = {w: frozenset(g.split()) for g in _OFFICE_ACTS for w in g.split()}
_WORD = re.compile(rf"[{LATIN_LETTER}][{LATIN_LETTER}'-]*")  # accented names (Dolní, Zátiší) are one word
_MORE_ROLES = frozenset("treasurer trustee trustees governor mayor founder partner principal registrar steward warden "
                        "captain members member directors".split())
_NOT_A_NAME = frozenset("the a an this that these those it its our their his her we they all each every in on at of for "
                        "to by and or from with".split())


_SUCCESSION_Q = re.compile(r"^\s*(?:who|whom)\b.*\b(?:successor|replacement|tak(?:e|es|ing) over)\b", re.I)
_WHICH_PERSON_ACT = re.compile(r"^\s*(?:which|what)\s+[a-z-]+\b", re.I)
_CALENDAR = frozenset("january february march april may june july august september october november december monday "
                      "tuesday wednesday thursday friday saturday sunday".split())
OFFICE_ACT_WINDOW = 6  # words between the act and the person or role who did it ("was approved by the club treasurer")


def office_act(question: str) -> frozenset[str] | None:
    """The act of office a "who" question asks about, as the words that say it ("Who chairs the Technical
    Committee?" → chair, chaired, chairs …; "Who approved the plan?", "Which board member signed the plan?" →
    approve, signed …), or None when the question's verb is no act of office ("Who can answer my questions?")."""
    q = normalize(question)
    if _SUCCESSION_Q.search(q):  # "Who is Dana's successor?", "Who will take over from Dana?"
        return _OFFICE_WORDS["succeed"] | {"take", "takes", "took", "taking"}
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
    if passive_of_another(question, normalize(text), act):
        return True  # "Overtime must be approved … by the shift supervisor." for "Who approved the handbook?"
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


_PASSIVE_BE = frozenset("be is are was were been being".split())
_BEFORE_PASSIVE = frozenset("must shall should will would can may might need needs has have had to first always also "
                            "only normally usually not".split())
# a passive subject that is the document itself, or a pronoun for it, names no other thing
_ITSELF = frozenset("it this these that those they document documents version edition revision text".split())


def passive_of_another(question: str, text: str, act: frozenset[str]) -> bool:
    """Does the sentence say the act in the passive of another thing than the question's? "Overtime must be approved
    in advance by the shift supervisor." names who approves overtime, not who approved the handbook; "Expense
    claims are signed by the line manager." is not who signed the travel policy. The passive's subject (up to four
    words of its clause before "must be / is / was …" and the act) names none of the question's words and is not the
    document itself (this, it, the document): then the person beside the act did it to that other thing."""
    for m in _WORD.finditer(text):
        if m.group(0).lower() not in act:
            continue
        clause = re.split(r"[.;:|\n(]", text[:m.start()])[-1]
        words = _WORD.findall(clause)
        k = len(words)
        passive = False
        while k > 0 and (words[k - 1].lower() in _PASSIVE_BE or words[k - 1].lower() in _BEFORE_PASSIVE):
            passive |= words[k - 1].lower() in _PASSIVE_BE
            k -= 1
        subject = [w for w in words[max(0, k - 4):k] if w.lower() not in _NOT_A_NAME]
        if not passive or not subject or any(w.lower() in _ITSELF for w in words[max(0, k - 4):k]):
            return False
        return not set(tokenize(" ".join(subject))) & set(tokenize(question))
    return False


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


# --- yes/no questions: the answer carries the question's verb (issue 31, measure round) ---------------------
# "Can members transfer their share to a relative?" is not answered by "Members may sell their share to another
# member." (same nouns, another act) nor by a rule about transferring something else: the answering sentence says
# the question's predicate (its main verb, or an adjective / noun after "is / are": open, free, required) in some
# form (transfer, transferred, transferable) or a word of its group (transfer / assign), and the thing it acts on.

_YES_NO_EN = re.compile(r"^\s*(can|could|may|might|must|should|shall|will|would|do|does|did|is|are|was|were|has|have|"
                        r"had|need)\b\s+(.*)$", re.I)
_REQUEST_EN = re.compile(r"^\s*(?:can|could|would|will)\s+you\s+(?:please\s+|kindly\s+)?(?:tell|give|show|explain|list|"
                         r"describe|provide|send|share|find|let|remind|help|point|summari[sz]e|confirm|check)\b"
                         r"|^\s*(?:do|does)\s+(?:you|anyone|anybody)\s+know\b", re.I)
_SUBJECT_PRONOUN = frozenset("i we you they he she it one someone anyone everyone somebody anybody everybody "
                             "there this that these those".split())
_DETERMINER = frozenset("a an the my our your their his her its this that these those any some each every all no "
                        "both either another other".split())
_LINK = frozenset("of from in on at with for within".split())  # "a member of staff", "employees in Germany"
_MODIFIER_END = re.compile(r"(?:-\w+|al|ary|ive|ful|ous|ic|less|able|ible|ed|ing|ese|ish|ian)$", re.I)
_MODIFIERS = frozenset("new full part senior junior temporary permanent former current existing young old other "
                       "same main first second non".split())
_ADVERB = frozenset("also still ever already now legally really just even actually then still always usually "
                    "normally".split())
_VERB_IN_S = frozenset("is was has does focus discuss access process pass dismiss address express".split())
_AUX_VERB = frozenset("be been being get got have has had do".split())
_MODAL_ADJECTIVE = frozenset("allowed permitted able entitled required supposed obliged expected eligible need needed "
                             "have has".split())
_NOT_A_PREDICATE = _DETERMINER | _LINK | _SUBJECT_PRONOUN | frozenset("to and or me us them him if when".split())
# Verbs a rule may write in other words (stems, as tokenize gives them): "may sell" is no "can transfer"
_YES_NO_GROUPS = [
    "transfer assign hand pass convey", "allow permit authoris entitl may can", "requir need must mandatori oblig",
    "bring take carri", "use util", "receiv get obtain award grant", "work", "pay reimburs refund compens",
    "cancel termin withdraw", "extend prolong renew", "join becom admit enrol regist", "apply request submit claim",
    "open", "free charg", "cover insur includ",
    "譲渡 譲り 移転 移す", "許可 認め 可能 でき", "必要 要す 要る 必須 義務 なければ", "持ち込 持込 持参",
    "利用 使用 使え 使う", "支給 支払 受け 受給", "申請 申し込 申込 届出 届け",
]
_YES_NO_SYNONYMS: dict[str, frozenset[str]] = {}
for _g in _YES_NO_GROUPS:
    for _t in _g.split():
        _YES_NO_SYNONYMS[_t] = _YES_NO_SYNONYMS.get(_t, frozenset()) | frozenset(_g.split())


def _words(text: str) -> list[str]:
    return [w.strip(".'’,;:!?") for w in re.findall(rf"[{LATIN_LETTER}][\w'’-]*", text)]


def yes_no_predicate(question: str) -> tuple[str, list[str]] | None:
    """The predicate of a yes/no question, as (verb, [the thing it acts on]): "Can members transfer their share to
    a relative?" → ("transfer", ["share"]); "Do part-time employees get paid holidays?" → ("get", ["paid",
    "holidays"]); "Is the office open on Saturdays?" → ("open", []); the object is up to three words, of which
    the answer names one; 「会員は持分を親族に譲渡できますか」 → ("譲渡",
    ["持分"]); 「事前申請は必要ですか」 → ("必要", ["申請"]). None for other questions, or when no verb stands after the
    subject. English: the auxiliary (can, may, must, do, is …), its subject (a pronoun, or a noun phrase: its
    determiners, modifiers and "of …" complements), then the predicate word."""
    from relayrag.stages.answerability import asking_clause
    q = asking_clause(question)
    if has_cjk(q):
        return _yes_no_predicate_ja(q)
    m = _YES_NO_EN.match(q)
    if not m or _REQUEST_EN.match(q):
        return None  # "Can you tell me the serial number of …?" asks for the number, not whether
    words = [w for w in _words(m.group(2)) if w]
    low = [w.lower() for w in words]
    k = 0
    if k < len(low) and low[k] in _SUBJECT_PRONOUN:
        k += 1
    else:
        while k < len(low) and low[k] in _DETERMINER:
            k += 1
        if k >= len(low):
            return None
        k += 1  # the subject's first word
        linked = False
        while k < len(low):
            prev = low[k - 1]
            if low[k] in _LINK and k + 1 < len(low):  # "a member of (the) staff"
                k += 1
                while k < len(low) and low[k] in _DETERMINER:
                    k += 1
                k += 1
                linked = True
                continue
            if not linked and (prev in _MODIFIERS or _MODIFIER_END.search(prev) or words[k - 1][:1].isupper() and
                    words[k][:1].isupper()) and low[k] not in _NOT_A_PREDICATE and low[k] not in _ADVERB:
                k += 1  # "part-time employees", "new starters", "Harbour Board members"
                continue
            break
    while k + 1 < len(low) and re.search(r"[^s]s$", low[k]) and low[k] not in _VERB_IN_S and \
            low[k + 1] not in _NOT_A_PREDICATE and low[k + 1] not in _ADVERB:
        k += 1  # after "can" / "do" a verb has no -s: "my Czech colleagues work", "fixed-term contracts end"
    if k + 1 < len(low) and low[k] not in _AUX_VERB and low[k + 1] in ("be", "been", "get"):
        k += 1  # "the company car be used": a compound subject, then a passive
    while k < len(low) and (low[k] in _ADVERB or low[k] in _AUX_VERB or low[k] == "not"):
        k += 1
    if k + 2 < len(low) and low[k] in _MODAL_ADJECTIVE and low[k + 1] == "to":
        k += 2  # "allowed to park", "required to wear": the act is the verb after "to"
    if k >= len(low) or low[k] in _NOT_A_PREDICATE:
        return None
    verb = low[k]
    j = k + 1
    while j < len(low) and (low[j] in _DETERMINER or low[j] in _ADVERB):
        j += 1
    obj: list[str] = []  # the noun phrase it acts on, up to a preposition: "a large water bill" → [large, water, bill]
    while j < len(low) and len(obj) < 3 and low[j] not in _NOT_A_PREDICATE and low[j] not in _ADVERB:
        obj.append(low[j])
        j += 1
    return verb, obj


_JA_YES_NO = re.compile(r"(?:することは|することが|することも|しても)?"
                        r"(?:でき(?:ます|る)(?:か|でしょうか)|(?:られ|れ|せ|け|め|え)ますか|"
                        r"ますか|必要(?:です|でしょう)か|(?:です|でしょう)か|(?:よい|いい)(?:です|でしょう)か)[。？?]*\s*$")
_JA_RUN = re.compile(r"((?:[\u4e00-\u9fff\u30a0-\u30ffー]+(?![はをにでがのとへもや])[\u3040-\u309f]?)*"
                     r"[\u4e00-\u9fff\u30a0-\u30ffー]+)"
                     r"([\u3040-\u309f]{0,3})$")


def _yes_no_predicate_ja(q: str) -> tuple[str, list[str]] | None:
    q = q.strip()
    m = _JA_YES_NO.search(q)
    if not m or re.search(r"何|誰|どこ|いつ|どの|どう|いくら|いくつ|どれ|なぜ|どんな|教え|知らせ|示し|説明", q):
        return None  # a wh question ("いつ申請できますか") or a request (教えてもらえますか) is not yes/no
    head = q[:m.start()]
    if "必要" in m.group(0):  # 「事前申請は必要ですか」: the predicate is 必要, of the thing before は / が
        run = re.search(r"([\u4e00-\u9fff\u30a0-\u30ffー]+)[はがも]?$", head)
        return "必要", [run.group(1)] if run else []
    head = re.sub(r"(?:こと)?(?:を|に|へ|で|と|は|が|も)?$", "", head)
    run = _JA_RUN.search(head)
    if not run:
        return None
    verb = run.group(1)
    before = head[:run.start()]
    obj = re.search(r"([\u4e00-\u9fff\u30a0-\u30ffー]{2,})を[^を]*$", before)
    return verb, [obj.group(1)] if obj else []


def _says(term: str, text: str, toks: set[str], cjk: bool) -> bool:
    """Does `text` say `term` (a word of the question) in some form, or a word of its group?"""
    if cjk:
        bare = re.sub(r"[\u3040-\u309f]", "", term)  # 繰り越 → 繰越
        forms = {term, bare} | set(_YES_NO_SYNONYMS.get(term, frozenset())) | set(_YES_NO_SYNONYMS.get(bare, frozenset()))
        if len(bare) > 2 and bare == term:  # a long kanji run: its two leading characters (事前申請 → 事前)
            forms.add(term[-2:])  # … and its head (事前申請 → 申請)
        return any(f and f in text for f in forms)
    stems = tokenize(term)
    if not stems:
        return True
    group = set(stems)
    for t in stems:
        group |= _YES_NO_SYNONYMS.get(t, frozenset())
    return bool(group & toks)


_PRONOUN_OBJECT = re.compile(r"\b(?:it|them|this|these|such)\b", re.I)


def _names_more(question: str, text: str, context: str) -> bool:
    """Does `text` say a content term of the question (not a kana-only bigram) that `context` does not say?"""
    from relayrag.stages.answerability import content_weights, is_function_bigram
    around, own = set(tokenize(context)), set(tokenize(text))
    return any(t in own and t not in around for t in content_weights(question) if not is_function_bigram(t))


def unanswered_yes_no(question: str, text: str, context: str = "") -> bool:
    """Does the sentence `text` leave a yes/no question's predicate (yes_no_predicate) unsaid: it does not say the
    verb in any form or a word of its group ("Members may sell their share" for "Can members transfer their
    share?"), or says the verb of another thing (the object the question names is not in the sentence, which
    does not refer to it as "it" / "them" either; in Japanese, nor in its local `context`: "Members can transfer
    their voting rights to a proxy" for "… transfer their share …")?
    False for other questions, and under a heading or FAQ question line that says every content term of the question
    (the paragraph under it answers it). Otherwise the verb must be in the sentence itself: a heading above it names
    a topic, the sentence under it may say another act."""
    pred = yes_no_predicate(question)
    if pred is None:
        return False
    verb, obj = pred
    cjk = has_cjk(question)
    if context and not unsaid_by_row(question, "", context):
        return False  # under a heading or FAQ line that restates the question, the sentence answers it
    t = normalize(text)
    toks = set(tokenize(t))
    if not _says(verb, t, toks, cjk):
        # Japanese leaves the verb to the section's heading or question line (Q. 水道料金の支払方法は？ A. …クレジット
        # カードはご利用いただけません。): there the context may say it, when the sentence names a thing the question
        # does that the context does not
        if not (cjk and context and _says(verb, normalize(context), set(), cjk) and _names_more(question, t, context)):
            return True
    if not obj:
        return False
    if cjk:  # a Japanese rule often leaves its object to the article's heading (第5条（持分の譲渡）…譲渡することができる)
        around = t + "\n" + normalize(context)
        return not any(_says(o, around, set(tokenize(around)), cjk) for o in obj)
    # in English the sentence names what it acts on, or refers to it ("may transfer it to a spouse")
    return not (any(_says(o, t, toks, cjk) for o in obj) or _PRONOUN_OBJECT.search(t))


# --- a who-question's answer names someone else (issue 31) --------------------------------------------------
# "Who will replace Catriona Vell as Managing Director?" is not answered by "Catriona Vell informed the Board that she
# intends to retire": a sentence whose only person is the one the question names restates its subject. Her pronouns
# and her own title (in apposition, "as Managing Director") are hers, not another person's.

_CAP_RUN = re.compile(r"(?<![\w-])(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?"
                      r"(?:\s+(?:[A-Z]\.\s*)?[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?)+")
_NOT_PERSON_WORD = frozenset("board committee company council ltd limited plc inc group department office team ministry "
                             "authority agency university school street road house hall policy procedure report plan "
                             "act directive regulation january february march april may june july august september october "
                             "november december monday tuesday wednesday thursday friday saturday sunday".split())
_HONORIFIC_JA = re.compile(r"([\u4e00-\u9fff\u30a0-\u30ff・ー]{1,12})(?:さん|氏|様|先生|君|くん)")
_FOREIGN_NAME_JA = re.compile(r"[\u30a0-\u30ff]{2,}(?:・[\u30a0-\u30ff]{2,})+")
_PRONOUNS = frozenset("he she they".split())
_AUDIENCE = re.compile(r"\b(told|tells|informed|informs|notified|notifies|advised|advises|briefed|briefs|updated|"
                       r"addressed|thanked|thanks|reminded|reminds|wrote to|writes to|emailed|asked|asks|"
                       r"announced to|explained to|said to)\s+(?:the\s+|our\s+|its\s+|all\s+)?(?:[\w-]+\s+){0,2}$", re.I)
_OWN_TITLE_AFTER = re.compile(r"^\s*(?:['’]s\s+)?(?:\(|,|–|-)\s*(?:the\s+|our\s+|its\s+)?(?:[\w-]+\s+){0,2}$")
_OWN_TITLE_AS = re.compile(r"(?:\bas|(?:\u0000|\b(?:she|he|they))\s+(?:is|was|remains|became|has been|will remain))\s+"
                           r"(?:the\s+|our\s+|its\s+|a\s+|an\s+)?(?:[\w-]+\s+){0,2}$", re.I)


def question_persons(question: str) -> list[str]:
    """The persons a question names by name: English runs of two or more capitalised words after its first word
    that are no role, body or date ("Catriona Vell", "Dr Samuel Achterberg"; not "Managing Director", "Harbour
    Board"); Japanese names with an honorific (田中さん, 鈴木氏) or katakana names with a middle dot (カトリオナ・ヴェル)."""
    q = normalize(question)
    if has_cjk(q):
        return [m.group(0) for m in _HONORIFIC_JA.finditer(q)] + _FOREIGN_NAME_JA.findall(q)
    out = []
    for m in _CAP_RUN.finditer(q):
        if m.start() == len(q) - len(q.lstrip()):
            continue  # the question's first word is capitalised anyway
        words = [w.lower().strip(".'’") for w in m.group(0).split()]
        if any(w in _NOT_PERSON_WORD or _ROLE_EN.fullmatch(w) or w in _MORE_ROLES for w in words):
            continue
        out.append(re.sub(r"['’]s$", "", m.group(0)))
    return out


def restates_person(question: str, text: str) -> bool:
    """Does the sentence `text` name no person other than those a who-question names (question_persons)? Another
    personal name, or a role or body that is not the question's own and not the person's title ("Catriona Vell,
    Managing Director", "Managing Director Catriona Vell", "as Managing Director"), answers; the person's pronouns
    do not. For "Who will replace Catriona Vell?" True of "Catriona Vell (Managing Director) announced that she will
    retire." and of 「田中さんは来年3月に退職する。」 for 「田中さんの後任は誰ですか」; False of "The Board appointed
    Jo Hale to succeed Catriona Vell.". False when the question names nobody or asks no "who"."""
    from relayrag.stages.answer_shape import names_person_ja, wh_answer_type
    persons = question_persons(question)
    if not persons or wh_answer_type(question) != "person":
        return False
    t = normalize(text)
    if has_cjk(question):
        for p in persons:
            t = t.replace(p, " ")
        t = re.sub(r"担当(?=し|す|さ)", " ", t)  # 担当してきた: a verb, not a role
        q_roles = {m.group(0) for m in _ROLE_JA.finditer(normalize(question))}
        # another person's name in katakana or Latin letters answers too (「ヨハン・フストとペーター・シェッファーが」 for
        # 「誰とペーター・シェッファーが…」), not only a role (issue 31)
        return not (any(m.group(0) not in q_roles for m in _ROLE_JA.finditer(t)) or names_person_ja(t, question))
    for p in persons:
        t = re.sub(rf"\b{re.escape(p)}\b|\b{re.escape(p.split()[-1])}\b", " \u0000 ", t)
    q_words = {w.lower() for w in _WORD.findall(normalize(question))}
    q_stems = set(tokenize(question))
    for m in _CAP_RUN.finditer(t):  # another person's name (two capitalised words, not a role's or a date's)
        words = [w.lower().strip(".'’") for w in m.group(0).split()]
        if not any(w in q_words or w in _NOT_PERSON_WORD or _ROLE_EN.fullmatch(w) or w in _MORE_ROLES for w in words):
            return False
    for m in _ROLE_EN.finditer(t):
        w = m.group(0).lower()
        if w in _PRONOUNS or w in q_words or (w == "it" and m.group(0) != "IT"):
            continue
        before, after = t[:m.start()], t[m.end():]
        if "\u0000" in before and _OWN_TITLE_AFTER.match(before[before.rindex("\u0000") + 1:]):
            continue  # "Catriona Vell (Managing Director)", "Catriona Vell, our Finance Director"
        if re.match(r"^(?:\s+(?:of|for|and|[A-Z][a-z]+)){0,3}\s*\u0000", after):
            continue  # "Managing Director Catriona Vell"
        if _OWN_TITLE_AS.search(before):
            continue  # "… retire as Managing Director"
        said = _AUDIENCE.search(before)
        if said and not set(tokenize(said.group(1))) & q_stems:
            continue  # "Catriona Vell informed the Board that …": whom she told, unless the question asks that
        return False
    return True
