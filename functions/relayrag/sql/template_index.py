"""The SQL config's templates compiled for matching (relayrag.sql.verified): each example's wordings with their
slots filled from their own text (relayrag.sql.slots), masked for the embedder, their marker classes and
vocabulary (relayrag.sql.wording), the SQL's facts (relayrag.sql.templates.analyse), the config terms the
template expresses and its GROUP BY dimensions. `compiled(config, wh, embedder)` caches the result per config
content, warehouse and embedder for VALUES_TTL_S (value slots read their columns' values from the warehouse).
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from relayrag.sql import templates as tpl
from relayrag.sql.slots import PLACEHOLDER, Mention, ValueIndex, find_mentions
from relayrag.sql.wording import FILLER_WORDS, PERIODS, content_words, find_markers
from relayrag.text import has_cjk, normalize

IDENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b")
AGG = re.compile(r"\b(SUM|AVG|COUNT|MAX|MIN)\s*\(", re.I)
PERIOD_WORDS = {"month": ("month", "月"), "quarter": ("quarter", "四半期"), "year": ("year", "年"),
                 "week": ("week", "週"), "day": ("day", "日")}


@dataclass
class Wording:
    """One wording of a template: as written, normalised, masked (for the embedder), how it fills the slots,
    its mentions no slot takes (`fixed`: a question must have the same) and its marker classes."""

    text: str
    norm: str
    masked: str
    fill: tpl.Fill
    fixed: collections.Counter
    classes: set[str]
    terms: set = field(default_factory=set)       # config terms it names: {(kind, name)}
    said: set = field(default_factory=set)        # classes it says (relayrag.sql.template_index.said)


@dataclass
class Template:
    """A compiled example (see the module docstring); `vectors`: its masked wordings' embeddings."""

    index: int
    question: str
    sql: str
    refs: dict[str, tpl.SlotRef]
    facts: tpl.SqlFacts
    wordings: list[Wording]
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
    slot_terms: dict = field(default_factory=dict)  # value slot → glossary terms about its column or table


@dataclass
class Compiled:
    """Every usable template of a config, the value index of its slot columns, the warehouse's schema words and
    the problems that left a template out."""

    templates: list[Template]
    index: ValueIndex
    schema_words: set[str]
    config: Any
    problems: list[str]


def mask(norm: str, mentions: list[Mention]) -> str:
    """`norm` with each mention replaced by its placeholder (numbers N, dates Y, values X)."""
    out, pos = [], 0
    for m in sorted(mentions, key=lambda m: m.start):
        if m.start < pos or m.start == m.end:  # an implied number (a top 1) is not in the text
            continue
        out.append(norm[pos:m.start])
        out.append(PLACEHOLDER.get(m.kind, "X"))
        pos = m.end
    out.append(norm[pos:])
    return "".join(out)


def display(norm: str, fill: tpl.Fill) -> str:
    """The wording with each slot's value replaced by {slot}."""
    spans = sorted(((m.start, m.end, name) for name, m in fill.used.items()), reverse=True)
    out = norm
    for s, e, name in spans:
        out = out[:s] + "{" + name + "}" + out[e:]
    return out


def spans(items) -> list[tuple[int, int]]:
    """[(start, end)] of mentions, markers or term matches."""
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
                if not has_cjk(term):  # "audio only": "only" does not name the term
                    words |= {s for w in re.findall(r"[A-Za-z][A-Za-z'-]*", term) if w.lower() not in FILLER_WORDS
                              for s in tokenize(w)}
    return words


def _expressed(config, facts: tpl.SqlFacts, wording_terms: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Config entries the template expresses: named by a wording, or computed by its SQL (module docstring)."""
    cols = {(t.lower(), c.lower()) for t, c in facts.columns}
    tables = {t.lower() for t in facts.tables}
    allowed = facts.allowed
    out = set(wording_terms)
    for name, e in config.glossary.items():
        if e.sql:
            refs = {(a.lower(), b.lower()) for a, b in IDENT.findall(e.sql)}
            aggs = {a.lower() for a in AGG.findall(e.sql)}
            if refs and refs <= cols and aggs <= allowed:
                out.add(("glossary", name))
        else:
            refs = {(a.lower(), b.lower()) for a, b in IDENT.findall(e.meaning)}
            if refs & cols or (not refs and {w.lower() for w in re.findall(r"[A-Za-z_]\w*", e.meaning)} & tables):
                out.add(("glossary", name))
    template_literals = {str(x).lower() for x in facts.literals}
    for name, f in config.filters.items():
        refs = {(a.lower(), b.lower()) for a, b in IDENT.findall(f.sql)}
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
            en, ja = PERIOD_WORDS[col]
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
            refs = {(a.lower(), b.lower()) for a, b in IDENT.findall(text)}
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


def _terms_about(config, key: str) -> set[tuple[str, str]]:
    """Glossary entries whose SQL or meaning names a column of value slot `key` ("Invoice.BillingCountry": country),
    or its table when the column names the table's rows ("Genre.Name", "Employee.FirstName+Employee.LastName"):
    a value of the column names them ("Latin" says genres, "Jane Peacock" says support rep)."""
    parts = [c.split(".", 1) for c in key.split("+")]
    cols = {(t.lower(), c.lower()) for t, c in parts}
    tables = {t for t, _c in cols}
    # a name column (Genre.Name) or several columns of one table (a person's first and last name) name its rows
    entity = len(parts) > 1 and len(tables) == 1 or all(
        set(tpl.identifier_words(c)) - tpl.GENERIC_COLUMN_WORDS <= set(tpl.identifier_words(t)) for t, c in parts)
    out = set()
    for name, e in config.glossary.items():
        refs = {(a.lower(), b.lower()) for a, b in IDENT.findall(f"{e.sql or ''} {e.meaning}")}
        if refs & cols or (entity and any(t in tables for t, _c in refs)):
            out.add(("glossary", name))
    return out


def split_label(name: str) -> str:
    """'BillingCountry' → 'billing country'."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|_", " ", name).lower()


