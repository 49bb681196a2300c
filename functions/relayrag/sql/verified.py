"""Verified queries and templates: the no-LLM path of Text-to-SQL.

The SQL config's `examples:` (relayrag.sql.config) are SQL the data team wrote and `warehouse config` checked.
Without an LLM a question is answered by one of them when it asks the same thing; an example with `slots:`
is a template whose values the question supplies ("Which 5 countries …" fills `@n` of "Which three
countries have the most customers?"; relayrag.sql.slots). An example without slots is a template with
nothing to fill: its numbers and named values must be the question's.

`match_verified(question, config, embedder, wh)` compares the question with every template; a template
answers when all of these hold, else it says why not (the closest template's reason is the miss message):

1. slots: every slot is filled by a mention of the question (relayrag.sql.slots), and every other mention
   (a number, a year or period, a value of a slot column, "since 2022", "last year") is one the template's
   wording names too — "How many Jazz tracks are longer than 5 minutes?" has a 5 that no slot of "How many
   tracks belong to the {genre} genre?" takes; string literals of the SQL that its wording names must be in
   the question ("Jazz" of an example without slots);
2. markers (relayrag.sql.wording): each marker class of the question (fewest, average, more than, per month,
   not …) is one the SQL computes or the template's wording says; and the question says what the SQL
   requires: the direction of a top N, a comparison, a negation, an AVG / SUM / MAX / MIN result (or a
   glossary term whose SQL has it: "revenue" is SUM(Invoice.Total)), a period grouping. Without a number, a
   "most" with "every / all / 全" or with an order of the same direction ("…, biggest first") is a sort
   (order_desc), and a singular superlative ("Which country has the most customers?", 「最も多い国はどこ」)
   fills a count slot with 1;
3. dimensions: each GROUP BY column of the SQL is named (its column or table words, or a glossary synonym of
   it: "country", 国) — "the revenue in 2022" is not "the revenue per billing country in 2022"; and a template
   without GROUP BY answers no question that asks for a breakdown ("for each customer", "per company",
   法人顧客ごとに, 国別; "per invoice" over the template's own Invoice rows is a rate, not a breakdown);
4. config terms: a glossary entry or filter set the question uses is one the template expresses (its wording
   says it, or its SQL uses the entry's columns and aggregate / the filter's columns and literals), and each
   filter set the template applies is in the question;
5. other words: each content word of the question (relayrag.sql.wording.content_words, mentions, markers and
   terms taken out) is a word of the template's wordings, tables, columns or expressed terms, or a request
   word (show, list, 教えて …). A word naming another table or column or another config term, or a
   capitalised name, refuses; a filler (relayrag.sql.wording.FILLER_WORDS: "could you", "pls", "in the
   catalogue", "tagged", 全部で, 英国向け) is skipped; a word after per / by / each (before ごと / 別 /
   あたり) that the template does not know refuses ("per capita", 地域別); so does a word of a sale or a purchase
   (relayrag.sql.wording.SALE_STEMS / SALE_CJK: sold, bought, 売れた, 販売, 購入) when no word of the template says
   one — "tracks sold per genre" counts invoice lines, not the catalogue's Track rows; a noun of a measured
   value (VALUE_NOUNS: price, cost, money, 金額, 値段) when the template only counts rows (no SUM / AVG / MAX /
   MIN); and a predicate the word makes (predicate_ending: ダウンロードされた曲, "tracks that were downloaded") —
   a condition or another event on what is counted — unless a particle or preposition ties it to a named value
   (ジャズに絞って, "charged to Canada"); other words are "loose";
6. meaning: the cosine (relayrag.backends.embedder.reference_cosine) of the question and the template's
   closest wording, both with their mentions masked (numbers → N, dates → Y, values → X), is at least
   MIN_COSINE, or MIN_COSINE_LOOSE when the question has loose words, or MIN_COSINE_AGREED when it has
   none and agrees with a wording both ways (every config term the wording names is named by the question —
   by the term or by a value of a slot the term is about — and every class the wording says is said):
   "Track count for Latin, please." for "How many tracks belong to the Jazz genre?". The small
   embedder's cosine is a weak judge of short and of Japanese questions; the checks above are the evidence.

Of the templates that answer, the one with the highest cosine wins; its SQL is filled with the question's
values (relayrag.sql.templates.fill_sql) and still goes through the guard before it runs (the caller).
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field

import numpy as np

from relayrag.sql import templates as tpl
from relayrag.sql.template_index import (
    IDENT,
    Compiled,
    Template,
    assign_slots,
    compiled,
    glossary_aggs,
    mask,
    said,
    spans,
    split_label,
)
from relayrag.sql.slots import Mention, describe, find_mentions, fold, lower_keep
from relayrag.sql.wording import (
    COMPARISONS,
    MEASURE_WORDS,
    Word,
    content_words,
    find_markers,
    is_filler,
    is_measure_word,
    is_request_word,
    is_sale_word,
    is_value_noun,
    predicate_ending,
    says_sale,
)
from relayrag.text import has_cjk, normalize

MIN_COSINE = 0.6          # reference cosine of masked question and wording, every word known to the template
MIN_COSINE_LOOSE = 0.8    # the same when the question has words the template does not know
MIN_COSINE_AGREED = 0.5   # no unknown word, and the question and a wording name the same terms and classes
CLOSEST_SHOWN = 3
_CLASS_WORDS = {"desc": "the highest / most", "asc": "the lowest / fewest", "order_desc": "highest first",
                "order_asc": "lowest first", "gt": "more than", "ge": "at least",
                "lt": "less than", "le": "at most", "neg": "a negation", "sum": "a total", "avg": "an average",
                "count": "a count", "max": "a maximum", "min": "a minimum", "compare": "a comparison",
                "month": "per month", "quarter": "per quarter", "year": "per year", "week": "per week",
                "day": "per day", "cumulative": "a running total", "change": "a change or comparison",
                "ratio": "a share or percentage", "median": "a median"}
_CLASS_WORDS_JA = {"desc": "最も多い・上位", "asc": "最も少ない・下位", "order_desc": "多い順", "order_asc": "少ない順",
                   "gt": "より多い", "ge": "以上", "lt": "未満",
                   "le": "以下", "neg": "否定", "sum": "合計", "avg": "平均", "count": "件数", "max": "最大",
                   "min": "最小", "compare": "比較", "month": "月ごと", "quarter": "四半期ごと", "year": "年ごと",
                   "week": "週ごと", "day": "日ごと", "cumulative": "累計", "change": "変化・比較",
                   "ratio": "割合", "median": "中央値"}


@dataclass(frozen=True)
class VerifiedMatch:
    """The template that answers the question: `question` its closest wording, `template` its question with
    {slot} placeholders, `sql` filled with the question's values (not yet guarded), `cosine`, `slots` ({name:
    value as the question says it}), `index` in the config's examples, `params` (the SQL parameters filled)."""

    question: str
    sql: str
    cosine: float
    template: str = ""
    slots: dict = field(default_factory=dict)
    index: int = -1
    params: dict = field(default_factory=dict)


