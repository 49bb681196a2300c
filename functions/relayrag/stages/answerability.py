"""Answerability without an LLM: does this sentence, read in its local context, answer the question?

The no-LLM counterpart of the "sufficient context" autorater (Joren et al., "Sufficient Context: A New
Lens on Retrieval Augmented Generation Systems", ICLR 2025): before an answer is composed, and again when
it is checked, the question's content terms and named entities must be covered by the answering sentence
read with its local context — its document title and page heading, the nearest section heading above it,
the sentence before it (where a term of what is asked counts only half: that sentence may be about another
thing), and for a table row the table's column-name row. A sentence that shares some words
with the question but not what it asks about ("Its maximum flow is 80 L/min." under the heading of another
machine; a row of 2015 figures for a question about 2016) does not answer it.

Signals (all in [0, 1]):
- coverage: IDF-weighted share of the question's content terms present in sentence + local context.
  Content terms are the BM25 tokens minus question words ("what", "how many"); CJK bigrams made only of
  kana, punctuation or question kanji (ます, すか, 何を) weigh FUNCTION_WEIGHT and those joining a content
  character to a kana (a particle boundary: 都は, スの) HALF_WEIGHT — character bigrams of function words
  are frequent, and rare ones would otherwise outweigh content words.
- entity credit per named entity of the question (capitalised words, numbers, codes such as B-200 or
  2016; for CJK questions katakana words, Latin words and numbers): 1 when found in sentence + local
  context, 0.5 when found only in the sentence's chunk or its document's opening chunk (the subject of a
  whole report), else 0. entity_coverage is the mean (it ranks sentences), entity_min the least.
- Question terms that occur in no chunk of the collection weigh ABSENT_BOOST times their idf: a question
  about a thing the collection never mentions ("torque", "Denver") is not answered by the words around it.

Each entity counts as one term in coverage (its tokens share its weight: a katakana name of n characters
is n − 1 bigrams, which would otherwise outweigh what is asked about it); asked_coverage is the coverage of
the non-entity terms alone.

The answer is given only when coverage >= the script's COVERAGE_MIN, asked_coverage >= ASKED_MIN (CJK),
entity_min >= ENTITY_MIN, and the answering sentence states a value of the type the question asks for
(expected_answer_type / states_answer_type: money, a duration, a count, a date or any number);
the thresholds were chosen on the dev sets (benchmarks/golden/examples-pdfs.jsonl and ja-qa
dev with its unanswerable twin, see benchmarks/RESULTS.md) to keep false refusals <= 10 %.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from relayrag.retrieval.tokenize import tokenize
from relayrag.text import column_header, has_cjk, is_header_row, normalize  # noqa: F401 (re-exported)
from relayrag.text import typed_clause
from relayrag.stages.local_context import _TABLE_SEP
from relayrag.stages.measures import (  # noqa: F401 (re-exported)
    _LENGTH_UNIT, _NUMBER_WORD, MEASURE_KINDS, measure_kind, states_measure)
from relayrag.stages.question_clauses import (  # noqa: F401 (re-exported)
    _EN_WORD, LETTERS_Q_JA, asking_clause, bare_word, main_clause)
from relayrag.stages.table_questions import (  # noqa: F401 (re-exported)
    asks_for_total, is_total_label, other_rate, rate_units)

# Thresholds learned on the dev sets (see the module docstring and benchmarks/RESULTS.md).
COVERAGE_MIN = {"en": 0.5, "cjk": 0.4}
ENTITY_MIN = 0.5
FUNCTION_WEIGHT = 0.1
HALF_WEIGHT = 0.5
ABSENT_BOOST = 2.0
ASKED_MIN = {"en": 0.0, "cjk": 0.1}
ENTITY_AS_ONE_TERM = True
NEAR_CREDIT = 0.5  # a term of what is asked found only in the sentence before (see `support`)
ASIDE_WEIGHT = 0.5  # a term only in a question's clauses before the one that asks (its circumstances)

_QUESTION_WORDS = frozenset("""
what which who whom whose when where why how many much does did do doe done is are was were be been being can
could would should will shall may might must have has had the a an of in on for to by with at from and or it its this that
these those i you we they he she his her tell me please give list name describe explain say said show shows
any some about there their than as into per according document documents page number numbers amount value
kind type sort across all each every both
someone somebody anyone anybody everyone everybody get gets getting got need needs needed want wants wanted
am i'm i've i'd i'll me my mine ours us your yours him them here just actually exactly currently still
allowed permitted able supposed entitled entitlement ago""".split())
_HOW_ADJECTIVES = frozenset("""long far old big large often soon tall high heavy wide deep fast late early short small
frequently""".split())
# the noun of "what time / what date / what or which year" names the answer's type (a clock time, a date, a year; each
# checked by expected_answer_type / answer_shape's wh types), as the adjective of "how long" does: the answer states
# 07:30 or 2019, not the word "time" or "year"
_TYPE_NOUNS = frozenset({("what", "time"), ("what", "date"), ("what", "year"), ("which", "year")})
_KANA_OR_PUNCT = re.compile(r"^[\u3040-\u309f\u30fc\u3000-\u303f\uff01-\uff0f\uff1a-\uff20・ー、。「」（）()?？!！]+$")
_QUESTION_KANJI = frozenset("何誰")
_HIRAGANA = re.compile(r"[\u3040-\u309f]")
_KATAKANA_RUN = re.compile(r"[\u30a0-\u30ff\uff66-\uff9f][\u30a0-\u30ff\uff66-\uff9f・ー]+")
_LATIN_OR_NUM = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-/.]*[A-Za-z0-9]|[0-9]")


def cjk_weight(tok: str) -> float:
    """1 for a token of content characters (kanji, katakana, Latin, digits); HALF_WEIGHT for a bigram that
    joins one to a kana (a particle boundary such as 都は); FUNCTION_WEIGHT for kana-only bigrams."""
    if not has_cjk(tok, 0.5):
        return 1.0
    if is_function_bigram(tok):
        return FUNCTION_WEIGHT
    if any(_HIRAGANA.match(ch) or ch in _QUESTION_KANJI for ch in tok):
        return HALF_WEIGHT
    return 1.0


def is_function_bigram(tok: str) -> bool:
    """A CJK token made only of kana/punctuation, or of kana plus a question kanji (何, 誰). 何 + a kanji (何年, 何都)
    stays a half-weight term: making it a function word (issue 31) let 「防寒服は2年ごとに交換する」 answer 「防寒靴は
    何年ごとに交換されますか」 on the quay dev set — its weight is part of what holds such a near-miss under the
    coverage threshold."""
    if not has_cjk(tok, 0.5):
        return False
    rest = "".join(ch for ch in tok if ch not in _QUESTION_KANJI)
    return not rest or bool(_KANA_OR_PUNCT.match(rest))


def _asked_words(words: list[str]) -> list[bool]:
    """Per English word of a question: is it a question word? _QUESTION_WORDS (read on the word without its
    contraction, bare_word: "what's", "don't", "can't"), and the adjective of a "how long / how far / how old …"
    phrase: it names the answer's type (a duration, a distance; see expected_answer_type), not a thing the
    answer mentions ("long" is in no refund policy)."""
    low = [bare_word(w) for w in words]
    return [w in _QUESTION_WORDS or (i > 0 and low[i - 1] == "how" and w in _HOW_ADJECTIVES)
            or (i > 0 and (low[i - 1], w) in _TYPE_NOUNS)
            for i, w in enumerate(low)]


def content_weights(question: str, idf: dict[str, float] | None = None, absent: set[str] | frozenset = frozenset(),
                    conditions: bool = True) -> dict[str, float]:
    """Content token → weight: idf (1.0 without an index), × FUNCTION_WEIGHT / HALF_WEIGHT for CJK function
    bigrams / particle boundaries, × ABSENT_BOOST for tokens in `absent` (no chunk contains them), × ASIDE_WEIGHT
    for the words of sentences before the asking one (English) and, with `conditions`, of the asking sentence's
    conditional clause (condition_tokens)."""
    q = normalize(question)
    aside: set[str] = set()
    if not has_cjk(q):
        words = _EN_WORD.findall(q)
        kept = [w for w, asked in zip(words, _asked_words(words)) if not asked]
        toks = tokenize(" ".join(kept))
        clause = asking_clause(q)
        if clause != q:  # "My colleague has worked here for 15 years. What is her leave?": circumstances
            own = set(tokenize(clause))
            aside = {t for t in toks if t not in own}
    else:
        toks = tokenize(q)
    if conditions:  # "… if I had a drink before my shift", 泊まる場合、: the asker's case (see main_clause)
        aside |= condition_tokens(q) & set(toks)
    unit = asked_unit_tokens(q)
    out: dict[str, float] = {}
    for t in dict.fromkeys(toks):
        w = (idf or {}).get(t, 1.0) if idf is not None else 1.0
        w *= ASIDE_WEIGHT if t in aside else 1.0
        w *= FUNCTION_WEIGHT if t in unit else 1.0
        out[t] = max(w * cjk_weight(t) * (ABSENT_BOOST if t in absent else 1.0), 1e-6)
    return out


# the unit after 何 (何パーセント, 何メートル, 何キロ, 何ドル) names the type of the value asked, which the answer writes
# as it likes (48%, 100 m), as the letters asked for name its form (アルファベット3文字で: TNA): no named thing of the
# question, and their bigrams weigh as function words
_ASKED_UNIT = re.compile(r"何([\u30a1-\u30fa\u30fc]+)")


def asked_unit_tokens(question: str) -> set[str]:
    """The tokens of the katakana units that follow 何 in a Japanese question (何パーセント → パー, ーセ, セン, ント) and
    that the question does not also say elsewhere (１ヘクトメートルは何メートルか keeps ヘクトメートル's own)."""
    q = normalize(question)
    units = [m.group(1) for m in _ASKED_UNIT.finditer(q)] + [m.group(0) for m in LETTERS_Q_JA.finditer(q)]
    if not units:
        return set()
    rest = LETTERS_Q_JA.sub(" ", _ASKED_UNIT.sub(" ", q))
    return {t for u in units for t in tokenize(u)} - set(tokenize(rest))


def condition_tokens(question: str) -> set[str]:
    """The tokens only the asking sentence's conditional clause holds (main_clause): "Can I report for duty if I had
    a drink before my shift?" → {drink, befor, shift}. A sentence that answers the question read without them
    must still be about the asker's case: it says one of them (stages/extractive.py reads the full weights for a
    sentence that says none: "Foot passengers should be at the terminal 15 minutes before departure" does not
    answer "… if I'm driving on?")."""
    clause = asking_clause(question)
    main = main_clause(clause)
    if main == clause:
        return set()
    if has_cjk(clause):
        return {t for t in set(tokenize(clause)) - set(tokenize(main)) if not is_function_bigram(t)}
    words = _EN_WORD.findall(normalize(clause))
    kept = [w for w, asked in zip(words, _asked_words(words)) if not asked]
    return set(tokenize(" ".join(kept))) - set(tokenize(main))


def question_entities(question: str) -> list[list[str]]:
    """Named entities of the question as token groups (each group: the BM25 tokens of one entity).

    English: words with a digit (2016, B-200, 737), all-caps words (MAX, NICS) and capitalised words not
    opening the question; CJK: katakana words, Latin words and numbers."""
    q = normalize(question)
    ents: list[str] = []
    if has_cjk(q):  # not the unit after 何 (何パーセント) nor the letters asked for (アルファベット3文字で): they name the
        q = LETTERS_Q_JA.sub(" ", q)  # form of the answer, not a thing it is about (asked_unit_tokens)
        ents = [m.group(0) for m in _KATAKANA_RUN.finditer(q) if not (m.start() > 0 and q[m.start() - 1] == "何")]
        ents += _LATIN_OR_NUM.findall(q)
    else:
        words = _EN_WORD.findall(q)
        for i, (w, asked) in enumerate(zip(words, _asked_words(words))):
            bare = w.strip(".'’")
            if not bare or asked:
                continue
            if any(ch.isdigit() for ch in bare) or (len(bare) >= 2 and bare.isupper()) or (i > 0 and bare[0].isupper()):
                ents.append(bare)
    groups, seen = [], set()
    for e in ents:
        toks = [t for t in tokenize(e) if not is_function_bigram(t)]
        key = tuple(toks)
        if toks and key not in seen:
            seen.add(key)
            groups.append(toks)
    return groups


@dataclass(frozen=True)
class Support:
    coverage: float          # weighted share of content terms in sentence + local context
    entity_coverage: float   # mean credit of the question's entities (1 local, 0.5 in the chunk/doc opening)
    n_entities: int
    entity_min: float = 1.0  # the least-covered entity's credit
    asked_coverage: float = 1.0  # coverage of the terms that are not entities: what is asked about them

    def answers(self, cjk: bool) -> bool:
        return (self.coverage >= COVERAGE_MIN["cjk" if cjk else "en"]
                and self.asked_coverage >= ASKED_MIN["cjk" if cjk else "en"]
                and (self.n_entities == 0 or self.entity_min >= ENTITY_MIN))

    def as_dict(self) -> dict:
        return {"coverage": round(self.coverage, 4), "asked_coverage": round(self.asked_coverage, 4),
                "entity_coverage": round(self.entity_coverage, 4), "entity_min": round(self.entity_min, 4),
                "n_entities": self.n_entities}


def support(weights: dict[str, float], entities: list[list[str]], text: str, context: str = "",
            wider: str = "", near: str = "") -> Support:
    """How well `text` read with `context` covers the question (see the module docstring). `wider`: the
    sentence's chunk and its document's opening, where an entity found earns half credit (a report about
    one aircraft names it once, on its first page). `near`: the sentence before, where an entity counts in
    full ("The B-200 … It weighs …") but a term of what is asked counts NEAR_CREDIT: the sentence before
    may be about something else ("Holland is written 和蘭 in kanji. The name comes from the Portuguese
    spelling …" does not say how Portugal is written in kanji)."""
    own = set(tokenize(text + "\n" + context))
    near_toks = set(tokenize(near)) - own if near else set()
    local = own | near_toks
    ent_toks = {t for g in entities for t in g}
    if entities and ENTITY_AS_ONE_TERM:  # a katakana name of n characters is n − 1 bigrams: count it once
        per_token = {t: 1.0 / len(g) for g in entities for t in g}
        weights = {t: w * per_token.get(t, 1.0) for t, w in weights.items()}

    def credit(t: str) -> float:
        if t in own or (t in ent_toks and t in near_toks):
            return 1.0
        return NEAR_CREDIT if t in near_toks else 0.0
    total = sum(weights.values())
    cov = sum(w * credit(t) for t, w in weights.items()) / total if total > 0 else 0.0
    asked_total = sum(w for t, w in weights.items() if t not in ent_toks)
    asked = (sum(w * credit(t) for t, w in weights.items() if t not in ent_toks) / asked_total
             if asked_total > 0 else 1.0)
    if not entities:
        return Support(cov, 1.0, 0, 1.0, asked)
    far = set(tokenize(wider)) if wider else set()
    credits = []
    for group in entities:
        share = sum(1 for t in group if t in local) / len(group)
        if share < 1.0 and far:
            share = max(share, 0.5 * sum(1 for t in group if t in local or t in far) / len(group))
        credits.append(share)
    return Support(cov, sum(credits) / len(credits), len(entities), min(credits), asked)


_NUMBER_Q_EN = re.compile(
    r"^\s*(how (many|much|long|far|old|heavy|tall|high|big|large|often)\b|when\b|in what year\b|by what date\b|"
    r"what (year|date|time)\b)|^\s*(what|which)\b.*\b(price|cost|amount|rate|value|weight|strength|height|length|"
    r"width|depth|temperature|torque|pressure|speed|percentage|total|number of|count)\b", re.I)
# 何 + a counter followed by も (何度も, 何年も, 何人も: again and again, for years, many people) is an adverb of
# quantity, not a question for one (issue 31: 「何度も再利用する技法」 read as a frequency / number question); 何名 and 何隻
# count people and ships as 何人 and 何台 count people and vehicles
_NUMBER_Q_CJK = re.compile(r"何(年|月|日|人|名|個|回|歳|%|％|パーセント|メートル|キロ|円|倍|番目|時|度|件|台|隻|本|枚|種類|"
                           r"世紀)(?!も)"
                           r"|いくら|いくつ|どのくらい|どれくらい|いつ(?!も)")
_DIGIT = re.compile(r"[0-9０-９]")
_DIGIT_CJK = re.compile(r"[0-9０-９一二三四五六七八九十百千万億]")


def expects_number(question: str) -> bool:
    """The question asks for a quantity, date or count (its answer must hold a number): "how many",
    "when", "what is the price of …"; 何年, 何人, いくら, いつ (when; not いつも, always)."""
    q = typed_clause(question)
    return bool(_NUMBER_Q_CJK.search(q) if has_cjk(q) else _NUMBER_Q_EN.search(q))


_REFERENCE = re.compile(r"\b(?:Figures?|Figs?\.|Tables?|Pages?|pp?\.|Sections?|§|No\.|Articles?|Art\.|Chapters?|"
                        r"Clauses?|Paragraphs?|Appendix|Annex|Parts?)\s*[\dA-Z][\w\-–.]*", re.I)


def has_number(text: str, cjk: bool = False) -> bool:
    """True if `text` holds a number in digits other than a reference label ("Figure 7-26", "page 4"). Number
    words count only with a unit of the type asked (states_answer_type: "two working days"): alone they are
    mostly counts of things ("three different spring styles"), which answer no question about a value."""
    return bool((_DIGIT_CJK if cjk else _DIGIT).search(_REFERENCE.sub(" ", text)))


# --- expected answer type: what kind of value the question asks for ----------------------------------------
# A sentence that shares the question's words but states another kind of quantity ("… affects 73 airplanes"
# for "What does each airplane cost?") does not answer it: the answering sentence must state a value of the
# kind asked. Types: money (cost, price, fee, paid …), duration (how long: a time span or a length), count
# (how many <things>: a number that is not money, a span, a length or a percentage), date
# (what year / what date), number (how many, how much, when, a measure …: any number, as before).

_MONEY_Q_EN = re.compile(r"\b(?:costs?|costing|price[sd]?|pricing|fees?|fares?|airfares?|charges?|charged|paid|pays?|"
                         r"spen[dt]|spending|expenses?|expenditures?|budget|salary|salaries|wages?|worth|tuition|rent|"
                         r"amount(?!\s+of\b))\b", re.I)
_MONEY_Q_START = re.compile(r"^\s*(?:(?:up to|for|at|by|of|above|below|over)\s+)?(?:what|which|how much)\b", re.I)
_DURATION_Q_EN = re.compile(r"^\s*(?:for |within )?how (?:long|soon|far (?:ahead|in advance|beforehand)|"
                            r"much (?:advance |prior )?(?:notice|time|lead time))\b", re.I)
_DURATION_Q_CJK = re.compile(r"何(?:日|時間|週間|か月|ヶ月|カ月|年間|分)(?:間|くらい|ほど|以内|前|後|で|かかり|かか)"
                             r"|何営業日|どのくらい(?:の期間|の時間|かか|前)|どれくらい(?:の期間|かか|前)")
_DATE_Q_EN = re.compile(r"^\s*(?:in |by |on |until |since |from )?what (?:year|date|day of the month|month)\b", re.I)
_MONEY_Q_CJK = re.compile(r"何円|何ドル|値段|価格|料金|費用")
_HOW_MUCH_JA = re.compile(r"いくら(?!か|でも|も)")  # not いくらか (somewhat), いくらでも, いくらも

_CURRENCY_SIGN = r"[$€£¥￥₹₩]"
# ISO 4217 codes of the currencies a document may be priced in ("CZK 150", "SEK 95", "1,200 PLN"), leaving out codes
# that spell an English word (TRY, ALL, COP, PHP …: the pattern is case-insensitive), and the names and local signs
# written after the amount (koruna, crowns, złoty, Kč, zł)
_CURRENCY_CODE = (r"(?:USD|EUR|GBP|JPY|CAD|AUD|CHF|CNY|INR|BRL|MXN|CZK|PLN|HUF|SEK|NOK|DKK|ISK|RON|BGN|RUB|UAH|ZAR|"
                  r"NZD|SGD|HKD|KRW|TWD|THB|MYR|IDR|VND|AED|SAR|ILS|EGP|NGN|KES|ARS|CLP)")
_CURRENCY_WORD = (r"(?:dollars?|cents?|euros?|pounds?(?: sterling)?|pence|yen|yuan|reais|real|pesos?|rupees?|francs?|"
                  r"korun[ay]?|crowns?|zlot(?:y|ys|ych)|złot(?:y|ych)|forints?|kron(?:a|or|e|er)|baht|ringgit|liras?|"
                  r"dirhams?|shekels?|rupiah|r[ou]?ubles?|hryvnias?|Kč|zł|" + _CURRENCY_CODE[3:-1] + ")")
_AMOUNT = r"\d[\d,]*(?:\.\d+)?"
_MONEY_TEXT = re.compile(
    rf"{_CURRENCY_SIGN}\s*\d|\b{_CURRENCY_CODE}\s*\d"
    rf"|{_AMOUNT}\s*(?:(?:million|billion|thousand|[mk]|bn)\s+)?{_CURRENCY_WORD}\b"
    rf"|\b{_NUMBER_WORD}\s+{_CURRENCY_WORD}\b"
    r"|\b\d[\d,]*\.\d\d\b(?!\s*(?:%|percent|per cent|[a-z]))"  # an amount written with cents: 618.00, 37,499.96
    r"|\b(?:free of charge|at no (?:extra )?(?:cost|charge)|without charge|for free|no fee)\b", re.I)
_MONEY_TEXT_CJK = re.compile(rf"{_CURRENCY_SIGN}\s*[0-9０-９]|\b{_CURRENCY_CODE}\s*[0-9０-９]"
                             r"|[0-9０-９一二三四五六七八九十百千万億,，]+\s*(?:円|ドル|ユーロ|ポンド|元|ウォン|コルナ|クローナ|"
                             r"クローネ|ズウォティ|フラン|ルピー|レアル|ペソ|バーツ)")
_CURRENCY_UNIT = re.compile(rf"{_CURRENCY_SIGN}|\b{_CURRENCY_WORD}\b|円|ドル|ユーロ|コルナ", re.I)
_TIME_UNIT = r"(?:(?:working|business|calendar|school|banking)\s+)?(?:seconds?|minutes?|hours?|days?|nights?|weeks?|" \
             r"fortnights?|months?|years?|decades?|centur(?:y|ies))"
_DURATION_TEXT = re.compile(
    rf"(?:\d[\d,.]*|\b{_NUMBER_WORD}|\b(?:one|a|an|half an?|several|few))(?:\s*-\s*|\s+)?"
    rf"(?:(?!and\b|or\b|of\b|to\b)[a-z]+\s+)?{_TIME_UNIT}\b"
    rf"|\d[\d,.]*\s*-?\s*{_LENGTH_UNIT}\b|\b(?:at any time|indefinitely|forever|until|no time limit)\b", re.I)
_DURATION_UNIT = re.compile(rf"\b{_TIME_UNIT}\b|\b{_LENGTH_UNIT}\b|\(\s*(?:s|h|min|d)\s*\)", re.I)
_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
          r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?")
_DATE_TEXT = re.compile(rf"\b(?:1[5-9]\d\d|2\d\d\d)\b|\b{_MONTH}\s+\d|\b\d{{1,2}}\s+{_MONTH}"
                        r"|\b\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b|\b\d{4}-\d{2}-\d{2}\b")
# a Japanese time span: 3分, 10営業日, 2週間, 6か月, 1年間 (the units 何日 / 何分 / 何営業日 ask for)
# not a rate per unit of time (1日につき1,500円, 1時間あたり, 1日ごと): it says how much per day, not how long
_DURATION_TEXT_CJK = re.compile(r"[0-9０-９一二三四五六七八九十百千]\s*(?:営業日|日間|日|時間|分間|分|秒|週間|か月|ヶ月|カ月|"
                                r"箇月|年間|年|泊)(?!\s*(?:につき|あたり|当たり|当り|ごと|毎))")
_BARE_CELL = re.compile(rf"^\(?{_CURRENCY_SIGN}?\s*(?:up to\s+)?{_CURRENCY_SIGN}?\s*{_AMOUNT}"
                        rf"(?:\s*[-–]\s*{_CURRENCY_SIGN}?\s*{_AMOUNT})?\)?\.?$", re.I)


# answer types a question's wording hides behind another type's word (issue 31, false refusals): a counter after
# 何 (何回, 何人, 何件 …) asks a number even in a question about a fee (料金の分割払いは何回まで); "how many
# kilometres / kilograms / litres" asks a measure of that unit, not a count of things; "what (pre-charge) pressure /
# temperature / voltage …" asks a physical quantity, not money, though "pre-charge" holds the word "charge"
_COUNTER_Q_CJK = re.compile(r"何(?:回|人|個|件|台|本|枚|種類|倍|番目|か所|箇所|カ所|社|名)(?!も)")
_COUNTED_UNIT = [
    ("length", re.compile(r"(?:milli|centi|kilo)?met(?:er|re)s|kilometers|km|miles|feet|yards|inches", re.I)),
    ("mass", re.compile(r"(?:kilo|milli)?gram(?:me)?s|kilos|kg|tonnes|tons|pounds|lbs|ounces", re.I)),
    ("capacity", re.compile(r"(?:milli)?lit(?:er|re)s|gallons|cubic", re.I)),
]
_PHYSICAL_Q = re.compile(r"^\s*(?:what|which)\b(?:\s+(?!is\b|are\b|was\b|the\b)[\w'’-]+){0,3}?\s+"
                         r"(?-i:pressure|temperature|voltage|current|frequency|flow rate|torque|power|resistance)\b"
                         # the thing named after the word, not its quantity: "what power supply", "which pressure gauge"
                         r"(?!\s+(?:supply|supplies|sensors?|probes?|gauges?|logs?|vessels?|valves?|of attorney)\b)",
                         re.I)
# a rate in percent asked about a charge ("What VAT rate is added to water charges?"): a percentage answers it
_PERCENT_Q = re.compile(r"\b(?:VAT|tax|interest|discount|surcharge|commission)\s+(?:rate|percentage)\b"
                        r"|\b(?:percentage|percent|per cent)\b", re.I)
_PERCENT_TEXT = re.compile(r"\d\s*(?:%|percent\b|per cent\b)|[0-9０-９]\s*[％%]", re.I)


def expected_answer_type(question: str) -> str | None:
    """The kind of value the question asks for: "money" (what / how much … cost, price, fee, paid, fare …;
    何円, 値段, 料金), "duration" (how long / how many days: a time span, or a length), "count" (how many
    <things>: a number that is not money, a time span, a length or a percentage), "date" (what year / what
    date), "number"
    (any other question expects_number accepts), or None (the answer need not hold a number)."""
    q = typed_clause(question)
    if has_cjk(q):  # a quantity question (何円, いくら …) about a price asks for money; 何日, 何時間 a duration
        if not _NUMBER_Q_CJK.search(q) and not _DURATION_Q_CJK.search(q):
            return measure_kind(q)  # 高さは, 重さは: a dimension without a question word for a number
        # 料金の分割払いは何回まで: a number of times, not an amount of money, though the question names a fee
        # いくら asks a price (「3か月の定期はいくらですか」 is not answered by the column names 1か月 | 3か月)
        if (_MONEY_Q_CJK.search(q) or "何円" in q or _HOW_MUCH_JA.search(q)) and not _COUNTER_Q_CJK.search(q):
            return "money"
        return "duration" if _DURATION_Q_CJK.search(q) else (measure_kind(q) or "number")
    if _DURATION_Q_EN.search(q):
        return "duration"
    m = _COUNT_Q_EN.search(q)
    if m:  # "how many (vacation) days" asks a duration; "how many customers" a count of things, not days or dollars
        words = m.group(1).split()
        if any(re.fullmatch(_TIME_UNIT, w, re.I) for w in words):
            return "duration"
        unit = next((k for w in words for k, rx in _COUNTED_UNIT if rx.fullmatch(w)), None)
        return unit or "count"  # "how many kilometres of mains": a length, not a count of things
    if _DATE_Q_EN.search(q):
        return "date"
    if _PHYSICAL_Q.search(q):  # "what pre-charge pressure …": a physical quantity, whatever word names a charge
        return measure_kind(q) or "number"  # of its dimension where measures.py knows it (°C, bar, kW)
    if _MONEY_Q_EN.search(q) and (_MONEY_Q_START.search(q) or _NUMBER_Q_EN.search(q)):
        return "money"
    measure = measure_kind(q)  # how tall / heavy / fast, the capacity of …: a quantity with a unit of its kind
    if measure:
        return measure
    return "number" if _NUMBER_Q_EN.search(q) else None



_Q_NUMBER = re.compile(r"[0-9０-９][0-9０-９,./:\-]*[0-9０-９]|[0-9０-９]")


_COUNT_Q_EN = re.compile(r"^\s*how many\s+(?!times\b)(?:(?:working|business|calendar|school)\s+)?"
                         r"((?:(?!(?:do|does|did|is|are|was|were|can|could|should|will|would|must|of|in|on|for|at|"
                         r"have|has|had|per)\b)[^\W\d_]+\s*){1,3})", re.I)  # the counted noun phrase, up to its verb
# a number that measures something other than a count of things: an amount of money, a time span, a length,
# a percentage ("a right of regret of 7 days" states no number of customers)
_MEASURE_AFTER = re.compile(rf"^\s*-?\s*(?:(?:{_TIME_UNIT}|{_LENGTH_UNIT}|{_CURRENCY_WORD}|percent|per cent|"
                            r"(?:million|billion)\s+(?:dollars|euros)|st|nd|rd|th)\b|%)", re.I)
_NUMBER_TOKEN = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?")


def counted_things(question: str) -> list[str]:
    """The stemmed words of what a "how many <things>" question counts ("How many fatalities resulted …" →
    [fatal, result]; "How many long gun checks …" → [long, gun, check]); [] for other questions."""
    m = _COUNT_Q_EN.search(typed_clause(question))
    if not m or has_cjk(question):
        return []
    return tokenize(" ".join(w for w in m.group(1).split() if w.lower() not in _QUESTION_WORDS))


def says_counted(question: str, text: str) -> bool:
    """Does `text` (a sentence or row read with its column names and headings) name what the "how many" question
    counts (counted_things)? A number in a sentence about the accident is not the number of its fatalities
    unless the sentence says fatalities. True for other questions."""
    things = counted_things(question)
    return not things or bool(set(things) & set(tokenize(text)))


# a number that says when, not how many: a clock time (8:00, 8.30–17.30, 5 pm) or a day of a month (15 March, March 15;
# the month capitalised: "up to 2 may travel" is a count)
_CLOCK_OR_DAY = re.compile(r"(?<![\w.,])\d{1,2}:[0-5]\d(?![\d,])"
                           r"|\b\d{1,2}\.[0-5]\d\s*(?:-|–|to|until|till)\s*\d{1,2}\.[0-5]\d\b|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)(?!\w)"
                           r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?-i:" + _MONTH + r")|\b(?-i:" + _MONTH + r")\s+\d{1,2}\b",
                           re.I)
