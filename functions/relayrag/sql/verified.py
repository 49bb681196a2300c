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
   glossary term whose SQL has it: "revenue" is SUM(Invoice.Total)), a period grouping;
3. dimensions: each GROUP BY column of the SQL is named (its column or table words, or a glossary synonym of
   it: "country", 国) — "the revenue in 2022" is not "the revenue per billing country in 2022";
4. config terms: a glossary entry or filter set the question uses is one the template expresses (its wording
   says it, or its SQL uses the entry's columns and aggregate / the filter's columns and literals), and each
   filter set the template applies is in the question;
5. other words: each content word of the question (relayrag.sql.wording.content_words, mentions, markers and
   terms taken out) is a word of the template's wordings, tables, columns or expressed terms, or a request
   word (show, list, 教えて …). A word naming another table or column or another config term, or a
   capitalised name, refuses; other words are "loose";
6. meaning: the cosine (relayrag.backends.embedder.reference_cosine) of the question and the template's
   closest wording, both with their mentions masked (numbers → N, dates → Y, values → X), is at least
   MIN_COSINE, or MIN_COSINE_LOOSE when the question has loose words.

Of the templates that answer, the one with the highest cosine wins; its SQL is filled with the question's
values (relayrag.sql.templates.fill_sql) and still goes through the guard before it runs (the caller).
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relayrag.sql import templates as tpl
from relayrag.sql.slots import PLACEHOLDER, Mention, ValueIndex, describe, find_mentions, fold
from relayrag.sql.wording import COMPARISONS, PERIODS, Word, content_words, find_markers, is_request_word
from relayrag.text import has_cjk, normalize

MIN_COSINE = 0.6          # reference cosine of masked question and wording, every word known to the template
MIN_COSINE_LOOSE = 0.8    # the same when the question has words the template does not know
CLOSEST_SHOWN = 3
_IDENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b")
_AGG = re.compile(r"\b(SUM|AVG|COUNT|MAX|MIN)\s*\(", re.I)
_PERIOD_WORDS = {"month": ("month", "月"), "quarter": ("quarter", "四半期"), "year": ("year", "年"),
                 "week": ("week", "週"), "day": ("day", "日")}
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


# ------------------------------------------------------------------------------------------------ compiling

@dataclass
class _Wording:
    text: str
    norm: str
    masked: str
    fill: tpl.Fill
    fixed: collections.Counter
    classes: set[str]


@dataclass
class _Template:
    index: int
    question: str
    sql: str
    refs: dict[str, tpl.SlotRef]
    facts: tpl.SqlFacts
    wordings: list[_Wording]
    vocab: set[str]
    vocab_cjk: list[str]
    expressed: set[tuple[str, str]]
    filters: set[str]
    allowed: set[str]
    dims: list[tuple[str, set[str], list[str]]]   # (label, stems, CJK words)
    essential: set[str]                            # classes a question must say (the SQL needs, a wording says)
    counted: set[str]                              # number slots a wording follows with what they count
    display: str
    display_ja: str
    vectors: Any = None


@dataclass
class _Compiled:
    templates: list[_Template]
    index: ValueIndex
    schema_words: set[str]
    config: Any
    problems: list[str]


def _mask(norm: str, mentions: list[Mention]) -> str:
    out, pos = [], 0
    for m in sorted(mentions, key=lambda m: m.start):
        if m.start < pos:
            continue
        out.append(norm[pos:m.start])
        out.append(PLACEHOLDER.get(m.kind, "X"))
        pos = m.end
    out.append(norm[pos:])
    return "".join(out)


def _display(norm: str, fill: tpl.Fill) -> str:
    """The wording with each slot's value replaced by {slot}."""
    spans = sorted(((m.start, m.end, name) for name, m in fill.used.items()), reverse=True)
    out = norm
    for s, e, name in spans:
        out = out[:s] + "{" + name + "}" + out[e:]
    return out


def _spans(items) -> list[tuple[int, int]]:
    return [(x.start, x.end) for x in items]