@dataclass
class Miss:
    """Why no template answers: `reason` / `reason_ja` (one clause each), `closest` (templates, best first)."""

    reason: str = ""
    reason_ja: str = ""
    closest: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ matching

@dataclass
class _Question:
    text: str
    norm: str
    mentions: list[Mention]
    classes: dict[str, str]          # class -> marker text
    terms: set[tuple[str, str]]
    term_glossary_aggs: set[str]
    words: list[Word]
    stems: set[str]
    masked: str
    markers: list = field(default_factory=list)


def _phrase(q: _Question, m: Mention) -> str:
    """A leftover mention with the comparison before it and the unit after it: 'longer than 5 minutes'."""
    start, end = m.start, m.end
    if start == end:  # a top 1 the question implies ("Which genre has the most tracks?")
        return "a single one"
    for mk in find_markers(q.norm, spans(q.mentions)):
        if mk.end <= start and not q.norm[mk.end:start].strip() and mk.cls in COMPARISONS:
            start = mk.start
    after = re.match(r"\s*([A-Za-z]+|[\u3040-\u30ff\u4e00-\u9fff]{1,3})", q.norm[end:])
    if m.kind == "number" and after and after.group(1).lower() not in ("and", "or", "in", "of", "the", "a", "for",
                                                                       "to", "with"):
        end += after.end()
    return q.norm[start:end].strip()


