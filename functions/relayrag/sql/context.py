"""What the LLM sees when it writes SQL: the context for generation and the enhanced question.

`build_context(question, wh, config, embedder)` assembles, for one question:
- the warehouse schema as compact JSON (`Warehouse.schema()`: tables, columns, types, keys, row counts,
  sample values of low-cardinality text columns; only the allow-listed tables when the config has some);
- the glossary entries and named filter sets the question touches (relayrag.sql.config): a term or
  synonym matches as a run of Snowball-stemmed words, stopwords skipped ("total sales" matches the
  synonym "sales"), or, when it contains Japanese/CJK characters, as a substring of the NFKC-normalised
  question;
- the config's notes;
- the k question→SQL examples most similar to the question: reciprocal-rank fusion (relayrag.retrieval.
  fusion, k=60) of the cosine ranking by the project's embedder and the BM25 ranking (relayrag.retrieval
  .bm25, the same tokenizer as retrieval: stems for Latin script, character bigrams for CJK), so
  Japanese questions find Japanese examples even though MiniLM reads Japanese poorly;
- the enhanced question: each matched term annotated in place with its mapping, e.g. "What was our
  revenue in 2023?" → "What was our revenue (= SUM(Invoice.Total)) in 2023?"; overlapping matches keep
  the longest; each entry is annotated once.

`SqlContext.messages(instructions)` is the prompt (system: instructions + schema JSON + glossary,
filters, notes, examples; user: the enhanced question) and `SqlContext.summary()` what the run record
keeps (`sql_context`). Without a config the prompt is the instructions, the schema and the question.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relayrag.retrieval.tokenize import _RUN, tokenize
from relayrag.sql.config import Example, FilterSet, GlossaryEntry, SqlConfig
from relayrag.sql.plan import question_language  # noqa: F401  (re-exported: callers import it from here)
from relayrag.text import has_cjk, normalize

EXAMPLES_K = 3
SHAPE_EXTRA = 2        # examples added by SQL shape on top of the k by wording (examples mode "both")
EXAMPLE_MODES = ("similar", "shape", "both")
RRF_K = 60

# ----------------------------------------------------------------------------------------------- matching

@dataclass
class TermMatch:
    kind: str            # "glossary" | "filter"
    name: str            # the entry's key in the config
    matched: str         # the question's text that matched (as written, normalised)
    start: int           # span in the normalised question
    end: int
    entry: GlossaryEntry | FilterSet

    def annotation(self) -> str:
        if self.kind == "filter":
            return f"(filter {self.name}: {self.entry.sql})"
        e: Any = self.entry  # GlossaryEntry here
        return f"(= {e.sql})" if e.sql else f"(= {e.meaning})"

    def describe(self) -> str:
        e: Any = self.entry  # FilterSet when kind == "filter", else GlossaryEntry
        same = self.matched.lower() == self.name.replace("_", " ").lower()
        said = "" if same else f" [the question says {self.matched!r}]"
        if self.kind == "filter":
            return f"- {self.name}{said}: {e.description}. SQL predicate: {e.sql}"
        parts = [p for p in (e.meaning, f"SQL: {e.sql}" if e.sql else "") if p]
        return f"- {self.name}{said}: {'; '.join(parts)}"


def _word_spans(text: str) -> list[tuple[str, int, int]]:
    """(stemmed token, start, end) for each Latin-script word of `text` that the tokenizer keeps."""
    out = []
    for m in _RUN.finditer(text):
        if m.group("word") is None:
            continue
        toks = tokenize(m.group(0))
        if toks:
            out.append((toks[0], m.start(), m.end()))
    return out


def _find_all(term: str, q: str, words: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """Every span of `term` in the normalised question `q`."""
    if has_cjk(term, min_share=0.01):
        t = normalize(term).strip()
        low = q.lower()
        hay, needle = (low, t.lower()) if len(low) == len(q) else (q, t)  # mixed terms: case-insensitive
        spans, i = [], hay.find(needle)
        while needle and i >= 0:
            spans.append((i, i + len(t)))
            i = hay.find(needle, i + 1)
        return spans
    toks = tokenize(term)
    n = len(toks)
    stems = [w[0] for w in words]
    return [(words[i][1], words[i + n - 1][2]) for i in range(len(stems) - n + 1) if n and stems[i:i + n] == toks]


def match_terms(question: str, config: SqlConfig | None) -> list[TermMatch]:
    """Glossary entries and filter sets the question touches, in question order. An occurrence inside a
    longer occurrence of another entry does not count ("sales" in "sales support agent" is not revenue);
    each entry keeps its longest, then first, remaining occurrence."""
    if config is None:
        return []
    q = normalize(question)
    words = _word_spans(q)
    found: list[TermMatch] = []
    for kind, section in (("glossary", config.glossary), ("filter", config.filters)):
        for name, entry in section.items():
            for term in [name.replace("_", " "), *entry.synonyms]:
                for a, b in _find_all(term, q, words):
                    found.append(TermMatch(kind, name, q[a:b], a, b, entry))
    kept = [m for m in found if not any(
        (o.kind, o.name) != (m.kind, m.name) and o.start <= m.start and m.end <= o.end
        and o.end - o.start > m.end - m.start for o in found)]
    best: dict[tuple[str, str], TermMatch] = {}
    for m in kept:
        prev = best.get((m.kind, m.name))
        if prev is None or (m.end - m.start, -m.start) > (prev.end - prev.start, -prev.start):
            best[(m.kind, m.name)] = m
    return sorted(best.values(), key=lambda m: (m.start, -(m.end - m.start)))


def enhance_question(question: str, matches: list[TermMatch]) -> str:
    """The question with each matched term followed by its mapping; longest non-overlapping spans win.
    Unchanged (not even normalised) when nothing matched."""
    if not matches:
        return question
    q = normalize(question)
    chosen: list[TermMatch] = []
    for m in sorted(matches, key=lambda m: (-(m.end - m.start), m.start)):
        if all(m.end <= c.start or m.start >= c.end for c in chosen):
            chosen.append(m)
    out, pos = [], 0
    for m in sorted(chosen, key=lambda m: m.start):
        out.append(q[pos:m.end])
        out.append(" " + m.annotation())
        pos = m.end
    out.append(q[pos:])
    return "".join(out)


# ----------------------------------------------------------------------------------------------- examples

_vec_cache: dict[tuple, np.ndarray] = {}
_bm25_cache: dict[tuple, Any] = {}
_cache_lock = threading.Lock()
_CACHE_MAX = 16


def _cached(cache: dict, key: tuple, make):
    with _cache_lock:
        hit = cache.get(key)
    if hit is not None:
        return hit
    value = make()
    with _cache_lock:
        if len(cache) >= _CACHE_MAX:
            cache.pop(next(iter(cache)))
        cache[key] = value
    return value


def pick_examples(question: str, examples: list[Example], embedder=None, k: int = EXAMPLES_K) -> list[dict]:
    """The k examples most similar to `question`, best first: [{question, sql, cosine, bm25, score}].

    score = RRF over the cosine ranking (when `embedder` is given; vectors are unit length, so the dot
    product is the cosine) and the BM25 ranking of the examples with a positive BM25 score. Without an
    embedder, examples with no word in common come last in file order."""
    from relayrag.retrieval.bm25 import BM25Index
    from relayrag.retrieval.fusion import rrf_fuse
    if not examples or k <= 0:
        return []
    texts = tuple(e.question for e in examples)
    bm25 = _cached(_bm25_cache, texts, lambda: BM25Index.build(list(texts))).scores(question)
    lexical = [int(i) for i in np.argsort(-bm25, kind="stable") if bm25[i] > 0]
    rankings, cos = [lexical], None
    if embedder is not None:
        vecs = _cached(_vec_cache, (id(embedder), texts), lambda: embedder.embed(list(texts), kind="document"))
        cos = vecs @ embedder.embed([question], kind="query")[0]
        rankings.insert(0, [int(i) for i in np.argsort(-cos, kind="stable")])
    fused = rrf_fuse(rankings, k=RRF_K)
    order = [int(i) for i, _ in fused] + [i for i in range(len(examples)) if i not in {j for j, _ in fused}]
    scores = dict(fused)
    out = []
    for i in order[:k]:
        out.append({"question": examples[i].question, "sql": examples[i].sql,
                    "cosine": round(float(cos[i]), 4) if cos is not None else None,
                    "bm25": round(float(bm25[i]), 4), "score": round(float(scores.get(i, 0.0)), 6)})
    return out


# ----------------------------------------------------------------------------------------------- context

@dataclass
class SqlContext:
    question: str
    enhanced_question: str
    schema: dict
    glossary: list[TermMatch] = field(default_factory=list)
    filters: list[TermMatch] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)
    notes: str = ""
    has_config: bool = False
    plan: Any = None      # relayrag.sql.plan.Plan (shape hints for the question), None = no plan step
    linking: Any = None   # relayrag.sql.linking.Linking (the linked subset), None = the whole schema

    def sections(self) -> str:
        """The glossary, filter, notes and example sections of the system prompt ('' without a config)."""
        parts = []
        if self.linking is not None and self.linking.text():
            parts.append(self.linking.text())
        if self.glossary:
            parts.append("Business glossary (terms in the question and what they mean; use the SQL given):\n"
                         + "\n".join(m.describe() for m in self.glossary))
        if self.filters:
            parts.append("Named filters the question refers to (add the predicate to the WHERE clause):\n"
                         + "\n".join(m.describe() for m in self.filters))
        if self.notes:
            parts.append("Notes about the data:\n" + self.notes.strip())
        if self.examples:
            parts.append("Examples of questions and the SQL that answers them:\n" + "\n".join(
                f"Q: {e['question']}\nSQL: {' '.join(e['sql'].split())}" for e in self.examples))
        return "\n\n".join(parts)

    def system_prompt(self, instructions: str, schema_format: str = "json") -> str:
        """`instructions` (which end by introducing the schema), the schema (compact JSON, or SQL DDL with
        `schema_format="ddl"`), then the sections."""
        shown = self.linking.schema if self.linking is not None and not self.linking.whole else self.schema
        if schema_format == "ddl":
            schema = schema_ddl(shown)
        else:
            schema = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
        extra = self.sections()
        return instructions + schema + ("\n\n" + extra if extra else "")

    def messages(self, instructions: str, schema_format: str = "json") -> list[dict]:
        return [{"role": "system", "content": self.system_prompt(instructions, schema_format)},
                {"role": "user", "content": self.enhanced_question}]

    def summary(self) -> dict:
        """What the run record keeps as `sql_context` (small: names and scores, not the schema)."""
        return {"config": self.has_config, "enhanced_question": self.enhanced_question,
                "rewritten": self.enhanced_question != self.question,
                "glossary": [{"term": m.name, "matched": m.matched} for m in self.glossary],
                "filters": [{"name": m.name, "matched": m.matched} for m in self.filters],
                "examples": [{"question": e["question"], "score": e["score"], "cosine": e["cosine"],
                              "bm25": e["bm25"], **({"by": e["by"]} if e.get("by") else {})}
                             for e in self.examples],
                **({"plan": self.plan.to_dict()} if self.plan is not None else {}),
                **({"linking": self.linking.summary()} if self.linking is not None else {})}


def schema_ddl(schema: dict) -> str:
    """`Warehouse.schema()` as CREATE TABLE statements (the form code models saw most in training): one
    column per line with its type, PRIMARY KEY / REFERENCES from the keys, and the row count and sample
    values as SQL comments. Same facts as the JSON, about half the tokens."""
    out = []
    for t in schema.get("tables", []):
        cols = t.get("columns") or {}
        if isinstance(cols, list):  # [{"name", "type"}] (BigQuery) or {"name": type} (DuckDB)
            cols = {c["name"]: c.get("type", "") for c in cols}
        pk = set(t.get("primary_key") or [])
        refs = {}
        for fk in t.get("foreign_keys") or []:
            col, _, target = fk.partition(" -> ")
            refs[col.strip()] = target.strip()
        samples = t.get("samples") or {}
        lines = []
        for name, typ in cols.items():
            line = f"  {name} {typ}".rstrip()
            if len(pk) == 1 and name in pk:
                line += " PRIMARY KEY"
            if name in refs:
                line += f" REFERENCES {refs[name]}"
            lines.append((line, samples.get(name)))
        if len(pk) > 1:
            lines.append((f"  PRIMARY KEY ({', '.join(sorted(pk))})", None))
        body = []
        for i, (line, sample) in enumerate(lines):
            sep = "," if i < len(lines) - 1 else ""
            shown = [json.dumps(v if not isinstance(v, str) or len(v) <= 40 else v[:40] + "…", ensure_ascii=False)
                     for v in (sample or [])[:4]]
            note = f" -- e.g. {', '.join(shown)}" if sample else ""
            body.append(line + sep + note)
        rows = f" -- {t['rows']} rows" if t.get("rows") is not None else ""
        out.append(f"CREATE TABLE {t['name']} ({rows}\n" + "\n".join(body) + "\n);")
    return "\n".join(out)


def concrete_examples(config: SqlConfig, wh) -> list[Example]:
    """The config's examples as the LLM sees them: a template's SQL filled with the values its own question
    names (relayrag.sql.config.example_sqls), so a few-shot example is runnable SQL; a template that cannot be
    filled is left out."""
    if not any(e.slots for e in config.examples):
        return list(config.examples)
    from relayrag.sql.config import example_sqls
    filled = example_sqls(config, wh, [])
    return [e if not e.slots else e.model_copy(update={"sql": sql, "slots": {}})
            for e, sql in zip(config.examples, filled) if sql is not None]


def build_context(question: str, wh, config: SqlConfig | None = None, embedder=None,
                  k: int = EXAMPLES_K, *, plan: bool = False, linking: bool = False,
                  examples: str = "similar") -> SqlContext:
    """The generation context for `question` over the warehouse `wh` (see the module docstring).
    `embedder` (relayrag.backends.embedder.Embedder) ranks the config's examples (and the tables, with
    `linking`). plan: run the no-LLM plan step (relayrag.sql.plan). linking: give the model the linked
    subset of the schema with its join paths (relayrag.sql.linking; the value index of a DuckDB
    warehouse included). examples: "similar" (k by wording), "shape" (k by SQL shape) or "both" (k by
    wording, then up to SHAPE_EXTRA more by shape). Raises ValueError for another `examples` mode."""
    if examples not in EXAMPLE_MODES:
        raise ValueError(f"examples mode {examples!r}: use one of {', '.join(EXAMPLE_MODES)}")
    from relayrag.sql.plan import plan_question
    matches = match_terms(question, config)
    schema = wh.schema()
    the_plan = plan_question(question) if plan or examples != "similar" else None
    link = None
    if linking:
        from relayrag.sql.linking import link_schema
        values_of = getattr(wh, "distinct_values", None)
        link = link_schema(question, schema, matches, embedder, config=config,
                           values=values_of() if callable(values_of) else None)
    picked: list[dict] = []
    if config and config.examples:
        shown = concrete_examples(config, wh)
        if examples in ("similar", "both"):
            picked = pick_examples(question, shown, embedder, k)
        if examples in ("shape", "both"):
            n_tables = len(link.tables) if link is not None and not link.whole else None
            extra = k if examples == "shape" else SHAPE_EXTRA
            have = {e["question"] for e in picked}
            by_shape = pick_examples_by_shape(the_plan.shapes if the_plan else [], n_tables, shown,
                                              k=extra + len(picked))
            picked += [e for e in by_shape if e["question"] not in have][:extra]
    return SqlContext(
        question=question, enhanced_question=enhance_question(question, matches), schema=schema,
        glossary=[m for m in matches if m.kind == "glossary"], filters=[m for m in matches if m.kind == "filter"],
        examples=picked, notes=config.notes if config else "", has_config=config is not None,
        plan=the_plan if plan else None, linking=link)


def context_for(ctx, collection: str, wh, question: str, k: int = EXAMPLES_K) -> SqlContext:
    """build_context with the collection's stored config (`ctx.sql_config`: the shared store in the cloud),
    the settings' plan / linking / examples choices (RELAYRAG_SQL_PLAN, RELAYRAG_SQL_LINKING,
    RELAYRAG_SQL_EXAMPLES) and the context's embedder (loaded only when there are examples to rank or
    tables to link)."""
    config = ctx.sql_config(collection)
    st = ctx.settings
    linking = bool(getattr(st, "sql_linking", False))
    embedder = ctx.embedder if (config is not None and config.examples) or linking else None
    mode = getattr(st, "sql_examples", "similar") or "similar"
    return build_context(question, wh, config, embedder, k, plan=bool(getattr(st, "sql_plan", False)),
                         linking=linking, examples=str(getattr(mode, "value", mode)))


# ----------------------------------------------------------------------------------------------- SQL shape

SHAPE_FEATURES = ("join", "aggregate", "group", "having", "window", "subquery", "order_limit", "date_bucket",
                  "case")
# what each plan shape (relayrag.sql.plan) asks of the SQL
PLAN_FEATURES = {"group": {"aggregate", "group"}, "top_n": {"order_limit", "aggregate"},
                 "top_per_group": {"window", "subquery", "group", "aggregate"},
                 "ties": {"subquery", "aggregate"}, "min_ties": {"subquery", "having", "group", "aggregate"},
                 "compare_aggregate": {"subquery", "aggregate", "group", "having"},
                 "period": {"date_bucket", "group", "aggregate"}, "share": {"case", "aggregate"},
                 "absence": {"subquery"}}


def sql_shape(sql: str, dialect: str = "bigquery") -> dict:
    """The SQL shape of a query: {"joins": int, "features": set of SHAPE_FEATURES names} (sqlglot parse;
    an unparsable query has no features)."""
    import sqlglot
    from sqlglot import exp
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:  # sqlglot raises many kinds
        return {"joins": 0, "features": set()}
    f: set[str] = set()
    joins = len(list(tree.find_all(exp.Join)))
    if joins:
        f.add("join")
    if any(True for _ in tree.find_all(exp.AggFunc)):
        f.add("aggregate")
    if any(True for _ in tree.find_all(exp.Group)):
        f.add("group")
    if any(True for _ in tree.find_all(exp.Having)):
        f.add("having")
    if any(True for _ in tree.find_all(exp.Window)):
        f.add("window")
    if any(True for _ in tree.find_all(exp.Subquery)) or any(True for _ in tree.find_all(exp.CTE)) or \
            len(list(tree.find_all(exp.Select))) > 1:
        f.add("subquery")
    if tree.args.get("limit") is not None and tree.args.get("order") is not None:
        f.add("order_limit")
    if any(True for _ in tree.find_all(exp.Extract, exp.TimeToStr, exp.TimestampTrunc, exp.DateTrunc)):
        f.add("date_bucket")
    if any(True for _ in tree.find_all(exp.Case, exp.If)):
        f.add("case")
    return {"joins": joins, "features": f}


def pick_examples_by_shape(shapes: list[str], n_tables: int | None, examples: list[Example],
                           k: int = EXAMPLES_K) -> list[dict]:
    """The k examples whose SQL shape best matches what the plan's `shapes` ask for (Jaccard overlap of
    features; with `n_tables` from schema linking, examples joining n_tables-1 times score 0.25 more),
    ties in file order: [{question, sql, cosine: None, bm25: None, score, by: "shape"}]."""
    want: set[str] = set()
    for s in shapes:
        want |= PLAN_FEATURES.get(s, set())
    if n_tables and n_tables > 1:
        want.add("join")
    scored = []
    for i, e in enumerate(examples):
        sh = sql_shape(e.sql)
        union = want | sh["features"]
        score = len(want & sh["features"]) / len(union) if union else 0.0
        if n_tables is not None and sh["joins"] == max(0, n_tables - 1):
            score += 0.25
        scored.append((-score, i, e))
    scored.sort(key=lambda x: (x[0], x[1]))
    return [{"question": e.question, "sql": e.sql, "cosine": None, "bm25": None, "score": round(-neg, 4),
             "by": "shape"} for neg, _, e in scored[:k]]