def _schema_words(schema: dict, config) -> set[str]:
    """Words that name a table, a column (not a generic one: name, title …) or a config term."""
    from relayrag.retrieval.tokenize import tokenize
    words: set[str] = set()
    for t in schema.get("tables", []):
        words |= set(tpl.identifier_words(t["name"]))
        cols = t.get("columns") or {}
        for c in (cols if isinstance(cols, dict) else [c["name"] for c in cols]):
            words |= set(tpl.identifier_words(c)) - tpl.GENERIC_COLUMN_WORDS
    for section in (config.glossary, config.filters):
        for name, e in section.items():
            for term in [name.replace("_", " "), *e.synonyms]:
                if not has_cjk(term):
                    words |= set(tokenize(term))
    return words


def _expressed(config, facts: tpl.SqlFacts, wording_terms: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Config entries the template expresses: named by a wording, or computed by its SQL (module docstring)."""
    cols = {(t.lower(), c.lower()) for t, c in facts.columns}
    tables = {t.lower() for t in facts.tables}
    allowed = facts.allowed
    out = set(wording_terms)
    for name, e in config.glossary.items():
        if e.sql:
            refs = {(a.lower(), b.lower()) for a, b in _IDENT.findall(e.sql)}
            aggs = {a.lower() for a in _AGG.findall(e.sql)}
            if refs and refs <= cols and aggs <= allowed:
                out.add(("glossary", name))
        else:
            refs = {(a.lower(), b.lower()) for a, b in _IDENT.findall(e.meaning)}
            if refs & cols or (not refs and {w.lower() for w in re.findall(r"[A-Za-z_]\w*", e.meaning)} & tables):
                out.add(("glossary", name))
    template_literals = {str(x).lower() for x in facts.literals}
    for name, f in config.filters.items():
        refs = {(a.lower(), b.lower()) for a, b in _IDENT.findall(f.sql)}
        lits = {x.lower() for x in re.findall(r"'((?:[^']|'')*)'", f.sql)}
        if refs and refs <= cols and lits <= template_literals and not re.search(r"\b\d+\b", re.sub(
                r"'[^']*'|\b[A-Za-z_]\w*\.[A-Za-z_]\w*\b", "", f.sql)):
            out.add(("filter", name))
    return out


def _dims(facts: tpl.SqlFacts, config) -> list[tuple[str, set[str], list[str]]]:
    """Each GROUP BY dimension as (label, stems that name it, CJK words that name it). A column that names
    its table's rows (an id or name column: PlaylistId, Genre.Name) is named by the table's words and by the
    glossary entries about that table; another column (BillingCountry) by its own words and the glossary
    entries that name that column."""
    from relayrag.retrieval.tokenize import tokenize
    out: list[tuple[str, set[str], list[str]]] = []
    for table, col in facts.dims:
        if not table:
            en, ja = _PERIOD_WORDS[col]
            out.append((f"{en}", {en}, [ja]))
            continue
        table_words = set(tpl.identifier_words(table))
        words = set(tpl.identifier_words(col)) - tpl.GENERIC_COLUMN_WORDS
        entity = words <= table_words
        if entity:
            words = table_words
        cjk: list[str] = []
        for name, e in config.glossary.items():
            text = f"{e.sql or ''} {e.meaning}"
            refs = {(a.lower(), b.lower()) for a, b in _IDENT.findall(text)}
            about = ((table.lower(), col.lower()) in refs) or (entity and (
                any(t == table.lower() for t, _ in refs)
                or (not refs and table.lower() in {w.lower() for w in re.findall(r"[A-Za-z_]\w*", e.meaning)})))
            if about:
                for term in [name.replace("_", " "), *e.synonyms]:
                    if has_cjk(term):
                        cjk.append(normalize(term))
                    else:
                        words |= set(tokenize(term))
        label = split_label(table if entity else col)
        if all(label != o[0] for o in out):
            out.append((label, words, cjk))
    return out


def split_label(name: str) -> str:
    """'BillingCountry' → 'billing country'."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|_", " ", name).lower()