def _as_written(norm: str, word: Word) -> str:
    """A word as the question writes it: a kanji run with the kana ending that follows (売 → 売れた)."""
    if not word.cjk:
        return word.text
    tail = re.match(r"[\u3041-\u3093]{0,3}", norm[word.start + len(word.text):]).group(0)
    return word.text + tail


def _covered(run: str, vocab_cjk: list[str], extra: frozenset = frozenset()) -> bool:
    """A kanji / katakana run every piece of which occurs in the template's Japanese words or is a request word
    or a filler (relayrag.sql.wording.FILLER_WORDS) or in `extra`."""
    from relayrag.sql.wording import FILLER_WORDS, REQUEST_WORDS
    i = 0
    while i < len(run):
        j = len(run)
        while j > i and not (any(run[i:j] in v for v in vocab_cjk) or run[i:j] in REQUEST_WORDS
                             or run[i:j] in FILLER_WORDS or run[i:j] in extra):
            j -= 1
        if j == i:
            return False
        i = j
    return True


def _evaluate(t: Template, q: _Question, c: Compiled, cos: np.ndarray,
              debug: dict | None = None) -> tuple[bool, float, int, str, str]:
    """(answers, cosine, stage, reason, reason_ja) of template `t` for question `q`; `stage` numbers the check
    that failed, in the order of the module docstring (a miss is explained by the template that got furthest)."""
    shown = f"“{t.display}”"
    fill = assign_slots(t.refs, q.mentions)
    used_spans = spans(fill.used.values()) + spans(m for m in q.mentions if m.kind == "months"
                                                     and m not in fill.leftover)
    left = list(fill.leftover)
    keys = collections.Counter(m.key() for m in left)
    best = None
    for k, w in enumerate(t.wordings):
        if w.fixed == keys:
            best = max(best or -1.0, float(cos[k]))
    if best is None:
        extra = [m for m in left if t.wordings[0].fixed[m.key()] == 0]
        if extra:
            m = extra[0]
            takes = any(any(_could_take(r, m) for r in o.refs.values()) for o in c.templates)
            ph = _phrase(q, m)
            if takes:
                return False, 0.0, 1, f"{shown} has no slot for '{ph}'", f"「{t.display_ja}」には「{ph}」を入れる枠がありません"
            return False, 0.0, 1, f"no template has a slot for '{ph}'", f"「{ph}」を入れる枠のあるテンプレートがありません"
        missing = [k for k in t.wordings[0].fixed if keys[k] == 0]
        return False, 0.0, 1, f"{shown} is only for {missing[0][1]}", f"「{t.display_ja}」は{missing[0][1]}専用です"
    qfold = fold(q.text)
    for lit in t.facts.literals:
        if any(fold(lit) in fold(w.text) for w in t.wordings) and fold(lit) not in qfold:
            return False, 0.0, 2, f"{shown} is only for {lit!r}", f"「{t.display_ja}」は「{lit}」専用です"
    for kind, name in sorted(q.terms):
        if (kind, name) not in t.expressed:
            return False, 0.0, 3, f"the question uses '{name}', which {shown} does not", \
                f"質問の「{name}」は「{t.display_ja}」では使われていません"
    for name in sorted(t.filters):
        if ("filter", name) not in q.terms:
            return False, 0.0, 3, f"{shown} is only for {name.replace('_', ' ')}", \
                f"「{t.display_ja}」は{name}専用です"
    loose: list[Word] = []
    measures = MEASURE_WORDS if t.facts.aggregates & {"sum", "avg"} else frozenset()
    for word in q.words:
        if any(s <= word.start < e for s, e in used_spans):
            continue
        if (word.cjk and _covered(word.stem, t.vocab_cjk, measures)) or (not word.cjk and word.stem in t.vocab):
            continue
        unit = next((m for name, m in fill.used.items() if name in t.counted and word.start >= m.end
                     and not q.norm[m.end:word.start].strip()), None)
        if unit is not None:  # what a number counts must be what the template counts ("10 hours" ≠ "N tracks")
            return False, 0.0, 4, f"the question counts '{word.text}', which {shown} does not", \
                f"質問の「{unit.text}{word.text}」は「{t.display_ja}」では数えられません"
        if is_request_word(word):
            continue
        if is_sale_word(word):
            # "tracks sold per genre", 売れた曲の数, "songs customers bought": a count or sum of sales, which a template
            # of the catalogue (COUNT of Track rows) does not measure; one that says sales too may still answer
            if says_sale(t.vocab, t.vocab_cjk):
                loose.append(word)
                continue
            said_as = _as_written(q.norm, word)
            return False, 0.0, 4, f"the question is about what was sold or bought ('{said_as}'), and {shown} " \
                "does not measure sales", f"質問の「{said_as}」（売れた・購入された分）は「{t.display_ja}」では集計されません"
        if not word.cjk and word.stem in c.schema_words:
            return False, 0.0, 4, f"the question names '{word.text}', which {shown} does not use", \
                f"質問の「{word.text}」は「{t.display_ja}」では使われていません"
        if word.capital:
            return False, 0.0, 4, f"the question names '{word.text}', which no slot of {shown} takes", \
                f"質問の「{word.text}」を入れる枠が「{t.display_ja}」にありません"
        if is_filler(word) or (is_measure_word(word, q.norm) and t.facts.aggregates & {"sum", "avg"}):
            continue
        per = word.cjk and (word.text.endswith(("別", "毎")) or _PER_AFTER.match(q.norm, word.start + len(word.text)))
        if per or _PER_BEFORE.search(q.norm[:word.start]):
            # "per capita", "by region", 地域別, 人口あたり: a grouping or a rate the template does not have
            return False, 0.0, 4, f"the question asks per '{word.text}', which {shown} does not", \
                f"質問の「{word.text}」ごと・あたりは「{t.display_ja}」にありません"
        if is_value_noun(word) and not t.facts.aggregates & {"sum", "avg", "max", "min"}:
            # "the price of …", 曲の金額, 値段: a value of each row, which a template that counts rows does not measure
            return False, 0.0, 4, f"the question measures '{word.text}', and {shown} counts rows", \
                f"質問の「{word.text}」は値の集計ですが、「{t.display_ja}」は件数を数えます"
        ending = predicate_ending(q.norm, word)
        end = word.start + len(word.text)
        if ending and not any((m.end <= word.start and _PARTICLE_ONLY.fullmatch(q.norm[m.end:word.start]))
                              or (m.start >= end and _PREPOSITION_ONLY.fullmatch(q.norm[end:m.start]))
                              for m in q.mentions if m.start < m.end):
            # ダウンロードされた曲, 再生された, "tracks that were downloaded": a condition or another event on what is
            # counted, which the template's words do not say (a relation to a named value — ジャズに絞って,
            # "are filed under Jazz", "was charged to Canada" — is not one)
            said_as = word.text + ending if word.cjk else f"{ending} {word.text}"
            return False, 0.0, 4, f"the question says '{said_as}', a condition {shown} does not have", \
                f"質問の「{said_as}」は「{t.display_ja}」にない条件です"
        loose.append(word)
    extra_cls = [cl for cl in q.classes if cl not in t.allowed]
    if extra_cls:
        cl = extra_cls[0]
        return False, 0.0, 5, (f"the question asks for '{q.classes[cl]}' ({_CLASS_WORDS[cl]}), which {shown} does "
                               "not compute"), \
            f"質問の「{q.classes[cl]}」（{_CLASS_WORDS_JA[cl]}）は「{t.display_ja}」で計算できません"
    if fill.missing:
        name = fill.missing[0]
        what = describe(t.refs[name].type, t.refs[name].key)
        return False, 0.0, 6, f"{shown} needs {what} and the question names none", \
            f"「{t.display_ja}」には{what}が必要ですが、質問にありません"
    q_said = said(q.classes, q.term_glossary_aggs, q.norm, q.mentions)
    for cl in sorted(t.essential):
        if cl in q_said:
            continue
        return False, 0.0, 7, f"{shown} gives {_CLASS_WORDS[cl]}, and the question does not ask for it", \
            f"「{t.display_ja}」は{_CLASS_WORDS_JA[cl]}を返しますが、質問はそれを求めていません"
    counted = _counted_dim(t, q)
    if counted:
        return False, 0.0, 8, f"the question counts {counted} values, and {shown} gives one row per {counted}", \
            f"質問は{counted}の数を求めていますが、「{t.display_ja}」は{counted}ごとの結果です"
    for label, stems, cjk in t.dims:
        if not (stems & q.stems or any(j in q.norm for j in cjk)):
            return False, 0.0, 9, f"{shown} gives one row per {label}, and the question does not ask per {label}", \
                f"「{t.display_ja}」は{label}ごとの結果ですが、質問は{label}ごとを求めていません"
    if not t.dims and not _GROUP_BY.search(t.sql):
        breakdown = _asks_per(q.norm, t.facts.tables)
        if breakdown:
            return False, 0.0, 9, f"the question asks per {breakdown}, and {shown} gives a single result", \
                f"質問は「{breakdown}」ごとの結果を求めていますが、「{t.display_ja}」は一つの結果です"
    need = MIN_COSINE_LOOSE if loose else MIN_COSINE
    if not loose and _agrees(t, q, fill, q_said):
        need = MIN_COSINE_AGREED
    if debug is not None:
        debug["loose"] = loose
    if best < need:
        return False, best, 10, f"no template is worded like the question (closest {shown}, cosine {best:.2f})", \
            f"質問に近い言い回しのテンプレートがありません（最も近いのは「{t.display_ja}」、cosine {best:.2f}）"
    return True, best, 11, "", ""