def _compile(config, wh, embedder) -> Compiled:
    from relayrag.sql.context import match_terms
    schema = wh.schema() if wh is not None else {"tables": []}
    problems: list[str] = []
    index = tpl.config_value_index(config, wh, problems) if wh is not None else ValueIndex()
    out: list[Template] = []
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
            fill = assign_slots(refs, find_mentions(norm, index))
            if fill.missing:
                continue  # reported by check_config; this wording cannot be compared
            mentions = fill.mentions
            markers = find_markers(norm, spans(mentions))
            matched = match_terms(norm, config)
            terms |= {(m.kind, m.name) for m in matched}
            for w in content_words(norm, spans(mentions) + spans(markers) + spans(matched)):
                (vocab_cjk.append(w.stem) if w.cjk else vocab.add(w.stem))
            words = content_words(norm, spans(mentions) + spans(markers))
            counted |= {name for name, m in fill.used.items() if m.kind == "number" and any(
                w.start >= m.end and not norm[m.end:w.start].strip() for w in words)}
            classes = {m.cls for m in markers} - {"request"}
            allowed |= classes
            wording_said = said(classes, glossary_aggs(matched), norm, mentions)
            template_said |= wording_said
            fixed = collections.Counter(m.key() for m in fill.leftover)
            wordings.append(Wording(text, norm, mask(norm, mentions), fill, fixed, classes,
                                    {(m.kind, m.name) for m in matched}, wording_said))
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
        out.append(Template(
            index=i, question=ex.question, sql=ex.sql, refs=refs, facts=facts, wordings=wordings, vocab=vocab,
            vocab_cjk=vocab_cjk, expressed=expressed, filters=filters, allowed=allowed, dims=_dims(facts, config),
            essential=(facts.essential | (facts.aggregates & {"avg", "sum", "max", "min"})) & template_said,
            counted=counted,
            display=display(latin_display.norm, latin_display.fill),
            display_ja=display(cjk_display.norm, cjk_display.fill),
            slot_terms={name: _terms_about(config, r.key) for name, r in refs.items() if r.type == "value" and r.key}))
    if embedder is not None and out:
        texts = [w.masked for t in out for w in t.wordings]
        vecs = embedder.embed(texts, kind="document")
        k = 0
        for tp in out:
            tp.vectors = vecs[k:k + len(tp.wordings)]
            k += len(tp.wordings)
    return Compiled(out, index, _schema_words(schema, config), config, problems)


def content_stems(text: str) -> list[str]:
    """relayrag's BM25 tokens of `text`."""
    from relayrag.retrieval.tokenize import tokenize
    return tokenize(text)


_cache: dict[tuple, tuple[Any, float, Compiled]] = {}
_cache_lock = threading.Lock()


def compiled(config, wh, embedder) -> Compiled:
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


def assign_slots(refs: dict[str, tpl.SlotRef], mentions: list[Mention]) -> tpl.Fill:
    """relayrag.sql.templates.assign, then months that only restate a filled year or period are no longer left
    over (they constrain nothing more)."""
    fill = tpl.assign(refs, mentions)
    periods = [m for m in fill.used.values() if m.kind in ("year", "period")]
    fill.leftover = [m for m in fill.leftover if not (m.kind == "months" and _restates(m, periods))]
    return fill


def said(classes, aggs: set[str], norm: str, mentions: list[Mention]) -> set[str]:
    """The classes a text says: its marker classes, the aggregates of the glossary terms it uses ("revenue"
    says sum), max / min by "highest" / "lowest", a top N's end by "… first", a period by its word (month, 月)."""
    from relayrag.retrieval.tokenize import tokenize
    out = set(classes) | set(aggs)
    out |= {"max"} if "desc" in out else set()
    out |= {"min"} if "asc" in out else set()
    out |= {d for d in ("desc", "asc") if f"order_{d}" in out}
    masked = mask(norm, mentions)
    stems = set(tokenize(masked))
    out |= {p for p in PERIODS if PERIOD_WORDS[p][0] in stems or PERIOD_WORDS[p][1] in masked}
    return out


def glossary_aggs(matched) -> set[str]:
    return {a.lower() for m in matched if m.kind == "glossary" for a in AGG.findall(getattr(m.entry, "sql", "") or "")}