# the same in Japanese: 8時, 17時30分, 8:00, 6月19日, 令和8年6月8日 (a 年 with its month), 令和6年度
_CLOCK_OR_DAY_CJK = re.compile(r"[0-9０-９]{1,2}\s*[:：]\s*[0-9０-９]{2}"
                               r"|[0-9０-９一二三四五六七八九十]+\s*時(?:\s*[0-9０-９]+\s*分)?"
                               r"|(?:(?:令和|平成|昭和)\s*[0-9０-９元]+|[0-9０-９]{4})\s*年(?:度|\s*[0-9０-９]+\s*月(?:\s*[0-9０-９]+\s*日)?)"
                               r"|[0-9０-９]+\s*月\s*[0-9０-９]+\s*日")
# 何 + a counter of things or people (何台, 何人, 何名, 何件, 何隻 …): what is counted, not when
_THINGS_Q_CJK = re.compile(r"何(?:人|名|個|件|台|本|枚|種類|か所|箇所|カ所|社|隻|基|棟|校|店|室|局)(?!も)")


def states_count(text: str) -> bool:
    """Does `text` state a count of things: a number in digits (not a reference label) that is not an amount
    of money ($6,715, 30 euros), a time span (7 days), a length, a percentage, an ordinal (the 3rd), a clock
    time (8:00, 5 pm) or a day of a month (15 March)? "Bicycles are available from 8:00 to 17:00" says when,
    not how many bicycles there are."""
    text = _CLOCK_OR_DAY.sub(" ", _REFERENCE.sub(" ", text))
    for m in _NUMBER_TOKEN.finditer(text):
        before = text[max(0, m.start() - 2):m.start()]
        if re.search(_CURRENCY_SIGN, before) or re.search(rf"\b{_CURRENCY_CODE}\s*$", text[:m.start()], re.I):
            continue
        if _MEASURE_AFTER.match(text[m.end():m.end() + 24]):
            continue
        return True
    return False