_PREPOSITION_ONLY = re.compile(r"\s+(?:to|as|by|in|into|under|with|for|from|on|at|of)\s+(?:the\s+)?", re.I)
_PARTICLE_ONLY = re.compile(r"\s*(?:に|で|を|が|と|として|へ|から|まで)?\s*")

# a breakdown the question asks for: "for each customer", "per company", 法人顧客ごとに, 国別の (not 特別 / 個別 / 区別)
_GROUP_EN = re.compile(r"\b(?:for\s+(?:each|every)|per|each|every)\s+(?!one\b|of\b|time\b|single\b)([a-z][a-z-]+)", re.I)
_GROUP_JA = re.compile(r"([\u4e00-\u9fff\u30a0-\u30ff]{1,10})(?:ごと|毎)|([\u4e00-\u9fff\u30a0-\u30ff]{2,10})別(?!途)")
_GROUP_BY = re.compile(r"\bGROUP\s+BY\b", re.I)
_NOT_GROUPING_JA = ("特", "個", "区", "差", "判", "識", "選", "格", "分", "送", "性")


def _asks_per(norm: str, tables: set[str]) -> str:
    """The noun of a breakdown the question asks for ("each customer", "per company", 法人顧客ごと, 国別), or "".
    A template without GROUP BY returns one row, so it cannot answer one. "per invoice" where Invoice is a table
    the template reads is a rate over its rows (an average per invoice), not a breakdown; "each invoice" is one."""
    own = {t.lower() for t in tables}
    for m in _GROUP_EN.finditer(norm):
        noun = m.group(1).lower()
        if not (m.group(0).lower().startswith("per ") and (noun in own or noun.rstrip("s") in own)):
            return m.group(0)
    for m in _GROUP_JA.finditer(norm):
        run = m.group(1) or m.group(2)
        if m.group(2) and run.endswith(_NOT_GROUPING_JA):
            continue
        return run
    return ""