def _compile(config, wh, embedder) -> _Compiled:
    from relayrag.sql.context import match_terms
    schema = wh.schema() if wh is not None else {"tables": []}
    problems: list[str] = []
    index = tpl.config_value_index(config, wh, problems) if wh is not None else ValueIndex()
    out: list[_Template] = []
    for i, ex in enumerate(config.examples):
        try:
            refs = tpl.slot_refs(ex.slots, schema)
        except tpl.TemplateError as exc:
            problems.append(f"examples[{i}]: {exc}")
            continue
        if wh is None and any(r.type == "value" for r in refs.values()):
            continue
        date_params = {p.lower() for r in refs.values() if r.type in ("year", "date_range")
                       for p in (f"{r.name}_start", f"{r.name}_end")}
        try:
            facts = tpl.analyse(ex.sql, schema, date_params=date_params)
        except tpl.TemplateError as exc:
            problems.append(f"examples[{i}]: {exc}")
            continue
        wordings, terms = [], set()
        vocab: set[str] = set()
        vocab_cjk: list[str] = []
        allowed = set(facts.allowed)
        template_said: set[str] = set()
        counted: set[str] = set()
        for text in ex.wordings():
            norm = normalize(text)
            fill = _assign(refs, find_mentions(norm, index))
            if fill.missing:
                continue  # reported by check_config; this wording cannot be compared
            mentions = fill.mentions
            markers = find_markers(norm, _spans(mentions))
            matched = match_terms(norm, config)
            terms |= {(m.kind, m.name) for m in matched}
            for w in content_words(norm, _spans(mentions) + _spans(markers) + _spans(matched)):
                (vocab_cjk.append(w.stem) if w.cjk else vocab.add(w.stem))
            words = content_words(norm, _spans(mentions) + _spans(markers))
            counted |= {name for name, m in fill.used.items() if m.kind == "number" and any(
                w.start >= m.end and not norm[m.end:w.start].strip() for w in words)}
            classes = {m.cls for m in markers} - {"request"}
            allowed |= classes
            template_said |= said(classes, _glossary_aggs(matched), norm, mentions)
            fixed = collections.Counter(m.key() for m in fill.leftover)
            wordings.append(_Wording(text, norm, _mask(norm, mentions), fill, fixed, classes))
        if not wordings:
            continue
        expressed = _expressed(config, facts, terms)
        for kind, name in expressed:
            entry = (config.glossary if kind == "glossary" else config.filters)[name]
            if kind == "filter":
                vocab |= set(content_stems(entry.description))
            for term in [name.replace("_", " "), *entry.synonyms]:
                if has_cjk(term):
                    vocab_cjk.append(normalize(term))
                else:
                    vocab |= set(content_stems(term))
        for t in facts.tables:
            vocab |= set(tpl.identifier_words(t))
        for t, c in facts.columns:
            vocab |= set(tpl.identifier_words(c))
        filters = {n for k, n in expressed if k == "filter"}
        cjk_display = next((w for w in wordings if has_cjk(w.text)), wordings[0])
        latin_display = next((w for w in wordings if not has_cjk(w.text)), wordings[0])
        out.append(_Template(
            index=i, question=ex.question, sql=ex.sql, refs=refs, facts=facts, wordings=wordings, vocab=vocab,
            vocab_cjk=vocab_cjk, expressed=expressed, filters=filters, allowed=allowed, dims=_dims(facts, config),
            essential=(facts.essential | (facts.aggregates & {"avg", "sum", "max", "min"})) & template_said,
            counted=counted,
            display=_display(latin_display.norm, latin_display.fill),
            display_ja=_display(cjk_display.norm, cjk_display.fill)))
    if embedder is not None and out:
        texts = [w.masked for t in out for w in t.wordings]
        vecs = embedder.embed(texts, kind="document")
        k = 0
        for tp in out:
            tp.vectors = vecs[k:k + len(tp.wordings)]
            k += len(tp.wordings)
    return _Compiled(out, index, _schema_words(schema, config), config, problems)