# 何人 reads なにじん as well as なんにん: "what nationality / people" (コンゴ王国に到来したのは何人ですか), which a people's
# name answers (ポルトガル人が到来した), not only a number of persons (issue 31)
_WHAT_PEOPLE_Q = re.compile(r"何人(?!も|分|前|目|程度|くらい|ぐらい|ほど|以上|以下|まで|いる|います|いた|いました)")
_NATIONALITY = re.compile(r"[\u30a1-\u30fa\u30fc]{2,}人|(?:日本|中国|韓国|朝鮮|台湾|英国|米国|独逸|仏国)人")


def names_nationality(question: str, text: str) -> bool:
    """For a 何人 question: does `text` name a people or nationality (ポルトガル人, フランス人, 日本人) the question
    does not?"""
    q = normalize(question)
    if not _WHAT_PEOPLE_Q.search(q):
        return False
    return any(m.group(0) not in q for m in _NATIONALITY.finditer(text))


def question_numbers(question: str) -> tuple[str, ...]:
    """The numbers the question itself states ("2015" in "… in November 2015?"), longest first."""
    return tuple(sorted(set(_Q_NUMBER.findall(normalize(question))), key=len, reverse=True))


def states_answer_type(kind: str | None, text: str, cjk: bool = False, unit_context: str = "",
                       exclude: tuple[str, ...] = (), question: str = "") -> bool:
    """Does `text` state a value of the `kind` expected_answer_type found? money: an amount with a currency sign,
    code or word ($7,650, 30 cents, 12 USD), an amount written with cents (618.00), "free of charge"; duration:
    a number (or number word) with a time unit (14 days, a 14-day right, two working days) or with a length
    unit; date: a year, a month with a day, a numeric date. A table row (cells split by " | ") also qualifies
    with a cell that is a bare amount when its column names / section line (`unit_context`, e.g. "AMOUNT ($)",
    "Ethanol ($/gal)") give no other unit for money, or give a time or length unit for a duration. "number":
    any number other than a reference label (has_number); None: always True. `exclude`: the question's own
    numbers (question_numbers), which do not state what it asks: "NICS Firearm Background Checks November - 2015"
    does not say how many checks there were in November 2015. `question`: for money, an amount per another
    unit than the question asks for is not its answer (other_rate)."""
    if kind is None:
        return True
    for n in exclude:
        text = re.sub(rf"(?<![0-9０-９.,]){re.escape(n)}(?![0-9０-９]|[.,][0-9０-９])", " ", text)
    if kind == "number":
        if cjk and question and _THINGS_Q_CJK.search(normalize(question)):
            text = _CLOCK_OR_DAY_CJK.sub(" ", normalize(text))  # 何台 is not answered by 8時から17時まで
        return has_number(text, cjk) or (cjk and bool(question) and names_nationality(question, text))
    if kind == "count":
        return states_count(text)
    text = _REFERENCE.sub(" ", text)
    if kind in MEASURE_KINDS:
        return states_measure(kind, text, cjk, unit_context)
    if kind == "money":
        if (_MONEY_TEXT_CJK if cjk else _MONEY_TEXT).search(text):
            return not (question and other_rate(question, text))
        if question and _PERCENT_Q.search(question) and _PERCENT_TEXT.search(text):
            return True
    elif kind == "duration":
        if _DURATION_TEXT.search(text) or (cjk and _DURATION_TEXT_CJK.search(text)):
            return True
    elif kind == "date":
        return bool(_DATE_TEXT.search(text))
    if _TABLE_SEP not in text or not any(_BARE_CELL.match(c.strip()) for c in text.split("|")[1:]):
        return False
    if kind == "money":  # bare numbers under a currency unit, or under no unit at all (41.25 in a price table)
        return bool(_CURRENCY_UNIT.search(unit_context)) or not _DURATION_UNIT.search(unit_context)
    return bool(_DURATION_UNIT.search(unit_context))