_PER_BEFORE = re.compile(r"\b(?:per|by|each|every)\s+$", re.I)
_PER_AFTER = re.compile(r"\s*(?:ごと|毎|別|あたり|当たり)")


def _agrees(t: Template, q: _Question, fill, q_said: set[str]) -> bool:
    """Both ways agreement of a template that passed checks 1-5 with no loose word: some wording of it names
    config terms (one at least), and the question names each of them (the term itself, or a value of a
    slot whose column the term is about: "Latin" names genres) and says each class that wording says and
    the SQL computes (a count, an average, an order …; "invoice total" of an AVG template is no sum)."""
    named = set(q.terms)
    for name in fill.used:
        named |= t.slot_terms.get(name, set())
    return any(w.terms and w.terms <= named and w.said & t.facts.allowed <= q_said for w in t.wordings)


_JA_BARE_COUNT = ("数", "件数", "いくつ", "何件", "何個", "何種類")
_COUNT_ADJECTIVES = frozenset({"differ", "distinct", "uniqu", "separ", "individu", "total", "overal"})


def _counted_dim(t: Template, q: _Question) -> str | None:
    """The GROUP BY dimension a count of the question counts ("how many playlists …", "プレイリストの数",
    何か国), when the template groups by it: the question wants the number of groups, not a row per group.
    English: the first word after the count ("how many playlists"), or before a noun "count" ("track count");
    Japanese: the noun in the count (何か国) or just before it."""
    from relayrag.retrieval.tokenize import tokenize
    for mk in q.markers:
        if mk.cls != "count":
            continue
        after = [w for w in tokenize(" ".join(q.norm[mk.end:].split()[:3])) if w not in _COUNT_ADJECTIVES][:1]
        before_word = re.search(r"([A-Za-z]+)\s*$", q.norm[:mk.start])
        if mk.text.lower() in ("count", "counts") and before_word and tokenize(before_word.group(1)):
            after = tokenize(before_word.group(1))[-1:]  # "track count by genre" counts tracks
        if mk.text in _JA_BARE_COUNT:
            noun = re.sub(r"(?:の|は|が|を|って|\s)+$", "", q.norm[:mk.start])
        else:
            noun = mk.text.removeprefix("何").removesuffix("数") if has_cjk(mk.text) else ""
            noun = re.sub(r"^(?:か|カ|ヶ|ヵ)", "", noun)
        for label, stems, cjk in t.dims:
            if set(after) & stems or any(j and noun and noun.endswith(j) for j in cjk):
                return label
    return None