def content_stems(text: str) -> list[str]:
    from relayrag.retrieval.tokenize import tokenize
    return tokenize(text)


_cache: dict[tuple, tuple[Any, float, _Compiled]] = {}
_cache_lock = threading.Lock()


def compiled(config, wh, embedder) -> _Compiled:
    """The config's templates compiled against `wh` (cached per config content, warehouse and embedder, for
    relayrag.sql.templates.VALUES_TTL_S: the value slots' values are read again after that)."""
    import time
    digest = hashlib.sha256(json.dumps(config.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()
    base = getattr(wh, "inner", wh)
    key = (digest, id(base), id(embedder))
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] is base and time.monotonic() - hit[1] < tpl.VALUES_TTL_S:
        return hit[2]
    c = _compile(config, wh, embedder)
    with _cache_lock:
        _cache.pop(key, None)
        if len(_cache) >= 8:
            _cache.pop(next(iter(_cache)))
        _cache[key] = (base, time.monotonic(), c)
    return c


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
    for mk in find_markers(q.norm, _spans(q.mentions)):
        if mk.end <= start and not q.norm[mk.end:start].strip() and mk.cls in COMPARISONS:
            start = mk.start
    after = re.match(r"\s*([A-Za-z]+|[\u3040-\u30ff\u4e00-\u9fff]{1,3})", q.norm[end:])
    if m.kind == "number" and after and after.group(1).lower() not in ("and", "or", "in", "of", "the", "a", "for",
                                                                       "to", "with"):
        end += after.end()
    return q.norm[start:end].strip()


def _covered(run: str, vocab_cjk: list[str]) -> bool:
    """A kanji / katakana run every piece of which occurs in the template's Japanese words or is a request word."""
    from relayrag.sql.wording import REQUEST_WORDS
    i = 0
    while i < len(run):
        j = len(run)
        while j > i and not (any(run[i:j] in v for v in vocab_cjk) or run[i:j] in REQUEST_WORDS):
            j -= 1
        if j == i:
            return False
        i = j
    return True


def _evaluate(t: _Template, q: _Question, c: _Compiled, cos: np.ndarray) -> tuple[bool, float, int, str, str]:
    """(answers, cosine, stage, reason, reason_ja) of template `t` for question `q`; `stage` numbers the check
    that failed, in the order of the module docstring (a miss is explained by the template that got furthest)."""
    shown = f"“{t.display}”"
    fill = _assign(t.refs, q.mentions)
    used_spans = _spans(fill.used.values()) + _spans(m for m in q.mentions if m.kind == "months"
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
    loose = 0
    for word in q.words:
        if any(s <= word.start < e for s, e in used_spans):
            continue
        if (word.cjk and _covered(word.stem, t.vocab_cjk)) or (not word.cjk and word.stem in t.vocab):
            continue
        unit = next((m for name, m in fill.used.items() if name in t.counted and word.start >= m.end
                     and not q.norm[m.end:word.start].strip()), None)
        if unit is not None:  # what a number counts must be what the template counts ("10 hours" ≠ "N tracks")
            return False, 0.0, 4, f"the question counts '{word.text}', which {shown} does not", \
                f"質問の「{unit.text}{word.text}」は「{t.display_ja}」では数えられません"
        if is_request_word(word):
            continue
        if not word.cjk and word.stem in c.schema_words:
            return False, 0.0, 4, f"the question names '{word.text}', which {shown} does not use", \
                f"質問の「{word.text}」は「{t.display_ja}」では使われていません"
        if word.capital:
            return False, 0.0, 4, f"the question names '{word.text}', which no slot of {shown} takes", \
                f"質問の「{word.text}」を入れる枠が「{t.display_ja}」にありません"
        loose += 1
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
    need = MIN_COSINE_LOOSE if loose else MIN_COSINE
    if best < need:
        return False, best, 10, f"no template is worded like the question (closest {shown}, cosine {best:.2f})", \
            f"質問に近い言い回しのテンプレートがありません（最も近いのは「{t.display_ja}」、cosine {best:.2f}）"
    return True, best, 11, "", ""


_JA_BARE_COUNT = ("数", "件数", "いくつ", "何件", "何個", "何種類")
_COUNT_ADJECTIVES = frozenset({"differ", "distinct", "uniqu", "separ", "individu", "total", "overal"})


def _counted_dim(t: _Template, q: _Question) -> str | None:
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


def _restates(m: Mention, periods: list[Mention]) -> bool:
    """Does a months mention (no year: "January-June", 4〜6月, 1月から) restate a year or period the question
    names ("the first half of 2023 (January-June)", "2025, January to December")?"""
    first, last = m.value
    for p in periods:
        if p.kind == "year":
            span = (1, 12)
        else:
            start, end = p.value
            end_month = int(end[5:7]) - 1 or 12
            if int(end[:4]) - int(start[:4]) > (1 if end_month == 12 else 0):
                continue  # more than one year: months alone cannot restate it
            span = (int(start[5:7]), end_month)
        if (first, last) == span or (last is None and first == span[0]):
            return True
    return False


def _assign(refs: dict[str, tpl.SlotRef], mentions: list[Mention]) -> tpl.Fill:
    """relayrag.sql.templates.assign, then months that only restate a filled year or period are no longer left
    over (they constrain nothing more)."""
    fill = tpl.assign(refs, mentions)
    periods = [m for m in fill.used.values() if m.kind in ("year", "period")]
    fill.leftover = [m for m in fill.leftover if not (m.kind == "months" and _restates(m, periods))]
    return fill


def _could_take(ref: tpl.SlotRef, m: Mention) -> bool:
    from relayrag.sql.slots import accepts
    return accepts(ref.type, m, ref.key)


def said(classes, aggs: set[str], norm: str, mentions: list[Mention]) -> set[str]:
    """The classes a text says: its marker classes, the aggregates of the glossary terms it uses ("revenue"
    says sum), max / min by "highest" / "lowest", a top N's end by "… first", a period by its word (month, 月)."""
    from relayrag.retrieval.tokenize import tokenize
    out = set(classes) | set(aggs)
    out |= {"max"} if "desc" in out else set()
    out |= {"min"} if "asc" in out else set()
    out |= {d for d in ("desc", "asc") if f"order_{d}" in out}
    masked = _mask(norm, mentions)
    stems = set(tokenize(masked))
    out |= {p for p in PERIODS if _PERIOD_WORDS[p][0] in stems or _PERIOD_WORDS[p][1] in masked}
    return out


def _glossary_aggs(matched) -> set[str]:
    return {a.lower() for m in matched if m.kind == "glossary" for a in _AGG.findall(getattr(m.entry, "sql", "") or "")}


def _question(question: str, c: _Compiled) -> _Question:
    from relayrag.retrieval.tokenize import tokenize
    from relayrag.sql.context import match_terms
    norm = normalize(question)
    mentions = find_mentions(norm, c.index)
    markers = find_markers(norm, _spans(mentions))
    matched = match_terms(norm, c.config)
    words = content_words(norm, _spans(mentions) + _spans(markers) + _spans(matched))
    aggs = _glossary_aggs(matched)
    classes: dict[str, str] = {}
    for mk in markers:
        if mk.cls != "request":  # "break down": asks for the answer, constrains nothing
            classes.setdefault(mk.cls, mk.text)
    stems = set(tokenize(norm))
    terms = {(m.kind, m.name) for m in matched} | {("filter", name) for name, f in c.config.filters.items()
                                                   if _said_by_description(f.description, stems)}
    return _Question(question, norm, mentions, classes, terms, aggs, words, stems, _mask(norm, mentions), markers)


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
        fill = _assign(t.refs, q.mentions)
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
