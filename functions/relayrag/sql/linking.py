"""Schema linking for Text-to-SQL: the tables (and columns) a question needs, with the foreign-key paths
that join them spelled out, so a small model sees a few tables instead of the whole warehouse.

`link_schema(question, schema, matches, embedder)` scores every table of `Warehouse.schema()`:
- lexical: the question's Snowball stems (relayrag.retrieval.tokenize) against the table's name and its
  column names (names shared by more than SHARED_COLUMN tables, such as Name, count for nothing) split at
  CamelCase / underscores ("InvoiceLine" → "invoice line", "BillingCountry" →
  "billing country"), and against the sample values of its low-cardinality text columns ("Canada" →
  Customer.Country); for CJK questions the NFKC-normalised question is searched for the sample values;
- the glossary and filter entries the question touches (relayrag.sql.context.match_terms, which
  carries Japanese synonyms): every `Table.Column` or table name in an entry's SQL or meaning links
  that table and column ("revenue" → SUM(Invoice.Total) → Invoice.Total); an entry of `config` that
  shares only some words with the question ("never been sold" and "units sold") links the tables of its
  SQL with weight PARTIAL_WEIGHT;
- embedding: the cosine between the question and a one-line description of each table (name, columns,
  sample values) with the project's embedder, when one is given; the best `EMBED_TOP` tables by cosine
  are always kept, so a question that names no table or column still gets its likely tables.
The linked tables are those scoring at least 1 (lexical / glossary hits) plus those embedding picks, then every table on a
shortest foreign-key path between two linked tables (the bridge a join needs: Genre and InvoiceLine
bring in Track). Nothing linked (an empty or odd question) → the whole schema.

Returns a `Linking`: `tables` (kept, schema order), `columns` (Table.Column the question points at),
`join_paths` (one "A.x = B.y" line per foreign key between kept tables), `omitted` (the other tables'
names, listed in the prompt so a query that needs one can still name it), `scores` (per table, for the
run record), and `schema` (the subset, same shape as `Warehouse.schema()`).
"""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from relayrag.retrieval.tokenize import tokenize
from relayrag.text import has_cjk, normalize

EMBED_TOP = 2          # tables always kept by cosine (when an embedder is given)
MAX_TABLES = 6         # linked tables above this → the whole schema (the subset would not be small)
GLOSSARY_WEIGHT = 3.0
NAME_WEIGHT = 2.0
PARTIAL_WEIGHT = 1.0   # an entry whose name or synonym shares a (non-table-name) word with the question
MENTION_WEIGHT = 1.0   # a table named in a glossary entry's prose (not as Table.Column)
SHARED_COLUMN = 2      # a column name in more tables than this is no evidence for any of them

_IDENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|_")


def split_identifier(name: str) -> str:
    """'InvoiceLine' → 'Invoice Line', 'billing_country' → 'billing country'."""
    return " ".join(p for p in _CAMEL.split(name) if p)


def _columns(table: dict) -> list[str]:
    cols = table.get("columns") or {}
    return [c["name"] for c in cols] if isinstance(cols, list) else list(cols)


def foreign_keys(schema: dict) -> list[tuple[str, str, str, str]]:
    """(table, column, ref_table, ref_column) for each single-column foreign key in the schema's
    "A -> B(C)" strings (composite keys pair their columns in order)."""
    out = []
    for t in schema.get("tables", []):
        for fk in t.get("foreign_keys") or []:
            cols, _, target = fk.partition(" -> ")
            m = re.match(r"\s*([^()]+)\(([^)]*)\)", target)
            if not m:
                continue
            ref_table = m.group(1).strip()
            for a, b in zip([c.strip() for c in cols.split(",")], [c.strip() for c in m.group(2).split(",")]):
                out.append((t["name"], a, ref_table, b))
    return out


def _path(a: str, x: str, b: str, y: str) -> str:
    """One join path; a self reference (Employee.ReportsTo -> Employee.EmployeeId) says how to alias it."""
    if a == b:
        return (f"{a}.{x} = {b}.{y} (self-join: the same table twice under two aliases, "
                f"e.g. {a} AS e JOIN {b} AS m ON e.{x} = m.{y})")
    return f"{a}.{x} = {b}.{y}"