def _could_take(ref: tpl.SlotRef, m: Mention) -> bool:
    from relayrag.sql.slots import accepts
    return accepts(ref.type, m, ref.key)


def _question(question: str, c: Compiled) -> _Question:
    from relayrag.retrieval.tokenize import tokenize
    from relayrag.sql.context import match_terms
    norm = normalize(question)
    mentions = find_mentions(norm, c.index)
    markers = find_markers(norm, spans(mentions))
    matched = match_terms(norm, c.config)
    said_filters = _filters_said(norm, c.config, matched)
    words = content_words(norm, spans(mentions) + spans(markers) + spans(matched)
                          + [(a, b) for _n, a, b in said_filters])
    aggs = glossary_aggs(matched)
    classes: dict[str, str] = {}
    for mk in markers:
        if mk.cls != "request":  # "break down": asks for the answer, constrains nothing
            classes.setdefault(mk.cls, mk.text)
    mentions = mentions + _implied_one(norm, mentions, markers)
    _sort_not_top(classes, norm, mentions)
    stems = set(tokenize(norm))
    terms = {(m.kind, m.name) for m in matched} | {("filter", name) for name, f in c.config.filters.items()
                                                   if _said_by_description(f.description, stems)}
    terms |= {("filter", name) for name, _a, _b in said_filters}
    return _Question(question, norm, mentions, classes, terms, aggs, words, stems, mask(norm, mentions), markers)


_SINGULAR_EN = re.compile(
    r"\b(?:which|what)\s+([a-z]+)\s+(?:has|had|is|was|does|did|sells|sold|gets|got|brings|brought|generates|"
    r"generated|makes|made|holds|held|earns|earned)\b|\bwho\s+(?:has|had|is|was|does|did|sells|sold)\b|"
    r"\bthe\s+(?:single\s+)?([a-z]+)\s+(?:with|having|that\s+has|that\s+had)\s+the\s+(?:most|highest|largest|"
    r"biggest|greatest|fewest|least|lowest|smallest)\b")
_SINGULAR_JA = re.compile(r"最も|一番|いちばん")
_EVERY = re.compile(r"\b(?:every|all|each)\b|全|すべて")


def _implied_one(norm: str, mentions: list[Mention], markers) -> list[Mention]:
    """A singular superlative without a number asks for a top 1: "Which country has the most customers?", "the
    genre with the fewest tracks", 「顧客が最も多い国はどこ？」 (最も / 一番 without a number). Returns [a count
    mention of 1 with an empty span at the superlative] or []. "Which countries have the most …" (plural),
    "every genre …, most first" and 最も多いものから順に (a sort) imply no number."""
    if any(m.kind == "number" for m in mentions):
        return []
    top = next((mk for mk in markers if mk.cls in ("desc", "asc")), None)
    if top is None or _EVERY.search(lower_keep(norm)) or any(mk.cls == f"order_{top.cls}" for mk in markers):
        return []
    low = lower_keep(norm)
    singular = False
    for m in _SINGULAR_EN.finditer(low):
        noun = m.group(1) or m.group(2)
        if noun is None or not noun.endswith("s") or noun.endswith(("ss", "us", "is")):
            singular = m.start() <= top.start
    if has_cjk(norm) and _SINGULAR_JA.search(norm):
        singular = True
    return [Mention("number", top.start, top.start, "1", 1)] if singular else []


def _sort_not_top(classes: dict[str, str], norm: str, mentions: list[Mention]) -> None:
    """A "most" / "highest" (desc) or "fewest" (asc) without a number is a sort, not a top N, when the question
    also asks for every row ("every genre", "all countries", 全ジャンル) or says the order of the same direction
    elsewhere ("Which genres have the most songs? …, biggest first"): the class becomes order_desc / order_asc
    in `classes` (changed in place)."""
    if any(m.kind == "number" for m in mentions):
        return
    for d in ("desc", "asc"):
        if d in classes and (f"order_{d}" in classes or _EVERY.search(lower_keep(norm))):
            classes.setdefault(f"order_{d}", classes[d])
            del classes[d]


_NOT_NULL = re.compile(r"^\s*([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s+IS\s+NOT\s+NULL\s*$", re.I)
# before a column's word: the rows have that thing ("with a company", "belong to a company", "have an employer")
_HAVING_EN = r"\b(?:with|have|has|having|to|for|at)\s+(?:a|an)\s+"   # not "the company" (the store itself)
# after a column's Japanese name: it is registered / belonged to / present (会社名が登録, 会社に所属, 会社がある)
_HAVING_JA = r"(?:名)?(?:が|を|に|の)?\s*(?:登録|所属|あり|ある|持|勤)"


def _filters_said(norm: str, config, matched) -> list[tuple[str, int, int]]:
    """Filter sets a question says in other words than the config's, as (name, start, end):

    - a synonym made of a modifier and a glossary term, with another name of that term or の between:
      "corporate customers" → "corporate clients", 法人顧客 → 法人のお客様;
    - a filter that keeps the rows where a column has a value (`T.C IS NOT NULL`), by the rows having that
      column's thing: "customers with a company", "that belong to a company", "the ones with a company name",
      会社に所属している顧客, 会社名が登録されている顧客 (the column by its words, or by a glossary entry
      whose meaning names the column). "per company", "without a company" are not it (the negation is a
      marker the template must compute)."""
    from relayrag.sql.templates import GENERIC_COLUMN_WORDS, identifier_words
    low = lower_keep(norm)
    out: list[tuple[str, int, int]] = []
    names: dict[str, list[str]] = {}   # glossary entry → its names
    for gname, g in config.glossary.items():
        names[gname] = [gname.replace("_", " "), *g.synonyms]
    for fname, f in config.filters.items():
        for syn in f.synonyms:
            for gname, gnames in names.items():
                tail = next((n for n in sorted(gnames, key=len, reverse=True)
                             if syn.lower().endswith(n.lower()) and len(n) < len(syn)), None)
                if tail is None:
                    continue
                modifier = syn[:len(syn) - len(tail)].strip()
                if not modifier:
                    continue
                alts = "|".join(re.escape(n.lower()) for n in sorted(gnames, key=len, reverse=True))
                edge = r"\b" if not has_cjk(modifier) else ""
                for m in re.finditer(rf"{edge}{re.escape(modifier.lower())}(?:\s+|の|\s*)(?:{alts}){edge}", low):
                    out.append((fname, m.start(), m.end()))
        nn = _NOT_NULL.match(f.sql or "")
        if not nn:
            continue
        table, col = nn.group(1).lower(), nn.group(2).lower()
        words = [w for w in split_label(nn.group(2)).split() if not set(identifier_words(w)) & GENERIC_COLUMN_WORDS]
        for w in words:
            for hit in re.finditer(_HAVING_EN + rf"({re.escape(w[:-1] if w.endswith('y') else w)}\w*)", low):
                out.append((fname, hit.start(1), hit.end(1)))
        for tm in matched:
            if tm.kind != "glossary":
                continue
            text = f"{getattr(tm.entry, 'sql', '') or ''} {tm.entry.meaning}"
            if (table, col) in {(a.lower(), b.lower()) for a, b in IDENT.findall(text)} and re.match(
                    _HAVING_JA, norm[tm.end:]):
                out.append((fname, tm.start, tm.end))
    return out