def _bridges(linked: set[str], fks: list[tuple[str, str, str, str]]) -> set[str]:
    """Tables on a shortest undirected foreign-key path between any two linked tables."""
    graph: dict[str, set[str]] = {}
    for a, _, b, _ in fks:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set()).add(a)
    extra: set[str] = set()
    nodes = sorted(linked)
    for i, src in enumerate(nodes):
        prev: dict[str, str | None] = {src: None}
        queue = deque([src])
        while queue:
            cur = queue.popleft()
            for nxt in sorted(graph.get(cur, ())):
                if nxt not in prev:
                    prev[nxt] = cur
                    queue.append(nxt)
        for dst in nodes[i + 1:]:
            if dst not in prev:
                continue
            node = prev[dst]
            while node is not None and node != src:
                extra.add(node)
                node = prev[node]
    return extra - linked


@dataclass
class Linking:
    tables: list[str]
    columns: list[str] = field(default_factory=list)
    join_paths: list[str] = field(default_factory=list)
    omitted: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    schema: dict = field(default_factory=dict)
    whole: bool = False   # nothing (or too much) linked: the whole schema is given

    def text(self) -> str:
        """The prompt section: join paths, the columns the question points at, the tables left out."""
        parts = []
        if self.join_paths:
            parts.append("Join paths between these tables (foreign keys; join only through these):\n"
                         + "\n".join(f"- {p}" for p in self.join_paths))
        if self.columns:
            parts.append("Columns the question most likely needs: " + ", ".join(self.columns))
        if self.omitted:
            parts.append("Other tables exist but look unrelated (not shown): " + ", ".join(self.omitted))
        return "\n".join(parts)

    def summary(self) -> dict:
        return {"tables": list(self.tables), "columns": list(self.columns), "whole": self.whole,
                "scores": {k: round(v, 4) for k, v in self.scores.items()}}


_desc_cache: dict[tuple, np.ndarray] = {}
_cache_lock = threading.Lock()


def _table_text(t: dict) -> str:
    samples = t.get("samples") or {}
    vals = "; ".join(f"{c}: {', '.join(map(str, v[:4]))}" for c, v in samples.items())
    return (f"{split_identifier(t['name'])} table: " + ", ".join(split_identifier(c) for c in _columns(t))
            + (f" ({vals})" if vals else ""))


def _cosines(question: str, tables: list[dict], embedder) -> np.ndarray:
    texts = tuple(_table_text(t) for t in tables)
    key = (id(embedder), texts)
    with _cache_lock:
        vecs = _desc_cache.get(key)
    if vecs is None:
        vecs = embedder.embed(list(texts), kind="document")
        with _cache_lock:
            if len(_desc_cache) >= 16:
                _desc_cache.pop(next(iter(_desc_cache)))
            _desc_cache[key] = vecs
    return vecs @ embedder.embed([question], kind="query")[0]


_WORDS = re.compile(r"[^\s\"“”?!,;:()]+")


def _value_hits(question: str, values: dict[str, list[str]], max_words: int = 4) -> dict[str, str]:
    """{"Table.Column": value} for each column one of whose values occurs in the question as a run of whole
    words, case-sensitively (proper nouns are capitalised: "AC/DC", "Brazil"), at least 3 characters."""
    words = [w.strip(".'’") for w in _WORDS.findall(normalize(question))]
    grams = {" ".join(words[i:i + n]) for n in range(1, max_words + 1) for i in range(len(words) - n + 1)}
    hits: dict[str, str] = {}
    for ref, vals in values.items():
        for v in vals:
            if len(v) >= 3 and v in grams and not v.islower():
                hits[ref] = v
                break
    return hits


def link_schema(question: str, schema: dict, matches=(), embedder=None, *, config=None, values: dict | None = None,
                embed_top: int = EMBED_TOP, max_tables: int = MAX_TABLES) -> Linking:
    """Link `question` to the tables of `schema` (see the module docstring). `matches` are the question's
    relayrag.sql.context.TermMatch entries; `config` the SqlConfig (partial glossary matches); `values`
    {"Table.Column": [values]}; `embedder` (optional) has `embed(texts, kind=...)` returning unit vectors.
    Never raises for an odd question: nothing linked → `Linking(whole=True)`."""
    tables = list(schema.get("tables", []))
    by_lower = {t["name"].lower(): t for t in tables}
    q = normalize(question)
    q_stems = set(tokenize(q))
    cjk = has_cjk(q, min_share=0.01)
    scores: dict[str, float] = {t["name"]: 0.0 for t in tables}
    columns: list[str] = []

    def note_column(table: str, col: str) -> None:
        ref = f"{table}.{col}"
        if ref not in columns:
            columns.append(ref)

    # a column name shared by several tables (Name, Title, LastUpdated) says nothing about which table
    spread: dict[tuple, int] = {}
    for t in tables:
        for col in _columns(t):
            key = tuple(tokenize(split_identifier(col)))
            spread[key] = spread.get(key, 0) + 1
    for t in tables:
        name = t["name"]
        stems = tokenize(split_identifier(name))
        if stems and all(s in q_stems for s in stems):
            scores[name] += NAME_WEIGHT
        for col in _columns(t):
            c_stems = [s for s in tokenize(split_identifier(col)) if s != "id"]
            if c_stems and all(s in q_stems for s in c_stems) and not set(c_stems) <= set(stems):
                note_column(name, col)
                if spread.get(tuple(tokenize(split_identifier(col))), 0) <= SHARED_COLUMN:
                    scores[name] += 1.0
        for col, sample in (t.get("samples") or {}).items():
            for v in sample:
                sv = str(v)
                hit = (normalize(sv) in q) if cjk else bool(tokenize(sv)) and set(tokenize(sv)) <= q_stems
                if hit and len(sv) > 1:
                    scores[name] += 1.0
                    note_column(name, col)
                    break
    if values:
        for ref, value in _value_hits(question, values).items():
            tname, _, col = ref.partition(".")
            if tname in scores:
                scores[tname] += 1.0
                note_column(tname, f"{col} (value {value!r})")
    for m in matches:
        e = m.entry
        text = " ".join(str(getattr(e, a, "") or "") for a in ("sql", "meaning", "description"))
        for tname, col in _IDENT.findall(text):
            t = by_lower.get(tname.lower())
            if t is not None:
                scores[t["name"]] += GLOSSARY_WEIGHT
                if col in _columns(t):
                    note_column(t["name"], col)
        for word in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)):
            t = by_lower.get(word.lower())
            if t is not None:
                scores[t["name"]] += MENTION_WEIGHT
    # an entry the question touches only in part ("never been sold" against "units sold"): its tables get
    # weak evidence, from the words that are not a table's own name
    matched = {(m.kind, m.name) for m in matches}
    table_stems = {s for t in tables for s in tokenize(split_identifier(t["name"]))}
    for kind, section in (("glossary", getattr(config, "glossary", {}) or {}),
                          ("filter", getattr(config, "filters", {}) or {})):
        for name, e in section.items():
            if (kind, name) in matched:
                continue
            words = {w for term in [name.replace("_", " "), *e.synonyms] for w in tokenize(term)} - table_stems
            if words & q_stems:
                for tname, _col in _IDENT.findall(str(e.sql or "")):
                    t = by_lower.get(tname.lower())
                    if t is not None:
                        scores[t["name"]] += PARTIAL_WEIGHT
    linked = {n for n, s in scores.items() if s >= 1.0}
    if embedder is not None and tables and embed_top > 0:
        cos = _cosines(q, tables, embedder)
        for i in np.argsort(-cos, kind="stable")[:embed_top]:
            linked.add(tables[int(i)]["name"])
            scores[tables[int(i)]["name"]] += float(cos[int(i)])
    fks = foreign_keys(schema)
    linked |= _bridges(linked, fks)
    if not linked or len(linked) > max_tables or len(linked) >= len(tables):
        return Linking(tables=[t["name"] for t in tables], columns=columns, scores=scores, schema=schema,
                       join_paths=[_path(a, x, b, y) for a, x, b, y in fks], whole=True)
    kept = [t for t in tables if t["name"] in linked]
    columns = [c for c in columns if c.split(".", 1)[0] in linked]
    paths = [_path(a, x, b, y) for a, x, b, y in fks if a in linked and b in linked]
    sub = dict(schema)
    sub["tables"] = kept
    return Linking(tables=[t["name"] for t in kept], columns=columns, join_paths=paths,
                   omitted=[t["name"] for t in tables if t["name"] not in linked], scores=scores, schema=sub)