def _said_by_description(description: str, stems: set[str]) -> bool:
    """A filter set named in its own words: every content word of its description ("customers with a company
    on file") is in the question (two words at least)."""
    from relayrag.retrieval.tokenize import tokenize
    words = set(tokenize(description))
    return len(words) >= 2 and words <= stems


def match_verified(question: str, config, embedder, wh=None) -> tuple[VerifiedMatch | None, Miss]:
    """(the template that answers `question` or None, why not and the closest templates). `config`:
    relayrag.sql.config.SqlConfig (or a list of its Example); `embedder`: relayrag's embedder (None: no
    match); `wh`: the warehouse (value slots read their columns' values from it; without it, templates with
    value slots are left out). The SQL of a match is filled, not yet guarded."""
    from relayrag.sql.config import SqlConfig
    if isinstance(config, list):
        config = SqlConfig(examples=config)
    if config is None or not config.examples or embedder is None:
        return None, Miss()
    from relayrag.backends.embedder import reference_cosine
    c = compiled(config, wh, embedder)
    if not c.templates:
        return None, Miss("the SQL config's templates cannot be used: " + "; ".join(c.problems[:2]))
    q = _question(question, c)
    qv = embedder.embed([q.masked], kind="query")[0]
    results = []
    for t in c.templates:
        cos = np.asarray(reference_cosine(embedder, t.vectors @ qv), dtype=float)
        ok, score, stage, why, why_ja = _evaluate(t, q, c, cos)
        results.append((ok, score, float(cos.max()), t, why, why_ja, stage))
    ja = has_cjk(question)
    ranked = sorted(results, key=lambda r: -r[2])
    closest = [(r[3].display_ja if ja else r[3].display) for r in ranked[:CLOSEST_SHOWN]]
    winners = [r for r in results if r[0]]
    if winners:
        t = max(winners, key=lambda r: r[1])[3]
        score = max(winners, key=lambda r: r[1])[1]
        fill = assign_slots(t.refs, q.mentions)
        try:
            sql = tpl.fill_sql(t.sql, fill.params)
        except tpl.TemplateError as exc:
            return None, Miss(f"the template “{t.display}” could not be filled: {exc}",
                              f"テンプレート「{t.display_ja}」に値を入れられません: {exc}", closest)
        slots = {name: (m.value[t.refs[name].key] if m.kind == "value" else m.text) for name, m in fill.used.items()}
        best_wording = max(range(len(t.wordings)), key=lambda k: float(
            reference_cosine(embedder, t.vectors[k] @ qv)) if t.wordings[k].fixed == collections.Counter(
                m.key() for m in fill.leftover) else -2.0)
        return VerifiedMatch(t.wordings[best_wording].text, sql, score, t.display, slots, t.index,
                             dict(fill.params)), Miss(
            closest=closest)
    # explained by the template closest in wording, favouring one that passed more checks
    top = max(results, key=lambda r: r[2] + 0.03 * r[6])
    if top[2] < MIN_COSINE - 0.15:
        return None, Miss(f"no template asks anything like this (the closest, “{top[3].display}”, has cosine "
                          f"{top[2]:.2f})", f"似た質問のテンプレートがありません（最も近い「{top[3].display_ja}」でも cosine "
                          f"{top[2]:.2f}）", closest)
    return None, Miss(top[4], top[5], closest)
